"""Crash-safe storage of a run in progress: checked before the work, appended as it goes.

:func:`hamiltonia.sample` with ``output=path`` writes the finished run to ``path`` (netCDF-4,
ArviZ layout). While it runs, the draws go to the folder ``path.partial/`` as they are
made, one file per block of new draws, plus a small manifest that says which blocks are
complete and from which chain state the run continues:

* every file is written under a temporary name, flushed to disk (``fsync``) and renamed
  over its final name (``os.replace``, atomic on POSIX and Windows), and the manifest is
  renamed only after the block it lists: a kill at any moment leaves the previous manifest
  or the new one, each naming only complete blocks, so the folder always loads and resumes;
* the manifest records the SHA-256 of each block and of itself, so a block or a manifest
  changed after it was written (by hand, by a copy gone wrong, by a disk) is refused with
  the file named instead of being resumed into a wrong run;
* a checkpoint writes the new draws only, so its cost does not grow with the run; one that
  fails (a full disk) is a :class:`CheckpointWarning`, the run goes on with its draws in
  memory and the next checkpoint writes everything not yet written;
* the kept warm-up draws (``save_warmup=True``) are one file, written again at each
  checkpoint of warm-up and before the first block of draws;
* the finished run is written the same way (temporary name, ``fsync``, rename), and only
  then is the folder removed. A final write that fails raises :class:`OutputWriteError`,
  which holds the finished run in memory (its ``result``) and leaves the folder in place.

Before any work the output is checked (:meth:`RunFile.open`): the folder must exist and be
writable, the path must be a regular file or not exist (never a folder, a device, a pipe or
a socket, whatever ``overwrite`` says), an existing file is replaced only with
``overwrite=True``, an unfinished run (a ``.partial`` folder) points to
:func:`hamiltonia.resume`, and a lock refuses a second writer at the start rather than
mid-run (:mod:`hamiltonia.results.lock`). The folder and the lock are names hamiltonia
derives from the user's: it makes them itself and never follows, empties or removes
anything at those names that it did not make (:mod:`hamiltonia.results.owned`). Temporary
files that a killed writer left in the folder are removed by the next run of the same
output. :func:`hamiltonia.load` and :func:`hamiltonia.resume` read an unfinished run from
its folder.

The checkpoint folder's name and its manifest (layout, seal, checked reading) are in
:mod:`hamiltonia.results.runfile_manifest`, the reading of an unfinished run back in
:mod:`hamiltonia.results.runfile_reading`; this module re-exports them.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from hamiltonia.results import owned
from hamiltonia.results.errors import (
    CheckpointWarning,
    ForeignPathError,  # noqa: F401 (named from this module)
    OutputWriteError,
    RunFileError,
)
from hamiltonia.results.lock import OutputLock, pid_alive
from hamiltonia.results.runfile_manifest import (
    _MANIFEST,
    FORMAT,
    _digest,
    _legacy_checkpoints,
    _read_manifest,
    checkpoint_folder,
    has_checkpoints,
    partial_dir,
    seal_manifest,
)
from hamiltonia.results.runfile_reading import PartialRun, read_partial

# The errors are hamiltonia.results.errors' (imported here for the code that names them
# from this module).
__all__ = [
    "PartialRun",
    "RunFile",
    "atomic_write",
    "atomic_write_bytes",
    "checked_file_path",
    "has_checkpoints",
    "partial_dir",
    "read_partial",
]


_FILE_KINDS = {
    stat.S_ISFIFO: "a named pipe",
    stat.S_ISSOCK: "a socket",
    stat.S_ISCHR: "a character device",
    stat.S_ISBLK: "a block device",
}


def _not_regular(mode: int) -> str | None:
    """What a path of mode ``mode`` is, where it is not a regular file or a folder."""
    for test, kind in _FILE_KINDS.items():
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "not a regular file"


def checked_file_path(path, label: str = "output") -> Path:
    """``path`` as a ``Path``, or :class:`RunFileError` when no run file can be written
    there: a folder, a device, a pipe or a socket (replacing one would destroy it: as root,
    ``/dev/null`` would become a regular file), a link to nothing, a missing or read-only
    folder; ``label`` names it in the message. A symbolic link to a regular file stands for
    that file: the file is replaced and the link kept."""
    try:
        path = Path(os.fspath(path)).expanduser()
    except TypeError:
        raise TypeError(f"{label} must be a path (str or os.PathLike), got {path!r}") from None
    if path.is_symlink():
        try:
            path = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise RunFileError(
                f"{label} {path} is a symbolic link to nothing; remove it or give another path"
            ) from None
    folder = path.parent if str(path.parent) else Path(".")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as err:
        raise RunFileError(f"{label} {path} cannot be examined: {err.strerror}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise RunFileError(f"{label} {path} is a folder; give a file name such as {path}/run.nc")
    if mode is not None and (kind := _not_regular(mode)):
        raise RunFileError(
            f"{label} {path} is {kind}, not a regular file: a run is written only to a "
            "regular file (and never replaces anything else, whatever overwrite says); give a "
            "file name"
        )
    if not folder.is_dir():
        raise RunFileError(f"{label} folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RunFileError(f"{label} folder {folder} is not writable")
    return path


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    """The process's umask, read without changing it where the system allows (Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore (the only portable way to read it)
    os.umask(mask)
    return mask


