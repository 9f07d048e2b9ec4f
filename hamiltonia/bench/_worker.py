"""Subprocess entry of the benchmark: ``python -m hamiltonia.bench._worker SPEC_JSON``.

Runs one spec (see :mod:`hamiltonia.bench.runs`) and prints one line, the marker followed
by the record as JSON. Errors are reported the same way, as ``{"error": ...}``. A spec with
``cpus`` pins the process to that many cores first (Linux ``sched_setaffinity``); the record
gets the 1-minute load average at the start and the end of the run (``load_1m``).
"""

from __future__ import annotations

import json
import os
import sys
import warnings


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(argv[0])
    from hamiltonia.bench.runs import MARKER, memory_run, run_one

    warnings.simplefilter("ignore")
    if spec.get("cpus"):  # pin this process (and its threads) to the first n allowed cores
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: int(spec["cpus"])])
    load_start = os.getloadavg()[0]
    try:
        record = memory_run(spec) if spec.get("mode") == "memory" else run_one(spec)
    except Exception as err:  # reported in the table, not raised: one failed run is a row
        record = {**spec, "error": f"{type(err).__name__}: {err}"}
    if spec.get("cpus") and "variant" in record:
        cores = int(spec["cpus"])
        record["variant"] += f", {cores} core{'s' if cores > 1 else ''}"
    record["load_1m"] = [load_start, os.getloadavg()[0]]
    print(MARKER + json.dumps(record, default=float), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
