"""Runs that scale out: many chains in this process, on a local process pool and on a Dask
``LocalCluster`` (``python -m hamiltonia.bench.scale``, or ``hamiltonia bench scale``).

For each chain count, the same seeded run (the same draws on every executor) is timed in
this process (``executor="threads"``), on a process pool and on a ``LocalCluster`` of
``--workers`` worker processes, the last two with task checkpoints never written
(``checkpoint_seconds=inf``) and after every block of draws (``0``). A row reports the wall
time of :func:`hamiltonia.sample` (median over the rounds), the sampling phase's share, the
overhead per chain against the in-process run, and with checkpoints the number written and
the cost of each (the wall time they added, divided by their number). Starting the pool or
the cluster is timed once, apart; an untimed run first loads the kernels on every worker.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings

import numpy as np

__all__ = ["DEFAULT_CHAINS", "main", "scale_cost", "scale_table"]

#: Chain counts of the issue: 64 and 256 chains.
DEFAULT_CHAINS = (64, 256)


def _timed(target, sampler, chains, options, executor, checkpoint_seconds) -> dict:
    import hamiltonia as hm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the runs' diagnostics are not what is measured
        began = time.perf_counter()
        result = hm.sample(target, sampler, chains=chains, executor=executor,
                           checkpoint_seconds=checkpoint_seconds, **options)  # fmt: skip
        wall = time.perf_counter() - began
    return {
        "wall_s": wall,
        "sampling_s": result.sampling_seconds,
        "checkpoints": int(result.attrs.get("task_checkpoints", 0)),
        "draws": result.draws,
    }


def scale_cost(chain_counts=DEFAULT_CHAINS, *, target: str = "banana", sampler: str = "nuts",
               warmup: int = 200, draws: int = 1000, workers: int = 2, rounds: int = 1,
               seed: int = 0, log=lambda message: None) -> tuple[list[dict], dict]:  # fmt: skip
    """Time ``hamiltonia.sample`` per executor and chain count (see the module).

    Returns the rows (``chains``, ``executor``, ``checkpoints_every``, ``wall_s``,
    ``sampling_s``, ``per_chain_ms`` (overhead per chain against the in-process run),
    ``checkpoints``, ``per_checkpoint_ms``, ``same_draws``) and the start-up seconds of the
    pool and of the cluster.
    """
    from distributed import Client, LocalCluster

    from hamiltonia.runner.executors import DaskExecutor, ProcessPool

    if rounds < 1 or draws < 1 or warmup < 0 or workers < 1:
        raise ValueError("rounds, draws and workers must be >= 1 and warmup >= 0")
    options = dict(warmup=warmup, draws=draws, seed=seed, progress=False)
    startup = {}
    began = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0")  # fmt: skip
    client = Client(cluster)
    startup["dask LocalCluster"] = time.perf_counter() - began
    rows = []
    executors = {
        "threads": None,
        "processes": ProcessPool(workers),
        "dask": DaskExecutor(client=client),
    }
    try:
        log("loading the kernels everywhere (untimed)")
        for name, executor in executors.items():
            began = time.perf_counter()
            _timed(target, sampler, 2 * workers, {**options, "warmup": 20, "draws": 20},
                   executor, math.inf)  # fmt: skip
            if name != "threads":
                startup[f"{name}: first run (loads the kernels)"] = time.perf_counter() - began
        for chains in chain_counts:
            configs = [("threads", math.inf)] + [
                (name, every) for name in ("processes", "dask") for every in (math.inf, 0.0)
            ]
            timed = {c: [] for c in configs}
            for r in range(rounds):
                for config in configs if r % 2 == 0 else configs[::-1]:
                    log(f"{chains} chains, {config[0]}, checkpoints every {config[1]} s")
                    timed[config].append(
                        _timed(target, sampler, chains, options, executors[config[0]], config[1])
                    )
            reference = timed[("threads", math.inf)]
            ref_wall = float(np.median([t["wall_s"] for t in reference]))
            walls = {}
            for config, runs in timed.items():
                wall = float(np.median([t["wall_s"] for t in runs]))
                walls[config] = wall
                row = {
                    "chains": chains,
                    "executor": config[0],
                    "checkpoints_every": config[1],
                    "wall_s": wall,
                    "sampling_s": float(np.median([t["sampling_s"] for t in runs])),
                    "per_chain_ms": 1e3 * (wall - ref_wall) / chains,
                    "checkpoints": int(np.median([t["checkpoints"] for t in runs])),
                    "per_checkpoint_ms": None,
                    "same_draws": all(
                        np.array_equal(t["draws"], reference[0]["draws"]) for t in runs
                    ),
                }
                if config[1] == 0.0 and row["checkpoints"]:
                    extra = wall - walls[(config[0], math.inf)]
                    row["per_checkpoint_ms"] = 1e3 * extra / row["checkpoints"]
                rows.append(row)
    finally:
        executors["processes"].close()
        client.close()
        cluster.close()
    return rows, startup


def _every(seconds: float) -> str:
    return "never" if math.isinf(seconds) else "every block" if seconds == 0 else f"{seconds} s"


def scale_table(rows: list[dict]) -> list[str]:
    """Markdown lines of the rows."""
    lines = [
        "| chains | executor | task checkpoints | wall s | sampling s | overhead / chain ms "
        "| checkpoints | cost / checkpoint ms | same draws |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        per_ckpt = "–" if r["per_checkpoint_ms"] is None else f"{r['per_checkpoint_ms']:.2f}"
        every = "–" if r["executor"] == "threads" else _every(r["checkpoints_every"])
        lines.append(
            f"| {r['chains']} | {r['executor']} | {every} | {r['wall_s']:.2f} "
            f"| {r['sampling_s']:.2f} | {r['per_chain_ms']:.1f} | {r['checkpoints']} "
            f"| {per_ckpt} | {'yes' if r['same_draws'] else 'NO'} |"
        )
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="hamiltonia bench scale",
        description="Many chains in this process, on a process pool and on a Dask "
        "LocalCluster: wall time, overhead per chain and per checkpoint.",
    )
    parser.add_argument("--chains", type=int, nargs="+", default=list(DEFAULT_CHAINS))
    parser.add_argument("--target", default="banana")
    parser.add_argument("--sampler", default="nuts")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        rows, startup = scale_cost(
            args.chains, target=args.target, sampler=args.sampler, warmup=args.warmup,
            draws=args.draws, workers=args.workers, rounds=args.rounds,
            log=lambda m: print(f"[scale] {m}", file=sys.stderr, flush=True),
        )  # fmt: skip
    except (ValueError, ImportError) as err:
        print(f"hamiltonia bench scale: {err}", file=sys.stderr)
        return 2
    print(f"# {args.sampler} on {args.target}: {args.warmup} warm-up + {args.draws} draws per "
          f"chain, {args.workers} workers, median of {args.rounds} round(s)\n")  # fmt: skip
    print("\n".join(scale_table(rows)))
    print("\nstart-up: " + ", ".join(f"{k} {v:.2f} s" for k, v in startup.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
