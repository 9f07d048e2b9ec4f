"""The study ``epidemics-za``: registered, its cells, one cell run, read back on a rerun."""

from __future__ import annotations

import importlib.metadata

import pytest

try:
    importlib.metadata.distribution("hamiltonia-epidemics")
except importlib.metadata.PackageNotFoundError:
    pytest.skip(
        "the epidemics plugin is not installed (pip install -e plugins/hamiltonia-epidemics)",
        allow_module_level=True,
    )

from hamiltonia_epidemics.study import EpidemicsZA


def test_one_cell_runs_reports_and_is_read_back(tmp_path):
    study = EpidemicsZA()
    assert len(study.cells()) == 18 and "SIR-2/NUTS" in study.cells()
    lines = []
    options = dict(scale="small", chains=2, only=["SIR-2/HMC"], figures=False, progress=False,
                   log=lines.append, sample_options={})  # fmt: skip
    report = study.run(tmp_path, **options)
    assert (tmp_path / "runs" / "sir-cp2_hmc.nc").is_file()
    assert "| SIR-2 | HMC |" in report.markdown and "447.91" in report.markdown
    assert report.rst[1].startswith("---")
    lines.clear()
    again = study.run(tmp_path, **options)
    assert any("read back" in line for line in lines)
    assert again.markdown == report.markdown
