"""The cost of checkpointing: ``hamiltonia.sample(..., output=, checkpoint_seconds=)`` timed
against the same run without an output (``python -m hamiltonia.bench.checkpoint``).

Goal: a 10,000-draw run with ``checkpoint_seconds=0.1`` costs at most 1.5x one without
checkpoints. Every configuration (no output; an output written only at the end,
``checkpoint_seconds=inf``; checkpoints every 1 s, 0.1 s, and after every block of draws,
``0``) runs the same seeded chains in this one process, in an order that rotates from round
to round, so that a burst of load on a shared machine hits every configuration alike. A row
reports the median wall time of ``hamiltonia.sample`` over the rounds (and the best), its
ratio to the median without output, and what the output cost: checkpoints written (calls of
:meth:`RunFile.append <hamiltonia.results.runfile.RunFile.append>`, counted by wrapping it for the
run), blocks of draws among them, seconds spent in them and in writing the final file, and
that file's size. Files go to a temporary folder, removed at the end.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

__all__ = ["DEFAULT_INTERVALS", "DEFAULT_TARGETS", "checkpoint_cost", "checkpoint_table", "main"]

#: A cheap 2-d target, a 100-d one and a logistic regression on 1,000 rows of data.
DEFAULT_TARGETS = ("banana", "gaussian-d100", "blr-german")
#: ``None``: no output; ``inf``: an output written once, at the end; then seconds between
#: checkpoints (``0``: after every block of draws).
DEFAULT_INTERVALS = (None, math.inf, 1.0, 0.1, 0.0)
#: The goal of the issue: checkpoints every GOAL_INTERVAL s cost at most GOAL_RATIO x.
GOAL_INTERVAL, GOAL_RATIO = 0.1, 1.5


def _label(interval) -> str:
    if interval is None:
        return "no output"
    if math.isinf(interval):
        return "final file only"
    if interval == 0:
        return "every block"
    return f"every {interval:g} s"


class _Meter:
    """Counts and times what :class:`~hamiltonia.results.runfile.RunFile` does during one run."""

    def __init__(self):
        self.appends = self.blocks = 0
        self.append_s = self.finish_s = 0.0


@contextmanager
def _metered(meter: _Meter):
    """Wrap ``RunFile.append`` and ``RunFile.finish`` (the class attributes, restored on
    exit) so that ``meter`` counts the checkpoints and times them and the final write."""
    from hamiltonia.results.runfile import RunFile

    append, finish = RunFile.append, RunFile.finish

    def metered_append(self, q, *args, **kwargs):
        began = time.perf_counter()
        new = q.shape[1] > self.written
        try:
            return append(self, q, *args, **kwargs)
        finally:
            meter.append_s += time.perf_counter() - began
            meter.appends += 1
            meter.blocks += int(new)

    def metered_finish(self, *args, **kwargs):
        began = time.perf_counter()
        try:
            return finish(self, *args, **kwargs)
        finally:
            meter.finish_s += time.perf_counter() - began

    RunFile.append, RunFile.finish = metered_append, metered_finish
    try:
        yield meter
    finally:
        RunFile.append, RunFile.finish = append, finish


def _one_run(target, interval, folder: Path, name: str, options: dict) -> dict:
    import hamiltonia as hm

    meter = _Meter()
    output = None if interval is None else folder / f"{name}.nc"
    kwargs = {} if interval is None else {"output": output, "checkpoint_seconds": interval}
    with _metered(meter), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the runs' diagnostics are not what is measured
        began = time.perf_counter()
        result = hm.sample(target, "hmc", **options, **kwargs)
        wall = time.perf_counter() - began
    size = None
    if output is not None:
        size = output.stat().st_size
        output.unlink()
    return {
        "wall_s": wall,
        "sampling_s": result.sampling_seconds,
        "compiled": bool(result.attrs.get("compiled")),
        "checkpoints": meter.appends,
        "blocks": meter.blocks,
        "checkpoint_s": meter.append_s,
        "final_s": meter.finish_s,
        "file_bytes": size,
    }


def checkpoint_cost(
    targets=DEFAULT_TARGETS,
    *,
    draws: int = 10_000,
    chains: int = 4,
    warmup: int = 1000,
    intervals=DEFAULT_INTERVALS,
    rounds: int = 3,
    compiled: bool | None = None,
    seed: int = 0,
    folder=None,
    log=lambda message: None,
) -> list[dict]:
    """Wall time of :func:`hamiltonia.sample` (HMC) per checkpoint interval, side by side.

    ``intervals`` holds ``checkpoint_seconds`` values, ``None`` for a run without output and
    ``math.inf`` for an output written only at the end. For each target, one short untimed
    run with checkpoints loads its kernel and the file writers; then each of ``rounds``
    rounds runs every interval once with the same seed (the same draws), in an order rotated
    by one from round to round and reversed every other round. Files are written to a
    temporary folder (inside ``folder`` if given), removed afterwards.

    Returns one dict per (target, interval): ``target``, ``interval``, ``label``,
    ``compiled``, ``wall_s`` (median over the rounds), ``best_s`` (their minimum),
    ``sampling_s`` (median of ``Result.sampling_seconds``), ``ratio`` (``wall_s`` over the
    ``wall_s`` of the ``None`` interval of the same target; ``None`` without that interval),
    ``ratio_final`` (the same over the ``inf`` interval: the checkpoints' cost alone),
    ``checkpoints`` (calls of ``RunFile.append`` in one run, median), ``blocks`` (those that
    wrote new draws), ``checkpoint_s`` (seconds inside them, median), ``final_s`` (seconds
    writing the final file, median), ``file_bytes`` (the final file's size) and ``rounds``.
    """
    import hamiltonia as hm

    targets = [targets] if isinstance(targets, str) else list(targets)
    intervals = list(intervals)
    if rounds < 1 or draws < 1 or chains < 1 or warmup < 0:
        raise ValueError("rounds, draws and chains must be >= 1 and warmup >= 0")
    if not intervals:
        raise ValueError("intervals must name at least one interval")
    for interval in intervals:
        if interval is not None and not float(interval) >= 0:
            raise ValueError(f"an interval must be None or >= 0 seconds, got {interval!r}")
    options = dict(chains=chains, warmup=warmup, draws=draws, seed=seed, progress=False,
                   compiled=compiled, n_steps_jitter=0.0)  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory(prefix="hamiltonia-ckpt-", dir=folder) as tmp:
        tmp = Path(tmp)
        for name in targets:
            target = hm.targets.get(name)
            log(f"checkpoint: {name}: loading the kernel and the file writers (untimed)")
            _one_run(target, 0.0, tmp, f"{name}-load", {**options, "warmup": min(warmup, 50),
                                                        "draws": 10})  # fmt: skip
            runs = {i: [] for i in range(len(intervals))}
            for r in range(rounds):
                order = list(range(len(intervals)))
                order = order[r % len(order) :] + order[: r % len(order)]
                if r % 2:
                    order.reverse()
                for i in order:
                    log(f"checkpoint: {name}: round {r + 1}/{rounds}, {_label(intervals[i])}")
                    runs[i].append(_one_run(target, intervals[i], tmp, f"{name}-{i}-{r}", options))
            reference = final = None
            for i, interval in enumerate(intervals):
                timed = runs[i]
                row = {
                    "target": name,
                    "interval": interval,
                    "label": _label(interval),
                    "compiled": timed[0]["compiled"],
                    "wall_s": float(np.median([t["wall_s"] for t in timed])),
                    "best_s": min(t["wall_s"] for t in timed),
                    "sampling_s": float(np.median([t["sampling_s"] for t in timed])),
                    "rounds": rounds,
                }
                if interval is not None and math.isinf(interval):
                    final = row["wall_s"]
                if interval is None:
                    reference = row["wall_s"]
                    row.update(checkpoints=0, blocks=0, checkpoint_s=0.0, final_s=0.0,
                               file_bytes=None)  # fmt: skip
                else:
                    for key in ("checkpoints", "blocks"):
                        row[key] = int(np.median([t[key] for t in timed]))
                    for key in ("checkpoint_s", "final_s"):
                        row[key] = float(np.median([t[key] for t in timed]))
                    row["file_bytes"] = timed[-1]["file_bytes"]
                rows.append(row)
            for row in rows[-len(intervals) :]:
                row["ratio"] = None if reference is None else row["wall_s"] / reference
                row["ratio_final"] = None if final is None else row["wall_s"] / final
    return rows


def _fmt_s(value) -> str:
    return f"{value:.3f}" if value is not None else "–"


def checkpoint_table(rows: list[dict]) -> list[str]:
    """Markdown lines for :func:`checkpoint_cost`'s rows, then one line per target on the
    goal (checkpoints every 0.1 s at most 1.5x no output) where both rows were timed."""
    lines = [
        "| target | checkpoints | compiled | wall s (median) | best s | / no output "
        "| / final file only | checkpoints written | blocks | s in checkpoints | s final file "
        "| file MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = "–" if r["ratio"] is None else f"{r['ratio']:.2f}"
        ratio_final = "–" if r["ratio_final"] is None else f"{r['ratio_final']:.2f}"
        size = "–" if r["file_bytes"] is None else f"{r['file_bytes'] / 1e6:.2f}"
        written = "–" if r["interval"] is None else f"{r['checkpoints']:,}"
        blocks = "–" if r["interval"] is None else f"{r['blocks']:,}"
        spent = (None, None) if r["interval"] is None else (r["checkpoint_s"], r["final_s"])
        lines.append(
            f"| {r['target']} | {r['label']} | {'yes' if r['compiled'] else 'no'} "
            f"| {r['wall_s']:.3f} | {r['best_s']:.3f} | {ratio} | {ratio_final} "
            f"| {written} | {blocks} "
            f"| {_fmt_s(spent[0])} | {_fmt_s(spent[1])} | {size} |"
        )
    goal = [r for r in rows if r["interval"] == GOAL_INTERVAL and r["ratio"] is not None]
    if goal:
        lines.append("")
    for r in goal:
        verdict = "met" if r["ratio"] <= GOAL_RATIO else "NOT met"
        lines.append(
            f"* {r['target']}: checkpoint_seconds={GOAL_INTERVAL:g} costs {r['ratio']:.2f}x "
            f"no output (goal <= {GOAL_RATIO:g}x): {verdict}"
            + ("" if r["ratio_final"] is None else f"; {r['ratio_final']:.2f}x final file only")
        )
    return lines


def _parse_interval(text: str):
    text = text.strip().lower()
    if text in ("none", "no", "off"):
        return None
    value = float(text)  # "inf" included
    if not value >= 0:
        raise ValueError(text)
    return value


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hamiltonia.bench.checkpoint",
        description="Wall time of hamiltonia.sample with checkpoints against without output.",
    )
    parser.add_argument("--targets", default=",".join(DEFAULT_TARGETS),
                        help="comma-separated target names (default: %(default)s)")  # fmt: skip
    parser.add_argument("--draws", type=int, default=10_000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument(
        "--intervals",
        default="none,inf,1,0.1,0",
        help="comma-separated checkpoint_seconds; 'none' = no output, 'inf' = final file only "
        "(default: %(default)s)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (median)")
    parser.add_argument(
        "--compiled",
        choices=("auto", "yes", "no"),
        default="auto",
        help="compiled kernels (auto: where possible) or the NumPy path",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", default=None, help="where the temporary folder goes")
    return parser


def main(argv=None) -> int:
    """Run :func:`checkpoint_cost` and print its table; 2 on bad arguments."""
    import hamiltonia as hm

    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        intervals = [_parse_interval(t) for t in args.intervals.split(",") if t.strip()]
    except ValueError as err:
        print(f"--intervals: not a number of seconds >= 0, 'none' or 'inf': {err}",
              file=sys.stderr)  # fmt: skip
        return 2
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = [t for t in targets if t not in hm.targets.names()]
    if unknown or not targets:
        print(f"--targets: unknown or none given: {', '.join(unknown) or '(none)'}; known: "
              f"{', '.join(hm.targets.names())}", file=sys.stderr)  # fmt: skip
        return 2
    if not intervals:
        print("--intervals: give at least one", file=sys.stderr)
        return 2
    compiled = {"auto": None, "yes": True, "no": False}[args.compiled]

    def log(message: str) -> None:
        print(f"[bench] {message}", file=sys.stderr, flush=True)

    try:
        rows = checkpoint_cost(
            targets, draws=args.draws, chains=args.chains, warmup=args.warmup,
            intervals=intervals, rounds=args.rounds, compiled=compiled, seed=args.seed,
            folder=args.folder, log=log,
        )  # fmt: skip
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    folder = args.folder or tempfile.gettempdir()
    print("# Cost of checkpointing")
    print()
    print(
        f"HMC, {args.chains} chains, {args.warmup:,} warm-up + {args.draws:,} draws, seed "
        f"{args.seed}; wall time of one hamiltonia.sample call, median of {args.rounds} "
        f"alternating rounds in one process (best also shown); files in {folder}; "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    )
    print()
    print("\n".join(checkpoint_table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
