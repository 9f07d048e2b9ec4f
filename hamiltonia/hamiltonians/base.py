"""The abstract :class:`Hamiltonian`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hamiltonia import backend
from hamiltonia.state import PhaseState, evaluate_target

__all__ = ["Hamiltonian"]


class Hamiltonian:
    """A Hamiltonian :math:`H(q, p) = U(q) + K(p)` over a target.

    The potential energy is :math:`U(q) = -\\log\\pi(q)`; the kinetic energy and the momentum
    distribution :math:`\\propto e^{-K(p)}` are chosen by subclasses.

    Contract
    --------
    * ``potential(state)`` and ``kinetic(p)`` return one value per chain;
      ``energy(state) = potential + kinetic``.
    * ``velocity(p)`` is :math:`\\partial H/\\partial p`; the force is
      ``state.grad`` :math:`= -\\partial H/\\partial q`.
    * ``sample_momentum(rngs)`` draws one momentum per chain, row ``c`` from ``rngs[c]``.
    * ``evaluate(q)`` builds a :class:`~hamiltonia.state.PhaseState` at positions ``q`` (with
      zero momenta), evaluating the target once and turning failures into ``nan``.
    * ``n_grad_per_evaluation`` is the number of gradient evaluations ``evaluate`` costs.
    """

    n_grad_per_evaluation = 1

    def __init__(self, target):
        self.target = target

    @property
    def dim(self) -> int:
        return self.target.dim

    def potential(self, state: PhaseState) -> np.ndarray:
        """:math:`U(q) = -\\log\\pi(q)`."""
        return -state.log_prob

    def kinetic(self, p: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def velocity(self, p: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def sample_momentum(self, rngs: Sequence[np.random.Generator]) -> np.ndarray:
        raise NotImplementedError

    def energy(self, state: PhaseState) -> np.ndarray:
        """:math:`H(q, p)` per chain."""
        return self.potential(state) + self.kinetic(state.p)

    def evaluate(self, q: np.ndarray, p: np.ndarray | None = None) -> PhaseState:
        """A phase state at ``q`` (and ``p``, zeros by default)."""
        lp, g = evaluate_target(self.target, q, with_grad=True)
        return PhaseState(q, backend.xp().zeros_like(q) if p is None else p, lp, g)
