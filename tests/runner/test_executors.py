"""Executors: the same draws on a process pool and on Dask as in the process, pairs kept
together, a killed worker's chains continued from their checkpoints, errors shown."""

import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
from pathlib import Path

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.results import owned
from hamiltonia.results.lock import pid_alive as _pid_alive
from hamiltonia.results.runfile import partial_dir
from hamiltonia.runner import executors
from hamiltonia.runner.executors import (
    DaskExecutor,
    Executor,
    ProcessPool,
    _pack_cause,
    _unpack_cause,
    make_executor,
    remove_orphaned_task_folders,
    run_chain_task,
)

RUN = dict(chains=4, warmup=100, draws=200, seed=7, progress=False)


def _same_run(a, b):
    np.testing.assert_array_equal(a.draws, b.draws)
    assert set(a.stats) == set(b.stats)
    for name, values in a.stats.items():
        np.testing.assert_array_equal(b.stats[name], values, err_msg=name)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                 dashboard_address=":0") as cluster,
        distributed.Client(cluster) as client,
    ):  # fmt: skip
        yield client


@pytest.mark.parametrize("compiled", [True, False])
def test_a_process_pool_gives_the_draws_of_the_in_process_run(compiled, tmp_path):
    serial = hm.sample("banana", "hmc", n_steps=5, compiled=compiled, **RUN)
    out = tmp_path / "run.nc"
    pooled = hm.sample("banana", "hmc", n_steps=5, compiled=compiled, executor="processes",
                       workers=2, output=out, **RUN)  # fmt: skip
    _same_run(serial, pooled)
    assert pooled.attrs["executor"] == "processes" and pooled.attrs["continued_tasks"] == {}
    _same_run(serial, hm.load(out))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.nc"]  # no checkpoints left


def test_a_compiled_user_model_runs_on_a_process_pool():
    """A Model with backend="numba" reaches the workers (its compiled code travels as source
    and is compiled again there) and gives the in-process draws on the compiled path."""
    import autograd.numpy as anp

    def logp(p):
        return -0.5 * anp.sum(p["x"] ** 2, axis=-1) + anp.log(p["s"]) - p["s"]

    model = hm.Model(logp, {"x": hm.real(2), "s": hm.positive()}, backend="numba")
    kw = dict(RUN, chains=2, compiled=True)
    serial = hm.sample(model, **kw)
    _same_run(serial, hm.sample(model, executor="processes", workers=2, **kw))


def test_dask_gives_the_draws_of_the_in_process_run(dask_client):
    """NUTS on the default diagonal metric, thinned, with the warm-up kept; and a dense metric
    on the NumPy path, where each task's arrays have one chain instead of four."""
    kw = dict(RUN, thin=2, save_warmup=True)
    serial = hm.sample("banana", **kw)
    distributed = hm.sample("banana", executor=dask_client, **kw)
    _same_run(serial, distributed)
    np.testing.assert_array_equal(distributed.warmup_draws, serial.warmup_draws)
    dense = dict(RUN, metric="dense", compiled=False)
    _same_run(hm.sample("gaussian-d10", **dense),
              hm.sample("gaussian-d10", executor=dask_client, **dense))  # fmt: skip


def test_an_antithetic_pair_is_one_task(dask_client):
    seen = []

    class Watched(DaskExecutor):
        def map(self, tasks, progress):
            seen.extend(t.chains for t in tasks)
            return super().map(tasks, progress)

    serial = hm.sample("banana", "a-hmc", **RUN)
    distributed = hm.sample("banana", "a-hmc", executor=Watched(client=dask_client), **RUN)
    assert seen == [(0, 1), (2, 3)]  # the two chains of a pair share one stream
    _same_run(serial, distributed)


