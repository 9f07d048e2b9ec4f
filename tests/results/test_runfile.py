"""The output of a run: checked before any work, locked, appended atomically, never lost."""

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.results import owned
from hamiltonia.results.runfile import RunFile, RunFileError, partial_dir

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
    """No draws were saved (killed in warm-up): the folder the run made, empty but for a
    temporary, does not block a new run."""
    path = tmp_path / "run.nc"
    owned.claim_folder(partial_dir(path), owned.CHECKPOINTS)
    (partial_dir(path) / f".block-000000000000.npz.{os.getpid()}.x.tmp").write_bytes(b"half")
    hm.sample("banana", output=path, **SHORT)
    assert hm.load(path).attrs["complete"] is True and not partial_dir(path).exists()


def test_an_error_before_the_first_draw_leaves_no_unfinished_run(tmp_path):
    path = tmp_path / "run.nc"
    with pytest.raises(hm.ModelError):
        broken = hm.Target.from_logp(lambda x: undefined_name, dim=2, backend="autograd")  # noqa: F821
        hm.sample(broken, output=path, compiled=False, **SHORT)
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

    def progress(path) -> int:
        """Iterations (warm-up, then sampling) that the run's checkpoints hold; -1 before
        its first."""
        try:
            manifest = json.loads((partial_dir(path) / "manifest.json").read_text())
        except (OSError, ValueError):
            return -1
        done = manifest["attrs"].get("warmup_done")
        return done if done is not None else 100 + manifest["draws_done"]

    for k in range(moments):
        path = tmp_path / f"run{k}.nc"
        # A moment of the run's progress rather than of the clock: how long the interpreter
        # takes to start and to load the compiled kernel (cold or cached) varies far more
        # than the sampling itself.
        moment = int(rng.integers(0, int(0.9 * (100 + draws))))
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_RUN, str(path), str(draws), "1" if compiled else "0"]
        )
        while proc.poll() is None and progress(path) < moment:
            time.sleep(0.001)
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


# --- Issue 26: output paths that are not files, racing writers, tampered or crafted files ---


def _special_files(tmp_path):
    """A named pipe, a socket and /dev/null: none may become a regular file."""
    import socket

    fifo = tmp_path / "pipe.nc"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock.nc"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    return {"fifo": fifo, "socket": sock_path, "device": "/dev/null"}, sock


@pytest.mark.skipif(os.name != "posix", reason="named pipes, sockets and devices")
@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_an_output_that_is_not_a_regular_file_is_refused_whatever_overwrite_says(
    tmp_path, monkeypatch, counting, kind
):
    import stat

    paths, sock = _special_files(tmp_path)
    path = paths[kind]
    before = os.stat(path).st_mode
    try:
        with pytest.raises(RunFileError, match="not a regular file"):
            hm.sample(counting, output=path, overwrite=True, compiled=False, **SHORT)
        assert Counting.calls == 0
        result = hm.sample(counting, compiled=False, **SHORT)
        with pytest.raises(RunFileError, match="not a regular file"):
            result.save(path, overwrite=True)
        saved = tmp_path / "saved.nc"
        result.save(saved)
        unfinished = _stopped_run(tmp_path, monkeypatch)
        with pytest.raises(RunFileError, match="not a regular file"):
            hm.resume(unfinished, output=path, overwrite=True, progress=False)
        assert main(["plot", str(saved), "--kind", "trace", "-o", str(path)]) == 2
    finally:
        sock.close()
    assert os.stat(path).st_mode == before and not stat.S_ISREG(before)


def test_a_link_to_a_file_replaces_the_file_and_keeps_the_link(tmp_path, counting):
    real = tmp_path / "real.nc"
    real.write_bytes(b"old")
    link = tmp_path / "link.nc"
    link.symlink_to(real)
    result = hm.sample(counting, output=link, overwrite=True, compiled=False, **SHORT)
    assert link.is_symlink()
    np.testing.assert_array_equal(hm.load(real).draws, result.draws)
    dangling = tmp_path / "dangling.nc"
    dangling.symlink_to(tmp_path / "nowhere" / "x.nc")
    with pytest.raises(RunFileError, match="symbolic link to nothing"):
        hm.sample(counting, output=dangling, overwrite=True, compiled=False, **SHORT)


