"""Where the chains' sampling iterations run: in this process, on a local process pool, or on
a Dask cluster.

:func:`hamiltonia.sample` warms all chains up together in the calling process, because the
warm-up's metric adaptation pools the chains (Stan's windowed adaptation over all of them);
the end of warm-up is the barrier where the tuners pool and freeze. The sampling iterations
then split into tasks of one chain each (one antithetic pair: its two chains draw the same
numbers), each continuing from its chain's state after warm-up: its position, momentum, log
density, gradient, auxiliary variables, step size and generator state, with the frozen
metric. A chain's iterations depend on nothing else, so every executor gives the draws of the
in-process run, bit for bit.

With per-chain adaptation (``adapt_metric="per-chain"``: every tuner adapts each chain on its
own draws) no barrier joins the chains: after the step-size search in the calling process,
each task warms its own chains up (the rows of the tuners' state that are theirs,
:meth:`~hamiltonia.tuners.Tuner.take_chains`) and samples them, and returns its kept warm-up
draws and adapted metrics with its draws. A task checkpoints from its first draw on; one
started again before that warms up again from the state it was given, to the same draws.

A task checkpoints its draws and its chain state as a run file
(:mod:`hamiltonia.results.runfile`) in a folder every worker can read (``output.tasks`` beside the
output, or a temporary folder of the calling machine for a run without ``output``; removed
when the run is complete, and the temporary one also when the run fails). A task that is
started again, because its worker died, continues from its last checkpoint; the draws are
those of an undisturbed run. An exception raised by the model is not retried: it is shown.

Executors:

* :class:`ProcessPool`: a local pool of processes (``concurrent.futures`` with the
  ``spawn`` start method, safe with numba's threads); when a worker process dies the pool
  is rebuilt and the unfinished tasks resubmitted, up to ``max_retries`` times. The
  workers end with the calling process, even one killed.
* :class:`DaskExecutor`: Dask distributed. ``scheduler=None`` starts a ``LocalCluster``;
  ``scheduler="tcp://host:port"`` connects to a running cluster (``dask scheduler`` and
  ``dask worker``, or dask-jobqueue on SLURM); a ready ``distributed.Client`` is used as
  it is. Dask reschedules the tasks of a worker that dies (up to its
  ``distributed.scheduler.allowed-failures``).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import re
import signal
import socket
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor
from concurrent.futures import wait as futures_wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hamiltonia.results import owned
from hamiltonia.results.errors import ForeignPathError

__all__ = [
    "ChainTask",
    "DaskExecutor",
    "Executor",
    "ProcessPool",
    "WorkerLostError",
    "make_executor",
    "run_chain_task",
]

#: Seconds between looks at the tasks' checkpoints for the progress bar.
POLL_SECONDS = 1.0

#: Seconds between a pool worker's looks at whether the process that started it is alive.
PARENT_POLL_SECONDS = 0.2

#: Seconds a task waits for the lock of its checkpoint: a task started again after its
#: calling process died may find a worker of the dead run still holding it, until that
#: worker notices its parent is gone (within ``PARENT_POLL_SECONDS``).
TASK_LOCK_SECONDS = 30.0


#: Seconds a pool's tasks have, after Ctrl-C, to checkpoint the draws they made and stop;
#: a worker still running then is ended (its task keeps its last checkpoint).
STOP_SECONDS = 20.0

#: The file whose presence in a run's task folder asks its tasks to stop (Ctrl-C).
STOP_FILE = "stop"

#: The key of the answer of a task that stopped when asked (its draws are in its checkpoint).
STOPPED = "stopped"


class WorkerLostError(RuntimeError):
    """Workers kept dying: the tasks could not finish within the retries allowed."""


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


class Executor:
    """Runs :class:`ChainTask`\\ s and returns their results in order."""

    name = "executor"

    def map(self, tasks: list, progress: Callable[[list], None]) -> list:
        """Results of ``run_chain_task`` for each task, in order; ``progress`` is called
        with the iterations per chain each task has done so far (its warm-up's, then
        ``thin`` per kept draw), about once a second."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor started (a cluster, a pool)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ProcessPool(Executor):
    """A local pool of ``workers`` processes (default: one per core). The processes start
    with the first run and serve every run until :meth:`close` (use the pool as a context
    manager, or pass it to several :func:`hamiltonia.sample` calls): starting them, which
    imports hamiltonia and loads the compiled kernels, takes seconds."""

    name = "processes"

    def __init__(self, workers: int | None = None, max_retries: int = 3):
        self.workers = workers or os.cpu_count() or 1
        self.max_retries = max_retries
        self._pool = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_watch_parent,
                initargs=(os.getpid(),),
            )
        return self._pool

    def map(self, tasks, progress):
        results: list = [None] * len(tasks)
        pending = set(range(len(tasks)))
        failures = 0
        while pending:
            pool = self._get_pool()
            futures = {pool.submit(_run_pickled, _dumps(tasks[i])): i for i in pending}
            try:
                waiting = set(futures)
                while waiting:
                    done, waiting = futures_wait(
                        waiting, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED
                    )
                    for future in done:
                        i = futures[future]
                        results[i] = _unstopped(_result(future))  # a model's error as is
                        pending.discard(i)
                    progress(_progress(tasks, results))
            except BrokenProcessPool:
                # A worker process died: a new pool continues the unfinished tasks from
                # their checkpoints.
                self.close()
                failures += 1
                if failures > self.max_retries:
                    raise WorkerLostError(
                        f"worker processes died {failures} times; {len(pending)} of "
                        f"{len(tasks)} tasks unfinished (their checkpoints remain)"
                    ) from None
            except KeyboardInterrupt as err:
                self._stop(tasks, futures)
                # The tasks that finished, before or during the stop: their draws are whole
                # (their last checkpoint may be older).
                for future, i in futures.items():
                    if future.done() and not future.cancelled() and future.exception() is None:
                        results[i] = _finished(future.result())
                err.results = results
                raise
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
        return results

    def _stop(self, tasks, futures) -> None:
        """After Ctrl-C: ask the running tasks to checkpoint their draws and stop (a file in
        their folder), give them :data:`STOP_SECONDS`, end the workers still running, and
        let the pool go without waiting for it."""
        for future in futures:
            future.cancel()
        flags = _request_stop(tasks)
        running = {f for f in futures if not f.cancelled()}
        try:
            running = futures_wait(running, timeout=STOP_SECONDS).not_done
        except KeyboardInterrupt:  # a second Ctrl-C: stop now
            pass
        finally:
            _withdraw_stop(flags)
            if running:
                self._end_workers()
            else:
                self.close()

    def _end_workers(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            if process.is_alive():
                process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _finished(answer: dict) -> dict | None:
    """A task's answer if it finished, ``None`` if it stopped when asked."""
    return None if answer.get(STOPPED) else answer


def _unstopped(answer: dict) -> dict:
    """A task's answer while no stop was asked: a stopped task is an error then."""
    if answer.get(STOPPED):
        raise RuntimeError(
            "a task stopped at a stop request no one made (a stop file in the run's task "
            "folder): run again to continue from its checkpoint"
        )
    return answer


def _request_stop(tasks) -> list[Path]:
    """Ask the tasks to checkpoint their draws and stop: a :data:`STOP_FILE` in each task
    folder that exists here (a worker of another machine sees it where the folder is
    shared). Returns the files, for :func:`_withdraw_stop`."""
    folders = {t.checkpoint_path.parent for t in tasks if t.checkpoint_path is not None}
    # The folder is in use (the tasks' files come and go): its marker, not its entries.
    flags = [folder / STOP_FILE for folder in folders if owned.is_marked(folder, TASKS)]
    for flag in flags:
        owned.touch_new_file(flag)
    return flags


def _withdraw_stop(flags) -> None:
    """Remove the stop requests: a task continued later (resume) would stop at once."""
    for flag in flags:
        flag.unlink(missing_ok=True)


def _result(future):
    """``future.result()``, with a model's exception as the cause of its ``ModelError`` (not
    the worker's traceback text, which becomes the cause of the model's exception)."""
    from hamiltonia.state import ModelError

    try:
        return future.result()
    except ModelError as err:
        _unpack_cause(err)
        raise


def _watch_parent(parent: int) -> None:
    """Initializer of a pool's worker processes: end the worker as soon as ``parent``, the
    process that started it, is gone.

    A worker whose calling process was killed (``SIGKILL``, a lost session) would otherwise
    run its task to the end, holding the lock of the task's checkpoint, so that
    :func:`hamiltonia.resume` could not continue it; an idle one would wait for work
    forever. A daemon thread looks every ``PARENT_POLL_SECONDS`` whether the worker's parent
    is still ``parent`` (an orphan is adopted by another process, init or a subreaper) and
    ends the worker at once when it is not: its task's last checkpoint is complete, by
    design of the run file. ``prctl(PR_SET_PDEATHSIG)`` would be quicker on Linux but fires
    when the *thread* that started the worker ends, which a pool used from several threads
    would mistake for its parent's death. Elsewhere than POSIX a parent that died leaves
    ``os.getppid()`` as it was: the watch then never fires.

    Parameters
    ----------
    parent : int
        The process id of the process that starts the pool (its own ``os.getpid()``: the
        worker's ``os.getppid()`` may already be another's if that process died meanwhile).
    """

    def watch():
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)  # no clean-up: the parent that would wait for it is gone

    # Ctrl-C reaches every process of the terminal's group: a worker would die with the
    # draws made since its last checkpoint. The calling process asks the tasks to stop
    # instead (ProcessPool.map), and they checkpoint first. (A program a model starts from a
    # worker inherits the ignored SIGINT; the pool ends it with its worker.)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=watch, name="hamiltonia-parent-watch", daemon=True).start()


