"""Thinning: keeping one iteration in ``thin``.

A run with ``thin=k`` keeps iterations ``k - 1, 2k - 1, ...`` (the last of each group of
``k``), so that the chain's state after a kept draw is the state at a group boundary, from
which a checkpoint resumes exactly. The statistics of a kept draw are those of its iteration,
except two that summarise the whole group, so that thinning hides neither a problem nor work:

.. math::

    \\text{diverging}_j = \\bigvee_{i \\in G_j} \\text{diverging}_i, \\qquad
    \\text{n\\_grad}_j = \\sum_{i \\in G_j} \\text{n\\_grad}_i,

where :math:`G_j = \\{jk, \\dots, jk + k - 1\\}` are the iterations draw :math:`j` stands for.
As Stan's ``thin`` and NumPyro's ``thinning``: ``draws`` counts iterations, and
``draws // thin`` are kept.
"""

from __future__ import annotations

import numpy as np

__all__ = ["kept", "thin_group", "thin_statistic", "thin_statistics"]


def thin_statistic(name: str, values: np.ndarray) -> np.ndarray:
    """One statistic of a draw from those of its group's iterations (the last axis)."""
    if name == "diverging":
        return np.any(values, axis=-1)
    if name == "n_grad":
        return np.sum(values, axis=-1, dtype=values.dtype)
    return values[..., -1]


def thin_statistics(stats: dict, thin: int) -> dict:
    """Statistics of shape ``(chains, n * thin)`` to those of the ``n`` kept draws."""
    if thin == 1:
        return dict(stats)
    out = {}
    for name, values in stats.items():
        chains, n_iter = values.shape[:2]
        n = n_iter // thin
        grouped = values[:, : n * thin].reshape((chains, n, thin, *values.shape[2:]))
        out[name] = thin_statistic(name, np.moveaxis(grouped, 2, -1))
    return out


def thin_group(group: list, names, chains: int) -> dict:
    """The statistics ``names`` of one kept draw from the ``thin`` iterations' statistics
    dicts of ``group`` (values per chain, or one value for all chains)."""
    return {
        name: thin_statistic(
            name, np.stack([np.broadcast_to(np.asarray(g[name]), (chains,)) for g in group], -1)
        )
        for name in names
    }


def kept(values: np.ndarray, thin: int) -> np.ndarray:
    """The kept iterations (axis 1) of a block of ``n * thin`` iterations (or more: a
    last, incomplete group is dropped)."""
    n = values.shape[1] // thin
    return values[:, thin - 1 : n * thin : thin]
