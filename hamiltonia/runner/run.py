"""Running chains: :func:`sample` and :func:`resume`, and the checks of their options before
any work (the target and its parameters, the sampler and its options, the seeds, the memory,
the output); the run itself, once checked, is :mod:`hamiltonia.runner.orchestrate`'s."""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia._system import physical_memory as _physical_memory
from hamiltonia._validation import MAX_WARMUP, as_float, check_flag, check_int
from hamiltonia.results import Result
from hamiltonia.results.runfile import RunFile, RunFileError, has_checkpoints
from hamiltonia.runner import resume_state
from hamiltonia.runner.checkpoints import json_safe as _json_safe  # noqa: F401 (its old name)

# Kept importable from here, where they were first defined.
from hamiltonia.runner.initial_points import INIT_RADIUS as INIT_RADIUS
from hamiltonia.runner.initial_points import MAX_INIT_TRIES as MAX_INIT_TRIES
from hamiltonia.runner.interruptions import InterruptedRunWarning, WarmupInterrupted
from hamiltonia.runner.loop import FallbackWarning, choose_path
from hamiltonia.runner.orchestrate import _run
from hamiltonia.samplers.base import Sampler
from hamiltonia.state import DEVICES, check_reject_on, rejecting
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


def _resolve_target(target, params=None) -> Target:
    from hamiltonia import targets

    if isinstance(target, str):
        return targets.get(target, **(params or {}))
    if not isinstance(target, Target):
        raise TypeError(
            f"target must be a Target or a registered target name, got {type(target).__name__}"
        )
    return target


def _target_options(target, sampler, options: dict) -> tuple[dict, dict]:
    """``(params, options)``: of :func:`sample`'s keyword options, those that are
    parameters of the registered target ``target``'s factory (``hm.sample("funnel", dim=7)``,
    as ``-T dim=7`` on the command line) and the rest, the sampler's. A name both take is
    refused as ambiguous, and one neither takes is named with both lists."""
    from hamiltonia import samplers, targets

    if not isinstance(target, str) or not options:
        return {}, options
    own = set(targets.options(target))
    if not isinstance(sampler, str):
        params = {k: v for k, v in options.items() if k in own}
        return params, {k: v for k, v in options.items() if k not in own}
    registry = samplers.registry
    takes_any = registry.accepts_any(sampler)
    valid = registry.options(sampler)
    both = sorted(k for k in options if k in own and k in valid)
    if both:
        raise ValueError(
            f"option {both[0]!r} is both a parameter of target {target!r} and an option of "
            f"sampler {sampler!r}; give the target built, "
            f"hm.sample(hm.targets.get({target!r}, {both[0]}=...), {sampler!r}, ...)"
        )
    unknown = [k for k in options if k not in own and k not in valid]
    if unknown and not takes_any:
        raise ValueError(
            f"unknown option {unknown[0]!r} for sampler {sampler!r} or target {target!r}; "
            f"sampler options: {', '.join(valid) or 'none'}; target parameters: "
            f"{', '.join(sorted(own)) or 'none'}"
        )
    params = {k: v for k, v in options.items() if k in own and k not in valid}
    return params, {k: v for k, v in options.items() if k not in params}


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


