"""Finding a verified canonical file: local mirror, per-user cache, or download.

Resolution order for :func:`resolve` (used by :func:`hamiltonia.datasets.path`):

1. **Mirror.** If the environment variable ``HAMILTONIA_DATA`` is set (non-empty), the file is
   ``$HAMILTONIA_DATA/<file>``. The mirror is authoritative: a missing file there raises
   :class:`DatasetMirrorMissingError` (nothing is downloaded behind the user's back).
2. **Cache.** Otherwise ``<cache>/datasets/<file>``, where ``<cache>`` is ``$HAMILTONIA_CACHE``,
   else ``$XDG_CACHE_HOME/hamiltonia``, else ``~/.cache/hamiltonia``.
3. **Download.** Otherwise the original public source is downloaded (:func:`download`, urllib
   with a timeout), converted to the canonical CSV (:mod:`.parse`), checked against the
   canonical sha256, and written atomically into the cache (a temporary file in the same folder,
   then :func:`os.replace`).

Every file returned has the sha256 recorded in the registry; a mismatch raises
:class:`DatasetChecksumError`. Digests are remembered per (path, size, mtime) within a process,
so repeated calls do not re-hash unchanged files.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import tempfile
import urllib.request
from pathlib import Path

from hamiltonia.datasets.registry import DatasetInfo

__all__ = [
    "ENV_CACHE",
    "ENV_MIRROR",
    "TIMEOUT",
    "DatasetChecksumError",
    "DatasetMirrorMissingError",
    "DatasetUnavailableError",
    "cache_dir",
    "cache_root",
    "download",
    "mirror_dir",
    "resolve",
    "sha256_file",
    "status",
    "verify",
]

#: Environment variable naming the local mirror folder of canonical files.
ENV_MIRROR = "HAMILTONIA_DATA"
#: Environment variable overriding the per-user cache root.
ENV_CACHE = "HAMILTONIA_CACHE"
#: Seconds before a download attempt gives up.
TIMEOUT = 30.0

_USER_AGENT = "hamiltonia-datasets (+https://github.com; urllib)"


class DatasetUnavailableError(OSError):
    """The data set is neither in the mirror nor in the cache, and could not be downloaded."""


class DatasetMirrorMissingError(DatasetUnavailableError, FileNotFoundError):
    """``HAMILTONIA_DATA`` is set but the file is not in that folder."""


class DatasetChecksumError(ValueError):
    """A file (or downloaded and converted source) does not have the canonical sha256.

    Attributes
    ----------
    file : str
        The file or URL that was checked.
    expected, actual : str
        The registered and the computed sha256.
    """

    def __init__(self, file, expected: str, actual: str, note: str = ""):
        self.file = str(file)
        self.expected = expected
        self.actual = actual
        message = f"checksum mismatch for {self.file}: expected sha256 {expected}, got {actual}"
        super().__init__(message + (f"; {note}" if note else ""))


def mirror_dir() -> Path | None:
    """The mirror folder from ``HAMILTONIA_DATA``, or ``None`` when unset or empty."""
    value = os.environ.get(ENV_MIRROR, "").strip()
    return Path(value).expanduser() if value else None


def cache_root() -> Path:
    """The per-user cache root: ``$HAMILTONIA_CACHE``, else ``$XDG_CACHE_HOME/hamiltonia``,
    else ``~/.cache/hamiltonia``."""
    root = os.environ.get(ENV_CACHE, "").strip()
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "hamiltonia"


def cache_dir() -> Path:
    """Folder of cached canonical files: ``<cache root>/datasets`` (see :func:`cache_root`).
    The folder is created only when a file is written."""
    return cache_root() / "datasets"


_DIGESTS: dict[tuple[str, int, int], str] = {}


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path) -> str:
    """Hex sha256 of a file (remembered per path, size and modification time)."""
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    digest = _DIGESTS.get(key)
    if digest is None:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        digest = _DIGESTS[key] = h.hexdigest()
    return digest


def verify(path, expected: str, *, note: str = "") -> Path:
    """Return ``path`` if its sha256 is ``expected``, else raise :class:`DatasetChecksumError`."""
    actual = sha256_file(path)
    if actual != expected:
        raise DatasetChecksumError(path, expected, actual, note)
    return Path(path)


def download(url: str, *, timeout: float = TIMEOUT) -> bytes:
    """The body of ``url`` (HTTP GET with urllib and a timeout).

    Raises
    ------
    OSError, http.client.HTTPException
        Any network failure (``urllib.error.URLError``, ``HTTPError``, timeouts, truncated
        responses), unchanged.
    """
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _download_and_convert(info: DatasetInfo, target: Path, timeout: float) -> Path:
    attempts: list[str] = []
    mismatch: DatasetChecksumError | None = None
    for urls in info.sources:
        label = " + ".join(urls)
        try:
            parts = [download(url, timeout=timeout) for url in urls]
        except (OSError, http.client.HTTPException) as err:
            attempts.append(f"{label}: {type(err).__name__}: {err}")
            continue
        try:
            data = info.convert(parts, source=label)
        except ValueError as err:
            attempts.append(f"{label}: could not convert: {err}")
            continue
        actual = _sha256_bytes(data)
        if actual != info.sha256:
            attempts.append(f"{label}: converted file has sha256 {actual}")
            if mismatch is None:
                mismatch = DatasetChecksumError(
                    f"{info.file} converted from {label}",
                    info.sha256,
                    actual,
                    "the source has changed since the registry was made; set "
                    f"{ENV_MIRROR} to a folder holding the canonical {info.file}",
                )
            continue
        try:
            _write_atomic(target, data)
        except OSError as err:
            raise DatasetUnavailableError(
                f"downloaded {info.file} but could not write it to the cache {target}: {err}; "
                f"set {ENV_CACHE} to a writable folder, or {ENV_MIRROR} to a local mirror"
            ) from err
        return target
    if mismatch is not None:
        raise mismatch
    tried = "\n  ".join(attempts)
    raise DatasetUnavailableError(
        f"data set {info.name!r} ({info.file}) is not available: {ENV_MIRROR} is not set, "
        f"it is not in the cache ({target}), and downloading it failed:\n  {tried}\n"
        f"Set {ENV_MIRROR} to a folder holding {info.file} (a local mirror of the canonical "
        "files), or retry with network access."
    )


def resolve(info: DatasetInfo, *, timeout: float = TIMEOUT) -> Path:
    """Path of the verified canonical file of ``info`` (mirror, then cache, then download)."""
    mirror = mirror_dir()
    if mirror is not None:
        path = mirror / info.file
        if not mirror.is_dir():
            raise DatasetMirrorMissingError(
                f"data set {info.name!r}: the local mirror HAMILTONIA_DATA={mirror} is not a "
                "folder (unset HAMILTONIA_DATA to use the cache or download)"
            )
        if not path.is_file():
            raise DatasetMirrorMissingError(
                f"data set {info.name!r}: file {path} not found in the local mirror "
                f"{ENV_MIRROR}={mirror} (unset {ENV_MIRROR} to use the cache or download)"
            )
        return verify(path, info.sha256, note=f"the local mirror {ENV_MIRROR}={mirror}")
    cached = cache_dir() / info.file
    if cached.is_file():
        return verify(
            cached, info.sha256, note=f"delete the cached file {cached} to download it again"
        )
    return _download_and_convert(info, cached, timeout)


def status(info: DatasetInfo) -> str:
    """``"mirrored"``, ``"cached"`` or ``"missing"``: where :func:`resolve` would look.

    Only the presence of the file is checked (not its checksum). With ``HAMILTONIA_DATA`` set,
    the mirror alone counts, as in :func:`resolve`.
    """
    mirror = mirror_dir()
    if mirror is not None:
        return "mirrored" if (mirror / info.file).is_file() else "missing"
    return "cached" if (cache_dir() / info.file).is_file() else "missing"
