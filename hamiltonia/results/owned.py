"""The names hamiltonia makes beside a user's output, and how it knows them for its own.

A run written to ``run.nc`` uses names the user did not give: the checkpoint folder
``run.nc.partial/``, the lock ``run.nc.lock``, an executor's task folder ``run.nc.tasks/``
(each task with its own checkpoint folder and lock inside), temporaries, and a reproduction
its ``runs/`` and ``cells/`` folders. A user may have put anything at such a name: their own
folder of results, a file, a symbolic link to a folder they care about. So:

* hamiltonia makes each such folder itself, exclusively (``mkdir``, which never follows a
  link and fails on anything already there), and writes a marker file into it at once
  (:data:`MARKER`, created with ``O_EXCL | O_NOFOLLOW``);
* a folder at one of these names is taken for hamiltonia's only if it is a real folder (not
  a link), holds the marker of its kind, and holds nothing but the entries of its kind (each a
  regular file or one of its own marked sub-folders, never a link); anything else is a
  :class:`~hamiltonia.results.errors.ForeignPathError` naming the path, raised before any
  work, and nothing there is read, written, followed or removed;
* a folder is removed entry by entry, each checked again, never with ``rmtree``;
* the lock file is opened with ``O_NOFOLLOW`` and taken only if it is a regular file with
  one link whose content is empty or a hamiltonia lock (:func:`open_lock_file`): a link, a
  hard link to another file or a user's file of that name is never truncated.

Folders written by earlier versions of hamiltonia have no marker; a checkpoint folder of
theirs is still recognised when everything in it is a checkpoint file and its manifest is
one hamiltonia sealed (:func:`adopt_legacy`).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
import stat
from pathlib import Path

from hamiltonia.results.errors import ForeignPathError, RunFileError

__all__ = [
    "CHECKPOINTS",
    "MARKER",
    "FolderKind",
    "adopt_legacy",
    "claim_folder",
    "describe_mode",
    "is_marked",
    "is_owned",
    "lock_owner",
    "lock_text",
    "mark_new_folder",
    "open_lock_file",
    "owned_folder",
    "read_regular_file",
    "remove_folder",
    "touch_new_file",
]

#: The file hamiltonia writes into every folder it makes beside a user's output.
MARKER = ".hamiltonia-folder"

#: The names of a writer's temporary files: ``.NAME.PID.RANDOM.tmp`` (``tempfile.mkstemp``).
TEMPORARY = r"\..+\.\d+\.[^.]*\.tmp"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@dataclasses.dataclass(frozen=True)
class FolderKind:
    """A kind of folder hamiltonia makes: what it is called in messages, which regular files
    it may hold, and which sub-folders (each of its own kind).

    Attributes
    ----------
    name : str
        The kind's name, recorded in the marker (a folder of one kind is never taken for
        another).
    what : str
        What the folder holds, for messages ("a run's checkpoints").
    files : str
        A regular expression matching the names of the files it holds.
    subfolders : tuple of (str, FolderKind)
        Regular expressions matching the names of its sub-folders, each with their kind.
    """

    name: str
    what: str
    files: str
    subfolders: tuple = ()

    def holds_file(self, name: str) -> bool:
        return re.fullmatch(self.files, name) is not None

    def kind_of_folder(self, name: str) -> FolderKind | None:
        """The kind of the sub-folder ``name``, or ``None`` where it holds none of that name."""
        for pattern, kind in self.subfolders:
            if re.fullmatch(pattern, name) is not None:
                return kind
        return None


#: A run's checkpoint folder, ``output.partial`` (:mod:`hamiltonia.results.runfile`).
CHECKPOINTS = FolderKind(
    "checkpoints",
    "a run's checkpoints",
    rf"manifest\.json|block-\d{{12}}\.npz|warmup-\d{{12}}\.npz|warmup\.npz|{TEMPORARY}",
)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None


def describe_mode(mode: int) -> str:
    """What a file of ``mode`` (from ``lstat``) is, for messages: a link, a folder, a file."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a file"
    return "a special file (a pipe, a socket or a device)"


def _foreign(path: Path, kind: FolderKind, why: str) -> ForeignPathError:
    return ForeignPathError(
        f"{path} {why}; hamiltonia keeps that name for {kind.what} and touches nothing there "
        "that it did not make: move it away or choose another output",
        path=path,
    )


