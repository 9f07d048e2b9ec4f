"""The cost of the magnetic, partial-refresh, quantum-inspired and shadow samplers relative to
HMC (``hamiltonia bench family``).

Two measures per target and sampler, all compiled, side by side in this one process:

* **cost per iteration**: every sampler runs the same number of leapfrog steps with the same
  fixed step size (so the same leapfrog gradients; a shadow sampler adds its fixed points or
  its energies' curvature), and the median sampling time over
  rounds, in an order that rotates from round to round so that a burst of load on a shared
  machine hits every sampler alike, is divided by that of ``hmc``. This is the overhead of
  the parts: the magnetic drift, the partial refresh, the random mass, the shadows.
* **efficiency** with the research's settings (``n_steps``, ``g``, ``beta`` and ``rho`` from
  the target, the step size adapted to acceptance 0.8): the minimum bulk ESS, and ESS per
  second of sampling, of the last round.

The research reports MHMC and QIHMC at about the cost of HMC and QIMHMC 5-20 % slower
(Mongwe 2022, thesis, Tables 4.1-4.3), and its shadow samplers 1.7-3.7 times HMC's time on
its own code (Tables 5.1-5.3).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
import warnings

import numpy as np

__all__ = ["DEFAULT_SAMPLERS", "DEFAULT_TARGETS", "family_cost", "family_table", "main"]

DEFAULT_TARGETS = ("banana", "gaussian-d10", "blr-heart")
DEFAULT_SAMPLERS = (
    "hmc", "phmc", "mhmc", "pmhmc", "qihmc", "qimhmc", "s2hmc", "ps2hmc", "shmc", "smhmc",
)  # fmt: skip


def _run(target, sampler, settings, **options):
    import hamiltonia as hm
    from hamiltonia.diagnostics.univariate import ess

    # The research's fixed length, for a recipe that draws the length at random by default.
    jitter = inspect.signature(hm.samplers.get(sampler)).parameters.get("n_steps_jitter")
    if jitter is not None and jitter.default is None:
        options.setdefault("n_steps_jitter", 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = hm.sample(target, sampler, progress=False, compiled=True, **settings, **options)
    return result, float(np.min(ess(result.draws, "bulk")))


def family_cost(
    targets=DEFAULT_TARGETS,
    samplers=DEFAULT_SAMPLERS,
    *,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    rounds: int = 3,
    seed: int = 0,
    log=lambda message: None,
) -> list[dict]:
    """One row per target and sampler: ``us_per_iteration`` (median over ``rounds`` at a
    fixed step size and the target's research length), ``ratio`` (to ``hmc``'s),
    ``ess_bulk``, ``ess_per_s`` and ``step_size`` (research settings, adapted step size)."""
    import hamiltonia as hm

    if rounds < 1 or draws < 1 or chains < 1 or warmup < 0:
        raise ValueError("rounds, draws and chains must be >= 1 and warmup >= 0")
    rows = []
    for name in targets:
        target = hm.targets.get(name)
        settings = {"chains": chains, "warmup": warmup, "draws": draws, "seed": seed}
        # The fixed step size of the cost measure: HMC's adapted one, for every sampler.
        reference, _ = _run(target, "hmc", settings, n_steps=target.research_n_steps)
        step = float(np.mean(reference.stats["step_size"][:, -1]))
        fixed = {"n_steps": target.research_n_steps, "step_size": step}
        times = {s: [] for s in samplers}
        grads = {}
        for s in samplers:  # compile every composition before timing
            _run(target, s, {**settings, "warmup": 0, "draws": 5}, **fixed)
        for r in range(rounds):
            order = list(samplers[r % len(samplers) :]) + list(samplers[: r % len(samplers)])
            for s in order:
                log(f"family: {name}: round {r + 1}/{rounds}, {s}")
                result, _ = _run(target, s, {**settings, "warmup": 0}, **fixed)
                times[s].append(result.sampling_seconds / draws)
                grads[s] = float(np.mean(result.stats["n_grad"]))
        for s in samplers:
            result, ess = _run(target, s, settings)
            rows.append(
                {
                    "target": name,
                    "sampler": s,
                    "n_steps": fixed["n_steps"],
                    "us_per_iteration": 1e6 * float(np.median(times[s])),
                    "grad_per_iteration": grads[s],
                    "ess_bulk": ess,
                    "ess_per_s": ess / result.sampling_seconds,
                    "step_size": float(np.mean(result.stats["step_size"][:, -1])),
                    "accept": float(np.mean(result.stats["acceptance_rate"])),
                }
            )
        base = next(r["us_per_iteration"] for r in rows if r["target"] == name and
                    r["sampler"] == samplers[0])  # fmt: skip
        for row in rows:
            if row["target"] == name:
                row["ratio"] = row["us_per_iteration"] / base
    return rows


def family_table(rows: list[dict]) -> list[str]:
    """Markdown lines: cost per iteration and its ratio to the first sampler, then the
    efficiency with the research's settings."""
    first = rows[0]["sampler"] if rows else "hmc"
    lines = [
        f"| target | sampler | L | gradients / iteration | µs / iteration (fixed step) | "
        f"/ {first} | ESS bulk min | ESS/s | step size (adapted) | accept |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['target']} | {r['sampler']} | {r['n_steps']} | {r['grad_per_iteration']:.1f} "
            f"| {r['us_per_iteration']:.1f} | "
            f"{r['ratio']:.2f} | {r['ess_bulk']:.0f} | {r['ess_per_s']:.0f} | "
            f"{r['step_size']:.4f} | {r['accept']:.2f} |"
        )
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="hamiltonia bench family",
        description="Cost per iteration of the magnetic, partial-refresh, quantum-inspired and "
        "shadow samplers relative to HMC, side by side in one process.",
    )
    parser.add_argument("--targets", nargs="+", default=list(DEFAULT_TARGETS))
    parser.add_argument("--samplers", nargs="+", default=list(DEFAULT_SAMPLERS))
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    try:
        rows = family_cost(
            args.targets, args.samplers, chains=args.chains, warmup=args.warmup,
            draws=args.draws, rounds=args.rounds, seed=args.seed,
            log=lambda m: print(m, file=sys.stderr, flush=True),
        )  # fmt: skip
    except ValueError as err:
        print(f"hamiltonia bench family: error: {err}", file=sys.stderr)
        return 2
    print("\n".join(family_table(rows)))
    print(f"\n{args.chains} chains x {args.draws} draws, median of {args.rounds} rounds; "
          f"{time.perf_counter() - began:.0f} s in all")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