def _new_file_mode(path: Path) -> int:
    """The mode a replaced file keeps, or the mode ``open()`` would give a new one."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _tmp_prefix(path: Path) -> str:
    # The writer's pid is in the name, so that a later run can tell a file that a killed
    # writer left behind from one a live writer is filling.
    return f".{path.name}.{os.getpid()}."


def atomic_write(path, write, scratch=None) -> Path:
    """Call ``write(tmp_path)`` for a temporary file beside ``path`` (or in the folder
    ``scratch``, on the same file system), flush it to disk and rename it over ``path``:
    readers see the old file or the whole new one, never a part. The file gets the mode of
    the file it replaces, or that of a new file under the umask (``mkstemp`` alone would
    make it private). The temporary is made exclusively (``mkstemp``), so it never opens
    anything that was there."""
    path = Path(path)
    mode = _new_file_mode(path)
    folder = path.parent if scratch is None else Path(scratch)
    fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(path), suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def atomic_write_bytes(path, data, scratch=None) -> Path:
    """:func:`atomic_write` of ``data`` (bytes or a buffer) with plain file writes: a full
    disk or a file-size limit is an ``OSError`` here, before any library holds the file."""

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(data)

    return atomic_write(path, write, scratch)


_TMP_NAME = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]*\.tmp")


def left_by_dead_processes(folder: Path, pattern: re.Pattern) -> Iterator[tuple[Path, re.Match]]:
    """The entries of ``folder`` whose name matches ``pattern`` (which names its owner's
    process id in a group ``pid``) and whose owner is dead: what a killed process left."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is not None and not pid_alive(int(match["pid"])):
            yield entry, match


def remove_stale_temporaries(folder: Path, name: str | None = None) -> list[Path]:
    """Remove the temporary files that writers now dead left in ``folder`` (all of them,
    or those of the file ``name``); returns the paths removed. A live writer's are kept."""
    removed = []
    for entry, match in left_by_dead_processes(folder, _TMP_NAME):
        if name is not None and match["name"] != name:
            continue
        try:
            info = os.lstat(entry)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            continue  # a link or a hard link: not a temporary of ours
        try:
            entry.unlink()
        except OSError:
            continue
        removed.append(entry)
    return removed


def _npz_bytes(arrays: dict) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