def test_a_partial_name_taken_by_a_file_is_a_clear_error(tmp_path, counting):
    path = tmp_path / "x.nc"
    partial_dir(path).write_bytes(b"someone else's")
    with pytest.raises(RunFileError, match=r"x.nc.partial is a file, not a folder hamiltonia"):
        hm.sample(counting, output=path, overwrite=True, compiled=False, **SHORT)
    assert partial_dir(path).read_bytes() == b"someone else's" and Counting.calls == 0


def test_a_lock_being_written_is_not_taken_over(tmp_path):
    """The pid is for the message only: a holder whose lock file is (still) empty holds it."""
    path = tmp_path / "run.nc"
    holder = RunFile.open(path)
    try:
        (tmp_path / "run.nc.lock").write_text("")
        with pytest.raises(RunFileError, match="being written by another process"):
            RunFile.open(path, overwrite=True)
    finally:
        holder.release()
    RunFile.open(path, overwrite=True).release()


RACE = textwrap.dedent(
    """
    import importlib.util, os, sys, time
    spec = importlib.util.spec_from_file_location("runfile", sys.argv[1])
    runfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runfile)
    path, start, marks = sys.argv[2], float(sys.argv[3]), sys.argv[4]
    time.sleep(max(0.0, start - time.time()))
    held = refused = 0
    deadline = time.time() + 90
    while held < 3 and time.time() < deadline:  # until this process held it three times
        try:
            lock = runfile.RunFile.open(path, overwrite=True)
        except runfile.RunFileError:
            refused += 1
            continue
        mark = os.path.join(marks, str(os.getpid()))
        open(mark, "w").close()
        others = [m for m in os.listdir(marks) if m != str(os.getpid())]
        if others:
            print("BOTH", others, flush=True)
        time.sleep(0.002)
        os.unlink(mark)
        lock.release()
        held += 1
    print("HELD", held, "REFUSED", refused)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="fcntl locks")
def test_many_concurrent_starts_never_hold_the_lock_together(tmp_path):
    import hamiltonia.results.runfile as runfile_module

    marks = tmp_path / "marks"
    marks.mkdir()
    start = time.time() + 1.5
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                RACE,
                runfile_module.__file__,
                str(tmp_path / "run.nc"),
                str(start),
                str(marks),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(12)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert not any("BOTH" in out for out in outputs), outputs
    # Every process took the lock three times (none was locked out by a stale lock), and
    # the starts raced: some were refused while another held it.
    counts = [out.split("HELD")[1].split() for out in outputs]
    assert all(int(c[0]) == 3 for c in counts), outputs
    assert sum(int(c[2]) for c in counts) > 0


@pytest.mark.skipif(os.name != "posix", reason="umask")
def test_output_files_honour_the_umask_and_keep_a_replaced_file_s_mode(tmp_path, counting):
    old = os.umask(0o027)
    try:
        path = tmp_path / "run.nc"
        run_file = RunFile.open(path)
        run_file.append(np.zeros((2, 3, 2)), {"lp": np.zeros((2, 3))}, None, {"names": ["a", "b"]})
        modes = {p.name: p.stat().st_mode & 0o777 for p in partial_dir(path).iterdir()}
        run_file.close()
        assert set(modes.values()) == {0o640}, modes
        other = tmp_path / "other.nc"
        hm.sample(counting, output=other, compiled=False, **SHORT)
        assert other.stat().st_mode & 0o777 == 0o640
        other.chmod(0o604)
        hm.sample(counting, output=other, overwrite=True, compiled=False, **SHORT)
        assert other.stat().st_mode & 0o777 == 0o604
    finally:
        os.umask(old)


def test_temporaries_of_a_dead_writer_are_removed_by_the_next_run(tmp_path, counting):
    """A run's temporaries lie in its checkpoint folder, where the next writer removes those
    of dead writers; nothing beside the output is the run's to remove."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = tmp_path / "run.nc"
    run_file = RunFile.open(path)
    run_file.append(np.zeros((2, 3, 2)), {"lp": np.zeros((2, 3))}, None, {"names": ["a", "b"]})
    run_file.close()
    stale = partial_dir(path) / f".run.nc.{dead.pid}.k3j2.tmp"
    live = partial_dir(path) / f".run.nc.{os.getppid()}.a8b1.tmp"  # a live process's, kept
    beside = tmp_path / f".run.nc.{dead.pid}.q1.tmp"  # the user's folder: never touched
    for p in (stale, live, beside):
        p.write_bytes(b"half a file")
    RunFile.open(path, continuing=True).release()
    assert not stale.exists() and live.exists() and beside.read_bytes() == b"half a file"
    hm.sample(counting, output=path, overwrite=True, compiled=False, **SHORT)
    assert beside.read_bytes() == b"half a file" and not partial_dir(path).exists()
    assert not list(tmp_path.glob(".run.nc.*.tmp"))[1:]


def _stopped_run(tmp_path, monkeypatch):
    from tests.interrupting import interrupted

    path = tmp_path / "run.nc"
    with pytest.warns(hm.InterruptedRunWarning):
        interrupted(monkeypatch, 2, lambda: hm.sample(
            "banana", "hmc", chains=2, warmup=20, draws=100, seed=3, progress=False,
            output=path, checkpoint_seconds=0.0))  # fmt: skip
    return path


def test_a_block_changed_after_it_was_written_is_refused(tmp_path, monkeypatch):
    import json

    path = _stopped_run(tmp_path, monkeypatch)
    folder = partial_dir(path)
    manifest = json.loads((folder / "manifest.json").read_text())
    name = manifest["blocks"][0][2]
    with np.load(folder / name) as block:
        arrays = dict(block)
    arrays["q"] = np.full_like(arrays["q"], np.nan)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    (folder / name).write_bytes(buffer.getvalue())
    with pytest.raises(RunFileError, match=rf"{name} was changed after the run wrote it"):
        hm.resume(path, progress=False)
    with pytest.raises(RunFileError, match="changed after the run wrote it"):
        hm.load(path)
    # Even with its checksum recorded anew, NaN draws where the run wrote finite ones are
    # refused.
    from hamiltonia.results.runfile import _digest, seal_manifest

    manifest["blocks"][0][3] = _digest(buffer.getvalue())
    (folder / "manifest.json").write_text(json.dumps(seal_manifest(manifest)))
    with pytest.raises(RunFileError, match="non-finite draws that the run wrote finite"):
        hm.resume(path, progress=False)


def test_a_manifest_edited_by_hand_is_refused(tmp_path, monkeypatch):
    import json

    path = _stopped_run(tmp_path, monkeypatch)
    manifest_path = partial_dir(path) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["target"] = manifest["attrs"]["target"] = "gaussian"
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(RunFileError, match=r"manifest.json was changed after the run wrote it"):
        hm.resume(path, progress=False)


def test_a_block_declaring_more_than_it_stores_is_refused_before_allocating(tmp_path, monkeypatch):
    import json
    import zipfile

    from hamiltonia.results.runfile import _digest, seal_manifest

    path = _stopped_run(tmp_path, monkeypatch)
    folder = partial_dir(path)
    manifest = json.loads((folder / "manifest.json").read_text())
    name = manifest["blocks"][0][2]
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (4, 2_000_000_000, 2)}
    )
    crafted = folder / name
    with zipfile.ZipFile(crafted, "w") as archive:
        archive.writestr("q.npy", header.getvalue() + b"\0" * 64)
    manifest["blocks"][0][3] = _digest(crafted.read_bytes())
    (folder / "manifest.json").write_text(json.dumps(seal_manifest(manifest)))
    with pytest.raises(RunFileError, match=r"declares shape \(4, 2000000000, 2\)"):
        hm.load(path)


