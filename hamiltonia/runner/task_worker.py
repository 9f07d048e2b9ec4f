"""The worker side of an executor's tasks: what a task is, and what runs it on a worker.

One job: a :class:`ChainTask` (some chains' sampling iterations, and their warm-up where
each chain adapts on its own) and :func:`run_chain_task`, which runs one on a worker process
or in this one: from the task's last checkpoint where one exists, checkpointing its draws and
chain state as a run file in the run's task folder (:mod:`hamiltonia.runner.task_folders`),
telling its progress in a small file, and stopping, its draws checkpointed, when the calling
process asks (a :data:`~hamiltonia.runner.task_folders.STOP_FILE` in the folder). Also what
a task's answer carries back across processes: the model's exception with its cause
(``_pack_cause``, ``_unpack_cause``) and the iterations made (``_task_progress``).

The functions submitted to workers (:func:`run_chain_task`, and the process pool's
``_run_pickled``) and :class:`ChainTask` are pickled by reference, so they stay here, at
this module path. The calling side is :mod:`hamiltonia.runner.tasks` (which makes the
tasks) and :mod:`hamiltonia.runner.executors` (which runs them, and re-exports these names).
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hamiltonia.results import owned
from hamiltonia.runner.task_folders import (
    STOP_FILE,
    _task_folder_here,
    _temp_folder_of_this_host,
)

__all__ = [
    "POLL_SECONDS",
    "STOPPED",
    "TASK_LOCK_SECONDS",
    "ChainTask",
    "TaskStopped",
    "run_chain_task",
]

#: Seconds between looks at the tasks' checkpoints for the progress bar.
POLL_SECONDS = 1.0

#: Seconds a task waits for the lock of its checkpoint: a task started again after its
#: calling process died may find a worker of the dead run still holding it, until that
#: worker notices its parent is gone (within the process pool's
#: :data:`~hamiltonia.runner.executors.PARENT_POLL_SECONDS`).
TASK_LOCK_SECONDS = 30.0

#: The key of the answer of a task that stopped when asked (its draws are in its checkpoint).
STOPPED = "stopped"


class TaskStopped(Exception):
    """A task stopped because the run was interrupted (the calling process asked it to),
    after checkpointing the draws it had made."""


@dataclass
class ChainTask:
    """The sampling iterations of some chains, from their state after warm-up.

    Attributes
    ----------
    index : int
        The task's number (its checkpoint is ``task-<index>.nc`` in ``folder``).
    chains : tuple of int
        The chains it runs, in the run's numbering.
    target, sampler
        The run's target and its sampler after warm-up (metric and step size frozen).
    state : dict
        :func:`hamiltonia.runner.resume_state.chain_state` of these chains.
    draws, thin : int
        Kept draws per chain, and iterations per kept draw.
    compiled : bool
        Run on the compiled path (as the calling process decided) or the NumPy path.
    folder : str or None
        Where the task checkpoints; ``None``: no checkpoints.
    checkpoint_seconds : float
        Seconds between checkpoints.
    reject_on : tuple of exception classes
        As in :func:`hamiltonia.sample`.
    backend : str
        The array backend of the run.
    warmup : int
        The run's warm-up iterations, for a task that warms its chains up (per-chain
        adaptation: ``sampler`` holds its tuners, their state that of every chain of the
        run); 0 for a task that samples from the state after warm-up.
    warm_from : int
        The warm-up iterations ``state`` has made (a run resumed in warm-up).
    save_warmup : bool
        Record the warm-up iterations, and return the kept ones.
    warm_first : int
        The warm-up iteration the first recorded one is (the start of the unfinished thinning
        group of a run resumed in warm-up).
    warm_tail : dict, optional
        The statistics of that group's iterations made before, by name, one row per chain of
        the task.
    previous : dict, optional
        The kept draws its chains made before ``state`` (a run resumed in sampling):
        ``draws``, ``stats``, ``log_weights`` and ``gradients``, one row per chain of the
        task; the task goes on from there.
    """

    index: int
    chains: tuple
    target: object
    sampler: object
    state: dict
    draws: int
    thin: int
    compiled: bool
    folder: str | None
    checkpoint_seconds: float
    reject_on: tuple = ()
    backend: str = "numpy"
    warmup: int = 0
    warm_from: int = 0
    save_warmup: bool = False
    warm_first: int = 0
    warm_tail: dict | None = None
    previous: dict | None = None

    @property
    def warm_span(self) -> int:
        """The warm-up iterations the task makes (0 for one that samples only)."""
        return self.warmup - self.warm_from if self.warmup else 0

    @property
    def iterations(self) -> int:
        """The iterations the task makes: its warm-up and its ``draws * thin``."""
        return self.warm_span + self.draws * self.thin

    @property
    def checkpoint_path(self) -> Path | None:
        """The run file the task checkpoints to, or ``None``."""
        return None if self.folder is None else Path(self.folder) / f"task-{self.index:06d}.nc"


def _dumps(value) -> bytes:
    """Pickle with cloudpickle where installed (a user's model may be a closure)."""
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps(value)
    return cloudpickle.dumps(value)


def _checkpointed(task: ChainTask):
    """The task's last checkpoint (draws so far and chain state), or ``None``."""
    from hamiltonia.results.runfile import RunFileError, has_checkpoints, read_partial

    path = task.checkpoint_path
    if path is None or not has_checkpoints(path):
        return None
    try:
        return read_partial(path)
    except RunFileError:
        return None  # unreadable: start the task afresh (its draws come out the same)


def run_chain_task(task: ChainTask) -> dict:
    """Run one task (on a worker), with the run's array backend and ``reject_on``."""
    from hamiltonia import backend
    from hamiltonia.state import ModelError, rejecting

    with backend.using(task.backend), rejecting(task.reject_on):
        try:
            return _run_chain_task(task)
        except ModelError as err:  # name the run's chain, not the task's row
            raise err.renumbered(task.chains) from err.__cause__


def _run_chain_task(task: ChainTask) -> dict:
    """Run one task (on a worker): its chains' warm-up where it makes it and their sampling
    iterations, checkpointed, continuing from its last checkpoint where one exists. Returns
    the draws, statistics, log weights and gradients of its chains, the draw it continued
    from (0: from warm-up's end), the number of checkpoints it wrote, and, for a task that
    warmed up, its kept warm-up draws (``warmup``), its chains' adapted metrics
    (``chain_metrics``) and the seconds its warm-up took."""
    from tqdm.auto import tqdm

    from hamiltonia.results import Result
    from hamiltonia.results.runfile import RunFile
    from hamiltonia.runner import loop, resume_state
    from hamiltonia.runner.recording import WarmupDraws

    smp, target = task.sampler, task.target
    rngs = [np.random.Generator(np.random.PCG64()) for _ in task.chains]
    part = _checkpointed(task)
    # A checkpoint is written from the first draw on: a task continued from one is past its
    # warm-up.
    warming = task.warm_span > 0 and part is None
    if not warming:
        smp.tuners = []  # warm-up is over: the parts are frozen
    info = task.state if part is None else part.manifest["chain_state"]
    state = resume_state.restore(smp, info, rngs)
    if warming:
        for tuner in smp.tuners:  # their state holds every chain of the run
            tuner.take_chains(task.chains, rngs)
    run_file = None
    if task.checkpoint_path is not None:
        folder = task.checkpoint_path.parent
        if _temp_folder_of_this_host(folder):
            # Made by the calling process, and removed by it when the run failed: a task
            # that starts after that (it was queued) stops, rather than make the folder
            # again where nothing would remove it.
            if not folder.is_dir():
                raise RuntimeError(f"the run's task folder {folder} is gone: the run ended")
        else:  # output.tasks, or on a worker of another machine the calling one's folder
            _task_folder_here(folder)
        run_file = RunFile.open(
            task.checkpoint_path, overwrite=part is None, continuing=part is not None,
            lock_timeout=TASK_LOCK_SECONDS,
        )  # fmt: skip
    names = list(target.reported_names)
    saved = {"at": 0.0, "count": 0, "shown": 0.0, "polled": 0.0}
    warm_rec = None
    if warming and task.save_warmup:
        warm_rec = loop.Recorder(len(task.chains), task.warmup - task.warm_first, len(names),
                                 smp.stats(), first=task.warm_first)  # fmt: skip
        if task.warm_tail is not None:
            warm_rec.prefill_statistics(task.warm_tail)
    warm = {"kept": None}  # the kept warm-up draws, once warm-up is over
    if part is not None and task.save_warmup and part.warmup_draws is not None:
        warm["kept"] = (part.warmup_draws, part.warmup_stats)

    def tell(iterations: int) -> None:
        now = time.perf_counter()
        if task.checkpoint_path is not None and now - saved["shown"] >= POLL_SECONDS:
            # A few bytes for the calling process's progress bar, between checkpoints.
            _tell_progress(task, iterations)
            saved["shown"] = now

    stop = None if task.checkpoint_path is None else task.checkpoint_path.parent / STOP_FILE

    def stopping() -> bool:
        """Whether the calling process asked the tasks to stop (looked at once a poll)."""
        now = time.perf_counter()
        if stop is None or now - saved["polled"] < POLL_SECONDS:
            return False
        saved["polled"] = now
        return stop.exists()

    def warmed(current, done: int) -> None:
        tell(done - task.warm_from)
        if stopping():
            raise TaskStopped(f"task {task.index} stopped in warm-up")

    def checkpoint(current):
        tell(task.warm_span + rec.n_done * task.thin)
        now = time.perf_counter()
        halt = stopping()
        if run_file is None or (now - saved["at"] < task.checkpoint_seconds and not halt):
            return
        if warm_rec is not None and warm["kept"] is None:  # warm-up is over: kept for good
            warm["kept"] = WarmupDraws(task.thin, warm_rec).kept()
        q, stats, weights, grads = rec.truncated()
        meta = {"names": names, "chain_state": resume_state.chain_state(current, rngs, smp)}
        run_file.append(q, stats, weights, meta, grads, warmup=warm["kept"])
        saved["at"] = time.perf_counter()
        saved["count"] += 1
        if halt:
            raise TaskStopped(f"task {task.index} stopped after {rec.n_done} draws")

    rec = loop.Recorder(
        len(task.chains), task.draws, len(names), smp.stats(), checkpoint,
        smp.reducer.records_gradients, target.dim,
    )  # fmt: skip
    start = 0
    if part is not None:
        rec.prefill(
            Result(draws=part.draws, stats=part.stats, names=tuple(names),
                   log_weights=part.log_weights, gradients=part.gradients)
        )  # fmt: skip
        start = part.draws.shape[1]
    elif task.previous is not None:  # a run resumed in sampling: on from its draws
        rec.prefill(Result(names=tuple(names), **task.previous))
        start = task.previous["draws"].shape[1]
    plan = loop.choose_plan(smp, task.compiled)
    began = time.perf_counter()
    try:
        _, t1 = loop.run_chains(plan, smp, target, state, rngs, task.warmup if warming else 0,
                                task.draws, rec, tqdm(disable=True), start, task.thin,
                                warm_rec, task.warm_from, warmed)  # fmt: skip
    except TaskStopped:
        # Asked to stop (Ctrl-C in the calling process), its draws checkpointed: an answer,
        # not an error (a Dask worker would log an error's traceback).
        return {STOPPED: True}
    finally:
        if run_file is not None:
            run_file.release()
    if warm_rec is not None and warm["kept"] is None:
        warm["kept"] = WarmupDraws(task.thin, warm_rec).kept()
    q, stats, weights, grads = rec.truncated()
    out = {"draws": q, "stats": stats, "log_weights": weights, "gradients": grads,
           "continued_from": start if part is not None else 0,
           "checkpoints": saved["count"]}  # fmt: skip
    if task.warm_span:
        out.update(warmup=warm["kept"], chain_metrics=getattr(smp, "chain_metrics", None),
                   warmup_seconds=t1 - began if warming else 0.0)  # fmt: skip
    return out


def _run_pickled(payload: bytes) -> dict:
    """Run a pickled task on a pool worker; a model's exception travels with its cause."""
    from hamiltonia.state import ModelError

    try:
        return run_chain_task(pickle.loads(payload))
    except ModelError as err:
        _pack_cause(err)
        raise


def _pack_cause(err) -> None:
    """Let the model's exception (``err.__cause__``) cross to the calling process with
    ``err``.

    Pickling an exception drops its ``__cause__``, and ``concurrent.futures`` puts the
    worker's traceback text (the whole chain, the model's exception included) in its place;
    so the cause goes as pickled bytes in an attribute of ``err`` (with cloudpickle where
    installed: a user's exception class may be defined in a script or a function). A cause
    that cannot be pickled is left out: the caller then sees the worker's traceback only.
    """
    if err.__cause__ is None:
        return
    try:
        err._remote_cause = _dumps(err.__cause__)
    except Exception:  # an exception holding an unpicklable object: its text is what we have
        pass


def _unpack_cause(err) -> None:
    """Make the model's own exception, packed on the worker by :func:`_pack_cause`, the
    ``__cause__`` of ``err`` again, with the worker's traceback text (what
    ``concurrent.futures`` made the cause) as its own cause."""
    packed = err.__dict__.pop("_remote_cause", None)
    if packed is None:
        return
    try:
        cause = pickle.loads(packed)
    except Exception:  # e.g. a class whose __init__ cannot be called with its args alone
        return
    if isinstance(cause, BaseException):
        cause.__cause__ = err.__cause__
        err.__cause__ = cause


def _progress_path(task: ChainTask) -> Path:
    return task.checkpoint_path.with_suffix(".progress")


def _tell_progress(task: ChainTask, iterations: int) -> None:
    """Replace the task's progress file (not flushed to disk: it is only for the eye)."""
    path = _progress_path(task)
    tmp = path.with_suffix(".progress-tmp")
    # Made anew each time (never opened through a link put there), then renamed.
    tmp.unlink(missing_ok=True)
    owned.touch_new_file(tmp, str(iterations).encode())
    os.replace(tmp, path)


def _task_progress(task: ChainTask) -> int:
    """Iterations per chain the task has made, as it last told (about once a second; 0 before
    that, or where the workers share no folder with this process)."""
    if task.checkpoint_path is None:
        return 0
    try:
        return int(_progress_path(task).read_text())
    except (OSError, ValueError):
        return 0
