"""Running an experiment: each cell (target x sampler) as the publication ran it.

A cell is one :func:`hamiltonia.sample` call with the publication's protocol: a fixed step size
and trajectory length from the publication's table (or dual averaging where the publication
adapted), burn-in discarded, ``chains`` independent chains started at standard normal draws (as
the author's code does), the cell's own seed. With an output folder, each cell's run is saved
(``runs/CELL.nc``) and its figures written atomically (``cells/CELL.json``) as soon as it
finishes, so an interrupted reproduction loses at most the cell in progress, and running it
again with the same folder continues where it stopped. A folder that holds another experiment,
scale or protocol is refused before any work unless ``overwrite`` is given.

A cell written before is reused only if it matches (:mod:`hamiltonia.reproduce.provenance`):
made by the same code (the package's version and the digest of its source), for the same
definition of the cell, with the same settings, and with figures whose checksum verifies.
Any other is recomputed, the log saying why, or with ``no_rerun`` refused before any work;
:func:`load_reproduction` (and so the documentation's page) takes the cells that match the
folder's last run only, and names each one it skips with the reason. ``overwrite`` replaces
the folder's reproduction: its ``runs/`` and ``cells/`` are removed (only the files the
reproduction wrote: :mod:`hamiltonia.reproduce.folders`) before any cell runs, so no cell of
the earlier run survives beside today's.

A cell's figures and its record (written, and read back where it matches) are in
:mod:`hamiltonia.reproduce.cell_records`; this module re-exports :class:`CellOutcome` and
:func:`cell_name`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

from hamiltonia.reproduce import folders, provenance
from hamiltonia.reproduce.cell_records import (
    CellOutcome,
    _cell_record,
    _computed,
    _concurrency,
    _definition,
    _read_cell,
    cell_name,
)
from hamiltonia.reproduce.experiment import Experiment, Protocol
from hamiltonia.reproduce.metrics import cell_metrics
from hamiltonia.results import owned
from hamiltonia.results.errors import ForeignPathError

__all__ = [
    "CellOutcome",
    "CellSkippedWarning",
    "Reproduction",
    "ReproductionInterrupted",
    "cell_name",
    "check_output_folder",
    "load_reproduction",
    "run_experiment",
    "stop_if_interrupted",
]


@dataclasses.dataclass
class Reproduction:
    """A finished (or partly finished) reproduction of an experiment."""

    experiment: Experiment
    scale: str
    protocol: Protocol
    cells: dict
    output: str | None = None
    #: The cell records of the folder that were not taken (they do not match), by path, with
    #: the reason (:func:`load_reproduction`).
    skipped: dict = dataclasses.field(default_factory=dict)

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


class CellSkippedWarning(UserWarning):
    """A cell record of a reproduction's folder that :func:`load_reproduction` did not take:
    it was made by other code, for another definition of the cell or with other settings
    than the folder's last run, its checksum does not verify, or it does not parse. The
    message names the file and the reason; rerun the reproduction to compute it again."""


def _record(experiment, scale: str, protocol: Protocol) -> dict:
    return {"experiment": experiment.name, "scale": scale, "protocol": dataclasses.asdict(protocol)}


def _read_record(path: Path, what: str) -> dict:
    """The JSON record ``path`` (``experiment.json``), read without following a link; the
    errors name the file and say what to do."""
    try:
        data = owned.read_regular_file(path)
    except ForeignPathError:
        raise ForeignPathError(
            f"{path} is not a regular file (a symbolic link, say): hamiltonia does not read "
            f"its {what} through it; move it away, or run the reproduction again with "
            "--overwrite to write it anew",
            path,
        ) from None
    try:
        record = json.loads(data)
    except ValueError as err:
        raise ValueError(
            f"{path} is not a readable {what} ({err}): the file is truncated or damaged; "
            "run the reproduction again with --overwrite to write it anew, or choose another "
            "--output"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("experiment"), str):
        raise ValueError(f"{path} is not a {what}: it names no experiment")
    return record


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
    different one (unless ``overwrite``), and one where a name the reproduction writes holds
    something that is not its own (:mod:`hamiltonia.reproduce.folders`), ``overwrite`` or
    not."""
    check_output_folder(folder)
    if not folder.exists():
        return
    folders.check_files(folder, folders.experiment_files(experiment.name))
    if os.path.lexists(folder / folders.STUDY_RECORD) and not overwrite:
        raise ValueError(
            f"output {str(folder)!r} holds a plugin's study, not {experiment.name!r}: choose "
            "another --output, or --overwrite to replace it"
        )
    record = folder / folders.EXPERIMENT_RECORD
    if os.path.lexists(record) and not overwrite:
        held = _read_record(record, "reproduction record")
        held = {key: held.get(key) for key in ("experiment", "scale", "protocol")}
        mine = _record(experiment, scale, protocol)
        if held != mine:
            raise ValueError(
                f"output {str(folder)!r} holds {held['experiment']!r} with protocol "
                f"{held['protocol']}, not this one ({mine['protocol']}): choose another "
                "--output, or --overwrite to replace it"
            )
    folders.check_folder(folder / "runs", folders.RUNS, overwrite)
    folders.check_folder(folder / "cells", folders.CELLS, overwrite)


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
    no_rerun: bool = False,
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
        Folder for the runs and figures. A cell already there is read, not rerun, where it
        matches: the same code, the same definition, the same settings, and figures whose
        checksum verifies (module docs); any other is recomputed, the log saying why.
    overwrite : bool
        Replace a folder that holds another reproduction: its runs and cells are removed
        (only the files the reproduction wrote) before any cell runs.
    no_rerun : bool
        Refuse, before any work, to recompute a cell whose record in ``output`` does not
        match (the message names each file and why), rather than replace it. Cells not
        there yet are run.
    executor, scheduler, workers
        As :func:`hamiltonia.sample` (``"dask"`` and a scheduler address for a cluster).
    compiled : bool, optional
        As :func:`hamiltonia.sample`.
    only : iterable of (target label, sampler label), optional
        Run these cells only.
    log : callable, optional
        Called with a line of text as each cell starts and ends, and for each cell read
        back or recomputed, with why.
    """
    import hamiltonia as hm

    protocol = experiment.protocol_at(scale)
    if chains is not None:
        if not isinstance(chains, int) or chains < 2:
            raise ValueError(f"chains must be an integer >= 2, got {chains!r}")
        protocol = dataclasses.replace(protocol, chains=chains)
    from hamiltonia.runner.executors import check_workers

    check_workers(executor, workers)
    if overwrite and no_rerun:
        raise ValueError(
            "--no-rerun and --overwrite contradict each other: --overwrite recomputes every "
            "cell; give one of them"
        )
    settings = provenance.run_settings(protocol.chains, executor, workers, compiled)
    folder = None if output is None else Path(output)
    if folder is not None:
        _check_output(folder, experiment, scale, protocol, overwrite)
    wanted = None if only is None else set(only)
    # Every cell to run, with what a record of it must match; and what the folder holds of
    # each, read before anything is written, so that --no-rerun refuses before any work.
    plan = []
    for index, (tspec, sspec) in enumerate(experiment.cells()):
        if wanted is not None and (tspec.label, sspec.label) not in wanted:
            continue
        definition = _definition(experiment, scale, protocol, index, tspec, sspec)
        done, why = None, None
        if folder is not None and not overwrite:
            done, why = _read_cell(
                folder / "cells" / f"{cell_name(tspec.label, sspec.label)}.json",
                experiment, scale, protocol, settings, (tspec.label, sspec.label),
            )  # fmt: skip
        plan.append((index, tspec, sspec, definition, done, why))
    stale = [(folder / "cells" / f"{cell_name(t.label, s.label)}.json", why)
             for _, t, s, _, done, why in plan if why is not None]  # fmt: skip
    if no_rerun and stale:
        listed = "".join(f"\n  {path} {why}" for path, why in stale)
        cells = "1 cell" if len(stale) == 1 else f"{len(stale)} cells"
        raise ValueError(
            f"--no-rerun: {cells} in {folder} {'does' if len(stale) == 1 else 'do'} not match "
            f"this run and would be recomputed:{listed}\nrun again without --no-rerun to "
            "recompute them, or choose another --output"
        )
    if folder is not None:
        folder.mkdir(exist_ok=True)
        if overwrite:
            # The folder is this experiment's now: a study's record would claim it too
            # (checked: a file or a link, never a folder).
            (folder / folders.STUDY_RECORD).unlink(missing_ok=True)
        folders.fresh_folder(folder / "runs", folders.RUNS, overwrite)
        folders.fresh_folder(folder / "cells", folders.CELLS, overwrite)
        from hamiltonia.results.runfile import atomic_write_bytes

        record = {
            **_record(experiment, scale, protocol),
            "file": experiment.source_file,
            # The settings of the folder's last run: load_reproduction takes the cells made
            # with these only.
            "settings": settings,
            "code": provenance.code_version(),
        }
        atomic_write_bytes(folder / folders.EXPERIMENT_RECORD, json.dumps(record).encode())
    targets = {}
    cells = {}
    for index, tspec, sspec, definition, done, why in plan:
        name = cell_name(tspec.label, sspec.label)
        if done is not None:
            cells[(tspec.label, sspec.label)] = done
            if log:
                log(f"{tspec.label} / {sspec.label}: done before, read from {folder}")
            continue
        if why is not None and log:
            log(f"{tspec.label} / {sspec.label}: {folder / 'cells' / f'{name}.json'} {why}; "
                "recomputing")  # fmt: skip
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
        try:
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
        finally:
            if path is not None:
                _remove_task_folder(path)
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
        if folder is not None:
            from hamiltonia.results.runfile import atomic_write_bytes

            payload = _cell_record(outcome, definition, settings, concurrency)
            # The figures as they will be read back (a JSON round trip), so that the outcome
            # returned is the one whose checksum the record carries.
            outcome = CellOutcome(**payload["cell"])
            atomic_write_bytes(
                folder / "cells" / f"{name}.json", json.dumps(payload, indent=1).encode()
            )
        cells[(tspec.label, sspec.label)] = outcome
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


def _remove_task_folder(path: Path) -> None:
    """Remove the task folder ``runs/NAME.nc.tasks`` a run with an executor leaves when it
    stops: a reproduction never resumes a cell's run (it runs the cell again), and ``runs/``
    holds only run files (:data:`hamiltonia.reproduce.folders.RUNS`). Only a task folder of
    hamiltonia's is removed; anything else there is left as it is."""
    from hamiltonia.runner.task_folders import remove_task_folder

    tasks = Path(f"{path}.tasks")
    if os.path.lexists(tasks):
        remove_task_folder(tasks)


