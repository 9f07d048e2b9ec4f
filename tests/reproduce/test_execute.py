"""Running an experiment: cells as the protocol says, written as they finish, continued
rather than rerun, and an output folder of another reproduction refused before any work."""

import json

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia import reproduce
from hamiltonia.reproduce.experiment import load_experiment
from hamiltonia.reproduce.provenance import checksum


@pytest.fixture
def tiny(tiny_file):
    return load_experiment(tiny_file)


def test_a_run_follows_the_protocol_and_writes_each_cell(tiny, tmp_path):
    out = tmp_path / "out"
    rep = reproduce.run_experiment(tiny, scale="full", output=out)
    assert set(rep.cells) == {(t, s) for t in ("Banana", "Gauss") for s in ("HMC", "PHMC")}
    for cell in rep.cells.values():
        run = hm.load(cell.run_file)
        assert run.draws.shape[:2] == (2, 60)
        accepted = 100 * np.mean(run.stats["accepted"])
        assert cell.metrics["acceptance"]["value"] == pytest.approx(accepted)
        assert cell.metrics["t"]["value"] > 0
    # The report reads back what was written.
    again = reproduce.load_reproduction(out)
    assert again.cells.keys() == rep.cells.keys()
    written = reproduce.write_report(again, figures=False)
    text = (out / "tiny.md").read_text()
    assert "ESS published" in text and "ESS reproduced" in text and "ESS ratio" in text
    assert {p.name for p in written} == {"tiny.md", "reproduction.json"}
    record = json.loads((out / "reproduction.json").read_text())
    assert record["scale"] == "full" and len(record["cells"]) == 4


def test_chains_start_at_standard_normal_draws(tiny, tmp_path, monkeypatch):
    seen = []
    real = hm.sample

    def spy(*args, **kwargs):
        seen.append(kwargs.get("initial"))
        return real(*args, **kwargs)

    monkeypatch.setattr(hm, "sample", spy)
    reproduce.run_experiment(tiny, scale="small", only=[("Gauss", "HMC")])
    initial = seen[-1]
    assert initial.shape == (2, 10)
    # Seeded: the same cell starts at the same points.
    reproduce.run_experiment(tiny, scale="small", only=[("Gauss", "HMC")])
    np.testing.assert_array_equal(seen[-1], initial)


def test_a_finished_cell_is_read_not_rerun(tiny, tmp_path, monkeypatch):
    out = tmp_path / "out"
    first = reproduce.run_experiment(tiny, scale="small", output=out, only=[("Banana", "HMC")])

    def refuse(*args, **kwargs):
        raise AssertionError("a finished cell was run again")

    monkeypatch.setattr(hm, "sample", refuse)
    again = reproduce.run_experiment(tiny, scale="small", output=out, only=[("Banana", "HMC")])
    assert again.cells[("Banana", "HMC")].metrics == first.cells[("Banana", "HMC")].metrics


def test_a_folder_of_another_reproduction_is_refused_before_any_work(tiny, tmp_path, monkeypatch):
    out = tmp_path / "out"
    reproduce.run_experiment(tiny, scale="small", output=out, only=[("Banana", "HMC")])
    calls = []
    monkeypatch.setattr(hm, "sample", lambda *a, **k: calls.append(1))
    with pytest.raises(ValueError, match="--overwrite"):
        reproduce.run_experiment(tiny, scale="full", output=out)
    assert calls == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        reproduce.run_experiment(tiny, output=tmp_path / "file")
    with pytest.raises(ValueError, match="does not exist"):
        reproduce.run_experiment(tiny, output=tmp_path / "missing" / "out")
    with pytest.raises(ValueError, match="chains"):
        reproduce.run_experiment(tiny, chains=1)


def test_antithetic_cells_report_the_ess_of_pairs(tmp_path, tiny_file):
    text = tiny_file.read_text().replace(
        'recipe = "phmc"\noptions = { step_size = "$eps", n_steps = "$L", rho = 0.7 }',
        'recipe = "a-hmc"\noptions = { step_size = "$eps", n_steps = "$L" }\ness = "antithetic"',
    )
    path = tmp_path / "anti.toml"
    path.write_text(text)
    rep = reproduce.run_experiment(load_experiment(path), scale="small", only=[("Gauss", "PHMC")])
    cell = rep.cells[("Gauss", "PHMC")]
    assert len(cell.metrics["ess"]["per_chain"]) == 1  # one pair of two chains


def _seal(payload: dict) -> None:
    """The checksum of an edited cell's figures, as its writer would give it: a cell of older
    figures with the code's digest of today (a new metrics VERSION changes the digest, so
    only such a record, made by hand, still reaches the figures computed anew)."""
    payload["checksum"] = checksum(payload["cell"])


def test_cells_written_under_older_figures_are_computed_again_from_their_runs(tiny, tmp_path):
    out = tmp_path / "out"
    first = reproduce.run_experiment(tiny, scale="small", output=out, only=[("Banana", "HMC")])
    (path,) = (out / "cells").glob("*.json")
    payload = json.loads(path.read_text())
    payload["metrics_version"] = 0
    payload["cell"]["metrics"]["ess"]["value"] = -1.0
    _seal(payload)
    path.write_text(json.dumps(payload))
    again = reproduce.load_reproduction(out)
    assert again.cells[("Banana", "HMC")].metrics == first.cells[("Banana", "HMC")].metrics


@pytest.mark.parametrize("recorded", [True, False])
def test_figures_computed_again_keep_the_time_the_cell_was_run_with(tiny, tmp_path, recorded):
    """t depends on how many chains ran at once, which the run file does not say: the cell
    records it, and a cell written before it did has it read back from its t."""
    out = tmp_path / "out"
    first = reproduce.run_experiment(tiny, scale="small", output=out, only=[("Banana", "HMC")])
    (path,) = (out / "cells").glob("*.json")
    payload = json.loads(path.read_text())
    assert payload["concurrency"] >= 1
    # As if the chains had run three at a time (workers the run file does not record).
    payload["concurrency"] *= 3
    payload["cell"]["metrics"]["t"]["value"] *= 3
    if not recorded:
        del payload["concurrency"]
    payload["metrics_version"] = 0
    _seal(payload)
    path.write_text(json.dumps(payload))
    again = reproduce.load_reproduction(out).cells[("Banana", "HMC")].metrics
    assert again["t"]["value"] == pytest.approx(
        3 * first.cells[("Banana", "HMC")].metrics["t"]["value"]
    )
