"""The reference posteriors against NumPyro (``python -m hamiltonia.bench posteriors``).

For each posterior of :mod:`hamiltonia.posteriors` (ten posteriordb models), hamiltonia's
default :func:`hamiltonia.sample` (NUTS, diagonal metric, the model's default backend) and
NumPyro's NUTS (diagonal metric, target acceptance 0.8, ``chain_method="sequential"``) on
the same model, written with ``numpyro.sample`` sites
(:mod:`hamiltonia.bench.peers.numpyro_posteriors`), with the same chains, warm-up and draws.
Each implementation of each posterior runs in a fresh process (so that one's JAX or numba
state does not leak into the other's), killed after ``--timeout`` seconds.

Per run:

* **s**: the wall time of a whole run (warm-up and draws), compilation excluded. hamiltonia
  first makes a short run of the same model (``min(100, warmup)`` + ``min(100, draws)``
  iterations: it compiles the model and the chain kernel, or loads them from numba's cache)
  and times a second, full one; on the autograd backend (the NumPy path, nothing to
  compile) the first run is the timed one. NumPyro re-traces its loop at each ``run``: its
  full run is made twice with the same key, the second with a persistent XLA cache that the
  first filled, and the JAX compile events inside the second (tracing, lowering, cache
  loads) are subtracted from its wall time, as :mod:`hamiltonia.bench.peers.numpyro_runner`
  does.
* **min bulk ESS**: the smallest rank-normalised bulk ESS over every reported quantity
  (parameters on the constrained scale, then generated quantities such as the HMMs' ordered
  rates), by hamiltonia's estimator (:func:`hamiltonia.diagnostics.univariate.ess`, as
  ``result.summary()``) on both runs' draws; **ESS/s** that over **s**.
* **max |z|**: the largest MCSE z-score of the run's means and sds against posteriordb's
  reference (:func:`hamiltonia.posteriors.compare`); above the bound (Bonferroni's at a
  family-wise rate of 0.01) the run is wrong, whatever its speed.
* the backend the hamiltonia model ran on (``numba``: compiled; ``autograd``: the NumPy
  path after a ``CompileWarning``), the divergences, and the 1-minute load average at the
  start and end of the pair of runs (other processes compete for the cores above 1 on a
  2-core machine).

The **ratio** is hamiltonia's ESS/s over NumPyro's; the footer gives the geometric mean of
the ratios. Needs the ``bench`` extra (NumPyro, JAX) for NumPyro's columns; without it, or
with ``--no-numpyro``, only hamiltonia's run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np

__all__ = ["HEADER", "main", "run_hamiltonia", "run_numpyro", "table_row"]

_MARK = "@@posteriors@@"
#: The line a hamiltonia process prints once its model is built: the backend, kept when the
#: run then fails or runs out of time.
_MODEL_MARK = "@@posteriors-model@@"
#: Iterations (warm-up and draws, each) of hamiltonia's run that compiles before the timed one.
_WARM_ITERATIONS = 100
HEADER = [
    "posterior", "hamiltonia backend", "hamiltonia s", "hamiltonia min bulk ESS",
    "hamiltonia ESS/s", "hamiltonia max abs z", "NumPyro s", "NumPyro min bulk ESS",
    "NumPyro ESS/s", "NumPyro max abs z", "ratio", "divergences (h / N)", "load 1m",
]  # fmt: skip


def _load() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def _measure(name: str, names, draws: np.ndarray, seconds: float) -> dict:
    """The smallest bulk ESS of ``draws`` (chains, draws, quantities), its rate over
    ``seconds``, and the run's largest z-score against the reference."""
    from types import SimpleNamespace

    from hamiltonia.diagnostics.univariate import ess
    from hamiltonia.posteriors import compare

    low = float(np.min(ess(draws, "bulk")))
    check = compare(name, SimpleNamespace(names=tuple(names), draws=draws, log_weights=None))
    return {"seconds": seconds, "min_ess": low, "ess_per_s": low / seconds,
            "max_abs_z": check.max_abs_z, "bound": check.bound}  # fmt: skip


