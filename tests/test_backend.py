"""The array backend: the NumPy path is backend-neutral (checked with array_api_strict,
which refuses any NumPy-only call), and CuPy fails clearly where it cannot run. The data
targets (logistic regression, the BNN) compute on the backend too: the same draws as NumPy
on array_api_strict here, and on CuPy where a CUDA device is present (the CuPy tests need
no array-api-strict: ``pytest tests/test_backend.py -k cupy`` on a GPU machine)."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia import backend
from hamiltonia.targets.bnn import BayesianNeuralNetwork
from hamiltonia.targets.logistic import LogisticRegression
from hamiltonia.testing import assert_moments_recovered
from tests.data import use_data

try:
    import array_api_strict  # noqa: F401
except ImportError:
    HAVE_STRICT = False
else:
    HAVE_STRICT = True
#: The tests that run on array_api_strict; the CuPy ones and the errors run without it.
strict = pytest.mark.skipif(not HAVE_STRICT, reason="needs array-api-strict")

CASES = [
    ("hmc", "banana", {}),
    ("hmc", "gaussian-d10", {"metric": "diagonal", "step_size_jitter": 0.3}),
    ("hmc", "correlated-gaussian", {"metric": "dense"}),
    ("mala", "funnel-d25", {}),
    ("rwmh", "banana", {}),
    # Magnetic, quantum-inspired and shadow samplers (issue 33): the field's exact flow, the
    # random mass, both shadows and the processed leapfrog's fixed points.
    ("mhmc", "gaussian-d10", {}),
    ("pmhmc", "funnel", {"metric": "diagonal"}),
    ("qimhmc", "banana", {}),
    ("s2hmc", "gaussian-d10", {}),
    ("ps2hmc", "banana", {"metric": "diagonal"}),
    ("shmc", "banana", {}),
    ("smhmc", "gaussian-d10", {}),
    ("a-mhmc", "banana", {}),
]


@strict
@pytest.mark.parametrize(
    ("sampler", "name", "options"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_strict_backend_gives_the_numpy_draws(sampler, name, options):
    a = hm.sample(
        name,
        sampler,
        chains=2,
        warmup=150,
        draws=40,
        seed=4,
        progress=False,
        compiled=False,
        **options,
    )
    b = hm.sample(
        name,
        sampler,
        chains=2,
        warmup=150,
        draws=40,
        seed=4,
        progress=False,
        backend="array_api_strict",
        **options,
    )
    assert b.attrs["compiled"] is False
    np.testing.assert_array_equal(a.draws, b.draws)
    for key in a.stats:
        np.testing.assert_array_equal(a.stats[key], b.stats[key])
    assert backend.get_backend() == "numpy"  # the run's backend does not leak


@strict
def test_targets_compute_on_the_backend():
    xs = backend.asarray
    with backend.using("array_api_strict"):
        for name in ("banana", "gaussian-d10", "funnel-d25", "correlated-gaussian"):
            target = hm.targets.get(name)
            q = xs(np.full((3, target.dim), 0.3))
            lp, g = target.log_prob_and_grad(q)
            ref_lp, ref_g = target.log_prob_and_grad(np.full((3, target.dim), 0.3))
            np.testing.assert_allclose(backend.to_numpy(lp), ref_lp)
            np.testing.assert_allclose(backend.to_numpy(g), ref_g)
            hv = target.hvp(q, xs(np.ones((3, target.dim))))
            np.testing.assert_allclose(
                backend.to_numpy(hv),
                target.hvp(np.full((3, target.dim), 0.3), np.ones((3, target.dim))),
            )


# ----------------------------------------------------------------------------- data targets
def _logistic(n=80, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ rng.normal(size=p)))).astype(float)
    return LogisticRegression(X[:60], y[:60], X_test=X[60:], y_test=y[60:])


def _network(n=80, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 3.0 + np.sin(X[:, 0]) + 0.5 * X[:, -1] + 0.1 * rng.normal(size=n)
    return BayesianNeuralNetwork(X[:60], y[:60], n_hidden=3, X_test=X[60:], y_test=y[60:])


DATA_TARGETS = {"logistic": _logistic, "network": _network}


def _on_backend_matches_numpy(target, name, rtol=0.0):
    """Every backend-neutral method of ``target`` on backend ``name`` against NumPy: the
    results are arrays of the backend, equal to NumPy's (within ``rtol``)."""
    rng = np.random.default_rng(1)
    with backend.using(name):
        space = backend.xp()
        for shape in [(target.dim,), (3, target.dim), (2, 3, target.dim)]:
            x, v = 0.3 * rng.normal(size=shape), rng.normal(size=shape)
            q, u = backend.asarray(x), backend.asarray(v)
            pairs = [
                (target.log_prob(q), target.log_prob(x)),
                *zip(target.log_prob_and_grad(q), target.log_prob_and_grad(x), strict=True),
                *zip(
                    target.rows_log_prob_and_grad(q, 5, 40, 0.25),
                    target.rows_log_prob_and_grad(x, 5, 40, 0.25),
                    strict=True,
                ),
                (target.hvp(q, u), target.hvp(x, v)),
                (target.log_likelihood(q), target.log_likelihood(x)),
            ]
            for got, want in pairs:
                assert backend.namespace_of(got) is not np or space is np
                assert tuple(got.shape) == np.shape(want)
                scale = rtol * float(np.max(np.abs(want)))
                np.testing.assert_allclose(backend.to_numpy(got), want, rtol=rtol, atol=scale)