def _check_parts_backend(smp, name: str) -> None:
    """Refuse, before any work, a sampler with a part that declares the array backends it
    runs on (``backends``) and does not list ``name``."""
    for role in ("hamiltonian", "integrator", "trajectory", "refresh", "reducer"):
        part = getattr(smp, role, None)
        allowed = getattr(part, "backends", None)
        if allowed is not None and name not in allowed:
            raise ValueError(
                f"{type(part).__name__} runs on backend {', '.join(allowed)} only; it cannot "
                f"run on backend {name!r}"
            )


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
    device: str = "cpu",
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
        A Sampler object is adapted in place, as mici's are: warm-up leaves its adapted
        metric and its tuners' parameters in it (read them there after the run), and a
        later run with the same object starts its warm-up from them, so it does not repeat
        the first run's draws; build the sampler again (or pass its name) to repeat a run.
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
        draws (from the same sampler: a sampler name, or a Sampler object as built).
        ``None`` draws fresh entropy (recorded in ``result.attrs["seed_entropy"]``).
    initial : array or dict, optional
        Initial positions, shape ``(dim,)`` or ``(chains, dim)``, in the sampler's
        (unconstrained) coordinates; for a :class:`~hamiltonia.Model`, a dict by block name
        of constrained values (``{"tau": 1.0}``), as the model reports them (an array is
        then read as the unconstrained coordinates: :math:`\\log\\tau`, not
        :math:`\\tau`). By default each chain draws
        uniform(-2, 2) coordinates from its own generator (or the target's own initial point,
        :meth:`~hamiltonia.Target.initial_point`, such as a network's layer-scaled
        initialisation), redrawn where the log density or gradient is not finite.
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
        task whose worker dies continues from its checkpoint elsewhere. With per-chain
        adaptation (``adapt_metric="per-chain"``) only the step-size search runs here: each
        task warms its own chains up, then samples them. Every executor gives the same draws
        for the same seed.
    scheduler : str, optional
        Address of a running Dask scheduler (``"tcp://host:port"``); implies ``"dask"``.
    workers : int, optional
        Worker processes of the process pool (default: one per core) or of the
        ``LocalCluster`` (default 2).
    device : {"cpu", "cuda"}
        Where the compiled chains run. ``"cpu"`` (default): the composed chain kernel, one
        thread per core. ``"cuda"``: the fused device chain
        (:mod:`hamiltonia.compiled.device_chain`), every chain one GPU thread of one
        numba-CUDA kernel written from the same part kernels; it needs the compiled path
        (``ValueError`` naming the part or the target that prevents it, never a fallback),
        a target whose numba kernel compiles for the device, the default executor, and a
        GPU (or numba's CUDA simulator, ``NUMBA_ENABLE_CUDASIM=1``, for tests). Each chain
        draws from its own generator as on the CPU, so the draws equal the CPU path's up to
        floating-point rounding.
    **options
        Options of the named sampler (for ``hmc``: ``n_steps``, ``step_size``,
        ``target_accept``, ``adapt_step_size``, ``metric``, ``adapt_metric``) and, for a
        target given by name, the parameters of its factory (``hm.sample("funnel", dim=7)``;
        :func:`hamiltonia.targets.options` lists them). Unknown options raise
        ``ValueError`` naming them and both lists; a name that both take is refused as
        ambiguous.

    Returns
    -------
    Result
    """
    reject_on = check_reject_on(reject_on)
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if device != "cpu":
        from hamiltonia.compiled.device_chain import check_available

        check_available(device)
    if device != "cpu" and (executor is not None or scheduler is not None):
        raise ValueError(
            f"device={device!r} runs every chain in this process's GPU kernel: leave executor "
            f"and scheduler unset (got executor={executor!r}, scheduler={scheduler!r})"
        )
    with (
        _executor(executor, scheduler, workers) as runner,
        array_backend.using(backend),
        rejecting(reject_on),
        on_device(device),
    ):
        return _sample(
            target, sampler, chains=chains, warmup=warmup, draws=draws, seed=seed,
            initial=initial, progress=progress, compiled=compiled, output=output,
            overwrite=overwrite, checkpoint_seconds=checkpoint_seconds, options=options,
            thin=thin, save_warmup=save_warmup, executor=runner,
        )  # fmt: skip


@contextlib.contextmanager
def on_device(device: str):
    """Within this block, compiled chains run on ``device`` (``"cpu"`` or ``"cuda"``)."""
    from hamiltonia.state import _DEVICE

    token = _DEVICE.set(device)
    try:
        yield
    finally:
        _DEVICE.reset(token)


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
    params, options = _target_options(target, sampler, options)
    target = _resolve_target(target, params)
    name = array_backend.get_backend()
    if name not in target.backends:
        raise ValueError(
            f"target {type(target).__name__} computes with {', '.join(target.backends)} only; "
            f"it cannot run on backend {name!r}"
        )
    if not isinstance(overwrite, bool):
        raise ValueError(f"overwrite must be True or False, got {overwrite!r}")
    smp = _resolve_sampler(sampler, target, options)
    _check_parts_backend(smp, name)
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
        if executor is not None:
            from hamiltonia.runner.task_folders import check_task_folder

            # Whether this run empties the folder or continues its tasks, nothing in it may
            # be another's.
            check_task_folder(Path(output).expanduser())
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


def resume(path, *, target=None, progress: bool = True, output=None,
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
    sizes and metric it had then, and the parameters of its parts that its tuners adapted
    (each tuner's :attr:`~hamiltonia.tuners.adaptation.Tuner.adapts`); a run stopped in
    warm-up also with its tuners' state (dual averaging's, the metric window's buffered
    positions) and its kept warm-up draws,
    and goes on adapting from the iteration it reached. Either way the finished draws (and
    warm-up draws) equal those of an uninterrupted run with the same seed, on the path it
    ran on. Before any work the target is evaluated at the saved positions: a file whose
    target does not give the log densities its chains saved is refused
    (:class:`~hamiltonia.results.errors.RunFileError`, see
    :func:`~hamiltonia.runner.resume_state.check_target`). Needs a run of a registered
    sampler name with plain options (the file then records how to rebuild it); a registered
    target is rebuilt from the file, and any other (a user's :class:`~hamiltonia.Model`) is
    given again as ``target``, as to :func:`hamiltonia.load` (checked as above). The
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
    path = Path(path).expanduser()
    # The unfinished run, also where it was to replace a complete one (overwrite=True).
    previous = load(path, target=target, unfinished=has_checkpoints(path) or None)
    info = previous.attrs.get("resume")
    if previous.attrs.get("complete", True):
        raise ValueError(f"{path} holds a complete run: nothing to resume")
    if not info:
        raise ValueError(
            f"{path} cannot be resumed: it holds no state to continue from (the run was not "
            "built from a registered sampler name with plain options, or it holds the draws "
            "an executor's interrupted tasks returned, whose state is in the run's own file)"
        )
    from hamiltonia import targets

    if target is None and previous.target not in targets.names():
        raise RunFileError(
            f"{path} cannot be resumed without its target: it sampled {previous.target!r}, "
            "which is not a registered target and cannot be rebuilt from the file; give it "
            "again, hamiltonia.resume(path, target=model)"
        )
    try:
        target = previous.get_target()
    except (KeyError, TypeError, ValueError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        raise RunFileError(f"{path} cannot be resumed: {message}") from None
    info = resume_state.validate(info, previous, path, target.dim)
    try:
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
    target_path = Path(path if output is None else output).expanduser()
    # Appending to the unfinished run in place; to another output, or from a file of an
    # earlier version (no .partial folder), the draws so far are written there anew.
    continuing = target_path == Path(path) and has_checkpoints(path)
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
