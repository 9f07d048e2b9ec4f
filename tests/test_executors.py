"""Executors: the same draws on a process pool and on Dask as in the process, pairs kept
together, a killed worker's chains continued from their checkpoints, errors shown."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.executors import DaskExecutor, ProcessPool, make_executor
from hamiltonia.runfile import partial_dir

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
    # The killed worker's task went on from its checkpoint, not from the start.
    assert result.attrs["continued_tasks"]
    assert all(0 < d < 20_000 for d in result.attrs["continued_tasks"].values())


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

    # The worker's traceback comes back as the cause (concurrent.futures); the message names
    # the exception, the chain and the position.
    message = r"Broken.log_prob_and_grad raised ZeroDivisionError: the model's own bug \(chain"
    with pytest.raises(hm.ModelError, match=message):
        hm.sample(
            Broken(),
            "hmc",
            n_steps=3,
            executor="processes",
            workers=1,
            compiled=False,
            **dict(RUN, chains=2, warmup=10, draws=10),
        )


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
    ],
)
def test_bad_executor_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_executor(kwargs.pop("executor"), **kwargs)


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