def run_hamiltonia(
    name: str,
    *,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed: int = 0,
    on_model: Callable[[dict], None] | None = None,
) -> dict:
    """hamiltonia's default NUTS on posterior ``name`` in this process (module docs): the
    record of the timed run, with the backend of the model and numba's reason where it fell
    back to autograd (also given to ``on_model`` as soon as the model is built)."""
    import hamiltonia.posteriors as posteriors
    from hamiltonia.runner.run import sample
    from hamiltonia.targets.logp_warnings import CompileWarning

    load = _load()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CompileWarning)
        model = posteriors.get(name)
    reasons = [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]
    built = {"backend": model.backend, "compile_warning": reasons[0] if reasons else None}
    if on_model is not None:
        on_model(built)
    options = {"chains": chains, "seed": seed, "progress": False,
               **posteriors.sample_options(name)}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a run's diagnostics are the table's business
        if model.backend != "autograd":  # the NumPy path has nothing to compile
            sample(model, warmup=min(warmup, _WARM_ITERATIONS),
                   draws=min(draws, _WARM_ITERATIONS), **options)  # fmt: skip
        began = time.perf_counter()
        result = sample(model, warmup=warmup, draws=draws, **options)
        seconds = time.perf_counter() - began
    record = _measure(name, result.names, np.asarray(result.draws), seconds)
    record.update(implementation="hamiltonia", posterior=name, divergences=result.n_divergent,
                  load=[load, _load()], **built)  # fmt: skip
    return record


def run_numpyro(name: str, *, chains: int = 4, warmup: int = 1000, draws: int = 1000,
                seed: int = 0) -> dict:  # fmt: skip
    """NumPyro's NUTS on posterior ``name`` in this process (module docs)."""
    from hamiltonia.bench.peers._jax import compile_events, setup_jax
    from hamiltonia.bench.peers.numpyro_posteriors import build, reported_draws

    load = _load()
    jax = setup_jax()
    from numpyro.infer import MCMC, NUTS

    model = build(name)

    def one_pass():
        kernel = NUTS(model, target_accept_prob=0.8, max_tree_depth=10, dense_mass=False)
        mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains,
                    chain_method="sequential", progress_bar=False)  # fmt: skip
        with compile_events() as events:
            began = time.perf_counter()
            mcmc.run(jax.random.PRNGKey(seed), extra_fields=("diverging",))
            samples = mcmc.get_samples(group_by_chain=True)
            jax.block_until_ready(samples)
            wall = time.perf_counter() - began
        return mcmc, samples, wall, events["seconds"]

    one_pass()
    mcmc, samples, wall, compiling = one_pass()
    names, values = reported_draws(name, samples)
    record = _measure(name, names, values, max(wall - compiling, 1e-9))
    diverging = mcmc.get_extra_fields(group_by_chain=True)["diverging"]
    record.update(implementation="numpyro", posterior=name, wall_s=wall,
                  compile_events_s=compiling, divergences=int(np.sum(np.asarray(diverging))),
                  load=[load, _load()])  # fmt: skip
    return record


def _marked(output: str | bytes | None, mark: str) -> dict | None:
    """The record a process printed after ``mark``, if it did."""
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    lines = [ln for ln in (output or "").splitlines() if ln.startswith(mark)]
    return json.loads(lines[0][len(mark) :]) if lines else None


def _in_fresh_process(name: str, implementation: str, args, seed: int) -> dict:
    """One implementation on one posterior with ``seed`` in a fresh process; a record with
    ``error``
    (what the process said last, or that it ran past ``args.timeout`` seconds, with the
    model's backend where the process got to build it) if it fails."""
    from hamiltonia.bench.models import _last_line

    command = [sys.executable, "-m", "hamiltonia.bench.posteriors", "--one", name,
               implementation, "--chains", str(args.chains), "--warmup", str(args.warmup),
               "--draws", str(args.draws), "--seed", str(seed)]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired as out:
        built = _marked(out.stdout, _MODEL_MARK) or {}
        return {"error": f"over {args.timeout:g} s", "timeout": True, **built}
    record = _marked(done.stdout, _MARK)
    if record is None:
        return {"error": _last_line(done), **(_marked(done.stdout, _MODEL_MARK) or {})}
    return record


