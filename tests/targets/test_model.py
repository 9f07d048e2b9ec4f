"""A user's model over named, constrained blocks (hamiltonia.Model)."""

import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.targets.base import RowByRowWarning
from hamiltonia.testing import MIN_ESS, Z_THRESHOLD

Y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
SIGMA = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])
SCHOOLS = list("ABCDEFGH")


def _theta(p):
    return p["mu"][..., None] + p["tau"][..., None] * p["eta"]


def _eight_schools_logp(p):
    # Written for a batch: the chains are the leading axes of every block.
    return (-0.5 * (p["mu"] / 5) ** 2 - anp.log1p((p["tau"] / 5) ** 2)
            - 0.5 * anp.sum(p["eta"] ** 2, axis=-1)
            - 0.5 * anp.sum(((Y - _theta(p)) / SIGMA) ** 2, axis=-1))  # fmt: skip


def eight_schools(backend=None):
    return hm.Model(
        _eight_schools_logp,
        {"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(8, dims="school")},
        log_likelihood=lambda p: (
            -0.5 * ((Y - _theta(p)) / SIGMA) ** 2 - anp.log(SIGMA) - 0.5 * np.log(2 * np.pi)
        ),
        observed_data={"y": Y},
        generated=lambda p: {"theta": _theta(p)},
        generated_dims={"theta": "school"},
        observed_dims={"y": "school"},
        coords={"school": SCHOOLS},
        backend=backend,
    )


@pytest.fixture(scope="module")
def schools_run():
    initial = {"mu": 0.0, "tau": 1.0, "eta": np.zeros(8)}
    return hm.sample(eight_schools(), chains=4, warmup=300, draws=500, seed=3, progress=False,
                     compiled=False, initial=initial)  # fmt: skip


def test_a_batch_aware_model_is_vectorised_without_a_warning(recwarn):
    model = eight_schools()
    assert model.vectorized
    assert not [w for w in recwarn if issubclass(w.category, RowByRowWarning)]
    assert model.dim == 10 and model.reported_names[:3] == ("mu", "tau", "eta[0]")
    assert model.reported_names[-1] == "theta[7]"


@pytest.mark.parametrize(
    ("logp", "message"),
    [
        (lambda p: -0.5 * p["x"] ** 2, r"logp returned shape \(3,\) .* one number per position"),
        (lambda p: None, "logp returned NoneType; it must return the log density"),
    ],
)
def test_a_logp_that_returns_no_number_is_named(logp, message):
    # Found when the model is built, before any backend records or compiles it...
    with pytest.raises((ValueError, TypeError), match=message):
        hm.Model(logp, {"x": hm.real(3)})

    # ... and, for a function that returns a number at the centre only, when it is called.
    def sometimes(p):
        return logp(p) if p["x"][0] > 1 else -0.5 * np.sum(p["x"] ** 2)

    model = hm.Model(sometimes, {"x": hm.real(3)}, backend="autograd", vectorized=False)
    with pytest.raises(hm.ModelError, match=message):
        hm.sample(model, chains=1, warmup=5, draws=5, progress=False, initial={"x": [2.0, 0, 0]})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"coords": {"k": ["a", "b"]}}, "2 labels for the dimension 'k', which has 3"),
        ({"coords": {"j": ["a"]}}, r"dimension 'j', which no block has \(named dim.*\['k'\]"),
        ({"generated": lambda p: {"g": p["x"]}, "generated_dims": {"h": "k"}},
         r"generated_dims names \['h'\]"),
        ({"generated": lambda p: {"g": p["x"][:2]}, "generated_dims": {"g": "k"}},
         "'k' has 3 entries in 'x' but 2 in 'g'"),
        ({"generated": lambda p: {"g": "abc"}}, "generated returned 'abc' for 'g'"),
        # Names the ArviZ groups could not hold apart (the saved run would not read back).
        ({"generated": lambda p: {"k": p["x"][0]}},
         "generated quantity 'k' is also the dimension of axis 0 of parameter 'x'"),
        ({"generated": lambda p: {"draw": p["x"][0]}}, "generated quantity 'draw': the names"),
        ({"observed_data": {"x": np.zeros(2)}}, "parameter 'x' has the name of an observed"),
        ({"observed_data": {"y": np.zeros(2), "y_dim_0": np.zeros(1)}},
         "observed variable 'y_dim_0' is also the name ArviZ gives axis 0"),
        ({"observed_data": {"y": np.zeros(2)}, "observed_dims": {"y": "chain"}},
         "dims of observed variable 'y' name axis 0 'chain'"),
    ],
)  # fmt: skip
def test_labels_and_generated_quantities_are_checked_when_the_model_is_built(options, message):
    with pytest.raises((ValueError, TypeError), match=message):
        hm.Model(lambda p: -0.5 * anp.sum(p["x"] ** 2, axis=-1), {"x": hm.real(3, dims="k")},
                 **options)  # fmt: skip


