"""What the windowed metric adaptation estimates, and when: Stan's schedule of slow windows
and its regularised estimate of the inverse mass matrix.

One job: the maths of :class:`~hamiltonia.tuners.adaptation.WindowedMetric`, written once
for both ways of adapting (:data:`METRIC_POOLING`: pooled over the chains or per chain) and
both paths: :func:`metric_windows` (the windows' iterations) and :func:`estimate_metric`
(the metric of a window's draws), with :func:`settled_draws` (a window's draws after a
transient). :mod:`hamiltonia.tuners.adaptation` re-exports them.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "METRIC_POOLING",
    "TRANSIENT_RATIO",
    "estimate_metric",
    "metric_windows",
    "settled_draws",
]


def metric_windows(
    n_warmup: int, initial_buffer: int = 75, window: int = 25, terminal_buffer: int = 50
) -> list[tuple[int, int]]:
    """The slow windows ``[start, end)`` (iteration numbers from 0) of Stan's windowed
    adaptation.

    After an initial buffer (step size only), windows of doubling length (``window``,
    ``2 window``, ...) estimate the metric; the last one is stretched to end
    ``terminal_buffer`` iterations before the end of warm-up. With fewer than
    ``initial_buffer + window + terminal_buffer`` warm-up iterations, Stan's fallback is used:
    15 % initial buffer, one window of 75 %, 10 % terminal buffer. Under 20 iterations there
    is no window.
    """
    if n_warmup < 20:
        return []
    if n_warmup < initial_buffer + window + terminal_buffer:
        initial_buffer = int(0.15 * n_warmup)
        terminal_buffer = int(0.1 * n_warmup)
        window = n_warmup - initial_buffer - terminal_buffer
    # As Stan: the first window always has the base size; a later window is stretched to the
    # terminal buffer when the window after it would not fit.
    last = n_warmup - terminal_buffer
    windows, begin, size = [], initial_buffer, window
    end = begin + size
    while True:
        windows.append((begin, end))
        if end >= last:
            break
        begin, size = end, 2 * size
        end = begin + size
        if end + 2 * size > last:
            end = last
    return windows


#: How many times a coordinate's variance over a whole window must exceed its variance over
#: the window's second half for the first half to count as a transient
#: (:func:`settled_draws`). Draws of one stationary distribution give a ratio near 1; a
#: ratio of 4 needs the second half's estimate to be a quarter of the truth, which its
#: sampling error does not reach with a few effective draws a chain.
TRANSIENT_RATIO = 4.0


def settled_draws(positions: np.ndarray) -> np.ndarray:
    """The draws of a slow window that its metric is estimated from: ``positions``
    ``(iterations, chains, dim)`` whole, or its second half when the first held a
    transient.

    Stan's windows assume the chains are stationary within a window. A chain that moves
    from one region to another during a window (a metastable start, leaving a secondary
    mode late in warm-up) breaks that: its jump adds the square of its length to the
    window's variance of the coordinates it moves in, the metric is that many times too
    wide, and the step size that follows is too small for the rest of the run (measured on
    ``bball_drive_event_0-hmm_drive_0`` with seed 0: two chains leaving a region near
    :math:`\\log(\\lambda_2 - \\lambda_1) = 1` for the mode at -3.07 inside the last
    window gave a variance 30 times the posterior's and a step size of 0.17, where runs
    whose chains had settled got 0.6 to 0.7). Where some coordinate's variance over the
    whole window is more than :data:`TRANSIENT_RATIO` times its variance over the second
    half, the estimate reads the second half only, as the later draws of warm-up are the
    more representative (the reason Stan's windows grow); otherwise the whole window, so
    that a stationary window's estimate is Stan's, to the bit."""
    n, _, dim = positions.shape
    if n < 4:
        return positions
    later = positions[n // 2 :]
    whole = positions.reshape(-1, dim).var(axis=0)
    second = later.reshape(-1, dim).var(axis=0)
    return later if np.any(whole > TRANSIENT_RATIO * second) else positions


#: The ways a metric is adapted over the chains (``WindowedMetric``'s ``per_chain`` and the
#: recipes' ``adapt_metric`` option): one metric from all chains' draws, or each chain's
#: (each antithetic pair's) own from its own draws.
METRIC_POOLING = ("pooled", "per-chain")


def estimate_metric(draws: np.ndarray, kind: str):
    """Stan's regularised estimate of the inverse mass matrix from the ``n`` draws of a slow
    window, ``draws`` of shape ``(n, dim)``; ``None`` when ``n < 2`` (nothing to estimate).

    With :math:`\\hat\\Sigma` the draws' sample covariance (divisor :math:`n - 1`), or its
    diagonal for ``kind="diagonal"``,

    .. math::

        M^{-1} = \\frac{n}{n + 5}\\,\\hat\\Sigma + 10^{-3}\\,\\frac{5}{n + 5}\\,I,

    which shrinks the estimate towards a small multiple of the identity, the more so the
    fewer the draws. The maths of both ways of adapting, written once: the pooled
    adaptation gives it every chain's draws of the window, the per-chain one a chain's own
    (an antithetic pair's two chains'), on both paths.

    Parameters
    ----------
    draws : ndarray, shape ``(n, dim)``
        The positions of the window's iterations, in the sampler's coordinates.
    kind : {"diagonal", "dense"}
        Which metric to estimate.

    Returns
    -------
    DiagonalMetric, DenseMetric or None
    """
    from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric

    n, dim = draws.shape
    if n < 2:  # Stan's schedule can leave a one-iteration window: nothing to estimate
        return None
    shrink, jitter = n / (n + 5.0), 1e-3 * 5.0 / (n + 5.0)
    if kind == "diagonal":
        return DiagonalMetric(shrink * draws.var(axis=0, ddof=1) + jitter)
    cov = np.atleast_2d(np.cov(draws, rowvar=False))
    return DenseMetric(shrink * cov + jitter * np.eye(dim))
