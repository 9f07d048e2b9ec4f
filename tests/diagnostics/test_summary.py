"""The printed summary (hamiltonia.diagnostics.summary.format_summary): one number format per
column, as ArviZ and NumPyro print theirs."""

import io
import re

import numpy as np
import pandas as pd
import pytest

import hamiltonia as hm
from hamiltonia.diagnostics.summary import column_format, format_summary, format_table


def _cells(text: str) -> dict[str, list[str]]:
    """The printed cells of a table by column (a header line, the index name's line, then
    one line per row whose first word is the row's name)."""
    lines = text.splitlines()
    header = lines[0].split()
    rows = [line.split()[1:] for line in lines[2:] if line.strip()]
    assert all(len(row) == len(header) for row in rows), text
    return {column: [row[k] for row in rows] for k, column in enumerate(header)}


def _style(cell: str) -> str:
    """``"fixed 4"`` (four decimals), ``"int"``, ``"sci 3"`` or the cell itself (nan)."""
    if m := re.fullmatch(r"-?\d+\.(\d+)e[-+]\d+", cell):
        return f"sci {len(m[1])}"
    if m := re.fullmatch(r"-?\d+\.(\d+)", cell):
        return f"fixed {len(m[1])}"
    if re.fullmatch(r"-?\d+", cell):
        return "int"
    return cell


def _styles(text: str) -> dict[str, set[str]]:
    return {c: {_style(v) for v in values if v not in ("nan", "inf")}
            for c, values in _cells(text).items()}  # fmt: skip


@pytest.fixture
def mixed():
    """A summary whose rows differ by orders of magnitude (a tiny parameter, an ordinary
    one, a log density), where formatting each number on its own mixes 1.2e-05 and 3.4."""
    return pd.DataFrame(
        {
            "mean": [1.2e-05, 3.4, -250.25],
            "sd": [0.8, 1.25, 30.5],
            "median": [2.0e-06, 3.39, -249.0],
            "5%": [-1.3, 1.3, -300.0],
            "95%": [1.3, 5.5, -200.0],
            "mcse": [3.1e-04, 0.021, 0.9],
            "ess_bulk": [1933.4, 928.71, 15.2],
            "ess_tail": [1090.2, np.nan, 12.0],
            "r_hat": [1.0016, 1.0, 1.234],
        },
        index=pd.Index(["a", "b", "lp"], name="parameter"),
    )


def test_each_column_has_one_format(mixed):
    styles = _styles(format_summary(mixed))
    assert all(len(s) == 1 for s in styles.values()), styles
    assert styles["ess_bulk"] == styles["ess_tail"] == {"int"}
    assert styles["r_hat"] == {"fixed 2"}
    # The estimates share the decimals that suit the sd column (typical sd 1.25: 3 decimals).
    for column in ("mean", "sd", "median", "5%", "95%"):
        assert styles[column] == {"fixed 3"}, column
    assert styles["mcse"] == {"fixed 5"}  # typical mcse 0.021: four significant digits


def test_the_printed_numbers_are_the_table_rounded(mixed):
    cells = _cells(format_summary(mixed))
    assert cells["mean"] == ["0.000", "3.400", "-250.250"]
    assert cells["ess_bulk"] == ["1933", "929", "15"] and cells["ess_tail"][1] == "nan"
    assert cells["r_hat"] == ["1.00", "1.00", "1.23"]
    assert "e-" not in format_summary(mixed)


@pytest.mark.parametrize(
    ("values", "fmt"),
    [
        ([0.4149, -0.0091, -47.4], "{:.4f}"),
        ([1.398, 2.2, 0.28], "{:.3f}"),
        ([1933.2, 928.4], "{:.2f}"),
        ([0.0176, 0.0269], "{:.5f}"),
        ([3e-6, 1.2e-5, 4e-6], "{:.3e}"),
        ([2.5e9, 1e9], "{:.3e}"),
        ([0.0, 0.0], "{:.2f}"),
        ([np.nan, np.inf], "{:.2f}"),
    ],
)
def test_column_format(values, fmt):
    assert column_format(values) == fmt


def test_a_tiny_column_is_scientific_throughout():
    table = pd.DataFrame({"x": [1.5e-6, 2.25e-7, -3e-6, np.nan]}, index=list("abcd"))
    cells = format_table(table).split()
    assert cells[1:] == ["a", "1.500e-06", "b", "2.250e-07", "c", "-3.000e-06", "d", "nan"]


def test_print_summary_of_a_run():
    run = hm.sample("gaussian-d10", "hmc", chains=2, warmup=100, draws=100, seed=0,
                    progress=False)  # fmt: skip
    out = io.StringIO()
    run.print_summary(file=out)
    text = out.getvalue()
    table, _, footer = text.partition("\n\n")
    assert footer.strip() == f"Number of divergences: {run.n_divergent}"
    styles = _styles(table)
    assert list(styles) == ["mean", "sd", "median", "5%", "95%", "mcse", "ess_bulk", "ess_tail",
                            "r_hat"]  # fmt: skip
    assert all(len(s) == 1 for s in styles.values()), styles
    assert styles["ess_bulk"] == {"int"} and styles["r_hat"] == {"fixed 2"}
    assert _cells(table)["mean"][-1].startswith("-")  # the lp row, printed with the others
