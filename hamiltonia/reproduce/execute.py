"""Running an experiment: each cell (target x sampler) as the publication ran it.

A cell is one :func:`hamiltonia.sample` call with the publication's protocol: a fixed step size
and trajectory length from the publication's table (or dual averaging where the publication
adapted), burn-in discarded, ``chains`` independent chains started at standard normal draws (as
the author's code does), the cell's own seed. With an output folder, each cell's run is saved
(``runs/CELL.nc``) and its figures written atomically (``cells/CELL.json``) as soon as it
finishes, so an interrupted reproduction loses at most the cell in progress, and running it
again with the same folder continues where it stopped. A folder that holds another experiment,
scale or protocol is refused before any work unless ``overwrite`` is given.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

from hamiltonia.reproduce.experiment import Experiment, Protocol
from hamiltonia.reproduce.metrics import DEFAULT_METRICS, VERSION, cell_metrics

__all__ = [
    "CellOutcome",
    "Reproduction",
    "ReproductionInterrupted",
    "cell_name",
    "check_output_folder",
    "load_reproduction",
    "run_experiment",
    "stop_if_interrupted",
]


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


@dataclasses.dataclass
class Reproduction:
    """A finished (or partly finished) reproduction of an experiment."""

    experiment: Experiment
    scale: str
    protocol: Protocol
    cells: dict
    output: str | None = None

    def value(self, target: str, sampler: str, metric: str):
        """The reproduced figure of a cell, or ``None`` where the cell did not run."""
        cell = self.cells.get((target, sampler))
        if cell is None or metric not in cell.metrics:
            return None
        return cell.metrics[metric]["value"]

    def to_json(self) -> dict:
        """A plain-data record (``reproduction.json`` in the output folder)."""
        return {
            "experiment": self.experiment.name,
            "scale": self.scale,
            "protocol": dataclasses.asdict(self.protocol),
            "cells": [dataclasses.asdict(c) for c in self.cells.values()],
        }


def cell_name(target: str, sampler: str) -> str:
    """A file-name-safe name of a cell."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{target}__{sampler}")
    return safe


def _fingerprint(experiment: Experiment, protocol: Protocol, target, sampler) -> str:
    record = {
        "experiment": experiment.name,
        "protocol": dataclasses.asdict(protocol),
        "target": [target.name, dict(target.params)],
        "sampler": [sampler.recipe, {**experiment.options, **sampler.options_for(target)}],
        "ess": sampler.ess,
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()


def _record(experiment, scale: str, protocol: Protocol) -> dict:
    return {"experiment": experiment.name, "scale": scale, "protocol": dataclasses.asdict(protocol)}


class ReproductionInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a cell's run: :func:`hamiltonia.sample` returned the draws so far (saved
    with the run), and the reproduction stops there without recording the cell as finished,
    so that running it again runs the cell again."""

    def __init__(self, where: str, folder=None):
        saved = f"; the finished cells are saved in {folder}: run the same command again to " \
                "continue" if folder is not None else ""  # fmt: skip
        super().__init__(f"interrupted in {where}{saved}")


def stop_if_interrupted(run, where: str, folder=None) -> None:
    """Raise :class:`ReproductionInterrupted` if ``run`` (a :class:`hamiltonia.Result`) was
    stopped by Ctrl-C, so that a reproduction never takes a truncated run for a finished one
    (``where`` names the cell)."""
    if run.attrs.get("complete", True) is False:
        raise ReproductionInterrupted(where, folder)


def check_output_folder(folder: Path) -> None:
    """Refuse, before any work, an output folder that cannot be written: a file, a folder
    whose parent does not exist, or one not writable (shared by the shipped experiments and
    the plugins' studies)."""
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"output {str(folder)!r} exists and is not a folder")
    if not folder.exists():
        parent = folder.parent if str(folder.parent) else Path(".")
        if not parent.is_dir():
            raise ValueError(f"output {str(folder)!r}: its folder {str(parent)!r} does not exist")
        if not os.access(parent, os.W_OK):
            raise ValueError(f"output {str(folder)!r}: cannot write in {str(parent)!r}")
        return
    if not os.access(folder, os.W_OK):
        raise ValueError(f"output {str(folder)!r} is not writable")


