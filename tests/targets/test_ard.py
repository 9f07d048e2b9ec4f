"""BLR with ARD: density, gradient and HVP against autograd; names; relevance; audit factory."""

from __future__ import annotations

from types import SimpleNamespace

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
import scipy.stats

import hamiltonia as hm
from hamiltonia.targets.ard import ARDLogisticRegression, feature_relevance
from tests.data import use_data

RTOL = 1e-8


def _data(n=80, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.5 + X @ np.array([2.0, 0.0, -1.0][:p]))))).astype(
        float
    )
    return X, y


def _autograd_logp(X, y, *, jitter=0.0, intercept_prior_scale=None):
    """The same model written independently with autograd.numpy."""
    Xt = np.column_stack([np.ones(len(X)), X])
    D = Xt.shape[1]
    first = 0 if intercept_prior_scale is None else 1

    def logp(x):
        w, a = x[:D], x[D:]
        z = anp.dot(Xt, w)
        loglik = anp.sum(y * z - anp.logaddexp(0.0, z))
        var = anp.exp(2.0 * a) + jitter
        wa = w[first:]
        prior_w = -anp.sum(0.5 * anp.log(var) + wa**2 / (2.0 * var))
        prior_a = -anp.sum(a**2) / 2.0
        out = loglik + prior_w + prior_a
        if intercept_prior_scale is not None:
            out = out - w[0] ** 2 / (2.0 * intercept_prior_scale**2)
        return out

    return logp


def _close(actual, expected):
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * scale)


VARIANTS = [
    {},
    {"jitter": 0.001},
    {"intercept_prior_scale": 10.0},
    {"jitter": 0.5, "intercept_prior_scale": 3.0},
]


@pytest.mark.parametrize("options", VARIANTS, ids=str)
def test_log_prob_gradient_and_hvp_match_autograd(options):
    X, y = _data()
    target = ARDLogisticRegression(X, y, **options)
    logp = _autograd_logp(X, y, **options)
    grad, hess = autograd.grad(logp), autograd.hessian(logp)
    rng = np.random.default_rng(1)
    for scale in (0.3, 1.0, 2.5):
        x = rng.normal(size=target.dim) * scale
        v = rng.normal(size=target.dim)
        lp, g = target.log_prob_and_grad(x)
        _close(lp, logp(x))
        _close(target.log_prob(x), logp(x))
        _close(g, grad(x))
        _close(target.hvp(x, v), hess(x) @ v)


def test_dimension_and_names():
    X, y = _data()
    target = ARDLogisticRegression(X, y, feature_names=["Current Ratio", "b", "c"])
    assert target.dim == 8
    assert target.names == (
        "w_intercept", "w_current_ratio", "w_b", "w_c",
        "log_alpha_intercept", "log_alpha_current_ratio", "log_alpha_b", "log_alpha_c",
    )  # fmt: skip
    assert target.scale_names == ("intercept", "current_ratio", "b", "c")
    fixed = ARDLogisticRegression(X, y, intercept_prior_scale=10.0)
    assert fixed.dim == 7 and "log_alpha_intercept" not in fixed.names
    x = np.arange(8.0)
    np.testing.assert_array_equal(target.constrain(x), x)
    np.testing.assert_allclose(target.alpha(x), np.exp(x[4:]))
    with pytest.raises(ValueError, match="jitter"):
        ARDLogisticRegression(X, y, jitter=-1.0)
    with pytest.raises(ValueError, match="intercept_prior_scale"):
        ARDLogisticRegression(X, y, intercept_prior_scale=0.0)


def test_log_alpha_prior_includes_the_jacobian():
    """Up to a constant, the density in (w, log alpha) is N(w | 0, alpha^2) LogNormal(alpha)
    times |d alpha / d log alpha| = alpha."""
    X, y = _data(p=1)
    target = ARDLogisticRegression(X, y)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, target.dim))

    def reference(x):
        w, a = x[:2], x[2:]
        alpha = np.exp(a)
        z = np.column_stack([np.ones(len(X)), X]) @ w
        loglik = np.sum(y * z - np.logaddexp(0, z))
        prior = scipy.stats.norm.logpdf(w, scale=alpha).sum()
        hyper = scipy.stats.lognorm.logpdf(alpha, s=1.0).sum()
        return loglik + prior + hyper + np.sum(a)  # + log-Jacobian

    ours = target.log_prob(x)
    ref = np.array([reference(row) for row in x])
    np.testing.assert_allclose(ours - ours[0], ref - ref[0], rtol=1e-10, atol=1e-10)


