"""Bayesian neural network regression: density, gradient and HVP against autograd, the numba
kernel, prediction and metrics; data factories."""

from __future__ import annotations

import math

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.targets.bnn import (
    DEFAULT_NOISE_SCALE,
    DEFAULT_PRIOR_SCALE,
    BayesianNeuralNetwork,
    normalised_weights,
)
from hamiltonia.testing import assert_paths_agree
from tests.data import use_data

RTOL = 1e-8
H = 5


def _kernel_value_and_grad(target, theta):
    kernel = target.numba_kernel()
    assert isinstance(kernel, hm.compiled.NumbaTarget)
    return kernel.evaluate(theta)  # through compiled code, not the cfunc's Python source


def _data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 40.0 + 7.0 * np.sin(X[:, 0]) + 3.0 * X[:, -1] + rng.normal(size=n)
    return X, y


def _autograd_logp(X, y, noise_scale, prior_scale, n_hidden=H):
    """The same model written independently with autograd.numpy."""
    d = X.shape[1]
    ys = (y - y.mean()) / y.std()

    def logp(theta):
        W = anp.reshape(theta[: d * n_hidden], (d, n_hidden))
        a = theta[d * n_hidden : d * n_hidden + n_hidden]
        v = theta[d * n_hidden + n_hidden : d * n_hidden + 2 * n_hidden]
        b = theta[-1]
        f = anp.dot(anp.tanh(anp.dot(X, W) + a), v) + b
        return -anp.sum((ys - f) ** 2) / (2 * noise_scale**2) - anp.sum(theta**2) / (
            2 * prior_scale**2
        )

    return logp


def _close(actual, expected, rtol=RTOL):
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


@pytest.fixture
def model():
    X, y = _data()
    target = BayesianNeuralNetwork(X, y, noise_scale=0.4, prior_scale=1.5)
    return target, _autograd_logp(X, y, 0.4, 1.5)


@pytest.mark.parametrize("scale", [0.1, 1.0, 4.0])
def test_log_prob_gradient_and_hvp_match_autograd(model, scale):
    target, logp = model
    rng = np.random.default_rng(1)
    grad = autograd.grad(logp)
    hess = autograd.hessian(logp)
    for _ in range(2):
        theta = rng.normal(size=target.dim) * scale
        u = rng.normal(size=target.dim)
        lp, g = target.log_prob_and_grad(theta)
        _close(lp, logp(theta))
        _close(target.log_prob(theta), logp(theta))
        _close(target.log_likelihood(theta) - 0.5 * np.sum(theta**2) / 1.5**2, logp(theta))
        _close(g, grad(theta))
        _close(target.hvp(theta, u), hess(theta) @ u)


def test_defaults_reproduce_the_sum_of_squared_errors():
    """With sigma = 1/sqrt(2) the negative log-likelihood is the SSE (thesis §3.1.6)."""
    X, y = _data()
    target = BayesianNeuralNetwork(X, y)
    assert target.noise_scale == DEFAULT_NOISE_SCALE == 1 / math.sqrt(2)
    assert target.prior_scale == DEFAULT_PRIOR_SCALE == 1.0
    theta = np.random.default_rng(2).normal(size=target.dim)
    W, a, v, b = target.unpack(theta)
    f = np.tanh(X @ W + a) @ v + b
    sse = np.sum(((y - y.mean()) / y.std() - f) ** 2)
    np.testing.assert_allclose(target.log_likelihood(theta), -sse, rtol=1e-12)
    _close(target.log_prob(theta), _autograd_logp(X, y, DEFAULT_NOISE_SCALE, 1.0)(theta))


def test_numba_kernel_matches_numpy(model):
    target, _ = model
    rng = np.random.default_rng(3)
    for scale in (0.1, 1.0, 4.0):
        theta = rng.normal(size=target.dim) * scale
        lp, grad = _kernel_value_and_grad(target, theta)
        lp_np, grad_np = target.log_prob_and_grad(theta)
        np.testing.assert_allclose(lp, lp_np, rtol=1e-10)
        np.testing.assert_allclose(grad, grad_np, rtol=1e-10, atol=1e-10 * np.abs(grad_np).max())


