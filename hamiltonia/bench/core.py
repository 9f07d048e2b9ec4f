"""The benchmark driver: the run matrix, the micro-benchmarks, and the command line
(``python -m hamiltonia.bench``, ``hamiltonia bench``). The report's tables and pages are
:mod:`hamiltonia.bench.report`'s, the machine's description
:mod:`hamiltonia.bench.machine`'s."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from hamiltonia.bench.machine import machine_info
from hamiltonia.bench.peers import PEERS, detect_peers
from hamiltonia.bench.report import RST_INTRO as RST_INTRO  # tests/test_docs.py reads it here
from hamiltonia.bench.report import _main_table as _main_table  # tests/test_docs.py too
from hamiltonia.bench.report import compare, render_markdown, render_rst

__all__ = ["DEFAULT_TARGETS", "N_STEPS", "machine_info", "main", "render_markdown", "render_rst"]

#: The matrix's targets, with the fixed number of leapfrog steps of Mongwe 2022, Table 3.8.
N_STEPS = {
    "banana": 15,
    "gaussian-d10": 15,
    "gaussian-d100": 15,
    "funnel-d25": 50,
    "blr-german": 50,
}
DEFAULT_TARGETS = ("banana", "gaussian-d100", "funnel-d25", "blr-german")
#: Variants run per library (NumPyro's chain methods; one each for the others).
PEER_VARIANTS = {
    "numpyro": ("vectorized", "sequential"),
    "blackjax": ("vmap+scan",),
    "mici": ("sequential",),
}
HAMILTONIA_METRICS = ("identity", "diagonal")
# The samplers of the run matrix: fixed-length HMC (the research protocol) and NUTS (the default).
MATRIX_SAMPLERS = ("hmc", "nuts")
CHAIN_COUNTS = (1, 4, 16, 64)


def _log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _parse_list(values, default):
    if not values:
        return list(default)
    out = []
    for value in values:
        out += [v.strip() for v in value.split(",") if v.strip()]
    return out


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hamiltonia bench",
        description="Benchmark hamiltonia against NumPyro, BlackJAX and mici (those installed). "
        + "; ".join(f"'hamiltonia bench {name} -h': {what}" for name, what in SUBCOMMANDS.items())
        + ".",
    )
    parser.add_argument("--quick", action="store_true", help="few draws: a smoke test")
    parser.add_argument(
        "--targets",
        nargs="+",
        metavar="NAME",
        help=f"targets, space or comma separated (default {','.join(DEFAULT_TARGETS)})",
    )
    parser.add_argument(
        "--peers",
        nargs="+",
        metavar="NAME",
        help="peers among numpyro, blackjax, mici, or 'none' (default: all installed)",
    )
    parser.add_argument(
        "--output", "-o", help="also write the report here (.rst: a Sphinx page; else markdown)"
    )
    parser.add_argument(
        "--samplers",
        nargs="+",
        metavar="NAME",
        help="hamiltonia's samplers in the run matrix, among hmc and nuts (default both)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=None, help="default 1000 (200 --quick)")
    parser.add_argument("--draws", type=int, default=None, help="default 1000 (200 --quick)")
    parser.add_argument("--skip-micro", action="store_true", help="only the run matrix")
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        help="instead of the peers: time compiled HMC per gradient with this checkout and with "
        "the one in DIR (e.g. a git worktree of an older commit), side by side, and print "
        "the ratios",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (--baseline)")
    return parser


def _peer_states(requested: list[str]) -> tuple[list[str], dict[str, str]]:
    found = detect_peers()
    run, states = [], {}
    for peer in PEERS:
        f = found[peer]
        if not f["available"]:
            states[peer] = f"not installed (missing: {', '.join(f['missing'])}), skipped"
        elif peer not in requested:
            states[peer] = "installed, not requested"
        else:
            states[peer] = "installed, run"
            run.append(peer)
    return run, states


def _matrix_specs(targets, peers, settings, samplers) -> list[dict]:
    specs = []
    for target in targets:
        for sampler in samplers:
            base = {
                "target": target,
                "sampler": sampler,
                "n_steps": N_STEPS.get(target, 15),
                "chains": settings["chains"],
                "warmup": settings["warmup"],
                "draws": settings["draws"],
                "seed": settings["seed"],
                "target_accept": 0.8,
            }
            for metric in HAMILTONIA_METRICS:
                specs.append({**base, "library": "hamiltonia", "variant": metric})
            if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
                # The compiled path runs chains on threads, one per core; the peers' runs
                # are mostly single-threaded, so hamiltonia also runs pinned to one core.
                specs.append({**base, "library": "hamiltonia", "variant": "diagonal", "cpus": 1})
            for peer in peers:
                for variant in PEER_VARIANTS[peer]:
                    specs.append({**base, "library": peer, "variant": variant})
    return specs


def run_benchmark(args) -> dict:
    """Run everything ``args`` asks for and return the report dict."""
    import hamiltonia as hm
    from hamiltonia.bench import micro
    from hamiltonia.bench.runs import run_in_subprocess

    targets = _parse_list(args.targets, DEFAULT_TARGETS)
    known = set(hm.targets.names())
    unknown = [t for t in targets if t not in known]
    if unknown:
        raise ValueError(f"unknown target(s): {', '.join(unknown)}")
    requested = _parse_list(args.peers, PEERS)
    if requested == ["none"]:
        requested = []
    bad = [p for p in requested if p not in PEERS]
    if bad:
        raise ValueError(f"unknown peer(s): {', '.join(bad)} (choose from {', '.join(PEERS)})")
    peers, states = _peer_states(requested)
    quick = args.quick
    settings = {
        "chains": args.chains,
        "warmup": args.warmup if args.warmup is not None else (200 if quick else 1000),
        "draws": args.draws if args.draws is not None else (200 if quick else 1000),
        "seed": args.seed,
        "quick": quick,
    }
    samplers = _parse_list(args.samplers, MATRIX_SAMPLERS)
    bad = [s for s in samplers if s not in MATRIX_SAMPLERS]
    if bad:
        raise ValueError(
            f"unknown sampler(s) for the run matrix: {', '.join(bad)} "
            f"(choose from {', '.join(MATRIX_SAMPLERS)})"
        )
    report = {
        "machine": machine_info(),
        "settings": settings,
        "peers": states,
        "records": [],
        "load": [os.getloadavg()[0]] if hasattr(os, "getloadavg") else None,
    }
    for spec in _matrix_specs(targets, peers, settings, samplers):
        _log(f"{spec['target']} {spec['sampler']} {spec['library']} {spec['variant']}")
        record = run_in_subprocess(spec)
        if "error" in record:
            _log(f"  failed: {record['error']}")
        report["records"].append(record)
    report["compare"] = compare(report["records"])
    if args.skip_micro:
        _finish_load(report)
        return report

    over_targets = list(targets)
    if "gaussian-d100" in over_targets and "gaussian-d10" not in over_targets:
        over_targets.insert(over_targets.index("gaussian-d100"), "gaussian-d10")
    report["overhead"] = []
    for name in over_targets:
        _log(f"overhead {name}")
        try:
            report["overhead"].append(micro.overhead_row(name, N_STEPS.get(name, 15), quick=quick))
        except Exception as err:  # a row, not a crash
            report["overhead"].append({"target": name, "error": f"{type(err).__name__}: {err}"})

    chains_w, chains_d = (100, 100) if quick else (1000, 1000)
    _log("chains")
    report["chains"] = micro.chains_scaling(
        "gaussian-d100", CHAIN_COUNTS, n_steps=15, warmup=chains_w, draws=chains_d
    )
    report["chains_settings"] = {
        "target": "gaussian-d100",
        "n_steps": 15,
        "warmup": chains_w,
        "draws": chains_d,
        "cores": os.cpu_count(),
    }

    mem_target = "blr-german" if "blr-german" in targets else targets[0]
    mem_draws = 2_000 if quick and mem_target == "blr-german" else 10_000
    _log(f"memory {mem_target}")
    report["memory"] = run_in_subprocess(
        {
            "mode": "memory",
            "target": mem_target,
            "n_steps": N_STEPS.get(mem_target, 15),
            "chains": 4,
            "warmup": settings["warmup"],
            "draws": mem_draws,
            "seed": args.seed,
            "variant": "identity",
        }
    )

    if not quick:
        warm = next(
            (r for r in report["records"] if r.get("library") == "hamiltonia" and "error" not in r),
            None,
        )
        if warm is not None:
            _log(f"cold numba cache {warm['target']}")
            spec = {k: warm[k] for k in ("library", "target", "sampler", "n_steps")}
            spec.update(variant="identity", chains=settings["chains"], warmup=settings["warmup"],
                        draws=settings["draws"], seed=args.seed)  # fmt: skip
            with tempfile.TemporaryDirectory(prefix="hamiltonia-bench-numba-") as cache:
                cold = run_in_subprocess(spec, env={"NUMBA_CACHE_DIR": cache})
                again = run_in_subprocess(spec, env={"NUMBA_CACHE_DIR": cache})
            report["compile"] = [
                ("cold (empty NUMBA_CACHE_DIR)", cold),
                ("warm (same directory, next process)", again),
            ]
    _finish_load(report)
    return report


def _finish_load(report: dict) -> None:
    if report.get("load") and hasattr(os, "getloadavg"):
        report["load"].append(os.getloadavg()[0])


def _baseline_main(args) -> int:
    from hamiltonia.bench.baseline import baseline_table, compare_checkouts

    targets = _parse_list(args.targets, ("banana", "gaussian-d100", "blr-german"))
    try:
        result = compare_checkouts(
            args.baseline, targets, N_STEPS, rounds=args.rounds,
            draws=args.draws or (300 if args.quick else 2000), repeats=2 if args.quick else 3,
            log=_log,
        )  # fmt: skip
    except (ValueError, RuntimeError) as err:
        print(f"hamiltonia bench: error: {err}", file=sys.stderr)
        return 2
    info = machine_info()
    text = "\n".join(
        ["# hamiltonia against a baseline checkout", "",
         f"* date: {info['date']}; machine: {info['cpu']}, {info['cores']} cores", "",
         *baseline_table(result), ""]
    )  # fmt: skip
    print(text)
    if args.output:
        _write_report(args.output, text)
    return 0


#: The benchmarks run as ``hamiltonia bench NAME ...``: the module of each, whose ``main``
#: takes the remaining arguments, and what it measures.
SUBCOMMANDS = {
    "checkpoint": "the cost of checkpoints",
    "family": "the magnetic, quantum-inspired and shadow samplers against HMC",
    "scale": "many chains on a process pool and on Dask",
    "split": "split HMC's integrators, memory and subset gradients",
    "models": "a user's own models against NumPyro: ns per gradient, then whole runs, first "
    "run included",
    "gradients": "ns per gradient of users' models beside hand-written numba and NumPyro",
    "loops": "a loop over the data compiled as a loop: ARMA(1,1), cold build and sampling",
    "posteriors": "the ten reference posteriors against NumPyro, min bulk ESS/s",
    "many-chains": "many chains on the CPU: throughput, the post-run share, diagnostics "
    "against arviz-stats",
    "adaptation": "pooled against per-chain metric adaptation, ESS per gradient",
    "postrun": "the work after sampling (diagnostics, the final write) against sampling",
    "device": "many chains on a GPU (CuPy) beside BlackJAX and the compiled CPU path",
}


def main(argv=None) -> int:
    """``python -m hamiltonia.bench`` / ``hamiltonia bench``: run, print, optionally write.
    ``hamiltonia bench NAME ...`` runs the benchmark ``hamiltonia.bench.NAME`` instead, for
    each ``NAME`` of :data:`SUBCOMMANDS`; ``--device`` anywhere in the arguments is
    ``hamiltonia bench device`` with the others (the spelling issue 33 gives)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--device" in argv:
        argv.remove("--device")
        argv.insert(0, "device")
    if argv[:1] and argv[0] in SUBCOMMANDS:
        import importlib

        module = argv[0].replace("-", "_")  # "many-chains" is hamiltonia.bench.many_chains
        return importlib.import_module(f"hamiltonia.bench.{module}").main(argv[1:])
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.baseline:
        return _baseline_main(args)
    try:
        report = run_benchmark(args)
    except ValueError as err:
        print(f"hamiltonia bench: error: {err}", file=sys.stderr)
        return 2
    text = render_markdown(report)
    print(text)
    if args.output:
        path = args.output
        content = render_rst(report) if path.endswith(".rst") else text + "\n"
        _write_report(path, content)
    return 0


def _write_report(path: str, text: str) -> None:
    """Write a report to ``path`` atomically: never into a folder, a device or a pipe."""
    from hamiltonia.results.runfile import atomic_write_bytes, checked_file_path

    atomic_write_bytes(checked_file_path(path, "--output"), text.encode("utf-8"))
    _log(f"wrote {path}")
