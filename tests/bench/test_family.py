"""The family benchmark's rows and table, at tiny sizes (structure only, never timings)."""

import pytest

from hamiltonia.bench import family


def test_rows_compare_every_sampler_with_the_first_at_the_same_work():
    rows = family.family_cost(
        ("banana",), ("hmc", "s2hmc"), chains=2, warmup=20, draws=10, rounds=2
    )
    assert [r["sampler"] for r in rows] == ["hmc", "s2hmc"]
    assert rows[0]["ratio"] == 1.0
    for r in rows:
        assert r["n_steps"] == 15  # banana's research length, the same for every sampler
        assert r["us_per_iteration"] > 0 and r["ess_bulk"] > 0 and 0 < r["accept"] <= 1
        assert r["ratio"] == pytest.approx(r["us_per_iteration"] / rows[0]["us_per_iteration"])
    lines = family.family_table(rows)
    assert (
        lines[0].startswith("| target | sampler | L | gradients / iteration")
        and "/ hmc" in lines[0]
    )
    # The shadow sampler's fixed points cost gradients beyond the leapfrog's 15.
    assert rows[0]["grad_per_iteration"] == 15 and rows[1]["grad_per_iteration"] > 17
    assert len(lines) == 2 + 2 and all(ln.count("|") == lines[0].count("|") for ln in lines)


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="rounds, draws and chains must be >= 1"):
        family.family_cost(("banana",), rounds=0)
