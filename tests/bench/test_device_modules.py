"""The device benchmark lives in modules of one job each (issue 48): one cell's measurement
in ``bench.device_cells``, the array-API ports in ``bench.device_ports``;
``bench.device`` still gives every name it gave before, the same objects as their new
homes'."""

from __future__ import annotations

from tests.moved import assert_re_exported

#: Each name ``device`` had before the split that moved, by its new home.
HOMES = {"device_ports": ["port"]}

#: ``device.__all__`` before the split: unchanged.
PUBLIC = ["BNN_CHAINS", "DEFAULT_CHAINS", "DEFAULT_TARGETS", "IMPLS", "SETTINGS", "main",
          "port", "run"]  # fmt: skip


def test_every_name_is_where_it_was():
    homes = {f"hamiltonia.bench.{module}": names for module, names in HOMES.items()}
    assert_re_exported("hamiltonia.bench.device", homes, PUBLIC)
