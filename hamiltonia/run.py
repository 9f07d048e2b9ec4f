"""Running chains: :func:`sample`."""

from __future__ import annotations

import copy
import os
import time
import warnings
from pathlib import Path

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia import diagnose, resume_state
from hamiltonia._validation import as_float, check_flag, check_int
from hamiltonia.results import Result
from hamiltonia.runfile import RunFile, RunFileError, partial_dir
from hamiltonia.samplers.base import Sampler
from hamiltonia.state import ChainState, ModelError, check_reject_on, rejecting
from hamiltonia.targets.base import Target

__all__ = ["FallbackWarning", "InterruptedRunWarning", "make_rngs", "resume", "sample"]


#: Most warm-up iterations a run accepts: far beyond any adaptation schedule, a guard against
#: a typo (``warmup=10**12``) that would run for ever. Draws are bounded by memory instead.
MAX_WARMUP = 10**9


class InterruptedRunWarning(RuntimeWarning):
    """The run was interrupted (Ctrl-C): the result holds the draws made so far."""


class FallbackWarning(UserWarning):
    """A run that could have been compiled runs on the NumPy path: a part (named in the
    message) has no compiled counterpart."""


#: Initial points are drawn uniformly from (-INIT_RADIUS, INIT_RADIUS) per coordinate, as in
#: Stan, and redrawn up to MAX_INIT_TRIES times where the log density is not finite.
INIT_RADIUS = 2.0
#: Times a chain's initial point is redrawn where the log density is not finite.
MAX_INIT_TRIES = 100


def make_rngs(seed, chains: int) -> tuple[list[np.random.Generator], np.random.SeedSequence]:
    """One independent generator per chain: the children of ``SeedSequence(seed)``.

    Chain ``c`` gets child ``c`` whatever the number of chains, so a chain's draws do not
    depend on how many chains run beside it.
    """
    if isinstance(seed, np.random.SeedSequence):
        seq = seed
    elif seed is None or (
        isinstance(seed, int | np.integer) and not isinstance(seed, bool) and seed >= 0
    ):
        seq = np.random.SeedSequence(None if seed is None else int(seed))
    else:
        raise ValueError(
            f"seed must be a non-negative integer, a SeedSequence or None, got {seed!r}"
        )
    return [np.random.default_rng(child) for child in seq.spawn(chains)], seq


def _resolve_target(target) -> Target:
    from hamiltonia import targets

    if isinstance(target, str):
        return targets.get(target)
    if not isinstance(target, Target):
        raise TypeError(
            f"target must be a Target or a registered target name, got {type(target).__name__}"
        )
    return target


def _resolve_sampler(sampler, target, options) -> Sampler:
    from hamiltonia import samplers

    if isinstance(sampler, str):
        return samplers.build(sampler, target, **options)
    if isinstance(sampler, Sampler):
        if options:
            raise ValueError(
                f"sampler options ({', '.join(options)}) can only be given with a sampler name; "
                "set them on the Sampler object instead"
            )
        if sampler.target is not target:
            raise ValueError("sampler was built for a different target than the one given")
        return sampler
    raise TypeError(f"sampler must be a registered name or a Sampler, got {type(sampler).__name__}")


def _init(sampler: Sampler, q) -> ChainState:
    try:
        return sampler.init(q)
    except ModelError as err:
        raise err.during("at an initial point") from err.__cause__


def _initial_state(sampler: Sampler, target: Target, initial, rngs) -> ChainState:
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
    q = np.stack([rng.uniform(-INIT_RADIUS, INIT_RADIUS, dim) for rng in rngs])
    state = _init(sampler, q)
    for _ in range(MAX_INIT_TRIES):
        bad = ~array_backend.to_numpy(state.phase.finite)
        if not bad.any():
            return state
        for c in np.flatnonzero(bad):
            q[c] = rngs[c].uniform(-INIT_RADIUS, INIT_RADIUS, dim)
        state = _init(sampler, q)
    raise RuntimeError(
        f"could not find a finite initial point in {MAX_INIT_TRIES} tries of uniform(-2, 2); "
        "pass initial=..."
    )