#: The figures a finished cell's log line shows, where computed: (metric, label, format, unit).
_LOGGED = (("acceptance", "AR", ".1f", "%"), ("ess", "ESS", ".0f", ""),
           ("mean_ess", "mean ESS", ".2f", ""), ("t", "t", ".2f", "s"))  # fmt: skip


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


def load_reproduction(folder, *, log=None) -> Reproduction:
    """The reproduction written in ``folder`` by :func:`run_experiment` (the cells finished
    so far), with the experiment as the package has it now.

    Only the cells that match are taken: made by this code, for the cell as the experiment
    defines it now at the folder's scale and protocol, with the settings of the folder's last
    run, and with figures whose checksum verifies. Each other cell record is skipped, named
    with the reason in :attr:`Reproduction.skipped` and passed to ``log`` (a callable taking
    a line of text), or, without one, in a :class:`CellSkippedWarning`.
    """
    from hamiltonia.reproduce.experiment import experiment_names, load_experiment

    folder = Path(folder)
    record_path = folder / folders.EXPERIMENT_RECORD
    if not os.path.lexists(record_path):
        raise ValueError(f"{str(folder)!r} holds no reproduction (no experiment.json)")
    record = _read_record(record_path, "reproduction record")
    # A shipped experiment by its name (as the package has it now); another from its file.
    shipped = record["experiment"] in experiment_names()
    experiment = load_experiment(record["experiment"] if shipped else record.get("file", ""))
    try:
        protocol = Protocol(**record["protocol"])
        scale = record["scale"]
    except (TypeError, KeyError):
        raise ValueError(
            f"{record_path} is not a reproduction record: it has no scale or protocol"
        ) from None
    # A record written before the settings were recorded: its cells record no code version,
    # and are skipped for that.
    settings = record.get("settings")
    cells = {}
    skipped = {}
    if folders.readable_folder(folder / "cells", folders.CELLS):
        for path in sorted((folder / "cells").glob("*.json")):
            cell, why = _read_cell(path, experiment, scale, protocol, settings)
            if cell is None:
                skipped[str(path)] = why
                line = f"{path} skipped: it {why}"
                if log is not None:
                    log(line)
                else:
                    warnings.warn(line, CellSkippedWarning, stacklevel=2)
                continue
            cells[(cell.target, cell.sampler)] = cell
    order = {(t.label, s.label): i for i, (t, s) in enumerate(experiment.cells())}
    cells = dict(sorted(cells.items(), key=lambda kv: order.get(kv[0], len(order))))
    return Reproduction(experiment, scale, protocol, cells, str(folder), skipped)