@strict
@pytest.mark.parametrize("kind", sorted(DATA_TARGETS))
def test_data_targets_compute_on_the_backend(kind):
    target = DATA_TARGETS[kind]()
    assert "array_api_strict" in target.backends and "cupy" in target.backends
    _on_backend_matches_numpy(target, "array_api_strict")
    # The row method stays the target's density over all rows, bit for bit.
    x = backend.asarray(np.full((2, target.dim), 0.2))
    with backend.using("array_api_strict"):
        whole = target.log_prob_and_grad(x)
        rows = target.rows_log_prob_and_grad(x, 0, target.n_obs, 1.0)
        for a, b in zip(whole, rows, strict=True):
            np.testing.assert_array_equal(backend.to_numpy(a), backend.to_numpy(b))


DATA_CASES = [
    ("hmc", "logistic", {"step_size": 0.1, "n_steps": 8}),
    ("nuts", "logistic", {}),
    ("mala", "logistic", {}),
    ("hmc", "network", {"step_size": 0.02, "n_steps": 10}),
    ("nuts", "network", {"max_tree_depth": 5}),
    ("mala", "network", {}),
    ("mhmc", "logistic", {"step_size": 0.1, "n_steps": 8}),
    ("ps2hmc", "network", {"step_size": 0.02, "n_steps": 10}),
]


def _same_draws(target, sampler, options, name, *, warmup=40, draws=15, rtol=1e-12, chains=3):
    kwargs = dict(chains=chains, warmup=warmup, draws=draws, seed=5, progress=False, **options)
    a = hm.sample(target, sampler, compiled=False, **kwargs)
    b = hm.sample(target, sampler, backend=name, compiled=False, **kwargs)
    assert b.attrs["compiled"] is False
    assert type(b.draws) is np.ndarray  # the runner brings the draws back to the host
    np.testing.assert_allclose(b.draws, a.draws, rtol=rtol, atol=rtol)
    for key in a.stats:
        np.testing.assert_allclose(b.stats[key], a.stats[key], rtol=rtol, atol=rtol)
    assert backend.get_backend() == "numpy"
    return b


@strict
@pytest.mark.parametrize(
    ("sampler", "kind", "options"), DATA_CASES, ids=[f"{c[0]}-{c[1]}" for c in DATA_CASES]
)
def test_data_targets_give_the_numpy_draws_on_the_strict_backend(sampler, kind, options):
    target = DATA_TARGETS[kind]()
    result = _same_draws(target, sampler, options, "array_api_strict")
    # Prediction runs on the host draws of a backend run.
    assert target.predict(result.draws).shape == (20,)


@strict
@pytest.mark.parametrize(
    ("name", "sampler", "options"),
    [
        ("blr-german", "hmc", {"step_size": 0.05, "n_steps": 10}),
        ("blr-german", "nuts", {"max_tree_depth": 4}),
        ("blr-german", "mala", {}),
        ("bnn-protein", "hmc", {"step_size": 0.0015, "n_steps": 5}),
        ("bnn-protein", "mala", {"step_size": 0.001}),
    ],
)
def test_registered_data_targets_on_the_strict_backend(monkeypatch, name, sampler, options):
    use_data(monkeypatch, "german" if name == "blr-german" else "protein")
    target = hm.targets.get(name)
    warmup = 20 if name == "blr-german" else 0
    result = _same_draws(target, sampler, options, "array_api_strict", warmup=warmup, draws=5)
    assert target.predict(result.draws).shape == (target.X_test.shape[0],)