def test_numba_kernel_blocks_rows():
    """More rows than one kernel block (256), and a partial last block."""
    X, y = _data(n=600, d=2)
    target = BayesianNeuralNetwork(X, y)
    theta = np.random.default_rng(4).normal(size=target.dim)
    lp, grad = _kernel_value_and_grad(target, theta)
    lp_np, grad_np = target.log_prob_and_grad(theta)
    np.testing.assert_allclose(lp, lp_np, rtol=1e-10)
    np.testing.assert_allclose(grad, grad_np, rtol=1e-10, atol=1e-10 * np.abs(grad_np).max())


def test_compiled_and_numpy_paths_give_the_same_draws():
    X, y = _data(n=50, d=2)
    assert_paths_agree(
        BayesianNeuralNetwork(X, y),
        sampler="hmc",
        chains=2,
        warmup=0,
        draws=15,
        seed=3,
        step_size=0.02,
        n_steps=8,
    )


def test_computes_on_the_array_backend(model):
    """On array_api_strict (the stand-in for CuPy): backend arrays in and out, autograd's
    values; prediction takes draws held on the backend."""
    pytest.importorskip("array_api_strict")
    from hamiltonia import backend

    target, logp = model
    assert "cupy" in target.backends
    rng = np.random.default_rng(7)
    th, u = 0.5 * rng.normal(size=(2, target.dim)), rng.normal(size=(2, target.dim))
    with backend.using("array_api_strict"):
        q, du = backend.asarray(th), backend.asarray(u)
        lp, g = target.log_prob_and_grad(q)
        hv = target.hvp(q, du)
        assert backend.namespace_of(g) is backend.xp()
        _close(backend.to_numpy(lp), np.array([logp(x) for x in th]))
        _close(backend.to_numpy(g), np.array([autograd.grad(logp)(x) for x in th]))
        want = np.array([autograd.hessian(logp)(x) @ y for x, y in zip(th, u, strict=True)])
        _close(backend.to_numpy(hv), want)
        rows = np.ones((2, target.n_features))
        np.testing.assert_array_equal(target.predict(q, rows), target.predict(th, rows))


