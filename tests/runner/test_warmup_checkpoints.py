"""Warm-up is checkpointed: a run stopped at any moment of warm-up after its first checkpoint
resumes to the draws (and warm-up draws) of the uninterrupted run, on both paths (issue 26,
"Nothing lost, round two")."""

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.results.runfile import partial_dir
from hamiltonia.runner.run import WarmupInterrupted
from hamiltonia.tuners.adaptation import WindowedMetric, metric_windows
from tests.interrupting import Killed, in_warmup_from, killed_at_checkpoint

# hmc with an adapted diagonal metric: dual averaging and the windowed metric both adapt.
WARMUP = 300
RUN = dict(sampler="hmc", chains=2, warmup=WARMUP, draws=60, seed=11, progress=False,
           n_steps=5, metric="diagonal")  # fmt: skip
# Moments (warm-up iterations) a kill hits: just after the step-size search, in the initial
# buffer, in each slow window, in the terminal buffer, and at the end of warm-up.
WINDOWS = metric_windows(WARMUP)
MOMENTS = {"search": 1, "buffer": 40, "first-window": 90, "mid-slow-window": 120,
           "last-window": 200, "terminal": 280, "end": WARMUP + 1}  # fmt: skip


def test_the_moments_fall_where_they_are_meant_to():
    assert WINDOWS == [(75, 100), (100, 150), (150, 250)]


@functools.cache
def _uninterrupted(compiled: bool, thin: int, save_warmup: bool):
    return hm.sample("banana", compiled=compiled, thin=thin, save_warmup=save_warmup, **RUN)


def _assert_same_run(resumed, full):
    assert resumed.attrs["complete"] is True
    np.testing.assert_array_equal(resumed.draws, full.draws)
    assert set(resumed.stats) == set(full.stats)
    for name, values in full.stats.items():
        np.testing.assert_array_equal(resumed.stats[name], values, err_msg=name)
    if full.warmup_draws is None:
        assert resumed.warmup_draws is None
        return
    np.testing.assert_array_equal(resumed.warmup_draws, full.warmup_draws)
    assert set(resumed.warmup_stats) == set(full.warmup_stats)
    for name, values in full.warmup_stats.items():
        np.testing.assert_array_equal(resumed.warmup_stats[name], values, err_msg=name)