def _number(value: float) -> str:
    """Three significant figures, thousands separated (as the other benchmarks print)."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _z(record: dict) -> str:
    z, bound = record["max_abs_z"], record["bound"]
    return f"{z:.2f}" if z <= bound else f"{z:.2f} > {bound:.2f}"


def _load_cell(*records: dict) -> str:
    values = [v for r in records for v in r.get("load") or () if v is not None]
    return f"{min(values):.1f}-{max(values):.1f}" if values else "–"


def table_row(name: str, ours: dict, theirs: dict | None) -> tuple[list[str], float | None]:
    """The table's row of posterior ``name`` from hamiltonia's record ``ours`` and NumPyro's
    ``theirs`` (``None``: not run; either may hold an ``error``), and the ratio of their
    ESS/s (``None`` unless both ran)."""
    cells = [name, ours.get("backend", "–")]
    for record in (ours, theirs):
        if record is None:
            cells += ["–"] * 4
        elif "error" in record:
            cells += [f"failed: {record['error']}", "–", "–", "–"]
        else:
            cells += [f"{record['seconds']:.2f}", _number(record["min_ess"]),
                      _number(record["ess_per_s"]), _z(record)]  # fmt: skip
    ratio = None
    both = theirs is not None and "error" not in ours and "error" not in theirs
    if both:
        ratio = ours["ess_per_s"] / theirs["ess_per_s"]
    divergences = [str(r["divergences"]) if r and "divergences" in r else "–"
                   for r in (ours, theirs)]  # fmt: skip
    cells += ["–" if ratio is None else f"{ratio:.2f}", " / ".join(divergences),
              _load_cell(*(r for r in (ours, theirs) if r))]  # fmt: skip
    return cells, ratio


def _geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def footer(ratios: dict, records: dict) -> list[str]:
    """The lines under the table: the geometric mean of the ratios and the backends.
    ``ratios`` by posterior holds a ratio, or by seed a dict of them (``--seed`` given
    several): a posterior's ratio is then the geometric mean over its seeds, and the lines
    also say on how many posteriors hamiltonia was at least NumPyro's at every seed."""
    lines = []
    by_seed = any(isinstance(r, dict) for r in ratios.values())
    seeds = {name: (r if isinstance(r, dict) else {None: r}) for name, r in ratios.items()}
    means, everywhere = {}, 0
    for name, per_seed in seeds.items():
        valid = [r for r in per_seed.values() if r is not None and r > 0 and math.isfinite(r)]
        if valid:
            means[name] = _geometric_mean(valid)
            everywhere += len(valid) == len(per_seed) and min(valid) >= 1.0
    if means:
        geo = _geometric_mean(list(means.values()))
        at_least = sum(r >= 1.0 for r in means.values())
        over = " (each posterior's own over its seeds)" if by_seed else ""
        lines.append(f"Geometric mean of the ratios (hamiltonia ESS/s / NumPyro ESS/s){over} "
                     f"over {len(means)} posteriors: {geo:.2f}; hamiltonia at least NumPyro's "
                     f"on {at_least} of {len(means)}.")  # fmt: skip
        if by_seed:
            lines.append("By posterior, the geometric mean over the seeds: " + "; ".join(
                f"{name} {mean:.2f}" for name, mean in means.items()) + f". hamiltonia at "
                f"least NumPyro's at every seed on {everywhere} of {len(seeds)}.")  # fmt: skip
    ran = [r for r in records.values() if "backend" in r]
    compiled = [r["posterior"] for r in ran if r["backend"] == "numba"]
    fallback = [r["posterior"] for r in ran if r["backend"] != "numba"]
    lines.append(f"hamiltonia compiled (numba) on {len(compiled)} of {len(ran)} posteriors"
                 + (f"; autograd on {', '.join(fallback)}." if fallback else "."))  # fmt: skip
    return lines


