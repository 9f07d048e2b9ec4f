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
