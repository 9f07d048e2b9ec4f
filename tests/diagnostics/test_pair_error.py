"""The standard error of antithetic pairs (hamiltonia.diagnostics.pair_error) on series whose
error is known by construction: exactly antithetic pairs (a constant pair mean) disturbed by
a slow start and rare decouplings, the events an ESS from the autocorrelation cannot see."""

import warnings

import numpy as np
import pytest

from hamiltonia import diagnostics
from hamiltonia.diagnostics.checks import SamplingWarning
from hamiltonia.diagnostics.pair_error import BATCHES, pair_mcse, paired_mcse

N = 2000


def test_exactly_antithetic_pairs_have_no_error():
    series = np.full((2, N, 3), 1.5)
    error = pair_mcse(series)
    np.testing.assert_array_equal(error.mcse, 0.0)
    np.testing.assert_array_equal(error.dof, 2 * BATCHES - 1)
    assert not error.between.any()


def test_one_decoupling_inside_a_batch_gets_the_error_it_made():
    """Pairs constant but for one excursion of integral A in pair 0, inside one batch: the
    estimate is off by A / (2N). The batches of pair 0 spread as much as the two pairs do
    (the F statistic is exactly 1), so the pooled batch means decide, and their standard
    error is A / (2N) exactly."""
    series = np.zeros((2, N))
    area = 3.0
    series[0, 100:110] = area / 10
    error = pair_mcse(series)
    assert series.mean() == pytest.approx(area / (2 * N))
    assert error.mcse == pytest.approx(area / (2 * N), rel=1e-12)
    assert not error.between and error.dof == 2 * BATCHES - 1
    assert error.p_value == pytest.approx(0.3343, abs=1e-3)  # F(1, 14) beyond 1


def test_pairs_that_never_meet_get_the_spread_of_the_pairs():
    """Each pair constant at its own offset (a pair that kept the distance it started at):
    the batches see nothing, the pairs disagree, and their spread, with one degree of
    freedom, is the error bar."""
    series = np.stack([np.full(N, 0.02), np.full(N, -0.01)])
    error = pair_mcse(series)
    assert error.between and error.dof == 1
    assert error.mcse == pytest.approx(0.015)


def test_independent_draws_get_the_classical_standard_error():
    rng = np.random.default_rng(3)
    error = pair_mcse(rng.normal(size=(4, N, 2)))
    np.testing.assert_allclose(error.mcse, 1 / np.sqrt(4 * N), rtol=0.35)


def _synthetic_runs(runs, rng, fast=0.99, slow=0.999, slow_share=0.1, decouplings=True):
    """Pair-mean series ``(pairs, draws, runs)`` of two pairs, of mean 0: each pair starts
    apart by an offset ~ N(0, 1) that shrinks by ``fast`` a draw (``slow`` for a share of
    the pairs, a mode that barely contracts; a negative factor alternates, as a trajectory
    that turns a mode by more than a quarter turn), and decouples at rate 1/2000 a draw,
    apart again by N(0, 0.5^2) and meeting at 0.95 a draw. The pair mean is 0 between those
    events: exactly antithetic."""
    t = np.arange(N)
    factor = np.where(rng.random((2, 1, runs)) < slow_share, slow, fast)
    shrink = np.sign(factor) ** t[:, None] * np.abs(factor) ** t[:, None]
    start = rng.normal(size=(2, 1, runs)) * shrink
    if not decouplings:
        return start
    kicks = np.where(rng.random((2, N, runs)) < 1 / 2000, rng.normal(0, 0.5, (2, N, runs)), 0.0)
    decay = 0.95 ** np.arange(200)
    events = np.apply_along_axis(lambda k: np.convolve(k, decay)[:N], 1, kicks)
    return start + events


def _calibration(runs, mcse):
    errors = runs.mean(axis=(0, 1))
    return np.sqrt(np.mean(errors**2) / np.mean(mcse**2)), np.mean(np.abs(errors) <= 2 * mcse)


def test_the_error_bar_is_calibrated_on_pairs_with_a_slow_start_and_decouplings():
    """Over 400 synthetic runs of two pairs, the RMS error over the RMS standard error is 1
    and +-2 standard errors cover at least 90 %. The errors are heavy-tailed (most pairs
    meet within a batch, a few over the whole run), so 400 runs measure the ratio within
    about 15 % (0.98 to 1.16 over seeds 0 to 5 and 2024; 1.00 over 4,000 runs)."""
    runs = _synthetic_runs(400, np.random.default_rng(2024))
    ratio, coverage = _calibration(runs, pair_mcse(runs).mcse)
    assert 0.8 < ratio < 1.25, ratio
    assert coverage >= 0.9, coverage


def test_an_alternating_start_fools_the_autocorrelation_but_not_the_batches():
    """Pairs that meet by an alternating contraction (factor -0.9 a draw): the split-chain
    ESS of the near-constant series takes the swings for noise and more than doubles the
    error bar; the batches and the pairs' spread do not."""
    runs = _synthetic_runs(200, np.random.default_rng(11), fast=-0.9, slow_share=0.0,
                           decouplings=False)  # fmt: skip
    ratio, _ = _calibration(runs, pair_mcse(runs).mcse)
    assert 0.85 < ratio < 1.15, ratio
    old = np.array([diagnostics.mcse(runs[:, :, r, None], "mean")[0] for r in range(100)])
    old_ratio, _ = _calibration(runs[:, :, :100], old)
    assert old_ratio < 0.6, old_ratio


def test_one_pair_warns_and_bad_series_are_refused():
    with pytest.warns(SamplingWarning, match="one antithetic pair"):
        error = pair_mcse(np.random.default_rng(0).normal(size=(1, 100)))
    assert error.dof == BATCHES - 1 and np.isnan(error.p_value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pair_mcse(np.ones((1, 100)), warn=False)
    with pytest.raises(ValueError, match=r"shape \(pairs, draws, ...\)"):
        pair_mcse(np.ones(5))
    with pytest.raises(ValueError, match="level"):
        pair_mcse(np.ones((2, 5)), level=1.5)


def test_paired_mcse_pairs_chains_two_by_two_and_weighs_the_draws():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(4, 300, 2))
    np.testing.assert_array_equal(
        paired_mcse(values), pair_mcse(0.5 * (values[0::2] + values[1::2])).mcse
    )
    log_w = 0.1 * rng.normal(size=(4, 300))
    w = np.exp(log_w)[..., None]
    mu = (w * values).sum(axis=(0, 1)) / w.sum(axis=(0, 1))
    psi = mu + w / w.mean() * (values - mu)
    np.testing.assert_allclose(
        paired_mcse(values, log_w), pair_mcse(0.5 * (psi[0::2] + psi[1::2])).mcse, rtol=1e-12
    )