def test_a_killed_worker_costs_no_draws(tmp_path):
    distributed = pytest.importorskip("distributed")
    kw = dict(RUN, chains=2, draws=20_000, checkpoint_seconds=0.0)
    serial = hm.sample("banana", **{k: v for k, v in kw.items() if k != "checkpoint_seconds"})
    out = tmp_path / "run.nc"
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                 dashboard_address=":0") as cluster,
        distributed.Client(cluster) as client,
    ):  # fmt: skip

        def busy_workers():  # a worker between tasks would be killed for nothing
            busy = client.processing()
            return [pid for address, pid in client.run(os.getpid).items() if busy.get(address)]

        result = _sample_killing_a_worker(client, out, kw, busy_workers)
    _same_run(serial, result)
    # The killed worker's task went on from its checkpoint, not from the start. On a loaded
    # machine the kill can land after the task's last checkpoint (all its draws made, its
    # result not yet returned): it then continues from the end, which is no less a
    # continuation; the draws are the serial run's either way (above).
    assert result.attrs["continued_tasks"]
    assert all(0 < d <= 20_000 for d in result.attrs["continued_tasks"].values())


def _sample_killing_a_worker(executor, out: Path, kw: dict, pids):
    """``hm.sample("banana", executor=executor, output=out, **kw)`` while a thread kills one
    of the workers ``pids()`` once two tasks have checkpointed; fails if none was killed."""
    killed = []
    thread = threading.Thread(target=_kill_once_checkpointed, args=(out, pids, killed))
    thread.start()
    result = hm.sample("banana", executor=executor, output=out, **kw)
    thread.join()
    assert killed, "no worker was killed: the test tested nothing"
    return result


def _kill_once_checkpointed(out: Path, pids, killed: list, group: bool = False):
    """Kill one of the worker processes ``pids()`` (or ``group``: its process group) once
    two tasks have checkpointed (a thread's target)."""
    folder = Path(f"{out}.tasks")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not killed:
        if len(list(folder.glob("*.partial/manifest.json"))) >= 2 and (candidates := pids()):
            pid = sorted(candidates)[0]
            if group:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        time.sleep(0.01)


def test_a_process_pool_survives_a_killed_worker(tmp_path):
    kw = dict(RUN, draws=20_000, checkpoint_seconds=0.0)
    serial = hm.sample("banana", **{k: v for k, v in kw.items() if k != "checkpoint_seconds"})
    out = tmp_path / "run.nc"
    shown = []

    class WatchedPool(ProcessPool):
        def map(self, tasks, progress):
            return super().map(tasks, lambda done: shown.append(list(done)) or progress(done))

    with WatchedPool(2) as pool:
        # The pool's processes start with its first run, which then serves the next.
        hm.sample("banana", executor=pool, **dict(RUN, draws=10))
        shown.clear()
        processes = pool._pool._processes
        assert len(processes) == 2
        result = _sample_killing_a_worker(pool, out, kw, lambda: list(processes))
    _same_run(serial, result)
    assert result.attrs["continued_tasks"]
    assert pool._pool is None  # closed with the context
    # The progress bar saw the tasks' draws while they ran, not only when they finished.
    assert any(0 < d < 20_000 for done in shown for d in done)


def test_a_models_exception_is_shown_not_retried():
    class Broken(hm.targets.get("banana").__class__):
        """Fails on the workers only: the warm-up, here, goes through."""

        here = os.getpid()

        def log_prob_and_grad(self, x):
            if os.getpid() != Broken.here:
                raise ZeroDivisionError("the model's own bug")
            return super().log_prob_and_grad(x)

        def numba_kernel(self):
            return None

    # The message names the exception, the chain and the position; the model's exception is
    # the cause, as in the process, with the worker's traceback of it as its own cause.
    message = r"Broken.log_prob_and_grad raised ZeroDivisionError: the model's own bug \(chain"
    with pytest.raises(hm.ModelError, match=message) as caught:
        hm.sample(
            Broken(),
            "hmc",
            n_steps=3,
            executor="processes",
            workers=1,
            compiled=False,
            **dict(RUN, chains=2, warmup=10, draws=10),
        )
    cause = caught.value.__cause__
    assert type(cause) is ZeroDivisionError and str(cause) == "the model's own bug"
    assert "in log_prob_and_grad" in str(cause.__cause__)  # the worker's traceback, as text
    # The failed run removed its temporary task folder (a queued task did not make it again).
    assert not list(Path(tempfile.gettempdir()).glob(f"hamiltonia-tasks-{os.getpid()}-*"))


