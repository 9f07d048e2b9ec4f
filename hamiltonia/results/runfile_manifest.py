"""The checkpoint folder of an unfinished run and its manifest: the folder's name
(``path.partial``), whether hamiltonia made it, the manifest's layout and its seal (the
SHA-256 of the manifest itself), and reading the manifest back, checked.

:class:`~hamiltonia.results.runfile.RunFile` writes the folder;
:mod:`hamiltonia.results.runfile_reading` reads its draws back.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hamiltonia.results import owned
from hamiltonia.results.errors import ForeignPathError, RunFileError

__all__ = [
    "FORMAT",
    "checkpoint_folder",
    "has_checkpoints",
    "partial_dir",
    "seal_manifest",
]

#: Version of the manifest layout: 2 records the SHA-256 of each block and of the manifest
#: itself; version 1 (no checksums) is still read.
FORMAT = 2
_READABLE_FORMATS = (1, 2)
_MANIFEST = "manifest.json"
#: The field of the manifest that holds its own checksum.
_SEAL = "sha256"


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


def _digest(data) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest_digest(manifest: dict) -> str:
    """The SHA-256 of a manifest without its own checksum field (keys sorted, so the
    digest does not depend on the order a reader keeps them in)."""
    body = {k: v for k, v in manifest.items() if k != _SEAL}
    return _digest(json.dumps(body, sort_keys=True).encode())


def seal_manifest(manifest: dict) -> dict:
    """``manifest`` with its checksum recorded (what :meth:`RunFile.append
    <hamiltonia.results.runfile.RunFile.append>` writes)."""
    return {**manifest, _SEAL: _manifest_digest(manifest)}


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
