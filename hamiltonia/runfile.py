"""Crash-safe storage of a run in progress: checked before the work, appended as it goes.

:func:`hamiltonia.sample` with ``output=path`` writes the finished run to ``path`` (netCDF-4,
ArviZ layout). While it runs, the draws go to the folder ``path.partial/`` as they are
made, one file per block of new draws, plus a small manifest that says which blocks are
complete and from which chain state the run continues:

* every file is written under a temporary name, flushed to disk (``fsync``) and renamed
  over its final name (``os.replace``, atomic on POSIX and Windows), and the manifest is
  renamed only after the block it lists: a kill at any moment leaves the previous manifest
  or the new one, each naming only complete blocks, so the folder always loads and resumes;
* a checkpoint writes the new draws only, so its cost does not grow with the run;
* the kept warm-up draws (``save_warmup=True``) are one file, written before the first block;
* the finished run is written the same way (temporary name, ``fsync``, rename), and only
  then is the folder removed.

Before any work the output is checked (:meth:`RunFile.open`): the folder must exist and be
writable, the path must not be a folder, an existing file is replaced only with
``overwrite=True``, an unfinished run (a ``.partial`` folder) points to
:func:`hamiltonia.resume`, and a lock file refuses a second writer at the start rather than
mid-run. :func:`hamiltonia.load` and :func:`hamiltonia.resume` read an unfinished run from
its folder.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["PartialRun", "RunFile", "RunFileError", "atomic_write", "partial_dir", "read_partial"]

#: Version of the manifest layout.
FORMAT = 1
_MANIFEST = "manifest.json"
_WARMUP = "warmup.npz"
_BLOCK_NAME = re.compile(r"block-\d{12}\.npz")


class RunFileError(OSError):
    """The output path cannot take this run, or an unfinished run cannot be read (the
    message names the path and what to do)."""


def checked_file_path(path, label: str = "output") -> Path:
    """``path`` as a ``Path``, or :class:`RunFileError` when no file can be written there
    (a folder, a missing or read-only folder); ``label`` names it in the message."""
    path = Path(os.fspath(path)).expanduser()
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise RunFileError(f"{label} {path} is a folder; give a file name such as {path}/run.nc")
    if not folder.is_dir():
        raise RunFileError(f"{label} folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RunFileError(f"{label} folder {folder} is not writable")
    return path


def partial_dir(path) -> Path:
    """The folder of the unfinished run that will be written to ``path``."""
    path = Path(path)
    return path.with_name(path.name + ".partial")


def _lock_path(path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".lock")


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path, write) -> Path:
    """Call ``write(tmp_path)`` for a temporary file beside ``path``, flush it to disk and
    rename it over ``path``: readers see the old file or the whole new one, never a part."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    except OSError:
        return False
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process that has died but is not yet reaped (Linux; elsewhere ``False``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].startswith("Z")


class RunFile:
    """The output of one run: its checks, its lock, its blocks and its final file.

    Use :meth:`open` (which checks the path before any work), then :meth:`append` for each
    checkpoint, then :meth:`finish` with the complete result, or :meth:`close` to leave an
    unfinished run for :func:`hamiltonia.resume`.
    """

    def __init__(self, path: Path):
        self.path = path
        self.folder = partial_dir(path)
        self.lock = _lock_path(path)
        self.written = 0
        self._blocks: list[list] = []
        self._warmup_written = False
        self._locked = False

    @classmethod
    def open(cls, path, *, overwrite: bool = False, continuing: bool = False) -> RunFile:
        """Check ``path`` and take its lock; ``continuing`` appends to the unfinished run
        there (:func:`hamiltonia.resume`) instead of refusing it."""
        path = checked_file_path(path)
        partial = partial_dir(path)
        run_file = cls(path)
        # The lock first: a run in progress holds a .partial folder too, and its writer is
        # what the user must hear about.
        run_file._take_lock()
        try:
            if partial.is_dir() and not (partial / _MANIFEST).exists():
                # A run stopped before its first checkpoint left no draws: nothing to keep.
                _remove_folder(partial)
            if not continuing:
                if partial.exists() and not overwrite:
                    raise RunFileError(
                        f"{path} holds an unfinished run ({partial}); continue it with "
                        f"hamiltonia.resume({str(path)!r}) or `hamiltonia resume {path}`, or "
                        "pass overwrite=True (--overwrite) to replace it"
                    )
                if path.exists() and not overwrite:
                    raise RunFileError(
                        f"output {path} exists; pass overwrite=True (--overwrite) to replace it"
                    )
                if partial.exists():
                    _remove_folder(partial)
                partial.mkdir()
            else:
                manifest = _read_manifest(partial)
                run_file._blocks = manifest["blocks"]
                run_file.written = int(manifest["draws_done"])
                run_file._warmup_written = "warmup" in manifest
        except BaseException:
            run_file.release()
            raise
        return run_file

    def _take_lock(self) -> None:
        for _ in range(2):
            try:
                fd = os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    owner = int(self.lock.read_text().strip() or 0)
                except (OSError, ValueError):
                    owner = 0
                if _pid_alive(owner) and owner != os.getpid():
                    raise RunFileError(
                        f"output {self.path} is being written by another process (pid {owner}, "
                        f"lock {self.lock}); wait for it or choose another output"
                    ) from None
                self.lock.unlink(missing_ok=True)  # a lock its process left behind
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            self._locked = True
            return
        raise RunFileError(f"could not take the lock {self.lock}")

    def release(self) -> None:
        """Give the lock back (idempotent)."""
        if self._locked:
            self.lock.unlink(missing_ok=True)
            self._locked = False

    def append(self, q, stats: dict, log_weights, meta: dict, gradients=None,
               warmup=None) -> None:  # fmt: skip
        """Store the draws ``q[:, self.written:]`` (and their statistics, weights and
        gradients) as a new block, then the manifest ``meta`` (attrs, resume state, names,
        ...) naming it. ``warmup``, the kept warm-up ``(draws, stats)``, is written once,
        before the first block."""
        if warmup is not None and not self._warmup_written:
            arrays = {"q": warmup[0], **{f"stat_{k}": v for k, v in warmup[1].items()}}
            atomic_write(self.folder / _WARMUP, lambda tmp: _savez(tmp, arrays))
            self._warmup_written = True
        n = q.shape[1]
        if n > self.written:
            first, name = self.written, f"block-{self.written:012d}.npz"
            arrays = {"q": q[:, first:n]}
            arrays.update({f"stat_{k}": v[:, first:n] for k, v in stats.items()})
            if log_weights is not None:
                arrays["log_weights"] = log_weights[:, first:n]
            if gradients is not None:
                arrays["gradients"] = gradients[:, first:n]

            atomic_write(self.folder / name, lambda tmp, arrays=arrays: _savez(tmp, arrays))
            self._blocks.append([first, n - first, name])
            self.written = n
        manifest = {"format": FORMAT, **meta, "blocks": self._blocks, "draws_done": self.written}
        if self._warmup_written:
            manifest["warmup"] = _WARMUP
        text = json.dumps(manifest)
        atomic_write(self.folder / _MANIFEST, lambda tmp: tmp.write_text(text))

    def finish(self, save) -> None:
        """Write the complete run with ``save(tmp_path)`` atomically, then drop the
        unfinished run's folder and the lock."""
        atomic_write(self.path, save)
        _remove_folder(self.folder)
        self.release()

    def close(self) -> None:
        """Leave the unfinished run where it is (a folder without draws is removed) and give
        the lock back."""
        if self._locked and self.folder.is_dir() and not (self.folder / _MANIFEST).exists():
            _remove_folder(self.folder)
        self.release()