def test_a_model_declared_vectorized_that_sums_over_the_batch_is_refused():
    # Summed over the chains, every chain would get the total: a wrong posterior, silently.
    def logp(p):
        return -0.5 * anp.sum(p["x"] ** 2)

    with pytest.raises(ValueError, match=r"vectorized=True, but logp .* one number per position"):
        hm.Model(logp, {"x": hm.real(2), "s": hm.positive()}, vectorized=True, backend="autograd")
    with pytest.raises(ValueError, match=r"vectorized=True, but logp .* shape \(\)"):
        hm.Target.from_logp(lambda x: -0.5 * anp.sum(x**2), 2, vectorized=True, backend="autograd")


def test_a_model_written_for_one_point_runs_row_by_row_and_says_so():
    def logp(p):
        theta = p["mu"] + p["tau"] * p["eta"]
        return -0.5 * anp.sum(p["eta"] ** 2) - 0.5 * anp.sum(((Y - theta) / SIGMA) ** 2)

    blocks = {"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(8)}
    with pytest.warns(RowByRowWarning, match=r"one chain at a time, [0-9.]+ ms per gradient") as w:
        model = hm.Model(logp, blocks, backend="autograd")
    assert not model.vectorized
    # Shown at the user's line, not at the package's or at "sys:1".
    assert [r.filename for r in w if r.category is RowByRowWarning] == [__file__]
    z = np.random.default_rng(0).normal(size=(3, 10))
    np.testing.assert_allclose(model.log_prob(z), eight_schools_like(z, logp, model))


def eight_schools_like(z, logp, model):
    out = []
    for row in z:
        values, log_jac = model.layout.constrain(row)
        out.append(logp(values) + log_jac)
    return np.array(out)


def test_draws_are_reported_by_name_with_dims(schools_run):
    run = schools_run
    assert run.posterior["eta"].dims == ("chain", "draw", "school")
    assert run.posterior["eta"].shape == (4, 500, 8)
    assert list(run.posterior["school"].values) == SCHOOLS
    assert np.all(run.posterior["tau"].values > 0)
    theta = run.posterior["theta"].values
    expected = run.posterior["mu"].values[..., None] + run.posterior["tau"].values[
        ..., None] * run.posterior["eta"].values  # fmt: skip
    np.testing.assert_allclose(theta, expected, rtol=1e-12)
    assert "tau" in run.summary().index and "theta[7]" in run.summary().index


def test_log_likelihood_and_observed_data_make_loo_work(schools_run):
    import arviz_stats

    tree = schools_run.to_datatree()
    assert tree["log_likelihood"]["y"].shape == (4, 500, 8)
    np.testing.assert_array_equal(tree["observed_data"]["y"].values, Y)
    # observed_dims names the observations' axis, labelled by the coords.
    assert tree["log_likelihood"]["y"].dims == ("chain", "draw", "school")
    assert tree["observed_data"]["y"].dims == ("school",)
    assert list(tree["observed_data"]["school"].values) == SCHOOLS
    assert tree.attrs["inference_library"] == "hamiltonia"
    loo = arviz_stats.loo(tree)
    assert np.isfinite(loo.elpd) and loo.n_data_points == 8


def test_the_file_keeps_the_blocks_and_groups(schools_run, tmp_path):
    path = schools_run.save(tmp_path / "schools.nc")
    loaded = hm.load(path)
    np.testing.assert_array_equal(loaded.draws, schools_run.draws)
    assert loaded.posterior["eta"].dims == ("chain", "draw", "school")
    assert loaded.to_datatree()["log_likelihood"]["y"].dims == ("chain", "draw", "school")
    assert set(loaded.to_datatree().children) >= {
        "posterior",
        "sample_stats",
        "log_likelihood",
        "observed_data",
    }


def test_initial_values_by_name_are_checked():
    model = eight_schools()
    with pytest.raises(ValueError, match="tau must be positive"):
        hm.sample(model, initial={"mu": 0.0, "tau": -1.0, "eta": np.zeros(8)}, progress=False)
    with pytest.raises(ValueError, match=r"values for \['eta'\] are missing"):
        hm.sample(model, initial={"mu": 0.0, "tau": 1.0}, progress=False)
    with pytest.raises(ValueError, match="has no named parameters"):
        hm.sample("banana", initial={"w1": 0.0}, progress=False)


def _constrained_logp(p):
    return (
        2.0 * anp.log(p["x"])
        - 2.0 * p["x"]  # Gamma(3, 2)
        + anp.log(p["b"])
        + 2.0 * anp.log1p(-p["b"])  # Beta(2, 3)
        + anp.sum(np.array([0.0, 1.0, 2.0]) * anp.log(p["w"]), axis=-1)  # Dirichlet(1, 2, 3)
        - 0.5 * anp.sum(p["o"] ** 2, axis=-1)  # two N(0, 1), sorted
        + (p["u"] - 1.0)  # 1 - u ~ Exp(1)
    )  # an LKJ(1) density on L is flat: L[1, 0] ~ U(-1, 1)


CONSTRAINED_BLOCKS = {"x": hm.positive(), "b": hm.interval(0, 1), "w": hm.simplex(3),
                      "o": hm.ordered(2), "u": hm.upper(1.0), "L": hm.cholesky_corr(2)}  # fmt: skip
_ALPHA = np.array([1.0, 2.0, 3.0])
#: Exact (mean, variance) of each reported value under _constrained_logp.
CONSTRAINED_MOMENTS = {
    "x": (1.5, 0.75), "b": (0.4, 0.04), "u": (0.0, 1.0),
    "o[0]": (-1 / np.sqrt(np.pi), 1 - 1 / np.pi), "o[1]": (1 / np.sqrt(np.pi), 1 - 1 / np.pi),
    "L[1, 0]": (0.0, 1 / 3), "L[1, 1]": (np.pi / 4, 2 / 3 - np.pi**2 / 16),
    **{f"w[{i}]": (_ALPHA[i] / 6, _ALPHA[i] * (6 - _ALPHA[i]) / (36 * 7)) for i in range(3)},
}  # fmt: skip


def test_each_constraint_gives_the_intended_distribution():
    """The model's density in the unconstrained space (the user's logp at T(z) plus the
    log-Jacobians) pushes forward to the intended distribution of every block: means and
    variances of the reported values against exact ones, within Monte Carlo z-scores, by
    self-normalised importance sampling from a Student-t proposal (heavier-tailed than
    every block's density in z, so the weights have finite variance). This tests the model
    without a sampler; the samplers are tested on their own elsewhere.

    The standard error of a self-normalised estimate is
    :math:`\\sqrt{\\sum_i w_i^2 (f_i - \\hat\\mu)^2} / \\sum_i w_i` (delta method)."""
    from scipy import stats

    model = hm.Model(_constrained_logp, CONSTRAINED_BLOCKS)
    proposal = stats.t(df=4, scale=1.0)
    z = proposal.rvs(size=(400_000, model.dim), random_state=np.random.default_rng(11))
    with np.errstate(all="ignore"):  # far-out proposals reach the edge of a support
        log_w = model.log_prob(z) - proposal.logpdf(z).sum(axis=-1)
    w = np.exp(log_w - log_w.max())
    assert (w.sum() ** 2 / (w**2).sum()) > MIN_ESS  # Kish ESS: the MCSEs are reliable
    x = model.constrain(z)
    names = model.reported_names
    exact = CONSTRAINED_MOMENTS

    def z_score(f, truth):
        mu = w @ f / w.sum()
        return (mu - truth) / (np.sqrt(w**2 @ (f - mu) ** 2) / w.sum())

    scores = {}
    for name, (mean, var) in exact.items():
        f = x[:, names.index(name)]
        scores[name] = (z_score(f, mean), z_score((f - mean) ** 2, var))
    bad = {k: v for k, v in scores.items() if max(abs(v[0]), abs(v[1])) > Z_THRESHOLD}
    assert not bad, bad
    np.testing.assert_allclose(x[:, [names.index(f"w[{i}]") for i in range(3)]].sum(-1), 1.0,
                               rtol=1e-12)  # fmt: skip


def _agrees_with_autograd(model, hvp_rtol: float, hvp_atol: float) -> None:
    """``model`` (eight schools on another backend) gives the autograd model's log
    density, gradient and Hessian-vector product at random points."""
    reference = eight_schools(backend="autograd")
    assert reference.backend == "autograd" and reference.numba_kernel() is None
    z = np.random.default_rng(2).normal(size=(5, 10))
    v = np.random.default_rng(3).normal(size=(5, 10))
    lp, grad = model.log_prob_and_grad(z)
    lp_a, grad_a = reference.log_prob_and_grad(z)
    np.testing.assert_allclose(lp, lp_a, rtol=1e-12)
    np.testing.assert_allclose(grad, grad_a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model.hvp(z, v), reference.hvp(z, v), rtol=hvp_rtol,
                               atol=hvp_atol)  # fmt: skip


def test_a_jax_model_matches_the_autograd_one():
    """Target.from_jax: the same model written with jax.numpy for one point gives the same
    log density, gradient and Hessian-vector product as the autograd model (float64), and
    samples with its blocks, generated quantities and log likelihood."""
    jnp = pytest.importorskip("jax.numpy")

    def logp(p):
        theta = p["mu"] + p["tau"] * p["eta"]
        prior = -0.5 * (p["mu"] / 5) ** 2 - jnp.log1p((p["tau"] / 5) ** 2)
        return prior - 0.5 * jnp.sum(p["eta"] ** 2) - 0.5 * jnp.sum(((Y - theta) / SIGMA) ** 2)

    blocks = {"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(8, dims="school")}
    jax_model = hm.Target.from_jax(
        logp, params=blocks, generated=lambda p: {"theta": p["mu"] + p["tau"] * p["eta"]},
        log_likelihood=lambda p: -0.5 * ((Y - p["mu"] - p["tau"] * p["eta"]) / SIGMA) ** 2,
    )  # fmt: skip
    _agrees_with_autograd(jax_model, hvp_rtol=1e-9, hvp_atol=1e-10)
    run = hm.sample(jax_model, chains=2, warmup=100, draws=100, seed=0, progress=False,
                    compiled=False)  # fmt: skip
    assert run.posterior["theta"].shape == (2, 100, 8)
    assert run.log_likelihood()["y"].shape == (2, 100, 8)


def test_from_jax_arguments_are_checked():
    pytest.importorskip("jax")
    with pytest.raises(ValueError, match="give either dim"):
        hm.Target.from_jax(lambda x: x.sum())
    flat = hm.Target.from_jax(lambda x: -0.5 * (x**2).sum(), dim=3)
    lp, grad = flat.log_prob_and_grad(np.ones((2, 3)))
    np.testing.assert_allclose(lp, [-1.5, -1.5])
    np.testing.assert_allclose(grad, -np.ones((2, 3)))


def test_a_numba_model_matches_the_autograd_one_and_runs_compiled():
    """backend="numba": the same logp, recorded and compiled with a generated gradient,
    gives autograd's log density, gradient and Hessian-vector product, runs NUTS on the
    compiled path (compiled=True raises otherwise) and reports its blocks, generated
    quantities and log likelihood as the autograd model does."""
    model = hm.Model(
        _eight_schools_logp,
        {"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(8, dims="school")},
        log_likelihood=lambda p: -0.5 * ((Y - _theta(p)) / SIGMA) ** 2,
        observed_data={"y": Y},
        generated=lambda p: {"theta": _theta(p)},
        generated_dims={"theta": "school"},
        coords={"school": SCHOOLS},
        backend="numba",
    )
    assert model.numba_kernel() is not None
    _agrees_with_autograd(model, hvp_rtol=1e-10, hvp_atol=0.0)
    run = hm.sample(model, chains=2, warmup=200, draws=200, seed=0, progress=False,
                    compiled=True)  # fmt: skip
    assert run.posterior["theta"].shape == (2, 200, 8)
    assert run.posterior["eta"].dims[-1] == "school"
    assert run.log_likelihood()["y"].shape == (2, 200, 8)


def test_nuts_on_a_numba_model_recovers_every_constrained_block():
    """The constraints' transforms and log-Jacobians, compiled with their generated
    gradients, under NUTS on the compiled path: the mean and variance of every reported
    value within Monte Carlo z-scores of the exact ones (the distributions of
    test_each_constraint_gives_the_intended_distribution)."""
    from hamiltonia.testing import assert_moments_recovered

    blocks = CONSTRAINED_BLOCKS
    model = hm.Model(_constrained_logp, blocks, backend="numba")
    reference = hm.Model(_constrained_logp, blocks)
    z = np.random.default_rng(4).normal(size=(6, model.dim))
    np.testing.assert_allclose(model.log_prob_and_grad(z)[1], reference.log_prob_and_grad(z)[1],
                               rtol=1e-9, atol=1e-12)  # fmt: skip
    run = hm.sample(model, chains=4, warmup=1000, draws=2500, seed=5, progress=False,
                    compiled=True, target_accept=0.9)  # fmt: skip
    names = model.reported_names
    exact = CONSTRAINED_MOMENTS
    index = [names.index(n) for n in exact]
    mean = np.full(len(names), np.nan)
    var = np.full(len(names), np.nan)
    mean[index] = [m for m, _ in exact.values()]
    var[index] = [s for _, s in exact.values()]
    assert_moments_recovered(run, hm.targets.base.ExactMoments(mean, var), index)


def test_a_flat_log_density_compiles_too_and_a_bad_backend_is_named():
    def logp(x):  # banana-shaped, for one point or a batch
        return -0.5 * x[..., 0] ** 2 - 0.5 * (x[..., 1] - x[..., 0] ** 2) ** 2

    flat = hm.Target.from_logp(logp, dim=2, backend="numba")
    reference = hm.Target.from_logp(logp, dim=2, backend="autograd")
    x = np.random.default_rng(0).normal(size=(3, 2))
    np.testing.assert_allclose(flat.log_prob_and_grad(x)[1], reference.log_prob_and_grad(x)[1])
    assert flat.numba_kernel() is not None and reference.numba_kernel() is None
    with pytest.raises(ValueError, match="backend must be"):
        hm.Target.from_logp(logp, dim=2, backend="torch")
    with pytest.raises(ValueError, match="backend must be"):
        hm.Model(logp, {"x": hm.real(2)}, backend="torch")


def test_a_model_compiles_by_default_and_runs_compiled_without_a_warning(recwarn):
    model = eight_schools()
    assert model.backend == "numba" and model.numba_kernel() is not None
    run = hm.sample(model, chains=2, warmup=100, draws=100, seed=0, progress=False)
    assert run.attrs["path_reason"].startswith("compiled")
    assert not [
        w for w in recwarn if issubclass(w.category, (hm.CompileWarning, hm.FallbackWarning))
    ]


def test_a_model_numba_cannot_compile_runs_with_autograd_and_says_why_once(recwarn):
    def logp(p):
        if p["x"][0] > 0:  # a branch on a parameter: one path's gradient would be wrong
            return -0.5 * anp.sum(p["x"] ** 2)
        return -0.5 * anp.sum(p["x"] ** 2) - 0.0

    model = hm.Model(logp, {"x": hm.real(2)})
    compile_warnings = [w for w in recwarn if w.category is hm.CompileWarning]
    assert len(compile_warnings) == 1
    message = str(compile_warnings[0].message)
    assert "runs with autograd" in message and "backend='autograd' silences this" in message
    assert compile_warnings[0].filename == __file__  # the user's line
    assert model.backend == "autograd" and model.numba_kernel() is None
    run = hm.sample(model, chains=2, warmup=50, draws=50, seed=0, progress=False)
    # The NumPy path is this model's path: no second warning at every run.
    assert run.attrs["path_reason"].startswith("numpy")
    assert [w.category for w in recwarn if issubclass(w.category, UserWarning)
            and w.category is not hm.SamplingWarning] == [hm.CompileWarning]  # fmt: skip
    with pytest.raises(ValueError, match=r"numba could not|decision|branch|truth value"):
        hm.Model(logp, {"x": hm.real(2)}, backend="numba")


@pytest.mark.parametrize("backend", [None, "autograd"])
def test_a_shape_error_in_logp_names_the_blocks_and_their_shapes(backend):
    def logp(p):
        return -0.5 * anp.sum((p["eta"] - np.ones(7)) ** 2) + p["mu"]

    with pytest.raises(ValueError, match="could not be broadcast") as info:
        hm.Model(logp, {"mu": hm.real(), "eta": hm.real(8)}, backend=backend)
    note = "\n".join(getattr(info.value, "__notes__", []))
    assert "mu ()" in note and "eta (8,)" in note


def test_a_target_with_cheap_point_calls_is_called_back_from_the_compiled_chain(recwarn):
    """Target.compiled_callback (set by from_jax): compiled=None runs the compiled chain,
    calling the target back, with no warning; the draws are those of compiled=True."""
    target = hm.Target.from_logp(lambda x: -0.5 * anp.sum(x**2), 3, backend="autograd")
    target.compiled_callback = True
    run = hm.sample(target, chains=2, warmup=50, draws=50, seed=1, progress=False)
    assert "called back" in run.attrs["path_reason"]
    asked = hm.sample(target, chains=2, warmup=50, draws=50, seed=1, progress=False,
                      compiled=True)  # fmt: skip
    np.testing.assert_array_equal(run.draws, asked.draws)
    assert not [w for w in recwarn if issubclass(w.category, hm.FallbackWarning)]
    target.compiled_callback = False
    assert hm.sample(target, chains=2, warmup=50, draws=50, seed=1, progress=False
                     ).attrs["path_reason"].startswith("numpy")  # fmt: skip


def test_from_jax_runs_compiled_by_default():
    pytest.importorskip("jax")
    flat = hm.Target.from_jax(lambda x: -0.5 * (x**2).sum(), dim=3)
    assert flat.compiled_callback
    run = hm.sample(flat, chains=2, warmup=50, draws=50, seed=1, progress=False)
    assert "called back" in run.attrs["path_reason"]


def _jax_flat_logp(x):
    import jax.numpy as jnp

    return -0.5 * jnp.sum(x**2) - 0.1 * jnp.sum(x**4)


@pytest.mark.parametrize("compiled", [False, None])
def test_a_jax_target_gives_the_same_draws_in_worker_processes(compiled):
    """JAX starts each process in 32-bit floats: a worker that unpickles the target must
    still compute in float64, or its chains drift from the in-process run's."""
    pytest.importorskip("jax")
    target = hm.Target.from_jax(_jax_flat_logp, dim=3)
    options = dict(chains=2, warmup=30, draws=30, seed=4, progress=False, compiled=compiled)
    here = hm.sample(target, **options)
    there = hm.sample(target, executor="processes", workers=2, **options)
    np.testing.assert_array_equal(there.draws, here.draws)


def test_a_name_may_be_a_dimension_in_another_group(tmp_path):
    """The groups are apart: a covariate in observed_data named as a block's dimension (the
    group effect's "group"), or a block named as an observation's dimension, is a model
    whose run saves and reads back."""
    y, group = np.array([0.1, -0.3, 0.5, 1.0, 0.2]), np.array([0, 1, 2, 0, 1])

    def log_likelihood(p):
        return {"y": -0.5 * (y - p["theta"][..., group]) ** 2}

    model = hm.Model(lambda p: -0.5 * anp.sum(p["theta"] ** 2, axis=-1)
                     + anp.sum(log_likelihood(p)["y"], axis=-1),
                     {"theta": hm.real(3, dims="group"), "obs": hm.real()},
                     observed_data={"y": y, "group": group}, observed_dims={"y": "obs"},
                     log_likelihood=log_likelihood, backend="autograd")  # fmt: skip
    run = hm.sample(model, chains=2, warmup=20, draws=20, seed=0, progress=False,
                    output=tmp_path / "run.nc")  # fmt: skip
    back = hm.load(tmp_path / "run.nc", target=model)
    np.testing.assert_array_equal(back.draws, run.draws)
    assert back.posterior["theta"].dims == ("chain", "draw", "group")


@pytest.mark.parametrize(
    ("observed_dims", "message"),
    [
        ({"z": "school"}, r"observed_dims names 'z', which observed_data does not hold"),
        ({"y": ["school", "term"]}, r"names 2 dimensions for an observation of shape \(8,\)"),
        (
            {"y": "pupil"},
            r"coords gives 2 labels for the dimension 'pupil', which has 8 "
            r"entries \(in 'y'\)",
        ),
    ],
)
def test_observed_dims_are_checked_when_the_model_is_built(observed_dims, message):
    coords = {"school": SCHOOLS} if observed_dims != {"y": "pupil"} else {"pupil": list("ab")}
    with pytest.raises(ValueError, match=message):
        hm.Model(_eight_schools_logp, {"mu": hm.real(), "tau": hm.positive(),
                                       "eta": hm.real(8, dims="school")},
                 observed_data={"y": Y}, observed_dims=observed_dims, coords=coords,
                 backend="autograd")  # fmt: skip


def test_observed_dims_without_observed_data_take_their_coords():
    """The observations' dimension is named for log_likelihood alone; its labels are
    accepted, and the log_likelihood group carries them."""
    model = hm.Model(_eight_schools_logp, {"mu": hm.real(), "tau": hm.positive(),
                                           "eta": hm.real(8)},
                     log_likelihood=lambda p: -0.5 * ((Y - _theta(p)) / SIGMA) ** 2,
                     observed_dims={"y": "pupil"}, coords={"pupil": SCHOOLS},
                     backend="autograd")  # fmt: skip
    run = hm.sample(model, chains=2, warmup=50, draws=20, seed=1, progress=False)
    tree = run.to_datatree()
    assert tree["log_likelihood"]["y"].dims == ("chain", "draw", "pupil")
    assert list(tree["log_likelihood"]["pupil"].values) == SCHOOLS


#: Beta(a, b) with most of its mass near 0: P(t < 1e-15) = 0.0387.
BETA_A, BETA_B = 0.1, 5.0


def _beta_near_both_bounds(p):
    """t ~ Beta(a, b) in (0, 1), near its lower bound, and -s ~ Beta(a, b) for s in
    (-1, 0), near its upper bound: each has mass within 1e-16 of a bound at 0."""
    a, b = BETA_A, BETA_B
    return ((a - 1) * anp.log(p["t"]) + (b - 1) * anp.log1p(-p["t"])
            + (a - 1) * anp.log(-p["s"]) + (b - 1) * anp.log1p(p["s"]))  # fmt: skip


BETA_BLOCKS = {"t": hm.interval(0, 1), "s": hm.interval(-1, 0)}


@pytest.mark.parametrize("backend", ["numba", "autograd"])
def test_an_interval_model_is_exact_far_out_towards_either_bound(backend):
    """With t = sigma(z_t) and s = -sigma(-z_s), the density in z (logp at T(z) plus
    the log-Jacobians) is a log sigma(z_t) + b log sigma(-z_t) + a log sigma(-z_s)
    + b log sigma(z_s), with gradient (a sigma(-z_t) - b sigma(z_t), b sigma(-z_s)
    - a sigma(z_s)): finite and exact to rounding as far out as z = -+700, where the
    bounded value is 1e-304 from its bound (a value rounded onto the bound would give
    log(0) = -inf). The default backend compiles the transform."""
    from scipy.special import expit, log_expit

    assert hm.Model(_beta_near_both_bounds, BETA_BLOCKS).backend == "numba"
    model = hm.Model(_beta_near_both_bounds, BETA_BLOCKS, backend=backend)
    assert model.backend == backend
    a, b = BETA_A, BETA_B
    zt = np.array([-700.0, -300.0, -60.0, -40.0, -5.0, 0.0])
    z = np.stack([zt, -zt], axis=-1)
    lp, grad = model.log_prob_and_grad(z)
    want_lp = a * log_expit(zt) + b * log_expit(-zt) + a * log_expit(zt) + b * log_expit(-zt)
    want_grad = np.stack([a * expit(-zt) - b * expit(zt), b * expit(zt) - a * expit(-zt)], -1)
    # Rounding only: a few ulps of the largest term.
    ulps = 64 * np.finfo(float).eps
    np.testing.assert_allclose(lp, want_lp, rtol=ulps, atol=0)
    np.testing.assert_allclose(grad, want_grad, rtol=ulps, atol=ulps * b)


def test_nuts_reaches_the_mass_of_a_beta_within_1e_15_of_its_bounds():
    """Beta(0.1, 5) has 3.9 % of its mass below 1e-15: NUTS on the compiled path puts
    that share of its draws there (z-score on the MCSE of the indicator's mean, on an ESS
    of at least MIN_ESS), towards the lower bound of (0, 1) and the upper bound of
    (-1, 0), without divergences (a transform that rounds the value onto the bound gives
    the sampler log(0) = -inf there: 1.1 % and 500 divergences at this seed)."""
    from scipy import stats

    from hamiltonia import diagnostics

    run = hm.sample(hm.Model(_beta_near_both_bounds, BETA_BLOCKS), chains=4, warmup=1000,
                    draws=2500, seed=1, progress=False)  # fmt: skip
    names = run.names
    distance = np.stack([run.draws[..., names.index("t")], -run.draws[..., names.index("s")]],
                        axis=-1)  # fmt: skip
    below = (distance < 1e-15).astype(float)
    assert np.all(diagnostics.ess(below, "mean") >= MIN_ESS)
    exact = stats.beta(BETA_A, BETA_B).cdf(1e-15)
    z = (below.mean(axis=(0, 1)) - exact) / diagnostics.mcse(below, "mean")
    assert np.all(np.abs(z) < Z_THRESHOLD), z
    assert run.n_divergent == 0


def test_a_model_error_shows_the_position_as_the_model_reports_it():
    """The sampler moves log s; the user reads s."""

    def logp(p):
        if p["s"] > 5:
            raise RuntimeError("s too big")
        return anp.log(p["s"]) - p["s"]

    model = hm.Model(logp, {"s": hm.positive()}, backend="autograd")
    with pytest.raises(hm.ModelError) as info:
        hm.sample(model, chains=1, warmup=0, draws=5, progress=False,
                  initial={"s": 6.0})  # fmt: skip
    assert "as reported: s=6" in str(info.value)
    assert f"position [{np.log(6.0):.6f}]" in str(info.value)


def test_a_numba_model_of_one_point_gives_the_hessian_vector_product_of_a_batch():
    """A ``logp`` written for one point, compiled by numba: the model evaluates batches, so
    its Hessian-vector product (from autograd, for the shadow samplers' NumPy path) is taken
    row by row; for N(0, diag(s^2)) it is -v / s^2."""
    import autograd.numpy as anp

    scales = np.array([0.5, 1.0, 2.0])
    model = hm.Model(lambda p: -0.5 * anp.sum((p["x"] / scales) ** 2), {"x": hm.real(3)},
                     backend="numba")  # fmt: skip
    v = np.random.default_rng(0).normal(size=(2, 4, 3))
    np.testing.assert_allclose(model.hvp(np.zeros((2, 4, 3)), v), -v / scales**2, rtol=1e-12)
