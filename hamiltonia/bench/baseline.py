"""Side-by-side timing of this checkout against another one (``hamiltonia bench --baseline``).

A change to the core is judged by the cost of a leapfrog step before and after it, measured
in one run on one machine: this module times compiled HMC on the same targets, step sizes and
metrics with the current code and with the checkout at ``--baseline DIR`` (a ``git worktree``
of the commit before the change, say), in alternating fresh processes, and reports the ratio.
Only the public API (``hamiltonia.sample`` and ``Result.sampling_seconds`` / ``n_grad``) is
used in the timed processes, so any past version that has them can be the baseline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

__all__ = ["TIMING_SCRIPT", "compare_checkouts", "package_root"]

#: Run in each timed process: per-gradient seconds of one-chain compiled HMC at a fixed step
#: size, best of ``repeats`` calls after one untimed call (which loads the kernel); the draws
#: are scaled up until a call's sampling phase lasts ``seconds``, so that a cheap target is
#: timed over a similar span as a costly one.
TIMING_SCRIPT = """
import json, sys
import numpy as np
import hamiltonia as hm

spec = json.loads(sys.argv[1])
out = {"version": getattr(hm, "__version__", "?"), "file": hm.__file__, "rows": {}}
for row in spec["rows"]:
    target = hm.targets.get(row["target"])
    metric = "identity" if row["metric"] == "identity" else np.ones(target.dim)
    options = dict(chains=1, warmup=0, draws=spec["draws"], seed=0, n_steps=row["n_steps"],
                   n_steps_jitter=0.0, step_size=row["step_size"], metric=metric,
                   progress=False, compiled=True)
    first = hm.sample(target, "hmc", **options)
    scale = spec["seconds"] / max(first.sampling_seconds, 1e-6)
    # ... but no more than about 16 MB of draws and statistics: page faults on a growing
    # output would be timed instead of the kernel.
    cap = 2_000_000 // (target.dim + 10)
    options["draws"] = max(spec["draws"], min(int(spec["draws"] * scale), cap))
    best = float("inf")
    for _ in range(spec["repeats"]):
        result = hm.sample(target, "hmc", **options)
        best = min(best, result.sampling_seconds / max(result.n_grad, 1))
    out["rows"][row["target"] + "/" + row["metric"]] = best
print("RESULT " + json.dumps(out))
"""


def package_root() -> Path:
    """The folder that holds this checkout's ``hamiltonia`` package."""
    return Path(__file__).resolve().parents[2]


def _time_in(root: Path, spec: dict) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run(
        [sys.executable, "-c", TIMING_SCRIPT, json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(root),
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"timing in {root} failed (exit {done.returncode}): " + " | ".join(tail))
    return json.loads(lines[-1][len("RESULT ") :])


def compare_checkouts(
    baseline: str | os.PathLike,
    targets,
    n_steps: dict,
    *,
    metrics=("identity", "diagonal"),
    rounds: int = 3,
    draws: int = 2000,
    repeats: int = 3,
    seconds: float = 0.5,
    log=lambda message: None,
) -> dict:
    """Per-gradient seconds of compiled one-chain HMC, this checkout against ``baseline``.

    A timed call samples at least ``draws`` draws, more where that takes under ``seconds``.
    Each of ``rounds`` rounds times every (target, metric) row in one fresh process per
    checkout, the two in alternating order; a row's figure is its best over the rounds, so a
    burst of load on the shared machine spoils one round, not the comparison. The step size
    of a target is the one a short warm-up of this checkout finds, and both checkouts use it.

    Returns ``{"baseline": ..., "current": ..., "rows": [{"target", "metric", "n_steps",
    "step_size", "current_s", "baseline_s", "ratio"}]}`` with ratio = current / baseline.
    """
    import hamiltonia as hm

    base = Path(baseline).resolve()
    if not (base / "hamiltonia" / "__init__.py").is_file():
        raise ValueError(f"baseline must be a checkout holding hamiltonia/__init__.py, got {base}")
    if rounds < 1 or draws < 1 or repeats < 1:
        raise ValueError("rounds, draws and repeats must be >= 1")
    rows = []
    for name in targets:
        target = hm.targets.get(name)
        if target.numba_kernel() is None:
            log(f"baseline: {name} has no compiled kernel, skipped")
            continue
        warm = hm.sample(target, "hmc", chains=1, warmup=300, draws=1, seed=0, progress=False,
                         n_steps=n_steps.get(name, 15), n_steps_jitter=0.0,
                         compiled=True)  # fmt: skip
        step = float(warm.stats["step_size"][0, -1])
        for metric in metrics:
            rows.append({"target": name, "metric": metric, "n_steps": n_steps.get(name, 15),
                         "step_size": step})  # fmt: skip
    spec = {"rows": rows, "draws": draws, "repeats": repeats, "seconds": seconds}
    best = {"current": {}, "baseline": {}}
    info = {}
    here = package_root()
    for r in range(rounds):
        order = [("current", here), ("baseline", base)]
        if r % 2:
            order.reverse()
        for label, root in order:
            log(f"baseline: round {r + 1}/{rounds}, {label}")
            timed = _time_in(root, spec)
            info[label] = timed["file"]
            for key, per_grad in timed["rows"].items():
                best[label][key] = min(best[label].get(key, np.inf), per_grad)
    for row in rows:
        key = f"{row['target']}/{row['metric']}"
        row["current_s"] = best["current"][key]
        row["baseline_s"] = best["baseline"][key]
        row["ratio"] = row["current_s"] / row["baseline_s"]
    return {"baseline": info.get("baseline"), "current": info.get("current"), "rows": rows,
            "rounds": rounds, "draws": draws, "seconds": seconds}  # fmt: skip


def baseline_table(result: dict) -> list[str]:
    """Markdown lines for :func:`compare_checkouts`'s result."""
    lines = [
        f"current: `{result['current']}`; baseline: `{result['baseline']}`; one chain, "
        f"at least {result['draws']:,} draws (up to {result['seconds']} s) at a fixed step "
        f"size, best of {result['rounds']} "
        "alternating rounds",
        "",
        "| target | metric | L | ns/grad current | ns/grad baseline | current / baseline |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['target']} | {r['metric']} | {r['n_steps']} | {r['current_s'] * 1e9:,.0f} "
            f"| {r['baseline_s'] * 1e9:,.0f} | {r['ratio']:.2f} |"
        )
    return lines