def _cupy_or_skip():
    try:
        with backend.using("cupy"):
            pass
    except RuntimeError as err:  # no CuPy, or no CUDA device: the reason is the skip's
        pytest.skip(str(err))


@pytest.mark.parametrize("kind", sorted(DATA_TARGETS))
def test_data_targets_on_cupy(kind):
    """On a GPU: the same numbers as NumPy up to the order of the device's sums, and a short
    run (fixed step size, no warm-up) that gives NumPy's draws to that precision."""
    _cupy_or_skip()
    target = DATA_TARGETS[kind]()
    _on_backend_matches_numpy(target, "cupy", rtol=1e-9)
    for sampler, _, options in [c for c in DATA_CASES if c[1] == kind and c[0] != "nuts"]:
        result = _same_draws(target, sampler, options, "cupy", warmup=0, draws=5, rtol=1e-7)
        assert np.isfinite(target.predict(result.draws)).all()


@pytest.mark.parametrize(
    ("sampler", "name", "options"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_samplers_on_cupy(sampler, name, options):
    """On a GPU: every sampler of :data:`CASES` (the magnetic and shadow ones included)
    gives NumPy's draws to the precision of the device's arithmetic in a short run."""
    _cupy_or_skip()
    options = {"step_size": 0.1, **options} if sampler != "rwmh" else options
    chains = 4 if sampler.startswith("a-") else 3  # antithetic pairs
    _same_draws(hm.targets.get(name), sampler, options, "cupy", warmup=0, draws=5, rtol=1e-7,
                chains=chains)  # fmt: skip


MOMENT_CASES = [
    ("hmc", {"metric": "diagonal", "n_steps_jitter": 0.5}),
    ("nuts", {}),
    ("mala", {"metric": "diagonal"}),
    ("mhmc", {"metric": "diagonal", "n_steps_jitter": 0.5}),
    ("qimhmc", {}),
    ("s2hmc", {"metric": "diagonal", "n_steps_jitter": 0.5}),
    ("shmc", {"metric": "diagonal", "n_steps_jitter": 0.5}),
]


@pytest.mark.parametrize("name", ["numpy", "cupy"])
@pytest.mark.parametrize(("sampler", "options"), MOMENT_CASES, ids=[c[0] for c in MOMENT_CASES])
def test_moments_are_recovered_on_the_backend(name, sampler, options):
    """64 chains with warm-up on the vectorised path recover the exact means and variances
    (z-scores from the MCSE, weighted for the shadows); on NumPy the same settings show
    that the run is long enough for the test."""
    if name == "cupy":
        _cupy_or_skip()
    target = hm.targets.get("gaussian-d10")
    run = hm.sample(target, sampler, chains=64, warmup=300, draws=300, seed=11, progress=False,
                    compiled=False, backend=name, **options)  # fmt: skip
    assert_moments_recovered(run, target.exact_moments)


@strict
def test_numpy_only_target_is_refused_with_a_clear_error():
    import autograd.numpy as anp

    target = hm.Target.from_logp(lambda x: -0.5 * anp.sum(x**2), dim=2)
    with pytest.raises(ValueError, match="cannot run on backend 'array_api_strict'"):
        hm.sample(
            target, "hmc", chains=1, warmup=5, draws=5, progress=False, backend="array_api_strict"
        )


@strict
def test_compiled_needs_numpy():
    with pytest.raises(ValueError, match="backend 'array_api_strict'"):
        hm.sample(
            "banana",
            "hmc",
            chains=1,
            warmup=5,
            draws=5,
            progress=False,
            backend="array_api_strict",
            compiled=True,
        )


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        hm.sample("banana", backend="jax", progress=False)
    with pytest.raises(ValueError, match="backend must be one of"):
        backend.set_backend("torch")


def test_cupy_fails_clearly_without_cuda():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            pytest.skip("a CUDA device is present: CuPy runs")
    except Exception:  # CuPy missing or without a driver: the case tested
        pass
    with pytest.raises(RuntimeError, match="cupy"):
        backend.set_backend("cupy")
    assert backend.get_backend() == "numpy"


@strict
def test_a_part_for_numpy_only_is_refused_before_any_work(tmp_path, monkeypatch):
    use_data(monkeypatch, "heart")
    out = tmp_path / "run.nc"
    with pytest.raises(ValueError, match="SymmetricSplit runs on backend numpy only"):
        hm.sample("blr-heart", "split-hmc", backend="array_api_strict", output=str(out),
                  progress=False)  # fmt: skip
    assert not out.exists()