def test_batches_match_single_points(model):
    target, _ = model
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, target.dim))
    u = rng.normal(size=(2, 3, target.dim))
    lp, g = target.log_prob_and_grad(x)
    hv = target.hvp(x, u)
    assert lp.shape == (2, 3) and g.shape == x.shape and hv.shape == x.shape
    np.testing.assert_allclose(target.log_prob(x), lp, rtol=1e-13)
    for i in range(2):
        for j in range(3):
            lp1, g1 = target.log_prob_and_grad(x[i, j])
            np.testing.assert_allclose(lp[i, j], lp1, rtol=1e-13)
            np.testing.assert_allclose(g[i, j], g1, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(hv[i, j], target.hvp(x[i, j], u[i, j]), atol=1e-10)
    # One direction for every chain broadcasts.
    np.testing.assert_allclose(
        target.hvp(x, u[0, 0]),
        np.stack([[target.hvp(x[i, j], u[0, 0]) for j in range(3)] for i in range(2)]),
        atol=1e-10,
    )
    assert target.has_hvp


@pytest.mark.parametrize(("d", "dim"), [(4, 31), (5, 36), (8, 51), (9, 56)])
def test_parameter_counts_of_table_3_2(d, dim):
    X, y = _data(n=12, d=d)
    assert BayesianNeuralNetwork(X, y).dim == dim == 5 * d + 11


def test_names():
    X, y = _data(n=10, d=2)
    target = BayesianNeuralNetwork(X, y, feature_names=["Cement (kg)", "age_days"], n_hidden=2)
    assert target.names == (
        "w_cement_kg_1",
        "w_cement_kg_2",
        "w_age_days_1",
        "w_age_days_2",
        "a_1",
        "a_2",
        "v_1",
        "v_2",
        "b",
    )
    assert all(n.isidentifier() for n in target.names)
    assert BayesianNeuralNetwork(X, y).names[:2] == ("w_x1_1", "w_x1_2")
    # unpack follows the names: w_<feature>_<j> is W[feature, j - 1]
    theta = np.arange(target.dim, dtype=float)
    W, a, v, b = target.unpack(theta)
    assert W[0, 1] == target.names.index("w_cement_kg_2")
    assert W[1, 0] == target.names.index("w_age_days_1")
    assert a[1] == target.names.index("a_2") and v[0] == target.names.index("v_1")
    assert b == target.names.index("b")


def test_invalid_arguments_name_the_parameter():
    X, y = _data()
    with pytest.raises(ValueError, match="noise_scale"):
        BayesianNeuralNetwork(X, y, noise_scale=0)
    with pytest.raises(ValueError, match="prior_scale"):
        BayesianNeuralNetwork(X, y, prior_scale=-1)
    with pytest.raises(ValueError, match="n_hidden"):
        BayesianNeuralNetwork(X, y, n_hidden=0)
    with pytest.raises(ValueError, match="feature_names"):
        BayesianNeuralNetwork(X, y, feature_names=["a"])
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        BayesianNeuralNetwork(X[:, 0], y)
    with pytest.raises(ValueError, match="y must have shape"):
        BayesianNeuralNetwork(X, y[:-1])
    with pytest.raises(ValueError, match="y must be finite"):
        BayesianNeuralNetwork(X, np.full_like(y, np.nan))
    with pytest.raises(ValueError, match="X_test must have 3 columns"):
        BayesianNeuralNetwork(X, y, X_test=X[:, :2], y_test=y)
    with pytest.raises(ValueError, match="given together"):
        BayesianNeuralNetwork(X, y, X_test=X)
    target = BayesianNeuralNetwork(X, y)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 26\)"):
        target.log_prob(np.zeros(3))
    with pytest.raises(ValueError, match="X is required"):
        target.predict(np.zeros(target.dim))
    with pytest.raises(ValueError, match="metrics need test data"):
        target.metrics(np.zeros(target.dim))


def test_predict_is_the_posterior_mean_on_the_original_scale():
    X, y = _data(n=70)
    target = BayesianNeuralNetwork(X[:60], y[:60], X_test=X[60:], y_test=y[60:])
    draws = np.random.default_rng(6).normal(size=(2, 5, target.dim))
    flat = draws.reshape(-1, target.dim)
    mean, sd = y[:60].mean(), y[:60].std()
    per_draw = []
    for theta in flat:
        W, a, v, b = target.unpack(theta)
        per_draw.append(mean + sd * (np.tanh(X[60:] @ W + a) @ v + b))
    per_draw = np.array(per_draw)
    expected = per_draw.mean(axis=0)
    np.testing.assert_allclose(target.predict(draws), expected, rtol=1e-12)
    np.testing.assert_allclose(target.predict(draws, X[60:]), expected, rtol=1e-12)
    np.testing.assert_allclose(
        target.predict(draws, log_weights=np.full((2, 5), -3.0)), expected, rtol=1e-12
    )
    lw = np.full((2, 5), -np.inf)
    lw[1, 2] = 0.0
    np.testing.assert_allclose(target.predict(draws, log_weights=lw), per_draw[7], rtol=1e-12)
    assert target.predict(draws, X[0]).shape == (1,)
    with pytest.raises(ValueError, match="log_weights"):
        target.predict(draws, log_weights=np.zeros(3))
    with pytest.raises(ValueError, match="X must have shape"):
        target.predict(draws, X[:, :2])

    m = target.metrics(draws)
    err = y[60:] - expected
    np.testing.assert_allclose(m["mse"], np.mean(err**2), rtol=1e-12)
    np.testing.assert_allclose(m["rmse"], np.sqrt(np.mean(err**2)), rtol=1e-12)
    np.testing.assert_allclose(m["mae"], np.mean(np.abs(err)), rtol=1e-12)
    r2 = 1 - np.sum(err**2) / np.sum((y[60:] - y[60:].mean()) ** 2)
    np.testing.assert_allclose(m["r2"], r2, rtol=1e-12)
    assert set(m) == {"mse", "rmse", "mae", "r2"}
    assert target.test_metrics(draws) == m


