"""The iterations of a run spread over an executor's tasks
(:mod:`hamiltonia.runner.executors`): one task per chain (per antithetic pair), each
checkpointing its own chains, their draws joined in the calling process's recorder.

Warm-up runs in the calling process, all chains together (:func:`hamiltonia.sample` with
``executor=``); :func:`sample_on` then hands each task its chains' state after warm-up. With
per-chain adaptation (:func:`warmup_in_tasks`) nothing joins the chains in warm-up: the
calling process makes the step-size search only, and each task warms its own chains up
before sampling them.
"""

from __future__ import annotations

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia.runner import resume_state, task_folders, task_worker
from hamiltonia.runner.recording import joined
from hamiltonia.state import _REJECT_ON

__all__ = ["TasksInterrupted", "sample_on", "warmup_in_tasks"]


class TasksInterrupted(KeyboardInterrupt):
    """Ctrl-C while an executor's tasks ran: ``made`` holds the draws every chain had made
    (the tasks' checkpoints, up to the fewest any task made: ``(draws, stats, log_weights,
    gradients)``), or ``None`` where a task had made none. The tasks' checkpoints keep the
    rest, from which a run with an output continues (:func:`hamiltonia.resume`)."""

    def __init__(self, made=None):
        super().__init__()
        self.made = made


def warmup_in_tasks(smp) -> bool:
    """Whether each chain (each antithetic pair) warms up apart from the others, so that an
    executor's task can warm its own chains up: per-chain adaptation was asked (a tuner's
    ``per_chain``) and every tuner adapts each chain on its own draws alone
    (:attr:`~hamiltonia.tuners.Tuner.independent_chains`)."""
    tuners = list(getattr(smp, "tuners", ()))
    return any(getattr(t, "per_chain", False) for t in tuners) and all(
        getattr(t, "independent_chains", False) for t in tuners
    )


def sample_on(executor, smp, target, state, rngs, rec, bar, compiled, thin, run_file,
               checkpoint_seconds, warmup, fresh=True, warm=None, warm_from=0):  # fmt: skip
    """The sampling iterations as tasks of one chain (one antithetic pair) on ``executor``,
    from the state after warm-up; their draws go to ``rec``.

    With ``warm`` (a :class:`~hamiltonia.runner.recording.WarmupDraws`: per-chain
    adaptation, :func:`warmup_in_tasks`) the tasks also make warm-up iterations
    ``warm_from`` to ``warmup`` from ``state`` (after ``warm_from`` of them, its tuners'
    state in ``smp``), the kept warm-up draws go to ``warm`` and each chain's adapted metric
    back into ``smp``.

    Returns the tasks continued from a checkpoint (a worker died), by index, with the draw
    they continued from, the number of checkpoints the tasks wrote, the folder of those
    checkpoints (to remove once the run's own file is safe), and the seconds the tasks'
    warm-up took (the longest; 0 when they made none)."""
    chains = rec.shape[0]
    units = smp.reducer.pairing(chains) or [[c] for c in range(chains)]
    info = resume_state.chain_state(state, rngs, smp)
    output = None if run_file is None else run_file.path
    folder = task_folders.task_folder(output, fresh)
    try:
        return _sample_in_folder(executor, smp, target, rec, bar, compiled, thin,
                                 checkpoint_seconds, warmup, units, info, folder,
                                 None if warm is None else (warm_from, warm))  # fmt: skip
    except BaseException:
        if output is None:
            # No run file names this temporary folder: nothing can resume from it.
            task_folders.remove_task_folder(folder)
        raise


def _previous(made, unit) -> dict | None:
    """The kept draws, statistics, weights and gradients of the chains ``unit`` in ``made``
    (a recorder's ``truncated()``), or ``None`` where none were made."""
    if made is None:
        return None
    q, stats, weights, grads = made
    rows = list(unit)
    return {
        "draws": q[rows],
        "stats": {k: v[rows] for k, v in stats.items()},
        "log_weights": None if weights is None else weights[rows],
        "gradients": None if grads is None else grads[rows],
    }


def _warm_options(warming, warmup: int, unit) -> dict:
    """A task's warm-up options (none for a task that samples only): the iterations to make,
    and where its record of them starts (a run resumed in warm-up goes on with the
    statistics of its unfinished thinning group, this unit's rows of them)."""
    if warming is None:
        return {}
    warm_from, warm = warming
    options = {"warmup": warmup, "warm_from": warm_from, "save_warmup": warm.rec is not None}
    if warm.rec is not None:
        options["warm_first"] = warm.rec.first
        options["warm_tail"] = {k: np.asarray(v)[list(unit)] for k, v in warm.tail().items()}
    return options


