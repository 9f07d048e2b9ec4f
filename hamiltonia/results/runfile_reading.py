"""Reading an unfinished run back from its checkpoint folder: the manifest's blocks and kept
warm-up draws, each file checked against the SHA-256 the manifest recorded and each array's
declared shape against the bytes stored for it, before anything is allocated
(:func:`read_partial`, which :func:`hamiltonia.load` and :func:`hamiltonia.resume` use).
"""

from __future__ import annotations

import io
import math
import re
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hamiltonia.results import owned
from hamiltonia.results.errors import RunFileError
from hamiltonia.results.runfile_manifest import (
    _digest,
    _read_manifest,
    checkpoint_folder,
    partial_dir,
)

__all__ = ["PartialRun", "read_partial"]

_WARMUP = "warmup.npz"  # the kept warm-up draws, in format 1
#: The kept warm-up draws in format 2, named by their number per chain: a warm-up
#: checkpoint writes a new file, never over the one the current manifest names.
_WARMUP_NAME = re.compile(r"warmup-\d{12}\.npz")
_BLOCK_NAME = re.compile(r"block-\d{12}\.npz")


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
