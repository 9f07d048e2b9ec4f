"""The names a reproduction makes in the user's output folder, and how it keeps to its own.

``hamiltonia reproduce NAME --output DIR`` (a shipped experiment or a plugin's study) writes in
``DIR`` names the user did not give: the folders ``runs/`` (the cells' run files) and
``cells/`` (their figures), the record ``experiment.json`` or ``study.json``, the report
(``NAME.md``; ``NAME.rst`` for a study), ``reproduction.json`` and the figures ``NAME-*.png``.
A user may have put anything at those names, so:

* ``runs/`` and ``cells/`` are folders of hamiltonia's own (:mod:`hamiltonia.results.owned`):
  made with a marker, and taken for the reproduction's only while they hold nothing but its
  files (:data:`RUNS`, :data:`CELLS`). A link, a file, a folder without the marker or one
  holding a file of someone else's is refused before any work
  (:class:`~hamiltonia.results.errors.ForeignPathError`), ``--overwrite`` or not, and nothing
  there is read, written, followed or removed. ``--overwrite`` removes them entry by entry,
  each checked again, never with ``rmtree``.
* The files written directly in ``DIR`` are written atomically, by a rename over their name:
  a link there is replaced, never followed. A folder or a special file at one of those names
  is refused before any work (:func:`check_files`): a rename would fail on the first and
  destroy the second.
* The same folders written by a version before the markers are recognised as the
  reproduction's when ``DIR`` holds its record and they hold nothing but its files; they are
  refused unless ``--overwrite`` (their cells record no code version, so none could be reused
  anyway), which removes them as it removes any.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from hamiltonia.results import owned
from hamiltonia.results.errors import ForeignPathError
from hamiltonia.runner.task_folders import TASKS

__all__ = [
    "CELLS",
    "EXPERIMENT_RECORD",
    "RUNS",
    "STUDY_RECORD",
    "check_files",
    "check_folder",
    "experiment_files",
    "fresh_folder",
    "readable_folder",
    "study_files",
]

#: The record of a shipped experiment's reproduction (which experiment, scale and protocol).
EXPERIMENT_RECORD = "experiment.json"

#: The record of a plugin study's reproduction (:mod:`hamiltonia.reproduce.study`).
STUDY_RECORD = "study.json"

#: ``runs/``: the cells' run files, their checkpoint folders while they run, their locks,
#: the task folders of a run with ``--executor`` (which
#: :func:`hamiltonia.reproduce.run_experiment` removes however the cell ends; one a killed
#: process left is still the reproduction's) and the writers' temporaries.
RUNS = owned.FolderKind(
    "reproduction-runs",
    "a reproduction's run files",
    rf".+\.nc|.+\.nc\.lock|{owned.TEMPORARY}",
    subfolders=((r".+\.nc\.partial", owned.CHECKPOINTS), (r".+\.nc\.tasks", TASKS)),
)

#: ``cells/``: one record of figures per cell, and the writers' temporaries.
CELLS = owned.FolderKind(
    "reproduction-cells",
    "a reproduction's cell records",
    rf".+\.json|{owned.TEMPORARY}",
)

#: The figures :func:`hamiltonia.reproduce.figures.write_figures` may write, ``NAME-LABEL.png``.
FIGURES = ("ess", "acceptance", "step_size", "traces")


def experiment_files(name: str) -> list[str]:
    """The files a shipped experiment's reproduction writes (or removes) in its folder."""
    return [EXPERIMENT_RECORD, STUDY_RECORD, "reproduction.json", f"{name}.md",
            *(f"{name}-{label}.png" for label in FIGURES)]  # fmt: skip


def study_files(name: str) -> list[str]:
    """The files :func:`hamiltonia.reproduce.run_study` writes (or removes) in its folder."""
    return [STUDY_RECORD, EXPERIMENT_RECORD, f"{name}.md", f"{name}.rst"]


def check_files(folder, names: Iterable[str]) -> None:
    """Refuse (:class:`ForeignPathError`) a folder or a special file at any of ``names`` in
    ``folder``; a regular file, a link (replaced, never followed) or nothing is fine."""
    for name in names:
        path = Path(folder) / name
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            continue
        what = owned.describe_mode(mode)
        raise ForeignPathError(
            f"{path} is {what}; the reproduction writes a file of its own at that name and "
            "never replaces anything else there, --overwrite or not: move it away or choose "
            "another --output",
            path,
        )


def _has_record(path: Path) -> bool:
    """Whether the folder above ``path`` holds a reproduction's record (a regular file): a
    folder without a marker there is one an earlier version made."""
    for name in (EXPERIMENT_RECORD, STUDY_RECORD):
        try:
            if stat.S_ISREG(os.lstat(path.parent / name).st_mode):
                return True
        except OSError:
            continue
    return False


def _earlier_version(path) -> bool:
    return _has_record(Path(path))


def _of_an_earlier_version(path: Path, kind: owned.FolderKind) -> bool:
    try:
        return owned.owned_folder(path, kind, legacy=_earlier_version)
    except ForeignPathError:
        return False


def check_folder(path, kind: owned.FolderKind, overwrite: bool) -> bool:
    """Whether the reproduction's folder ``path`` of ``kind`` is there, checked before any
    work: :class:`ForeignPathError` where the name holds anything that is not the
    reproduction's (module docs), or a folder an earlier version wrote and ``overwrite`` is
    not given."""
    path = Path(path)
    try:
        return owned.owned_folder(path, kind)
    except ForeignPathError:
        if not _of_an_earlier_version(path, kind):
            raise
    if not overwrite:
        raise ForeignPathError(
            f"{path} was written by an earlier version of hamiltonia (it has no marker of "
            "hamiltonia's): choose a new --output, or pass --overwrite to replace this "
            "reproduction (only the files it wrote are removed)",
            path,
        )
    return True


def fresh_folder(path, kind: owned.FolderKind, overwrite: bool) -> None:
    """Make the reproduction's folder ``path`` of ``kind`` where it is missing; with
    ``overwrite``, remove it first, entry by entry (:func:`check_folder` has passed: it holds
    nothing but the reproduction's files)."""
    path = Path(path)
    if overwrite:
        owned.remove_folder(path, kind, legacy=_earlier_version)
    if not owned.owned_folder(path, kind):
        owned.claim_folder(path, kind)


def readable_folder(path, kind: owned.FolderKind) -> bool:
    """Whether there is a folder of ``kind`` to read at ``path``: the reproduction's, or an
    earlier version's; :class:`ForeignPathError` where the name holds anything else (a link
    is never followed)."""
    return owned.owned_folder(Path(path), kind, legacy=_earlier_version)