def test_predict_in_blocks(monkeypatch):
    """predict works through the draws in blocks; the result does not depend on the size."""
    import hamiltonia.targets.bnn as bnn

    X, y = _data(n=40)
    target = BayesianNeuralNetwork(X[:30], y[:30], X_test=X[30:], y_test=y[30:])
    draws = np.random.default_rng(7).normal(size=(13, target.dim))
    lw = np.random.default_rng(8).normal(size=13)
    full = target.predict(draws, log_weights=lw), target.predict(draws)
    monkeypatch.setattr(bnn, "_PREDICT_BLOCK", 3 * 10 * H)  # 3 draws per block
    np.testing.assert_allclose(target.predict(draws, log_weights=lw), full[0], rtol=1e-12)
    np.testing.assert_allclose(target.predict(draws), full[1], rtol=1e-12)


def test_unstandardised_targets():
    X, y = _data()
    target = BayesianNeuralNetwork(X, y, standardize_y=False, X_test=X, y_test=y)
    assert (target.y_mean_, target.y_scale_) == (0.0, 1.0)
    theta = np.random.default_rng(9).normal(size=target.dim)
    W, a, v, b = target.unpack(theta)
    f = np.tanh(X @ W + a) @ v + b
    np.testing.assert_allclose(
        target.log_likelihood(theta), -np.sum((y - f) ** 2) / (2 * DEFAULT_NOISE_SCALE**2)
    )
    np.testing.assert_allclose(target.predict(theta), f, rtol=1e-12)


def test_a_short_run_learns_the_function():
    """HMC on a tiny synthetic problem beats predicting the mean by a wide margin."""
    rng = np.random.default_rng(10)
    X = rng.uniform(-2, 2, size=(120, 1))
    y = 3.0 * np.tanh(2.0 * X[:, 0]) + 0.1 * rng.normal(size=120)
    target = BayesianNeuralNetwork(
        X[:100], y[:100], noise_scale=0.1, X_test=X[100:], y_test=y[100:]
    )
    result = hm.sample(target, "hmc", chains=2, warmup=150, draws=50, seed=1, n_steps=20,
                       progress=False)  # fmt: skip
    assert result.attrs["compiled"]
    assert target.metrics(result.draws)["r2"] > 0.9


def test_normalised_weights():
    assert normalised_weights(None, 3) is None
    np.testing.assert_allclose(normalised_weights([0.0, np.log(3.0)], 2), [0.25, 0.75])
    with pytest.raises(ValueError, match="NaN"):
        normalised_weights([np.nan, 0.0], 2)


# ----------------------------------------------------------------------------- real data
@pytest.fixture
def with_data(monkeypatch):
    """Point HAMILTONIA_DATA at the canonical files, or skip."""
    use_data(monkeypatch, "power", "airfoil", "concrete", "protein")


@pytest.mark.parametrize(
    ("name", "dataset", "dim", "n_train"),
    [
        ("bnn-power", "power", 31, 8611),
        ("bnn-airfoil", "airfoil", 36, 1353),
        ("bnn-concrete", "concrete", 51, 927),
        ("bnn-protein", "protein", 56, 41157),
    ],
)
def test_registered_data_targets(with_data, name, dataset, dim, n_train):
    from hamiltonia import datasets

    target = hm.targets.get(name)
    data = datasets.load(dataset)
    assert isinstance(target, BayesianNeuralNetwork)
    assert target.dim == dim and target.n_obs == n_train
    np.testing.assert_array_equal(target.X, data.X_train)
    np.testing.assert_array_equal(target.X_test, data.X_test)
    np.testing.assert_array_equal(target.y_test, data.y_test)
    assert target.y_mean_ == pytest.approx(data.y_train.mean())
    assert target.names[0] == f"w_{data.feature_names[0]}_1"
    theta = np.random.default_rng(11).normal(size=dim) * 0.5
    lp, grad = _kernel_value_and_grad(target, theta)
    lp_np, grad_np = target.log_prob_and_grad(theta)
    np.testing.assert_allclose(lp, lp_np, rtol=1e-10)
    np.testing.assert_allclose(grad, grad_np, rtol=1e-10, atol=1e-10 * np.abs(grad_np).max())
    assert hm.targets.describe()[name]


