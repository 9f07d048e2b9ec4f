"""Running an experiment and a cell's records live in modules of one job each (issue 48):
a cell's figures and its record, written and read back, in ``reproduce.cell_records``;
``reproduce.execute`` still gives every name it gave before, the same objects as their new
homes'."""

from __future__ import annotations

from tests.moved import assert_re_exported

#: Each name ``execute`` had before the split that moved, by its new home.
HOMES = {"cell_records": ["CellOutcome", "cell_name"]}

#: ``execute.__all__`` before the split: unchanged.
PUBLIC = [
    "CellOutcome", "CellSkippedWarning", "Reproduction", "ReproductionInterrupted",
    "cell_name", "check_output_folder", "load_reproduction", "run_experiment",
    "stop_if_interrupted",
]  # fmt: skip


def test_every_name_is_where_it_was():
    homes = {f"hamiltonia.reproduce.{module}": names for module, names in HOMES.items()}
    assert_re_exported("hamiltonia.reproduce.execute", homes, PUBLIC)
