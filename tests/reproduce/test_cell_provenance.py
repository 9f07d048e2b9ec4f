"""A reproduction's cells are tied to the code, the definition and the settings that made
them, and to their own figures by a checksum: a cell that does not match is recomputed (or,
with ``no_rerun``, refused), never reused, and the docs page is made from the cells that match
only, each one skipped named with the reason."""

import hashlib
import json
import warnings

import pytest

import hamiltonia as hm
from hamiltonia import reproduce
from hamiltonia.cli import main
from hamiltonia.reproduce.experiment import load_experiment

BANANA_HMC = ("Banana", "HMC")


@pytest.fixture
def tiny(tiny_file):
    return load_experiment(tiny_file)


def _seal(payload: dict) -> None:
    """Give a cell record edited by a test the checksum of its figures again: SHA-256 of the
    ``cell`` payload as canonical JSON (sorted keys, no spaces), as a writer would."""
    text = json.dumps(payload["cell"], sort_keys=True, separators=(",", ":"))
    payload["checksum"] = hashlib.sha256(text.encode()).hexdigest()


def _cell_path(out, cell=BANANA_HMC):
    return out / "cells" / f"{cell[0]}__{cell[1]}.json"


def _edit(path, change) -> None:
    payload = json.loads(path.read_text())
    change(payload)
    path.write_text(json.dumps(payload))


def _counting_sample(monkeypatch) -> list:
    """The recorded runs (those with an output) that ``hamiltonia.sample`` makes."""
    calls = []
    real = hm.sample

    def spy(*args, **kwargs):
        if kwargs.get("output") is not None:
            calls.append(kwargs["output"])
        return real(*args, **kwargs)

    monkeypatch.setattr(hm, "sample", spy)
    return calls


def test_a_cell_made_by_other_code_is_recomputed_not_reused(tiny, tmp_path, monkeypatch):
    """Defect 1: a folder whose cells another version of the package made (its draws differ)
    was read back as "done before" and its figures printed as today's."""
    out = tmp_path / "out"
    first = reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC])
    today = first.cells[BANANA_HMC].metrics["acceptance"]["value"]

    def from_other_code(payload):
        payload["code"] = {"version": "0.0.1", "digest": "0" * 64}
        payload["cell"]["metrics"]["acceptance"]["value"] = 12.5
        _seal(payload)

    _edit(_cell_path(out), from_other_code)
    calls = _counting_sample(monkeypatch)
    lines = []
    again = reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC], log=lines.append)
    assert len(calls) == 1, "the other code's cell was reused"
    assert again.cells[BANANA_HMC].metrics["acceptance"]["value"] == pytest.approx(today)
    said = "\n".join(lines)
    assert "Banana__HMC.json was made by other code (hamiltonia 0.0.1" in said
    assert "; recomputing" in said and "done before" not in said
    # Written anew: the folder's cell is today's, and the page takes it.
    assert reproduce.load_reproduction(out).cells.keys() == {BANANA_HMC}


def test_the_docs_page_skips_a_cell_of_other_code_and_names_it(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC])

    def from_other_code(payload):
        payload["code"] = {"version": "0.0.1", "digest": "0" * 64}

    _edit(_cell_path(out), from_other_code)
    page = tmp_path / "page.rst"
    assert main(["reproduce", "--docs-page", str(page), str(out)]) == 0
    err = capsys.readouterr().err
    assert f"{_cell_path(out)} skipped: it was made by other code (hamiltonia 0.0.1" in err
    rows = page.read_text().split("**Banana**")[1].split("**Gauss**")[0]
    assert "AR (%) reproduced\n     - –\n     - –" in rows  # no reproduced figure shown


def test_overwrite_with_only_leaves_no_stale_cell_of_the_other_entries(tiny_file, tmp_path, capsys):
    """Defect 2: ``--overwrite --chains N --only CELL`` left the other entries' cells of the
    earlier chains in the folder, and the docs page showed them beside today's."""
    out = tmp_path / "out"
    base = ["reproduce", str(tiny_file), "-o", str(out), "--no-progress", "--no-figures"]
    assert main([*base, "--only", "Banana/HMC", "--only", "Gauss/HMC"]) == 0
    assert main([*base, "--overwrite", "--chains", "3", "--only", "Banana/HMC"]) == 0
    capsys.readouterr()
    reproduction = reproduce.load_reproduction(out)
    assert reproduction.cells.keys() == {BANANA_HMC}, "a 2-chain cell survived --overwrite"
    assert hm.load(reproduction.cells[BANANA_HMC].run_file).n_chains == 3
    page = tmp_path / "page.rst"
    assert main(["reproduce", "--docs-page", str(page), str(out)]) == 0
    assert "3 chains" in page.read_text()


def test_cells_of_other_settings_are_skipped_by_the_page(tiny, tmp_path):
    """Without --overwrite a run with other settings recomputes its own cells; the folder's
    other cells, made with the earlier settings, are no longer taken for today's."""
    out = tmp_path / "out"
    reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC, ("Gauss", "HMC")])
    lines = []
    reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC], compiled=False,
                             log=lines.append)  # fmt: skip
    assert "was made with other settings (compiled None, now False); recomputing" in "\n".join(
        lines
    )
    with pytest.warns(reproduce.CellSkippedWarning, match="Gauss__HMC.json skipped: it was made "
                      r"with other settings \(compiled None, now False\)"):  # fmt: skip
        reproduction = reproduce.load_reproduction(out)
    assert reproduction.cells.keys() == {BANANA_HMC}
    assert list(reproduction.skipped) == [str(_cell_path(out, ("Gauss", "HMC")))]


