"""Shadow Hamiltonians: the abstract :class:`ShadowHamiltonian` and the separable
:class:`SeparableShadowHamiltonian` of S2HMC.

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

from dataclasses import replace

import numpy as np

from hamiltonia.compiled.roles import HAMILTONIAN, kinetic, velocity
from hamiltonia.hamiltonians.base import Hamiltonian, separable_energy_kernel
from hamiltonia.state import PhaseState

__all__ = ["SeparableShadowHamiltonian", "ShadowHamiltonian"]


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

    @property
    def metric(self):
        """The base Hamiltonian's metric (a warm-up tuner adapts it there)."""
        return self.base.metric

    @metric.setter
    def metric(self, metric):
        self.base.metric = metric

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


def separable_shadow_energy_kernel(q, p, lp, grad, v, eps, aux, PF, PI):
    """Kernel of :meth:`SeparableShadowHamiltonian.energy` (role ``energy``):
    :math:`H + \\tfrac{\\varepsilon^2}{12} K(\\nabla\\log\\pi)`; ``v`` is scratch space."""
    h = separable_energy_kernel(q, p, lp, grad, v, eps, aux, PF, PI)
    return h + eps * eps / 12.0 * kinetic(q, grad, velocity(q, grad, v, aux, PF, PI), aux, PF, PI)


def separable_shadow_weight_kernel(q, p, lp, grad, v, eps, aux, stats, PF, PI):
    """Kernel of :meth:`SeparableShadowHamiltonian.log_weight` (role ``weigh``): writes
    :math:`\\tfrac{\\varepsilon^2}{12} K(\\nabla\\log\\pi)` into the part's column."""
    k = kinetic(q, grad, velocity(q, grad, v, aux, PF, PI), aux, PF, PI)
    stats[PI[HAMILTONIAN][0]] = eps * eps / 12.0 * k


class SeparableShadowHamiltonian(ShadowHamiltonian):
    """The separable shadow Hamiltonian of S2HMC (Sweet et al. 2009):

    .. math::

        \\tilde H(q, p) = U(q) + K(p) + \\frac{\\varepsilon^2}{24}\\,
            \\nabla U(q)^\\top M^{-1} \\nabla U(q)
        = H(q, p) + \\frac{\\varepsilon^2}{12} K\\bigl(\\nabla U(q)\\bigr),

    with :math:`U = -\\log\\pi` and :math:`K(p) = \\tfrac12 p^\\top M^{-1} p`. It is the
    leapfrog's fourth-order shadow :math:`\\hat H` (spec/seed000_004.md §2.2) written in the
    coordinates of the canonical map :math:`X` of
    :class:`~hamiltonia.integrators.ProcessedLeapfrog`:
    :math:`\\tilde H = \\hat H \\circ X + O(\\varepsilon^4)`, so the processed leapfrog
    :math:`X^{-1} \\circ \\text{LF}^L \\circ X` conserves it to fourth order while it conserves
    :math:`H` to second order. :math:`\\tilde H` is separable with the same Gaussian
    momentum, so a full or partial momentum refresh leaves :math:`e^{-\\tilde H}` invariant
    with no momentum test (spec/seed000_004.md §1.7). The log importance weight of a draw is

    .. math::

        \\log w = \\tilde H - H = \\frac{\\varepsilon^2}{24}\\,
            \\nabla U^\\top M^{-1} \\nabla U,

    a function of :math:`q` alone.

    Parameters
    ----------
    base : Hamiltonian
        :math:`H`: a separable Hamiltonian with a fixed metric
        (:class:`~hamiltonia.hamiltonians.EuclideanHamiltonian`).

    References
    ----------
    Sweet, Hampton, Skeel and Izaguirre (2009), *A separable shadow Hamiltonian hybrid Monte
    Carlo method*, J. Chem. Phys. 131; Mongwe, Mbuvha and Marwala (2021), PS2HMC, IEEE Access
    9 (spec/seed000_004.md §2.3, eq. 14).
    """

    order = 4

    def __init__(self, base: Hamiltonian):
        if not isinstance(base, Hamiltonian):
            raise TypeError(f"base must be a Hamiltonian, got {type(base).__name__}")
        if isinstance(base, ShadowHamiltonian):
            raise ValueError("base must be a Hamiltonian H, not another shadow Hamiltonian")
        if base.per_chain_mass:
            raise ValueError(
                f"base {type(base).__name__} has a random mass: the shadow's correction "
                "depends on the mass, so a Gibbs redraw of the mass from its prior would not "
                "leave exp(-H~) invariant; use a fixed metric"
            )
        if type(base).energy is not Hamiltonian.energy:
            raise ValueError(
                f"base {type(base).__name__} overrides energy(): the separable shadow needs "
                "H = U(q) + K(p)"
            )
        super().__init__(base)

    def energy(self, state: PhaseState, step_size=None) -> np.ndarray:
        """:math:`\\tilde H` per chain at the step size ``step_size`` (one per chain)."""
        if step_size is None:
            raise ValueError("a shadow Hamiltonian's energy needs the step size integrated")
        return self.base.energy(state) + self.log_weight(state, step_size)

    def log_weight(self, state: PhaseState, step_size) -> np.ndarray:
        """:math:`\\tilde H - H = \\tfrac{\\varepsilon^2}{12} K(\\nabla\\log\\pi(q))`."""
        eps = np.asarray(step_size, dtype=np.float64)
        return eps * eps / 12.0 * self.base.kinetic(state.grad, state.aux)

    def compiled(self, dim):
        from hamiltonia.compiled.parts import compiled_counterpart

        kernels = compiled_counterpart(self.base, dim, "hamiltonian")
        functions = {
            **kernels.functions,
            "energy": separable_shadow_energy_kernel,
            "weigh": separable_shadow_weight_kernel,
        }
        return replace(
            kernels, functions=functions, stats=(*kernels.stats, ("log_weight", "float64"))
        )

    def __repr__(self):
        return f"SeparableShadowHamiltonian({self.base!r})"
