"""The benchmark of pooled against per-chain metric adaptation
(:mod:`hamiltonia.bench.adaptation`) measures what it says, on a short run."""

import numpy as np

from hamiltonia.bench import adaptation


def test_the_benchmark_measures_both_choices_and_tabulates_them(capsys):
    size = dict(chains=2, warmup=150, draws=100)
    runs = [adaptation.measure("blr-german", mode, seed, **size)
            for seed in range(3) for mode in adaptation.MODES]  # fmt: skip
    for run in runs:
        assert 0 < run["min_ess_per_grad"] <= run["mean_ess_per_grad"]
        assert run["grad_per_draw"] >= 1
    rows = adaptation.table(runs)
    assert [row[:3] for row in rows] == [["blr-german", "pooled", "3"],
                                         ["blr-german", "per-chain", "3"]]  # fmt: skip
    ratio = float(rows[1][5].split(" / ")[0])
    low = [r["min_ess_per_grad"] for r in runs]
    np.testing.assert_allclose(ratio, np.mean(low[1::2]) / np.mean(low[::2]), atol=0.005)
    assert rows[1][6]  # the paired z-scores of three seeds
    # A log of the runs, as main() prints them, tabulates to the same table.
    for run in runs:
        print(f"# {run['target']} {run['mode']} seed {run['seed']}: min ESS/grad "
              f"{run['min_ess_per_grad']:.6e}, mean {run['mean_ess_per_grad']:.6e}, "
              f"{run['grad_per_draw']:.1f} grad/draw, {run['divergences']} divergences, "
              f"{run['seconds']:.1f} s")  # fmt: skip
    parsed = [adaptation._parse(line) for line in capsys.readouterr().out.splitlines()]
    assert [row[:6] for row in adaptation.table(parsed)] == [row[:6] for row in rows]