class RunFile:
    """The output of one run: its checks, its lock, its blocks and its final file.

    Use :meth:`open` (which checks the path before any work), then :meth:`append` for each
    checkpoint, then :meth:`finish` with the complete result, or :meth:`close` to leave an
    unfinished run for :func:`hamiltonia.resume`.
    """

    def __init__(self, path: Path):
        self.path = path
        self.folder = partial_dir(path)
        self.lock = OutputLock(path)
        self.written = 0
        self._blocks: list[list] = []
        self._warmup_draws: int | None = None  # kept warm-up draws on disk, per chain
        self._warmup_digest: str | None = None
        self._warmup_name: str | None = None
        self._warned = False

    @property
    def _locked(self) -> bool:
        return self.lock.held

    @classmethod
    def open(cls, path, *, overwrite: bool = False, continuing: bool = False,
             lock_timeout: float = 0.0) -> RunFile:  # fmt: skip
        """Check ``path`` and take its lock; ``continuing`` appends to the unfinished run
        there (:func:`hamiltonia.resume`) instead of refusing it. ``lock_timeout``: seconds
        to wait for a lock another process holds (0: refuse at once).

        The names derived from ``path`` (its checkpoint folder and its lock) are checked
        before anything is made: something there that hamiltonia did not make is a
        :class:`~hamiltonia.results.errors.ForeignPathError` and is left as it is
        (:mod:`hamiltonia.results.owned`)."""
        path = checked_file_path(path)
        run_file = cls(path)
        run_file.lock.check()
        # The lock first: a run in progress holds a .partial folder too, and its writer is
        # what the user must hear about. The folder is checked under the lock, where no other
        # writer makes or removes it as it is read.
        run_file.lock.take(lock_timeout)
        try:
            run_file._prepare(overwrite, continuing)
        except BaseException:
            run_file.release()
            raise
        return run_file

    def _prepare(self, overwrite: bool, continuing: bool) -> None:
        """Under the lock: the checkpoint folder as this run needs it (made anew for a new
        run, read for a continued one), each step checked again now that no other writer
        can change it."""
        path, partial = self.path, self.folder
        present = checkpoint_folder(path)
        if present:
            owned.adopt_legacy(partial, owned.CHECKPOINTS)
            # Only the lock holder writes in this folder: temporaries of a dead writer are junk.
            remove_stale_temporaries(partial)
            if not (partial / _MANIFEST).exists():
                # A run stopped before its first checkpoint left no draws: nothing to keep.
                self._remove_checkpoints()
                present = False
        if not continuing:
            if present and not overwrite:
                raise RunFileError(
                    f"{path} holds an unfinished run ({partial}); continue it with "
                    f"hamiltonia.resume({str(path)!r}) or `hamiltonia resume {path}`, or "
                    "pass overwrite=True (--overwrite) to replace it"
                )
            if path.exists() and not overwrite:
                raise RunFileError(
                    f"output {path} exists; pass overwrite=True (--overwrite) to replace it"
                )
            if present:
                self._remove_checkpoints()
            owned.claim_folder(partial, owned.CHECKPOINTS)
            return
        manifest = _read_manifest(partial)
        self._blocks = [list(b) for b in manifest["blocks"]]
        self.written = int(manifest["draws_done"])
        if "warmup" in manifest:
            self._warmup_draws = int(manifest.get("warmup_draws", -1))
            self._warmup_name = manifest["warmup"]
        self._warmup_digest = manifest.get("warmup_sha256")

    def _remove_checkpoints(self) -> None:
        owned.remove_folder(self.folder, owned.CHECKPOINTS, legacy=_legacy_checkpoints)

    def release(self) -> None:
        """Give the lock back (idempotent)."""
        self.lock.release()

    def append(self, q, stats: dict, log_weights, meta: dict, gradients=None,
               warmup=None) -> bool:  # fmt: skip
        """Store the draws ``q[:, self.written:]`` (and their statistics, weights and
        gradients) as a new block, then the manifest ``meta`` (attrs, resume state, names,
        ...) naming it. ``warmup``, the kept warm-up ``(draws, stats)``, is written once,
        before the first block.

        Returns ``True`` once on disk. A write that fails with an ``OSError`` (a full disk,
        a file-size limit) is a :class:`CheckpointWarning` and returns ``False``: the run
        keeps its draws in memory, and the next call writes everything not yet written."""
        try:
            self._append(q, stats, log_weights, meta, gradients, warmup)
        except OSError as err:
            if not self._warned:
                warnings.warn(
                    f"a checkpoint of {self.path} could not be written ({err}); the run goes "
                    "on with its draws in memory and tries again at the next checkpoint",
                    CheckpointWarning,
                    stacklevel=3,
                )
                self._warned = True
            return False
        return True

    def _append(self, q, stats, log_weights, meta, gradients, warmup) -> None:
        replaced = None
        if warmup is not None and warmup[0].shape[1] != self._warmup_draws:
            # Written whole whenever it has grown (a checkpoint in warm-up), before the
            # manifest that counts it.
            arrays = {"q": warmup[0], **{f"stat_{k}": v for k, v in warmup[1].items()}}
            data = _npz_bytes(arrays)
            name = f"warmup-{warmup[0].shape[1]:012d}.npz"
            atomic_write_bytes(self.folder / name, data)
            replaced = self._warmup_name
            self._warmup_draws, self._warmup_digest = warmup[0].shape[1], _digest(data)
            self._warmup_name = name
        n = q.shape[1]
        block = None
        if n > self.written:
            first, name = self.written, f"block-{self.written:012d}.npz"
            arrays = {"q": q[:, first:n]}
            arrays.update({f"stat_{k}": v[:, first:n] for k, v in stats.items()})
            if log_weights is not None:
                arrays["log_weights"] = log_weights[:, first:n]
            if gradients is not None:
                arrays["gradients"] = gradients[:, first:n]
            data = _npz_bytes(arrays)
            atomic_write_bytes(self.folder / name, data)
            finite = bool(np.all(np.isfinite(arrays["q"])))
            block = [first, n - first, name, _digest(data), finite]
        blocks = self._blocks + ([block] if block else [])
        draws_done = n if block else self.written
        manifest = {"format": FORMAT, **meta, "blocks": blocks, "draws_done": draws_done}
        if self._warmup_draws is not None:
            manifest["warmup"] = self._warmup_name
            manifest["warmup_draws"] = self._warmup_draws
            if self._warmup_digest is not None:
                manifest["warmup_sha256"] = self._warmup_digest
        text = json.dumps(seal_manifest(manifest))
        atomic_write(self.folder / _MANIFEST, lambda tmp: tmp.write_text(text))
        # Only once the manifest names it does the block count as written.
        self._blocks, self.written = blocks, draws_done
        if replaced is not None and replaced != self._warmup_name:
            # No manifest names it any more.
            (self.folder / replaced).unlink(missing_ok=True)

    def finish(self, make_bytes) -> None:
        """Write the complete run atomically, then drop the unfinished run's folder and the
        lock. ``make_bytes()`` returns the file's bytes, made in memory before anything is
        written. A failed write raises :class:`OutputWriteError` (the caller attaches the
        run) and keeps the folder."""
        data = make_bytes()
        try:
            # The temporary in the checkpoint folder, which is hamiltonia's: nothing of it is
            # ever left beside the user's files.
            atomic_write_bytes(self.path, data, scratch=self.folder)
        except OSError as err:
            raise OutputWriteError(
                f"the finished run could not be written to {self.path}: {err}",
                path=self.path,
                partial=self.folder if (self.folder / _MANIFEST).exists() else None,
            ) from err
        self._remove_checkpoints()
        self.release()

    def close(self) -> None:
        """Leave the unfinished run where it is (a folder without draws is removed) and give
        the lock back."""
        if self._locked and owned.is_owned(self.folder, owned.CHECKPOINTS):
            if not (self.folder / _MANIFEST).exists():
                self._remove_checkpoints()
        self.release()