def _refuse(*args):
    raise TypeError("cannot be rebuilt here")


class _Unloadable(Exception):
    """An exception that pickles but does not unpickle (as one whose class the calling
    process cannot import)."""

    def __reduce__(self):
        return _refuse, self.args


@pytest.mark.parametrize("cause", [ZeroDivisionError("boom"), _Unloadable("x")])
def test_a_models_exception_crosses_from_a_worker_or_its_traceback_does(cause):
    """The model's exception is packed with its ModelError on the worker and unpacked in
    the calling process; one that cannot be unpickled leaves the worker's traceback as the
    cause (what concurrent.futures gives)."""
    try:
        try:
            raise cause
        except Exception as err:
            raise hm.ModelError("the model raised (chain 0, ...)", chain=0) from err
    except hm.ModelError as err:
        # What concurrent.futures makes the cause in the calling process: the worker's
        # traceback of the whole chain, as text.
        remote = RuntimeError("".join(traceback.format_exception(err)))
        _pack_cause(err)
        # What crosses: the error without its cause and context (plain pickling drops them;
        # tblib, installed by dask, would keep them), ...
        err.__cause__ = err.__context__ = None
        sent = pickle.loads(pickle.dumps(err))
    sent.__cause__ = remote  # ... with the worker's traceback as cause
    _unpack_cause(sent)
    assert sent.chain == 0 and not hasattr(sent, "_remote_cause")
    if isinstance(cause, _Unloadable):
        assert sent.__cause__ is remote
    else:
        assert type(sent.__cause__) is ZeroDivisionError and str(sent.__cause__) == "boom"
        assert "raise cause" in str(sent.__cause__.__cause__)


def test_reject_on_reaches_the_workers():
    """A declared "outside the support" exception is a rejection on a worker too."""

    class Bounded(hm.targets.get("banana").__class__):
        def log_prob_and_grad(self, x):
            if np.any(np.asarray(x)[..., 0] > 1.5):
                raise FloatingPointError("outside")
            return super().log_prob_and_grad(x)

        def numba_kernel(self):
            return None

    kw = dict(RUN, chains=2, warmup=50, draws=50, n_steps=3, compiled=False,
              reject_on=FloatingPointError)  # fmt: skip
    serial = hm.sample(Bounded(), "hmc", **kw)
    _same_run(serial, hm.sample(Bounded(), "hmc", executor="processes", workers=1, **kw))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"executor": "gpu"}, r"executor must be one of threads, processes, dask, .* got 'gpu'"),
        ({"executor": "processes", "scheduler": "tcp://x:1"}, r"scheduler= is for executor='dask'"),
        ({"executor": "processes", "workers": 0}, r"workers must be an integer >= 1, got 0"),
        ({"workers": 2}, r"workers=2 is for executor='processes' or 'dask'"),
    ],
)
def test_bad_executor_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_executor(kwargs.pop("executor", None), **kwargs)


def test_the_cli_runs_on_dask(tmp_path, capsys):
    pytest.importorskip("distributed")
    path = tmp_path / "run.nc"
    args = [
        "sample",
        "banana",
        "--chains",
        "2",
        "--warmup",
        "50",
        "--draws",
        "50",
        "--seed",
        "3",
        "--executor",
        "dask",
        "--workers",
        "2",
        "--no-progress",
        "--output",
        str(path),
    ]
    assert main(args) == 0
    assert "2 chains x 50 draws" in capsys.readouterr().out
    serial = hm.sample("banana", chains=2, warmup=50, draws=50, seed=3, progress=False)
    _same_run(serial, hm.load(path))