def _sample_in_folder(executor, smp, target, rec, bar, compiled, thin, checkpoint_seconds,
                      warmup, units, info, folder, warming=None):  # fmt: skip
    """:func:`sample_on`'s tasks (the chains ``units``, from their state ``info``; with
    ``warming``, ``(warm_from, warm)``, from that point of warm-up), checkpointing in
    ``folder``; returns as it does."""
    chains, draws = rec.shape
    common = dict(target=target, sampler=smp, draws=draws, thin=thin, compiled=compiled,
                  folder=folder, checkpoint_seconds=checkpoint_seconds,
                  reject_on=_REJECT_ON.get(), backend=array_backend.get_backend())  # fmt: skip
    # A run resumed in sampling holds the draws made before in ``rec``: each task goes on
    # from its chains' (with their state after them).
    start = rec.n_done
    made = rec.truncated() if start else None
    tasks = []
    for k, unit in enumerate(units):
        state = resume_state.select_chains(info, unit)
        # A metric per chain: the task's sampler holds its own chains'.
        state["sampler_state"] = smp.select_extra_state(info.get("sampler_state", {}), unit)
        tasks.append(task_worker.ChainTask(index=k, chains=tuple(unit), state=state, **common,
                                         previous=_previous(made, unit),
                                         **_warm_options(warming, warmup, unit)))  # fmt: skip
    # The iterations the bar shows already (the warm-up made here) less those of the draws
    # made before, which the tasks count again.
    before = getattr(bar, "n", 0) - start * thin
    what = "sampling" if warming is None else "warm-up and sampling"
    bar.set_description(f"{smp.name} {what} ({executor.name})")

    def progress(done: list) -> None:
        per_chain = sum(d * len(t.chains) for d, t in zip(done, tasks, strict=True)) / chains
        bar.n = before + int(per_chain)
        bar.refresh()

    try:
        results = executor.map(tasks, progress)
    except KeyboardInterrupt as err:
        raise TasksInterrupted(_made_so_far(tasks, getattr(err, "results", None))) from None
    order = [c for unit in units for c in unit]
    if order != list(range(chains)):
        raise RuntimeError(f"tasks hold chains {order}, not 0..{chains - 1} in order")
    q, stats, weights, grads = _joined(results)
    rec.record(slice(0, draws), q, stats, weights, None, grads)
    warmup_seconds = 0.0
    if warming is not None:
        _join_warmup(smp, warming[1], results)
        warmup_seconds = max(r["warmup_seconds"] for r in results)
    continued = {
        t.index: r["continued_from"]
        for t, r in zip(tasks, results, strict=True)
        if r["continued_from"]
    }
    return continued, sum(r["checkpoints"] for r in results), folder, warmup_seconds


def _joined(answers) -> tuple:
    """``(draws, stats, log_weights, gradients)`` of the tasks' ``answers`` (dicts with those
    keys, each over its chains), their chains one after another in the tasks' order."""

    def join(key):
        values = [a[key] for a in answers]
        return None if values[0] is None else np.concatenate(values)

    stats = {k: np.concatenate([a["stats"][k] for a in answers]) for k in answers[0]["stats"]}
    return join("draws"), stats, join("log_weights"), join("gradients")


def _made_so_far(tasks, results=None) -> tuple | None:
    """The draws every chain of ``tasks`` made: a finished task's ``results`` (by index, the
    executor's; ``None`` where unfinished), else its checkpoint (else the draws a resumed
    task started from); the first ``n`` of each, ``n`` the fewest of any task, or ``None``
    where a task has none (it had not started)."""
    answers = []
    for k, task in enumerate(tasks):
        done = None if results is None else results[k]
        part = None if done is not None else task_worker._checkpointed(task)
        if done is not None:
            answers.append(done)
        elif part is not None:
            answers.append(
                {
                    "draws": part.draws,
                    "stats": part.stats,
                    "log_weights": part.log_weights,
                    "gradients": part.gradients,
                }
            )
        elif task.previous is not None:
            answers.append(task.previous)
        else:
            return None
    n = min(a["draws"].shape[1] for a in answers)
    if n == 0:
        return None

    def first(values):
        return None if values is None else values[:, :n]

    return _joined([
        {"draws": first(a["draws"]), "stats": {k: v[:, :n] for k, v in a["stats"].items()},
         "log_weights": first(a["log_weights"]), "gradients": first(a["gradients"])}
        for a in answers
    ])  # fmt: skip


def _join_warmup(smp, warm, results) -> None:
    """The tasks' kept warm-up draws into ``warm`` (after those of the checkpoint the run
    resumed from), and each chain's adapted metric into ``smp``, so that the sampler after
    the run holds what the in-process run leaves in it."""
    if warm.rec is not None:
        kept = [r["warmup"] for r in results]
        draws = np.concatenate([k[0] for k in kept])
        stats = {name: np.concatenate([k[1][name] for k in kept]) for name in kept[0][1]}
        warm.draws, warm.stats = joined(warm.before, (draws, stats))
    metrics = [r["chain_metrics"] for r in results]
    if all(m is not None for m in metrics):
        smp.set_chain_metrics([m for unit in metrics for m in unit])
