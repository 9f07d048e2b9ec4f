"""Bayesian logistic regression: density, gradient and HVP against autograd; data factories."""

from __future__ import annotations

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.targets.logistic import LogisticRegression, safe_name, softplus_and_sigmoid
from tests.data import use_data

RTOL = 1e-8


def _data(n=60, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    w = rng.normal(size=p + 1)
    y = (rng.random(n) < 1 / (1 + np.exp(-(w[0] + X @ w[1:])))).astype(float)
    return X, y


def _autograd_logp(X, y, prior_scale):
    Xt = np.column_stack([np.ones(len(X)), X])

    def logp(w):
        z = anp.dot(Xt, w)
        loglik = anp.sum(y * z - anp.logaddexp(0.0, z))
        return loglik - anp.sum(w**2) / (2.0 * prior_scale**2)

    return logp


def _close(actual, expected):
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * scale)


@pytest.fixture
def model():
    X, y = _data()
    target = LogisticRegression(X, y, prior_scale=2.5, feature_names=["a", "b", "c"])
    return target, _autograd_logp(X, y, 2.5)


@pytest.mark.parametrize("scale", [0.3, 1.0, 30.0])
def test_log_prob_gradient_and_hvp_match_autograd(model, scale):
    target, logp = model
    rng = np.random.default_rng(1)
    grad = autograd.grad(logp)
    hess = autograd.hessian(logp)
    for _ in range(3):
        w = rng.normal(size=target.dim) * scale
        v = rng.normal(size=target.dim)
        lp, g = target.log_prob_and_grad(w)
        _close(lp, logp(w))
        _close(target.log_prob(w), logp(w))
        _close(g, grad(w))
        _close(target.hvp(w, v), hess(w) @ v)


def test_computes_on_the_array_backend(model):
    """On array_api_strict (the stand-in for CuPy): backend arrays in and out, autograd's
    values; prediction and the pointwise log-likelihood take draws held on the backend."""
    pytest.importorskip("array_api_strict")
    from hamiltonia import backend

    target, logp = model
    assert "cupy" in target.backends
    rng = np.random.default_rng(7)
    w, v = rng.normal(size=(2, target.dim)), rng.normal(size=(2, target.dim))
    with backend.using("array_api_strict"):
        q, u = backend.asarray(w), backend.asarray(v)
        lp, g = target.log_prob_and_grad(q)
        hv = target.hvp(q, u)
        assert backend.namespace_of(g) is backend.xp()
        _close(backend.to_numpy(lp), [logp(x) for x in w])
        _close(backend.to_numpy(g), [autograd.grad(logp)(x) for x in w])
        _close(
            backend.to_numpy(hv), [autograd.hessian(logp)(x) @ y for x, y in zip(w, v, strict=True)]
        )
        X = np.ones((2, 3))
        np.testing.assert_array_equal(target.predict(q, X), target.predict(w, X))
        got = target.pointwise_log_likelihood(q)["y"]
        np.testing.assert_array_equal(got, target.pointwise_log_likelihood(w)["y"])


def test_batches_match_single_points(model):
    target, _ = model
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, target.dim))
    v = rng.normal(size=(2, 3, target.dim))
    lp, g = target.log_prob_and_grad(x)
    hv = target.hvp(x, v)
    assert lp.shape == (2, 3) and g.shape == x.shape and hv.shape == x.shape
    for i in range(2):
        for j in range(3):
            lp1, g1 = target.log_prob_and_grad(x[i, j])
            np.testing.assert_allclose(lp[i, j], lp1, rtol=1e-13)
            np.testing.assert_allclose(g[i, j], g1, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(hv[i, j], target.hvp(x[i, j], v[i, j]), rtol=1e-12)
    # One direction for every chain broadcasts.
    np.testing.assert_allclose(
        target.hvp(x, v[0, 0]),
        np.stack([[target.hvp(x[i, j], v[0, 0]) for j in range(3)] for i in range(2)]),
        rtol=1e-12,
    )
    assert target.has_hvp


def test_extreme_logits_are_finite_and_stable(model):
    target, logp = model
    w = np.full(target.dim, 400.0)  # logits of order 1e3: exp(z) would overflow
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        lp, g = target.log_prob_and_grad(w)
        hv = target.hvp(w, np.ones(target.dim))
    assert np.isfinite(lp) and np.all(np.isfinite(g)) and np.all(np.isfinite(hv))
    _close(lp, logp(w))
    s_plus, s = softplus_and_sigmoid(np.array([-800.0, 0.0, 800.0]))
    np.testing.assert_allclose(s_plus, [0.0, np.log(2.0), 800.0])
    np.testing.assert_allclose(s, [0.0, 0.5, 1.0])


def test_names_and_dimension():
    X, y = _data(p=2)
    target = LogisticRegression(X, y, feature_names=["Current Ratio", "Debt / Revenue %"])
    assert target.dim == 3
    assert target.names == ("intercept", "current_ratio", "debt_revenue_pct")
    assert LogisticRegression(X, y).names == ("intercept", "x1", "x2")
    assert safe_name("glu") == "glu" and safe_name("A12") == "A12"


def test_invalid_arguments_name_the_parameter():
    X, y = _data()
    with pytest.raises(ValueError, match="y must hold only 0 and 1"):
        LogisticRegression(X, y * 2)
    with pytest.raises(ValueError, match="prior_scale"):
        LogisticRegression(X, y, prior_scale=0)
    with pytest.raises(ValueError, match="feature_names"):
        LogisticRegression(X, y, feature_names=["a"])
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        LogisticRegression(X[:, 0], y)
    with pytest.raises(ValueError, match="X_test must have 3 columns"):
        LogisticRegression(X, y, X_test=X[:, :2], y_test=y)
    target = LogisticRegression(X, y)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 4\)"):
        target.log_prob(np.zeros(3))


