"""The abstract :class:`Sampler`: one Markov transition for a batch of chains."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np

from hamiltonia._validation import check_positive
from hamiltonia.state import ChainState

__all__ = ["BASE_STATS", "STAT_NAMES", "Sampler"]

#: Per-iteration statistics every sampler reports, with their dtypes (ArviZ
#: ``sample_stats`` names where they exist); parts may declare more (:meth:`Sampler.stats`).
BASE_STATS = (
    ("accepted", "bool"),
    ("acceptance_rate", "float64"),
    ("energy", "float64"),
    ("diverging", "bool"),
    ("n_grad", "int64"),
    ("n_steps", "int64"),
    ("step_size", "float64"),
    ("lp", "float64"),
)
STAT_NAMES = tuple(name for name, _ in BASE_STATS)


class Sampler:
    """A Markov kernel on a target, applied to all chains at once.

    Contract
    --------
    * ``init(positions)`` returns a :class:`~hamiltonia.state.ChainState` at ``positions``
      (shape ``(chains, dim)``).
    * ``step(chain, rngs)`` returns ``(chain, info)``: the next state and a dict of per-chain
      arrays with at least ``accepted``, ``acceptance_rate``, ``energy``, ``diverging``,
      ``n_grad`` and ``n_steps``. Chain ``c`` draws only from ``rngs[c]``.
    * ``probe_acceptance(chain, step_size, rngs)`` returns the acceptance probability of one
      trial move with the given per-chain step sizes, without moving the chains (used to find
      an initial step size).
    * ``tuners`` adapt the sampler during warm-up; ``reducer`` turns draws into estimates.
    * ``log_weight(chain)`` returns per-chain log importance weights, or ``None``.
    * ``stats()`` declares every per-iteration statistic ``step`` reports, as
      ``(name, dtype)`` pairs (``lp`` and ``step_size`` are added by the run loop); all
      of them reach ``result.stats``, the netCDF file and ``to_datatree()``.
    * ``chain_groups(chains)`` and ``parts_of(group)``: a sampler whose chains move with
      parts of their own (a metric adapted per chain,
      :class:`~hamiltonia.samplers.composition.PerChainMetricSampler`) names its groups of
      chains, each of which moves as a run of its own, and installs a group's parts for the
      code that runs one group at a time (the compiled plan, the step-size search). By
      default every chain moves with the sampler's own parts: ``None``.
    """

    name: str = "sampler"

    def __init__(self, target, *, step_size=None, tuners=(), reducer=None):
        from hamiltonia.reducers.base import VarianceReducer

        self.target = target
        self.initial_step_size = (
            None if step_size is None else check_positive(step_size, "step_size")
        )
        self.tuners = list(tuners)
        self.reducer = VarianceReducer() if reducer is None else reducer

    def _initial_step_sizes(self, n: int) -> np.ndarray:
        return np.full(n, 1.0 if self.initial_step_size is None else self.initial_step_size)

    def init(self, positions: np.ndarray) -> ChainState:
        raise NotImplementedError

    def step(self, chain: ChainState, rngs: Sequence[np.random.Generator]):
        raise NotImplementedError

    def probe_acceptance(self, chain: ChainState, step_size, rngs) -> np.ndarray:
        raise NotImplementedError

    def stats(self) -> tuple[tuple[str, str], ...]:
        """The declared per-iteration statistics, ``(name, dtype)``."""
        return BASE_STATS

    def extra_state(self) -> dict:
        """Internal state beyond the chains' (counters and the like), as JSON-ready values,
        saved with a partial run so that :func:`hamiltonia.resume` continues exactly."""
        return {}

    def restore_extra_state(self, state: dict) -> None:
        """Restore what :meth:`extra_state` returned (after :meth:`init`)."""

    def select_extra_state(self, state: dict, chains) -> dict:
        """The part of an :meth:`extra_state` that a run of the chains ``chains`` alone needs
        (an executor's task): all of it by default, where the state is shared."""
        return state

    def chain_groups(self, chains: int) -> list[list[int]] | None:
        """The ``chains`` chains in groups (in order, each a list of chain numbers) that move
        as runs of their own, with parts of their own; ``None`` (the default): every chain
        moves with the sampler's parts, all at once."""
        return None

    def parts_of(self, group) -> contextlib.AbstractContextManager:
        """A context in which the sampler's parts are those of the chains ``group`` (one of
        :meth:`chain_groups`) and the sampler moves them as a run of their own; nothing to
        install by default."""
        return contextlib.nullcontext()

    def log_weight(self, chain: ChainState):
        return self.reducer.log_weights(self, chain.phase, chain.step_size)

    @property
    def weighted(self) -> bool:
        """Whether the draws carry importance weights (the reducer supplies them)."""
        from hamiltonia.reducers.base import gives_weights

        return gives_weights(self.reducer)

    def __repr__(self):
        return f"{type(self).__name__}(target={self.target!r})"