def test_a_cell_of_another_definition_is_recomputed(tiny_file, tmp_path, monkeypatch):
    """The fingerprint covers the cell's place in the table: its seed comes from it."""
    out = tmp_path / "out"
    reproduce.run_experiment(load_experiment(tiny_file), output=out, only=[("Gauss", "HMC")])
    # A target inserted first: the Gauss cells move down the table, and their seeds change.
    zero = '[[targets]]\nlabel = "Zero"\nname = "gaussian-d10"\nvars = { L = 5, eps = 0.2 }\n\n'
    text = tiny_file.read_text().replace("[[targets]]", zero + "[[targets]]", 1)
    tiny_file.write_text(text)
    calls = _counting_sample(monkeypatch)
    lines = []
    reproduce.run_experiment(load_experiment(tiny_file), output=out, only=[("Gauss", "HMC")],
                             log=lines.append)  # fmt: skip
    assert len(calls) == 1
    assert "was made for another definition of the cell" in "\n".join(lines)


def test_a_hand_edited_figure_is_not_accepted(tiny, tmp_path, monkeypatch):
    """Defect 3: a cell whose acceptance rate was edited to 99.9 % was read as it was, and a
    published claim turned to "holds"."""
    out = tmp_path / "out"
    reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC])

    def tampered(payload):
        payload["cell"]["metrics"]["acceptance"]["value"] = 99.9

    _edit(_cell_path(out), tampered)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reproduction = reproduce.load_reproduction(out)
    assert reproduction.value("Banana", "HMC", "acceptance") != 99.9, "the edited figure was read"
    assert reproduction.cells == {}
    assert [w.category.__name__ for w in caught] == ["CellSkippedWarning"]
    (why,) = reproduction.skipped.values()
    assert why == (
        "has a checksum that does not verify: its figures were edited or damaged after it was "
        "written"
    )
    calls = _counting_sample(monkeypatch)
    lines = []
    again = reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC], log=lines.append)
    assert len(calls) == 1
    assert again.value("Banana", "HMC", "acceptance") != 99.9
    assert "Banana__HMC.json has a checksum that does not verify" in "\n".join(lines)


def test_a_truncated_cell_is_named_not_a_json_traceback(tiny, tmp_path, capsys):
    """Defect 4: a truncated cell file crashed ``--docs-page`` with a JSON error that did not
    name the file."""
    out = tmp_path / "out"
    reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC, ("Banana", "PHMC")])
    path = _cell_path(out)
    path.write_bytes(path.read_bytes()[:100])
    page = tmp_path / "page.rst"
    assert main(["reproduce", "--docs-page", str(page), str(out)]) == 0
    err = capsys.readouterr().err
    assert f"{path} skipped: it does not parse as a cell record (" in err
    assert "the file is truncated or damaged" in err
    assert "PHMC" in page.read_text()


def test_no_rerun_refuses_a_cell_that_does_not_match(tiny, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC])
    before = _cell_path(out).read_bytes()
    _edit(_cell_path(out), lambda p: p["cell"]["metrics"]["t"].update(value=0.001))
    edited = _cell_path(out).read_bytes()
    calls = _counting_sample(monkeypatch)
    with pytest.raises(ValueError, match=r"--no-rerun: 1 cell in .* does not match .*\n  .*"
                       r"Banana__HMC.json has a checksum that does not verify"):  # fmt: skip
        reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC], no_rerun=True)
    assert calls == [] and _cell_path(out).read_bytes() == edited
    argv = ["reproduce", str(out.parent / "tiny.toml"), "-o", str(out), "--only", "Banana/HMC",
            "--no-progress", "--no-figures", "--no-rerun"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Banana__HMC.json has a checksum that does not verify" in err
    assert "run again without --no-rerun to recompute" in err
    # A matching cell is read, and a missing one run, with --no-rerun too.
    _cell_path(out).write_bytes(before)
    rep = reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC, ("Gauss", "HMC")],
                                   no_rerun=True)  # fmt: skip
    assert rep.cells.keys() == {BANANA_HMC, ("Gauss", "HMC")} and len(calls) == 1
    with pytest.raises(ValueError, match="--no-rerun and --overwrite"):
        reproduce.run_experiment(tiny, output=out, overwrite=True, no_rerun=True)


def test_a_cell_records_its_code_definition_settings_and_checksum(tiny, tmp_path):
    from hamiltonia.reproduce.provenance import code_version

    out = tmp_path / "out"
    reproduce.run_experiment(tiny, output=out, only=[BANANA_HMC], compiled=False)
    payload = json.loads(_cell_path(out).read_text())
    code = code_version()
    assert payload["code"]["version"] == hm.__version__ == code["version"]
    assert len(payload["code"]["digest"]) == 64 and payload["code"] == code
    definition = payload["definition"]
    assert definition["protocol"]["chains"] == 2 and definition["scale"] == "small"
    assert definition["cell"] == 0 and definition["target"]["label"] == "Banana"
    assert definition["sampler"]["options"]["step_size"] == 0.1
    assert payload["settings"] == {"chains": 2, "executor": None, "workers": None,
                                   "compiled": False}  # fmt: skip
    sealed = dict(payload)
    _seal(sealed)
    assert payload["checksum"] == sealed["checksum"]
    assert code_version() is code  # computed once per process
