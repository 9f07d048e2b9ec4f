"""A run's course, once :func:`hamiltonia.runner.run.sample` (or
:func:`~hamiltonia.runner.run.resume`) has checked its options: the initial state (or the one
resumed), the tuners' start, warm-up then the draws, here or on an executor's tasks, the
checkpoints of its output, Ctrl-C (the draws made so far returned, or the warm-up saved), and
the finished run written and diagnosed."""

from __future__ import annotations

import time
import warnings

import numpy as np

from hamiltonia.diagnostics import checks as diagnose
from hamiltonia.runner import resume_state
from hamiltonia.runner.checkpoints import RunOutput, continued_attrs, new_run_attrs
from hamiltonia.runner.initial_points import _initial_state, retry_collapsed_starts
from hamiltonia.runner.interruptions import InterruptedRunWarning, WarmupInterrupted
from hamiltonia.runner.loop import run_chains
from hamiltonia.runner.recording import Recorder, WarmupDraws
from hamiltonia.state import ModelError


def _tasks_stopped(output, rec, made, draws, run_file, requested, options, executor):
    """Ctrl-C while an executor's tasks ran: the draws every chain made, returned. The run's
    file keeps the state after warm-up and its tasks' folder their checkpoints, from which
    :func:`hamiltonia.resume` continues with the executor (the draws are not written to the
    file: no one state of every chain goes with them)."""
    q, stats, weights, grads = made
    rec.record(slice(0, q.shape[1]), q, stats, weights, None, grads)
    result = output.result(complete=False)
    # Its chains' state after these draws is in the tasks' checkpoints, not here (the state
    # here is warm-up's end): a copy saved elsewhere cannot be resumed.
    result.attrs["resume"] = None
    path = None if run_file is None else run_file.path
    saved = ""
    if path is not None:
        hint = resume_state.resume_hint(path, *requested, options)
        saved = (
            f" (the tasks' checkpoints are in {path}.tasks; {hint}, with "
            f"executor={executor!r} to continue from them)"
        )
    warnings.warn(
        f"interrupted after {rec.n_done} of {draws} draws per chain; returning those{saved}",
        InterruptedRunWarning,
        stacklevel=5,
    )
    return result


def _start_warmup(smp, state, warmup, rngs, attrs, output, target, drawn: bool) -> None:
    """The tuners' start (the step-size search) of a new run (the initial points the run
    ``drawn`` drawn again where the search collapsed), and its first warm-up checkpoint."""
    try:
        for tuner in smp.tuners:
            tuner.start(smp, state, warmup, rngs)
        if drawn and warmup:
            retry_collapsed_starts(smp, target, state, rngs)
    except ModelError as err:
        raise err.during("in the step-size search before warm-up") from err.__cause__
    # Where warm-up started from: diagnose() reports a step size that collapsed.
    attrs["step_size_initial"] = np.broadcast_to(
        np.asarray(state.step_size, dtype=float), (len(rngs),)
    ).tolist()
    if warmup:
        # The first checkpoint: a run killed in warm-up loses at most the time between two
        # checkpoints, not the step-size search and all before it.
        output.warmup_checkpoint(state, 0)


def _warmup_in_tasks(smp) -> bool:
    from hamiltonia.runner.tasks import warmup_in_tasks

    return warmup_in_tasks(smp)


