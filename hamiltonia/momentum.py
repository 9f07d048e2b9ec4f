"""Momentum refreshment between trajectories.

Between two trajectories a Hamiltonian sampler resamples (part of) the momentum, a Gibbs step
on :math:`p` that keeps :math:`e^{-H}` invariant and lets the chain move between energy levels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hamiltonia.state import PhaseState

__all__ = ["FullRefresh", "MomentumRefresh"]


class MomentumRefresh:
    """Abstract momentum refreshment.

    Contract
    --------
    * ``refresh(hamiltonian, state, rngs)`` returns the state with new momenta, leaving
      :math:`e^{-H(q,p)}` invariant; chain ``c`` draws only from ``rngs[c]``.
    * ``flip_on_reject``: whether a rejected proposal negates the current momentum (needed
      for detailed balance when momentum is carried over, as in partial refreshment; harmless
      and skipped with a full refresh).
    """

    flip_on_reject: bool = False

    def refresh(
        self, hamiltonian, state: PhaseState, rngs: Sequence[np.random.Generator]
    ) -> PhaseState:
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class FullRefresh(MomentumRefresh):
    """Draw a fresh momentum :math:`p \\sim \\mathcal N(0, M)` every iteration (standard HMC,
    spec/seed002_ch1-3.md §2.3, Algorithm 2)."""

    def refresh(self, hamiltonian, state, rngs):
        return state.with_momentum(hamiltonian.sample_momentum(rngs))
