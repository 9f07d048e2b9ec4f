"""The abstract :class:`Integrator`."""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from hamiltonia import backend
from hamiltonia.state import PhaseState
from hamiltonia.structures.base import CanonicalStructure, PoissonStructure

__all__ = ["Integrator", "per_chain_lengths"]


def per_chain_lengths(n_steps, n_chains: int) -> np.ndarray:
    """``n_steps`` (one int, or one per chain) as an int64 array of shape ``(n_chains,)``."""
    lengths = np.asarray(n_steps, dtype=np.int64)
    if lengths.ndim == 0:
        return np.full(n_chains, int(lengths), dtype=np.int64)
    if lengths.shape != (n_chains,):
        raise ValueError(
            f"n_steps must be one int or one per chain ({n_chains}), got {lengths.shape}"
        )
    return lengths


class Integrator:
    """A volume-preserving, reversible map approximating a Hamiltonian flow.

    Contract
    --------
    * ``step(hamiltonian, state, step_size)`` advances every chain by one step of size
      ``step_size`` (shape ``(chains,)``; a negative value integrates backwards) and returns a
      new :class:`~hamiltonia.state.PhaseState` without modifying ``state``.
    * ``integrate(hamiltonian, state, step_size, n_steps)`` applies ``n_steps`` steps (one
      int, or one per chain: chain ``c`` stops after ``n_steps[c]``) and returns
      ``(state, n_grad)`` where ``n_grad`` counts the gradient evaluations per chain.
      Subclasses may override it to merge work between steps (as the splittings merge kicks).
    * ``order`` is the global order of accuracy: the energy error over a fixed time falls as
      :math:`\\varepsilon^{\\text{order}}`.
    * ``structure`` is the :class:`~hamiltonia.structures.base.PoissonStructure` integrated; its
      ``kick`` and ``drift`` flows are what an integrator composes.
    * Reversibility: integrating, negating :math:`p` (and reversing the structure's
      auxiliary variables, ``structure.reverse``), and integrating again returns to the
      start. Volume preservation: the map's Jacobian has
      determinant one. ``tests/integrators`` checks both for every registered integrator.
    * ``stats()`` declares per-iteration statistics (a fixed-point count); on the NumPy
      path the sampler calls ``start_counting(n_chains)`` before each transition and
      collects ``counted()`` after it, and a compiled ``integrate`` adds to its columns.
    * ``compiled(dim)`` returns the compiled counterpart (the ``integrate`` role), or
      ``None``: the run then uses the NumPy path.
    * ``randomise(state, rngs)`` draws the integrator's random choices for the coming
      trajectory into ``state.aux`` (chain ``c`` from ``rngs[c]``; the ``randomise`` role on
      the compiled path); ``reverse(state)`` maps those choices to the ones that integrate
      the reversed trajectory, so that integrating, reversing (momentum, structure and
      integrator) and integrating again returns to the start. Both do nothing by default.
    * ``check(hamiltonian)`` refuses a Hamiltonian the integrator cannot integrate (a split
      integrator needs a target split into as many components), naming both.

    A subclass written in plain Python works with every sampler; the default ``integrate``
    loops over ``step``.
    """

    order: int = 2
    n_grad_per_step: int = 1
    #: Methods whose maths a compiled counterpart repeats.
    numeric_methods = ("step", "integrate")
    #: Whether the integrator follows ``structure`` (an integrator that ignores it may only
    #: be used with the canonical structure).
    uses_structure: bool = False

    def __init__(self, structure: PoissonStructure | None = None):
        self.structure = CanonicalStructure() if structure is None else structure
        if not isinstance(self.structure, PoissonStructure):
            raise TypeError(
                f"structure must be a PoissonStructure, got {type(self.structure).__name__}"
            )
        if not self.structure.is_canonical and not self.uses_structure:
            raise ValueError(
                f"integrator {type(self).__name__} ignores the Poisson structure and cannot "
                f"integrate the non-canonical {type(self.structure).__name__}"
            )

    @abstractmethod
    def step(self, hamiltonian, state: PhaseState, step_size: np.ndarray) -> PhaseState:
        raise NotImplementedError

    def integrate(self, hamiltonian, state: PhaseState, step_size: np.ndarray, n_steps):
        lengths = per_chain_lengths(n_steps, state.q.shape[0])
        n_grad = np.zeros(state.q.shape[0], dtype=np.int64)
        finite = np.ones(state.q.shape[0], dtype=bool)
        for i in range(int(lengths.max(initial=0))):
            # A chain stops at its first non-finite state, which it keeps (the proposal is
            # then rejected as divergent), as the compiled kernels stop: integrating on from
            # nan could come back to finite numbers and be accepted.
            running = (i < lengths) & finite
            if not running.any():
                break
            moved = self.step(hamiltonian, state, step_size)
            state = moved if running.all() else moved.select(backend.asmask(running), state)
            n_grad += self.n_grad_per_step * running
            finite &= backend.to_numpy(state.finite)
        return state, n_grad

    def randomise(self, state: PhaseState, rngs) -> PhaseState:
        """``state`` with this iteration's random choices of the integrator (none by
        default)."""
        return state

    def reverse(self, state: PhaseState) -> PhaseState:
        """``state`` with the integrator's choices reversed (unchanged by default)."""
        return state

    def check(self, hamiltonian) -> None:
        """Raise if ``hamiltonian`` cannot be integrated by this integrator (any can, by
        default)."""

    def stats(self) -> tuple[tuple[str, str], ...]:
        """The per-iteration statistics the integrator records (none by default)."""
        return ()

    def start_counting(self, n_chains: int) -> None:
        """Begin recording this iteration's statistics (NumPy path; with ``stats()``)."""

    def counted(self) -> dict:
        """This iteration's statistics by name, one value per chain."""
        return {}

    def compiled(self, dim: int):
        return None

    def __repr__(self):
        return f"{type(self).__name__}()"