def _markdown(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _rst(header: list[str], rows: list[list[str]], notes: list[str]) -> str:
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {row[0]}")
        lines.extend(f"     - {cell}" for cell in row[1:])
    return "\n".join([*lines, "", *(f"{note}\n" for note in notes)])


def main(argv=None) -> int:
    """Run the posteriors, print the markdown table (a row as each posterior ends) and the
    footer; ``--output`` also writes them (``.rst``: a list-table; else markdown)."""
    from hamiltonia.posteriors import names

    parser = argparse.ArgumentParser(prog="python -m hamiltonia.bench posteriors",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("--models", nargs="+", choices=names(), default=names(),
                        metavar="NAME", help="posteriors to run (default all ten)")  # fmt: skip
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, nargs="+", default=[0],
                        help="seeds (several: a row for each, and each posterior's ratio "
                        "the geometric mean over them)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds one implementation may take on one posterior, its "
                        "compiling run included (default 300)")  # fmt: skip
    parser.add_argument("--no-numpyro", action="store_true", help="hamiltonia's runs only")
    parser.add_argument("--output", "-o", help="also write the table (.rst or markdown)")
    parser.add_argument("--one", nargs=2, metavar=("NAME", "IMPLEMENTATION"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args(argv)
    size = {"chains": args.chains, "warmup": args.warmup, "draws": args.draws,
            "seed": args.seed[0]}  # fmt: skip
    if args.one:
        name, implementation = args.one
        if implementation == "numpyro":
            record = run_numpyro(name, **size)
        else:
            record = run_hamiltonia(name, **size, on_model=lambda built: print(
                _MODEL_MARK + json.dumps(built), flush=True))  # fmt: skip
        print(_MARK + json.dumps(record), flush=True)
        return 0
    if args.output:
        from hamiltonia.results.runfile import RunFileError, checked_file_path

        try:  # before the runs: never a folder, a device or a pipe
            checked_file_path(args.output, "--output")
        except RunFileError as err:
            parser.error(str(err))
    from hamiltonia.bench.machine import machine_info
    from hamiltonia.bench.peers import detect_peers

    with_numpyro = not args.no_numpyro and detect_peers()["numpyro"]["available"]
    info = machine_info()
    print(f"# reference posteriors against NumPyro\n\n* {info['date']}; {info['cpu']}, "
          f"{info['cores']} cores; {args.chains} chains, {args.warmup} warm-up, {args.draws} "
          f"draws, seed {', '.join(map(str, args.seed))}; NumPyro "
          f"{info['numpyro'] if with_numpyro else 'not run'}\n")  # fmt: skip
    for line in _markdown(HEADER, []):
        print(line, flush=True)
    rows, ratios, records = [], {}, {}
    several = len(args.seed) > 1
    for name in args.models:
        for seed in args.seed:
            ours = _in_fresh_process(name, "hamiltonia", args, seed)
            theirs = _in_fresh_process(name, "numpyro", args, seed) if with_numpyro else None
            records[name] = {**ours, "posterior": name}
            label = f"{name} (seed {seed})" if several else name
            row, ratio = table_row(label, ours, theirs)
            if several:
                ratios.setdefault(name, {})[seed] = ratio
            else:
                ratios[name] = ratio
            rows.append(row)
            print(_markdown(HEADER, [row])[-1], flush=True)
    notes = footer(ratios, records)
    print("\n" + "\n".join(notes))
    if args.output:
        from hamiltonia.bench.core import _write_report

        text = (_rst(HEADER, rows, notes) if args.output.endswith(".rst")
                else "\n".join([*_markdown(HEADER, rows), "", *notes]) + "\n")  # fmt: skip
        _write_report(args.output, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
