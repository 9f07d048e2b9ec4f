"""The names a reproduction makes inside the user's ``--output`` folder (``runs/``, ``cells/``,
``experiment.json``, ``study.json``, the report's files): never a link followed, never a
user's file written or removed, ``--overwrite`` included; refused before any work."""

import json
import os
import re

import pytest

import hamiltonia as hm
from hamiltonia import reproduce
from hamiltonia.reproduce import Study, StudyReport, run_study
from hamiltonia.reproduce.experiment import load_experiment
from hamiltonia.results.errors import ForeignPathError
from hamiltonia.results.owned import MARKER

BANANA_HMC = ("Banana", "HMC")


@pytest.fixture
def tiny(tiny_file):
    return load_experiment(tiny_file)


class OneRunStudy(Study):
    """A study of one run, saved in ``output/runs``."""

    name = "one-run-study"
    title = "One run"
    source = "a test"

    def run(self, output, *, scale, chains, only, figures, progress, log, sample_options):
        path = output / "runs" / "g.nc"
        if not path.exists():
            hm.sample("gaussian", "hmc", chains=2, warmup=20, draws=20, seed=1, output=path,
                      progress=False)  # fmt: skip
        return StudyReport(markdown="done", rst=["done"])


@pytest.fixture
def no_sampling(monkeypatch) -> list:
    calls = []
    monkeypatch.setattr(hm, "sample", lambda *a, **k: calls.append(1))
    return calls


