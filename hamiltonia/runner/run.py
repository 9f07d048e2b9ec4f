"""Running chains: :func:`sample`."""

from __future__ import annotations

import contextlib
import copy
import shutil
import time
import warnings
from pathlib import Path

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia._system import physical_memory as _physical_memory
from hamiltonia._validation import MAX_WARMUP, as_float, check_flag, check_int
from hamiltonia.diagnostics import checks as diagnose
from hamiltonia.results import Result
from hamiltonia.results.runfile import RunFile, RunFileError, partial_dir
from hamiltonia.runner import resume_state
from hamiltonia.runner.loop import FallbackWarning, Recorder, choose_path, run_chains
from hamiltonia.runner.thinning import kept, thin_statistics
from hamiltonia.samplers.base import Sampler
from hamiltonia.state import _REJECT_ON, ChainState, ModelError, check_reject_on, rejecting
from hamiltonia.targets.base import Target

__all__ = [
    "FallbackWarning",
    "InterruptedRunWarning",
    "WarmupInterrupted",
    "make_rngs",
    "resume",
    "sample",
]


#: Seconds between two checkpoints of a run's output by default (``checkpoint_seconds``).
CHECKPOINT_SECONDS = 60.0


class InterruptedRunWarning(RuntimeWarning):
    """The run was interrupted (Ctrl-C): the result holds the draws made so far."""


class WarmupInterrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C) during warm-up, or while an executor's tasks ran
    (their draws come back only at the end), and its output holds the state reached: no
    draws to return, but :func:`resume` continues it from there.

    Attributes
    ----------
    path : pathlib.Path
        The run's output, whose ``.partial`` folder holds the warm-up's checkpoint.
    done, warmup : int
        The warm-up iterations made (those of the checkpoint) and planned.
    """

    def __init__(self, path, done: int, warmup: int):
        super().__init__(
            f"interrupted after {done} of {warmup} warm-up iterations; saved to {path} "
            f"(continue with hamiltonia.resume({str(path)!r}))"
        )
        self.path, self.done, self.warmup = path, done, warmup


#: Initial points are drawn uniformly from (-INIT_RADIUS, INIT_RADIUS) per coordinate, as in
#: Stan, and redrawn up to MAX_INIT_TRIES times where the log density is not finite.
INIT_RADIUS = 2.0
#: Times a chain's initial point is redrawn where the log density is not finite.
MAX_INIT_TRIES = 100


def make_rngs(seed, chains: int) -> tuple[list[np.random.Generator], np.random.SeedSequence]:
    """One independent generator per chain: the children of ``SeedSequence(seed)``.

    Chain ``c`` gets child ``c`` whatever the number of chains, so a chain's draws do not
    depend on how many chains run beside it. A ``SeedSequence`` given is copied, not
    advanced: the same object gives the same draws every time, as its entropy does.
    """
    if isinstance(seed, np.random.SeedSequence):
        seq = np.random.SeedSequence(
            seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size
        )
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


def _sample_on(executor, smp, target, state, rngs, rec, bar, compiled, thin, run_file,
               checkpoint_seconds, warmup, fresh=True):  # fmt: skip
    """The sampling iterations as tasks of one chain (one antithetic pair) on ``executor``,
    from the state after warm-up; their draws go to ``rec``. Returns the tasks continued
    from a checkpoint (a worker died), by index, with the draw they continued from, the
    number of checkpoints the tasks wrote, and the folder of those checkpoints (to remove
    once the run's own file is safe)."""
    from hamiltonia.runner import executors

    chains = rec.shape[0]
    units = smp.reducer.pairing(chains) or [[c] for c in range(chains)]
    info = resume_state.chain_state(state, rngs, smp)
    output = None if run_file is None else run_file.path
    folder = executors.task_folder(output, fresh)
    try:
        return _sample_in_folder(executor, smp, target, rec, bar, compiled, thin,
                                 checkpoint_seconds, warmup, units, info, folder)  # fmt: skip
    except BaseException:
        if output is None:
            # No run file names this temporary folder: nothing can resume from it.
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _sample_in_folder(executor, smp, target, rec, bar, compiled, thin, checkpoint_seconds,
                      warmup, units, info, folder):  # fmt: skip
    """:func:`_sample_on`'s tasks (the chains ``units``, from their state ``info`` after
    warm-up), checkpointing in ``folder``; returns as it does."""
    from hamiltonia.runner import executors

    chains, draws = rec.shape
    common = dict(target=target, sampler=smp, draws=draws, thin=thin, compiled=compiled,
                  folder=folder, checkpoint_seconds=checkpoint_seconds,
                  reject_on=_REJECT_ON.get(), backend=array_backend.get_backend())  # fmt: skip
    tasks = [
        executors.ChainTask(
            index=k, chains=tuple(unit), state=resume_state.select_chains(info, unit), **common
        )
        for k, unit in enumerate(units)
    ]
    bar.set_description(f"{smp.name} sampling ({executor.name})")

    def progress(done: list) -> None:
        per_chain = sum(d * len(t.chains) for d, t in zip(done, tasks, strict=True)) / chains
        bar.n = warmup + int(per_chain * thin)
        bar.refresh()

    results = executor.map(tasks, progress)
    order = [c for unit in units for c in unit]
    if order != list(range(chains)):
        raise RuntimeError(f"tasks hold chains {order}, not 0..{chains - 1} in order")
    joined = {key: [r[key] for r in results] for key in results[0]}
    weights, grads = joined["log_weights"], joined["gradients"]
    rec.record(
        slice(0, draws),
        np.concatenate(joined["draws"]),
        {k: np.concatenate([s[k] for s in joined["stats"]]) for k in joined["stats"][0]},
        None if weights[0] is None else np.concatenate(weights),
        None,
        None if grads[0] is None else np.concatenate(grads),
    )
    continued = {
        t.index: r["continued_from"]
        for t, r in zip(tasks, results, strict=True)
        if r["continued_from"]
    }
    return continued, sum(r["checkpoints"] for r in results), folder


def sample(
    target,
    sampler="nuts",
    *,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    thin: int = 1,
    save_warmup: bool = False,
    seed=None,
    initial=None,
    progress: bool = True,
    compiled: bool | None = None,
    output=None,
    overwrite: bool = False,
    checkpoint_seconds: float = CHECKPOINT_SECONDS,
    backend: str | None = None,
    reject_on=(),
    executor=None,
    scheduler: str | None = None,
    workers: int | None = None,
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
        Sampling iterations per chain (>= 1), after warm-up.
    thin : int
        Keep one iteration in ``thin`` (>= 1, at most ``draws``): ``draws // thin`` draws per
        chain, as Stan's ``thin`` and NumPyro's ``thinning``. A kept draw's ``diverging``
        flags a divergence in any of the iterations it stands for, and its ``n_grad`` counts
        their gradients (:mod:`hamiltonia.runner.thinning`).
    save_warmup : bool
        Also keep the warm-up iterations (thinned alike): ``result.warmup_draws`` and
        ``result.warmup_stats``, the ``warmup_posterior`` and ``warmup_sample_stats`` groups
        of :meth:`Result.to_datatree`. Diagnostics and summaries read the draws only.
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
        (default) compiles when every part of the sampler allows it and otherwise runs the
        NumPy path with a :class:`FallbackWarning` naming the part (``pass compiled=False to
        silence this``); ``True`` requires it (``ValueError`` naming the part that does
        not); ``False`` asks for the NumPy path, silently. ``result.attrs["compiled"]`` says
        which path ran and ``result.attrs["path_reason"]`` why, e.g. ``"compiled: every
        part has a compiled counterpart"``, ``"numpy: compiled=False was asked"`` or
        ``"numpy: sampler RandomWalkMetropolis has no compiled counterpart"``. The command
        line's ``--compiled`` / ``--no-compiled`` are ``True`` / ``False``.
    output : path, optional
        Write the finished run to this netCDF file (see :meth:`Result.save`). The path is
        checked before any work (its folder exists and is writable, it is not a folder, it
        does not exist unless ``overwrite``, no other process writes it). While the run goes
        on, it is checkpointed every ``checkpoint_seconds`` to the folder ``output.partial``
        (:mod:`hamiltonia.results.runfile`: each block and manifest written atomically, so a kill at
        any moment leaves a run that :func:`load` reads and :func:`resume` continues). Warm-up
        is checkpointed too, first right after the step-size search: the chains' state, the
        tuners' (dual averaging's per-chain :math:`(\\mu, \\bar H, \\log\\bar\\varepsilon, m)`,
        the metric window's buffered positions), the step size and metric in force and the
        kept warm-up draws so far; after it, the new draws. An interrupted run (Ctrl-C)
        returns the draws made so far with a warning instead of losing them; one interrupted
        in warm-up saves it and raises :class:`WarmupInterrupted` (a ``KeyboardInterrupt``).
    overwrite : bool
        Replace an existing ``output`` (or an unfinished run there). Default ``False``: an
        existing file is refused before any work, and an unfinished one points to
        :func:`resume`.
    checkpoint_seconds : float
        Seconds between checkpoints of ``output`` (default 60), in warm-up as in sampling:
        a run killed at any moment after its first checkpoint loses at most this much work,
        and :func:`resume` finishes it with the draws of an uninterrupted run. A sampling
        checkpoint writes the new draws only, so frequent ones cost little; a warm-up one
        writes the state reached (and, with ``save_warmup``, the kept warm-up draws).
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
    executor : {"threads", "processes", "dask"}, Executor or distributed.Client, optional
        Where the sampling iterations run (:mod:`hamiltonia.runner.executors`). Default
        ``"threads"``: in this process (the compiled path runs chains on threads, one per
        core). ``"processes"``: a local process pool. ``"dask"``: Dask distributed, a
        ``LocalCluster`` or the cluster at ``scheduler``. Warm-up runs here, all chains
        together; then each chain (each antithetic pair) is a task that checkpoints, and a
        task whose worker dies continues from its checkpoint elsewhere. Every executor gives
        the same draws for the same seed.
    scheduler : str, optional
        Address of a running Dask scheduler (``"tcp://host:port"``); implies ``"dask"``.
    workers : int, optional
        Worker processes of the process pool (default: one per core) or of the
        ``LocalCluster`` (default 2).
    **options
        Options of the named sampler (for ``hmc``: ``n_steps``, ``step_size``,
        ``target_accept``, ``adapt_step_size``, ``metric``). Unknown options raise
        ``ValueError`` naming them.

    Returns
    -------
    Result
    """
    reject_on = check_reject_on(reject_on)
    with (
        _executor(executor, scheduler, workers) as runner,
        array_backend.using(backend),
        rejecting(reject_on),
    ):
        return _sample(
            target, sampler, chains=chains, warmup=warmup, draws=draws, seed=seed,
            initial=initial, progress=progress, compiled=compiled, output=output,
            overwrite=overwrite, checkpoint_seconds=checkpoint_seconds, options=options,
            thin=thin, save_warmup=save_warmup, executor=runner,
        )  # fmt: skip


@contextlib.contextmanager
def _executor(executor, scheduler, workers):
    """The executor of ``executor=`` (``None``: this process), closed at the end if made
    here; one the caller passed serves their later runs too."""
    from hamiltonia.runner.executors import make_executor

    runner = make_executor(executor, scheduler, workers)
    if runner is None or runner is executor:
        yield runner
        return
    with runner:
        yield runner


def _json_safe(value):
    """``value`` with NumPy arrays and scalars as lists and numbers (floats written by
    ``repr``, so read back exactly) and everything else JSON cannot hold as its ``str``."""
    import json

    def plain(obj):
        if isinstance(obj, np.ndarray | np.generic):
            return obj.tolist()
        return str(obj)

    return json.loads(json.dumps(value, default=plain))


def _joined(before, after) -> tuple:
    """Kept warm-up ``(draws, stats)`` of a checkpoint followed by those made since."""
    if before is None or before[0].shape[1] == 0:
        return after
    if after[0].shape[1] == 0:
        return before
    draws = np.concatenate([before[0], after[0]], axis=1)
    return draws, {k: np.concatenate([before[1][k], v], axis=1) for k, v in after[1].items()}


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
            continuing=False, thin=1, save_warmup=False, executor=None,
            kept_path=None):  # fmt: skip
    """:func:`sample`'s run; ``kept_path`` (a resume that keeps the path of the run it
    continues, ``compiled`` being that run's) is that run's ``path_reason``, as
    :func:`~hamiltonia.runner.loop.choose_path` takes it."""
    chains = check_int(chains, "chains", minimum=1)
    warmup = check_int(warmup, "warmup", minimum=0, maximum=MAX_WARMUP)
    draws = check_int(draws, "draws", minimum=1)
    thin = check_int(thin, "thin", minimum=1)
    if thin > draws:
        raise ValueError(f"thin must be at most draws ({draws}) so that a draw is kept, got {thin}")
    save_warmup = check_flag(save_warmup, "save_warmup")
    progress = check_flag(progress, "progress")
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
    # The warm-up's iterations are held unthinned until its end.
    held = draws // thin + (warmup if save_warmup else 0)
    _check_memory(chains, held, len(target.reported_names), len(smp.stats()))
    plan, path_reason = choose_path(smp, compiled, kept=kept_path)
    if smp.reducer.pairs:
        smp.reducer.pairing(chains)  # an even number of chains, or the error naming it
        # The two chains of a pair draw the same numbers (hamiltonia.reducers.antithetic).
        primaries, seq = make_rngs(seed, chains // 2)
        rngs = [g for rng in primaries for g in (rng, copy.deepcopy(rng))]
    else:
        rngs, seq = make_rngs(seed, chains)
    # The output is checked, and locked, before any work: a run is never lost at its end.
    run_file = None
    if output is not None:
        run_file = RunFile.open(output, overwrite=overwrite, continuing=continuing)
    try:
        return _run(target, smp, (plan, path_reason), rngs, seq, requested, options, run_file,
                    chains=chains, warmup=warmup, draws=draws // thin, thin=thin,
                    save_warmup=save_warmup, initial=initial, progress=progress,
                    checkpoint_seconds=checkpoint_seconds, resume_from=resume_from,
                    executor=executor)  # fmt: skip
    finally:
        if run_file is not None:
            run_file.close()


def _run(target, smp, path, rngs, seq, requested, options, run_file, *, chains, warmup, draws,
         thin, save_warmup, initial, progress, checkpoint_seconds, resume_from,
         executor=None):  # fmt: skip
    """Warm up, then make ``draws`` kept draws per chain (``draws * thin`` iterations), on
    ``path``: the compiled plan (``None``: the NumPy path) and why it was chosen.

    A run resumed from a warm-up checkpoint gets ``warmup`` (the run's whole warm-up) and
    continues it from the iteration the checkpoint reached; one resumed from a sampling
    checkpoint gets ``warmup=0``."""
    from tqdm.auto import tqdm

    plan, path_reason = path
    rec = None
    resumed_warmup = None  # the warm-up part of the state resumed from (a run stopped in it)
    warm_from = 0  # warm-up iterations made before this call
    if resume_from is None:
        state = _initial_state(smp, target, initial, rngs)
        start = 0
        attrs = {
            "seed_entropy": str(seq.entropy),
            **({"seed_spawn_key": str(list(seq.spawn_key))} if seq.spawn_key else {}),
            "chains": chains,
            "warmup": warmup,
            # Sampling iterations; draws // thin of them are kept.
            "draws": draws * thin,
            "thin": thin,
            "save_warmup": save_warmup,
            "compiled": plan is not None,
            "path_reason": path_reason,
            "options": {
                k: (v if np.isscalar(v) or v is None else repr(v)) for k, v in options.items()
            },
            "target_params": getattr(target, "registered_params", {}),
            # The refresh's memory rho (0: a fresh momentum each iteration), which the
            # E-BFMI check reads.
            "momentum_memory": float(getattr(getattr(smp, "refresh", None), "rho", 0.0)),
            # Chains 2k and 2k+1 are an antithetic pair (reducers.antithetic); [] if none.
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
        state = resume_state.restore(smp, info, rngs)
        resumed_warmup = info.get("warmup")
        if resumed_warmup is not None:
            # In place of the tuners' start (a step-size search would draw anew).
            resume_state.restore_warmup(smp, resumed_warmup, rngs)
            warm_from = resumed_warmup["done"]
        start = previous.n_draws
        attrs = {
            k: v
            for k, v in previous.attrs.items()
            if k not in ("complete", "draws_done", "warmup_done")
        }
        # This part's own path and why (a resume may be told to take the other one).
        attrs["compiled"] = plan is not None
        attrs["path_reason"] = path_reason
    times = {"t0": time.perf_counter(), "t1": None, "saved": time.perf_counter(), "resume": None,
             "warmup_done": warm_from}  # fmt: skip
    warm_rec = None
    tasks_folder = None  # the checkpoints of an executor's tasks
    # The kept warm-up draws: once warm-up is over ("draws", "stats"); those a warm-up
    # checkpoint holds, before the iterations this call makes ("before").
    warm = {"draws": None, "stats": None, "before": None}
    if resume_from is not None and resumed_warmup is None:
        warm.update(draws=previous.warmup_draws, stats=previous.warmup_stats)
    elif save_warmup:
        first = 0
        if resumed_warmup is not None:
            # The iterations of the unfinished thinning group are made again from its
            # statistics (its draws are never kept), then the recorder goes on from there.
            n_kept = resumed_warmup["kept"]
            first = n_kept * thin
            stats_before = previous.warmup_stats or {}
            warm["before"] = (
                previous.warmup_draws[:, :n_kept],
                {k: v[:, :n_kept] for k, v in stats_before.items()},
            )
        warm_rec = Recorder(chains, warmup - first, len(target.reported_names), smp.stats(),
                             first=first)  # fmt: skip
        if resumed_warmup is not None:
            warm_rec.prefill_statistics(resumed_warmup["tail"])

    def kept_warmup() -> tuple:
        """The kept warm-up draws and their statistics so far."""
        q, stats = warm_rec.truncated()[:2]
        return _joined(warm["before"], (kept(q, thin), thin_statistics(stats, thin)))

    def warmup_tail() -> dict | None:
        """The statistics of the warm-up iterations after the last kept one."""
        if warm_rec is None:
            return None
        n = warm_rec.n_done
        group = n // thin * thin
        return {
            name: warm_rec.stats[name][:, group:n] if name in warm_rec.stats
            else np.empty((chains, 0), dtype=dtype)
            for name, dtype in warm_rec.declared
        }  # fmt: skip

    def warmup_output() -> None:
        """The kept warm-up draws, once warm-up is over."""
        if warm_rec is not None and warm["draws"] is None:
            warm["draws"], warm["stats"] = kept_warmup()

    def build_result(complete: bool) -> Result:
        in_warmup = times["t1"] is None and rec.n_done == 0
        if not in_warmup:
            warmup_output()
        q, stats, weights, grads = rec.truncated()
        now = time.perf_counter()
        t1 = times["t1"] if times["t1"] is not None else now
        warmup_seconds, sampling_seconds = t1 - times["t0"], now - t1
        if resume_from is not None:
            if resumed_warmup is not None:
                warmup_seconds += resume_from[0].warmup_seconds
            else:
                warmup_seconds = resume_from[0].warmup_seconds
            sampling_seconds += resume_from[0].sampling_seconds
        return Result(
            draws=q,
            stats=stats,
            names=target.reported_names,
            log_weights=weights,
            gradients=grads,
            warmup_draws=warm["draws"],
            warmup_stats=warm["stats"],
            sampler=smp.name,
            target=getattr(target, "registered_name", type(target).__name__),
            warmup_seconds=warmup_seconds,
            sampling_seconds=sampling_seconds,
            attrs={
                **attrs,
                "complete": complete,
                "draws_done": rec.n_done,
                # A run stopped in warm-up says how far it went (hamiltonia.load reads it).
                **({"warmup_done": times["warmup_done"]} if in_warmup else {}),
                "resume": None if complete else times["resume"],
            },
            _target=target,
        )

    def persist() -> None:
        """Append the draws made since the last checkpoint to the unfinished run (in
        warm-up: the state reached and the kept warm-up draws so far)."""
        partial = build_result(complete=False)
        meta = {
            "names": list(partial.names),
            "sampler": partial.sampler,
            "target": partial.target,
            "warmup_seconds": partial.warmup_seconds,
            "sampling_seconds": partial.sampling_seconds,
            # Arrays (the tuners' states) become lists here, floats by repr: exact.
            "attrs": _json_safe(partial.attrs),
        }
        warm_part = None
        if "warmup_done" in partial.attrs and warm_rec is not None:
            # Those of the iterations the saved state has made (an interrupted iteration or
            # chunk may have recorded more).
            n = times["warmup_done"] // thin
            draws_so_far, stats_so_far = kept_warmup()
            warm_part = (draws_so_far[:, :n], {k: v[:, :n] for k, v in stats_so_far.items()})
        elif partial.warmup_draws is not None:
            warm_part = (partial.warmup_draws, partial.warmup_stats)
        run_file.append(
            partial.draws, partial.stats, partial.log_weights, meta, partial.gradients,
            warmup=warm_part,
        )  # fmt: skip
        times["saved"] = time.perf_counter()

    # Whether the run can be rebuilt from its file (registered names, plain options): decided
    # once, not at each of the iterations whose state is captured.
    resumable = run_file is not None and resume_state.resumable(*requested, options)

    def capture(current, warm_state=None) -> dict | None:
        """The state from which resume() continues exactly, or None for a run it cannot
        rebuild."""
        if not resumable:
            return None
        return resume_state.capture(requested[1], options, current, rngs, smp, warm_state)

    def warmup_checkpoint(current, done: int) -> None:
        """After ``done`` warm-up iterations (0: after the step-size search), the state from
        which resume() continues exactly: written at once for the first, then every
        ``checkpoint_seconds`` as in sampling."""
        if not resumable:  # no output, or a run resume() cannot rebuild
            return
        warm_state = resume_state.warmup_state(smp, done, warmup, warmup_tail())
        if warm_state is None:  # a tuner that cannot be checkpointed
            return
        times["resume"] = capture(current, warm_state)
        times["warmup_done"] = done
        if done == 0 or time.perf_counter() - times["saved"] >= checkpoint_seconds:
            persist()

    def checkpoint(current):
        if times["t1"] is None:
            times["t1"] = time.perf_counter()
            warmup_output()
        if run_file is None:
            return
        # The state after the last stored iteration, from which resume() continues exactly.
        times["resume"] = capture(current)
        if time.perf_counter() - times["saved"] >= checkpoint_seconds:
            persist()

    rec = Recorder(
        chains, draws, len(target.reported_names), smp.stats(),
        # The tasks of an executor checkpoint their own chains.
        checkpoint if executor is None else None,
        smp.reducer.records_gradients, target.dim,
    )  # fmt: skip
    if resume_from is not None:
        rec.prefill(resume_from[0])
    total = (warmup - warm_from) + (draws - start) * thin
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
            if warmup:
                # The first checkpoint: a run killed in warm-up loses at most the time
                # between two checkpoints, not the step-size search and all before it.
                warmup_checkpoint(state, 0)
        # 0 for a run resumed after its warm-up (the caller passes warmup=0 then).
        run_warmup = warmup
        if executor is not None:
            # Warm-up only: the tasks make the draws.
            state, times["t1"] = run_chains(plan, smp, target, state, rngs, run_warmup, 0, rec,
                                             bar, 0, thin, warm_rec, warm_from,
                                             warmup_checkpoint)  # fmt: skip
            warmup_output()
            attrs["executor"] = executor.name
            if run_file is not None:
                # The state after warm-up: a run whose calling process dies resumes from it.
                times["resume"] = capture(state)
                persist()
            attrs["continued_tasks"], attrs["task_checkpoints"], tasks_folder = _sample_on(
                executor, smp, target, state, rngs, rec, bar, plan is not None, thin, run_file,
                checkpoint_seconds, warmup,
                # A run stopped in warm-up had no tasks yet: none to continue.
                fresh=resume_from is None or resumed_warmup is not None,
            )  # fmt: skip
        else:
            state, times["t1"] = run_chains(plan, smp, target, state, rngs, run_warmup, draws,
                                             rec, bar, start, thin, warm_rec, warm_from,
                                             warmup_checkpoint)  # fmt: skip
    except KeyboardInterrupt:
        if rec.n_done == 0:
            if run_file is not None and times["resume"] is not None:
                # Stopped in warm-up, or while an executor's tasks ran (their draws come
                # back at the end): no draws to return, but the state reached is kept.
                persist()
                done = times["warmup_done"] if times["t1"] is None else warmup
                raise WarmupInterrupted(run_file.path, done, warmup) from None
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
        # Whatever stopped the run, the draws (or the warm-up) made so far stay on disk.
        if run_file is not None and (
            rec.n_done > run_file.written
            or (times["t1"] is None and times["resume"] is not None and rec.n_done == 0)
        ):
            persist()
        raise
    finally:
        bar.close()
    result = build_result(complete=True)
    if run_file is not None:
        _write_final(run_file, result, persist)
    if tasks_folder is not None:
        # Only now: until the run's own file is written, the tasks' draws live there.
        shutil.rmtree(tasks_folder, ignore_errors=True)
    # After the file is safe: a user who turns warnings into errors still has the run.
    try:
        diagnose.warn(result.diagnose(), stacklevel=4)
    except KeyboardInterrupt:
        # The run is complete (and saved): Ctrl-C during the checks skips them, as it would
        # stop a run, and keeps the draws; result.diagnose() runs them later.
        warnings.warn(
            "interrupted while checking the finished run: its diagnostics were skipped "
            "(result.diagnose() runs them)",
            InterruptedRunWarning,
            stacklevel=4,
        )
    return result


def _write_final(run_file, result, persist) -> None:
    """Write the finished run to its output; a failed write (a full disk, a file-size limit)
    raises :class:`~hamiltonia.results.runfile.OutputWriteError` holding the run, after bringing the
    checkpoints up to date where space allows, so that :func:`resume` can finish it later."""
    from hamiltonia.results.runfile import CheckpointWarning, OutputWriteError

    try:
        # Made in memory first: HDF5 never holds the file, and a full disk is an OSError.
        run_file.finish(result.to_netcdf_bytes)
    except OutputWriteError as err:
        err.result = result  # first: nothing below may lose it
        with warnings.catch_warnings():
            # Where the disk is full this fails too; the error below says so already, and a
            # user who turns warnings into errors must still get the run.
            warnings.simplefilter("ignore", CheckpointWarning)
            persist()
        where = ""
        if run_file.written == result.n_draws:  # persist() reached the disk
            err.partial = run_file.folder
            where = (
                f"; the draws are also in {err.partial} (hamiltonia.resume("
                f"{str(run_file.path)!r}) writes the file once there is space)"
            )
        err.args = (
            f"{err.args[0]}. The run is not lost: it is err.result (save it elsewhere with "
            f"err.result.save(path)){where}",
        )
        raise


def resume(path, *, progress: bool = True, output=None,
           checkpoint_seconds: float = CHECKPOINT_SECONDS,
           backend: str | None = None, reject_on=(), overwrite: bool = False,
           executor=None, scheduler: str | None = None,
           workers: int | None = None, compiled: bool | None = None) -> Result:  # fmt: skip
    """Continue an interrupted run saved by :func:`sample` with ``output=``, stopped in
    warm-up or in sampling.

    A run spread over tasks (``executor=``) that stopped with its calling process continues
    from its state after warm-up, its tasks from their checkpoints in ``output.tasks`` when
    ``executor`` (and ``scheduler``, ``workers``, as in :func:`sample`) runs them again; in
    this process (the default) the chains start again from the end of warm-up. Either way
    the draws are those of an uninterrupted run.

    The run continues from the state of its last checkpoint, with the generators, step
    sizes and metric it had then; a run stopped in warm-up also with its tuners' state
    (dual averaging's, the metric window's buffered positions) and its kept warm-up draws,
    and goes on adapting from the iteration it reached. Either way the finished draws (and
    warm-up draws) equal those of an uninterrupted run with the same seed, on the path it
    ran on. Before any work the target is evaluated at the saved positions: a file whose
    target does not give the log densities its chains saved is refused
    (:class:`~hamiltonia.results.runfile.RunFileError`, see
    :func:`~hamiltonia.runner.resume_state.check_target`). Needs a run of registered target and
    sampler names with plain options (the file then records how to rebuild them); the
    continuation is written to
    ``output`` (default: ``path`` itself; another existing file is replaced only with
    ``overwrite=True``). ``reject_on`` is as in :func:`sample` (exception classes are not
    stored in the file: give them again).

    ``compiled=None`` (the default) continues on the path the run ran on
    (``attrs["compiled"]``): the NumPy path silently, the compiled path or a ``ValueError``
    saying why it is no longer possible (another ``backend``, say). ``True`` or ``False``
    choose as in :func:`sample`: the chains continue from the state saved, on the other
    path, which is a valid continuation but not the draws of an uninterrupted run (the two
    paths round differently, and chains amplify it). ``attrs["path_reason"]`` records why
    the continuation ran on its path, e.g. ``"numpy: kept from the run it continues:
    sampler RandomWalkMetropolis has no compiled counterpart"``.
    """
    from hamiltonia.results import load

    # Before the file is read: a truthy string such as "no" would show the bar.
    progress = check_flag(progress, "progress")
    compiled = check_flag(compiled, "compiled", allow_none=True)
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
        smp = _resolve_sampler(info["sampler"], target, dict(info["options"]))
    except (KeyError, TypeError, ValueError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        raise RunFileError(f"{path} cannot be resumed: {message}") from None
    info = resume_state.check_warmup(info, smp, previous, path)
    reject_on = check_reject_on(reject_on)
    with array_backend.using(backend), rejecting(reject_on):
        resume_state.check_target(smp, info, path)
    # A run stopped in warm-up goes on with the rest of it (and its kept warm-up draws).
    warm = info.get("warmup")
    kept = compiled is None  # on the path the run ran on
    target_path = Path(path if output is None else output)
    # Appending to the unfinished run in place; to another output, or from a file of an
    # earlier version (no .partial folder), the draws so far are written there anew.
    continuing = target_path == Path(path) and partial_dir(path).exists()
    with (
        _executor(executor, scheduler, workers) as runner,
        array_backend.using(backend),
        rejecting(reject_on),
    ):
        return _sample(
            target, info["sampler"], chains=previous.n_chains,
            warmup=0 if warm is None else warm["of"],
            save_warmup=warm is not None and previous.attrs.get("save_warmup") is True,
            draws=int(previous.attrs["draws"]), thin=int(previous.attrs.get("thin", 1)),
            seed=None, initial=None, progress=progress,
            compiled=bool(previous.attrs.get("compiled", False)) if kept else compiled,
            kept_path=str(previous.attrs.get("path_reason", "")) if kept else None,
            output=target_path,
            overwrite=overwrite or target_path == Path(path), checkpoint_seconds=checkpoint_seconds,
            options=dict(info["options"]), resume_from=(previous, info), continuing=continuing,
            executor=runner,
        )  # fmt: skip
