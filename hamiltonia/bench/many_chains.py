"""Many chains on the CPU: sampling throughput and the work after sampling as the number of
chains grows at an equal number of draws in all (``python -m hamiltonia.bench many-chains``,
or ``python -m hamiltonia.bench.many_chains``).

For each chain count (4, 16, 64, 256, 1,024 and 4,096 by default; ``--chains``), one
:func:`hamiltonia.sample` call of gaussian-d100 with static HMC (step size 0.08, 15
leapfrog steps, no jitter, the identity metric, on the compiled path) draws
``--total-draws`` draws in all (81,920 by default: 4 chains of 20,480 draws ... 1,024 of
80 ... 4,096 of 20), after ``--warmup`` warm-up iterations (default 0, so that the whole
call is the sampling and the work around it). A row reports:

``sampling s``
    The sampling phase (``result.sampling_seconds``).
``whole call s``, ``post-run s``
    The wall time of the call, and what it spent outside warm-up and sampling (the set-up
    before, and after the last draw the checks of the run, its rank diagnostics above all:
    ``rank s``, timed where :func:`hamiltonia.sample` calls them).
``post-run / sampling``, ``whole / sampling``
    The post-run share, and the whole call (less warm-up) over the sampling.
``gradients/s``
    Gradient evaluations of the sampling phase (all chains) a second, and their ratio to
    the fewest chains' (a flat throughput keeps it near 1).
``hamiltonia s``, ``arviz-stats s``
    Rank-normalised split :math:`\\hat R` and bulk and tail ESS of every parameter of the
    same draws, exact, by :func:`hamiltonia.diagnostics.univariate.convergence` and by
    ``arviz_stats`` (its array functions, each on all the parameters at once), the ratio of
    the two, and the largest relative difference between their values.

Before the rows, the first row's run is made once untimed (it loads the sampling kernels)
and the diagnostics' kernels are loaded (or compiled) once: the figures are those of a
process that has sampled before (the table ends with the seconds the kernels took to
load). ``--output FILE`` writes the table
too, atomically: a reStructuredText ``list-table`` for a ``.rst`` file, else markdown.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

__all__ = ["DEFAULT_CHAINS", "TOTAL_DRAWS", "main", "measure", "render", "render_rst"]

#: The chain counts of the issue (51): 4 to 4,096.
DEFAULT_CHAINS = (4, 16, 64, 256, 1024, 4096)
#: Draws in all, whatever the chain count: 1,024 chains of 80 draws, the issue's run.
TOTAL_DRAWS = 81_920

#: The table's columns: header, and the key and format of each cell.
COLUMNS = (
    ("chains", "chains", "{:,}"),
    ("draws / chain", "draws", "{:,}"),
    ("sampling s", "sampling_s", "{:.3f}"),
    ("whole call s", "whole_s", "{:.3f}"),
    ("post-run s", "post_s", "{:.3f}"),
    ("rank s", "rank_s", "{:.3f}"),
    ("post-run / sampling", "post_share", "{:.0%}"),
    ("whole / sampling", "whole_ratio", "{:.2f}"),
    ("gradients/s", "gradients_per_s", "{:,.0f}"),
    ("gradients/s vs fewest chains", "throughput", "{:.2f}"),
    ("hamiltonia s", "ours_s", "{:.3f}"),
    ("arviz-stats s", "arviz_s", "{:.3f}"),
    ("arviz-stats / hamiltonia", "speedup", "{:.1f}"),
    ("largest relative difference", "difference", "{:.1e}"),
)


def _sample(target: str, chains: int, draws: int, warmup: int, options: dict, seed: int):
    import hamiltonia as hm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the runs' own warnings are not what is measured
        return hm.sample(target, "hmc", chains=chains, warmup=warmup, draws=draws,
                         seed=seed, progress=False, compiled=True, **options)  # fmt: skip


def _arviz(draws: np.ndarray, prob: float) -> tuple:
    """Seconds of arviz-stats' :math:`\\hat R`, bulk and tail ESS of ``draws`` ``(chains,
    draws, dim)``, each one call on all the parameters, and the values."""
    from arviz_stats.base import array_stats

    y = np.moveaxis(draws, -1, 0)
    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = {
            "r_hat": array_stats.rhat(y, method="rank"),
            "ess_bulk": array_stats.ess(y, method="bulk"),
            "ess_tail": array_stats.ess(y, method="tail", prob=prob),
        }
    return time.perf_counter() - began, values


def _difference(ours: dict, theirs: dict) -> float:
    """The largest relative difference between two tables' values (nan where both are)."""
    worst = 0.0
    for name, want in theirs.items():
        got, want = np.asarray(ours[name], dtype=float), np.asarray(want, dtype=float)
        both = np.isnan(got) & np.isnan(want)
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.where(both, 0.0, np.abs(got - want) / np.abs(want))
        worst = max(worst, float(np.max(np.where(got == want, 0.0, gap))))
    return worst


