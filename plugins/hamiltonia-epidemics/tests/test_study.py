"""The study ``epidemics-za``: registered, its cells, one cell run, read back on a rerun."""

from __future__ import annotations

from hamiltonia.testing import skip_unless_installed

skip_unless_installed("hamiltonia-epidemics")

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
