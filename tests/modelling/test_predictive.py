"""Prior and posterior predictive draws of a user's model (hamiltonia.modelling.predictive)."""

import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.modelling.predictive import chain_generators
from hamiltonia.testing import Z_THRESHOLD

# y_i ~ N(mu, 1), mu ~ N(0, 10^2): the posterior of mu and both predictives are normal.
Y = np.array([1.2, 0.4, 2.1, 1.7, 0.9])
PRIOR_SD = 10.0
POST_VAR = 1.0 / (1.0 / PRIOR_SD**2 + len(Y))
POST_MEAN = POST_VAR * Y.sum()


def normal_model(**options):
    def logp(p):
        return -0.5 * (p["mu"] / PRIOR_SD) ** 2 - 0.5 * anp.sum((Y - p["mu"]) ** 2)

    def simulate(p, rng):
        return {"y": rng.normal(p["mu"], 1.0, size=len(Y))}

    def prior(rng):
        return {"mu": rng.normal(0.0, PRIOR_SD)}

    kwargs = {"simulate": simulate, "prior": prior, "observed_data": {"y": Y}} | options
    return hm.Model(logp, {"mu": hm.real()}, **kwargs)


def exact_posterior_run(model, chains=4, draws=5000, seed=0):
    """A Result holding independent exact posterior draws: the predictive machinery is
    tested apart from any sampler."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(POST_MEAN, np.sqrt(POST_VAR), size=(chains, draws, 1))
    return hm.Result(draws=mu, stats={}, names=model.reported_names, target="Model",
                     attrs={"blocks": model.blocks, "seed_entropy": "12345"},
                     _target=model)  # fmt: skip


def _z_mean_and_var(x, mean, var):
    """z-scores of the sample mean and of the mean squared deviation of independent normal
    draws ``x`` against their exact mean and variance."""
    n = x.size
    z_mean = (x.mean() - mean) / np.sqrt(var / n)
    z_var = (np.mean((x - mean) ** 2) - var) / (np.sqrt(2.0) * var / np.sqrt(n))
    return z_mean, z_var


def test_the_posterior_predictive_has_the_exact_predictive_moments():
    model = normal_model()
    run = exact_posterior_run(model)
    ppc = run.sample_posterior_predictive(seed=3)
    assert set(ppc) == {"y"} and ppc["y"].shape == (4, 5000, len(Y))
    z = _z_mean_and_var(ppc["y"][..., 0], POST_MEAN, POST_VAR + 1.0)
    assert max(map(abs, z)) < Z_THRESHOLD, z


def test_the_prior_predictive_has_the_exact_prior_predictive_moments():
    tree = hm.sample_prior_predictive(normal_model(), draws=4000, chains=2, seed=5)
    assert {"prior", "prior_predictive", "observed_data"} <= set(tree.children)
    mu = tree["prior"]["mu"].values
    y = tree["prior_predictive"]["y"].values
    assert mu.shape == (2, 4000) and y.shape == (2, 4000, len(Y))
    for z in (_z_mean_and_var(mu, 0.0, PRIOR_SD**2),
              _z_mean_and_var(y[..., 0], 0.0, PRIOR_SD**2 + 1.0)):  # fmt: skip
        assert max(map(abs, z)) < Z_THRESHOLD, z


def test_the_prior_predictive_and_observed_data_take_the_observed_dims():
    labels = [f"obs{i}" for i in range(len(Y))]
    model = normal_model(observed_dims={"y": "obs"}, coords={"obs": labels})
    tree = hm.sample_prior_predictive(model, draws=10, chains=2, seed=5)
    for group in ("prior_predictive", "observed_data"):
        assert tree[group]["y"].dims[-1] == "obs"
        assert list(tree[group]["y"].coords["obs"].values) == labels


def test_each_chain_has_its_own_generator_whatever_the_number_of_chains():
    one, three = chain_generators(7, 1), chain_generators(7, 3)
    assert one[0].random() == three[0].random()
    model = normal_model()
    run3 = exact_posterior_run(model, chains=3, draws=50)
    run1 = hm.Result(draws=run3.draws[:1], stats={}, names=run3.names, target="Model",
                     attrs=run3.attrs, _target=model)  # fmt: skip
    np.testing.assert_array_equal(run1.sample_posterior_predictive(seed=1)["y"][0],
                                  run3.sample_posterior_predictive(seed=1)["y"][0])  # fmt: skip


def test_a_run_gives_the_same_predictive_draws_without_a_seed_and_others_with_one():
    run = exact_posterior_run(normal_model(), draws=20)
    first = run.sample_posterior_predictive()["y"]
    np.testing.assert_array_equal(first, run.sample_posterior_predictive()["y"])
    assert not np.array_equal(first, run.sample_posterior_predictive(seed=1)["y"])
    with pytest.raises(ValueError, match="seed must be an int"):
        run.sample_posterior_predictive(seed=1.5)


def test_a_saved_model_run_predicts_when_loaded_with_its_model(tmp_path):
    model = normal_model()
    run = hm.sample(model, chains=2, warmup=100, draws=100, seed=0, progress=False)
    ppc = run.sample_posterior_predictive()
    run.sample_prior_predictive(draws=30)
    path = run.save(tmp_path / "run.nc")
    loaded = hm.load(path)
    groups = set(loaded.to_datatree().children)
    assert {"posterior_predictive", "prior", "prior_predictive", "observed_data"} <= groups
    np.testing.assert_array_equal(
        loaded.to_datatree()["posterior_predictive"]["y"].values, ppc["y"]
    )
    # A user's model cannot be rebuilt from a file: the error says how to give it.
    with pytest.raises(ValueError, match=r"hm.load\(path, target=model\)"):
        loaded.predict()
    again = hm.load(path, target=model).predict()
    np.testing.assert_array_equal(again["y"], ppc["y"])
    other = hm.Model(lambda p: -0.5 * anp.sum(p["w"] ** 2), {"w": hm.real(2)})
    with pytest.raises(ValueError, match="not the model this run sampled"):
        hm.load(path, target=other)


def test_mistakes_in_prior_and_simulate_are_named():
    with pytest.raises(ValueError, match="no prior simulator"):
        hm.sample_prior_predictive(normal_model(prior=None), draws=5)
    with pytest.raises(ValueError, match=r"a value for every block \['mu'\], got \['nu'\]"):
        hm.sample_prior_predictive(normal_model(prior=lambda rng: {"nu": 0.0}), draws=5)
    with pytest.raises(ValueError, match=r"shape \(2,\) for 'mu'"):
        hm.sample_prior_predictive(normal_model(prior=lambda rng: {"mu": [0.0, 1.0]}), draws=5)
    positive = hm.Model(lambda p: -p["s"], {"s": hm.positive()},
                        prior=lambda rng: {"s": rng.normal()})  # fmt: skip
    with pytest.raises(ValueError, match="s"):
        hm.sample_prior_predictive(positive, draws=50, seed=0)

    def ragged(p, rng):
        return {"y": rng.normal(size=1 + int(rng.integers(2)))}

    run = exact_posterior_run(normal_model(simulate=ragged), draws=20)
    with pytest.raises(ValueError, match="same names and shapes at every draw"):
        run.sample_posterior_predictive(seed=0)
    plain = exact_posterior_run(normal_model(simulate=None), draws=5)
    with pytest.raises(TypeError, match=r"simulate=fn"):
        plain.sample_posterior_predictive()


def _sparse_logp(p):
    # Dirichlet(0.05, 0.05, 0.05), Beta(0.1, 5), Gamma(0.5, 1).
    return (-0.95 * anp.sum(anp.log(p["w"]), axis=-1) - 0.9 * anp.log(p["t"])
            + 4.0 * anp.log1p(-p["t"]) - 0.5 * anp.log(p["x"]) - p["x"])  # fmt: skip


def _sparse_prior(rng):
    return {"w": rng.dirichlet([0.05] * 3), "t": rng.beta(0.1, 5.0), "x": rng.gamma(0.5)}


SPARSE_BLOCKS = {"w": hm.simplex(3), "t": hm.interval(0, 1), "x": hm.positive()}


def test_prior_draws_are_reported_as_the_prior_gave_them():
    """The prior group holds the prior's own draws, bit for bit, generated quantities
    computed from them: a sparse Dirichlet's exact zeros (on the simplex's boundary, with
    no unconstrained value) are kept, and a Beta(0.1, 5) draw below 1e-16 is not rounded by a
    trip through the unconstrained space."""
    model = hm.Model(_sparse_logp, SPARSE_BLOCKS, prior=_sparse_prior,
                     generated=lambda p: {"total": p["t"] + p["x"]})  # fmt: skip
    tree = hm.sample_prior_predictive(model, draws=200, chains=2, seed=4)
    rows = [[_sparse_prior(rng) for _ in range(200)] for rng in chain_generators(4, 2)]
    for name in SPARSE_BLOCKS:
        want = np.array([[row[name] for row in chain] for chain in rows])
        np.testing.assert_array_equal(tree["prior"][name].values, want)
    prior = tree["prior"]
    np.testing.assert_array_equal(prior["total"].values, prior["t"].values + prior["x"].values)
    assert np.any(prior["w"].values == 0.0)  # the case a trip through z refused
    assert np.any(prior["t"].values < 1e-16)


def test_a_prior_draw_outside_the_support_is_named_by_chain_and_draw():
    calls = []

    def prior(rng):
        calls.append(1)
        draw = _sparse_prior(rng)
        if len(calls) == 7:  # chain 1, draw 2 of 5 per chain
            draw["w"] = np.array([0.7, 0.5, -0.2])
        return draw

    model = hm.Model(_sparse_logp, SPARSE_BLOCKS, prior=prior)
    with pytest.raises(ValueError, match=r"'w' outside its support .* at chain 1, draw 1: "
                                         r"\[0\.7, 0\.5, -0\.2\]"):  # fmt: skip
        hm.sample_prior_predictive(model, draws=5, chains=2, seed=0)
    calls.clear()
    bad_shape = hm.Model(_sparse_logp, SPARSE_BLOCKS,
                         prior=lambda rng: _sparse_prior(rng) | {"x": [1.0, 2.0]})  # fmt: skip
    with pytest.raises(ValueError, match=r"shape \(2,\) for 'x' \(chain 0, draw 0\)"):
        hm.sample_prior_predictive(bad_shape, draws=5, seed=0)


def _obs_model(**options):
    """normal_model with its observations named "obs", labelled by the dimension "i", and a
    log likelihood and a simulator that return one array."""

    def log_likelihood(p):
        return -0.5 * (Y - p["mu"][..., None]) ** 2

    kwargs = {
        "observed_data": {"obs": Y},
        "observed_dims": {"obs": "i"},
        "coords": {"i": [f"o{k}" for k in range(len(Y))]},
        "log_likelihood": log_likelihood,
        "simulate": lambda p, rng: rng.normal(p["mu"], 1.0, size=len(Y)),
    } | options
    return normal_model(**kwargs)


def test_one_array_takes_the_name_and_dims_of_the_only_observed_variable():
    """ArviZ pairs observed_data["obs"] with log_likelihood["obs"] and
    posterior_predictive["obs"], all along the dimension "i"."""
    run = hm.sample(_obs_model(), chains=2, warmup=100, draws=50, seed=0, progress=False)
    assert set(run.log_likelihood()) == {"obs"}
    assert set(run.sample_posterior_predictive(seed=0)) == {"obs"}
    tree = run.to_datatree()
    for group in ("observed_data", "log_likelihood", "posterior_predictive"):
        assert list(tree[group].data_vars) == ["obs"], group
        assert tree[group]["obs"].dims[-1] == "i", group
    prior = hm.sample_prior_predictive(_obs_model(), draws=10, seed=0)
    assert list(prior["prior_predictive"].data_vars) == ["obs"]


def test_observations_named_otherwise_than_observed_data_are_refused():
    run = exact_posterior_run(_obs_model(simulate=lambda p, rng: {"y": rng.normal(size=5)}),
                              draws=5)  # fmt: skip
    with pytest.raises(ValueError, match=r"simulate returned \['y'\], which observed_data does "
                                         r"not hold \(it holds \['obs'\]\)"):  # fmt: skip
        run.sample_posterior_predictive(seed=0)
    two = _obs_model(observed_data={"obs": Y, "more": Y}, observed_dims={}, coords={})
    with pytest.raises(ValueError, match=r"log_likelihood returned one array, but the model "
                                         r"observes \['obs', 'more'\]"):  # fmt: skip
        exact_posterior_run(two, draws=5).log_likelihood()
