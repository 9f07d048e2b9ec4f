"""A plugin's study (hamiltonia.reproduce.study) through ``hamiltonia reproduce``: listed, run
into a checked folder, resumed from its saved runs, and written on the docs page."""

from __future__ import annotations

import json
from typing import ClassVar

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.registry import PluginWarning
from hamiltonia.reproduce import Study, StudyReport, run_study, study
from hamiltonia.reproduce.experiment import experiment_names


class CoinStudy(Study):
    """A study with two cells, each one run saved in ``output/runs`` and read back."""

    name = "coin-study"
    title = "A coin study"
    source = "a test"
    calls: ClassVar[list] = []

    def cells(self):
        return ["Gauss/HMC", "Gauss/NUTS"]

    def run(self, output, *, scale, chains, only, figures, progress, log, sample_options):
        lines = []
        for cell in only or self.cells():
            path = output / "runs" / (cell.replace("/", "__") + ".nc")
            if path.exists():
                run = hm.load(path)
                log(f"{cell}: read back")
            else:
                type(self).calls.append(cell)
                run = hm.sample(
                    "gaussian", cell.split("/")[1].lower(), chains=chains or 2, warmup=50,
                    draws=40 if scale == "small" else 80, seed=1, output=path,
                    progress=progress, **sample_options,
                )  # fmt: skip
            mean = float(np.mean(run.posterior["x1"].values))
            lines.append(f"{cell} mean {mean:.3f}")
        rst = [self.title, "-" * len(self.title), "", *lines]
        return StudyReport(markdown="\n".join(lines), rst=rst, files=[])


@pytest.fixture
def coin_study():
    CoinStudy.calls = []
    study.registry.register(CoinStudy.name, CoinStudy, overwrite=True)
    yield CoinStudy
    study.registry._extra.pop(CoinStudy.name, None)