class DaskExecutor(Executor):
    """Dask distributed: a ``LocalCluster`` of ``workers`` processes (default 2), the
    cluster at ``scheduler``, or a given ``distributed.Client``."""

    name = "dask"

    def __init__(self, scheduler=None, workers: int | None = None, client=None):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ImportError(
                "executor='dask' needs dask.distributed: pip install 'hamiltonia[dask]'"
            ) from None
        self._cluster = None
        self._own_client = client is None
        if client is not None:
            self.client = client
        elif scheduler is not None:
            self.client = Client(scheduler)
        else:
            self._cluster = LocalCluster(
                n_workers=workers or 2, threads_per_worker=1, processes=True,
                dashboard_address=":0",
            )  # fmt: skip
            self.client = Client(self._cluster)

    def map(self, tasks, progress):
        from distributed import wait

        run = uuid.uuid4().hex[:12]
        futures = [
            self.client.submit(run_chain_task, task, key=f"hamiltonia-{run}-{task.index}",
                               pure=False)
            for task in tasks
        ]  # fmt: skip
        results: list = [None] * len(tasks)
        try:
            waiting = set(range(len(tasks)))
            while waiting:
                try:
                    wait([futures[i] for i in waiting], timeout=POLL_SECONDS,
                         return_when="FIRST_COMPLETED")  # fmt: skip
                except TimeoutError:  # none finished within the poll: show the progress
                    pass
                for i in list(waiting):
                    if futures[i].done():
                        # A model's exception is shown as is.
                        results[i] = _unstopped(futures[i].result())
                        waiting.discard(i)
                progress(_progress(tasks, results))
        except KeyboardInterrupt as err:
            # As ProcessPool: the tasks checkpoint and stop; the finished ones' draws return.
            flags = _request_stop(tasks)
            try:
                wait(futures, timeout=STOP_SECONDS)
            except (TimeoutError, KeyboardInterrupt):
                pass
            finally:
                _withdraw_stop(flags)
                for i, future in enumerate(futures):
                    if future.status == "finished":
                        results[i] = _finished(future.result())
                self.client.cancel(futures)
            err.results = results
            raise
        except BaseException:
            self.client.cancel(futures)
            raise
        return results

    def close(self):
        if self._own_client:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()


