"""Variance reducers: turning draws into lower-variance estimates.

A sampler may produce draws that are not equally weighted (a shadow sampler targets
:math:`e^{-\\tilde H}` and needs importance weights) or that come in coupled pairs (antithetic
chains); a :class:`VarianceReducer` knows how to turn them into estimates of
:math:`\\mathbb E_\\pi[f]`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ImportanceWeights", "VarianceReducer", "weighted_mean"]


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


class VarianceReducer:
    """Abstract variance reducer.

    Contract
    --------
    * ``log_weights(sampler, state, step_size)`` returns the per-chain log importance weight
      of a retained draw, or ``None`` when draws are equally weighted. The run loop stores
      it with each draw as ``result.log_weights``.
    * ``estimate(values, log_weights)`` returns the estimate of :math:`\\mathbb E[f]` from
      ``values`` :math:`= f(x)` of shape ``(chains, draws, ...)``; the default is the
      (self-normalised) weighted mean.
    """

    def log_weights(self, sampler, state, step_size):
        return None

    def estimate(self, values: np.ndarray, log_weights: np.ndarray | None) -> np.ndarray:
        return weighted_mean(values, log_weights)

    def __repr__(self):
        return f"{type(self).__name__}()"


class ImportanceWeights(VarianceReducer):
    """The importance weights of a shadow sampler, which targets :math:`e^{-\\tilde H}`:

    .. math::

        \\log w(q, p) = \\tilde H(q, p) - H(q, p),

    the Hamiltonian's :meth:`~hamiltonia.hamiltonians.ShadowHamiltonian.log_weight` of each
    retained state at the chain's step size (spec/seed000_004.md §1.8). Estimates are
    self-normalised weighted means; :meth:`hamiltonia.Result.summary` weighs means and
    standard deviations and multiplies ESS by the Kish factor.

    On the compiled path the Hamiltonian's ``weigh`` kernel writes the weight into the
    statistics column :attr:`column`, which the run moves to ``result.log_weights``.
    """

    #: The statistics column the compiled path writes the log weight into.
    column = "log_weight"

    def log_weights(self, sampler, state, step_size):
        return sampler.hamiltonian.log_weight(state, step_size)