class _Recorder:
    """Buffers for the retained draws and the declared statistics."""

    def __init__(self, chains: int, draws: int, dim: int, stats, checkpoint=None,
                 gradients: bool = False, sampler_dim: int | None = None):  # fmt: skip
        self.q = np.empty((chains, draws, dim))
        # The gradient of the log density at each draw (in the sampler's coordinates), for
        # a reducer that reads it.
        grad_dim = dim if sampler_dim is None else sampler_dim
        self.grads = np.empty((chains, draws, grad_dim)) if gradients else None
        self.declared = tuple(stats)
        self.stats: dict[str, np.ndarray] = {}
        self.log_weights: np.ndarray | None = None
        self.n_divergent = 0
        self.n_done = 0
        self.shape = (chains, draws)
        self.checkpoint = checkpoint  # called with the chain state after each stored block

    def record(self, it, q, info: dict, log_weight, state=None, grad=None) -> None:
        """Store iteration ``it`` (an index, or a slice for a block of iterations); ``grad``
        where the gradients are kept and were not written in place."""
        self.q[:, it] = array_backend.to_numpy(q)
        if self.grads is not None and grad is not None:
            self.grads[:, it] = array_backend.to_numpy(grad)
        for name, dtype in self.declared:
            if name not in info:
                raise KeyError(f"the sampler declared the statistic {name!r} but did not report it")
            if name not in self.stats:
                self.stats[name] = np.empty(self.shape, dtype=dtype)
            self.stats[name][:, it] = array_backend.to_numpy(info[name])
        if log_weight is not None:
            if self.log_weights is None:
                self.log_weights = np.empty(self.shape)
            self.log_weights[:, it] = array_backend.to_numpy(log_weight)
        self.n_divergent += int(np.sum(info["diverging"]))
        self.n_done = it.stop if isinstance(it, slice) else it + 1
        if self.checkpoint is not None:
            self.checkpoint(state)

    def prefill(self, previous: Result) -> None:
        """Start from the draws of an earlier, interrupted part of the same run."""
        n = previous.n_draws
        self.q[:, :n] = previous.draws
        for name, values in previous.stats.items():
            self.stats[name] = np.empty(self.shape, dtype=values.dtype)
            self.stats[name][:, :n] = values
        if previous.log_weights is not None:
            self.log_weights = np.empty(self.shape)
            self.log_weights[:, :n] = previous.log_weights
        if self.grads is not None:
            if previous.gradients is None:
                raise ValueError("the interrupted run kept no gradients to continue from")
            self.grads[:, :n] = previous.gradients
        self.n_divergent = int(np.sum(previous.stats["diverging"]))
        self.n_done = n

    def truncated(self):
        """Draws, statistics, weights and gradients of the iterations completed so far."""
        n = self.n_done
        stats = {k: v[:, :n] for k, v in self.stats.items()}
        weights = None if self.log_weights is None else self.log_weights[:, :n]
        grads = None if self.grads is None else self.grads[:, :n]
        return self.q[:, :n], stats, weights, grads


#: Most numbers (draws and statistics, all chains) one compiled chunk writes: 16 MB.
CHUNK_BUFFER_FLOATS = 2**21


class _Chunker:
    """Splits ``[start, stop)`` into chunks for the compiled path: small at first, doubling
    while a chunk takes under ``target_seconds`` (so the progress bar and persisted draws stay
    fresh while calls from Python stay rare), and cut at every tuner boundary."""

    def __init__(self, target_seconds: float = 0.1, first: int = 8, largest: int = 4096):
        self.size, self.target_seconds, self.largest = first, target_seconds, largest

    def split(self, start: int, stop: int, boundaries=()):
        cuts = sorted({b for b in boundaries if start < b < stop} | {stop})
        first = start
        for cut in cuts:
            while first < cut:
                n = min(self.size, cut - first)
                began = time.perf_counter()
                yield first, n
                if time.perf_counter() - began < self.target_seconds and n == self.size:
                    self.size = min(2 * self.size, self.largest)
                first += n


