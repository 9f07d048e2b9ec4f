"""The output of a run: checked before any work, locked, appended atomically, never lost."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.runfile import RunFile, RunFileError, partial_dir

SHORT = {"chains": 2, "warmup": 30, "draws": 40, "seed": 0, "progress": False}


class Counting(hm.Target):
    """A standard normal that counts its evaluations: a check that comes 'before any work'
    leaves the count at zero."""

    calls = 0

    def __init__(self):
        super().__init__(2)

    def log_prob_and_grad(self, x):
        Counting.calls += 1
        x = np.asarray(x, dtype=float)
        return -0.5 * np.sum(x**2, axis=-1), -x


@pytest.fixture
def counting():
    Counting.calls = 0
    return Counting()


@pytest.mark.parametrize(
    ("where", "match"),
    [
        ("missing/run.nc", "does not exist"),
        (".", "is a folder"),
    ],
)
def test_a_bad_output_path_is_refused_before_any_work(tmp_path, counting, where, match):
    with pytest.raises(RunFileError, match=match):
        hm.sample(counting, output=tmp_path / where, compiled=False, **SHORT)
    assert Counting.calls == 0


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_folder_is_refused_before_any_work(tmp_path, counting):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(RunFileError, match="not writable"):
            hm.sample(counting, output=folder / "run.nc", compiled=False, **SHORT)
    finally:
        folder.chmod(0o700)
    assert Counting.calls == 0


def test_an_existing_file_is_kept_unless_overwrite(tmp_path, counting):
    path = tmp_path / "run.nc"
    path.write_bytes(b"precious")
    with pytest.raises(RunFileError, match="exists; pass overwrite=True"):
        hm.sample(counting, output=path, compiled=False, **SHORT)
    assert path.read_bytes() == b"precious" and Counting.calls == 0
    result = hm.sample(counting, output=path, overwrite=True, compiled=False, **SHORT)
    np.testing.assert_array_equal(hm.load(path).draws, result.draws)


def test_an_unfinished_run_points_to_resume(tmp_path):
    path = tmp_path / "run.nc"
    run_file = RunFile.open(path)
    run_file.append(np.zeros((2, 3, 2)), {"lp": np.zeros((2, 3))}, None, {"names": ["a", "b"]})
    run_file.close()
    with pytest.raises(RunFileError, match=r"unfinished run.*hamiltonia.resume"):
        hm.sample("banana", output=path, **SHORT)


def test_a_run_stopped_before_its_first_checkpoint_leaves_nothing_in_the_way(tmp_path):
    """No draws were saved (killed in warm-up): the empty folder does not block a new run."""
    path = tmp_path / "run.nc"
    partial_dir(path).mkdir()
    (partial_dir(path) / ".block-000000000000.npz.x.tmp").write_bytes(b"half")
    hm.sample("banana", output=path, **SHORT)
    assert hm.load(path).attrs["complete"] is True and not partial_dir(path).exists()


def test_an_error_before_the_first_draw_leaves_no_unfinished_run(tmp_path):
    path = tmp_path / "run.nc"
    with pytest.raises(hm.ModelError):
        hm.sample(hm.Target.from_logp(lambda x: undefined_name, dim=2), output=path,  # noqa: F821
                  compiled=False, **SHORT)  # fmt: skip
    assert not partial_dir(path).exists() and not path.with_name("run.nc.lock").exists()


def test_a_second_writer_is_refused_at_the_start(tmp_path, counting):
    path = tmp_path / "run.nc"
    holder = RunFile.open(path)
    (path.parent / "run.nc.lock").write_text(str(os.getppid()))  # another live process
    try:
        with pytest.raises(RunFileError, match=r"being written by another process"):
            hm.sample(counting, output=path, compiled=False, **SHORT)
    finally:
        holder.release()
    assert Counting.calls == 0


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    path = tmp_path / "run.nc"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "run.nc.lock").write_text(str(dead.pid))
    hm.sample("banana", output=path, **SHORT)
    assert hm.load(path).attrs["complete"] is True
    assert not (tmp_path / "run.nc.lock").exists()


def test_a_corrupt_or_truncated_file_gives_one_clear_error(tmp_path):
    path = tmp_path / "run.nc"
    hm.sample("banana", output=path, **SHORT)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(RunFileError, match=r"run.nc is not a readable hamiltonia run file"):
        hm.load(path)
    with pytest.raises(RunFileError, match=r"not a readable hamiltonia run file"):
        hm.resume(path)


def test_the_cli_refuses_an_existing_output_and_overwrites_on_request(tmp_path, capsys):
    path = tmp_path / "run.nc"
    path.write_bytes(b"x")
    args = ["sample", "banana", "--chains", "2", "--warmup", "20", "--draws", "20",
            "--no-progress", "--output", str(path)]  # fmt: skip
    assert main(args) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    assert hm.load(path).n_draws == 20


KILLED_RUN = textwrap.dedent(
    """
    import sys
    import hamiltonia as hm
    hm.sample("banana", chains=2, warmup=100, draws=int(sys.argv[2]), seed=5, progress=False,
              output=sys.argv[1], checkpoint_seconds=0.0, compiled=sys.argv[3] == "1")
    """
)


def _kill_and_resume(tmp_path, moments, draws, compiled):
    reference = hm.sample("banana", chains=2, warmup=100, draws=draws, seed=5, progress=False,
                          compiled=compiled)  # fmt: skip
    rng = np.random.default_rng(0)
    resumed = 0

    def start(path):
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_RUN, str(path), str(draws), "1" if compiled else "0"]
        )
        # From the first checkpoint on, the run is what a kill can hit.
        while proc.poll() is None and not (partial_dir(path) / "manifest.json").exists():
            time.sleep(0.001)
        return proc, time.perf_counter()

    # How long the run lasts from its first checkpoint to its final file (the interpreter's exit
    # after that is not worth killing): the kills fall within that span.
    whole = tmp_path / "whole.nc"
    proc, began = start(whole)
    while proc.poll() is None and not whole.exists():
        time.sleep(0.001)
    span = time.perf_counter() - began
    proc.wait()
    for k in range(moments):
        path = tmp_path / f"run{k}.nc"
        proc, _ = start(path)
        try:
            proc.wait(timeout=float(rng.uniform(0.0, 0.9 * span)))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        if path.exists():  # finished before the kill
            result = hm.load(path)
        else:
            partial = hm.load(path)  # loads whatever moment the kill hit
            assert partial.attrs["complete"] is False
            result = hm.resume(path, progress=False)
            resumed += 1
        np.testing.assert_array_equal(result.draws, reference.draws)
        assert result.attrs["complete"] is True
    # Most kills hit a run in progress (else the test would test nothing).
    assert resumed >= (moments + 1) // 2


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_a_killed_run_resumes_to_the_uninterrupted_draws(tmp_path):
    """Three kills on the compiled path, the one users run (the NumPy path's checkpoints are
    the same code, and test_run.py resumes it after interruptions at many points)."""
    _kill_and_resume(tmp_path, moments=3, draws=20_000, compiled=True)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
@pytest.mark.parametrize(("compiled", "draws"), [(True, 30_000), (False, 1_000)])
def test_twenty_kills_at_random_moments_all_resume_exactly(tmp_path, compiled, draws):
    """The issue's script, on both paths (python -m pytest -m slow)."""
    _kill_and_resume(tmp_path, moments=20, draws=draws, compiled=compiled)