def test_predict_is_the_posterior_mean_of_the_sigmoid():
    X, y = _data()
    target = LogisticRegression(X[:50], y[:50], X_test=X[50:], y_test=y[50:])
    draws = np.random.default_rng(3).normal(size=(2, 5, target.dim))
    flat = draws.reshape(-1, target.dim)
    Xt = np.column_stack([np.ones(10), X[50:]])
    expected = np.mean(1 / (1 + np.exp(-(Xt @ flat.T))), axis=1)
    np.testing.assert_allclose(target.predict(draws), expected, rtol=1e-12)
    np.testing.assert_allclose(target.predict(draws, X[50:]), expected, rtol=1e-12)
    np.testing.assert_allclose(
        target.predict(draws, log_weights=np.full((2, 5), -3.0)), expected, rtol=1e-12
    )
    # Importance weights: all mass on one draw gives that draw's probabilities.
    lw = np.full((2, 5), -np.inf)
    lw[1, 2] = 0.0
    np.testing.assert_allclose(
        target.predict(draws, log_weights=lw), 1 / (1 + np.exp(-(Xt @ draws[1, 2]))), rtol=1e-12
    )
    assert target.predict(draws, X[0]).shape == (1,)
    with pytest.raises(ValueError, match="log_weights"):
        target.predict(draws, log_weights=np.zeros(3))
    with pytest.raises(ValueError, match="X is required"):
        LogisticRegression(X, y).predict(draws)


# ----------------------------------------------------------------------------- real data
@pytest.fixture
def with_data(monkeypatch):
    """Point HAMILTONIA_DATA at the canonical files, or skip."""
    use_data(monkeypatch, "pima", "heart", "australian", "german")


@pytest.mark.parametrize(
    ("name", "dataset", "dim", "n_train"),
    [
        ("blr-pima", "pima", 8, 479),
        ("blr-heart", "heart", 14, 243),
        ("blr-australian", "australian", 15, 621),
        ("blr-german", "german", 25, 900),
    ],
)
def test_registered_data_targets(with_data, name, dataset, dim, n_train):
    from hamiltonia import datasets

    target = hm.targets.get(name)
    data = datasets.load(dataset)
    assert isinstance(target, LogisticRegression)
    assert target.dim == dim and target.n_obs == n_train
    assert target.names == ("intercept", *data.feature_names)
    np.testing.assert_array_equal(target.X, data.X_train)
    np.testing.assert_array_equal(target.X_test, data.X_test)
    assert target.prior_scale == 10.0
    logp = _autograd_logp(data.X_train, data.y_train, 10.0)
    w = np.random.default_rng(4).normal(size=dim) * 0.5
    lp, g = target.log_prob_and_grad(w)
    _close(lp, logp(w))
    _close(g, autograd.grad(logp)(w))
    assert hm.targets.describe()[name]
    assert hm.targets.get(name, prior_scale=1.0, split_seed=2).prior_scale == 1.0


def test_blr_pima_samples(with_data):
    result = hm.sample("blr-pima", "hmc", chains=2, warmup=100, draws=50, seed=0, n_steps=10,
                       progress=False)  # fmt: skip
    assert result.draws.shape == (2, 50, 8)
    assert np.all(np.isfinite(result.draws))
    p = hm.targets.get("blr-pima").predict(result.draws)
    assert p.shape == (53,) and np.all((p > 0) & (p < 1))


@pytest.mark.parametrize("name", ["blr-pima", "blr-heart", "blr-australian", "blr-german"])
def test_paper_setting_is_the_default_model(with_data, name):
    """The thesis's BLR (intercept, N(0, 10^2), random 90/10, features normalised: read as
    Girolami and Calderhead's standardisation) is the default target."""
    default = hm.targets.get(name)
    paper = hm.targets.get(name, setting="paper")
    assert paper.setting == "paper" and default.setting == "default"
    assert paper.description == default.description + " [setting: paper]"
    assert paper.prior_scale == 10.0 and paper.dataset.scaling == "standard"
    np.testing.assert_array_equal(paper.X, default.X)
    np.testing.assert_array_equal(paper.X_test, default.X_test)
    w = np.random.default_rng(5).normal(size=paper.dim)
    assert paper.log_prob(w) == default.log_prob(w)
    minmax = hm.targets.get(name, scaling="minmax")
    np.testing.assert_array_equal(minmax.X.min(axis=0), np.zeros(minmax.X.shape[1]))
    with pytest.raises(ValueError, match=r"setting must be one of 'default', 'paper'"):
        hm.targets.get(name, setting="Paper")
