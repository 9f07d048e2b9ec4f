"""Antithetic pairs of chains: which chains pair (``2k`` with ``2k + 1``) and the Spearman
rank correlation of each pair's chains, per parameter, from which the research's
:math:`\\eta` is taken (Piponi, Hoffman and Sountsov 2020, *Hamiltonian Monte Carlo
swindles*; Mongwe 2022, thesis, §8.3, eq. 8.1). :mod:`hamiltonia.reducers.antithetic` and
:mod:`hamiltonia.diagnostics.publication` use them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pair_correlation", "pairs_of"]


def pairs_of(chains: int) -> np.ndarray:
    """The pairs ``[[0, 1], [2, 3], ...]`` of ``chains`` chains (an even number)."""
    if chains < 2 or chains % 2:
        raise ValueError(
            f"chains must be an even number >= 2 for antithetic pairs, got chains={chains}"
        )
    return np.arange(chains).reshape(-1, 2)


def pair_correlation(draws: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of each pair's chains, per parameter, averaged over pairs:
    shape ``(dim,)``; the research's :math:`\\eta` reduces it over the parameters
    (:func:`hamiltonia.diagnostics.publication.antithetic_eta`)."""
    from scipy.stats import spearmanr

    draws = np.asarray(draws, dtype=float)
    pairs = pairs_of(draws.shape[0])
    eta = np.empty((len(pairs), draws.shape[2]))
    for k, (x, y) in enumerate(pairs):
        for i in range(draws.shape[2]):
            eta[k, i] = spearmanr(draws[x, :, i], draws[y, :, i]).statistic
    return eta.mean(axis=0)