DRIVER = textwrap.dedent(
    """
    import sys
    import hamiltonia as hm

    if __name__ == "__main__":
        hm.sample("banana", chains=4, warmup=100, draws=20_000, seed=7, progress=False,
                  output=sys.argv[1], checkpoint_seconds=0.0, executor="processes", workers=2)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="process groups")
def test_a_run_whose_calling_process_dies_resumes_its_tasks(tmp_path):
    """The calling process and its workers are killed (a machine lost) while the tasks run;
    resume continues the tasks from their checkpoints, to the draws of an undisturbed run."""
    serial = hm.sample("banana", **dict(RUN, draws=20_000))
    script, out = tmp_path / "driver.py", tmp_path / "run.nc"
    script.write_text(DRIVER)
    proc = subprocess.Popen([sys.executable, str(script), str(out)], start_new_session=True)
    killed = []
    _kill_once_checkpointed(out, lambda: [proc.pid], killed, group=True)
    proc.wait()
    assert killed, "the run ended before any task checkpointed: the test tested nothing"
    partial = hm.load(out)
    assert partial.attrs["complete"] is False and partial.attrs["executor"] == "processes"
    # A copy without the tasks' checkpoints resumes in this process from the end of warm-up.
    shutil.copytree(partial_dir(out), partial_dir(tmp_path / "copy.nc"))
    _same_run(serial, hm.resume(tmp_path / "copy.nc", progress=False))
    resumed = hm.resume(out, executor="processes", workers=2, progress=False)
    _same_run(serial, resumed)
    assert resumed.attrs["continued_tasks"]  # the tasks went on from their checkpoints
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.nc", "driver.py", "run.nc"]


def _children(pid: int) -> list:
    """The processes whose parent is ``pid`` (Linux: from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended meanwhile
            continue
        if int(text[text.rfind(")") + 2 :].split()[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive_after(seconds: float, pids) -> list:
    """Those of ``pids`` still alive (zombies count as ended) after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while (alive := [pid for pid in pids if _pid_alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def _kill_group(pid: int) -> None:
    """Kill what is left of the process group ``pid`` (a failed test leaves no strays)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


IDLE_CALLER = textwrap.dedent(
    """
    import os
    import time
    from hamiltonia.runner.executors import ProcessPool

    if __name__ == "__main__":
        pool = ProcessPool(1)
        print(pool._get_pool().submit(os.getpid).result(), flush=True)
        time.sleep(300)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_pool_worker_ends_with_its_killed_calling_process(tmp_path):
    """An idle worker would otherwise wait for work forever (it holds its own queue's
    writing end, so it never reads an end of file)."""
    script = tmp_path / "caller.py"
    script.write_text(IDLE_CALLER)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        worker = int(proc.stdout.readline())
        proc.kill()  # the calling process only, as the OOM killer would
        proc.wait()
        assert not _alive_after(5, [worker]), "the worker outlived its calling process"
    finally:
        proc.stdout.close()
        _kill_group(proc.pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_run_whose_calling_process_is_killed_resumes_at_once(tmp_path):
    """The calling process alone is killed while its tasks run: its workers end with it,
    releasing their tasks' locks, and an immediate resume continues the tasks from their
    checkpoints, to the draws of an undisturbed run."""
    serial = hm.sample("banana", **dict(RUN, draws=20_000))
    script, out = tmp_path / "driver.py", tmp_path / "run.nc"
    script.write_text(DRIVER)
    proc = subprocess.Popen([sys.executable, str(script), str(out)], start_new_session=True)
    try:
        deadline, workers = time.monotonic() + 300, []
        while time.monotonic() < deadline and proc.poll() is None:
            workers = _children(proc.pid)  # the pool's 2 workers and its resource tracker
            if list(Path(f"{out}.tasks").glob("*.partial/manifest.json")) and len(workers) >= 2:
                break
            time.sleep(0.01)
        proc.kill()  # not its process group: the workers are left to notice
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, "the run ended before it was killed"
        assert not _alive_after(5, workers), "workers outlived their calling process"
        resumed = hm.resume(out, executor="processes", workers=2, progress=False)
    finally:
        _kill_group(proc.pid)
    _same_run(serial, resumed)
    assert resumed.attrs["continued_tasks"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["driver.py", "run.nc"]


class _Failing(Executor):
    """Fails as a lost cluster would, once the tasks' folder is made."""

    name = "failing"

    def __init__(self):
        self.folders = []

    def map(self, tasks, progress):
        self.folders.append(Path(tasks[0].folder))
        assert self.folders[-1].is_dir()
        raise ConnectionError("the cluster is gone")


def test_a_failed_run_removes_its_temporary_task_folder_but_keeps_its_output_tasks(tmp_path):
    failing, kw = _Failing(), dict(RUN, chains=2, warmup=10, draws=10)
    with pytest.raises(ConnectionError):
        hm.sample("banana", executor=failing, **kw)
    (folder,) = failing.folders
    assert folder.name.startswith(f"hamiltonia-tasks-{os.getpid()}-")  # its owner, named
    assert not folder.exists()
    # With an output, the tasks' checkpoints are what hm.resume continues from.
    out = tmp_path / "run.nc"
    with pytest.raises(ConnectionError):
        hm.sample("banana", executor=failing, output=out, **kw)
    assert failing.folders[-1] == Path(f"{out}.tasks") and failing.folders[-1].is_dir()


def test_a_task_started_after_its_run_failed_leaves_no_folder():
    """A task queued on a worker may start after its run failed and removed its temporary
    folder: it stops, without making the folder again."""
    seen = []

    class Late(Executor):
        name = "late"

        def map(self, tasks, progress):
            seen.append(Path(tasks[0].folder))
            shutil.rmtree(seen[0])  # as the failed run does
            with pytest.raises(RuntimeError, match=r"task folder .* is gone"):
                run_chain_task(tasks[0])
            raise ConnectionError("the cluster is gone")

    with pytest.raises(ConnectionError):
        hm.sample("banana", executor=Late(), **dict(RUN, chains=2, warmup=10, draws=10))
    assert seen and not seen[0].exists()


def test_the_next_run_removes_the_task_folders_of_dead_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead_pid = int(dead.stdout)
    assert not _pid_alive(dead_pid)
    host = executors._host()
    left = tmp_path / f"hamiltonia-tasks-{dead_pid}-{host}-k3x_9q2a"
    owned.claim_folder(left, executors.TASKS)  # as a run makes it
    owned.claim_folder(left / "task-000000.nc.partial", owned.CHECKPOINTS)
    kept = [
        tmp_path / f"hamiltonia-tasks-{os.getpid()}-{host}-abcdefgh",  # a live run's
        tmp_path / f"hamiltonia-tasks-{dead_pid}-other.host-abcdefgh",  # another machine's
        tmp_path / "hamiltonia-tasks-abcdefgh",  # of an earlier version: owner unknown
        tmp_path / f"hamiltonia-tasks-{dead_pid}-{host}-unmarked",  # not made by hamiltonia
    ]
    for folder in kept:
        folder.mkdir()
    (tmp_path / f"hamiltonia-tasks-{dead_pid}-{host}-file").write_text("not a folder")
    with pytest.raises(ConnectionError):
        hm.sample("banana", executor=_Failing(), **dict(RUN, chains=2, warmup=10, draws=10))
    assert not left.exists()
    assert all(folder.is_dir() for folder in kept)
    assert remove_orphaned_task_folders() == []


INTERRUPTED_POOL = textwrap.dedent(
    """
    import os, signal, sys, threading, time, warnings
    from pathlib import Path
    import numpy as np
    import hamiltonia as hm

    RUN = dict(chains=2, warmup=50, draws=100_000, seed=3, n_steps=3000, step_size=0.01,
               progress=False)

    def interrupt_once_sampling(out, executor):
        # Past each task's first checkpoint (its first block): the draws returned may not be
        # fewer than those told, which a task that died of the signal would leave.
        while True:
            told = [int(p.read_text() or 0) for p in Path(f"{out}.tasks").glob("*.progress")]
            if len(told) == 2 and min(told) >= 200:
                break
            time.sleep(0.01)
        MADE.append(min(told))
        # Then Ctrl-C: as a terminal sends it, to the whole process group (a pool's workers
        # too, which must not die of it); to this process alone for Dask (as a notebook's
        # interrupt: its cluster's processes are not the run's to stop).
        if executor == "processes":
            os.killpg(os.getpgid(0), signal.SIGINT)
        else:
            os.kill(os.getpid(), signal.SIGINT)

    MADE = []

    if __name__ == "__main__":
        out, executor = Path(sys.argv[1]), sys.argv[2]
        signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Thread(target=interrupt_once_sampling, args=(out, executor),
                         daemon=True).start()
        began = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            part = hm.sample("banana", "hmc", executor=executor, workers=2, output=out, **RUN)
        seconds = time.perf_counter() - began
        said = [str(w.message) for w in caught if "interrupted" in str(w.message)]
        full = hm.sample("banana", "hmc", **RUN)
        n = part.n_draws
        assert MADE and MADE[0] <= n < RUN["draws"], (MADE, n)
        np.testing.assert_array_equal(part.draws, full.draws[:, :n])
        # A stop request left behind (the calling process died while its tasks stopped) must
        # not stop the resumed tasks.
        Path(f"{out}.tasks", "stop").touch()
        resumed = hm.resume(out, executor=executor, workers=2, progress=False)
        np.testing.assert_array_equal(resumed.draws, full.draws)
        print("OK", n, round(seconds, 1), said[0] if said else "no warning")
    """
)


@pytest.mark.parametrize("executor", ["processes", "dask"])
def test_ctrl_c_on_an_executor_returns_the_draws_and_resumes_exactly(tmp_path, executor):
    """Ctrl-C while the executor's tasks sample: the tasks checkpoint and stop (not run on
    to the end), the call returns every chain's draws so far with a warning, and resume
    with the executor continues the tasks to the uninterrupted run's draws."""
    if executor == "dask":
        pytest.importorskip("distributed")
    script = tmp_path / "interrupted_pool.py"  # spawned workers re-import the main module
    script.write_text(INTERRUPTED_POOL)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "run.nc"), executor],
                          capture_output=True, text=True, timeout=600,
                          start_new_session=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    ok = proc.stdout.split("OK", 1)[1].split(maxsplit=2)
    assert float(ok[1]) < 60, "the call waited for the tasks to finish"
    assert "interrupted after" in ok[2] and f"executor={executor!r}" in ok[2]


def test_a_task_folder_that_is_not_the_runs_is_refused_before_any_work(tmp_path):
    out = tmp_path / "run.nc"
    tasks = tmp_path / "run.nc.tasks"
    tasks.write_text("not a folder")
    with pytest.raises(FileExistsError, match="is a file, not a folder"):
        hm.sample("banana", "hmc", executor="processes", workers=1, output=out, **RUN)
    tasks.unlink()
    tasks.mkdir()
    (tasks / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"notes\.txt"):
        hm.sample("banana", "hmc", executor="processes", workers=1, output=out, **RUN)
    assert (tasks / "notes.txt").read_text() == "mine"
    assert not out.exists() and not partial_dir(out).exists()  # refused before any work
