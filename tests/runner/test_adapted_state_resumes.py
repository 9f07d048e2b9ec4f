"""Adapted state resumes (issue 48, defect 3): every part's parameter a tuner adapted in
warm-up, built-in or a plugin's, is in the resume state, so a run killed after warm-up (or
during it) resumes to the draws of the uninterrupted run, whatever tuner adapted it.

The tuner here is written as a plugin writes one: a subclass of :class:`hamiltonia.Tuner`
that sets the trajectory's number of leapfrog steps from the adapted step size (a fixed
integration time, as ChEES adapts one), in a sampler recipe registered by name, so that
:func:`hamiltonia.resume` rebuilds it from the file.
"""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.results.runfile import RunFileError, partial_dir, seal_manifest
from hamiltonia.tuners import Tuner
from tests.interrupting import Killed, in_warmup_from, interrupted, killed_at_checkpoint

#: The recipe's own number of steps: what a resume that forgets the adapted one runs with.
DEFAULT_STEPS = 3
WARMUP = 60
RUN = dict(sampler="fixed-time-hmc", chains=2, warmup=WARMUP, draws=40, seed=5, progress=False)


class FixedTime(Tuner):
    """A plugin's tuner: the number of leapfrog steps :math:`L = \\lceil T / \\bar\\varepsilon
    \\rceil` that makes a trajectory last ``duration`` :math:`T` at the chains' mean step
    size, set halfway through warm-up and again at its end."""

    #: The part parameters it adapts, by their path from the sampler.
    adapts = ("trajectory.min_steps", "trajectory.max_steps")

    def __init__(self, duration: float = 2.0):
        self.duration = duration

    def start(self, sampler, chain, n_warmup, rngs):
        self.half = n_warmup // 2

    def compiled(self, dim):
        return PartKernels()  # acts between the compiled chunks, at its boundary

    def boundaries(self, n_warmup):
        return [n_warmup // 2]

    def update(self, sampler, chain, info, iteration):
        if iteration + 1 == self.half:
            self._set(sampler, chain)

    def update_chunk(self, sampler, chain, positions, first_iteration):
        if first_iteration + positions.shape[1] == self.half:
            self._set(sampler, chain)

    def finalize(self, sampler, chain):
        # Not on a run resumed after warm-up, whose tuners never started: the length it
        # adapted comes back with the resume state.
        if hasattr(self, "half"):
            self._set(sampler, chain)

    def _set(self, sampler, chain):
        steps = max(1, int(np.ceil(self.duration / np.mean(chain.step_size))))
        sampler.trajectory.min_steps = sampler.trajectory.max_steps = steps

    # Checkpointed in warm-up: its own state is the iteration it adapts at.
    def warmup_state(self):
        return {"half": self.half} if hasattr(self, "half") else None

    def check_warmup_state(self, state, *, chains, dim, n_warmup, done):
        if state.get("half") != n_warmup // 2:
            raise ValueError(f"half ({state.get('half')!r}) is not {n_warmup // 2}")
        return state

    def restore_warmup_state(self, sampler, state, n_warmup, rngs):
        self.half = state["half"]

    # What the default check cannot know: the range of a number of steps.
    def check_adapted_state(self, sampler, state):
        checked = super().check_adapted_state(sampler, state)
        for path, steps in checked.items():
            if not 1 <= steps <= 1000:
                raise ValueError(f"{path} must be in [1, 1000], got {steps!r}")
        return checked


def fixed_time_hmc(target, *, duration: float = 2.0, n_steps: int = DEFAULT_STEPS, **options):
    """HMC whose trajectories last a fixed time, the number of steps adapted in warm-up."""
    options.setdefault("n_steps_jitter", 0.0)  # the length it adapts is the only one
    sampler = hm.samplers.build("hmc", target, n_steps=n_steps, **options)
    sampler.tuners.append(FixedTime(duration))
    return sampler


@pytest.fixture(autouse=True)
def registered():
    hm.samplers.register("fixed-time-hmc", fixed_time_hmc, overwrite=True)
    yield
    hm.samplers.registry._extra.pop("fixed-time-hmc", None)


_FULL: dict = {}


def _uninterrupted(compiled: bool, **extra):
    key = (compiled, tuple(sorted(extra.items())))
    if key not in _FULL:
        _FULL[key] = hm.sample("banana", compiled=compiled, **RUN, **extra)
    return _FULL[key]


def _assert_same_run(resumed, full):
    assert resumed.attrs["complete"] is True
    np.testing.assert_array_equal(resumed.stats["n_steps"], full.stats["n_steps"])
    np.testing.assert_array_equal(resumed.draws, full.draws)
    for name, values in full.stats.items():
        np.testing.assert_array_equal(resumed.stats[name], values, err_msg=name)


def _seven_at_a_time(monkeypatch):
    """Compiled chunks of 7 iterations, so that the run stops where the test says whatever
    the machine's speed (chunking changes no draw)."""
    from hamiltonia.runner import paths

    chunker = paths.Chunker
    monkeypatch.setattr(paths, "Chunker", lambda **_: chunker(first=7, largest=7))


def _stopped_in_sampling(path, monkeypatch, compiled: bool, **extra):
    """Ctrl-C after the second stored block of draws, every block checkpointed."""
    _seven_at_a_time(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.InterruptedRunWarning)
        part = interrupted(monkeypatch, 2, lambda: hm.sample(
            "banana", compiled=compiled, output=path, checkpoint_seconds=0.0, **RUN,
            **extra))  # fmt: skip
    monkeypatch.undo()
    assert part.n_draws == (14 if compiled else 2)
    return part


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
def test_a_length_adapted_by_a_plugins_tuner_resumes_exactly(tmp_path, monkeypatch, compiled):
    full = _uninterrupted(compiled)
    adapted = int(full.stats["n_steps"][0, 0])
    assert adapted != DEFAULT_STEPS and np.all(full.stats["n_steps"] == adapted)
    path = tmp_path / "run.nc"
    _stopped_in_sampling(path, monkeypatch, compiled)
    resumed = hm.resume(path, progress=False)
    assert resumed.attrs["compiled"] is compiled
    _assert_same_run(resumed, full)


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
def test_a_run_killed_in_warmup_after_the_length_was_adapted_resumes_exactly(
    tmp_path, monkeypatch, compiled
):
    """Killed in the second half of warm-up: the length adapted halfway is in the warm-up
    checkpoint, beside the tuners' own states."""
    full = _uninterrupted(compiled)
    path = tmp_path / "run.nc"
    moment = WARMUP // 2 + 12
    _seven_at_a_time(monkeypatch)
    killed_at_checkpoint(monkeypatch, in_warmup_from(moment), lambda: hm.sample(
        "banana", compiled=compiled, output=path, checkpoint_seconds=0.0, **RUN))  # fmt: skip
    monkeypatch.undo()
    done = hm.load(path).attrs["warmup_done"]
    assert WARMUP // 2 <= done < moment
    _assert_same_run(hm.resume(path, progress=False), full)


def test_a_run_on_a_process_pool_resumes_with_its_adapted_length(tmp_path, monkeypatch):
    """Killed as its tasks were to start, with the state after warm-up written: the resumed
    run's sampler, rebuilt from its recipe and given its adapted length back, goes to the
    tasks."""
    from hamiltonia.runner.executors import ProcessPool

    def killed(self, tasks, progress):
        raise Killed

    full = _uninterrupted(True)
    path = tmp_path / "run.nc"
    monkeypatch.setattr(ProcessPool, "map", killed)
    with pytest.raises(Killed):
        hm.sample("banana", executor="processes", workers=2, output=path, **RUN)
    monkeypatch.undo()
    part = hm.load(path)
    assert "warmup_done" not in part.attrs and part.n_draws == 0
    resumed = hm.resume(path, progress=False, executor="processes", workers=2)
    assert resumed.attrs["executor"] == "processes"
    _assert_same_run(resumed, full)


def test_hamiltonia_resume_on_the_command_line_keeps_the_adapted_length(tmp_path, monkeypatch):
    full = _uninterrupted(False)
    path = tmp_path / "run.nc"
    _stopped_in_sampling(path, monkeypatch, False)
    assert main(["resume", str(path), "--no-progress"]) == 0
    _assert_same_run(hm.load(path), full)


def _manifest(path) -> dict:
    return json.loads((partial_dir(path) / "manifest.json").read_text())


def test_the_resume_state_lists_every_tuners_adapted_state(tmp_path, monkeypatch):
    """Plain JSON, one entry per tuner in order: the built-in ones adapt no part parameter
    (the step sizes and the metric are saved with the chains)."""
    full = _uninterrupted(False, metric="diagonal")
    steps = int(full.stats["n_steps"][0, 0])
    path = tmp_path / "run.nc"
    _stopped_in_sampling(path, monkeypatch, False, metric="diagonal")
    adapted = _manifest(path)["attrs"]["resume"]["adapted"]
    assert adapted == [
        {"kind": "DualAveraging", "state": {}},
        {"kind": "WindowedMetric", "state": {}},
        {"kind": "FixedTime", "state": {"trajectory.min_steps": steps,
                                        "trajectory.max_steps": steps}},
    ]  # fmt: skip
    _assert_same_run(hm.resume(path, progress=False), full)


@pytest.fixture
def unfinished(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "run.nc"
    _stopped_in_sampling(path, monkeypatch, False)
    return path


def _tamper(path, change):
    """Change the manifest and record its new checksum, as a crafted file would."""
    manifest_path = partial_dir(path) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    change(manifest["attrs"]["resume"])
    manifest_path.write_text(json.dumps(seal_manifest(manifest)))


def _set_steps(key, value):
    def change(resume):
        resume["adapted"][1]["state"][key] = value

    return change


BAD = {
    "a length that is no integer": (
        _set_steps("trajectory.min_steps", "many"),
        r"adapted\[1\] \(FixedTime\): trajectory.min_steps must be an integer, got 'many'",
    ),
    "a fractional length": (
        _set_steps("trajectory.max_steps", 7.5),
        r"trajectory.max_steps must be an integer, got 7.5",
    ),
    "a length out of the tuner's range": (
        _set_steps("trajectory.min_steps", 10**12),
        r"adapted\[1\] \(FixedTime\): trajectory.min_steps must be in \[1, 1000\]",
    ),
    "a parameter missing": (
        lambda r: r["adapted"][1]["state"].pop("trajectory.max_steps"),
        r"adapted\[1\] \(FixedTime\): trajectory.max_steps is missing",
    ),
    "a parameter the tuner does not adapt": (
        _set_steps("target.dim", 3),
        r"target.dim is not a parameter FixedTime adapts \(it adapts: trajectory.min_steps, "
        r"trajectory.max_steps\)",
    ),
    "a built-in tuner given a parameter": (
        lambda r: r["adapted"][0]["state"].__setitem__("refresh.rho", 0.5),
        r"adapted\[0\] \(DualAveraging\): refresh.rho is not a parameter DualAveraging "
        r"adapts \(it adapts: none\)",
    ),
    "the tuners in another order": (
        lambda r: r["adapted"].reverse(),
        r"adapted lists the tuners \['FixedTime', 'DualAveraging'\], the sampler adapts with "
        r"\['DualAveraging', 'FixedTime'\]",
    ),
    "a tuner missing": (
        lambda r: r["adapted"].pop(),
        r"adapted lists the tuners \['DualAveraging'\]",
    ),
    "not a list": (
        lambda r: r.__setitem__("adapted", {"FixedTime": 7}),
        r"adapted is not a list of \{kind, state\} mappings",
    ),
    "a state that is no mapping": (
        lambda r: r["adapted"][1].__setitem__("state", [7, 7]),
        r"adapted is not a list of \{kind, state\} mappings",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_tampered_adapted_state_is_one_clear_error(unfinished, case):
    change, message = BAD[case]
    _tamper(unfinished, change)
    with pytest.raises(RunFileError, match=message) as info:
        hm.resume(unfinished, progress=False)
    assert str(unfinished) in str(info.value)


def test_a_file_written_before_the_adapted_state_was_saved_still_resumes(tmp_path, monkeypatch):
    """No ``adapted`` field: nothing adapted beyond the step sizes and the metric. A run of
    the built-in tuners resumes to its uninterrupted draws as before; a plugin's adapted
    length is the recipe's again, as it was in such a file's version."""
    path = tmp_path / "run.nc"
    builtin = dict(RUN, sampler="hmc", n_steps=5, metric="diagonal")
    full = hm.sample("banana", compiled=False, **builtin)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.InterruptedRunWarning)
        interrupted(monkeypatch, 2, lambda: hm.sample(
            "banana", compiled=False, output=path, checkpoint_seconds=0.0, **builtin))  # fmt: skip
    _tamper(path, lambda r: r.pop("adapted"))
    _assert_same_run(hm.resume(path, progress=False), full)

    plugin = tmp_path / "plugin.nc"
    _stopped_in_sampling(plugin, monkeypatch, False)
    _tamper(plugin, lambda r: r.pop("adapted"))
    resumed = hm.resume(plugin, progress=False)
    assert resumed.attrs["complete"] is True
    assert np.all(resumed.stats["n_steps"][:, 2:] == DEFAULT_STEPS)