def _warm_up_on(executor, smp, target, state, rngs, rec, bar, compiled, thin, run_file,
                checkpoint_seconds, warmup, warm_from, output, resumed) -> str:  # fmt: skip
    """Per-chain adaptation on an executor: each task warms its own chains up from ``state``
    (``warm_from`` warm-up iterations made, the step-size search among them) and samples
    them; returns the folder of the tasks' checkpoints.

    The calling process's output keeps its last warm-up checkpoint, from which a run whose
    calling process dies resumes; the tasks' checkpoints continue the same chains from the
    same state, so a resumed run goes on with them."""
    from hamiltonia.runner.tasks import sample_on

    output.attrs["executor"] = executor.name
    began = time.perf_counter()
    continued, written, folder, warm_seconds = sample_on(
        executor, smp, target, state, rngs, rec, bar, compiled, thin, run_file,
        checkpoint_seconds, warmup, fresh=not resumed, warm=output.warm, warm_from=warm_from,
    )  # fmt: skip
    output.attrs["continued_tasks"], output.attrs["task_checkpoints"] = continued, written
    # The tasks' warm-ups ran side by side: sampling began, in wall time, when the longest
    # ended.
    output.t1 = began + warm_seconds
    return folder


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
    previous, resumed_warmup = None, None  # the run continued, and where in warm-up it was
    warm_from = start = 0  # warm-up iterations and kept draws made before this call
    if resume_from is None:
        state = _initial_state(smp, target, initial, rngs)
        attrs = new_run_attrs(target, smp, path_reason, plan is not None, seq, options,
                              chains=chains, warmup=warmup, draws=draws, thin=thin,
                              save_warmup=save_warmup)  # fmt: skip
    else:
        previous, info = resume_from
        state = resume_state.restore(smp, info, rngs)
        resumed_warmup = info.get("warmup")
        if resumed_warmup is not None:
            # In place of the tuners' start (a step-size search would draw anew).
            resume_state.restore_warmup(smp, resumed_warmup, rngs)
            warm_from = resumed_warmup["done"]
        start = previous.n_draws
        attrs = continued_attrs(previous, plan is not None, path_reason)
    dim = len(target.reported_names)
    warm = WarmupDraws.for_run(chains=chains, warmup=warmup, dim=dim, declared=smp.stats(),
                               thin=thin, save_warmup=save_warmup, previous=previous,
                               resumed=resumed_warmup)  # fmt: skip
    rec = Recorder(chains, draws, dim, smp.stats(), None, smp.reducer.records_gradients,
                   target.dim)  # fmt: skip
    rebuild = None
    if run_file is not None and resume_state.resumable(requested[1], options):
        rebuild = (requested[1], options)
    output = RunOutput(target=target, smp=smp, rngs=rngs, attrs=attrs, rec=rec, warm=warm,
                       run_file=run_file, checkpoint_seconds=checkpoint_seconds,
                       rebuild=rebuild, previous=previous,
                       resumed_in_warmup=resumed_warmup is not None, warmup=warmup,
                       warm_from=warm_from)  # fmt: skip
    if executor is None:  # the tasks of an executor checkpoint their own chains
        rec.checkpoint = output.checkpoint
    if previous is not None:
        rec.prefill(previous)
    tasks_folder = None  # the checkpoints of an executor's tasks
    total = (warmup - warm_from) + (draws - start) * thin
    bar = tqdm(total=total, disable=not progress, desc=f"{smp.name} warmup", unit="it")
    try:
        if resume_from is None:
            _start_warmup(smp, state, warmup, rngs, attrs, output, target, initial is None)
        if executor is not None and warmup > warm_from and _warmup_in_tasks(smp):
            tasks_folder = _warm_up_on(executor, smp, target, state, rngs, rec, bar,
                                       plan is not None, thin, run_file, checkpoint_seconds,
                                       warmup, warm_from, output,
                                       resumed=resume_from is not None)  # fmt: skip
        else:
            # With an executor, warm-up only here: the tasks make the draws.
            tuners_ran = resume_from is None or resumed_warmup is not None
            state, output.t1 = run_chains(plan, smp, target, state, rngs, warmup,
                                          draws if executor is None else 0, rec, bar, start,
                                          thin, warm.rec, warm_from,
                                          output.warmup_checkpoint, tuners_ran)  # fmt: skip
        if executor is not None and tasks_folder is None:
            from hamiltonia.runner.tasks import sample_on

            attrs["executor"] = executor.name
            output.warmup_over(state)
            attrs["continued_tasks"], attrs["task_checkpoints"], tasks_folder, _ = sample_on(
                executor, smp, target, state, rngs, rec, bar, plan is not None, thin, run_file,
                checkpoint_seconds, warmup,
                # A run stopped in warm-up had no tasks yet: none to continue.
                fresh=resume_from is None or resumed_warmup is not None,
            )  # fmt: skip
    except KeyboardInterrupt as err:
        made = getattr(err, "made", None)  # an executor's tasks: the draws they made
        if made is not None and made[0].shape[1] > rec.n_done:
            return _tasks_stopped(output, rec, made, draws, run_file, requested, options,
                                  executor.name)  # fmt: skip
        if rec.n_done == 0:
            # Stopped in warm-up, or while an executor's tasks ran (their draws come back
            # at the end): no draws to return, but the state reached is kept.
            if output.save_stopped_warmup():
                hint = resume_state.resume_hint(run_file.path, *requested, options)
                raise WarmupInterrupted(run_file.path, output.warmup_reached(), warmup,
                                        hint) from None  # fmt: skip
            raise
        result = output.stopped()
        path = None if run_file is None else run_file.path
        hint = path and resume_state.resume_hint(path, *requested, options)
        warnings.warn(
            f"interrupted after {rec.n_done} of {draws} draws per chain; returning those"
            + (f" (saved to {path}; {hint})" if path else ""),
            InterruptedRunWarning,
            stacklevel=4,
        )
        return result
    except BaseException:
        output.save_on_error()
        raise
    finally:
        bar.close()
    result = output.result(complete=True)
    if run_file is not None:
        output.write_final(result)
    if tasks_folder is not None:
        # Only now: until the run's own file is written, the tasks' draws live there.
        from hamiltonia.runner.task_folders import remove_task_folder

        remove_task_folder(tasks_folder)
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
