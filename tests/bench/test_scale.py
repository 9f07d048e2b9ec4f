"""The scale benchmark's rows and table, at tiny sizes (structure only, never timings)."""

import pytest

from hamiltonia.bench import scale


def test_rows_give_every_executor_the_same_draws():
    pytest.importorskip("distributed")
    # HMC: its kernel is in the cache by now (the bench tests before this one compile it).
    rows, startup = scale.scale_cost((4,), sampler="hmc", warmup=20, draws=20, workers=2)
    assert [(r["executor"], r["checkpoints_every"]) for r in rows] == [
        ("threads", float("inf")),
        ("processes", float("inf")),
        ("processes", 0.0),
        ("dask", float("inf")),
        ("dask", 0.0),
    ]
    assert all(r["same_draws"] for r in rows)
    assert rows[0]["per_chain_ms"] == 0.0 and rows[0]["checkpoints"] == 0
    every_block = [r for r in rows if r["checkpoints_every"] == 0.0]
    assert all(r["checkpoints"] >= 4 for r in every_block)  # each of the 4 tasks wrote one
    assert {"dask LocalCluster", "processes: first run (loads the kernels)"} <= set(startup)
    lines = scale.scale_table(rows)
    assert lines[0].startswith("| chains | executor |") and len(lines) == 2 + len(rows)


def test_bad_sizes_are_refused():
    pytest.importorskip("distributed")
    with pytest.raises(ValueError, match="rounds, draws and workers must be >= 1"):
        scale.scale_cost((4,), rounds=0)