def measure(chains: int, *, total_draws: int = TOTAL_DRAWS, target: str = "gaussian-d100",
            warmup: int = 0, step_size: float = 0.08, n_steps: int = 15, seed: int = 0,
            arviz: bool = True) -> dict:  # fmt: skip
    """Time one run of ``chains`` chains of ``total_draws // chains`` draws and the
    diagnostics of its draws (module docstring): a row of the table, by the keys of
    :data:`COLUMNS` (``throughput`` is filled by :func:`measure_all`)."""
    from hamiltonia.bench.postrun import _Clock, _timing
    from hamiltonia.diagnostics.univariate import _ci_prob, convergence

    if chains < 1 or total_draws < chains or n_steps < 1 or warmup < 0:
        raise ValueError("chains and n_steps must be >= 1, total_draws >= chains, warmup >= 0")
    draws = total_draws // chains
    options = {"step_size": step_size, "n_steps": n_steps, "n_steps_jitter": 0.0}
    clock = _Clock()
    with _timing(clock):
        began = time.perf_counter()
        result = _sample(target, chains, draws, warmup, options, seed)
        whole = time.perf_counter() - began - result.warmup_seconds
    sampling = result.sampling_seconds
    began = time.perf_counter()
    ours = convergence(result.draws)
    ours_s = time.perf_counter() - began
    row = {
        "chains": chains,
        "draws": draws,
        "sampling_s": sampling,
        "whole_s": whole,
        "post_s": whole - sampling,
        "rank_s": clock.seconds.get("rank", 0.0),
        "post_share": (whole - sampling) / sampling,
        "whole_ratio": whole / sampling,
        "gradients_per_s": float(np.sum(result.stats["n_grad"])) / sampling,
        "throughput": None,
        "ours_s": ours_s,
        "arviz_s": None,
        "speedup": None,
        "difference": None,
    }
    if arviz:
        row["arviz_s"], theirs = _arviz(result.draws, _ci_prob())
        row["speedup"] = row["arviz_s"] / ours_s
        row["difference"] = _difference(ours, theirs)
    return row


def measure_all(chain_counts=DEFAULT_CHAINS, *, log=lambda message: None, **options) -> tuple:
    """:func:`measure` of each chain count (``options`` as it takes them, but ``chains``),
    after an untimed run of the first and a load of the diagnostics' kernels. Returns the
    rows and what the table's caption states (``settings``, the seconds the kernels took to
    load, the machine and its load)."""
    from hamiltonia.bench.machine import machine_info
    from hamiltonia.bench.postrun import _load_diagnostic_kernels

    total = options.get("total_draws", TOTAL_DRAWS)
    if not chain_counts or min(chain_counts) < 1 or total < max(chain_counts):
        raise ValueError("chains must be >= 1 and total_draws >= chains")
    settings = {k: v for k, v in options.items() if k != "arviz"}
    # The first row's run, untimed: the sampling kernels and BLAS loaded, as a process
    # that has sampled before has them.
    measure(min(chain_counts), **{**options, "arviz": False})
    load_s = _load_diagnostic_kernels()
    load = [os.getloadavg()[0]] if hasattr(os, "getloadavg") else []
    rows = []
    for chains in chain_counts:
        log(f"{chains} chains")
        rows.append(measure(chains, **options))
    base = rows[0]["gradients_per_s"]
    for row in rows:
        row["throughput"] = row["gradients_per_s"] / base
    if hasattr(os, "getloadavg"):
        load.append(os.getloadavg()[0])
    meta = {"settings": settings, "kernel_load_s": load_s, "machine": machine_info(),
            "load": load}  # fmt: skip
    return rows, meta


