"""A published study that a plugin reproduces: any experiment, not only a table of samplers.

The experiments shipped with hamiltonia are grids of targets and samplers with the metrics of
:mod:`hamiltonia.reproduce.metrics`, written as data (:mod:`hamiltonia.reproduce.experiment`).
A plugin's application study (a model comparison by LOO, a table of predictive scores, ...)
is code: a :class:`Study` subclass registered under the entry-point group
``hamiltonia.studies``, which ``hamiltonia reproduce NAME`` runs like a shipped experiment::

    [options.entry_points]
    hamiltonia.studies =
        my-study = my_package.study:MyStudy

hamiltonia does the part every study shares: the output folder is checked before any work (a
folder holding another study, or this study at another scale, is refused unless
``overwrite``), the study's record is written to it, and the report the study returns is
written atomically beside its runs (``NAME.md``, and ``NAME.rst`` for the documentation page
of :func:`hamiltonia.reproduce.write_docs_page`). The study runs its cells, saves each run in
``output/runs`` and reads back the ones finished before, so an interrupted reproduction
continues where it stopped.

``output/runs`` is a folder of hamiltonia's (:mod:`hamiltonia.reproduce.folders`): it holds the
run files :func:`hamiltonia.sample` writes there (``*.nc``, with their checkpoints and locks)
and nothing else. A study that writes another file there finds its folder refused on the next
run; its other files go in ``output`` itself.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from hamiltonia._validation import check_int
from hamiltonia.registry import PluginWarning, Registry
from hamiltonia.reproduce import folders
from hamiltonia.reproduce.execute import (
    ReproductionInterrupted,
    check_output_folder,
    stop_if_interrupted,
)
from hamiltonia.reproduce.experiment import experiment_names

__all__ = [
    "STUDY_RECORD",
    "ReproductionInterrupted",
    "Study",
    "StudyReport",
    "check_study_options",
    "get_study",
    "load_study_report",
    "registry",
    "run_study",
    "stop_if_interrupted",
    "study_names",
]

#: The file in a study's output folder that says which study, at which scale, it holds.
STUDY_RECORD = folders.STUDY_RECORD


@dataclasses.dataclass
class StudyReport:
    """What a study's run returns.

    Attributes
    ----------
    markdown : str
        The report: published beside reproduced, and each difference explained.
    rst : list of str
        The same as reStructuredText lines, a section headed with a ``-`` underline, for the
        documentation page.
    files : list of Path
        The figures and data files the run wrote.
    """

    markdown: str
    rst: list[str]
    files: list[Path] = dataclasses.field(default_factory=list)


class Study(abc.ABC):
    """A published study reproduced by code (module docs): subclass, name it, and write
    :meth:`run`.

    Class attributes ``name`` (the name ``hamiltonia reproduce`` takes), ``title`` and
    ``source`` (the publication, with the table or figure) describe it; ``scales`` are the
    scales it runs at (``"small"``: minutes on two cores; ``"full"``: the publication's
    protocol).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    source: ClassVar[str]
    scales: ClassVar[tuple[str, ...]] = ("small", "full")

    def cells(self) -> list[str]:
        """Labels of the study's cells (``"TARGET/SAMPLER"``), which ``only`` chooses from;
        empty for a study that is not divided into cells."""
        return []

    @abc.abstractmethod
    def run(
        self,
        output: Path,
        *,
        scale: str,
        chains: int | None,
        only: list[str] | None,
        figures: bool,
        progress: bool,
        log: Callable[[str], None],
        sample_options: dict,
    ) -> StudyReport:
        """Run the study into the folder ``output`` (it exists, checked) and report.

        A run stopped by Ctrl-C comes back from :func:`hamiltonia.sample` with its draws so
        far: pass each run to :func:`stop_if_interrupted` so that the study stops there
        rather than report on a truncated run. With ``overwrite``, :func:`run_study` has
        emptied ``output / "runs"`` before calling this. ``output / "runs"`` holds run files
        only (module docs).

        Parameters
        ----------
        output : Path
            The study's folder: its runs go in ``output / "runs"``; a cell whose run is
            there already is read back, not rerun.
        scale : str
            One of :attr:`scales`.
        chains : int or None
            Chains per run instead of the scale's (``None``: the scale's).
        only : list of str or None
            Run these cells only (labels of :meth:`cells`).
        figures : bool
            Whether to draw the figures (matplotlib).
        progress : bool
            Whether to show progress bars.
        log : callable
            Called with a line of text as each cell starts and ends.
        sample_options : dict
            ``compiled``, ``executor``, ``scheduler`` and ``workers``, for
            :func:`hamiltonia.sample`.

        """


#: The registry of plugins' studies, fed by the ``hamiltonia.studies`` entry points (a
#: :class:`Study` subclass, built with no arguments).
registry = Registry("hamiltonia.studies", "study", returns=Study)


def study_names() -> list[str]:
    """Names of the studies the installed plugins register, sorted; a name that a shipped
    experiment has (which ``hamiltonia reproduce NAME`` runs instead) is left out, with a
    :class:`~hamiltonia.registry.PluginWarning`."""
    shipped = set(experiment_names())
    names = registry.names()
    for name in sorted(shipped.intersection(names)):
        warnings.warn(
            f"the study {name!r} of plugin {registry.source(name)} has the name of an "
            "experiment shipped with hamiltonia, which 'hamiltonia reproduce' runs instead; "
            "the plugin should rename it",
            PluginWarning,
            stacklevel=2,
        )
    return [n for n in names if n not in shipped]


