"""A reproduction's cells and their records: the figures of one cell
(:class:`CellOutcome`), the name of its files (:func:`cell_name`), the record
``cells/NAME.json`` written when it finishes, with what made it
(:mod:`hamiltonia.reproduce.provenance`), and reading a record back, taken only where it
matches the cell as the experiment defines it now (its figures computed anew from its run
file where their definitions changed).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np

from hamiltonia.reproduce import provenance
from hamiltonia.reproduce.experiment import Experiment, Protocol
from hamiltonia.reproduce.metrics import DEFAULT_METRICS, VERSION, cell_metrics
from hamiltonia.results import owned
from hamiltonia.results.errors import ForeignPathError

__all__ = ["CellOutcome", "cell_name"]


@dataclasses.dataclass
class CellOutcome:
    """The figures of one cell, with what it took."""

    target: str
    sampler: str
    metrics: dict
    seconds: float  # wall-clock seconds of the whole cell: set-up, checks and writing too
    run_file: str
    compiled: bool
    n_divergent: int
    warnings: list = dataclasses.field(default_factory=list)


def cell_name(target: str, sampler: str) -> str:
    """A file-name-safe name of a cell."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{target}__{sampler}")
    return safe


def _definition(experiment, scale: str, protocol: Protocol, index: int, target, sampler):
    return provenance.cell_definition(
        experiment, scale, protocol, target, sampler, index, _computed(experiment)
    )


def _cell_record(outcome: CellOutcome, definition: dict, settings: dict, concurrency: int):
    """The record ``cells/NAME.json`` of a finished cell: its figures with their checksum,
    and what made them (:mod:`hamiltonia.reproduce.provenance`)."""
    cell = json.loads(json.dumps(dataclasses.asdict(outcome)))
    return {
        "format": provenance.CELL_FORMAT,
        "code": provenance.code_version(),
        "fingerprint": provenance.fingerprint(definition),
        "definition": definition,
        "settings": settings,
        "metrics_version": VERSION,
        # How many chains ran at once: t needs it again when the figures are computed anew
        # (the run file does not say how many workers there were).
        "concurrency": concurrency,
        "cell": cell,
        "checksum": provenance.checksum(cell),
    }


def _concurrency(result, chains: int, executor, workers) -> int:
    """How many chains ran at once: one per worker process with a pool, one per core on
    the compiled path (its threads), all together in one thread on the NumPy path."""
    cores = os.cpu_count() or 1
    if executor in ("processes", "dask"):
        return min(chains, workers or (cores if executor == "processes" else 2))
    return min(chains, cores) if result.attrs.get("compiled") else 1


def _parse_cell(path: Path):
    """The parsed record ``path``, or ``None`` where there is none; ``(None, why)`` where it
    cannot be read."""
    try:
        data = owned.read_regular_file(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except ForeignPathError:
        return None, "is not a regular file (a symbolic link, say): it is not read"
    except OSError as err:
        return None, f"cannot be read ({err.strerror})"
    try:
        return json.loads(data), None
    except ValueError as err:
        return None, f"does not parse as a cell record ({err}): the file is truncated or damaged"


def _read_cell(path: Path, experiment, scale, protocol, settings, expected=None):
    """The cell recorded in ``path`` where it matches the cell as ``experiment`` defines it
    now at ``scale`` and ``protocol``, run with ``settings`` (``None``: any settings) by this
    code: ``(outcome, None)``; ``(None, why)`` where it does not; ``(None, None)`` where there
    is no record. ``expected`` is the ``(target, sampler)`` the file is named for."""
    payload, why = _parse_cell(path)
    if payload is None:
        return None, why
    cell = payload.get("cell") if isinstance(payload, dict) else None
    if not isinstance(cell, dict):
        return None, "is not a cell record (it holds no cell)"
    key = (cell.get("target"), cell.get("sampler"))
    where = {(t.label, s.label): (i, t, s) for i, (t, s) in enumerate(experiment.cells())}
    if key not in where:
        return None, f"is not a cell of {experiment.name!r} as it is defined now"
    if (expected is not None and key != expected) or path.name != f"{cell_name(*key)}.json":
        return None, f"holds the cell {key[0]} / {key[1]}, not the one its name says"
    index, tspec, sspec = where[key]
    definition = _definition(experiment, scale, protocol, index, tspec, sspec)
    why = provenance.mismatch(payload, definition, settings)
    if why is not None:
        return None, why
    try:
        return _outcome(payload, experiment), None
    except (TypeError, ValueError, KeyError, OSError) as err:
        return None, f"cannot be read back ({err})"


def _computed(experiment: Experiment) -> tuple[str, ...]:
    """The figures computed for the experiment's cells: the usual ones and what it asks for;
    an experiment that shows no ESS does not get the mESS computed (a network's chain has
    fewer draws than parameters)."""
    asked = set(experiment.metrics)
    usual = set(DEFAULT_METRICS)
    if not asked & {"ess", "ess_per_t"}:
        usual -= {"ess", "ess_per_t"}
    return tuple(sorted(usual | asked))


def _outcome(payload: dict, experiment: Experiment) -> CellOutcome:
    """A written cell; one written under other definitions of the figures has them computed
    again from its run file."""
    cell = CellOutcome(**payload["cell"])
    if payload.get("metrics_version") != VERSION and Path(cell.run_file).is_file():
        from hamiltonia.results import load

        spec = experiment.sampler(cell.sampler)
        result = load(cell.run_file)
        concurrency = payload.get("concurrency") or _recorded_concurrency(cell, result, spec.ess)
        cell.metrics = cell_metrics(result, concurrency, spec.ess, _computed(experiment))
    return cell


def _recorded_concurrency(cell: CellOutcome, result, ess: str) -> int:
    """The concurrency a cell written before it was recorded was timed with, read back from
    its ``t`` (``t`` = sampling seconds x concurrency / chains, twice that for a pair), so
    that computing its figures anew keeps its time; where it has no ``t``, the concurrency
    the run's own path gives."""
    t = cell.metrics.get("t", {}).get("value")
    seconds = result.sampling_seconds
    if t is None or not seconds or not np.isfinite(t):
        return _concurrency(result, result.n_chains, result.attrs.get("executor"), None)
    per_unit = 2 if ess.startswith("antithetic") else 1
    return max(1, round(t * result.n_chains / (seconds * per_unit)))