def _marker_text(kind: FolderKind) -> bytes:
    return json.dumps({"made_by": "hamiltonia", "kind": kind.name}).encode()


def read_regular_file(path, limit: int | None = None) -> bytes:
    """The bytes of ``path``, which must be a regular file: opened without following a
    link (``O_NOFOLLOW``) and without waiting on a pipe, so a link or a special file put in
    a folder of hamiltonia's is never read through. At most ``limit`` bytes where given."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ForeignPathError(f"{path} is a symbolic link; it is not read", path) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ForeignPathError(f"{path} is not a regular file; it is not read", path)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read() if limit is None else f.read(limit)
    finally:
        os.close(fd)


def _has_marker(folder: Path, kind: FolderKind) -> bool:
    info = _lstat(folder / MARKER)
    if info is None or not stat.S_ISREG(info.st_mode):
        return False
    try:
        return read_regular_file(folder / MARKER, 4096) == _marker_text(kind)
    except OSError:
        return False


def owned_folder(path, kind: FolderKind, *, legacy=None) -> bool:
    """Whether a folder of ``kind`` that hamiltonia made is at ``path`` (``False`` where
    nothing is there).

    Anything else at ``path`` raises :class:`ForeignPathError` naming it: a symbolic link
    (to anything), a file, a folder without the marker of ``kind``, or one that holds an
    entry that is not ``kind``'s (a link, a special file, a name of someone else's).
    ``legacy(path)``, where given, recognises a folder an earlier version made without a
    marker (it is then checked like the others)."""
    path = Path(path)
    info = _lstat(path)
    if info is None:
        return False
    if not stat.S_ISDIR(info.st_mode):
        raise _foreign(
            path, kind, f"is {describe_mode(info.st_mode)}, not a folder hamiltonia made"
        )
    if not _has_marker(path, kind) and not (legacy is not None and legacy(path)):
        names = sorted(entry.name for entry in _entries(path))
        held = (
            f"; it holds {', '.join(names[:3])}{'...' if len(names) > 3 else ''}" if names else ""
        )
        raise _foreign(path, kind, f"is a folder that hamiltonia did not make (no marker{held})")
    for entry in _entries(path):
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # gone since it was listed (a writer's temporary renamed into place)
        mode = info.st_mode
        if stat.S_ISREG(mode) and info.st_nlink > 1:
            # hamiltonia never makes a second link: this name is also someone else's file.
            raise _foreign(path, kind, f"holds {entry.name!r}, a hard link to another file")
        if entry.name == MARKER or (stat.S_ISREG(mode) and kind.holds_file(entry.name)):
            continue
        if stat.S_ISDIR(mode) and (child := kind.kind_of_folder(entry.name)) is not None:
            owned_folder(entry.path, child)
            continue
        raise _foreign(
            path,
            kind,
            f"holds {entry.name!r} ({describe_mode(mode)}), which hamiltonia did not make",
        )
    return True


def _entries(path: Path) -> list:
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError as err:
        raise RunFileError(f"{path} cannot be read: {err.strerror}") from None


def is_marked(path, kind: FolderKind) -> bool:
    """Whether ``path`` is a real folder (not a link) holding the marker of ``kind``, its
    entries not examined: for a folder in use, whose entries come and go (never raises)."""
    info = _lstat(Path(path))
    return info is not None and stat.S_ISDIR(info.st_mode) and _has_marker(Path(path), kind)


def is_owned(path, kind: FolderKind) -> bool:
    """Whether ``path`` is a folder of ``kind`` that hamiltonia made (never raises)."""
    try:
        return owned_folder(path, kind)
    except OSError:
        return False


def claim_folder(path, kind: FolderKind) -> Path:
    """Make the folder ``path`` of ``kind``, with its marker. ``mkdir`` fails on anything
    already there, a link included, so a folder claimed is always a new one:
    :class:`ForeignPathError` where the name is taken."""
    path = Path(path)
    try:
        os.mkdir(path)
    except FileExistsError:
        info = _lstat(path)
        why = "is taken" if info is None else f"is {describe_mode(info.st_mode)}"
        raise _foreign(path, kind, why) from None
    try:
        _write_marker(path, kind)
    except BaseException:
        os.rmdir(path)
        raise
    return path


def mark_new_folder(path, kind: FolderKind) -> Path:
    """Write the marker of ``kind`` into ``path``, a folder just made exclusively by the
    caller (``tempfile.mkdtemp``)."""
    _write_marker(Path(path), kind)
    return Path(path)


def touch_new_file(path, data: bytes = b"") -> None:
    """Create the file ``path`` with ``data`` where nothing is there; a file hamiltonia made
    before is left as it is. Never opens a link or anything else put there
    (:class:`ForeignPathError`)."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except FileExistsError:
        info = _lstat(path)
        if info is not None and stat.S_ISREG(info.st_mode):
            return
        kind = "something" if info is None else describe_mode(info.st_mode)
        raise ForeignPathError(f"{path} is {kind}; hamiltonia does not write there", path) from None
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _write_marker(path: Path, kind: FolderKind) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    fd = os.open(path / MARKER, flags, 0o666)
    try:
        os.write(fd, _marker_text(kind))
    finally:
        os.close(fd)