def _share_step_size(smp, state, rngs) -> None:
    """After warm-up, the secondary chain of each antithetic pair takes its primary's step
    size (the research tunes X and reuses its step size for Y) and generator state."""
    if smp.reducer.pairs and state.step_size is not None:
        step = np.array(np.broadcast_to(state.step_size, (len(rngs),)), dtype=float)
        smp.reducer.rejoin(step, rngs)
        state.step_size = step


def _step(smp, state, rngs, it, phase):
    try:
        return smp.step(state, rngs)
    except ModelError as err:
        raise err.during(f"iteration {it} of {phase}") from err.__cause__


def _run_numpy(smp, target, state, rngs, warmup, draws, rec, bar, start=0):
    for it in range(warmup):
        state, info = _step(smp, state, rngs, it, "warm-up")
        for tuner in smp.tuners:
            tuner.update(smp, state, info, it)
        bar.update(1)
    for tuner in smp.tuners:
        tuner.finalize(smp, state)
    if warmup:  # not on resume: the file holds the chains' states after it
        _share_step_size(smp, state, rngs)
    t1 = time.perf_counter()
    bar.set_description(f"{smp.name} sampling")
    for it in range(start, draws):
        state, info = _step(smp, state, rngs, it, "sampling")
        info = {**info, "step_size": state.step_size, "lp": state.phase.log_prob}
        rec.record(
            it, target.constrain(state.phase.q), info, smp.log_weight(state), state,
            state.phase.grad,
        )  # fmt: skip
        bar.update(1)
        if it % 50 == 0:
            bar.set_postfix_str(f"divergences={rec.n_divergent}", refresh=False)
    return state, t1


def _columns(layout, block: np.ndarray) -> dict:
    """The statistics of a block of compiled iterations, by name, in their declared dtypes."""
    return {
        name: block[..., i] > 0 if dtype == "bool" else block[..., i].astype(dtype)
        for i, (name, dtype) in enumerate(layout.stats)
    }


def _run_compiled(plan, smp, target, state, rngs, warmup, draws, rec, bar, start=0,
                  chunker=None):  # fmt: skip
    chains, dim = state.phase.q.shape
    n_stats = len(plan.layout().stats)
    if chunker is None:
        # Chunks grow until one lasts a tenth of a second, within a buffer of bounded size:
        # on a cheap target a fixed cap of 4096 iterations made the calls from Python between
        # chunks 15 % of the sampling time.
        largest = CHUNK_BUFFER_FLOATS // (chains * (dim + n_stats))
        chunker = _Chunker(largest=int(min(max(largest, 64), 2**20)))
    buf_q = np.empty((chains, chunker.largest, dim))
    # Draws go through the target's constrain into the recorder, which may hold another
    # number of reported values than the sampler's dimension.
    buf_s = np.empty((chains, chunker.largest, n_stats))
    boundaries = [b for tuner in smp.tuners for b in tuner.boundaries(warmup)]
    for first, n in chunker.split(0, warmup, boundaries):
        plan.run(state, rngs, n, True, buf_q[:, :n], buf_s[:, :n])
        for tuner in smp.tuners:
            tuner.update_chunk(smp, state, buf_q[:, :n], first)
        bar.update(n)
    for tuner in smp.tuners:
        tuner.finalize(smp, state)
    if warmup:  # not on resume: the file holds the chains' states after it
        _share_step_size(smp, state, rngs)
    t1 = time.perf_counter()
    bar.set_description(f"{smp.name} sampling")
    for first, n in chunker.split(start, draws):
        block = slice(first, first + n)
        grads = None if rec.grads is None else rec.grads[:, block]
        layout = plan.run(state, rngs, n, False, buf_q[:, :n], buf_s[:, :n], grads)
        info = _columns(layout, buf_s[:, :n])
        # Importance weights travel in a statistics column of the kernel.
        weights = info.pop(getattr(smp.reducer, "column", None), None)
        rec.record(block, target.constrain(buf_q[:, :n]), info, weights, state)
        bar.update(n)
        bar.set_postfix_str(f"divergences={rec.n_divergent}", refresh=False)
    return state, t1


