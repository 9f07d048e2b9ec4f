"""The names hamiltonia derives from a user's output are its own: made exclusively, known by
a marker, never followed, emptied or removed otherwise (:mod:`hamiltonia.results.owned`).

The first tests are the defects of issue 47, each of which failed before the fix; the
property tests then plant random trees of files, folders and links at every derived name
and require, for ``sample``, ``resume``, ``Result.save`` and ``plot -o`` and for both
executors, that no byte outside the output changes and that the run either completes or
refuses before any work.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hamiltonia as hm
from hamiltonia.results import owned
from hamiltonia.results.errors import ForeignPathError, RunFileError
from hamiltonia.results.runfile import RunFile, partial_dir
from hamiltonia.runner.executors import TASKS
from tests.hostile_trees import KINDS, changes, plant, precious, snapshot, unfinished_run

from .test_runfile import SHORT, Counting

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symbolic links and named pipes")


@pytest.fixture
def counting():
    Counting.calls = 0
    return Counting()


def _refused(run, root, counting_target=True):
    """Run ``run()``, which must refuse with a ``ForeignPathError`` before any work, and
    leave every byte under ``root`` as it was."""
    before = snapshot(root)
    Counting.calls = 0
    with pytest.raises(ForeignPathError) as info:
        run()
    if counting_target:
        assert Counting.calls == 0
    assert changes(before, snapshot(root)) == []
    return info.value


# The defects of issue 47, each as it was found.


def test_a_users_folder_at_the_partial_name_is_not_emptied(tmp_path, counting):
    path = tmp_path / "run.nc"
    plant(partial_dir(path), "folder-with-files", tmp_path)
    err = _refused(lambda: hm.sample(counting, output=path, compiled=False, **SHORT), tmp_path)
    assert "run.nc.partial" in str(err) and "did not make" in str(err)


def test_a_link_at_the_partial_name_does_not_get_its_folder_deleted(tmp_path, counting):
    path = tmp_path / "run.nc"
    plant(partial_dir(path), "link-to-folder", tmp_path)
    for overwrite in (False, True):
        err = _refused(
            lambda o=overwrite: hm.sample(
                counting, output=path, overwrite=o, compiled=False, **SHORT
            ),
            tmp_path,
        )
        assert "symbolic link" in str(err)
    assert (precious(tmp_path) / "folder" / "notes.txt").read_bytes() == b"the user's notes\n"


def test_a_partial_folder_with_a_subfolder_is_refused_whole_with_overwrite(tmp_path, counting):
    """It was emptied file by file, then the run failed with IsADirectoryError."""
    path = tmp_path / "run.nc"
    plant(partial_dir(path), "folder-with-subfolder", tmp_path)
    _refused(lambda: hm.sample(counting, output=path, overwrite=True, compiled=False, **SHORT),
             tmp_path)  # fmt: skip


@pytest.mark.parametrize("kind", ["link-to-file", "hard-link", "file", "fifo", "empty-folder"])
def test_the_lock_name_never_truncates_what_is_there(tmp_path, counting, kind):
    path = tmp_path / "run.nc"
    plant(path.with_name("run.nc.lock"), kind, tmp_path)
    err = _refused(lambda: hm.sample(counting, output=path, compiled=False, **SHORT), tmp_path)
    assert "run.nc.lock" in str(err)
    assert (precious(tmp_path) / "file.txt").read_bytes() == b"the user's own file\n"


def test_a_lock_of_an_earlier_version_or_a_dead_run_is_still_taken(tmp_path, counting):
    path = tmp_path / "run.nc"
    for content in (b"", b"12345", owned.lock_text(999_999_999)):
        path.with_name("run.nc.lock").write_bytes(content)
        hm.sample(counting, output=path, overwrite=True, compiled=False, **SHORT)
        assert not path.with_name("run.nc.lock").exists()


def test_a_checkpoint_folder_of_an_earlier_version_is_resumed(tmp_path):
    """Folders written before the marker existed: recognised by their sealed manifest."""
    path = tmp_path / "run.nc"
    run_file = RunFile.open(path)
    run_file.append(np.zeros((2, 3, 2)), {"lp": np.zeros((2, 3))}, None, {"names": ["a", "b"]})
    run_file.close()
    (partial_dir(path) / owned.MARKER).unlink()
    assert hm.load(path).n_draws == 3
    RunFile.open(path, continuing=True).release()  # adopted: the marker is written
    assert (partial_dir(path) / owned.MARKER).is_file()


def test_a_marker_of_another_kind_is_not_ours(tmp_path, counting):
    path = tmp_path / "run.nc"
    owned.claim_folder(partial_dir(path), TASKS)
    _refused(lambda: hm.sample(counting, output=path, compiled=False, **SHORT), tmp_path)


def test_load_reads_no_unfinished_run_through_a_link(tmp_path):
    """A link at the partial name that points at another run's checkpoints: not read."""
    other = tmp_path / "other.nc"
    run_file = RunFile.open(other)
    run_file.append(np.zeros((2, 3, 2)), {"lp": np.zeros((2, 3))}, None, {"names": ["a", "b"]})
    run_file.close()
    path = tmp_path / "run.nc"
    partial_dir(path).symlink_to(partial_dir(other), target_is_directory=True)
    with pytest.raises((ForeignPathError, FileNotFoundError)):
        hm.load(path)