def adopt_legacy(path, kind: FolderKind) -> None:
    """Write the marker of ``kind`` into a folder an earlier version made without one (the
    caller has recognised it with :func:`owned_folder`'s ``legacy``)."""
    if not _has_marker(Path(path), kind):
        _write_marker(Path(path), kind)


def remove_folder(path, kind: FolderKind, *, legacy=None) -> None:
    """Remove the folder ``path`` of ``kind`` that hamiltonia made, entry by entry (each one
    checked as :func:`owned_folder` checks it, its marker last): never a link followed, never
    a file hamiltonia did not make. Nothing there: nothing done. ``legacy`` as for
    :func:`owned_folder`."""
    path = Path(path)
    if not owned_folder(path, kind, legacy=legacy):
        return
    for entry in _entries(path):
        if entry.name == MARKER:
            continue
        if entry.is_dir(follow_symlinks=False):
            remove_folder(entry.path, kind.kind_of_folder(entry.name))
        else:
            os.unlink(entry.path)
    (path / MARKER).unlink(missing_ok=True)
    os.rmdir(path)


#: The text of a lock file: the holder's process id, for the message a second writer gets.
_LOCK_TEXT = "hamiltonia-lock pid={pid}\n"
_LOCK_CONTENT = re.compile(rb"(hamiltonia-lock pid=)?(?P<pid>\d{0,20})\n?")
_LOCK_MAX = 64


def lock_text(pid: int) -> bytes:
    """What a lock file held by process ``pid`` holds."""
    return _LOCK_TEXT.format(pid=pid).encode()


def lock_owner(content: bytes) -> int | None:
    """The process id a lock file's ``content`` names (0 for an empty one), or ``None`` where
    the content is not a hamiltonia lock's (earlier versions wrote the bare pid)."""
    match = _LOCK_CONTENT.fullmatch(content)
    if match is None:
        return None
    return int(match["pid"] or 0)


def _foreign_lock(path: Path, why: str) -> ForeignPathError:
    return ForeignPathError(
        f"{path} {why}; hamiltonia keeps that name for the lock of a run's output and never "
        "writes to anything it did not make there: move it away or choose another output",
        path=path,
    )


def open_lock_file(path, *, create: bool = True) -> int:
    """A descriptor of the lock file ``path`` (opened read-write, made where missing and
    ``create``), or :class:`ForeignPathError` where the name holds something that is not a
    hamiltonia lock: a symbolic link, a special file, a file with another link (a hard link
    to someone's file would be truncated with it), or a file whose content is not a lock's.
    Nothing there is written, followed or removed."""
    path = Path(path)
    info = _lstat(path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise _foreign_lock(path, f"is {describe_mode(info.st_mode)}, not a lock file")
    flags = os.O_RDWR | _NOFOLLOW | _NONBLOCK | _CLOEXEC | (os.O_CREAT if create else 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _foreign_lock(path, "is a symbolic link, not a lock file") from None
        raise
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise _foreign_lock(path, f"is {describe_mode(opened.st_mode)}, not a lock file")
        if opened.st_nlink > 1:
            raise _foreign_lock(path, f"is a file with {opened.st_nlink} links (a hard link)")
        content = os.pread(fd, _LOCK_MAX + 1, 0)
        if len(content) > _LOCK_MAX or lock_owner(content) is None:
            raise _foreign_lock(path, "is a file that is not a hamiltonia lock")
    except BaseException:
        os.close(fd)
        raise
    return fd