def _savez(path: Path, arrays: dict) -> None:
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _remove_folder(folder: Path) -> None:
    if not folder.exists():
        return
    for item in folder.iterdir():
        item.unlink()
    folder.rmdir()


def _read_manifest(folder: Path) -> dict:
    try:
        manifest = json.loads((folder / _MANIFEST).read_text())
    except FileNotFoundError:
        raise RunFileError(
            f"{folder} holds no manifest: the run stopped before its first checkpoint"
        ) from None
    except (OSError, ValueError) as err:
        raise RunFileError(f"{folder / _MANIFEST} cannot be read: {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RunFileError(f"{folder / _MANIFEST} is not a hamiltonia run manifest")
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


def _read_warmup(folder: Path, manifest: dict) -> tuple:
    if "warmup" not in manifest:
        return None, None
    if manifest["warmup"] != _WARMUP:
        raise ValueError(f"warm-up file {manifest['warmup']!r} is not this folder's")
    with np.load(folder / _WARMUP, allow_pickle=False) as arrays:
        stats = {k[5:]: arrays[k] for k in arrays.files if k.startswith("stat_")}
        return arrays["q"], stats


def read_partial(path) -> PartialRun:
    """The manifest, draws, statistics, log weights, gradients and kept warm-up of the
    unfinished run of ``path``."""
    folder = partial_dir(path)
    manifest = _read_manifest(folder)
    qs, stats, weights, grads = [], {}, [], []
    expected = 0
    try:
        for first, n, name in manifest["blocks"]:
            # Only the folder's own block files are read, whatever the manifest says.
            if not (isinstance(name, str) and _BLOCK_NAME.fullmatch(name)):
                raise ValueError(f"block name {name!r} is not one of this folder's blocks")
            if first != expected:
                raise ValueError(f"block {name} starts at draw {first}, expected {expected}")
            with np.load(folder / name, allow_pickle=False) as block:
                if block["q"].shape[1] != n:
                    raise ValueError(f"block {name} holds {block['q'].shape[1]} draws, not {n}")
                qs.append(block["q"])
                for key in block.files:
                    if key.startswith("stat_"):
                        stats.setdefault(key[5:], []).append(block[key])
                if "log_weights" in block.files:
                    weights.append(block["log_weights"])
                if "gradients" in block.files:
                    grads.append(block["gradients"])
            expected += n
        warmup_draws, warmup_stats = _read_warmup(folder, manifest)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
        raise RunFileError(f"the unfinished run in {folder} cannot be read: {err}") from None
    if not qs:
        attrs = manifest.get("attrs", {})
        if not (attrs.get("executor") and attrs.get("resume")):
            raise RunFileError(f"the unfinished run in {folder} holds no draws yet")
        # A run spread over tasks (hamiltonia.executors) records its state after warm-up
        # before its tasks make draws: no draws, but a run to resume.
        qs = [np.empty((int(attrs["chains"]), 0, len(manifest["names"])))]
    q = np.concatenate(qs, axis=1)
    stats = {k: np.concatenate(v, axis=1) for k, v in stats.items()}
    log_weights = np.concatenate(weights, axis=1) if weights else None
    gradients = np.concatenate(grads, axis=1) if grads else None
    return PartialRun(manifest, q, stats, log_weights, gradients, warmup_draws, warmup_stats)