def _choose_plan(smp, compiled):
    if compiled is False:
        return None
    from hamiltonia.compiled import NotCompilable, plan_for

    try:
        return plan_for(smp)
    except NotCompilable as err:
        if compiled is True:
            raise ValueError(f"compiled=True but {err}") from None
        warnings.warn(
            f"running on the NumPy path (slower): {err}; pass compiled=False to silence this",
            FallbackWarning,
            stacklevel=4,
        )
        return None


def sample(
    target,
    sampler="nuts",
    *,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed=None,
    initial=None,
    progress: bool = True,
    compiled: bool | None = None,
    output=None,
    overwrite: bool = False,
    checkpoint_seconds: float = 60.0,
    backend: str | None = None,
    reject_on=(),
    **options,
) -> Result:
    """Run warm-up then sampling for several chains.

    Parameters
    ----------
    target : Target or str
        The target, or the name of a registered one.
    sampler : str or Sampler
        A registered sampler name (see :func:`hamiltonia.samplers.names`) built with
        ``options``, or a ready :class:`~hamiltonia.samplers.Sampler`. Default ``"nuts"``
        (the no-U-turn sampler with a diagonal metric adapted in warm-up, as Stan and
        NumPyro); the fixed-length ``"hmc"`` of the research protocols is one name away.
    chains : int
        Number of chains (>= 1).
    warmup : int
        Warm-up (adaptation) iterations per chain, in ``[0, 10**9]``, discarded.
    draws : int
        Retained iterations per chain (>= 1).
    seed : int, SeedSequence or None
        Chain ``c`` uses child ``c`` of ``SeedSequence(seed)``: the same seed gives the same
        draws. ``None`` draws fresh entropy (recorded in ``result.attrs["seed_entropy"]``).
    initial : array, optional
        Initial positions, shape ``(dim,)`` or ``(chains, dim)``. By default each chain draws
        uniform(-2, 2) coordinates from its own generator, redrawn where the log density or
        gradient is not finite.
    progress : bool
        Show a tqdm progress bar.
    compiled : bool or None
        Run whole chains in compiled kernels (see :mod:`hamiltonia.compiled`). ``None``
        (default) compiles when every part of the sampler allows it, ``True`` requires it
        (``ValueError`` naming the part that does not), ``False`` forces the NumPy path.
    output : path, optional
        Write the finished run to this netCDF file (see :meth:`Result.save`). The path is
        checked before any work (its folder exists and is writable, it is not a folder, it
        does not exist unless ``overwrite``, no other process writes it). While the run goes
        on, its draws are appended every ``checkpoint_seconds`` to the folder
        ``output.partial`` (:mod:`hamiltonia.runfile`: each block and manifest written
        atomically, so a kill at any moment leaves a run that :func:`load` reads and
        :func:`resume` continues). An interrupted run (Ctrl-C) returns the draws made so far
        with a warning instead of losing them.
    overwrite : bool
        Replace an existing ``output`` (or an unfinished run there). Default ``False``: an
        existing file is refused before any work, and an unfinished one points to
        :func:`resume`.
    checkpoint_seconds : float
        Seconds between checkpoints of ``output`` (default 60). A checkpoint writes the new
        draws only, so frequent ones cost little.
    backend : str, optional
        Array backend for this run: ``"numpy"``, ``"cupy"`` or ``"array_api_strict"``
        (default: the current one, see :func:`hamiltonia.backend.set_backend`).
    reject_on : exception class or tuple of them
        Exceptions of the target that mean "outside the support", as Stan's domain errors:
        a proposal whose log density or gradient raises one of them is rejected and recorded
        as divergent. Any other exception from the target is a bug in the model and stops
        the run with :class:`~hamiltonia.state.ModelError`, which names the chain, the
        iteration and the position and chains the original exception. Default: none (a model
        that means "outside the support" can also return ``-inf``).
    **options
        Options of the named sampler (for ``hmc``: ``n_steps``, ``step_size``,
        ``target_accept``, ``adapt_step_size``, ``metric``). Unknown options raise
        ``ValueError`` naming them.

    Returns
    -------
    Result
    """
    reject_on = check_reject_on(reject_on)
    with array_backend.using(backend), rejecting(reject_on):
        return _sample(
            target, sampler, chains=chains, warmup=warmup, draws=draws, seed=seed,
            initial=initial, progress=progress, compiled=compiled, output=output,
            overwrite=overwrite, checkpoint_seconds=checkpoint_seconds, options=options,
        )  # fmt: skip


