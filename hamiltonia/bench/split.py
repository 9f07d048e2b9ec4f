"""Split HMC over data subsets: memory and time against the number of subsets, and the
acceptance of the three schemes at one step size (``python -m hamiltonia.bench split``, or
``hamiltonia bench split``).

Two tables:

1. **Memory and time against M** on a data target (default ``bnn-protein``, 45,730 rows).
   *Peak memory of one gradient*: the peak of the NumPy allocations (``tracemalloc``, which
   NumPy reports to) while one subset's gradient is evaluated for a batch of chains, the
   vectorised path's unit of work; with ``M = 1`` it is the whole gradient. Its ratio to the
   whole gradient's peak should fall as :math:`1/M` (the arrays of a network's pass have the
   subset's rows). The data set itself, held once, is not counted. *Time per trajectory*:
   seconds per iteration of ``split-hmc`` (symmetric scheme, fixed step size and length) on
   the compiled path and on the NumPy path, from the run's own clock of its sampling
   iterations; the compiled kernels process rows in fixed blocks, so their memory does not
   grow with the rows at all and M changes only the arithmetic (2(M - 1) subset gradients a
   step, plus the closing whole gradient).
2. **Acceptance at equal step size** of full HMC and the three schemes on the seed's
   regression example (``regression-1d``, four subsets, :math:`\\varepsilon = 5 \\times
   10^{-4}`, :math:`L = 30`, as Cobb and Jalaian 2021, Table 1), with the spread over
   chains.

The figures depend on the machine; ratios within one run compare.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
import warnings

import numpy as np

__all__ = ["acceptance_table", "main", "memory_table"]

DEFAULT_SPLITS = (1, 2, 4, 8)


def _quiet_sample(*args, **kwargs):
    import hamiltonia as hm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the runs' diagnostics are not what is measured
        return hm.sample(*args, progress=False, **kwargs)


def peak_gradient_bytes(split, x: np.ndarray, component: int = 0) -> int:
    """Peak bytes NumPy allocates while evaluating one component's gradient at ``x``."""
    split.component_log_prob_and_grad(x, component)  # warm: caches, lazily built arrays
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        split.component_log_prob_and_grad(x, component)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base


def memory_table(target_name: str = "bnn-protein", splits=DEFAULT_SPLITS, *, chains: int = 8,
                 iterations: int = 20, n_steps: int = 10, step_size: float = 1e-4,
                 seed: int = 0, log=lambda message: None) -> list[dict]:  # fmt: skip
    """One row per M: peak bytes of one subset gradient (and its ratio to M = 1), seconds per
    iteration compiled and on the NumPy path."""
    import hamiltonia as hm
    from hamiltonia.targets.split import split_target

    data = hm.targets.get(target_name)
    x = 0.1 * np.random.default_rng(seed).normal(size=(chains, data.dim))
    rows, whole = [], None
    for m in splits:
        split = split_target(data, m)
        peak = peak_gradient_bytes(split, x)
        whole = peak if whole is None else whole
        timing = {}
        for compiled in (True, False):
            options = dict(scheme="symmetric", n_splits=m, step_size=step_size, n_steps=n_steps,
                           metric="identity", adapt_step_size=False)  # fmt: skip
            _quiet_sample(
                data,
                "split-hmc",
                chains=1,
                warmup=0,
                draws=2,
                seed=seed,
                compiled=compiled,
                **options,
            )  # fmt: skip  (compile, warm caches)
            run = _quiet_sample(data, "split-hmc", chains=1, warmup=0, draws=iterations,
                                seed=seed, compiled=compiled, **options)  # fmt: skip
            timing[compiled] = run.sampling_seconds / iterations
        rows.append({
            "M": m, "rows_per_subset": int(np.max(np.diff(split.boundaries))),
            "peak_MB": peak / 1e6, "peak_ratio": peak / whole, "ideal_ratio": 1.0 / m,
            "ms_per_iter_compiled": 1e3 * timing[True], "ms_per_iter_numpy": 1e3 * timing[False],
        })  # fmt: skip
        log(f"M = {m}: done")
    return rows


