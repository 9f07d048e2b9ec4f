"""The abstract :class:`Hamiltonian`."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from hamiltonia import backend
from hamiltonia.compiled.roles import kinetic as kinetic_role
from hamiltonia.compiled.roles import velocity as velocity_role
from hamiltonia.state import PhaseState, evaluate_target

__all__ = ["Hamiltonian", "position_flow_kernel", "separable_energy_kernel"]


def position_flow_kernel(q, p, v, h, aux, PF, PI):
    """:math:`q \\leftarrow q + h\\, \\partial H/\\partial p` through the ``velocity`` role
    (the ``position_flow`` role of any Hamiltonian whose metric gives no fused one); returns
    0 when the new position is finite, nan otherwise."""
    v = velocity_role(q, p, v, aux, PF, PI)
    check = 0.0
    for i in range(q.shape[0]):
        q[i] += h * v[i]
        # x - x is 0 for finite x and nan otherwise: the check rides along the update.
        check += q[i] - q[i]
    return check


def separable_energy_kernel(q, p, lp, grad, v, eps, aux, PF, PI):
    """Kernel of :math:`H = -\\log\\pi(q) + K(p)` (the ``energy`` role); ``v`` is scratch
    space for :math:`\\partial K/\\partial p`."""
    return -lp + kinetic_role(q, p, velocity_role(q, p, v, aux, PF, PI), aux, PF, PI)


class Hamiltonian:
    """A Hamiltonian :math:`H(q, p) = U(q) + K(p)` over a target.

    The potential energy is :math:`U(q) = -\\log\\pi(q)`; the kinetic energy and the momentum
    distribution :math:`\\propto e^{-K(p)}` are chosen by subclasses.

    Contract
    --------
    * ``potential(state)`` and ``kinetic(p, aux)`` return one value per chain;
      ``energy(state, step_size)`` is the energy the accept step uses: :math:`H` here
      (``step_size``, the step size actually integrated, matters only to a shadow
      Hamiltonian).
    * ``velocity(p, aux)`` is :math:`\\partial H/\\partial p`; the force is
      ``state.grad`` :math:`= -\\partial H/\\partial q`.
    * ``sample_momentum(rngs, aux)`` draws one momentum per chain, row ``c`` from
      ``rngs[c]``.
    * ``aux`` is the chains' auxiliary variables (``state.aux``), for Hamiltonians whose
      kinetic energy depends on a per-chain variable (a random mass); others ignore it.
    * ``compiled(dim)`` returns the compiled counterpart
      (:class:`~hamiltonia.compiled.parts.PartKernels` for the roles ``velocity``,
      ``kinetic``, ``draw_momentum`` and ``energy``), or ``None``.
    * ``update_auxiliary(state, rngs)`` is a Gibbs update of the Hamiltonian's own
      auxiliary variables at the start of an iteration (a random mass is redrawn); the
      state itself by default. ``per_chain_mass`` says whether the mass is such a variable,
      and ``inverse_mass_diagonal(aux)`` then returns it, shape ``(chains, dim)`` (``None``
      for a fixed metric).
    * ``evaluate(q)`` builds a :class:`~hamiltonia.state.PhaseState` at positions ``q`` (with
      zero momenta), evaluating the target once and turning failures into ``nan``.
    * ``n_grad_per_evaluation`` is the number of gradient evaluations ``evaluate`` costs.
    * An energy that evaluates the target (a non-separable shadow's curvature) counts its
      gradients between ``start_counting(n_chains)`` and ``counted()``, which the sampler
      adds to ``n_grad``; ``counted()`` is ``None`` by default.
    """

    n_grad_per_evaluation = 1
    per_chain_mass = False

    def __init__(self, target):
        self.target = target

    @property
    def dim(self) -> int:
        return self.target.dim

    def potential(self, state: PhaseState) -> np.ndarray:
        """:math:`U(q) = -\\log\\pi(q)`."""
        return -state.log_prob

    @abstractmethod
    def kinetic(self, p: np.ndarray, aux: dict | None = None) -> np.ndarray:
        raise NotImplementedError

    @abstractmethod
    def velocity(self, p: np.ndarray, aux: dict | None = None) -> np.ndarray:
        raise NotImplementedError

    @abstractmethod
    def sample_momentum(
        self, rngs: Sequence[np.random.Generator], aux: dict | None = None
    ) -> np.ndarray:
        raise NotImplementedError

    def energy(self, state: PhaseState, step_size=None) -> np.ndarray:
        """:math:`H(q, p)` per chain."""
        return self.potential(state) + self.kinetic(state.p, state.aux)

    def update_auxiliary(self, state: PhaseState, rngs) -> PhaseState:
        """No auxiliary variables to update: ``state`` itself."""
        return state

    def start_counting(self, n_chains: int) -> None:
        """Begin counting the gradients the energies of one iteration spend (NumPy path;
        none for a Hamiltonian whose energy does not evaluate the target)."""

    def counted(self):
        """The gradients counted since :meth:`start_counting`, per chain, or ``None``."""
        return None

    def inverse_mass_diagonal(self, aux: dict | None):
        """A fixed metric: ``None``."""
        return None

    #: Methods whose maths the compiled counterpart repeats (see
    #: :func:`hamiltonia.compiled.parts.overrides_without_kernel`).
    numeric_methods = (
        "kinetic",
        "velocity",
        "sample_momentum",
        "energy",
        "potential",
        "update_auxiliary",
        "inverse_mass_diagonal",
    )

    def compiled(self, dim: int):
        """The compiled counterpart, or ``None`` (the run then uses the NumPy path)."""
        return None

    def evaluate(self, q: np.ndarray, p: np.ndarray | None = None) -> PhaseState:
        """A phase state at ``q`` (and ``p``, zeros by default)."""
        lp, g = evaluate_target(self.target, q, with_grad=True)
        return PhaseState(q, backend.xp().zeros_like(q) if p is None else p, lp, g)
