"""What the windowed metric adaptation estimates, and when: Stan's schedule of slow windows
and its regularised estimate of the inverse mass matrix.

One job: the maths of :class:`~hamiltonia.tuners.adaptation.WindowedMetric`, written once
for both ways of adapting (:data:`METRIC_POOLING`: pooled over the chains or per chain) and
both paths: :func:`metric_windows` (the windows' iterations) and :func:`estimate_metric`
(the metric of a window's draws). :mod:`hamiltonia.tuners.adaptation` re-exports them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["METRIC_POOLING", "estimate_metric", "metric_windows"]


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