def test_batches_match_single_points():
    X, y = _data()
    target = ARDLogisticRegression(X, y, jitter=0.01)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 2, target.dim))
    v = rng.normal(size=(3, 2, target.dim))
    lp, g = target.log_prob_and_grad(x)
    hv = target.hvp(x, v)
    assert lp.shape == (3, 2) and g.shape == hv.shape == x.shape
    for i in range(3):
        for j in range(2):
            lp1, g1 = target.log_prob_and_grad(x[i, j])
            np.testing.assert_allclose(lp[i, j], lp1, rtol=1e-13)
            np.testing.assert_allclose(g[i, j], g1, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(hv[i, j], target.hvp(x[i, j], v[i, j]), rtol=1e-12)
    assert target.has_hvp


def test_predict_uses_only_the_weights():
    X, y = _data()
    target = ARDLogisticRegression(X[:60], y[:60], X_test=X[60:], y_test=y[60:])
    draws = np.random.default_rng(3).normal(size=(2, 4, target.dim))
    Xt = np.column_stack([np.ones(20), X[60:]])
    w = draws[..., :4].reshape(-1, 4)
    np.testing.assert_allclose(
        target.predict(draws), np.mean(1 / (1 + np.exp(-(Xt @ w.T))), axis=1), rtol=1e-12
    )
    changed = draws.copy()
    changed[..., 4:] += 5.0
    np.testing.assert_allclose(target.predict(changed), target.predict(draws), rtol=1e-14)


def test_feature_relevance_ranks_by_posterior_mean_alpha():
    X, y = _data()
    target = ARDLogisticRegression(X, y, feature_names=["a", "b", "c"])
    rng = np.random.default_rng(4)
    draws = rng.normal(size=(2, 500, target.dim)) * 0.1
    draws[..., 4:] += np.log([5.0, 1.0, 3.0, 2.0])  # intercept, a, b, c
    ranked = target.feature_relevance(draws)
    assert [f for f, _ in ranked] == ["b", "c", "a"]
    means = dict(ranked)
    np.testing.assert_allclose(means["b"], np.exp(draws[..., 6]).mean(), rtol=1e-12)
    with_intercept = target.feature_relevance(draws, include_intercept=True)
    assert with_intercept[0][0] == "intercept"
    # From a Result-like object (names and log weights taken from it).
    result = SimpleNamespace(draws=draws, names=target.names, log_weights=None)
    from_result = feature_relevance(result)
    assert [f for f, _ in from_result] == [f for f, _ in ranked]
    np.testing.assert_allclose([m for _, m in from_result], [m for _, m in ranked], rtol=1e-13)
    lw = np.full((2, 500), -np.inf)
    lw[0, 7] = 0.0
    weighted = dict(feature_relevance(result, log_weights=lw))
    np.testing.assert_allclose(weighted["a"], np.exp(draws[0, 7, 5]), rtol=1e-12)
    # From an array of log-scales only.
    only = feature_relevance(draws[..., 5:], ["a", "b", "c"])
    assert [f for f, _ in only] == ["b", "c", "a"]


# ----------------------------------------------------------------------------- audit data
@pytest.fixture
def with_data(monkeypatch):
    """Point HAMILTONIA_DATA at the canonical files, or skip."""
    use_data(monkeypatch, "audit")


def test_blr_ard_audit(with_data):
    target = hm.targets.get("blr-ard-audit")
    assert isinstance(target, ARDLogisticRegression)
    assert target.dim == 28 and target.X.shape == (1404, 13) and target.X_test.shape == (156, 13)
    assert target.names[0] == "w_intercept" and target.names[14] == "log_alpha_intercept"
    assert target.names[1] == "w_debt_to_community_wealth_equity"
    assert target.names[-1] == "log_alpha_net_surplus_deficit_elec_pct"
    logp = _autograd_logp(target.X, target.y)
    x = np.random.default_rng(6).normal(size=28) * 0.5
    lp, g = target.log_prob_and_grad(x)
    _close(lp, logp(x))
    _close(g, autograd.grad(logp)(x))
    ordered = hm.targets.get("blr-ard-audit", split="ordered")
    np.testing.assert_array_equal(ordered.dataset.train_index, np.arange(1404))
    assert hm.targets.get("blr-ard-audit", intercept_prior_scale=10.0).dim == 27


def test_blr_ard_audit_samples(with_data):
    result = hm.sample("blr-ard-audit", "hmc", chains=2, warmup=100, draws=30, seed=1,
                       n_steps=10, progress=False)  # fmt: skip
    assert result.draws.shape == (2, 30, 28) and np.all(np.isfinite(result.draws))
    ranked = feature_relevance(result)
    assert len(ranked) == 13 and ranked[0][1] >= ranked[-1][1]


def test_blr_ard_audit_paper_setting(with_data):
    """The public code's processing: rows in file (time) order, the first 1404 train and the
    last 156 test, every ratio min-max scaled with the training rows' range."""
    from hamiltonia import datasets

    target = hm.targets.get("blr-ard-audit", setting="paper")
    assert target.setting == "paper" and target.description.endswith("[setting: paper]")
    data = target.dataset
    assert (data.split, data.scaling) == ("ordered", "minmax")
    np.testing.assert_array_equal(data.train_index, np.arange(1404))
    np.testing.assert_array_equal(data.test_index, np.arange(1404, 1560))
    assert target.X.shape == (1404, 13) and target.X_test.shape == (156, 13)
    np.testing.assert_array_equal(target.X.min(axis=0), np.zeros(13))
    np.testing.assert_allclose(target.X.max(axis=0), np.ones(13), rtol=0, atol=1e-15)
    raw = datasets.load("audit", split="ordered", standardize=False)
    lo, hi = raw.X_train.min(axis=0), raw.X_train.max(axis=0)
    np.testing.assert_allclose(target.X_test, (raw.X_test - lo) / (hi - lo), rtol=1e-12)
    np.testing.assert_array_equal(target.y, raw.y_train)
    # The model is the thesis's in both settings: 28 parameters, no jitter.
    assert target.dim == 28 and target.jitter == 0.0
    # Options still apply, and the default setting is unchanged.
    assert hm.targets.get("blr-ard-audit", setting="paper", split="random").dataset.split == (
        "random"
    )
    default = hm.targets.get("blr-ard-audit")
    assert default.setting == "default" and default.dataset.scaling == "standard"
    assert default.dataset.split == "random"
    with pytest.raises(ValueError, match=r"setting must be one of 'default', 'paper'"):
        hm.targets.get("blr-ard-audit", setting="thesis")