def _cells(row: dict) -> list[str]:
    return ["–" if row[key] is None else form.format(row[key]) for _, key, form in COLUMNS]


def _caption(meta: dict) -> list[str]:
    s, m = meta["settings"], meta["machine"]
    load = " / ".join(f"{v:.2f}" for v in meta["load"]) or "unknown"
    return [
        f"{s.get('target', 'gaussian-d100')}, static HMC (step size {s.get('step_size', 0.08):g}, "
        f"{s.get('n_steps', 15)} steps), compiled, {s.get('total_draws', TOTAL_DRAWS):,} draws "
        f"in all, warm-up {s.get('warmup', 0)}, seed {s.get('seed', 0)}; one run a row",
        f"machine: {m['cpu']}, {m['cores']} cores; {m['date']}; 1-minute load average at "
        f"start / end: {load}",
    ]


def render(rows: list[dict], meta: dict) -> str:
    """The rows as a markdown table, with its caption and the kernels' load time."""
    lines = [*_caption(meta), ""]
    lines.append("| " + " | ".join(header for header, _, _ in COLUMNS) + " |")
    lines.append("|" + "---:|" * len(COLUMNS))
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in rows]
    lines += ["", f"(before the rows, once per process: the diagnostics' kernels loaded or "
                  f"compiled in {meta['kernel_load_s']:.2f} s)"]  # fmt: skip
    return "\n".join(lines)


def render_rst(rows: list[dict], meta: dict) -> str:
    """The rows as a reStructuredText ``list-table``, its caption a paragraph before it."""
    lines = ["; ".join(_caption(meta)) + ".", "", ".. list-table::", "   :header-rows: 1", ""]
    for cells in [[header for header, _, _ in COLUMNS], *map(_cells, rows)]:
        lines.append(f"   * - {cells[0]}")
        lines.extend(f"     - {cell}" for cell in cells[1:])
    lines += ["", f"The diagnostics' kernels were loaded (or compiled) once before the rows, "
                  f"in {meta['kernel_load_s']:.2f} s."]  # fmt: skip
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hamiltonia.bench many-chains", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--chains", type=int, nargs="+", default=list(DEFAULT_CHAINS))
    parser.add_argument("--total-draws", type=int, default=TOTAL_DRAWS,
                        help="draws in all, split over the chains")  # fmt: skip
    parser.add_argument("--target", default="gaussian-d100")
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--step-size", type=float, default=0.08)
    parser.add_argument("--n-steps", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-arviz", action="store_true", help="skip arviz-stats")
    parser.add_argument("--output", "-o", help="also write the table here (.rst: a list-table)")
    args = parser.parse_args(argv)
    if args.output:
        from hamiltonia.results.runfile import RunFileError, checked_file_path

        try:  # before the runs: never a folder, a device or a pipe
            checked_file_path(args.output, "--output")
        except RunFileError as err:
            parser.error(str(err))
    try:
        rows, meta = measure_all(
            sorted(set(args.chains)), total_draws=args.total_draws, target=args.target,
            warmup=args.warmup, step_size=args.step_size, n_steps=args.n_steps,
            seed=args.seed, arviz=not args.no_arviz,
            log=lambda m: print(f"[many-chains] {m}", file=sys.stderr, flush=True),
        )  # fmt: skip
    except ValueError as err:
        print(f"hamiltonia bench many-chains: error: {err}", file=sys.stderr)
        return 2
    text = render(rows, meta)
    print(text)
    if args.output:
        from hamiltonia.bench.core import _write_report

        rst = args.output.endswith(".rst")
        _write_report(args.output, (render_rst(rows, meta) if rst else text) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
