"""Diagnostics: multivariate ESS calibration, the Kish factor, the combined ESS."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia import diagnostics as dg


def _ar1(phi, chains, n, dim, seed):
    """Independent AR(1) coordinates with unit stationary variance."""
    rng = np.random.default_rng(seed)
    x = np.empty((chains, n, dim))
    x[:, 0] = rng.normal(size=(chains, dim))
    scale = np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + scale * rng.normal(size=(chains, dim))
    return x


def _tolerance(chains, n):
    # The batch-means estimate with a = sqrt(n) batches per chain, pooled over chains, has about
    # chains * (a - 1) degrees of freedom, so log(mESS / true) has standard deviation about
    # sqrt(2 / (chains * (a - 1))). Allow 4 standard deviations.
    a = int(np.sqrt(n))
    return 4 * np.sqrt(2 / (chains * (a - 1)))


@pytest.mark.parametrize("dim", [1, 3])
def test_mess_of_independent_draws_is_n(dim):
    chains, n = 4, 10_000
    x = np.random.default_rng(dim).normal(size=(chains, n, dim))
    m = dg.multivariate_ess(x)
    assert abs(np.log(m / (chains * n))) < _tolerance(chains, n)


def test_mess_of_ar1_chains():
    """For AR(1) coordinates the asymptotic variance is (1 + phi) / (1 - phi), so the ESS is
    n (1 - phi) / (1 + phi)."""
    chains, n, phi = 4, 10_000, 0.5
    x = _ar1(phi, chains, n, 2, seed=7)
    expected = chains * n * (1 - phi) / (1 + phi)
    # Batches of b = 100 draws bias the estimate by about -2 phi / ((1 - phi^2) b) relative.
    assert abs(np.log(dg.multivariate_ess(x) / expected)) < _tolerance(chains, n) + 0.03


def test_mess_one_dim_agrees_with_univariate_ess():
    x = _ar1(0.3, 4, 10_000, 1, seed=2)
    uni = dg.ess(x, "mean")[0]
    assert abs(np.log(dg.multivariate_ess(x) / uni)) < _tolerance(4, 10_000)


@pytest.mark.parametrize(
    "chains, n, dim", [(1, 30, 25), (3, 36, 25), (5, 36, 25), (1, 400, 25), (2, 400, 25)]
)
def test_mess_is_nan_exactly_where_the_batch_means_cannot_span_the_space(chains, n, dim):
    # Singular in exact arithmetic: fewer centred batch means than dimensions. Decided by
    # counting, not by the sign of a determinant that is a rounding residue.
    x = np.random.default_rng(n + chains).normal(size=(chains, n, dim))
    a = int(np.sqrt(n))
    value = dg.multivariate_ess(x)
    assert np.isnan(value) == (chains * (n // a) - 1 < dim)
    if not np.isnan(value):
        assert value > 0


def test_mess_batch_size_checks():
    x = np.zeros((1, 10, 1))
    with pytest.raises(ValueError, match="batch_size"):
        dg.multivariate_ess(x, batch_size=8)
    with pytest.raises(ValueError, match="batch_size"):
        dg.multivariate_ess(x, batch_size="fourthroot")


def test_kish():
    assert dg.kish_ess(np.zeros(50)) == pytest.approx(50)
    assert dg.kish_ess(np.array([0.0, -1000.0, -1000.0])) == pytest.approx(1.0)
    w = np.array([1.0, 2.0, 3.0])
    assert dg.kish_ess(np.log(w)) == pytest.approx(w.sum() ** 2 / np.sum(w**2))
    with pytest.raises(ValueError, match="log_weights"):
        dg.kish_ess(np.array([0.0, np.nan]))


def test_combined_ess():
    x = np.random.default_rng(0).normal(size=(2, 400, 2))
    lw = np.log(np.random.default_rng(1).uniform(0.2, 1.0, size=(2, 400)))
    assert dg.combined_ess(x, None) == pytest.approx(dg.multivariate_ess(x))
    assert dg.combined_ess(x, lw) == pytest.approx(dg.kish_ess(lw) / 800 * dg.multivariate_ess(x))


def test_ess_per_second_and_gradient():
    res = hm.sample("gaussian-d10", "hmc", chains=2, warmup=100, draws=100, seed=0,
                    progress=False, n_steps=5, n_steps_jitter=0)  # fmt: skip
    ess = dg.ess(res.draws)
    np.testing.assert_allclose(dg.ess_per_second(res), ess / res.sampling_seconds)
    np.testing.assert_allclose(dg.ess_per_gradient(res), ess / (2 * 100 * 5))


def test_rhat_flags_chains_that_disagree():
    rng = np.random.default_rng(0)
    mixed = rng.normal(size=(4, 1000, 1))
    stuck = mixed + np.array([0.0, 0.0, 0.0, 3.0])[:, None, None]
    assert dg.rhat(mixed)[0] < 1.01
    assert dg.rhat(stuck)[0] > 1.1


def test_mess_falls_when_the_chains_disagree():
    """Chains of independent unit normals around different means (0..3 in one coordinate,
    a permutation of it, uncorrelated with the first, in the other) have not mixed: the
    replicated batch means see the spread between chains, and the mESS falls far below the
    number of draws."""
    chains, n = 4, 1000
    shift = np.stack([np.arange(4.0), np.array([2.0, 0.0, 3.0, 1.0])], axis=-1)
    x = np.random.default_rng(3).normal(size=(chains, n, 2)) + shift[:, None, :]
    b = int(np.sqrt(n))
    a = n // b
    # Expected Sigma_jj = b / (a m - 1) (a sum_c (mu_c - mu)^2 + a m / b), Lambda = I.
    sigma = b / (a * chains - 1) * (a * 5.0 + a * chains / b)
    expected = chains * n / sigma
    # log mESS varies by about 3 % (the noise-by-shift cross terms of Sigma, 2.8 %, and
    # Lambda's 2 %, over two coordinates): four standard deviations.
    assert abs(np.log(dg.multivariate_ess(x) / expected)) < 4 * 0.03
