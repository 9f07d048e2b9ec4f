"""Per-chain metric adaptation in runs (issue 30, item 4): a chain's draws do not depend on
the number of chains, on both paths; an executor's tasks warm their own chains up, to the
draws of the in-process run; and a run stopped in warm-up, or while its tasks ran, resumes
to the draws of the uninterrupted run."""

import copy
import functools
import json
import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.results.runfile import partial_dir
from hamiltonia.runner.executors import Executor, run_chain_task
from hamiltonia.runner.tasks import warmup_in_tasks
from tests.interrupting import in_warmup_from, interrupted, killed_at_checkpoint

PATHS = pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])


def _sample(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: r_hat and ESS warnings
        return hm.sample(*args, **kw)


def _same_run(a, b, warmup=False):
    np.testing.assert_array_equal(a.draws, b.draws)
    assert set(a.stats) == set(b.stats)
    for name, values in a.stats.items():
        np.testing.assert_array_equal(b.stats[name], values, err_msg=name)
    if warmup:
        np.testing.assert_array_equal(a.warmup_draws, b.warmup_draws)
        for name, values in a.warmup_stats.items():
            np.testing.assert_array_equal(b.warmup_stats[name], values, err_msg=name)


@PATHS
@pytest.mark.parametrize(
    ("sampler", "target", "options", "few", "many"),
    [
        ("nuts", "gaussian-d10", {}, 1, 3),
        ("hmc", "blr-heart", {"metric": "dense", "n_steps": 5}, 1, 3),
        ("a-hmc", "banana", {"metric": "diagonal", "n_steps": 5}, 2, 4),
    ],
    ids=["nuts", "hmc-dense", "antithetic"],
)
def test_a_chains_draws_do_not_depend_on_the_number_of_chains(compiled, sampler, target,
                                                              options, few, many):  # fmt: skip
    """Chain 0 (the first antithetic pair) of a run of ``few`` chains is that of a run of
    ``many`` with the same seed, bit for bit; pooled, the other chains' draws move its metric
    (the check can fail)."""
    kw = dict(warmup=200, draws=40, seed=3, progress=False, compiled=compiled, **options)
    alone = _sample(target, sampler, chains=few, adapt_metric="per-chain", **kw)
    among = _sample(target, sampler, chains=many, adapt_metric="per-chain", **kw)
    np.testing.assert_array_equal(among.draws[:few], alone.draws)
    for name in ("step_size", "n_grad", "lp"):
        np.testing.assert_array_equal(among.stats[name][:few], alone.stats[name])
    pooled_alone = _sample(target, sampler, chains=few, **kw)
    pooled_among = _sample(target, sampler, chains=many, **kw)
    assert not np.array_equal(pooled_among.draws[:few], pooled_alone.draws)


class Sequential(Executor):
    """Runs the tasks one after the other in this process, each on a copy (as a worker gets
    its own); with ``lost_after``, the cluster is lost once that many tasks have finished."""

    name = "sequential"

    def __init__(self, lost_after=None):
        self.lost_after, self.seen = lost_after, []

    def map(self, tasks, progress):
        out = []
        for task in tasks:
            self.seen.append((task.chains, task.warmup, task.warm_from))
            out.append(run_chain_task(copy.deepcopy(task)))
            if len(out) == self.lost_after:
                raise ConnectionError("the cluster is gone")
        return out


RUN = dict(sampler="hmc", chains=3, warmup=300, draws=60, seed=11, progress=False, n_steps=5,
           metric="diagonal", adapt_metric="per-chain", thin=3, save_warmup=True)  # fmt: skip


@functools.cache
def _uninterrupted(compiled: bool):
    return _sample("banana", compiled=compiled, **RUN)


def test_only_per_chain_adaptation_warms_up_in_the_tasks():
    banana = hm.targets.get("banana")
    assert warmup_in_tasks(hm.samplers.build("nuts", banana, adapt_metric="per-chain"))
    assert not warmup_in_tasks(hm.samplers.build("nuts", banana))
    # A fixed metric: the step size is adapted per chain either way; nothing was asked.
    assert not warmup_in_tasks(hm.samplers.build("hmc", banana, adapt_metric="per-chain"))


@PATHS
def test_a_process_pool_warms_up_in_its_tasks_to_the_in_process_draws(compiled, tmp_path):
    """Thinned, with the warm-up kept: the draws, the kept warm-up draws and the adapted
    metrics (returned into the calling process's sampler) of the in-process run."""
    target = hm.targets.get("banana")
    kw = {k: v for k, v in RUN.items() if k != "sampler"}

    def build():
        return hm.samplers.build("hmc", target, n_steps=5, metric="diagonal",
                                 adapt_metric="per-chain")  # fmt: skip

    serial_sampler, pooled_sampler = build(), build()
    kw = {k: v for k, v in kw.items() if k not in ("n_steps", "metric", "adapt_metric")}
    serial = _sample(target, serial_sampler, compiled=compiled, **kw)
    out = tmp_path / "run.nc"
    pooled = _sample(target, pooled_sampler, compiled=compiled, executor="processes",
                     workers=2, output=out, **kw)  # fmt: skip
    _same_run(serial, pooled, warmup=True)
    assert pooled.attrs["executor"] == "processes" and pooled.attrs["continued_tasks"] == {}
    for a, b in zip(serial_sampler.chain_metrics, pooled_sampler.chain_metrics, strict=True):
        np.testing.assert_array_equal(a.inverse_mass, b.inverse_mass)
    _same_run(serial, hm.load(out), warmup=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.nc"]  # no checkpoints left


@PATHS
@pytest.mark.parametrize("moment", [1, 90, 120, 280, 301], ids=lambda m: f"at-{m}")
def test_a_run_killed_in_warmup_resumes_exactly(tmp_path, monkeypatch, compiled, moment):
    """Killed inside a checkpoint write (just after the step-size search, in the initial
    buffer, in the first and second windows, in the terminal buffer, at the end of warm-up):
    the checkpoint holds each chain's metric, and resume gives the uninterrupted draws."""
    path = tmp_path / "run.nc"
    killed_at_checkpoint(monkeypatch, in_warmup_from(moment), lambda: _sample(
        "banana", compiled=compiled, output=path, checkpoint_seconds=0.0, **RUN))  # fmt: skip
    monkeypatch.undo()
    manifest = json.loads((partial_dir(path) / "manifest.json").read_text())
    done = hm.load(path).attrs["warmup_done"]
    held = manifest["attrs"]["resume"]["sampler_state"].get("chain_metrics")
    # The first window ends at iteration 100: from then on each chain has its own metric.
    assert (held is not None) == (done >= 100)
    if held is not None:
        assert len(held["inverse_mass"]) == 3
    _same_run(_uninterrupted(compiled), hm.resume(path, progress=False), warmup=True)


@PATHS
def test_a_run_stopped_in_warmup_resumes_on_an_executor_whose_tasks_go_on_warming_up(
    tmp_path, monkeypatch, compiled
):
    """Stopped mid-window in this process: each task continues its chains' warm-up from the
    checkpoint (their rows of the tuners' state, of the buffered positions, of the unfinished
    thinning group's statistics)."""
    path = tmp_path / "run.nc"
    killed_at_checkpoint(monkeypatch, in_warmup_from(120), lambda: _sample(
        "banana", compiled=compiled, output=path, checkpoint_seconds=0.0, **RUN))  # fmt: skip
    monkeypatch.undo()
    done = hm.load(path).attrs["warmup_done"]
    assert 100 <= done < 120
    executor = Sequential()
    resumed = hm.resume(path, progress=False, executor=executor)
    assert executor.seen == [((c,), 300, done) for c in range(3)]
    _same_run(_uninterrupted(compiled), resumed, warmup=True)


@PATHS
def test_a_run_whose_cluster_is_lost_resumes_its_tasks(tmp_path, compiled):
    """The tasks warm up and sample; the cluster is lost after two of them: resume goes on
    from the calling process's warm-up checkpoint and the two tasks' checkpoints, to the
    uninterrupted draws."""
    path = tmp_path / "run.nc"
    with pytest.raises(ConnectionError):
        _sample("banana", compiled=compiled, output=path, executor=Sequential(lost_after=2),
                **RUN)  # fmt: skip
    part = hm.load(path)
    assert part.attrs["complete"] is False and part.attrs["warmup_done"] == 0
    resumed = hm.resume(path, progress=False, executor=Sequential())
    assert sorted(resumed.attrs["continued_tasks"]) == [0, 1]
    _same_run(_uninterrupted(compiled), resumed, warmup=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.nc"]


@PATHS
def test_a_run_interrupted_in_sampling_resumes_with_each_chains_metric(tmp_path, monkeypatch,
                                                                      compiled):  # fmt: skip
    from hamiltonia.runner import paths

    path = tmp_path / "run.nc"
    # Compiled chunks of 7 draws, so that the first stored block is not the whole run
    # (chunking changes no draw).
    chunker = paths.Chunker
    monkeypatch.setattr(paths, "Chunker", lambda **_: chunker(first=7, largest=7))
    with pytest.warns(hm.runner.run.InterruptedRunWarning):
        interrupted(monkeypatch, 1, lambda: hm.sample("banana", compiled=compiled, output=path,
                                                      checkpoint_seconds=0.0, **RUN))  # fmt: skip
    monkeypatch.undo()
    part = hm.load(path)
    assert 0 < part.n_draws < 20
    assert len(part.attrs["resume"]["sampler_state"]["chain_metrics"]["inverse_mass"]) == 3
    _same_run(_uninterrupted(compiled), hm.resume(path, progress=False), warmup=True)


@pytest.mark.parametrize("mode", ["pooled", "per-chain"])
def test_a_run_interrupted_in_sampling_here_resumes_on_an_executor(tmp_path, monkeypatch, mode):
    """The tasks go on from the draws made in this process (each its chains'), not from the
    first draw again: the uninterrupted draws, pooled as per chain."""
    kw = dict(RUN, adapt_metric=mode)
    full = _sample("banana", compiled=False, **kw)
    path = tmp_path / "run.nc"
    with pytest.warns(hm.runner.run.InterruptedRunWarning):
        interrupted(monkeypatch, 2, lambda: hm.sample("banana", compiled=False, output=path,
                                                      checkpoint_seconds=0.0, **kw))  # fmt: skip
    assert hm.load(path).n_draws == 2
    resumed = hm.resume(path, progress=False, executor=Sequential())
    assert resumed.attrs["continued_tasks"] == {}  # no task had a checkpoint of its own
    _same_run(full, resumed, warmup=True)
