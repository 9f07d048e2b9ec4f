"""The abstract :class:`ShadowHamiltonian`.

A symplectic integrator of step size :math:`\\varepsilon` conserves, far better than
:math:`H`, a modified ("shadow") Hamiltonian :math:`\\tilde H = H + O(\\varepsilon^k)`. A
shadow sampler targets :math:`e^{-\\tilde H}`, which raises acceptance, and corrects the draws
with the importance weights

.. math::

    w(q, p) = \\exp\\bigl(\\tilde H(q, p) - H(q, p)\\bigr),

so that weighted averages estimate expectations under :math:`e^{-H}`.

References
----------
Izaguirre and Hampton (2004), *Shadow hybrid Monte Carlo*; Sweet, Hampton, Skeel and Izaguirre
(2009), *A separable shadow Hamiltonian hybrid Monte Carlo method* (S2HMC); Mongwe, Mbuvha and
Marwala (2021), PS2HMC and SMHMC (spec/seed000_004.md).
"""

from __future__ import annotations

import numpy as np

from hamiltonia.hamiltonians.base import Hamiltonian
from hamiltonia.state import PhaseState

__all__ = ["ShadowHamiltonian"]


class ShadowHamiltonian(Hamiltonian):
    """A Hamiltonian :math:`\\tilde H` that wraps a base Hamiltonian :math:`H`.

    Contract
    --------
    * ``base`` is the wrapped :class:`Hamiltonian`; kinetic energy, velocity and momentum draws
      are delegated to it, so integrators still integrate the flow of :math:`H`.
    * ``energy(state, step_size)`` returns :math:`\\tilde H` for the integrator and step size
      in use (one value per chain); the accept step of a shadow sampler uses it in place of
      :math:`H`.
    * ``log_weight(state, step_size)`` returns :math:`\\tilde H - H`, the log importance weight
      of a retained draw.
    * ``order`` is :math:`k` in :math:`\\tilde H - H_{\\text{conserved}} = O(\\varepsilon^k)`.
    """

    order: int = 4

    def __init__(self, base: Hamiltonian):
        super().__init__(base.target)
        self.base = base

    def kinetic(self, p, aux=None):
        return self.base.kinetic(p, aux)

    def velocity(self, p, aux=None):
        return self.base.velocity(p, aux)

    def sample_momentum(self, rngs, aux=None):
        return self.base.sample_momentum(rngs, aux)

    def energy(self, state: PhaseState, step_size: np.ndarray | None = None) -> np.ndarray:
        raise NotImplementedError

    def log_weight(self, state: PhaseState, step_size: np.ndarray) -> np.ndarray:
        """:math:`\\log w = \\tilde H - H`."""
        return self.energy(state, step_size) - self.base.energy(state, step_size)
