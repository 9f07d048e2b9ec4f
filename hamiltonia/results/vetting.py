"""Checking an HDF5 run file before any reader touches it.

:func:`hamiltonia.load` (and :func:`hamiltonia.resume`, ``hamiltonia summary``, ``hamiltonia
plot``) reads netCDF-4 files, which are HDF5 files, and a run file is often one that someone
else sent. HDF5 lets a file point elsewhere and declare what it likes, so that a reader
that simply reads it can be made to:

* read another file: a dataset with *external storage* keeps its bytes in any file of the
  reader's machine (which then come back as draws), a *virtual dataset* maps other HDF5
  files, and an *external link* names an object of another file (a soft link is allowed
  only to a dataset of the file). A named pipe there makes the reader wait forever;
* run code or allocate what the file says: a filter other than netCDF-4's (a plugin found
  on ``HDF5_PLUGIN_PATH``; szip and lzf size their output buffer from numbers in the file);
* exhaust memory: a compressed dataset declares its shape, not its data, so a few kB can
  declare 17.9 GB; and HDF5's deflate filter grows its buffer until the stream ends, so a
  chunk declared as a few hundred bytes inflates to all its stream holds (1 GB from 1 MB),
  which HDF5 then keeps in its chunk cache.

:func:`check_run_file` walks the file with h5py, read-only, before xarray opens it, and
refuses any of these with a :class:`~hamiltonia.results.errors.RunFileError` naming the
file, the dataset or link, and what to do. The walk itself never leaves the file: it visits
links without resolving them (``H5Lvisit``, which descends through hard links only), opens
objects only by paths of hard links, and asks a dataset its shape only once it knows the
dataset is not virtual (HDF5 opens a virtual dataset's sources to learn an unlimited shape).

Memory is bounded by what the process may still allocate (:func:`memory_limits`): the data
a file declares, counted twice (the arrays read, and the run made from them), plus one chunk
buffer, plus what HDF5 may allocate inflating compressed chunks. A deflate stream inflates to
at most 1032 times its size, and HDF5 doubles its buffer as it goes; a chunk whose worst case
would not fit is inflated here first, with its output bounded by the chunk's declared size,
and refused if it would exceed it. So no read allocates more than the file declares, and
what it declares fits. Not bounded here: variable-length strings and attributes, whose
sizes HDF5 learns only as it reads them (netCDF-4 keeps them small: names, units, labels).
"""

from __future__ import annotations

import math
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path

from hamiltonia._system import available_memory
from hamiltonia.results.errors import RunFileError

__all__ = ["check_run_file", "memory_limits"]

#: h5netcdf marks a dimension without coordinate values with a dataset of this name
#: attribute that stores nothing (netCDF-4's convention): not a variable, never read.
_DIMENSION_ONLY = b"This is a netCDF dimension but not a netCDF variable"

_DEFLATE, _SHUFFLE, _FLETCHER32 = 1, 2, 3
#: The HDF5 filters netCDF-4 writes, by id: their output is bounded by the chunk (shuffle
#: keeps the size, fletcher32 adds a 4-byte checksum, deflate is checked here).
_NETCDF_FILTERS = {_DEFLATE: "deflate (gzip)", _SHUFFLE: "shuffle", _FLETCHER32: "fletcher32"}
#: Names of other registered filters, for the messages (https://github.com/HDFGroup/hdf5_plugins).
_OTHER_FILTERS = {4: "szip", 5: "nbit", 6: "scaleoffset", 307: "bzip2", 32000: "lzf",
                  32001: "blosc", 32004: "lz4", 32008: "bitshuffle", 32015: "zstd"}  # fmt: skip
#: Most bytes deflate makes of one byte of stream (zlib's limit, 1032:1).
_INFLATE_RATIO = 1032
#: Copies of the data that reading makes: the arrays xarray reads, and the run's own arrays
#: that :meth:`hamiltonia.Result.from_datatree` makes of them (draws stacked as floats).
_COPIES = 2

_ASK = "ask for the run as hamiltonia or ArviZ writes it (Result.save, to_netcdf)"


def check_run_file(path: Path) -> None:
    """Refuse, before any reader opens it, a run file whose reading would leave it, block
    or exhaust memory (see the module's description).

    Parameters
    ----------
    path : pathlib.Path
        The run file. One that is not HDF5 is left to the reader, which says what it is.

    Raises
    ------
    RunFileError
        Naming the file, the dataset or link concerned, and what to do.
    """
    import h5py

    _check_regular(path)
    try:
        file = h5py.File(path, "r")
    except OSError:
        return  # not HDF5: the reader says what it is
    with file:
        walk = _Walk(path, file)
        try:
            walk.run()
            walk.check_memory(memory_limits())
        except RunFileError:
            raise
        except (OSError, RuntimeError, KeyError, ValueError, TypeError) as err:
            # HDF5 could not read its own structure: the reader would fail the same way.
            raise walk.damaged(f"HDF5 cannot read its structure ({err})") from None