def _theirs(tmp_path):
    """A user's folder with a file of theirs, and its listing."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "keep.txt").write_text("mine")
    return theirs


@pytest.mark.parametrize("name", ["runs", "cells"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_link_at_runs_or_cells_is_refused_and_its_target_untouched(
    tiny, tmp_path, no_sampling, name, overwrite
):
    theirs = _theirs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(theirs, target_is_directory=True)
    with pytest.raises(ForeignPathError, match=f"{re.escape(str(out / name))} is a symbolic link"):
        reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC], overwrite=overwrite)
    assert no_sampling == []
    assert sorted(os.listdir(theirs)) == ["keep.txt"] and (out / name).is_symlink()
    assert not (out / "experiment.json").exists()


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_link_at_a_study_s_runs_is_refused(tmp_path, overwrite):
    theirs = _theirs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs").symlink_to(theirs, target_is_directory=True)
    with pytest.raises(ForeignPathError, match="is a symbolic link"):
        run_study(OneRunStudy(), out, overwrite=overwrite, figures=False)
    assert sorted(os.listdir(theirs)) == ["keep.txt"]


def test_overwrite_refuses_a_user_s_file_in_runs_and_removes_nothing(tiny, tmp_path, monkeypatch):
    out = tmp_path / "out"
    reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC])
    (out / "runs" / "notes.txt").write_text("mine")
    before = sorted(os.listdir(out / "runs")), sorted(os.listdir(out / "cells"))
    calls = []
    monkeypatch.setattr(hm, "sample", lambda *a, **k: calls.append(1))
    with pytest.raises(ForeignPathError, match=r"runs holds 'notes.txt' \(a file\)"):
        reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC], overwrite=True)
    assert calls == []
    assert (sorted(os.listdir(out / "runs")), sorted(os.listdir(out / "cells"))) == before
    assert (out / "runs" / "notes.txt").read_text() == "mine"


def test_a_study_s_overwrite_refuses_a_user_s_file_in_runs(tmp_path):
    out = tmp_path / "out"
    run_study(OneRunStudy(), out, figures=False)
    (out / "runs" / "notes.txt").write_text("mine")
    with pytest.raises(ForeignPathError, match=r"notes\.txt"):
        run_study(OneRunStudy(), out, overwrite=True, figures=False)
    assert (out / "runs" / "notes.txt").read_text() == "mine"
    assert (out / "runs" / "g.nc").is_file()


@pytest.mark.parametrize("name", ["experiment.json", "study.json", "tiny.md", "reproduction.json"])
def test_a_folder_at_a_name_the_reproduction_writes_is_refused_before_any_work(
    tiny, tmp_path, no_sampling, name
):
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    (out / name / "keep.txt").write_text("mine")
    with pytest.raises(ForeignPathError, match=f"{re.escape(str(out / name))} is a folder"):
        reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC], overwrite=True)
    assert no_sampling == []
    assert (out / name / "keep.txt").read_text() == "mine"


def test_a_folder_at_a_study_s_report_is_refused_before_any_work(tmp_path):
    out = tmp_path / "out"
    (out / "one-run-study.md").mkdir(parents=True)
    with pytest.raises(ForeignPathError, match=r"one-run-study\.md is a folder"):
        run_study(OneRunStudy(), out, figures=False)
    assert not (out / "runs").exists()


def test_a_link_at_a_report_s_name_is_replaced_not_followed(tiny, tmp_path):
    theirs = _theirs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "tiny.md").symlink_to(theirs / "keep.txt")
    rep = reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC])
    reproduce.write_report(rep, figures=False)
    assert (theirs / "keep.txt").read_text() == "mine"
    assert not (out / "tiny.md").is_symlink() and "tiny" in (out / "tiny.md").read_text()


def _as_an_earlier_version(out) -> None:
    """The folder as a version before the markers wrote it."""
    (out / "runs" / MARKER).unlink()
    (out / "cells" / MARKER).unlink()


def test_a_folder_of_an_earlier_version_is_refused_unless_overwrite(tiny, tmp_path, no_sampling):
    out = tmp_path / "out"
    out.mkdir()
    (out / "experiment.json").write_text(json.dumps({
        "experiment": "tiny", "scale": "small", "protocol": {
            "chains": 2, "draws": 40, "warmup": 30, "init": "normal", "seed": 3}}))  # fmt: skip
    for name, entry in (("runs", "Banana__HMC.nc"), ("cells", "Banana__HMC.json")):
        (out / name).mkdir()
        (out / name / entry).write_text("{}")
    with pytest.raises(ForeignPathError, match=r"earlier version of hamiltonia.*--overwrite"):
        reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC])
    assert no_sampling == []
    # With a user's file among them, --overwrite refuses too, and removes nothing.
    (out / "runs" / "notes.txt").write_text("mine")
    with pytest.raises(ForeignPathError, match=r"notes\.txt"):
        reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC], overwrite=True)
    assert sorted(os.listdir(out / "runs")) == ["Banana__HMC.nc", "notes.txt"]
    assert no_sampling == []


def test_overwrite_replaces_a_folder_of_an_earlier_version(tiny, tmp_path):
    out = tmp_path / "out"
    reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC, ("Gauss", "HMC")])
    _as_an_earlier_version(out)
    rep = reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC], overwrite=True)
    assert rep.cells.keys() == {BANANA_HMC}
    assert sorted(os.listdir(out / "cells")) == [MARKER, "Banana__HMC.json"]
    assert sorted(os.listdir(out / "runs")) == [MARKER, "Banana__HMC.nc"]
    assert reproduce.load_reproduction(out).cells.keys() == {BANANA_HMC}


def test_the_page_refuses_a_link_at_cells(tiny, tmp_path):
    out = tmp_path / "out"
    reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC])
    os.rename(out / "cells", tmp_path / "moved")
    (out / "cells").symlink_to(tmp_path / "moved", target_is_directory=True)
    with pytest.raises(ForeignPathError, match="is a symbolic link"):
        reproduce.load_reproduction(out)


def test_a_cell_s_task_folder_is_removed_when_its_run_ends_and_nothing_else(tmp_path):
    """A run with an executor keeps ``runs/NAME.nc.tasks`` when it stops; a reproduction
    never resumes a cell's run, so it removes its own task folder, and only that."""
    from hamiltonia.reproduce.execute import _remove_task_folder
    from hamiltonia.results.owned import claim_folder
    from hamiltonia.runner.executors import TASKS

    claim_folder(tmp_path / "a.nc.tasks", TASKS)
    _remove_task_folder(tmp_path / "a.nc")
    assert not (tmp_path / "a.nc.tasks").exists()
    (tmp_path / "b.nc.tasks").mkdir()
    (tmp_path / "b.nc.tasks" / "keep.txt").write_text("mine")
    _remove_task_folder(tmp_path / "b.nc")
    assert (tmp_path / "b.nc.tasks" / "keep.txt").read_text() == "mine"
