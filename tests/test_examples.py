"""The example scripts run as a user would run them."""

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(path, capsys):
    if path.name == "real_data.py":
        from hamiltonia import datasets

        if datasets.status()["pima"] == "missing":
            pytest.skip("the Pima data set is not available (set HAMILTONIA_DATA)")
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out.strip()


def test_there_are_examples():
    assert len(EXAMPLES) >= 4
