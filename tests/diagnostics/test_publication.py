"""The research's estimators by name (issue 28): the author's per-chain mESS (batch means
with offsets, the 'lESS' rule), averaged over chains; the fraction accepted; eq. 8.1."""

from __future__ import annotations

import numpy as np
import pytest

from hamiltonia.diagnostics import estimators, publication

Z = 4.0  # z-score bound of these tests (about 6e-5 two-sided per check)


def _ar1(rng, n, p, phi):
    x = np.empty((n, p))
    x[0] = rng.normal(size=p) / np.sqrt(1 - phi**2)
    noise = rng.normal(size=(n, p))
    for t in range(1, n):
        x[t] = phi * x[t - 1] + noise[t]
    return x


def _log_sd(a: int, p: int) -> float:
    """sd of log(mESS) from the batch covariance's sampling error: log|Sigma_hat| of a
    Wishart with a - 1 degrees of freedom has variance about 2p/(a - 1), divided by p^2."""
    return np.sqrt(2.0 / (p * (a - 1)))


def test_independent_draws_give_about_n():
    rng = np.random.default_rng(0)
    n, p = 10_000, 3
    mess = publication.chain_mess(rng.normal(size=(n, p)), "sqroot")
    a = n // int(np.sqrt(n))
    assert abs(np.log(mess / n)) < Z * _log_sd(a, p)


def test_an_ar1_chain_gives_its_known_ess():
    """n (1 - phi) / (1 + phi) for independent AR(1) coordinates."""
    rng = np.random.default_rng(1)
    n, p, phi = 40_000, 2, 0.6
    mess = publication.chain_mess(_ar1(rng, n, p, phi), "sqroot")
    a = n // int(np.sqrt(n))
    assert abs(np.log(mess / (n * (1 - phi) / (1 + phi)))) < Z * _log_sd(a, p)


def test_one_offset_is_the_plain_batch_means_estimate():
    """With n a multiple of b the offsets collapse to one: the estimate is hamiltonia's own
    batch-means mESS of that one chain."""
    rng = np.random.default_rng(2)
    chain = _ar1(rng, 2500, 3, 0.3)
    ours = estimators.multivariate_ess(chain[None], "sqroot")
    assert publication.chain_mess(chain, "sqroot") == pytest.approx(ours, rel=1e-10)


def test_less_is_the_lowest_over_its_batch_sizes():
    rng = np.random.default_rng(3)
    chain = _ar1(rng, 3000, 2, 0.8)
    sizes = publication.batch_sizes(3000, 2, "less")
    assert 1 < len(sizes) <= 20 and sizes[0] == int(np.floor(3000**0.25))
    each = [publication.chain_mess(chain, b) for b in sizes]
    assert publication.chain_mess(chain, "less") == pytest.approx(min(each))


def test_the_run_figure_is_the_mean_over_chains_not_the_pooled_one():
    rng = np.random.default_rng(4)
    draws = np.stack([_ar1(rng, 2000, 2, 0.5) for _ in range(4)])
    per_chain = [publication.chain_mess(c, "less") for c in draws]
    assert publication.published_mess(draws) == pytest.approx(np.mean(per_chain))
    # hamiltonia's pooled mESS counts every chain's draws: about four times as many.
    pooled = estimators.multivariate_ess(draws)
    assert 2.5 < pooled / publication.published_mess(draws, "sqroot") < 6


def test_weights_enter_through_kish_per_chain():
    rng = np.random.default_rng(5)
    draws = rng.normal(size=(2, 1000, 2))
    lw = rng.normal(scale=0.5, size=(2, 1000))
    expected = np.mean(
        [estimators.kish_ess(w) / 1000 * publication.chain_mess(c, "less")
         for c, w in zip(draws, lw, strict=True)]
    )  # fmt: skip
    assert publication.published_weighted_ess(draws, lw) == pytest.approx(expected)
    assert publication.published_weighted_ess(draws, None) == publication.published_mess(draws)


