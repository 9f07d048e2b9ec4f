"""The post-run benchmark at a tiny size (the table's structure, never its timings)."""

import pytest

from hamiltonia.bench import postrun


def test_a_small_run_reports_every_part_and_the_ratio(capsys):
    report = postrun.measure(2000, warmup=50, n_steps=3, output=True)
    assert report["draws"] == 2000 and report["chains"] == 4
    assert set(report["parts"]) == {key for key, _ in postrun.PARTS}
    assert all(seconds >= 0 for seconds in report["parts"].values())
    assert report["post_s"] == pytest.approx(sum(report["parts"].values()))
    assert report["ratio"] == pytest.approx(report["post_s"] / report["sampling_s"])
    assert report["file_mb"] > 0
    text = postrun.render(report)
    assert "| rank diagnostics |" in text and "| file write |" in text
    assert text.splitlines()[-2].startswith("post-run / sampling: ")
    assert report["kernel_load_s"] >= 0 and "kernels loaded or compiled in" in text
    assert postrun.main(["--draws", "500", "--warmup", "20", "--n-steps", "2", "--no-output"]) == 0
    out = capsys.readouterr().out
    assert "| sampling |" in out and "| file write |" not in out


def test_bad_sizes_are_refused(capsys):
    with pytest.raises(ValueError, match="draws, chains and n_steps"):
        postrun.measure(0)
    assert postrun.main(["--draws", "0"]) == 2
    assert "error" in capsys.readouterr().err
