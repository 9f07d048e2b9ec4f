"""The study ``gp-experts`` through ``hamiltonia reproduce``: registered, one NUTS cell and
one L-BFGS cell run, the report written, and the run read back on a rerun."""

from __future__ import annotations

from hamiltonia import reproduce
from hamiltonia.cli import main
from hamiltonia.testing import skip_unless_installed

skip_unless_installed("hamiltonia-gp-experts")


def test_the_study_is_listed_runs_two_cells_and_reads_its_run_back(tmp_path, capsys):
    reproduce.study.registry.refresh()
    assert main(["reproduce", "--list"]) == 0
    assert "gp-experts" in capsys.readouterr().out
    folder = tmp_path / "gp"
    argv = ["reproduce", "gp-experts", "-o", str(folder), "--no-progress", "--no-figures",
            "--only", "synthetic-20/NUTS", "--only", "synthetic-20/L-BFGS"]  # fmt: skip
    assert main(argv) == 0
    first = capsys.readouterr()
    assert "## Synthetic 1-D study" in first.out
    assert (folder / "runs" / "synthetic-20.nc").is_file()
    assert (folder / "gp-experts.md").read_text().startswith("# Healing products")
    assert (folder / "gp-experts.rst").read_text().startswith("Healing products")
    assert main(argv) == 0
    again = capsys.readouterr()
    assert "(read back)" in again.err
    assert again.out.split("wrote")[0] == first.out.split("wrote")[0]
