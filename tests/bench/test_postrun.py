"""The post-run benchmark at a tiny size (the table's structure, never its timings)."""

import pytest

from hamiltonia.bench import postrun


def test_a_small_run_reports_every_part_and_the_ratio(capsys):
    report = postrun.measure(2000, warmup=50, output=True)
    assert report["draws"] == 2000 and report["chains"] == 4 and report["sampler"] == "nuts"
    assert report["gradients_per_draw"] >= 1
    assert set(report["parts"]) == {key for key, _ in postrun.PARTS}
    assert all(seconds >= 0 for seconds in report["parts"].values())
    assert report["post_s"] == pytest.approx(sum(report["parts"].values()))
    assert report["ratio"] == pytest.approx(report["post_s"] / report["sampling_s"])
    assert report["file_mb"] > 0
    text = postrun.render(report)
    assert "| rank diagnostics |" in text and "| file write |" in text
    assert text.splitlines()[-2].startswith("post-run / sampling: ")
    assert report["kernel_load_s"] >= 0 and "kernels loaded or compiled in" in text
    args = ["--draws", "500", "--warmup", "20", "--sampler", "hmc", "--n-steps", "2"]
    assert postrun.main([*args, "--no-output"]) == 0
    out = capsys.readouterr().out
    assert "| sampling |" in out and "| file write |" not in out
    assert "hmc" in out and "2 steps, 2.0 gradients a draw" in out


def test_bad_sizes_are_refused(capsys):
    with pytest.raises(ValueError, match="draws, chains and n_steps"):
        postrun.measure(0)
    with pytest.raises(ValueError, match="sampler must be one of nuts, hmc"):
        postrun.measure(100, sampler="mala")
    assert postrun.main(["--draws", "0"]) == 2
    assert "error" in capsys.readouterr().err
