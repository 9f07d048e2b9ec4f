"""The chains' initial state (:func:`hamiltonia.runner.run.sample`'s ``initial``): the
positions given, checked, or drawn per chain from its own generator (the target's initial
point, or uniform coordinates redrawn where the log density is not finite), and the initial
momentum of a refresh that keeps it."""

from __future__ import annotations

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia.samplers.base import Sampler
from hamiltonia.state import ChainState, ModelError
from hamiltonia.targets.base import Target

#: Initial points are drawn uniformly from (-INIT_RADIUS, INIT_RADIUS) per coordinate, as in
#: Stan, and redrawn up to MAX_INIT_TRIES times where the log density is not finite.
INIT_RADIUS = 2.0
#: Times a chain's initial point is redrawn where the log density is not finite.
MAX_INIT_TRIES = 100


def _init(sampler: Sampler, q) -> ChainState:
    try:
        return sampler.init(q)
    except ModelError as err:
        raise err.during("at an initial point") from err.__cause__


def _default_start(target: Target, rng, dim: int) -> np.ndarray:
    """The target's own initial point (:meth:`~hamiltonia.Target.initial_point`), or
    uniform(-2, 2) coordinates."""
    q = target.initial_point(rng)
    if q is None:
        return rng.uniform(-INIT_RADIUS, INIT_RADIUS, dim)
    return np.asarray(q, dtype=float).reshape(dim)


def _initial_state(sampler: Sampler, target: Target, initial, rngs) -> ChainState:
    return _with_initial_momentum(sampler, _initial_positions(sampler, target, initial, rngs),
                                  rngs)  # fmt: skip


def _with_initial_momentum(sampler: Sampler, state: ChainState, rngs) -> ChainState:
    """``state`` with a momentum drawn from the kinetic energy's distribution, where the
    sampler's refresh may keep it (:attr:`~hamiltonia.MomentumRefresh.keeps_momentum`: a
    partial or a tested refresh), as its stationary distribution has it: from :math:`p = 0`
    (the initial state's) a partial refresh would start with too little momentum, and a
    refresh tested against a shadow Hamiltonian could be refused for ever, the chain never
    leaving its initial point. The secondary chain of an antithetic pair takes the momentum
    negated, as its refreshes do."""
    if not getattr(getattr(sampler, "refresh", None), "keeps_momentum", False):
        return state
    p = sampler.hamiltonian.sample_momentum(rngs, state.phase.aux)
    mirror = sampler.reducer.mirrored(len(rngs))
    if np.any(mirror):
        p = array_backend.xp().where(array_backend.asmask(mirror)[:, None], -p, p)
    state.phase = state.phase.with_momentum(p)
    return state


def _initial_positions(sampler: Sampler, target: Target, initial, rngs) -> ChainState:
    chains, dim = len(rngs), target.dim
    if initial is not None:
        q = target.unconstrain(initial, chains)
        if not np.all(np.isfinite(q)):
            raise ValueError("initial must contain only finite values")
        state = _init(sampler, q)
        bad = np.flatnonzero(~array_backend.to_numpy(state.phase.finite))
        if bad.size:
            raise ValueError(
                f"initial: the log density or its gradient is not finite at the initial point "
                f"of chain {int(bad[0])}"
            )
        return state
    q = np.stack([_default_start(target, rng, dim) for rng in rngs])
    state = _init(sampler, q)
    for _ in range(MAX_INIT_TRIES):
        bad = ~array_backend.to_numpy(state.phase.finite)
        if not bad.any():
            return state
        for c in np.flatnonzero(bad):
            q[c] = _default_start(target, rngs[c], dim)
        state = _init(sampler, q)
    raise RuntimeError(
        f"could not find a finite initial point in {MAX_INIT_TRIES} tries of uniform(-2, 2); "
        "pass initial=..."
    )
