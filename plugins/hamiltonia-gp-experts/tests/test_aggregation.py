"""The aggregation rules: Propositions 1 and 2, each rule against a direct (loop, textbook)
implementation, the mixture and the metrics.

Run from this folder (``python -m pytest``) with the plugin installed
(``pip install -e .``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hamiltonia.testing import skip_unless_installed

skip_unless_installed("hamiltonia-gp-experts")

from hamiltonia_gp_experts import aggregation as agg
from hamiltonia_gp_experts.targets import gp_experts

PRIOR_VAR = 1.3


def _case(J=5, n=7, seed=0):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=(J, n))
    var = rng.uniform(0.05, PRIOR_VAR, size=(J, n))
    return mu, var


# ------------------------------------------------------------------ direct implementations
def _direct(mu, var, rule, beta=None, prior_var=PRIOR_VAR, exact=False):
    """Textbook formulas, one test point and one expert at a time."""
    J, n = mu.shape
    out_m, out_v = np.empty(n), np.empty(n)
    for i in range(n):
        if rule == "bar":
            m = sum(beta[j, i] * mu[j, i] for j in range(J))
            if exact:
                v = sum(beta[j, i] * math.sqrt(var[j, i]) for j in range(J)) ** 2
            else:
                v = sum(beta[j, i] * var[j, i] for j in range(J))
            out_m[i], out_v[i] = m, v
            continue
        b = [1.0] * J if beta is None else [beta[j, i] for j in range(J)]
        prec = sum(b[j] / var[j, i] for j in range(J))
        if rule == "bcm":
            prec += (1 - J) / prior_var
        if rule == "rbcm":
            prec += (1 - sum(b)) / prior_var
        v = 1.0 / prec
        out_m[i] = v * sum(b[j] * mu[j, i] / var[j, i] for j in range(J))
        out_v[i] = v
    return out_m, out_v


def _softmax_loop(var, T):
    J, n = var.shape
    out = np.empty_like(var)
    for i in range(n):
        e = [math.exp(-T * var[j, i]) for j in range(J)]
        for j in range(J):
            out[j, i] = e[j] / sum(e)
    return out


def test_each_rule_matches_a_direct_implementation():
    mu, var = _case()
    beta = _softmax_loop(var, 3.0)
    np.testing.assert_allclose(agg.weights(mu, var, "variance", T=3.0), beta, rtol=1e-12)
    checks = [
        (agg.poe(mu, var), _direct(mu, var, "poe")),
        (agg.gpoe(mu, var, beta), _direct(mu, var, "gpoe", beta)),
        (agg.bcm(mu, var, PRIOR_VAR), _direct(mu, var, "bcm")),
        (agg.rbcm(mu, var, beta, PRIOR_VAR), _direct(mu, var, "rbcm", beta)),
        (agg.barycenter(mu, var, beta), _direct(mu, var, "bar", beta)),
        (agg.barycenter(mu, var, beta, exact=True), _direct(mu, var, "bar", beta, exact=True)),
    ]
    for got, want in checks:
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_the_named_methods_use_the_authors_weights():
    mu, var = _case(seed=1)
    T = 2.0
    raw = np.exp(-T * var)
    entr = 0.5 * (np.log(PRIOR_VAR) - np.log(var))
    expect = {
        "PoE": _direct(mu, var, "poe"),
        "BCM": _direct(mu, var, "bcm"),
        "gPoE_unif": _direct(mu, var, "gpoe", np.full(var.shape, 1 / var.shape[0])),
        "gPoE_var": _direct(mu, var, "gpoe", raw / raw.sum(0)),
        "rBCM_var": _direct(mu, var, "rbcm", raw),  # unnormalised
        "rBCM_diff_entr": _direct(mu, var, "rbcm", entr),  # the entropies themselves
        "BAR_var": _direct(mu, var, "bar", raw / raw.sum(0)),
        "BAR_var_W2": _direct(mu, var, "bar", raw / raw.sum(0), exact=True),
    }
    assert set(expect) == set(agg.METHODS)
    for method, want in expect.items():
        got = agg.aggregate(mu, var, method, T=T, prior_var=PRIOR_VAR)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-14, err_msg=method)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, err_msg=method)


def test_proposition_2_normalised_weights_make_rbcm_equal_gpoe():
    mu, var = _case(J=6, n=9, seed=2)
    for kind, T in (("variance", 0.7), ("variance", 15.0), ("diff_entr", 1.0), ("uniform", 1.0)):
        beta = agg.weights(mu, var, kind, T=T, prior_var=PRIOR_VAR, normalise=True)
        np.testing.assert_allclose(beta.sum(0), 1.0, rtol=1e-14)
        r, g = agg.rbcm(mu, var, beta, PRIOR_VAR), agg.gpoe(mu, var, beta)
        np.testing.assert_allclose(r[0], g[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(r[1], g[1], rtol=1e-12)


def test_proposition_1_as_t_grows_gpoe_rbcm_and_bargp_coincide():
    """With softmax-variance weights and T -> infinity, all the weight goes to the most
    confident expert (or is shared equally by tied ones): gPoE, rBCM (normalised weights)
    and barGP give that expert's Gaussian."""
    mu, var = _case(J=4, n=6, seed=3)
    var[1, 2] = var[3, 2] = var[:, 2].min() / 2  # a tie at point 2
    best = np.argmin(var, axis=0)
    rules = {}
    for T in (1e3, 1e6):
        beta = agg.weights(mu, var, "variance", T=T)
        rules[T] = [
            agg.gpoe(mu, var, beta),
            agg.rbcm(mu, var, beta, PRIOR_VAR),
            agg.barycenter(mu, var, beta),
            agg.barycenter(mu, var, beta, exact=True),
        ]
    cols = np.arange(var.shape[1])
    want_m = mu[best, cols]
    want_m[2] = 0.5 * (mu[1, 2] + mu[3, 2])
    want_v = var[best, cols]
    for m, v in rules[1e6]:
        np.testing.assert_allclose(m, want_m, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(v, want_v, rtol=1e-10)
    # and they do not coincide at a small T
    beta = agg.weights(mu, var, "variance", T=0.5)
    assert not np.allclose(agg.gpoe(mu, var, beta)[1], agg.barycenter(mu, var, beta)[1])


def test_a_poe_of_one_expert_is_that_expert():
    mu, var = _case(J=1, n=5, seed=4)
    for method in ("PoE", "gPoE_var", "gPoE_unif", "BCM", "BAR_var", "BAR_var_W2"):
        m, v = agg.aggregate(mu, var, method, T=15.0, prior_var=PRIOR_VAR)
        np.testing.assert_allclose(m, mu[0], rtol=1e-12, err_msg=method)
        np.testing.assert_allclose(v, var[0], rtol=1e-12, err_msg=method)


def test_the_mixture_averages_densities_and_its_moments_follow_total_variance():
    rng = np.random.default_rng(5)
    means, variances = rng.normal(size=(4, 3)), rng.uniform(0.1, 1.0, size=(4, 3))
    y = rng.normal(size=3)
    dens = [
        np.mean([math.exp(-0.5 * (y[i] - means[s, i]) ** 2 / variances[s, i])
                 / math.sqrt(2 * math.pi * variances[s, i]) for s in range(4)])
        for i in range(3)
    ]  # fmt: skip
    assert agg.nlpd_mixture(y, means, variances) == pytest.approx(-np.mean(np.log(dens)), 1e-12)
    m, v = agg.mixture_moments(means, variances)
    second = np.mean(variances + means**2, axis=0)
    np.testing.assert_allclose(v, second - m**2, rtol=1e-12)
    assert agg.nlpd(y, means[0], variances[0]) == pytest.approx(
        agg.nlpd_mixture(y, means[:1], variances[:1]), 1e-12
    )
    assert agg.rmse(y, m) == pytest.approx(math.sqrt(np.mean((y - m) ** 2)), 1e-12)


def test_expert_predictions_equal_each_experts_own_gp():
    target = gp_experts(points_per_expert=20, partition="kmeans", seed=1)
    theta = np.log([0.7, 1.1, 0.05])
    xs = np.linspace(-6, 6, 11)[:, None]
    mu, var, s2, _ = agg.expert_predictions(target, theta, xs)
    assert s2 == pytest.approx(1.1)
    for j, idx in enumerate(target.partition):
        m, v = agg.full_gp_predict(target.X[idx], target.y[idx], theta, xs)
        np.testing.assert_allclose(mu[j], m, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(var[j], v, rtol=1e-9, atol=1e-10)


def test_weights_and_methods_refuse_unknown_names():
    mu, var = _case()
    with pytest.raises(ValueError, match="weighting"):
        agg.weights(mu, var, "softmax")
    with pytest.raises(ValueError, match="method"):
        agg.aggregate(mu, var, "gPoE", T=1.0, prior_var=1.0)
