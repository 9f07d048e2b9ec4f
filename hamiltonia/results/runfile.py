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
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import stat
import tempfile
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hamiltonia.results import owned
from hamiltonia.results.errors import (
    CheckpointWarning,
    ForeignPathError,
    OutputWriteError,
    RunFileError,
)
from hamiltonia.results.lock import OutputLock, pid_alive

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

#: Version of the manifest layout: 2 records the SHA-256 of each block and of the manifest
#: itself; version 1 (no checksums) is still read.
FORMAT = 2
_READABLE_FORMATS = (1, 2)
_MANIFEST = "manifest.json"
_WARMUP = "warmup.npz"  # the kept warm-up draws, in format 1
#: The kept warm-up draws in format 2, named by their number per chain: a warm-up
#: checkpoint writes a new file, never over the one the current manifest names.
_WARMUP_NAME = re.compile(r"warmup-\d{12}\.npz")
_BLOCK_NAME = re.compile(r"block-\d{12}\.npz")
#: The field of the manifest that holds its own checksum.
_SEAL = "sha256"


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


def partial_dir(path) -> Path:
    """The folder of the unfinished run that will be written to ``path``."""
    path = Path(path)
    return path.with_name(path.name + ".partial")


def has_checkpoints(path) -> bool:
    """Whether an unfinished run for ``path`` has checkpoints to read: its folder is one
    hamiltonia made (never a link, never a user's folder of that name) and holds a manifest
    (a folder without one is a run stopped before its first checkpoint)."""
    try:
        return checkpoint_folder(path) and (partial_dir(path) / _MANIFEST).is_file()
    except OSError:
        return False


def _legacy_checkpoints(folder: Path) -> bool:
    """A checkpoint folder of an earlier version (made without a marker): one whose
    manifest hamiltonia wrote (its seal holds). Its other entries are checked by name."""
    try:
        _read_manifest(folder)
    except (RunFileError, ForeignPathError):
        return False
    return True


def checkpoint_folder(path) -> bool:
    """Whether the unfinished run of ``path`` has a checkpoint folder that hamiltonia made
    (``False`` where none is there); :class:`~hamiltonia.results.errors.ForeignPathError`
    where the name ``path.partial`` holds anything else."""
    return owned.owned_folder(partial_dir(path), owned.CHECKPOINTS, legacy=_legacy_checkpoints)


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


def _digest(data) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest_digest(manifest: dict) -> str:
    """The SHA-256 of a manifest without its own checksum field (keys sorted, so the
    digest does not depend on the order a reader keeps them in)."""
    body = {k: v for k, v in manifest.items() if k != _SEAL}
    return _digest(json.dumps(body, sort_keys=True).encode())


def seal_manifest(manifest: dict) -> dict:
    """``manifest`` with its checksum recorded (what :meth:`RunFile.append` writes)."""
    return {**manifest, _SEAL: _manifest_digest(manifest)}


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


def _read_manifest(folder: Path) -> dict:
    try:
        manifest = json.loads(owned.read_regular_file(folder / _MANIFEST))
    except FileNotFoundError:
        raise RunFileError(
            f"{folder} holds no manifest: the run stopped before its first checkpoint"
        ) from None
    except (OSError, ValueError) as err:
        raise RunFileError(f"{folder / _MANIFEST} cannot be read: {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") not in _READABLE_FORMATS:
        raise RunFileError(f"{folder / _MANIFEST} is not a hamiltonia run manifest")
    if manifest["format"] >= 2 and manifest.get(_SEAL) != _manifest_digest(manifest):
        raise RunFileError(
            f"{folder / _MANIFEST} was changed after the run wrote it (its SHA-256 does not "
            "match): a hand-edited or damaged manifest would resume a different run. Restore "
            "the original, or start the run again"
        )
    if not isinstance(manifest.get("blocks"), list):
        raise RunFileError(f"{folder / _MANIFEST} lists no blocks")
    return manifest


class PartialRun(NamedTuple):
    """What an unfinished run's folder holds (``None`` where the run keeps none)."""

    manifest: dict
    draws: np.ndarray
    stats: dict
    log_weights: np.ndarray | None
    gradients: np.ndarray | None
    warmup_draws: np.ndarray | None
    warmup_stats: dict | None


def _checked_bytes(path: Path, digest: str | None) -> bytes:
    """The bytes of ``path``, checked against the SHA-256 the manifest recorded."""
    data = owned.read_regular_file(path)
    if digest is not None and _digest(data) != digest:
        raise ValueError(
            f"{path.name} was changed after the run wrote it (its SHA-256 does not match the "
            "manifest's)"
        )
    return data