def _check_output(folder: Path, experiment, scale, protocol, overwrite: bool) -> None:
    """Refuse, before any work, a folder that cannot take the reproduction or that holds a
    different one (unless ``overwrite``)."""
    check_output_folder(folder)
    if not folder.exists():
        return
    if (folder / "study.json").exists() and not overwrite:
        raise ValueError(
            f"output {str(folder)!r} holds a plugin's study, not {experiment.name!r}: choose "
            "another --output, or --overwrite to replace it"
        )
    record = folder / "experiment.json"
    if record.exists() and not overwrite:
        held = json.loads(record.read_text())
        held.pop("file", None)
        mine = _record(experiment, scale, protocol)
        if held != mine:
            raise ValueError(
                f"output {str(folder)!r} holds {held['experiment']!r} with protocol "
                f"{held['protocol']}, not this one ({mine['protocol']}): choose another "
                "--output, or --overwrite to replace it"
            )


def _initial(protocol: Protocol, dim: int, index: int):
    if protocol.init == "default":
        return None
    rng = np.random.default_rng(np.random.SeedSequence([protocol.seed, index, 1]))
    return rng.standard_normal((protocol.chains, dim))


def run_experiment(
    experiment: Experiment,
    *,
    scale: str = "small",
    chains: int | None = None,
    output=None,
    overwrite: bool = False,
    executor=None,
    scheduler: str | None = None,
    workers: int | None = None,
    compiled: bool | None = None,
    progress: bool = False,
    only=None,
    log=None,
) -> Reproduction:
    """Run every cell of ``experiment`` at ``scale`` and return the reproduced figures.

    Parameters
    ----------
    experiment : Experiment
        From :func:`~hamiltonia.reproduce.experiment.load_experiment`.
    scale : {"small", "full"}
        ``"full"``: the publication's protocol; ``"small"``: fewer chains and draws.
    chains : int, optional
        Override the protocol's number of chains (>= 2).
    output : path, optional
        Folder for the runs and figures; cells already there with the same settings are
        read, not rerun.
    overwrite : bool
        Replace a folder that holds another reproduction.
    executor, scheduler, workers
        As :func:`hamiltonia.sample` (``"dask"`` and a scheduler address for a cluster).
    compiled : bool, optional
        As :func:`hamiltonia.sample`.
    only : iterable of (target label, sampler label), optional
        Run these cells only.
    log : callable, optional
        Called with a line of text as each cell starts and ends.
    """
    import hamiltonia as hm

    protocol = experiment.protocol_at(scale)
    if chains is not None:
        if not isinstance(chains, int) or chains < 2:
            raise ValueError(f"chains must be an integer >= 2, got {chains!r}")
        protocol = dataclasses.replace(protocol, chains=chains)
    from hamiltonia.runner.executors import check_workers

    check_workers(executor, workers)
    folder = None if output is None else Path(output)
    if folder is not None:
        _check_output(folder, experiment, scale, protocol, overwrite)
        (folder / "runs").mkdir(parents=True, exist_ok=True)
        if overwrite:
            # The folder is this experiment's now: a study's record would claim it too.
            (folder / "study.json").unlink(missing_ok=True)
        (folder / "cells").mkdir(exist_ok=True)
        from hamiltonia.results.runfile import atomic_write_bytes

        record = {**_record(experiment, scale, protocol), "file": experiment.source_file}
        atomic_write_bytes(folder / "experiment.json", json.dumps(record).encode())
    wanted = None if only is None else set(only)
    targets = {}
    cells = {}
    for index, (tspec, sspec) in enumerate(experiment.cells()):
        if wanted is not None and (tspec.label, sspec.label) not in wanted:
            continue
        name = cell_name(tspec.label, sspec.label)
        fingerprint = _fingerprint(experiment, protocol, tspec, sspec)
        if folder is not None:
            done = _read_cell(folder / "cells" / f"{name}.json", fingerprint, overwrite, experiment)
            if done is not None:
                cells[(tspec.label, sspec.label)] = done
                if log:
                    log(f"{tspec.label} / {sspec.label}: done before, read from {folder}")
                continue
        if tspec.label not in targets:
            targets[tspec.label] = hm.targets.get(tspec.name, **dict(tspec.params))
        target = targets[tspec.label]
        options = {**experiment.options, **sspec.options_for(tspec)}
        chains_here = protocol.chains + (
            protocol.chains % 2 if sspec.ess.startswith("antithetic") else 0
        )
        here = dataclasses.replace(protocol, chains=chains_here)
        if log:
            log(f"{tspec.label} / {sspec.label}: {sspec.recipe} {options}")
        # A short unrecorded run first, so that compiling the sampler (and loading the
        # diagnostics' libraries) is not in its time.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hm.sample(
                target, sspec.recipe, chains=min(2, chains_here), warmup=2, draws=2, seed=0,
                progress=False, compiled=compiled, initial=_initial(
                    dataclasses.replace(here, chains=min(2, chains_here)), target.dim, index
                ), **options,
            ).summary()  # fmt: skip
        path = None if folder is None else folder / "runs" / f"{name}.nc"
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = hm.sample(
                target,
                sspec.recipe,
                chains=here.chains,
                warmup=here.warmup,
                draws=here.draws,
                seed=np.random.SeedSequence([here.seed, index]),
                initial=_initial(here, target.dim, index),
                progress=progress,
                compiled=compiled,
                output=path,
                overwrite=True,
                executor=executor,
                scheduler=scheduler,
                workers=workers,
                **options,
            )
        stop_if_interrupted(result, f"{tspec.label} / {sspec.label}", folder)
        seconds = time.perf_counter() - start
        concurrency = _concurrency(result, here.chains, executor, workers)
        outcome = CellOutcome(
            target=tspec.label,
            sampler=sspec.label,
            metrics=cell_metrics(result, concurrency, sspec.ess, _computed(experiment)),
            seconds=seconds,
            run_file="" if path is None else str(path),
            compiled=bool(result.attrs.get("compiled", False)),
            n_divergent=result.n_divergent,
            warnings=_headlines(caught),
        )
        cells[(tspec.label, sspec.label)] = outcome
        if folder is not None:
            from hamiltonia.results.runfile import atomic_write_bytes

            payload = {
                "fingerprint": fingerprint,
                "metrics_version": VERSION,
                # How many chains ran at once: t needs it again when the figures are
                # computed anew (the run file does not say how many workers there were).
                "concurrency": concurrency,
                "cell": dataclasses.asdict(outcome),
            }
            atomic_write_bytes(
                folder / "cells" / f"{name}.json", json.dumps(payload, indent=1).encode()
            )
        if log:
            m = outcome.metrics
            shown = [
                f"{label} {m[key]['value']:{fmt}}{unit}"
                for key, label, fmt, unit in _LOGGED
                if key in m
            ]
            log(
                f"{tspec.label} / {sspec.label}: {'  '.join(shown)}"
                + "".join(f"\n  warning: {w}" for w in outcome.warnings)
            )
    return Reproduction(experiment, scale, protocol, cells, None if folder is None else str(folder))


