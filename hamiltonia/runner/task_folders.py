"""A run's task folder: where an executor's tasks checkpoint, and who may remove it.

One job: the folder every task of a run writes its checkpoint, its lock, its progress file
and the stop request into (:data:`TASKS`, the kind of folder hamiltonia marks as its own):
``output.tasks`` beside the output, or a temporary folder of the calling machine for a run
without output (:func:`task_folder`); checked before any work (:func:`check_task_folder`),
made by a worker that does not see it yet, removed entry by entry once nothing can resume
from it (:func:`remove_task_folder`), and the temporary folders of runs whose process died
removed by the next run (:func:`remove_orphaned_task_folders`). The executors
(:mod:`hamiltonia.runner.executors`, which re-exports these names) and the tasks' workers
(:mod:`hamiltonia.runner.task_worker`) both use it.
"""

from __future__ import annotations

import os
import re
import socket
import stat
import tempfile
import time
from pathlib import Path

from hamiltonia.results import owned
from hamiltonia.results.errors import ForeignPathError

__all__ = [
    "STOP_FILE",
    "TASKS",
    "TEMP_PREFIX",
    "check_task_folder",
    "remove_orphaned_task_folders",
    "remove_task_folder",
    "task_folder",
]

#: The file whose presence in a run's task folder asks its tasks to stop (Ctrl-C).
STOP_FILE = "stop"

#: The start of the name of a run's temporary task folder, followed by the owner's
#: process id and host (dashes taken out) and ``mkdtemp``'s random suffix.
TEMP_PREFIX = "hamiltonia-tasks-"


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "_"


def _temp_task_folder() -> str:
    """A new temporary task folder named after this process and host, so that a later run
    can tell it was left by a process that died (:func:`remove_orphaned_task_folders`), and
    marked as hamiltonia's (made exclusively by ``mkdtemp``)."""
    folder = tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-{_host()}-")
    owned.mark_new_folder(folder, TASKS)
    return folder


def _temp_folder_pattern() -> re.Pattern:
    """The names of this host's temporary task folders; the group ``pid`` is the owner's."""
    return re.compile(rf"{re.escape(TEMP_PREFIX)}(?P<pid>\d+)-{re.escape(_host())}-[A-Za-z0-9_]+")


def _temp_folder_of_this_host(folder: Path) -> bool:
    return _temp_folder_pattern().fullmatch(folder.name) is not None


def remove_orphaned_task_folders(parent=None) -> list:
    """Remove the temporary task folders of runs whose process died before it could
    remove them (killed, or lost with its machine).

    Only folders of this host and user whose owner process is not alive are removed, and
    only those hamiltonia marked as its own and that hold nothing else (a temporary folder
    shared by several machines holds other hosts' running runs too, whose process ids mean
    nothing here). Folders of earlier versions, without an owner in their name or without
    the marker, are left alone.

    Parameters
    ----------
    parent : path-like, optional
        Where to look; default ``tempfile.gettempdir()``, where runs make them.

    Returns
    -------
    list of Path
        The folders removed.
    """
    from hamiltonia.results.runfile import left_by_dead_processes

    parent = Path(tempfile.gettempdir() if parent is None else parent)
    removed = []
    for folder, _ in left_by_dead_processes(parent, _temp_folder_pattern()):
        try:
            info = folder.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):  # a link or a file of that name: not ours
            continue
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            continue  # another user's: not ours to judge
        try:
            owned.remove_folder(folder, TASKS)
        except OSError:  # not hamiltonia's, or in use: left as it is
            continue
        removed.append(folder)
    return removed


#: A run's task folder (``output.tasks``, or a temporary one): the tasks' checkpoint folders,
#: locks, progress files and temporaries, and the stop request. Anything else in it is not
#: the run's: such a folder is refused, and nothing in it is ever removed.
TASKS = owned.FolderKind(
    "tasks",
    "the checkpoints of a run's tasks",
    rf"task-\d{{6}}\.(nc\.lock|nc|progress|progress-tmp)|{owned.TEMPORARY}|{STOP_FILE}",
    subfolders=((r"task-\d{6}\.nc\.partial", owned.CHECKPOINTS),),
)


def check_task_folder(output) -> bool:
    """Whether the run of ``output`` has a task folder ``output.tasks`` (``False`` where none
    is there); refused before any work where that name holds anything hamiltonia did not
    make (:class:`~hamiltonia.results.errors.ForeignPathError`): a file, a link, a folder
    without hamiltonia's marker, or one that holds files that are not the tasks'."""
    return owned.owned_folder(Path(f"{output}.tasks"), TASKS)


def remove_task_folder(folder) -> bool:
    """Remove a run's task folder, entry by entry, once nothing can resume from it; one that
    holds anything hamiltonia did not make (or is gone, or in use) is left as it is.
    Returns whether it was removed."""
    try:
        owned.remove_folder(Path(folder), TASKS)
    except OSError:
        return False
    return True


def _task_folder_here(folder: Path) -> None:
    """The task folder ``folder`` as this worker sees it: hamiltonia's, made here where
    missing (another task of the run may be making it at the same moment: its marker follows
    its ``mkdir`` within moments), refused where it holds anything else."""
    for _ in range(100):
        try:
            if owned.owned_folder(folder, TASKS):
                return
            folder.parent.mkdir(parents=True, exist_ok=True)
            owned.claim_folder(folder, TASKS)
            return
        except ForeignPathError:
            time.sleep(0.01)
    owned.owned_folder(folder, TASKS)


def task_folder(output, fresh: bool = True) -> str:
    """Where the tasks checkpoint: ``output.tasks`` beside the output (kept if the run
    stops; emptied for a ``fresh`` run, kept for a resumed one), or a new temporary folder
    for a run without output (removed by the run however it ends; the folders of runs whose
    process died are removed here, by the next run)."""
    remove_orphaned_task_folders()
    if output is None:
        return _temp_task_folder()
    folder = Path(f"{output}.tasks")
    present = check_task_folder(output)
    if present and fresh:
        # Checkpoints of an earlier run that stopped belong to other chain states.
        owned.remove_folder(folder, TASKS)
        present = False
    if not present:
        owned.claim_folder(folder, TASKS)
    # A stop request left by a calling process that died while its tasks stopped: the tasks
    # of this run would stop at once.
    (folder / STOP_FILE).unlink(missing_ok=True)
    return str(folder)
