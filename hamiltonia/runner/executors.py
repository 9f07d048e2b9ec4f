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

Where they live
---------------
This module holds the executors and the choice of one (:func:`make_executor`); it
re-exports the names of two modules of one job each:

* :mod:`hamiltonia.runner.task_worker`: the worker side of the tasks, :class:`ChainTask`
  and :func:`run_chain_task` (what runs on a worker), their checkpoints, progress and stop;
* :mod:`hamiltonia.runner.task_folders`: the run's task folder, ``TASKS``,
  ``task_folder``, ``check_task_folder``, ``remove_task_folder`` and
  ``remove_orphaned_task_folders``.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor
from concurrent.futures import wait as futures_wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from hamiltonia.results import owned

# Besides __all__, the names marked F401 are re-exported: they were defined here before the
# worker side of the tasks and their folders moved to modules of their own (issue 48).
from hamiltonia.runner.task_folders import (
    STOP_FILE,
    TASKS,
    TEMP_PREFIX,  # noqa: F401
    _host,  # noqa: F401
    check_task_folder,  # noqa: F401
    remove_orphaned_task_folders,  # noqa: F401
    remove_task_folder,  # noqa: F401
    task_folder,  # noqa: F401
)
from hamiltonia.runner.task_worker import (
    POLL_SECONDS,
    STOPPED,
    TASK_LOCK_SECONDS,  # noqa: F401
    ChainTask,
    TaskStopped,  # noqa: F401
    _checkpointed,  # noqa: F401
    _dumps,
    _pack_cause,  # noqa: F401
    _run_pickled,
    _task_progress,
    _unpack_cause,
    run_chain_task,
)

__all__ = [
    "ChainTask",
    "DaskExecutor",
    "Executor",
    "ProcessPool",
    "WorkerLostError",
    "make_executor",
    "run_chain_task",
]

#: Seconds between a pool worker's looks at whether the process that started it is alive.
PARENT_POLL_SECONDS = 0.2

#: Seconds a pool's tasks have, after Ctrl-C, to checkpoint the draws they made and stop;
#: a worker still running then is ended (its task keeps its last checkpoint).
STOP_SECONDS = 20.0


class WorkerLostError(RuntimeError):
    """Workers kept dying: the tasks could not finish within the retries allowed."""


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
    """Ask the tasks to checkpoint their draws and stop: a
    :data:`~hamiltonia.runner.task_folders.STOP_FILE` in each task folder that exists here (a
    worker of another machine sees it where the folder is shared). Returns the files, for
    :func:`_withdraw_stop`."""
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