def _progress(tasks, results) -> list:
    """The iterations each task has made (its warm-up's and ``thin`` per kept draw)."""
    pairs = zip(tasks, results, strict=True)
    return [t.iterations if r is not None else _task_progress(t) for t, r in pairs]


EXECUTORS = ("threads", "processes", "dask")


def check_workers(executor, workers) -> None:
    """Refuse ``workers`` without an executor that has workers, or with an executor made
    already (it has its own): it would be ignored."""
    if workers is None:
        return
    if executor is None or executor == "threads":
        raise ValueError(
            f"workers={workers} is for executor='processes' or 'dask'; the chains run in "
            "this process without one"
        )
    if not isinstance(executor, str):
        raise ValueError(
            f"workers={workers} is for executor='processes' or 'dask'; the executor given "
            f"({type(executor).__name__}) has its own workers"
        )


def make_executor(executor, scheduler=None, workers=None) -> Executor | None:
    """The executor of ``sample(executor=...)``: ``None`` for the in-process run."""
    if scheduler is not None and executor not in ("dask", None):
        raise ValueError(f"scheduler= is for executor='dask', not {executor!r}")
    if executor is None and scheduler is not None:
        executor = "dask"
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):  # fmt: skip
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    check_workers(executor, workers)
    if executor is None or executor == "threads":
        return None
    if isinstance(executor, Executor):
        return executor
    if executor == "processes":
        return ProcessPool(workers)
    if executor == "dask":
        return DaskExecutor(scheduler, workers)
    if type(executor).__name__ == "Client" and hasattr(executor, "submit"):
        return DaskExecutor(client=executor)
    raise ValueError(
        f"executor must be one of {', '.join(EXECUTORS)}, an Executor or a "
        f"distributed.Client, got {executor!r}"
    )


#: The start of the name of a run's temporary task folder, followed by the owner's
#: process id and host (dashes taken out) and ``mkdtemp``'s random suffix.
TEMP_PREFIX = "hamiltonia-tasks-"


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "_"