def test_a_link_inside_the_checkpoint_folder_is_never_read(tmp_path):
    path = tmp_path / "run.nc"
    run_file = RunFile.open(path)
    run_file.append(np.zeros((2, 3, 2)), {"lp": np.zeros((2, 3))}, None, {"names": ["a", "b"]})
    run_file.close()
    (partial_dir(path) / "block-000000000099.npz").symlink_to(precious(tmp_path) / "file.txt")
    with pytest.raises(ForeignPathError, match=r"block-000000000099\.npz"):
        hm.load(path)


# Random trees at every derived name.

PROPERTY = settings(
    max_examples=30, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
trees = st.sampled_from(KINDS)


def _fresh(tmp_path, name: str):
    """A new root for one example (hypothesis may run an example twice), and its ``out``."""
    root = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp_path))
    return root, root / "out"


def _completes_or_refuses(root, run, output) -> bool:
    """``run()`` either completes or refuses with a ``RunFileError`` before any work; either
    way no byte under ``root`` but the ``output`` changed. Returns whether it refused."""
    before = snapshot(root, skip={output})
    Counting.calls = 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run()
    except RunFileError:
        assert Counting.calls == 0, "refused after the work started"
        refused = True
    else:
        refused = False
    assert changes(before, snapshot(root, skip={output})) == []
    return refused


@PROPERTY
@given(partial=trees, lock=trees, overwrite=st.booleans(), existing=st.booleans())
def test_sample_changes_nothing_but_its_output(tmp_path, counting, partial, lock, overwrite,
                                               existing):  # fmt: skip
    root, folder = _fresh(tmp_path, f"s-{partial}-{lock}-{overwrite}-{existing}")
    folder.mkdir()
    path = folder / "run.nc"
    if existing:
        path.write_bytes(b"an earlier run")
    plant(partial_dir(path), partial, root)
    plant(path.with_name("run.nc.lock"), lock, root)
    refused = _completes_or_refuses(
        root,
        lambda: hm.sample(counting, output=path, overwrite=overwrite, compiled=False, **SHORT),
        "out/run.nc",
    )
    foreign = partial != "nothing" or lock != "nothing" or (existing and not overwrite)
    assert refused == foreign
    if not refused:
        assert hm.load(path).attrs["complete"]
        assert not os.path.lexists(partial_dir(path))
        assert not os.path.lexists(path.with_name("run.nc.lock"))


@pytest.fixture(scope="module")
def interrupted_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("unfinished")
    unfinished_run(folder / "run.nc")
    return folder


@PROPERTY
@given(inside=trees, lock=trees)
def test_resume_changes_nothing_but_its_output(tmp_path, interrupted_run, inside, lock):
    import shutil

    root, folder = _fresh(tmp_path, f"r-{inside}-{lock}")
    shutil.copytree(interrupted_run, folder, symlinks=True)
    path = folder / "run.nc"
    plant(partial_dir(path) / "extra", inside, root)
    plant(path.with_name("run.nc.lock"), lock, root)
    before = snapshot(root, skip={"out/run.nc"})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hm.resume(path, progress=False)
    except RunFileError:
        assert changes(before, snapshot(root, skip={"out/run.nc"})) == []
        assert inside != "nothing" or lock != "nothing"
        return
    assert inside == "nothing" and lock == "nothing"
    assert hm.load(path).attrs["complete"]
    left = [line for line in changes(before, snapshot(root, skip={"out/run.nc"}))
            if not line.startswith("out/run.nc.partial")]  # fmt: skip
    assert left == [] and not os.path.lexists(partial_dir(path))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("finished")
    hm.sample("banana", "hmc", output=folder / "run.nc", **SHORT)
    return folder / "run.nc"