def _seven_at_a_time(monkeypatch):
    """Compiled chunks of 7 iterations (so that a kill can fall inside a window); the
    uninterrupted run and the resumed one chunk as usual: chunking changes no draw."""
    from hamiltonia.runner import paths

    chunker = paths.Chunker
    monkeypatch.setattr(paths, "Chunker", lambda **_: chunker(first=7, largest=7))


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
@pytest.mark.parametrize("moment", list(MOMENTS.values()), ids=list(MOMENTS))
def test_a_run_killed_in_warmup_resumes_exactly(tmp_path, monkeypatch, compiled, moment):
    """Killed inside a checkpoint write (the file keeps the checkpoint before it), with the
    warm-up draws kept and thinned (a kept draw sums its group's gradients, which the
    checkpoint carries for the unfinished group)."""
    thin = 3
    full = _uninterrupted(compiled, thin, True)
    path = tmp_path / "run.nc"
    if compiled:
        _seven_at_a_time(monkeypatch)
    killed_at_checkpoint(monkeypatch, in_warmup_from(moment), lambda: hm.sample(
        "banana", compiled=compiled, thin=thin, save_warmup=True, output=path,
        checkpoint_seconds=0.0, **RUN))  # fmt: skip
    monkeypatch.undo()
    part = hm.load(path)
    done = part.attrs["warmup_done"]
    assert part.attrs["complete"] is False and part.attrs["draws_done"] == 0
    assert part.n_draws == 0
    # The NumPy path checkpoints after every iteration, the compiled one after every chunk.
    assert done == moment - 1 if not compiled else moment - 7 <= done < moment
    np.testing.assert_array_equal(part.warmup_draws, full.warmup_draws[:, : done // thin])
    resumed = hm.resume(path, progress=False)
    assert resumed.attrs["compiled"] is compiled
    assert "warmup_done" not in resumed.attrs
    _assert_same_run(resumed, full)
    assert hm.load(path).attrs["complete"] is True
    assert not partial_dir(path).exists()


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
@pytest.mark.parametrize("moment", [MOMENTS["mid-slow-window"], MOMENTS["last-window"]])
def test_the_default_run_killed_in_warmup_resumes_exactly(tmp_path, monkeypatch, compiled,
                                                          moment):  # fmt: skip
    """No thinning, no warm-up draws kept: the draws and statistics of the uninterrupted run
    (and a chunking of the resumed warm-up unlike the killed run's)."""
    full = _uninterrupted(compiled, 1, False)
    path = tmp_path / "run.nc"
    if compiled:
        _seven_at_a_time(monkeypatch)
    killed_at_checkpoint(monkeypatch, in_warmup_from(moment), lambda: hm.sample(
        "banana", compiled=compiled, output=path, checkpoint_seconds=0.0, **RUN))  # fmt: skip
    monkeypatch.undo()
    assert 0 < hm.load(path).attrs["warmup_done"] < moment
    _assert_same_run(hm.resume(path, progress=False), full)


def test_the_first_checkpoint_comes_right_after_the_step_size_search(tmp_path, monkeypatch):
    """Whatever checkpoint_seconds says: a run killed (at the end of the first metric
    window here) before its next checkpoint loses the warm-up since the search only."""

    def kill(self, sampler, chain):
        raise Killed

    monkeypatch.setattr(WindowedMetric, "end_window", kill)
    path = tmp_path / "run.nc"
    killed_at_checkpoint(
        monkeypatch,
        lambda meta: meta["attrs"].get("warmup_done") != 0,
        lambda: hm.sample("banana", output=path, checkpoint_seconds=1e9, **RUN),
    )
    monkeypatch.undo()
    part = hm.load(path)
    assert part.attrs["warmup_done"] == 0 and part.attrs["step_size_initial"]
    warm = part.attrs["resume"]["warmup"]
    assert [t["kind"] for t in warm["tuners"]] == ["DualAveraging", "WindowedMetric"]
    _assert_same_run(hm.resume(path, progress=False), _uninterrupted(True, 1, False))


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
def test_ctrl_c_in_warmup_saves_it_and_resume_continues(tmp_path, monkeypatch, compiled):
    """Ctrl-C as a metric window ends (inside an iteration on the NumPy path, after a chunk
    whose draws were recorded on the compiled one): the run saves the state of the last
    whole iteration or chunk and says so; resume goes on from there."""
    full = _uninterrupted(compiled, 2, True)
    original = WindowedMetric.end_window
    ends = {"n": 0}

    def interrupt(self, sampler, chain):
        ends["n"] += 1
        if ends["n"] == 2:  # the end of the second window, iteration 150
            raise KeyboardInterrupt
        original(self, sampler, chain)

    monkeypatch.setattr(WindowedMetric, "end_window", interrupt)
    path = tmp_path / "run.nc"
    with pytest.raises(WarmupInterrupted, match=r"after \d+ of 300 warm-up") as info:
        hm.sample("banana", compiled=compiled, thin=2, save_warmup=True, output=path,
                  checkpoint_seconds=1e9, **RUN)  # fmt: skip
    monkeypatch.undo()
    assert isinstance(info.value, KeyboardInterrupt)
    assert info.value.path == path and info.value.warmup == WARMUP
    part = hm.load(path)
    assert part.attrs["warmup_done"] == info.value.done
    assert info.value.done == 149 if not compiled else info.value.done < 150
    np.testing.assert_array_equal(part.warmup_draws, full.warmup_draws[:, : info.value.done // 2])
    _assert_same_run(hm.resume(path, progress=False), full)


def test_ctrl_c_in_warmup_without_output_is_a_plain_interrupt(monkeypatch):
    def interrupt(self, sampler, chain):
        raise KeyboardInterrupt

    monkeypatch.setattr(WindowedMetric, "end_window", interrupt)
    with pytest.raises(KeyboardInterrupt) as info:
        hm.sample("banana", **RUN)
    assert not isinstance(info.value, WarmupInterrupted)


def test_a_run_on_a_process_pool_killed_in_warmup_resumes_exactly(tmp_path, monkeypatch):
    """Warm-up runs in the calling process, checkpointed as any run's; the tasks start
    after it, on the executor the resumed run is given."""
    full = _uninterrupted(True, 1, False)
    path = tmp_path / "run.nc"
    killed_at_checkpoint(monkeypatch, in_warmup_from(MOMENTS["mid-slow-window"]), lambda: (
        hm.sample("banana", executor="processes", workers=2, output=path,
                  checkpoint_seconds=0.0, **RUN)))  # fmt: skip
    assert 0 < hm.load(path).attrs["warmup_done"] < MOMENTS["mid-slow-window"]
    resumed = hm.resume(path, progress=False, executor="processes", workers=2)
    assert resumed.attrs["executor"] == "processes"
    _assert_same_run(resumed, full)


def test_a_warmup_checkpoint_is_plain_json(tmp_path, monkeypatch):
    """The tuners' state is JSON (floats by repr: read back exactly)."""
    path = tmp_path / "run.nc"
    killed_at_checkpoint(
        monkeypatch,
        in_warmup_from(MOMENTS["first-window"]),
        lambda: hm.sample("banana", compiled=False, output=path, checkpoint_seconds=0.0, **RUN),
    )
    manifest = json.loads((partial_dir(path) / "manifest.json").read_text())
    warm = manifest["attrs"]["resume"]["warmup"]
    assert warm["done"] == MOMENTS["first-window"] - 1 and warm["of"] == WARMUP
    dual, windowed = (t["state"] for t in warm["tuners"])
    assert set(dual) == {"mu", "h_bar", "log_eps_bar", "m", "parameters"}
    assert len(dual["m"]) == 2 and dual["parameters"]["target_accept"] == 0.8
    assert windowed["windows"] == [list(w) for w in WINDOWS]
    # Iterations 75 .. 88 of the first window: 14 positions of 2 chains in 2 dimensions.
    assert np.shape(windowed["buffer"]) == (14, 2, 2)


KILLED_IN_WARMUP = textwrap.dedent(
    """
    import sys
    import hamiltonia as hm
    hm.sample("banana", chains=2, warmup=int(sys.argv[2]), draws=200, seed=8, progress=False,
              output=sys.argv[1], checkpoint_seconds=0.0, save_warmup=True)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_a_run_sigkilled_in_warmup_resumes_exactly(tmp_path):
    """A real kill (SIGKILL) during a compiled NUTS warm-up, once a few checkpoints are
    written: the resumed run is the uninterrupted one."""
    warmup = 20_000
    path = tmp_path / "run.nc"
    manifest = partial_dir(path) / "manifest.json"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_IN_WARMUP, str(path), str(warmup)])
    done, deadline = None, time.monotonic() + 120
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                done = json.loads(manifest.read_text())["attrs"].get("warmup_done")
            except (OSError, ValueError, KeyError):
                done = None
            if done is not None and done >= 200:
                break
            time.sleep(0.001)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    part = hm.load(path)
    assert part.attrs["complete"] is False, "the run ended before the kill"
    assert 200 <= part.attrs["warmup_done"] < warmup
    resumed = hm.resume(path, progress=False)
    full = hm.sample("banana", chains=2, warmup=warmup, draws=200, seed=8, progress=False,
                     save_warmup=True)  # fmt: skip
    _assert_same_run(resumed, full)