def test_concrete_against_autograd_and_options(with_data):
    from hamiltonia import datasets

    data = datasets.load("concrete")
    target = hm.targets.get("bnn-concrete", noise_scale=0.5, prior_scale=2.0)
    assert (target.noise_scale, target.prior_scale) == (0.5, 2.0)
    logp = _autograd_logp(data.X_train, data.y_train, 0.5, 2.0)
    theta = np.random.default_rng(12).normal(size=target.dim) * 0.5
    lp, g = target.log_prob_and_grad(theta)
    _close(lp, logp(theta))
    _close(g, autograd.grad(logp)(theta))
    assert hm.targets.get("bnn-concrete", split_seed=1).n_obs == 927


def test_bnn_concrete_samples(with_data):
    result = hm.sample("bnn-concrete", "hmc", chains=2, warmup=60, draws=20, seed=0, n_steps=10,
                       progress=False)  # fmt: skip
    assert result.attrs["compiled"]
    assert result.draws.shape == (2, 20, 51) and np.all(np.isfinite(result.draws))
    metrics = hm.targets.get("bnn-concrete").metrics(result.draws)
    assert np.isfinite(metrics["rmse"]) and metrics["rmse"] > 0
    assert result.test_metrics() == metrics


def test_metrics_agree_with_the_scikit_learn_ones():
    pytest.importorskip("sklearn")
    from hamiltonia.diagnostics.predictive import regression_metrics

    X, y = _data(n=50)
    target = BayesianNeuralNetwork(X[:40], y[:40], X_test=X[40:], y_test=y[40:])
    draws = np.random.default_rng(13).normal(size=(4, target.dim))
    expected = regression_metrics(y[40:], target.predict(draws))
    for key, value in target.metrics(draws).items():
        np.testing.assert_allclose(value, expected[key], rtol=1e-12)


def test_paper_setting_prior_and_likelihood(with_data):
    """Paper: the thesis's sum-of-squared-errors likelihood (sigma^2 = 1/2) and the prior
    N(0, 10^2) (the thesis's only stated prior, GAP for networks); the data as in the
    default."""
    from hamiltonia.targets.bnn import DEFAULT_NOISE_SCALE, PAPER_PRIOR_SCALE

    paper = hm.targets.get("bnn-concrete", setting="paper")
    default = hm.targets.get("bnn-concrete")
    assert PAPER_PRIOR_SCALE == 10.0
    assert (paper.prior_scale, paper.noise_scale) == (10.0, DEFAULT_NOISE_SCALE)
    assert (default.prior_scale, default.noise_scale) == (1.0, DEFAULT_NOISE_SCALE)
    assert paper.setting == "paper" and paper.description.endswith("[setting: paper]")
    np.testing.assert_array_equal(paper.X, default.X)
    np.testing.assert_array_equal(paper.y, default.y)
    theta = np.random.default_rng(13).normal(size=paper.dim)
    sse = -paper.log_likelihood(theta)  # the sum of squared errors, standardised y
    np.testing.assert_allclose(
        paper.log_prob(theta), -sse - np.sum(theta**2) / (2 * 10.0**2), rtol=1e-12
    )
    assert hm.targets.get("bnn-concrete", setting="paper", prior_scale=3.0).prior_scale == 3.0
    with pytest.raises(ValueError, match=r"setting must be one of 'default', 'paper'"):
        hm.targets.get("bnn-concrete", setting="bogus")