def memory_limits() -> list[tuple[int, str]]:
    """What this process may still allocate, as ``(bytes, what sets it)``: the memory the
    system has available and, where one is set, the address-space limit (``ulimit -v``) less
    the address space in use. Empty where neither is known."""
    limits = []
    available = available_memory()
    if available is not None:
        limits.append((available, "the memory available"))
    try:
        import resource
    except ImportError:  # not POSIX
        return limits
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        used = _address_space_in_use()
        what = f"the address-space limit (ulimit -v) of {_size(soft)} less {_size(used)} in use"
        limits.append((max(soft - used, 0), what))
    return limits


def _address_space_in_use() -> int:
    """Bytes of address space this process maps (``VmSize``), 0 where it cannot be read."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _check_regular(path: Path) -> None:
    """Refuse a path that is not a regular file: opening a named pipe waits for a writer,
    and a device is no run."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # the reader says why it cannot be read
    if not stat.S_ISREG(mode):
        kinds = [(stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
                 (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")]  # fmt: skip
        kind = next((name for test, name in kinds if test(mode)), "not a file")
        raise RunFileError(
            f"{path} is not a regular file (it is {kind}), and hamiltonia reads a run only "
            "from a file: give the path of the run file itself"
        )


def _size(n: int) -> str:
    """``n`` bytes, in the unit that reads best."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def _filter_name(code: int) -> str:
    known = _NETCDF_FILTERS.get(code) or _OTHER_FILTERS.get(code)
    return f"filter {code} ({known})" if known else f"filter {code} (not a registered one)"


@dataclass
class _Chunk:
    """A compressed chunk whose inflation is not yet bounded."""

    dataset: str
    path: bytes  # as HDF5 names it, hard links only
    offset: tuple[int, ...]
    worst: int  # bytes HDF5 may allocate inflating it
    bound: int  # bytes it may honestly decode to at any step (the chunk, its checksums)
    pipeline: tuple[tuple[int, tuple[int, ...]], ...]  # (filter id, its values), as written
    mask: int  # the filters skipped for this chunk, one bit each


class _Walk:
    """One pass over the file's links and datasets, refusing what would leave the file and
    recording what reading would allocate."""

    def __init__(self, path: Path, file) -> None:
        self.path = path
        self.file = file
        self.file_size = os.stat(path).st_size
        self.datasets: set[str] = set()
        self.soft_links: list[tuple[str, str]] = []
        self.declared: dict[str, int] = {}
        self.chunk_buffer = ("", 0)
        self.inflatable: list[_Chunk] = []

    def refuse(self, problem: str, advice: str = _ASK) -> RunFileError:
        return RunFileError(f"{self.path} is refused unread: {problem}; {advice}")

    def damaged(self, problem: str) -> RunFileError:
        return RunFileError(
            f"{self.path} is not a readable hamiltonia run file: {problem} (a damaged or "
            "crafted file)"
        )

    def run(self) -> None:
        self.group(self.file.id, "/")
        refusals: list[RunFileError] = []

        def visit(name: bytes, info) -> int | None:
            try:
                self.link(name, info)
            except RunFileError as err:
                refusals.append(err)
                return 1  # stops the visit
            return None

        self.file.id.links.visit(visit, info=True)
        if refusals:
            raise refusals[0]
        for name, target in self.soft_links:
            resolved = _absolute(name, target)
            if resolved not in self.datasets:
                raise self.refuse(
                    f"{name} is a link to {target}, which is not a dataset of this file "
                    "(netCDF-4 files hold no links, and reading would follow it)"
                )
            self.declared[name] = self.declared.get(resolved, 0)

    def link(self, raw: bytes, info) -> None:
        import h5py

        name = raw.decode("utf-8", "backslashreplace")
        if info.type == h5py.h5l.TYPE_HARD:
            # The visit descends through hard links only, so this path is all hard links.
            obj = h5py.h5o.open(self.file.id, raw)
            if isinstance(obj, h5py.h5d.DatasetID):
                self.dataset(name, obj, raw)
            elif isinstance(obj, h5py.h5g.GroupID):
                self.group(obj, name)
        elif info.type == h5py.h5l.TYPE_SOFT:
            self.soft_links.append(
                (name, self.file.id.links.get_val(raw).decode("utf-8", "backslashreplace"))
            )
        elif info.type == h5py.h5l.TYPE_EXTERNAL:
            other, target = (
                v.decode("utf-8", "backslashreplace") for v in self.file.id.links.get_val(raw)
            )
            raise self.refuse(
                f"{name} is a link to {target} in another file, {other} (an HDF5 external "
                "link), which reading would open"
            )
        else:
            raise self.refuse(
                f"{name} is a link of a kind that programs define (HDF5 link type "
                f"{info.type}), which reading would resolve"
            )

    def group(self, group, name: str) -> None:
        import h5py

        # The visit enters a group once, however many links lead to it; a reader would read
        # it once for each, beyond the declared total (and a link to an ancestor is a loop).
        places = h5py.h5o.get_info(group).rc
        if places > 1:
            raise self.refuse(
                f"the group {name} is linked from {places} places (a netCDF-4 group has one "
                "name, and a reader would read it once for each)"
            )

    def dataset(self, name: str, dataset, raw: bytes) -> None:
        import h5py

        dcpl = dataset.get_create_plist()
        layout = dcpl.get_layout()
        if layout == h5py.h5d.VIRTUAL:
            sources = sorted({dcpl.get_virtual_filename(i)
                              for i in range(dcpl.get_virtual_count())})  # fmt: skip
            raise self.refuse(
                f"{name} is a virtual dataset, whose data HDF5 reads from other files "
                f"({', '.join(sources)}), which reading would open"
            )
        if dcpl.get_external_count() > 0:
            files = [dcpl.get_external(i)[0].decode("utf-8", "backslashreplace")
                     for i in range(dcpl.get_external_count())]  # fmt: skip
            raise self.refuse(
                f"{name} keeps its data outside the file, in {', '.join(files)} (HDF5 "
                "external storage), and reading it would read that file instead"
            )
        pipeline = []
        for i in range(dcpl.get_nfilters()):
            code, _, values, _ = dcpl.get_filter(i)
            if code not in _NETCDF_FILTERS:
                raise self.refuse(
                    f"{name} is compressed with {_filter_name(code)}, which netCDF-4 files do "
                    "not use (hamiltonia reads data stored with deflate, shuffle and "
                    "fletcher32 only)",
                    "re-compress it with gzip (h5repack -f GZIP=4 in.nc out.nc) where it "
                    "was made, or ask for the run as hamiltonia or ArviZ writes it",
                )
            if any(code == c for c, _ in pipeline):
                raise self.refuse(f"{name} applies {_filter_name(code)} twice")
            pipeline.append((code, tuple(values)))
        # Only now is the shape safe to ask (a virtual one may open its sources).
        itemsize = dataset.get_type().get_size()
        shape = dataset.shape
        declared = 0 if shape is None else math.prod(shape) * itemsize  # None: no dataspace
        self.datasets.add(name)
        if _is_dimension_only(dataset):
            return
        self.declared[name] = declared
        if not pipeline and declared > dataset.get_storage_size():
            raise self.damaged(
                f"{name} declares {declared:,} bytes but stores {dataset.get_storage_size():,}"
            )
        if layout == h5py.h5d.CHUNKED:
            chunk_bytes = math.prod(dcpl.get_chunk()) * itemsize
            if chunk_bytes > self.chunk_buffer[1]:
                self.chunk_buffer = (name, chunk_bytes)
            if pipeline:
                self.chunks(name, raw, dataset, tuple(pipeline), chunk_bytes)

    def chunks(self, name: str, raw: bytes, dataset, pipeline, chunk_bytes: int) -> None:
        """Record the chunks whose inflation could exceed their size; refuse one stored
        beyond the end of the file (HDF5 allocates a chunk's stored size to read it)."""
        stored = []
        if hasattr(dataset, "chunk_iter"):
            try:
                dataset.chunk_iter(stored.append)
            except (NotImplementedError, RuntimeError):  # HDF5 older than 1.12.3
                stored = []
        if not stored:
            stored = [dataset.get_chunk_info(i) for i in range(dataset.get_num_chunks())]
        codes = [code for code, _ in pipeline]
        for info in stored:
            if info.byte_offset is None or info.byte_offset + info.size > self.file_size:
                raise self.damaged(
                    f"{name} has a chunk, at {tuple(info.chunk_offset)}, stored beyond the "
                    "end of the file"
                )
            applied = [c for i, c in enumerate(codes) if not info.filter_mask & (1 << i)]
            if _DEFLATE not in applied:
                continue
            bound = chunk_bytes + 4 * applied.count(_FLETCHER32)
            worst = 2 * _INFLATE_RATIO * info.size
            if worst > 2 * bound:
                self.inflatable.append(_Chunk(name, raw, tuple(info.chunk_offset), worst,
                                              bound, pipeline, info.filter_mask))  # fmt: skip

    def check_memory(self, limits: list[tuple[int, str]]) -> None:
        """Refuse a file whose reading needs more than ``limits`` allow; inflate, bounded,
        the chunks whose worst case would not fit, largest first, and refuse a bomb."""
        pending = sorted(self.inflatable, key=lambda c: c.worst, reverse=True)
        if not limits:  # nothing known: bound every chunk
            for chunk in pending:
                self.inflate(chunk)
            return
        limit = min(size for size, _ in limits)
        allowed = "; ".join(f"{_size(size)}, {what}" for size, what in limits)
        name, chunk_bytes = self.chunk_buffer
        if chunk_bytes > limit:
            raise RunFileError(
                f"{self.path} cannot be read here: {name} is stored in chunks of "
                f"{_size(chunk_bytes)}, and HDF5 reads a chunk whole, more than this process "
                f"may allocate ({allowed}); read it where more memory is free, or re-chunk it "
                "where it was made (h5repack -l CHUNK=...)"
            )
        total = sum(self.declared.values())
        need = _COPIES * total + chunk_bytes
        if need > limit:
            largest = max(self.declared, key=self.declared.__getitem__)
            raise RunFileError(
                f"{self.path} cannot be read here: it declares {_size(total)} of data "
                f"({largest} alone {_size(self.declared[largest])}), and reading it needs "
                f"{_size(need)} (the data twice: the arrays read and the run made of them), "
                f"more than this process may allocate ({allowed}); read it where more "
                "memory is free, or raise the limit. A file that declares more than its "
                "run could hold is damaged or crafted"
            )
        excess = sum(chunk.worst for chunk in pending)
        for chunk in pending:
            if need + excess <= limit:
                break
            self.inflate(chunk)
            excess -= chunk.worst - 2 * chunk.bound

    def inflate(self, chunk: _Chunk) -> None:
        """Undo the chunk's filters, each output bounded by ``chunk.bound``: refuse a chunk
        that would decode to more (HDF5 would allocate all of it)."""
        import h5py

        dataset = h5py.h5o.open(self.file.id, chunk.path)
        _, data = dataset.read_direct_chunk(chunk.offset)
        for i in reversed(range(len(chunk.pipeline))):
            if chunk.mask & (1 << i):
                continue
            code, values = chunk.pipeline[i]
            if code == _FLETCHER32:
                data = data[:-4]
            elif code == _SHUFFLE:
                data = _unshuffle(data, values[0] if values else 1)
            else:
                inflater = zlib.decompressobj()
                try:
                    data = inflater.decompress(data, chunk.bound + 1)
                except zlib.error as err:
                    raise self.damaged(
                        f"{chunk.dataset} has a chunk, at {chunk.offset}, that does not "
                        f"inflate ({err})"
                    ) from None
                if len(data) > chunk.bound or inflater.unconsumed_tail:
                    raise self.refuse(
                        f"{chunk.dataset} has a chunk, at {chunk.offset}, that inflates to "
                        f"more than its {chunk.bound:,} bytes (a compression bomb: HDF5 "
                        "would allocate all it inflates to)"
                    )


def _is_dimension_only(dataset) -> bool:
    import h5py

    if not h5py.h5a.exists(dataset, b"NAME"):
        return False
    value = h5py.Dataset(dataset).attrs.get("NAME")
    return isinstance(value, bytes) and value.startswith(_DIMENSION_ONLY)


def _absolute(link: str, target: str) -> str:
    """The path from the root (as the visit names it: no leading slash) of a soft link's
    ``target``, which is relative to the link's group unless it starts with a slash."""
    path = target if target.startswith("/") else f"{link.rpartition('/')[0]}/{target}"
    return "/".join(part for part in path.split("/") if part not in ("", "."))


def _unshuffle(data: bytes, itemsize: int) -> bytes:
    """Undo HDF5's shuffle filter (the bytes of each element gathered by position)."""
    import numpy as np

    count = len(data) // itemsize
    if itemsize <= 1 or count == 0:
        return data
    planes = np.frombuffer(data, np.uint8, count * itemsize).reshape(itemsize, count)
    return planes.T.tobytes() + data[count * itemsize :]
