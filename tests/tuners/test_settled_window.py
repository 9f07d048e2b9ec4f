"""A slow window's metric from its settled draws
(:func:`hamiltonia.tuners.metric_estimate.settled_draws`): a stationary window is read whole,
so that its estimate is Stan's to the bit; a window in which chains jump from one region to
another is read from its second half."""

import numpy as np
import pytest

from hamiltonia.tuners.metric_estimate import TRANSIENT_RATIO, settled_draws


def _ar1(rng, n, chains, dim, rho):
    """Stationary AR(1) draws ``(n, chains, dim)`` of unit variance."""
    x = np.empty((n, chains, dim))
    x[0] = rng.normal(size=(chains, dim))
    for t in range(1, n):
        x[t] = rho * x[t - 1] + np.sqrt(1.0 - rho**2) * rng.normal(size=(chains, dim))
    return x


@pytest.mark.parametrize("n", [100, 500])
@pytest.mark.parametrize("rho", [0.0, 0.9])
def test_a_stationary_window_of_a_long_warmup_is_read_whole(rho, n):
    """Stan's windows of 100 iterations and its last of 500, independent and strongly
    autocorrelated draws of 10 coordinates: none of 200 windows is cut (the cut needs the
    second half's variance under a quarter of the whole window's in some coordinate)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        window = _ar1(rng, n, 4, 10, rho)
        assert settled_draws(window) is window


def test_short_autocorrelated_windows_are_seldom_cut():
    """A 30-iteration warm-up's one window of 22 iterations, draws autocorrelated at 0.9
    (about one effective draw a chain a half): a cut is rare (measured 0.75 % of 400; the
    bound, 5 %, is over four binomial standard deviations above that), and costs only the
    estimate's half of its draws."""
    rng = np.random.default_rng(9)
    cuts = sum(settled_draws(w) is not w for w in (_ar1(rng, 22, 4, 10, 0.9)
                                                    for _ in range(400)))  # fmt: skip
    assert cuts / 400 < 0.05


def test_chains_that_jump_inside_the_window_leave_its_first_half_out():
    """Two of four chains start 4 units away and reach the mode a quarter into the window
    (a metastable start): the whole window's variance in that coordinate is many times the
    posterior's, and the second half's is the posterior's."""
    rng = np.random.default_rng(8)
    window = _ar1(rng, 400, 4, 3, 0.5) * 0.25
    window[:100, :2, 1] += 4.0
    whole = window.reshape(-1, 3).var(axis=0)
    assert whole[1] > TRANSIENT_RATIO * window[200:].reshape(-1, 3).var(axis=0)[1]
    settled = settled_draws(window)
    np.testing.assert_array_equal(settled, window[200:])
    assert settled.reshape(-1, 3).var(axis=0)[1] == pytest.approx(0.0625, rel=0.25)
