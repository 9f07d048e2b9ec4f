"""The checkpoint benchmark's rows and table, at tiny sizes (structure only, never timings)."""

import math

import pytest

from hamiltonia.bench import checkpoint
from hamiltonia.results.runfile import RunFile

KEYS = {"target", "interval", "label", "compiled", "wall_s", "best_s", "sampling_s", "ratio",
        "ratio_final", "checkpoints", "blocks", "checkpoint_s", "final_s", "file_bytes",
        "rounds"}  # fmt: skip


def test_rows_count_checkpoints_and_leave_no_files(tmp_path):
    append, finish = RunFile.append, RunFile.finish
    rows = checkpoint.checkpoint_cost(
        ("banana",), draws=12, chains=2, warmup=5, intervals=(None, math.inf, 0.0), rounds=2,
        compiled=False, folder=tmp_path,
    )  # fmt: skip
    assert [r["label"] for r in rows] == ["no output", "final file only", "every block"]
    for r in rows:
        assert set(r) == KEYS
        assert r["target"] == "banana" and r["rounds"] == 2 and r["compiled"] is False
        assert 0 < r["best_s"] <= r["wall_s"]
        assert r["ratio"] == pytest.approx(r["wall_s"] / rows[0]["wall_s"])
        assert r["ratio_final"] == pytest.approx(r["wall_s"] / rows[1]["wall_s"])
    none, final, every = rows
    assert none["checkpoints"] == 0 and none["file_bytes"] is None and none["ratio"] == 1
    # Warm-up writes its first checkpoint at once (after the step-size search), whatever the
    # interval: a run killed in warm-up resumes from it. It holds no block of draws.
    assert final["checkpoints"] == 1 and final["blocks"] == 0 and final["final_s"] > 0
    # The NumPy path records one draw at a time: with interval 0, one block per draw, after
    # a checkpoint per warm-up iteration and the first.
    assert every["blocks"] == 12 and every["checkpoints"] == 12 + 5 + 1
    assert every["checkpoint_s"] > 0
    assert final["file_bytes"] > 0 and every["file_bytes"] > 0
    assert (RunFile.append, RunFile.finish) == (append, finish)  # the wrappers are gone
    assert list(tmp_path.iterdir()) == []  # the temporary folder is removed

    lines = checkpoint.checkpoint_table(rows)
    assert lines[0].startswith("| target | checkpoints |") and "/ no output" in lines[0]
    assert len([ln for ln in lines if ln.startswith("| banana |")]) == 3
    assert all(ln.count("|") == lines[0].count("|") for ln in lines[:5])


def test_table_states_the_goal_for_a_tenth_of_a_second():
    row = {"target": "t", "label": "every 0.1 s", "compiled": True, "wall_s": 2.0, "best_s": 1.9,
           "ratio": 2.0, "ratio_final": 1.1, "checkpoints": 5, "blocks": 5,
           "checkpoint_s": 0.5, "final_s": 0.1, "file_bytes": 10**6}  # fmt: skip
    lines = checkpoint.checkpoint_table([{**row, "interval": 0.1}])
    assert lines[-1] == (
        "* t: checkpoint_seconds=0.1 costs 2.00x no output (goal <= 1.5x): NOT met; "
        "1.10x final file only"
    )
    lines = checkpoint.checkpoint_table([{**row, "interval": 0.1, "ratio": 1.2}])
    assert lines[-1].endswith(": met; 1.10x final file only")


def test_main_prints_the_table(tmp_path, capsys):
    code = checkpoint.main(
        ["--targets", "banana", "--draws", "6", "--chains", "1", "--warmup", "3",
         "--intervals", "none,0.1", "--rounds", "1", "--compiled", "no",
         "--folder", str(tmp_path)]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith("# Cost of checkpointing")
    assert "| banana | no output | no |" in out and "| banana | every 0.1 s | no |" in out
    assert "checkpoint_seconds=0.1 costs" in out


def test_main_refuses_bad_arguments(capsys):
    assert checkpoint.main(["--targets", "no-such-target"]) == 2
    assert checkpoint.main(["--intervals", "none,-1"]) == 2
    err = capsys.readouterr().err
    assert "no-such-target" in err and "--intervals" in err
