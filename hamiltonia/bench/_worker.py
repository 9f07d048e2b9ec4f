"""Subprocess entry of the benchmark: ``python -m hamiltonia.bench._worker SPEC_JSON``.

Runs one spec (see :mod:`hamiltonia.bench.runs`) and prints one line, the marker followed
by the record as JSON. Errors are reported the same way, as ``{"error": ...}``.
"""

from __future__ import annotations

import json
import sys
import warnings


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(argv[0])
    from hamiltonia.bench.runs import MARKER, memory_run, run_one

    warnings.simplefilter("ignore")
    try:
        record = memory_run(spec) if spec.get("mode") == "memory" else run_one(spec)
    except Exception as err:  # reported in the table, not raised: one failed run is a row
        record = {**spec, "error": f"{type(err).__name__}: {err}"}
    print(MARKER + json.dumps(record, default=float), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