def _json_safe(value):
    """``value`` with everything JSON cannot hold written as its ``str``."""
    import json

    return json.loads(json.dumps(value, default=str))


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _check_memory(chains: int, draws: int, dim: int, n_stats: int) -> None:
    """Refuse, before any work, a run whose draws cannot fit in this machine's memory."""
    needed = 8 * chains * draws * (dim + n_stats + 1)
    available = _physical_memory()
    if available is not None and needed > available:
        raise ValueError(
            f"chains={chains} x draws={draws} x {dim} parameters need {needed // 2**30:,} GiB "
            f"for the draws and statistics, more than this machine's {available / 2**30:.3g} "
            "GiB: lower draws or chains"
        )


def _sample(target, sampler, *, chains, warmup, draws, seed, initial, progress, compiled,
            output, checkpoint_seconds, options, overwrite=False, resume_from=None,
            continuing=False):  # fmt: skip
    chains = check_int(chains, "chains", minimum=1)
    warmup = check_int(warmup, "warmup", minimum=0, maximum=MAX_WARMUP)
    draws = check_int(draws, "draws", minimum=1)
    if compiled is not None:
        compiled = check_flag(compiled, "compiled", allow_none=True)
    checkpoint_seconds = as_float(checkpoint_seconds, "checkpoint_seconds", "a number >= 0")
    if not checkpoint_seconds >= 0:
        raise ValueError(f"checkpoint_seconds must be >= 0, got {checkpoint_seconds!r}")
    requested = (target, sampler)
    target = _resolve_target(target)
    name = array_backend.get_backend()
    if name not in target.backends:
        raise ValueError(
            f"target {type(target).__name__} computes with {', '.join(target.backends)} only; "
            f"it cannot run on backend {name!r}"
        )
    if not isinstance(overwrite, bool):
        raise ValueError(f"overwrite must be True or False, got {overwrite!r}")
    smp = _resolve_sampler(sampler, target, options)
    _check_memory(chains, draws, len(target.reported_names), len(smp.stats()))
    plan = _choose_plan(smp, compiled)
    if smp.reducer.pairs:
        smp.reducer.pairing(chains)  # an even number of chains, or the error naming it
        # The two chains of a pair draw the same numbers (hamiltonia.antithetic).
        primaries, seq = make_rngs(seed, chains // 2)
        rngs = [g for rng in primaries for g in (rng, copy.deepcopy(rng))]
    else:
        rngs, seq = make_rngs(seed, chains)
    # The output is checked, and locked, before any work: a run is never lost at its end.
    run_file = None
    if output is not None:
        run_file = RunFile.open(output, overwrite=overwrite, continuing=continuing)
    try:
        return _run(target, smp, plan, rngs, seq, requested, options, run_file, chains=chains,
                    warmup=warmup, draws=draws, initial=initial, progress=progress,
                    checkpoint_seconds=checkpoint_seconds, resume_from=resume_from)  # fmt: skip
    finally:
        if run_file is not None:
            run_file.close()


def _run(target, smp, plan, rngs, seq, requested, options, run_file, *, chains, warmup, draws,
         initial, progress, checkpoint_seconds, resume_from):  # fmt: skip
    from tqdm.auto import tqdm

    rec = None
    if resume_from is None:
        state = _initial_state(smp, target, initial, rngs)
        start = 0
        attrs = {
            "seed_entropy": str(seq.entropy),
            "chains": chains,
            "warmup": warmup,
            "draws": draws,
            "compiled": plan is not None,
            "options": {
                k: (v if np.isscalar(v) or v is None else repr(v)) for k, v in options.items()
            },
            "target_params": getattr(target, "registered_params", {}),
            # The refresh's memory rho (0: a fresh momentum each iteration), which the
            # E-BFMI check reads.
            "momentum_memory": float(getattr(getattr(smp, "refresh", None), "rho", 0.0)),
            # Chains 2k and 2k+1 are an antithetic pair (hamiltonia.antithetic); [] if none.
            "antithetic_pairs": smp.reducer.pairing(chains),
        }
        if target.blocks is not None:
            # Named blocks with shapes and dims: the ArviZ variables of the draws.
            attrs["blocks"] = target.blocks
            attrs["coords"] = target.coords
        order = getattr(smp.reducer, "order", None)
        if smp.reducer.records_gradients and order is not None:
            attrs["control_variates"] = order
    else:
        previous, info = resume_from
        for rng, rng_state in zip(rngs, info["rng_states"], strict=True):
            rng.bit_generator.state = rng_state
        resume_state.restore_metric(smp, info.get("metric"))
        state = smp.init(np.asarray(info["q"]))
        if "log_prob" in info:
            state.phase = resume_state.restore_phase(info)
        state.step_size = np.asarray(info["step_size"], dtype=float)
        smp.restore_extra_state(info.get("sampler_state", {}))
        start = previous.n_draws
        attrs = {k: v for k, v in previous.attrs.items() if k not in ("complete", "draws_done")}
        attrs["compiled"] = plan is not None
    times = {"t0": time.perf_counter(), "t1": None, "saved": time.perf_counter(), "resume": None}

    def build_result(complete: bool) -> Result:
        q, stats, weights, grads = rec.truncated()
        now = time.perf_counter()
        t1 = times["t1"] if times["t1"] is not None else now
        warmup_seconds, sampling_seconds = t1 - times["t0"], now - t1
        if resume_from is not None:
            warmup_seconds = resume_from[0].warmup_seconds
            sampling_seconds += resume_from[0].sampling_seconds
        return Result(
            draws=q,
            stats=stats,
            names=target.reported_names,
            log_weights=weights,
            gradients=grads,
            sampler=smp.name,
            target=getattr(target, "registered_name", type(target).__name__),
            warmup_seconds=warmup_seconds,
            sampling_seconds=sampling_seconds,
            attrs={
                **attrs,
                "complete": complete,
                "draws_done": rec.n_done,
                "resume": None if complete else times["resume"],
            },
            _target=target,
        )

    def persist() -> None:
        """Append the draws made since the last checkpoint to the unfinished run."""
        partial = build_result(complete=False)
        meta = {
            "names": list(partial.names),
            "sampler": partial.sampler,
            "target": partial.target,
            "warmup_seconds": partial.warmup_seconds,
            "sampling_seconds": partial.sampling_seconds,
            "attrs": _json_safe(partial.attrs),
        }
        run_file.append(partial.draws, partial.stats, partial.log_weights, meta, partial.gradients)
        times["saved"] = time.perf_counter()

    def checkpoint(current):
        if times["t1"] is None:
            times["t1"] = time.perf_counter()
        if run_file is None:
            return
        # The state after the last stored iteration, from which resume() continues exactly.
        times["resume"] = resume_state.capture(*requested, options, current, rngs, smp)
        if time.perf_counter() - times["saved"] >= checkpoint_seconds:
            persist()

    rec = _Recorder(
        chains, draws, len(target.reported_names), smp.stats(), checkpoint,
        smp.reducer.records_gradients, target.dim,
    )  # fmt: skip
    if resume_from is not None:
        rec.prefill(resume_from[0])
    total = warmup + draws if resume_from is None else draws - start
    bar = tqdm(total=total, disable=not progress, desc=f"{smp.name} warmup", unit="it")
    try:
        if resume_from is None:
            try:
                for tuner in smp.tuners:
                    tuner.start(smp, state, warmup, rngs)
            except ModelError as err:
                raise err.during("in the step-size search before warm-up") from err.__cause__
            # Where warm-up started from: diagnose() reports a step size that collapsed.
            attrs["step_size_initial"] = np.broadcast_to(
                np.asarray(state.step_size, dtype=float), (chains,)
            ).tolist()
        run_warmup = warmup if resume_from is None else 0
        if plan is None:
            state, times["t1"] = _run_numpy(
                smp, target, state, rngs, run_warmup, draws, rec, bar, start
            )
        else:
            with plan:
                state, times["t1"] = _run_compiled(
                    plan, smp, target, state, rngs, run_warmup, draws, rec, bar, start
                )
    except KeyboardInterrupt:
        if rec.n_done == 0:
            raise
        result = build_result(complete=False)
        if run_file is not None:
            persist()
        output = None if run_file is None else run_file.path
        warnings.warn(
            f"interrupted after {rec.n_done} of {draws} draws per chain; returning those"
            + (f" (saved to {output}; continue with hamiltonia.resume)" if output else ""),
            InterruptedRunWarning,
            stacklevel=4,
        )
        return result
    except BaseException:
        # Whatever stopped the run, the draws made so far stay on disk.
        if run_file is not None and rec.n_done > run_file.written:
            persist()
        raise
    finally:
        bar.close()
    result = build_result(complete=True)
    if run_file is not None:
        run_file.finish(result.save)
    # After the file is safe: a user who turns warnings into errors still has the run.
    diagnose.warn(result.diagnose(), stacklevel=4)
    return result


def resume(path, *, progress: bool = True, output=None, checkpoint_seconds: float = 60.0,
           backend: str | None = None, reject_on=(),
           overwrite: bool = False) -> Result:  # fmt: skip
    """Continue an interrupted run saved by :func:`sample` with ``output=``.

    The run continues from the state after its last saved draw, with the generators, step
    sizes and metric it had then, so the finished draws equal those of an uninterrupted run
    with the same seed. Needs a run of registered target and sampler names with plain
    options (the file then records how to rebuild them); the continuation is written to
    ``output`` (default: ``path`` itself; another existing file is replaced only with
    ``overwrite=True``). ``reject_on`` is as in :func:`sample` (exception classes are not
    stored in the file: give them again).
    """
    from hamiltonia.results import load

    previous = load(path)
    info = previous.attrs.get("resume")
    if previous.attrs.get("complete", True):
        raise ValueError(f"{path} holds a complete run: nothing to resume")
    if not info:
        raise ValueError(
            f"{path} cannot be resumed: the run was not built from registered target and "
            "sampler names with plain options"
        )
    info = resume_state.validate(info, previous, path)
    try:
        target = previous.get_target()
        # The options go through the sampler's own validation, as in sample().
        _resolve_sampler(info["sampler"], target, dict(info["options"]))
    except (KeyError, TypeError, ValueError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        raise RunFileError(f"{path} cannot be resumed: {message}") from None
    reject_on = check_reject_on(reject_on)
    target_path = Path(path if output is None else output)
    # Appending to the unfinished run in place; to another output, or from a file of an
    # earlier version (no .partial folder), the draws so far are written there anew.
    continuing = target_path == Path(path) and partial_dir(path).exists()
    with array_backend.using(backend), rejecting(reject_on):
        return _sample(
            target, info["sampler"], chains=previous.n_chains, warmup=0,
            draws=int(previous.attrs["draws"]), seed=None, initial=None, progress=progress,
            compiled=bool(previous.attrs.get("compiled", False)), output=target_path,
            overwrite=overwrite or target_path == Path(path), checkpoint_seconds=checkpoint_seconds,
            options=dict(info["options"]), resume_from=(previous, info), continuing=continuing,
        )  # fmt: skip
