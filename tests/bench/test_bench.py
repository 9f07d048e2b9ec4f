"""The benchmark: a quick run without peers, peer detection, and the pieces it relies on."""

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia import bench
from hamiltonia.bench import core
from hamiltonia.bench.peers import PEERS, detect_peers, initial_points
from hamiltonia.bench.runs import mess_defined, summarise


def test_quick_run_without_peers_prints_the_tables(tmp_path):
    out_file = tmp_path / "bench.rst"
    proc = subprocess.run(
        [sys.executable, "-m", "hamiltonia.bench", "--quick", "--targets", "banana",
         "--samplers", "hmc", "--peers", "none", "--output", str(out_file)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "failed" not in out
    for heading in ("# hamiltonia benchmark", "## Runs", "## Overhead", "## Chains",
                    "## Memory", "## Goals"):  # fmt: skip
        assert heading in out
    assert "| banana | HMC L=15 | hamiltonia | identity" in out
    assert "| banana | HMC L=15 | hamiltonia | diagonal" in out
    assert "| banana | NUTS |" not in out  # only the samplers asked for
    assert "machine:" in out and "numba" in out
    for peer in PEERS:  # requested none: each is reported, none is run
        assert f"* {peer}: " in out
        assert f"| {peer} |" not in out
    page = out_file.read_text()
    assert page.startswith("Benchmarks\n==========")
    assert ".. code-block:: text" in page and "   ## Runs" in page


def test_detect_peers_reports_missing_modules():
    def fake_find_spec(name):
        return None if name in ("jax", "mici") else object()

    found = detect_peers(find_spec=fake_find_spec)
    assert set(found) == {"numpyro", "blackjax", "mici"}
    assert found["numpyro"] == {"available": False, "missing": ["jax"]}
    assert found["blackjax"] == {"available": False, "missing": ["jax"]}
    assert found["mici"] == {"available": False, "missing": ["mici"]}
    everything = detect_peers(find_spec=lambda name: object())
    assert all(f["available"] and not f["missing"] for f in everything.values())


def test_detect_peers_matches_the_environment():
    found = detect_peers()
    for peer, modules in PEERS.items():
        installed = all(importlib.util.find_spec(m) is not None for m in modules)
        assert found[peer]["available"] == installed


def test_missing_peer_is_reported_not_an_error(monkeypatch, capsys):
    monkeypatch.setattr(
        core,
        "detect_peers",
        lambda: {
            "numpyro": {"available": False, "missing": ["numpyro", "jax"]},
            "blackjax": {"available": False, "missing": ["jax"]},
            "mici": {"available": False, "missing": ["mici"]},
        },
    )
    code = bench.main(
        ["--quick", "--targets", "banana", "--samplers", "hmc", "--peers", "numpyro,mici",
         "--skip-micro", "--warmup", "50", "--draws", "50"]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "* numpyro: not installed (missing: numpyro, jax), skipped" in out
    assert "* mici: not installed (missing: mici), skipped" in out
    assert "| numpyro |" not in out and "| mici |" not in out
    assert "| banana | HMC L=15 | hamiltonia |" in out


def test_bad_arguments_exit_with_code_2(capsys):
    assert bench.main(["--targets", "no-such-target", "--peers", "none"]) == 2
    assert bench.main(["--targets", "banana", "--peers", "stan"]) == 2
    assert bench.main(["--targets", "banana", "--samplers", "hmc,mala", "--peers", "none"]) == 2
    err = capsys.readouterr().err
    assert "no-such-target" in err and "stan" in err
    assert "unknown sampler(s) for the run matrix: mala (choose from hmc, nuts)" in err


def test_cli_forwards_to_bench(monkeypatch):
    from hamiltonia import cli

    seen = []
    monkeypatch.setattr(bench, "main", lambda argv: seen.append(argv) or 0)
    assert cli.main(["bench", "--quick", "--targets", "banana", "--peers", "none"]) == 0
    assert seen == [["--quick", "--targets", "banana", "--peers", "none"]]


def test_initial_points_are_hamiltonias_default():
    target = hm.targets.get("gaussian-d10")
    points = initial_points(3, 2, target.dim)
    result = hm.sample(target, "hmc", chains=2, warmup=0, draws=1, seed=3, progress=False,
                       step_size=1e-12, n_steps=1)  # fmt: skip
    # A step of 1e-12 barely moves: the first draw is the initial point.
    np.testing.assert_allclose(result.draws[:, 0], points, atol=1e-9)


def test_summarise_and_mess_definition():
    rng = np.random.default_rng(0)
    out = {
        "draws": rng.normal(size=(4, 400, 3)),
        "accept": np.full((4, 400), 0.8),
        "diverging": np.zeros((4, 400), dtype=bool),
        "n_grad": 4 * 400 * 10,
        "sampling_s": 0.5,
    }
    s = summarise(out)
    assert 800 < s["ess_bulk"] < 3000 and s["mess"] is not None
    assert s["grads_per_draw"] == 10 and s["divergences"] == 0
    assert s["ess_per_s"] == pytest.approx(s["ess_bulk"] / 0.5)
    assert mess_defined(1000, 25) and not mess_defined(1000, 32)
    wide = dict(out, draws=rng.normal(size=(4, 400, 30)))
    assert summarise(wide)["mess"] is None  # 20 batches <= 30 dimensions


def test_jax_log_densities_equal_the_targets():
    pytest.importorskip("jax")
    from hamiltonia.bench.peers import jax_log_density
    from hamiltonia.bench.peers._jax import setup_jax

    jax = setup_jax()
    targets = [hm.targets.get(name) for name in ("banana", "gaussian-d10", "funnel-d25")]
    try:
        targets.append(hm.targets.get("blr-german"))
    except OSError:  # the German credit data are not available here
        pass
    rng = np.random.default_rng(1)
    for target in targets:
        x = 0.3 * rng.normal(size=target.dim)
        f = jax_log_density(target)
        lp, grad = target.log_prob_and_grad(x)
        assert float(f(x)) == pytest.approx(float(lp), rel=1e-12, abs=1e-10)
        np.testing.assert_allclose(np.asarray(jax.grad(f)(x)), grad, rtol=1e-10, atol=1e-10)


def test_baseline_compares_two_checkouts_side_by_side(tmp_path):
    """``--baseline`` against this very checkout: both columns are timed, in fresh processes
    that import the package from the checkout given, and the ratio is their quotient."""
    from hamiltonia.bench.baseline import compare_checkouts, package_root

    result = compare_checkouts(
        package_root(), ["banana"], core.N_STEPS, metrics=("identity",), rounds=1, draws=50,
        repeats=1, seconds=0.01,
    )  # fmt: skip
    (row,) = result["rows"]
    assert row["target"] == "banana" and row["n_steps"] == core.N_STEPS["banana"]
    assert row["current_s"] > 0 and row["baseline_s"] > 0
    assert row["ratio"] == row["current_s"] / row["baseline_s"]
    assert (
        result["baseline"]
        == result["current"]
        == str(package_root() / "hamiltonia" / "__init__.py")
    )


def test_baseline_refuses_a_folder_without_the_package(tmp_path, capsys):
    assert core.main(["--baseline", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "baseline must be a checkout holding hamiltonia/__init__.py" in err


def test_nuts_goals_compare_with_numpyro_side_by_side():
    from hamiltonia.bench.report import nuts_goals

    def rec(target, library, variant, per_grad, per_s):
        return {"target": target, "sampler": "nuts", "library": library, "variant": variant,
                "ess_per_grad": per_grad, "ess_per_s": per_s}  # fmt: skip

    records = [
        rec("banana", "hamiltonia", "diagonal, compiled", 0.011, 300.0),
        rec("banana", "numpyro", "sequential", 0.010, 100.0),
        rec("blr-pima", "hamiltonia", "diagonal, compiled", 0.10, 150.0),
        rec("blr-pima", "numpyro", "sequential", 0.12, 100.0),
    ]
    per_grad, speed = nuts_goals(records)
    assert per_grad[1] is True and "banana 1.10x; blr-pima 0.83x" in per_grad[2]
    assert speed[1] is False and "blr-pima 1.50x" in speed[2]
    assert "not measured: gaussian-d100, blr-german" in speed[2]
    records[3]["ess_per_grad"] = 0.2
    assert nuts_goals(records)[0][1] is False
    assert nuts_goals([])[0][1] is None