def test_a_file_declaring_more_than_it_stores_is_refused_before_allocating(tmp_path):
    import h5py

    path = tmp_path / "run.nc"
    hm.sample("banana", output=path, **SHORT)
    with h5py.File(path, "a") as f:
        f["posterior"].create_dataset("huge", shape=(4, 2_000_000_000), dtype="f8")
    with pytest.raises(RunFileError, match=r"huge declares 64,000,000,000 bytes but stores 0"):
        hm.load(path)
    with pytest.raises(RunFileError, match="huge declares"):
        hm.resume(path)


FULL_DISK = textwrap.dedent(
    """
    import resource, sys, warnings
    import hamiltonia as hm
    from hamiltonia.results.runfile import OutputWriteError
    warnings.simplefilter("ignore")
    # Checkpoint blocks fit under the limit; the final file does not.
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
    try:
        hm.sample("banana", "hmc", chains=2, warmup=20, draws=4000, seed=1, progress=False,
                  output=sys.argv[1], checkpoint_seconds=0.0)
    except OutputWriteError as err:
        print("KEPT", err.result.n_draws, err.result.draws.sum(), "|", err, flush=True)
        sys.exit(3)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE")
def test_a_failed_final_write_keeps_the_run_in_memory_and_on_disk(tmp_path):
    """A file-size limit (as a full disk): a clear error holding the run, not a crash."""
    path = tmp_path / "run.nc"
    proc = subprocess.run([sys.executable, "-c", FULL_DISK, str(path), str(100_000)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 3, proc.stderr[-2000:]
    kept = proc.stdout.split("KEPT")[1].split("|")
    assert int(kept[0].split()[0]) == 4000
    assert "could not be written" in kept[1] and "File too large" in kept[1]
    assert not path.exists()
    assert not list(tmp_path.glob(".run.nc.*.tmp"))
    # The checkpoints that fitted under the limit are on disk: with space again, resume
    # finishes the run with the draws of an uninterrupted one.
    assert 0 < hm.load(path).n_draws <= 4000
    result = hm.resume(path, progress=False)
    assert result.attrs["complete"] and hm.load(path).attrs["complete"]
    reference = hm.sample("banana", "hmc", chains=2, warmup=20, draws=4000, seed=1,
                          progress=False)  # fmt: skip
    np.testing.assert_array_equal(result.draws, reference.draws)
    assert result.draws.sum() == float(kept[0].split()[1])


@pytest.fixture
def full_disk_after_warmup(monkeypatch):
    """Every write of a run file ``run.nc`` and of its checkpoints' draws fails as on a full
    disk; the warm-up's checkpoint (its manifest) is written."""
    import hamiltonia.results.runfile as runfile_module

    original = runfile_module.atomic_write_bytes

    def full_disk(path, data, scratch=None):
        if path.name == "run.nc" or path.name.startswith("block-"):
            raise OSError(28, "No space left on device")
        return original(path, data, scratch)

    monkeypatch.setattr(runfile_module, "atomic_write_bytes", full_disk)


def test_a_failed_final_write_keeps_the_run_when_warnings_are_errors(
    tmp_path, full_disk_after_warmup
):
    """The checkpoints fail too (the disk is full): their warning must not replace the
    error that holds the run."""
    from hamiltonia.results.runfile import OutputWriteError

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(OutputWriteError, match="The run is not lost") as info:
            hm.sample("banana", "hmc", output=tmp_path / "run.nc", checkpoint_seconds=1e9,
                      **SHORT)  # fmt: skip
    assert info.value.result.n_draws == SHORT["draws"]
    # The warm-up's checkpoint was written before the disk filled: resume starts from it.
    assert info.value.partial == partial_dir(tmp_path / "run.nc")


def test_the_command_line_saves_a_run_it_could_not_write(
    tmp_path, monkeypatch, capsys, full_disk_after_warmup
):
    """The command line has no err.result: the finished run goes to the temporary folder,
    and the message says where, and how resume finishes the file."""
    import tempfile

    from hamiltonia import cli

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "run.nc"
    code = cli.main(["sample", "banana", "--sampler", "hmc", "--chains", "2", "--warmup", "20",
                     "--draws", "30", "--seed", "3", "--no-progress", "-o", str(out)])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    (rescued,) = (tmp_path / "tmp").glob("run.nc.rescued-*.nc")
    assert str(rescued) in err and "No space left on device" in err
    assert f"hamiltonia resume {out}" in err
    reference = hm.sample("banana", "hmc", chains=2, warmup=20, draws=30, seed=3, progress=False)
    np.testing.assert_array_equal(hm.load(rescued).draws, reference.draws)


def test_an_output_or_run_path_of_the_wrong_kind_is_named(tmp_path):
    with pytest.raises(TypeError, match="output must be a path"):
        hm.sample("banana", output=3, progress=False)
    with pytest.raises(RunFileError, match="is a folder, not a run file"):
        hm.load(tmp_path)