@PROPERTY
@given(partial=trees, lock=trees)
def test_save_and_plot_change_nothing_but_their_output(tmp_path, finished_run, partial, lock):
    pytest.importorskip("matplotlib")
    from hamiltonia import cli

    root, folder = _fresh(tmp_path, f"p-{partial}-{lock}")
    folder.mkdir()
    saved = folder / "copy.nc"
    plant(partial_dir(saved), partial, root)
    plant(saved.with_name("copy.nc.lock"), lock, root)
    before = snapshot(root, skip={"out/copy.nc", "out/figure.png"})
    hm.load(finished_run).save(saved)
    assert cli.main(["plot", str(saved), "--kind", "trace", "-o", str(folder / "figure.png")]) == 0
    assert changes(before, snapshot(root, skip={"out/copy.nc", "out/figure.png"})) == []


EXECUTOR_CASES = [
    ("tasks", "folder-with-files"),
    ("tasks", "link-to-folder"),
    ("tasks", "file"),
    ("tasks/task-000000.nc.partial", "folder-with-files"),
    ("tasks/stop", "link-to-file"),
    ("tasks/task-000000.nc.lock", "hard-link"),
    ("tasks", "nothing"),
]


@pytest.mark.parametrize("executor", ["processes", "dask"])
def test_executors_change_nothing_but_their_output(tmp_path, executor):
    """Each tree at the task folder's names (bounded: a pool or a cluster starts per run)."""
    if executor == "dask":
        pytest.importorskip("distributed")
    for n, (where, kind) in enumerate(EXECUTOR_CASES):
        root, folder = _fresh(tmp_path, f"e{n}")
        folder.mkdir()
        path = folder / "run.nc"
        tasks = folder / "run.nc.tasks"
        if "/" in where:
            owned.claim_folder(tasks, TASKS)
        plant(folder / f"run.nc.{where}", kind, root)
        before = snapshot(root, skip={"out/run.nc"})
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                hm.sample("banana", "hmc", output=path, executor=executor, workers=2, **SHORT)
        except RunFileError:
            assert kind != "nothing"
            assert changes(before, snapshot(root, skip={"out/run.nc"})) == []
            assert not path.exists()
            continue
        assert kind == "nothing", f"{where}: {kind} was not refused"
        assert hm.load(path).attrs["complete"]
        assert changes(before, snapshot(root, skip={"out/run.nc"})) == []


@pytest.fixture(scope="module")
def tiny_experiment(tmp_path_factory):
    from hamiltonia.reproduce.experiment import load_experiment
    from tests.reproduce.conftest import TINY

    path = tmp_path_factory.mktemp("experiment") / "tiny.toml"
    path.write_text(TINY)
    return load_experiment(path)


@settings(PROPERTY, max_examples=15)
@given(runs=trees, cells=trees, record=trees, overwrite=st.booleans())
def test_reproduce_changes_nothing_but_its_own(tmp_path, tiny_experiment, runs, cells, record,
                                               overwrite):  # fmt: skip
    """A reproduction's derived names (``runs/``, ``cells/``, its record) in the user's
    folder: a tree there is refused before any cell runs, or the reproduction completes."""
    from hamiltonia.reproduce import run_experiment

    root, folder = _fresh(tmp_path, "rep")
    folder.mkdir()
    plant(folder / "runs", runs, root)
    plant(folder / "cells", cells, root)
    plant(folder / "experiment.json", record, root)
    before = snapshot(root)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_experiment(tiny_experiment, output=folder, overwrite=overwrite,
                           only=[("Banana", "HMC")], compiled=False)  # fmt: skip
    except (RunFileError, ValueError):
        assert changes(before, snapshot(root)) == []
        return
    # Completed: only the reproduction's own names changed, and no link was followed.
    theirs = [line for line in changes(before, snapshot(root))
              if not line.startswith(("out/runs", "out/cells", "out/experiment.json"))]  # fmt: skip
    assert theirs == []
    assert runs == "nothing" and cells == "nothing"
