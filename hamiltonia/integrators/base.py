"""The abstract :class:`Integrator`."""

from __future__ import annotations

import numpy as np

from hamiltonia.poisson import CanonicalStructure, PoissonStructure
from hamiltonia.state import PhaseState

__all__ = ["Integrator"]


class Integrator:
    """A volume-preserving, reversible map approximating a Hamiltonian flow.

    Contract
    --------
    * ``step(hamiltonian, state, step_size)`` advances every chain by one step of size
      ``step_size`` (shape ``(chains,)``; a negative value integrates backwards) and returns a
      new :class:`~hamiltonia.state.PhaseState` without modifying ``state``.
    * ``integrate(hamiltonian, state, step_size, n_steps)`` applies ``n_steps`` steps and
      returns ``(state, n_grad)`` where ``n_grad`` counts the gradient evaluations per chain.
      Subclasses may override it to merge work between steps (as the leapfrog merges kicks).
    * ``order`` is the global order of accuracy: the energy error over a fixed time falls as
      :math:`\\varepsilon^{\\text{order}}`.
    * ``structure`` is the :class:`~hamiltonia.poisson.PoissonStructure` integrated.
    * Reversibility: integrating, negating :math:`p` (and flipping the structure), and
      integrating again returns to the start. Volume preservation: the map's Jacobian has
      determinant one. ``tests/integrators`` checks both for every integrator.

    A subclass written in plain Python works with every sampler; the default ``integrate``
    simply loops over ``step``.
    """

    order: int = 2
    n_grad_per_step: int = 1

    def __init__(self, structure: PoissonStructure | None = None):
        self.structure = CanonicalStructure() if structure is None else structure

    def step(self, hamiltonian, state: PhaseState, step_size: np.ndarray) -> PhaseState:
        raise NotImplementedError

    def flipped(self) -> Integrator:
        """The integrator of the time-reversed system: the same map for the canonical
        structure, the flipped structure otherwise (magnetic HMC integrates back with
        :math:`-G`). Reversibility means ``flipped().integrate`` from :math:`(q', -p')`
        returns :math:`(q, -p)`."""
        return self

    def integrate(self, hamiltonian, state: PhaseState, step_size: np.ndarray, n_steps: int):
        n_grad = np.zeros(state.q.shape[0], dtype=np.int64)
        for _ in range(n_steps):
            state = self.step(hamiltonian, state, step_size)
            n_grad += self.n_grad_per_step
        return state, n_grad

    def __repr__(self):
        return f"{type(self).__name__}()"
