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


#: A chain whose step-size search before warm-up ends at or below this (the unconstrained
#: coordinates' units: the initial points are drawn at scale 1, the metric is the identity)
#: has collapsed: a leapfrog step then moves it by about :math:`10^{-12}` of its scale.
COLLAPSED_STEP = 1e-12
#: Times a collapsed chain's drawn initial point is drawn again (with its search).
MAX_START_RETRIES = 20


def collapsed_steps(step: np.ndarray) -> np.ndarray:
    """Which chains' step sizes ``step`` ``(chains,)`` have collapsed: at or below
    :data:`COLLAPSED_STEP`, or :data:`~hamiltonia.diagnostics.stuck.STUCK_STEP_FACTOR`
    times or more below the chains' median (the threshold at which warm-up restarts a
    chain, :class:`~hamiltonia.tuners.WindowedMetric`); one that is not a number too."""
    from hamiltonia.diagnostics.stuck import STUCK_STEP_FACTOR

    usable = step[np.isfinite(step)]
    median = np.median(usable) if usable.size else np.inf
    return ~(step > COLLAPSED_STEP) | ~(step * STUCK_STEP_FACTOR > median)


def _searching_tuner(sampler: Sampler):
    """The sampler's dual-averaging tuner that searched the initial step size, or ``None``
    where the starts are not retried: no such tuner, or chains that move coupled (antithetic
    pairs) or in groups with parts of their own (a metric per chain)."""
    from hamiltonia.tuners.adaptation import DualAveraging

    if getattr(getattr(sampler, "reducer", None), "pairs", False):
        return None
    for tuner in sampler.tuners:
        if isinstance(tuner, DualAveraging) and tuner.find_initial and hasattr(tuner, "state"):
            return tuner
    return None


def _put_rows(phase, rows: np.ndarray, sub):
    """``phase`` with the chains ``rows`` replaced by ``sub``'s (a copy)."""
    out = phase.copy()
    for name in ("q", "p", "log_prob", "grad"):
        a = getattr(out, name)
        if a is not None:
            a[rows] = getattr(sub, name)
    for name, a in out.aux.items():
        if name in sub.aux:
            a[rows] = sub.aux[name]
    return out


def retry_collapsed_starts(sampler: Sampler, target: Target, state: ChainState, rngs) -> None:
    """Draw again the initial point of each chain whose step-size search collapsed
    (:func:`collapsed_steps`), and search its step size again there, up to
    :data:`MAX_START_RETRIES` times, with a :class:`~hamiltonia.diagnostics.checks.
    SamplingWarning` naming the chains; only for initial points the run drew itself.

    Why: a drawn point where the model is hard to integrate (a recursion that explodes, a
    funnel's neck) gives a step size of :math:`10^{-17}` or below, and warm-up then starts
    that chain at a step it cannot grow from within its first window; Stan draws a point
    again where the log density is not finite, and this does the same where the step size
    is not usable. Each chain draws from its own generator only while it is retried, so
    the other chains' streams and results do not depend on it. What is still collapsed
    after the retries is left to warm-up's restart at the first window's end."""
    tuner = _searching_tuner(sampler)
    chains = len(rngs)
    if tuner is None or chains < 1 or sampler.chain_groups(chains) is not None:
        return
    step = np.array(np.broadcast_to(np.asarray(state.step_size, dtype=float), (chains,)))
    bad = collapsed_steps(step)
    if not bad.any():
        return
    from hamiltonia._warnings import warn_at_user
    from hamiltonia.diagnostics.checks import SamplingWarning
    from hamiltonia.tuners.adaptation import find_initial_step_size

    first, tries = step.copy(), np.zeros(chains, dtype=np.int64)
    q = np.array(array_backend.to_numpy(state.phase.q), dtype=float)
    phase = state.phase
    start = 1.0 if tuner.initial_step_size is None else tuner.initial_step_size
    for _ in range(MAX_START_RETRIES):
        rows = np.flatnonzero(bad)
        tries[rows] += 1
        own = [rngs[c] for c in rows]
        for c in rows:
            q[c] = _default_start(target, rngs[c], target.dim)
        try:  # the chains of the error's message are the run's, not the retried ones'
            sub = _init(sampler, q[rows])
            for _ in range(MAX_INIT_TRIES):
                nonfinite = np.flatnonzero(~array_backend.to_numpy(sub.phase.finite))
                if not nonfinite.size:
                    break
                for k in nonfinite:
                    q[rows[k]] = _default_start(target, own[k], target.dim)
                sub = _init(sampler, q[rows])
            sub = _with_initial_momentum(sampler, sub, own)
            step[rows] = find_initial_step_size(sampler, sub, own, start)
        except ModelError as err:
            raise err.renumbered(rows) from err.__cause__
        phase = _put_rows(phase, rows, sub.phase)
        bad = collapsed_steps(step)
        if not bad.any():
            break
    state.phase = phase
    state.step_size = step
    tuner.restart(state)
    retried = np.flatnonzero(tries)
    where = "; ".join(
        f"chain {c}: {first[c]:.3g} at its first point, {step[c]:.3g} after {tries[c]} "
        f"{'redraw' if tries[c] == 1 else 'redraws'}"
        for c in retried
    )
    left = np.flatnonzero(bad)
    tail = (
        f"; still collapsed: chain{'s' if left.size > 1 else ''} "
        f"{', '.join(str(c) for c in left)} (warm-up restarts a chain that does not move "
        "from another's state at its first metric window's end)"
        if left.size
        else ""
    )
    warn_at_user(
        f"the step-size search before warm-up collapsed at the drawn initial point of "
        f"{retried.size} of {chains} chains, which were drawn again ({where}; the chains' "
        f"median step size is now {np.median(step):.3g}){tail}. The model is hard to "
        "integrate somewhere in the region its initial points are drawn from (uniform(-2, 2) "
        "in the unconstrained coordinates by default): check for a recursion that explodes "
        "or a funnel, or pass initial=...",
        SamplingWarning,
    )
