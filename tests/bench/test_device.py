"""The device benchmark at tiny sizes on the CPU: the table and JSON shapes, the GPU cells
skipped with their reason, and the array-API ports of the NumPy-only targets (never timings)."""

import json

import numpy as np
import pytest

from hamiltonia import backend
from hamiltonia.bench import device
from hamiltonia.targets.bnn import BayesianNeuralNetwork
from hamiltonia.targets.logistic import LogisticRegression

IMPLS = ("hm-cupy", "hm-cpu", "hm-numpy", "blackjax")


def _usable(kind: str) -> bool:
    if kind == "cupy":
        try:
            with backend.using("cupy"):
                return True
        except RuntimeError:
            return False
    try:
        import blackjax  # noqa: F401
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


def test_tiny_run_reports_every_cell(tmp_path, capsys):
    out = tmp_path / "device.json"
    argv = ["--targets", "gaussian-d100", "--chains", "1,3", "--impls", ",".join(IMPLS),
            "--cell-seconds", "0.02", "--max-draws", "30", "--ess-min-draws", "20",
            "--out", str(out)]  # fmt: skip
    assert device.main(argv) == 0
    report = json.loads(out.read_text())
    assert {"device", "settings", "rows", "seconds"} <= set(report)
    assert report["settings"]["chains"] == [1, 3]
    rows = report["rows"]
    assert [(r["impl"], r["chains"]) for r in rows] == [(i, c) for c in (1, 3) for i in IMPLS]
    for row in rows:
        assert row["target"] == "gaussian-d100" and row["status"] in {"ok", "skipped", "error"}
        assert (row["step_size"], row["n_steps"]) == device.SETTINGS["gaussian-d100"]
        if row["status"] != "ok":
            assert row["reason"]
            continue
        assert 1 <= row["draws"] <= 30 and 0.0 <= row["accept"] <= 1.0
        assert row["grads"] == row["chains"] * row["draws"] * row["n_steps"]
        assert row["grad_per_s"] > 0 and row["seconds"] > 0
        assert row["ess"] is None or row["ess"] > 0
    by_impl = {(r["impl"], r["chains"]): r for r in rows}
    for chains in (1, 3):
        assert by_impl["hm-cpu", chains]["status"] == "ok"
        assert by_impl["hm-numpy", chains]["status"] == "ok"
        if not _usable("cupy"):
            cell = by_impl["hm-cupy", chains]
            assert cell["status"] == "skipped" and "cupy" in cell["reason"].lower()
        if not _usable("blackjax"):
            cell = by_impl["blackjax", chains]
            assert cell["status"] == "skipped" and "jax" in cell["reason"].lower()
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("device: ")
    header = next(i for i, line in enumerate(printed) if line.startswith("target "))
    table = [line for line in printed[header + 1 :] if line.startswith("gaussian-d100 ")]
    assert len(table) == len(rows)
    assert all("skipped: " in line for line in table if " hm-cupy " in line) or _usable("cupy")
    assert printed[-1].startswith("done in ")


def test_no_time_left_skips_every_cell(tmp_path):
    out = tmp_path / "device.json"
    device.main(["--targets", "gaussian-d100", "--chains", "2", "--impls", "hm-cpu",
                 "--total-seconds", "0", "--out", str(out)])  # fmt: skip
    (row,) = json.loads(out.read_text())["rows"]
    assert row["status"] == "skipped" and row["reason"].startswith("out of time")


def test_bad_options_are_refused():
    with pytest.raises(SystemExit):
        device.parse(["--impls", "hm-tpu"])


@pytest.mark.parametrize("kind", ["logistic", "network"])
def test_ports_compute_the_targets_density_on_any_backend(kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    if kind == "logistic":
        target = LogisticRegression(X, (rng.random(40) < 0.5).astype(float))
    else:
        target = BayesianNeuralNetwork(X, rng.normal(size=40), n_hidden=2)
    ported = device.port(target)
    assert ported.dim == target.dim and "cupy" in ported.backends
    x = rng.normal(size=(4, target.dim))
    for got, want in zip(ported.log_prob_and_grad(x), target.log_prob_and_grad(x), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ported.log_prob_and_grad(x[0])[1], target.log_prob_and_grad(x)[1][0])
    strict = pytest.importorskip("array_api_strict")
    _, grad = ported.log_prob_and_grad(strict.asarray(x))
    np.testing.assert_allclose(np.asarray(grad), target.log_prob_and_grad(x)[1], atol=1e-12)


def test_the_report_path_is_checked_before_any_work(tmp_path):
    """A folder, a FIFO or an existing file (without --overwrite) is refused at once."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    existing = tmp_path / "old.json"
    existing.write_text("{}")
    for out in (tmp_path, fifo, existing):
        with pytest.raises(SystemExit):
            device.parse(["--out", str(out)])
    assert existing.read_text() == "{}"
    assert device.parse(["--out", str(existing), "--overwrite"]).out == existing


@pytest.mark.parametrize("argv", [["--device"], ["device"]])
def test_the_bench_command_runs_the_device_benchmark(tmp_path, argv):
    """``python -m hamiltonia.bench --device ...`` (issue 33's spelling) and ``hamiltonia bench
    device ...`` reach this benchmark, with the other arguments passed on."""
    from hamiltonia.bench import core

    out = tmp_path / "device.json"
    rest = ["--targets", "gaussian-d100", "--chains", "2", "--impls", "hm-cpu",
            "--total-seconds", "0", "--out", str(out)]  # fmt: skip
    assert core.main(argv + rest) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["impl"], row["chains"], row["status"]) == ("hm-cpu", 2, "skipped")