def test_fraction_accepted_counts_acceptances():
    accepted = np.array([[True, False, True, True], [False, False, True, True]])
    assert publication.fraction_accepted(accepted) == 5 / 8
    with pytest.raises(ValueError, match="empty"):
        publication.fraction_accepted([])


def test_antithetic_ess_is_eq_8_1():
    """2 ESS_X / (1 + eta), eta the largest Spearman correlation over the parameters."""
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 1500, 2))
    y = -0.6 * x + 0.8 * rng.normal(size=x.shape)  # negatively correlated partners
    draws = np.stack([x[0], y[0], x[1], y[1]])
    eta = estimators.pair_correlation(draws).max()
    assert eta < -0.3
    expected = 2 * publication.published_mess(draws[[0, 2]]) / (1 + eta)
    assert publication.antithetic_ess(draws) == pytest.approx(expected)
    with pytest.raises(ValueError, match="even number"):
        publication.antithetic_ess(draws[:3])


def test_antithetic_eta_reduces_the_parameters_by_name():
    """The thesis's largest correlation over the parameters, or their mean (what its printed
    eta were computed with); eq. 8.1 with either."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 1500, 3))
    # One parameter barely anti-correlated, two strongly: the reductions differ.
    y = np.array([-0.2, -0.9, -0.9]) * x + 0.4 * rng.normal(size=x.shape)
    draws = np.stack([x[0], y[0], x[1], y[1]])
    per_parameter = estimators.pair_correlation(draws)
    assert publication.antithetic_eta(draws) == pytest.approx(per_parameter.max())
    assert publication.antithetic_eta(draws, "mean") == pytest.approx(per_parameter.mean())
    assert publication.antithetic_eta(draws, "mean") < publication.antithetic_eta(draws) - 0.3
    ess_x = publication.published_mess(draws[[0, 2]])
    assert publication.antithetic_ess(draws, eta="mean") == pytest.approx(
        2 * ess_x / (1 + per_parameter.mean())
    )
    with pytest.raises(ValueError, match="reduction must be one of"):
        publication.antithetic_eta(draws, "min")


@pytest.mark.parametrize("bad", ["sqrt", 1, 5000, True, 2.5])
def test_a_bad_batch_size_is_named(bad):
    with pytest.raises(ValueError, match="batch_size"):
        publication.chain_mess(np.zeros((1000, 2)) + np.arange(1000)[:, None], bad)


def test_batch_sizes_with_no_more_batches_than_parameters_are_left_out():
    # 400 draws of 25 parameters: "less" tries batches up to 20 long, and 20 batches of 20
    # cannot estimate a 25 x 25 covariance; the sizes that can still give the mESS.
    rng = np.random.default_rng(4)
    x = rng.standard_normal((400, 25))
    sizes = publication.batch_sizes(400, 25, "less")
    assert max(sizes) == 20 and min(sizes) < 16
    value = publication.chain_mess(x, "less")
    assert np.isfinite(value)
    valid = [b for b in sizes if 400 // b > 25]
    expected = min(publication.chain_mess(x, b) for b in valid)
    assert value == pytest.approx(expected)
    # A chain where no size is valid has no mESS.
    assert np.isnan(publication.chain_mess(rng.standard_normal((30, 25)), 2))


@pytest.mark.parametrize(
    "n, p, b",
    [(30, 25, 2), (40, 25, 2), (50, 25, 2), (400, 25, 20), (400, 25, 17), (60, 10, 6), (66, 10, 6)],
)
def test_a_singular_batch_covariance_is_found_by_counting(n, p, b):
    # The count of independent batch means says singular exactly when the matrix's numerical
    # rank is below p, without reading the sign of a rounding residue.
    x = np.random.default_rng(n + p + b).standard_normal((n, p))
    sigma = publication._batch_covariance(x, x.mean(axis=0), b, 10)
    assert publication._is_singular(n, p, b, 10) == (np.linalg.matrix_rank(sigma) < p)