def _temp_task_folder() -> str:
    """A new temporary task folder named after this process and host, so that a later run
    can tell it was left by a process that died (:func:`remove_orphaned_task_folders`), and
    marked as hamiltonia's (made exclusively by ``mkdtemp``)."""
    folder = tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-{_host()}-")
    owned.mark_new_folder(folder, TASKS)
    return folder


def _temp_folder_pattern() -> re.Pattern:
    """The names of this host's temporary task folders; the group ``pid`` is the owner's."""
    return re.compile(rf"{re.escape(TEMP_PREFIX)}(?P<pid>\d+)-{re.escape(_host())}-[A-Za-z0-9_]+")


def _temp_folder_of_this_host(folder: Path) -> bool:
    return _temp_folder_pattern().fullmatch(folder.name) is not None


def remove_orphaned_task_folders(parent=None) -> list:
    """Remove the temporary task folders of runs whose process died before it could
    remove them (killed, or lost with its machine).

    Only folders of this host and user whose owner process is not alive are removed, and
    only those hamiltonia marked as its own and that hold nothing else (a temporary folder
    shared by several machines holds other hosts' running runs too, whose process ids mean
    nothing here). Folders of earlier versions, without an owner in their name or without
    the marker, are left alone.

    Parameters
    ----------
    parent : path-like, optional
        Where to look; default ``tempfile.gettempdir()``, where runs make them.

    Returns
    -------
    list of Path
        The folders removed.
    """
    from hamiltonia.results.runfile import left_by_dead_processes

    parent = Path(tempfile.gettempdir() if parent is None else parent)
    removed = []
    for folder, _ in left_by_dead_processes(parent, _temp_folder_pattern()):
        try:
            info = folder.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):  # a link or a file of that name: not ours
            continue
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            continue  # another user's: not ours to judge
        try:
            owned.remove_folder(folder, TASKS)
        except OSError:  # not hamiltonia's, or in use: left as it is
            continue
        removed.append(folder)
    return removed


#: A run's task folder (``output.tasks``, or a temporary one): the tasks' checkpoint folders,
#: locks, progress files and temporaries, and the stop request. Anything else in it is not
#: the run's: such a folder is refused, and nothing in it is ever removed.
TASKS = owned.FolderKind(
    "tasks",
    "the checkpoints of a run's tasks",
    rf"task-\d{{6}}\.(nc\.lock|nc|progress|progress-tmp)|{owned.TEMPORARY}|{STOP_FILE}",
    subfolders=((r"task-\d{6}\.nc\.partial", owned.CHECKPOINTS),),
)


def check_task_folder(output) -> bool:
    """Whether the run of ``output`` has a task folder ``output.tasks`` (``False`` where none
    is there); refused before any work where that name holds anything hamiltonia did not
    make (:class:`~hamiltonia.results.errors.ForeignPathError`): a file, a link, a folder
    without hamiltonia's marker, or one that holds files that are not the tasks'."""
    return owned.owned_folder(Path(f"{output}.tasks"), TASKS)


def remove_task_folder(folder) -> bool:
    """Remove a run's task folder, entry by entry, once nothing can resume from it; one that
    holds anything hamiltonia did not make (or is gone, or in use) is left as it is.
    Returns whether it was removed."""
    try:
        owned.remove_folder(Path(folder), TASKS)
    except OSError:
        return False
    return True


def _task_folder_here(folder: Path) -> None:
    """The task folder ``folder`` as this worker sees it: hamiltonia's, made here where
    missing (another task of the run may be making it at the same moment: its marker follows
    its ``mkdir`` within moments), refused where it holds anything else."""
    for _ in range(100):
        try:
            if owned.owned_folder(folder, TASKS):
                return
            folder.parent.mkdir(parents=True, exist_ok=True)
            owned.claim_folder(folder, TASKS)
            return
        except ForeignPathError:
            time.sleep(0.01)
    owned.owned_folder(folder, TASKS)


def task_folder(output, fresh: bool = True) -> str:
    """Where the tasks checkpoint: ``output.tasks`` beside the output (kept if the run
    stops; emptied for a ``fresh`` run, kept for a resumed one), or a new temporary folder
    for a run without output (removed by the run however it ends; the folders of runs whose
    process died are removed here, by the next run)."""
    remove_orphaned_task_folders()
    if output is None:
        return _temp_task_folder()
    folder = Path(f"{output}.tasks")
    present = check_task_folder(output)
    if present and fresh:
        # Checkpoints of an earlier run that stopped belong to other chain states.
        owned.remove_folder(folder, TASKS)
        present = False
    if not present:
        owned.claim_folder(folder, TASKS)
    # A stop request left by a calling process that died while its tasks stopped: the tasks
    # of this run would stop at once.
    (folder / STOP_FILE).unlink(missing_ok=True)
    return str(folder)
