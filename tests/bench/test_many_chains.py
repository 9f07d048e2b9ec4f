"""The many-chains benchmark at a tiny size (the table's structure, never its timings)."""

import pytest

from hamiltonia.bench import many_chains


def test_a_row_reports_the_run_and_the_diagnostics_against_arviz():
    row = many_chains.measure(8, total_draws=64, target="gaussian-d10", n_steps=2)
    assert {key for _, key, _ in many_chains.COLUMNS} == set(row)
    assert row["chains"] == 8 and row["draws"] == 8
    assert row["whole_s"] >= row["sampling_s"] > 0
    assert row["post_s"] == pytest.approx(row["whole_s"] - row["sampling_s"])
    assert row["gradients_per_s"] > 0 and row["arviz_s"] > 0
    # The same numbers as arviz-stats.
    assert row["difference"] < 1e-10


def test_the_command_prints_and_writes_the_table(tmp_path, capsys):
    out = tmp_path / "many.rst"
    args = ["--chains", "4", "8", "--total-draws", "64", "--target", "gaussian-d10",
            "--n-steps", "2", "--no-arviz", "--output", str(out)]  # fmt: skip
    assert many_chains.main(args) == 0
    printed = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(printed) if line.startswith("| chains |"))
    assert [line.split("|")[1].strip() for line in printed[header + 2 : header + 4]] == ["4", "8"]
    assert "| – |" in printed[header + 2]  # no arviz-stats column values
    text = out.read_text()
    assert ".. list-table::" in text and "   * - chains" in text and "     - 8" in text
    md = tmp_path / "many.md"
    assert many_chains.main([*args[:-1], str(md)]) == 0
    assert md.read_text().splitlines()[3].startswith("| chains |")


def test_bad_sizes_are_refused(capsys):
    with pytest.raises(ValueError, match="total_draws >= chains"):
        many_chains.measure(8, total_draws=4)
    assert many_chains.main(["--chains", "8", "--total-draws", "4"]) == 2
    assert "error" in capsys.readouterr().err