def get_study(name: str) -> Study:
    """The study registered as ``name``, built; its class's ``name`` must be the name it is
    registered under (the CLI finds it by one, and names its folder and files by the
    other)."""
    study = registry.build(name)
    if getattr(study, "name", None) != name:
        raise TypeError(
            f"study {name!r} from {registry.source(name)} is a {type(study).__name__} named "
            f"{getattr(study, 'name', None)!r}: register it under its own name"
        )
    return study


def _read_record(path: Path) -> dict:
    from hamiltonia.results.owned import read_regular_file

    try:
        # Never through a link, nor waiting on a pipe put at the name.
        record = json.loads(read_regular_file(path))
    except (OSError, ValueError) as err:
        raise ValueError(
            f"{path} is not a readable study record ({err}): choose another --output, or "
            "pass --overwrite to replace it"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("study"), str):
        raise ValueError(f"{path} is not a study record: it names no study")
    return record


def _record(study: Study, scale: str, chains: int | None) -> dict:
    return {"study": study.name, "scale": scale, "chains": chains}


def _check_output(folder: Path, study: Study, scale: str, chains, overwrite: bool) -> None:
    """Refuse, before any work, a folder that cannot take the study or that holds another
    (unless ``overwrite``), and one where a name the study writes holds something that is not
    its own (:mod:`hamiltonia.reproduce.folders`), ``overwrite`` or not."""
    check_output_folder(folder)
    if not folder.exists():
        return
    folders.check_files(folder, folders.study_files(study.name))
    if os.path.lexists(folder / folders.EXPERIMENT_RECORD) and not overwrite:
        raise ValueError(
            f"output {str(folder)!r} holds a reproduction of a shipped experiment, not the "
            f"study {study.name!r}: choose another --output, or --overwrite to replace it"
        )
    record = folder / STUDY_RECORD
    if os.path.lexists(record) and not overwrite:
        held, mine = _read_record(record), _record(study, scale, chains)
        if held != mine:
            raise ValueError(
                f"output {str(folder)!r} holds the study {held.get('study')!r} at scale "
                f"{held.get('scale')!r} with chains {held.get('chains')}, not this one "
                f"({mine['study']!r}, {mine['scale']!r}, chains {chains}): choose another "
                "--output, or --overwrite to replace it"
            )
    folders.check_folder(folder / "runs", folders.RUNS, overwrite)


def check_study_options(study: Study, scale: str, chains, only, figures: bool = False) -> None:
    """Refuse, before any work, a ``scale`` the study does not run at, ``chains`` that is not
    an integer >= 2, a cell of ``only`` it does not have, and ``figures`` without
    matplotlib."""
    if scale not in study.scales:
        raise ValueError(f"scale must be one of {list(study.scales)} for {study.name!r}, "
                         f"got {scale!r}")  # fmt: skip
    if chains is not None:
        check_int(chains, "chains", minimum=2)
    if only is not None:
        cells = study.cells()
        unknown = [c for c in only if c not in cells]
        if unknown:
            raise ValueError(
                f"{unknown[0]!r} is not a cell of {study.name}: "
                + (", ".join(cells) if cells else "this study has no cells to choose from")
            )
    if figures:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError(
                "figures need matplotlib: pip install 'hamiltonia[plot]', or --no-figures"
            ) from None


def run_study(
    study: Study,
    output,
    *,
    scale: str = "small",
    chains: int | None = None,
    only: list[str] | None = None,
    overwrite: bool = False,
    figures: bool = True,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    **sample_options,
) -> tuple[StudyReport, list[Path]]:
    """Run ``study`` into the folder ``output`` and write its report there.

    The options (:func:`check_study_options`) and the folder are checked first (module
    docs); ``overwrite`` empties the folder's ``runs`` before the study runs (removing only
    the run files hamiltonia wrote there: a folder holding anything else is refused). Returns
    the report and the paths written (the report's files, then ``NAME.md`` and ``NAME.rst``).
    """
    from hamiltonia.results.runfile import atomic_write_bytes

    check_study_options(study, scale, chains, only, figures)
    folder = Path(output)
    _check_output(folder, study, scale, chains, overwrite)
    folder.mkdir(exist_ok=True)
    if overwrite:
        # Replaced, as asked: the record and report of whatever the folder held (each checked
        # to be a file or a link, never a folder), and below the runs, which the study would
        # read back as its own.
        for old in (folders.EXPERIMENT_RECORD, f"{study.name}.md", f"{study.name}.rst"):
            (folder / old).unlink(missing_ok=True)
    folders.fresh_folder(folder / "runs", folders.RUNS, overwrite)
    atomic_write_bytes(folder / STUDY_RECORD, json.dumps(_record(study, scale, chains)).encode())
    report = study.run(
        folder, scale=scale, chains=chains, only=None if only is None else list(only),
        figures=figures, progress=progress, log=log or (lambda line: None),
        sample_options=dict(sample_options),
    )  # fmt: skip
    if not isinstance(report, StudyReport):
        raise TypeError(
            f"study {study.name!r} returned {type(report).__name__} from run(), not a StudyReport"
        )
    written = [
        atomic_write_bytes(folder / f"{study.name}.md", report.markdown.encode()),
        atomic_write_bytes(folder / f"{study.name}.rst", "\n".join(report.rst).encode()),
    ]
    return report, [*map(Path, report.files), *written]


def load_study_report(folder) -> list[str] | None:
    """The reStructuredText lines a study wrote in ``folder``, or ``None`` when the folder
    holds no study (a shipped experiment's reproduction)."""
    folder = Path(folder)
    record = folder / STUDY_RECORD
    if not os.path.lexists(record):
        return None
    name = _read_record(record)["study"]
    page = folder / f"{name}.rst"
    if not page.is_file():
        raise ValueError(f"{str(folder)!r} holds the study {name!r} but no report: run it again")
    return page.read_text().splitlines()