_NPY_HEADERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _load_npz(data: bytes, label: str) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file's bytes. Each array's declared shape is checked
    against the bytes stored for it before anything is allocated: a crafted header cannot
    make the reader ask for terabytes."""
    arrays = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                raise ValueError(f"{label} holds {info.filename!r}, not an array")
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                read_header = _NPY_HEADERS.get(version)
                if read_header is None:
                    raise ValueError(f"{label}: array format {version} is not supported")
                shape, _, dtype = read_header(member)
                if dtype.hasobject:
                    raise ValueError(f"{label}: {info.filename} holds Python objects")
                header = member.tell()
                declared = math.prod(shape) * dtype.itemsize
                if declared != info.file_size - header:
                    raise ValueError(
                        f"{label}: {info.filename} declares shape {shape} ({declared:,} bytes) "
                        f"but stores {info.file_size - header:,} bytes"
                    )
            with archive.open(info) as member:
                arrays[info.filename[:-4]] = np.lib.format.read_array(member, allow_pickle=False)
    return arrays


def _read_warmup(folder: Path, manifest: dict) -> tuple:
    if "warmup" not in manifest:
        return None, None
    name = manifest["warmup"]
    if not (isinstance(name, str) and (_WARMUP_NAME.fullmatch(name) or name == _WARMUP)):
        raise ValueError(f"warm-up file {name!r} is not one of this folder's")
    if manifest["format"] >= 2 and not isinstance(manifest.get("warmup_sha256"), str):
        raise ValueError("the warm-up file has no checksum in the manifest")
    data = _checked_bytes(folder / name, manifest.get("warmup_sha256"))
    arrays = _load_npz(data, name)
    stats = {k[5:]: v for k, v in arrays.items() if k.startswith("stat_")}
    return arrays["q"], stats


def _block_entry(entry, sealed: bool) -> tuple:
    """``(first, n, name, sha256, finite)`` of a manifest's block entry (format 1 records
    neither checksum nor finiteness: its draws are taken to be finite)."""
    if not isinstance(entry, list) or len(entry) != (5 if sealed else 3):
        raise ValueError(f"block entry {entry!r} is not [first, draws, name, sha256, finite]")
    first, n, name = entry[:3]
    digest, finite = entry[3:] if sealed else (None, True)
    if not (isinstance(first, int) and isinstance(n, int) and first >= 0 and n > 0):
        raise ValueError(f"block entry {entry!r} does not hold draw counts")
    if not (isinstance(name, str) and _BLOCK_NAME.fullmatch(name)):
        # Only the folder's own block files are read, whatever the manifest says.
        raise ValueError(f"block name {name!r} is not one of this folder's blocks")
    if sealed and not (isinstance(digest, str) and isinstance(finite, bool)):
        raise ValueError(f"block {name} has no checksum")
    return first, n, name, digest, finite


def read_partial(path) -> PartialRun:
    """The manifest, draws, statistics, log weights, gradients and kept warm-up of the
    unfinished run of ``path``, each block checked against its recorded SHA-256."""
    folder = partial_dir(path)
    if not checkpoint_folder(path):
        raise RunFileError(f"no unfinished run at {path} (no {folder.name})")
    manifest = _read_manifest(folder)
    sealed = manifest["format"] >= 2
    qs, stats, weights, grads = [], {}, [], []
    expected = 0
    try:
        for entry in manifest["blocks"]:
            first, n, name, digest, finite = _block_entry(entry, sealed)
            if first != expected:
                raise ValueError(f"block {name} starts at draw {first}, expected {expected}")
            block = _load_npz(_checked_bytes(folder / name, digest), name)
            if block["q"].ndim != 3 or block["q"].shape[1] != n:
                raise ValueError(f"block {name} holds {block['q'].shape[1:2]} draws, not {n}")
            if finite and not np.all(np.isfinite(block["q"])):
                # The run recorded this block's draws finite (a non-finite proposal is
                # rejected, never drawn): NaN here is damage, not a draw.
                raise ValueError(f"block {name} holds non-finite draws that the run wrote finite")
            qs.append(block["q"])
            for key, values in block.items():
                if key.startswith("stat_"):
                    stats.setdefault(key[5:], []).append(values)
            if "log_weights" in block:
                weights.append(block["log_weights"])
            if "gradients" in block:
                grads.append(block["gradients"])
            expected += n
        if expected != manifest.get("draws_done"):
            raise ValueError(f"the blocks hold {expected} draws, the manifest says "
                             f"{manifest.get('draws_done')!r}")  # fmt: skip
        warmup_draws, warmup_stats = _read_warmup(folder, manifest)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
        raise RunFileError(f"the unfinished run in {folder} cannot be read: {err}") from None
    if not qs:
        attrs = manifest.get("attrs", {})
        if not attrs.get("resume"):
            raise RunFileError(f"the unfinished run in {folder} holds no draws yet")
        # A run checkpointed in warm-up, or spread over tasks (hamiltonia.runner.executors) that
        # records its state after warm-up before its tasks make draws: no draws, but a run
        # to resume.
        qs = [np.empty((int(attrs["chains"]), 0, len(manifest["names"])))]
    try:
        q = np.concatenate(qs, axis=1)
        stats = {k: np.concatenate(v, axis=1) for k, v in stats.items()}
        log_weights = np.concatenate(weights, axis=1) if weights else None
        gradients = np.concatenate(grads, axis=1) if grads else None
    except ValueError as err:
        raise RunFileError(f"the unfinished run in {folder} cannot be read: {err}") from None
    return PartialRun(manifest, q, stats, log_weights, gradients, warmup_draws, warmup_stats)