def test_list_shows_the_study_beside_the_experiments(coin_study, capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert "coin-study       A coin study [a test; 2 cells; plugin <runtime>]" in out
    assert all(name in out for name in experiment_names())


def test_a_study_runs_writes_its_report_and_resumes(coin_study, tmp_path, capsys):
    folder = tmp_path / "coin"
    argv = ["reproduce", "coin-study", "-o", str(folder), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Gauss/HMC mean" in out and "Gauss/NUTS mean" in out
    assert json.loads((folder / "study.json").read_text()) == {
        "study": "coin-study", "scale": "small", "chains": None,
    }  # fmt: skip
    assert (folder / "coin-study.md").read_text().startswith("Gauss/HMC mean")
    assert sorted(p.name for p in (folder / "runs").glob("*.nc")) == [
        "Gauss__HMC.nc", "Gauss__NUTS.nc",
    ]  # fmt: skip
    assert coin_study.calls == ["Gauss/HMC", "Gauss/NUTS"]
    # Run again: the saved runs are read back, none is rerun, and the report is the same.
    assert main(argv) == 0
    assert coin_study.calls == ["Gauss/HMC", "Gauss/NUTS"]
    assert "read back" in capsys.readouterr().err
    # The docs page takes the study's own section.
    page = tmp_path / "page.rst"
    assert main(["reproduce", "--docs-page", str(page), str(folder)]) == 0
    text = page.read_text()
    assert "A coin study\n------------\n\nGauss/HMC mean" in text
    assert "Errata applied" in text


def test_only_runs_the_cells_named(coin_study, tmp_path):
    folder = tmp_path / "coin"
    run_study(coin_study(), folder, only=["Gauss/NUTS"])
    assert coin_study.calls == ["Gauss/NUTS"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--only", "Gauss/MALA"], "'Gauss/MALA' is not a cell of coin-study: Gauss/HMC, "),
        (["--chains", "1"], "chains must be an integer >= 2, got 1"),
    ],
)  # fmt: skip
def test_bad_options_are_refused_before_any_work(coin_study, tmp_path, capsys, extra, says):
    folder = tmp_path / "coin"
    assert main(["reproduce", "coin-study", "-o", str(folder), "--no-progress", *extra]) == 2
    assert says in capsys.readouterr().err
    assert not folder.exists()
    assert coin_study.calls == []


def test_a_folder_holding_other_work_is_refused_unless_overwrite(coin_study, tmp_path, capsys):
    folder = tmp_path / "coin"
    run_study(coin_study(), folder, scale="small")
    with pytest.raises(ValueError, match="holds the study 'coin-study' at scale 'small'"):
        run_study(coin_study(), folder, scale="full")
    # A shipped experiment will not take a study's folder, nor a study an experiment's.
    assert main(["reproduce", "ch5-blr", "-o", str(folder), "--no-progress"]) == 2
    assert "holds a plugin's study" in capsys.readouterr().err
    other = tmp_path / "experiment"
    other.mkdir()
    (other / "experiment.json").write_text(json.dumps({"experiment": "ch5-blr"}))
    with pytest.raises(ValueError, match="holds a reproduction of a shipped experiment"):
        run_study(coin_study(), other)
    # With overwrite the folder becomes the study's alone.
    run_study(coin_study(), other, overwrite=True)
    assert not (other / "experiment.json").exists()
    assert (other / "study.json").exists()


def test_a_run_that_returns_no_report_is_named(coin_study, tmp_path):
    class Broken(CoinStudy):
        def run(self, output, **options):
            return "a report"

    with pytest.raises(TypeError, match="returned str from run\\(\\), not a StudyReport"):
        run_study(Broken(), tmp_path / "broken")


def test_an_unknown_name_lists_the_studies_too(coin_study, capsys):
    assert main(["reproduce", "no-such"]) == 2
    assert "'coin-study'" in capsys.readouterr().err


def test_overwrite_runs_the_study_again_rather_than_read_its_old_runs(coin_study, tmp_path):
    folder = tmp_path / "coin"
    run_study(coin_study(), folder, only=["Gauss/HMC"])
    run_study(coin_study(), folder, only=["Gauss/HMC"], chains=3, overwrite=True)
    assert coin_study.calls == ["Gauss/HMC", "Gauss/HMC"]
    assert hm.load(folder / "runs" / "Gauss__HMC.nc").n_chains == 3


def test_a_study_registered_under_another_name_is_refused(coin_study):
    study.registry.register("coin-alias", CoinStudy, overwrite=True)
    try:
        with pytest.raises(TypeError, match="named 'coin-study': register it under its own"):
            study.get_study("coin-alias")
    finally:
        study.registry._extra.pop("coin-alias", None)


def test_a_study_named_as_a_shipped_experiment_is_left_out_with_a_warning(coin_study):
    study.registry.register("ch5-blr", CoinStudy, overwrite=True)
    try:
        with pytest.warns(PluginWarning, match="has the name of an experiment shipped"):
            names = study.study_names()
        assert "ch5-blr" not in names and "coin-study" in names
    finally:
        study.registry._extra.pop("ch5-blr", None)


def test_a_broken_study_record_is_named(coin_study, tmp_path, capsys):
    folder = tmp_path / "coin"
    folder.mkdir()
    (folder / "study.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"study\.json is not a readable study record"):
        run_study(coin_study(), folder)
    assert main(["reproduce", "--docs-page", str(tmp_path / "p.rst"), str(folder)]) == 2
    assert "is not a readable study record" in capsys.readouterr().err


def test_ctrl_c_in_a_run_stops_the_study_and_a_rerun_continues(
    coin_study, tmp_path, monkeypatch, capsys
):
    """sample() returns the draws so far on Ctrl-C; the study stops there (exit 130) rather
    than report on them, and running it again runs that cell again."""
    from tests.interrupting import interrupted

    class Interruptible(CoinStudy):
        def run(self, output, **options):
            run = hm.sample("gaussian", "hmc", chains=2, warmup=20, draws=400, seed=1,
                            output=output / "runs" / "g.nc", checkpoint_seconds=0.0,
                            progress=False, overwrite=True)  # fmt: skip
            study.stop_if_interrupted(run, "Gauss/HMC", output)
            return StudyReport(markdown="done", rst=["done"])

    study.registry.register("coin-study", Interruptible, overwrite=True)
    folder = tmp_path / "coin"
    argv = ["reproduce", "coin-study", "-o", str(folder), "--no-progress", "--no-figures"]
    with pytest.warns(RuntimeWarning, match="interrupted"):
        code = interrupted(monkeypatch, 1, lambda: main(argv))
    assert code == 130
    assert "interrupted in Gauss/HMC; the finished cells are saved in" in capsys.readouterr().err
    assert not (folder / "coin-study.md").exists()
    assert main(argv) == 0 and (folder / "coin-study.md").read_text() == "done"


def test_an_interrupted_cell_of_an_experiment_is_not_recorded_as_finished(
    tiny_file, tmp_path, monkeypatch
):
    """A cell's run that Ctrl-C stopped (sample() returns it with complete False) stops the
    reproduction; no cell record says it finished, so a rerun runs it again."""
    from hamiltonia.reproduce import ReproductionInterrupted, load_experiment, run_experiment

    original = hm.sample

    def stopped(*args, **kwargs):
        result = original(*args, **kwargs)
        if kwargs.get("output") is not None:  # the cell's run, not the compiling one
            result.attrs["complete"] = False
        return result

    monkeypatch.setattr(hm, "sample", stopped)
    folder = tmp_path / "rep"
    experiment = load_experiment(tiny_file)
    with pytest.raises(ReproductionInterrupted, match="interrupted in Banana / HMC"):
        run_experiment(experiment, output=folder, only=[("Banana", "HMC")])
    assert list((folder / "cells").glob("*.json")) == []
