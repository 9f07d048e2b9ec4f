"""Importance weights: Kish's effective sample size of the weights and the factor by which
they shrink an ESS (Kish 1965; Mongwe 2022, thesis, §3.4.1, eq. 3.11), the self-normalised
weighted mean, and the linearised values (the delta method) whose plain mean and Monte
Carlo error are those of the weighted estimate.

Log weights have shape ``(chains, draws)``, as a shadow sampler's ``result.log_weights``;
``None`` stands for equal weights.
"""

from __future__ import annotations

import numpy as np

__all__ = ["kish_ess", "kish_factor", "linearised_values", "weighted_mean"]


def kish_ess(log_weights: np.ndarray) -> float:
    """Kish's effective sample size of importance weights (thesis eq. 3.11).

    .. math::

        \\text{ESS}_{\\text{IMP}} = \\frac{1}{\\sum_j \\bar b_j^2},
        \\qquad \\bar b_j = \\frac{b_j}{\\sum_k b_k},

    computed from log weights with the maximum subtracted. Equal weights give the number of
    draws.
    """
    lw = np.asarray(log_weights, dtype=float).ravel()
    if lw.size == 0 or not np.all(np.isfinite(lw)):
        raise ValueError("log_weights must be a non-empty array of finite values")
    w = np.exp(lw - lw.max())
    w /= w.sum()
    return float(1.0 / np.sum(w**2))


def kish_factor(log_weights) -> float:
    """:func:`kish_ess` over the number of draws, the factor by which importance weights
    shrink an ESS: 1 without weights, and where a weight is not finite (it has no Kish
    ESS; the run's checks report such weights)."""
    if log_weights is None or not np.all(np.isfinite(log_weights)):
        return 1.0
    return kish_ess(log_weights) / np.size(log_weights)


def weighted_mean(values: np.ndarray, log_weights: np.ndarray | None) -> np.ndarray:
    """Self-normalised importance-weighted mean over the (chain, draw) axes.

    .. math::

        \\hat\\mu = \\frac{\\sum_i w_i f(x_i)}{\\sum_i w_i}, \\qquad w_i = e^{\\log w_i}.

    ``values`` has shape ``(chains, draws, ...)``; ``log_weights`` ``(chains, draws)`` or
    ``None`` for equal weights.
    """
    if log_weights is None:
        return values.mean(axis=(0, 1))
    lw = log_weights - np.max(log_weights)
    w = np.exp(lw)
    w = w / w.sum()
    return np.tensordot(w, values, axes=([0, 1], [0, 1]))


def linearised_values(values, log_weights, per_chain: bool = False) -> np.ndarray:
    """The per-draw series whose plain mean is the self-normalised estimate, with the same
    Monte Carlo error to first order (the delta method), shape of ``values``
    ``(chains, draws, ...)``:

    .. math::

        \\psi_i = \\hat\\mu + \\frac{w_i}{\\bar w}\\,(f_i - \\hat\\mu), \\qquad
        \\hat\\mu = \\frac{\\sum_i w_i f_i}{\\sum_i w_i},

    over all draws, or over each chain's own draws with ``per_chain`` (each chain its own
    estimate, as an antithetic pair's chains are averaged). The values themselves when
    ``log_weights`` is ``None``.
    """
    values = np.asarray(values, dtype=float)
    if log_weights is None:
        return values
    axes = (1,) if per_chain else (0, 1)
    lw = np.asarray(log_weights, dtype=float)
    w = np.exp(lw - np.max(lw, axis=axes, keepdims=True))
    w = w / w.mean(axis=axes, keepdims=True)
    w = w.reshape(w.shape + (1,) * (values.ndim - 2))
    mu = (w * values).mean(axis=axes, keepdims=True)
    return mu + w * (values - mu)