#: The figures a finished cell's log line shows, where computed: (metric, label, format, unit).
_LOGGED = (("acceptance", "AR", ".1f", "%"), ("ess", "ESS", ".0f", ""),
           ("mean_ess", "mean ESS", ".2f", ""), ("t", "t", ".2f", "s"))  # fmt: skip


def _concurrency(result, chains: int, executor, workers) -> int:
    """How many chains ran at once: one per worker process with a pool, one per core on
    the compiled path (its threads), all together in one thread on the NumPy path."""
    cores = os.cpu_count() or 1
    if executor in ("processes", "dask"):
        return min(chains, workers or (cores if executor == "processes" else 2))
    return min(chains, cores) if result.attrs.get("compiled") else 1


def _headlines(caught) -> list[str]:
    """The runs' warnings, each cut to its first clause (the report lists them per cell;
    the run file keeps the draws that show the details)."""
    lines = set()
    for w in caught:
        text = str(w.message).split(":")[0].split(" (")[0]
        # The path and the count of divergences are in the cell's own fields.
        if not text.startswith("running on the NumPy path") and "divergent transitions" not in text:
            lines.add(text)
    return sorted(lines)


def _read_cell(path: Path, fingerprint: str, overwrite: bool, experiment: Experiment):
    if overwrite or not path.exists():
        return None
    try:
        payload = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if payload.get("fingerprint") != fingerprint:
        return None
    return _outcome(payload, experiment)


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


def load_reproduction(folder) -> Reproduction:
    """The reproduction written in ``folder`` by :func:`run_experiment` (the cells finished
    so far), with the experiment as the package has it now."""
    from hamiltonia.reproduce.experiment import experiment_names, load_experiment

    folder = Path(folder)
    record_path = folder / "experiment.json"
    if not record_path.is_file():
        raise ValueError(f"{str(folder)!r} holds no reproduction (no experiment.json)")
    record = json.loads(record_path.read_text())
    # A shipped experiment by its name (as the package has it now); another from its file.
    shipped = record["experiment"] in experiment_names()
    experiment = load_experiment(record["experiment"] if shipped else record.get("file", ""))
    protocol = Protocol(**record["protocol"])
    cells = {}
    for path in sorted((folder / "cells").glob("*.json")):
        payload = json.loads(path.read_text())
        cell = _outcome(payload, experiment)
        cells[(cell.target, cell.sampler)] = cell
    order = {(t.label, s.label): i for i, (t, s) in enumerate(experiment.cells())}
    cells = dict(sorted(cells.items(), key=lambda kv: order.get(kv[0], len(order))))
    return Reproduction(experiment, record["scale"], protocol, cells, str(folder))
