"""The MCSE of chains that keep their momentum: ArviZ's of short batch means."""

import math

import numpy as np
import pytest
from scipy import signal, stats

import hamiltonia as hm
from hamiltonia.diagnostics import univariate
from hamiltonia.diagnostics.nonreversible import batch_length, batched_mcse


@pytest.mark.parametrize(("n", "m"), [(1, 1), (7, 1), (8, 2), (999, 9), (1000, 10), (10**6, 100)])
def test_the_batch_length_is_the_integer_cube_root(n, m):
    assert batch_length(n) == m


def test_it_is_arviz_mcse_of_the_batch_means_and_equal_weights_change_nothing():
    x = np.random.default_rng(0).normal(size=(3, 1003, 2))
    means = x[:, 3:].reshape(3, 100, 10, 2).mean(axis=2)
    np.testing.assert_allclose(batched_mcse(x), univariate.mcse(means, "mean"), rtol=1e-12)
    np.testing.assert_allclose(batched_mcse(x, np.zeros((3, 1003))), batched_mcse(x), rtol=1e-12)


def _ar2(rng, shape, phi1, phi2):
    """AR(2) series along the last axis, started far enough back to be stationary."""
    burn = 200
    eps = rng.normal(size=(*shape[:-1], shape[-1] + burn))
    return signal.lfilter([1.0], [1.0, -phi1, -phi2], eps, axis=-1)[..., burn:]


def test_an_oscillating_chain_gets_the_error_it_makes_where_arviz_reports_too_much():
    """AR(2) with phi = (0.5, -0.5): autocorrelations 1, 1/3, -1/3, -1/3, 0, 1/6, ...,
    the oscillation of a partial refresh. The mean of 4 x 1,000 draws has variance
    sigma^2_inf / 4,000 with sigma^2_inf = 1 / (1 - phi1 - phi2)^2 = 1. Over 400
    replications the RMS error over the RMS reported MCSE has a chi^2_400 interval (99.9 %)
    that covers 1 for the batched MCSE and lies below 1 for ArviZ's (Geyer's sequence stops
    at the first negative pair, 1/3 - 1/3: an MCSE about 1.6 times too large)."""
    rng = np.random.default_rng(1)
    reps, chains, n = 400, 4, 1000
    x = _ar2(rng, (reps, chains, n), 0.5, -0.5)
    errors = x.mean(axis=(1, 2))  # the truth is 0
    batched = np.array([batched_mcse(x[r]) for r in range(reps)])
    geyer = np.array([univariate.mcse(x[r], "mean") for r in range(reps)])
    exact = math.sqrt(1.0 / (chains * n))
    low, high = stats.chi2.ppf([0.0005, 0.9995], reps)
    for reported, calibrated in ((batched, True), (geyer, False)):
        ratio = math.sqrt(np.mean(errors**2) / np.mean(reported**2))
        interval = (ratio * math.sqrt(reps / high), ratio * math.sqrt(reps / low))
        assert (interval[0] <= 1.0 <= interval[1]) is calibrated, (ratio, interval)
    assert abs(math.sqrt(np.mean(batched**2)) / exact - 1) < 0.1


def test_a_partial_refresh_run_reports_the_batched_mcse():
    run = hm.sample("correlated-gaussian", "phmc", chains=4, warmup=200, draws=500, seed=0,
                    progress=False)  # fmt: skip
    assert run.attrs["momentum_memory"] > 0
    np.testing.assert_allclose(run.summary()["mcse"], batched_mcse(run.draws), rtol=1e-12)
    full = hm.sample("correlated-gaussian", "hmc", chains=4, warmup=200, draws=500, seed=0,
                     progress=False)  # fmt: skip
    assert not full.attrs["momentum_memory"] > 0
    np.testing.assert_allclose(full.summary()["mcse"], univariate.mcse(full.draws, "mean"))


def test_each_chain_of_a_partial_refresh_run_reports_its_batched_mcse_too():
    run = hm.sample("correlated-gaussian", "phmc", chains=2, warmup=200, draws=500, seed=0,
                    progress=False)  # fmt: skip
    per_chain = run.summary(per_chain=True)
    for c in range(2):
        np.testing.assert_allclose(
            per_chain.loc[c]["mcse"], batched_mcse(run.draws[c : c + 1]), rtol=1e-12
        )