def acceptance_table(*, chains: int = 4, warmup: int = 50, draws: int = 150,
                     step_size: float = 5e-4, n_steps: int = 30, n_splits: int = 4,
                     seed: int = 1, log=lambda message: None) -> list[dict]:  # fmt: skip
    """Acceptance of full HMC and the three schemes at one step size on ``regression-1d``."""
    import hamiltonia as hm

    data = hm.targets.get("regression-1d")
    common = dict(chains=chains, warmup=warmup, draws=draws, seed=seed, metric="identity",
                  adapt_step_size=False, step_size=step_size, n_steps=n_steps)  # fmt: skip
    runs = {"full HMC": lambda: _quiet_sample(data, "hmc", **common)}
    for scheme in ("naive", "randomised", "symmetric"):
        runs[f"{scheme} split"] = lambda scheme=scheme: _quiet_sample(
            data, "split-hmc", scheme=scheme, n_splits=n_splits, **common
        )
    rows = []
    for label, run in runs.items():
        began = time.perf_counter()
        result = run()
        accepted = np.asarray(result.stats["accepted"], dtype=float).mean(axis=1)
        rows.append({"scheme": label, "acceptance": float(accepted.mean()),
                     "sd": float(accepted.std(ddof=1)) if chains > 1 else float("nan"),
                     "seconds": time.perf_counter() - began})  # fmt: skip
        log(f"{label}: done")
    return rows


def _print(rows: list[dict], columns: list[tuple[str, str, str]], out) -> None:
    print("| " + " | ".join(h for h, _, _ in columns) + " |", file=out)
    print("|" + "|".join("---" for _ in columns) + "|", file=out)
    for row in rows:
        print("| " + " | ".join(format(row[k], f) for _, k, f in columns) + " |", file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="hamiltonia bench split", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--target", default="bnn-protein", help="data target of the memory table")
    parser.add_argument("--splits", type=int, nargs="+", default=list(DEFAULT_SPLITS))
    parser.add_argument("--chains", type=int, default=8, help="chains of one batched gradient")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--acceptance-chains", type=int, default=4)
    parser.add_argument("--acceptance-draws", type=int, default=150)
    parser.add_argument("--skip-acceptance", action="store_true")
    args = parser.parse_args(argv)
    import platform

    def log(message):
        print(f"  {message}", file=sys.stderr)

    print(f"machine: {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}")  # fmt: skip
    try:
        rows = memory_table(args.target, args.splits, chains=args.chains,
                            iterations=args.iterations, log=log)  # fmt: skip
    except ValueError as err:
        print(f"hamiltonia bench split: error: {err}", file=sys.stderr)
        return 2
    print(f"\n{args.target}: one subset's gradient for {args.chains} chains (NumPy path), "
          "and seconds per iteration of the symmetric split (10 steps)\n")  # fmt: skip
    _print(rows, [("M", "M", "d"), ("rows/subset", "rows_per_subset", "d"),
                  ("peak MB", "peak_MB", ".2f"), ("peak / M=1", "peak_ratio", ".3f"),
                  ("1/M", "ideal_ratio", ".3f"),
                  ("ms/iter compiled", "ms_per_iter_compiled", ".1f"),
                  ("ms/iter NumPy", "ms_per_iter_numpy", ".1f")], sys.stdout)  # fmt: skip
    if not args.skip_acceptance:
        rows = acceptance_table(chains=args.acceptance_chains, draws=args.acceptance_draws,
                                log=log)  # fmt: skip
        print("\nregression-1d, 4 subsets, eps = 5e-4, L = 30: acceptance at equal step size "
              "(mean and sd over chains)\n")  # fmt: skip
        _print(rows, [("scheme", "scheme", "s"), ("acceptance", "acceptance", ".3f"),
                      ("sd", "sd", ".3f"), ("seconds", "seconds", ".1f")], sys.stdout)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
