"""Reading a run file never leaves it (issue 47): :func:`hamiltonia.load` vets an HDF5 file
before any reader touches it, and refuses a file whose reading would read another file, hang
or exhaust memory, with a :class:`RunFileError` naming the file and the dataset or link."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.results import vetting
from hamiltonia.results.runfile import RunFileError

h5py = pytest.importorskip("h5py")

POSIX = pytest.mark.skipif(os.name != "posix", reason="named pipes and resource limits")


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory) -> tuple[Path, hm.Result]:
    result = hm.sample("gaussian", sampler="hmc", chains=2, warmup=20, draws=20, seed=0,
                       progress=False, compiled=False)  # fmt: skip
    path = tmp_path_factory.mktemp("saved") / "run.nc"
    result.save(path)
    return path, result


@pytest.fixture
def run_file(saved_run, tmp_path) -> Path:
    """A copy of a valid run file, to tamper with."""
    return Path(shutil.copy(saved_run[0], tmp_path / "run.nc"))


def _replace_draws(path: Path, make: Callable, name: str = "x1", *, dims: bool = True) -> None:
    """Put in place of the posterior variable ``name`` the dataset ``make(group, name)``
    creates, with the original's netCDF attributes and dimensions (unless ``dims`` is
    false: attaching them asks for the dataset's shape), so that a reader takes what it
    holds for the draws."""
    with h5py.File(path, "a") as f:
        group = f["posterior"]
        attrs = {k: v for k, v in group[name].attrs.items() if k != "DIMENSION_LIST"}
        del group[name]
        dataset = make(group, name)
        for key, value in attrs.items():
            dataset.attrs[key] = value
        if dims:
            dataset.dims[0].attach_scale(group["chain"])
            dataset.dims[1].attach_scale(group["draw"])


#: Loads each file named, one line per file: its path, then "loaded" or the exception.
LOADS = textwrap.dedent(
    """
    import sys
    import hamiltonia as hm
    for path in sys.argv[1:]:
        try:
            hm.load(path)
            print(path, "loaded", sep="\\t", flush=True)
        except Exception as err:
            print(path, type(err).__name__, str(err), sep="\\t", flush=True)
    """
)


def _external(target: Path) -> Callable:
    """A maker for :func:`_replace_draws` of a dataset stored in ``target``."""

    def make(group, name):
        storage = [(str(target), 0, h5py.h5f.UNLIMITED)]
        return group.create_dataset(name, shape=(2, 20), dtype="<f8", external=storage)

    return make


def _virtual(source: Path, *, unlimited: bool) -> Callable:
    """A maker for :func:`_replace_draws` of a virtual dataset of ``source``'s ``data``; an
    unlimited one makes HDF5 open the source as soon as the dataset's shape is asked."""

    def make(group, name):
        if unlimited:
            layout = h5py.VirtualLayout(shape=(2, 20), maxshape=(2, None), dtype="<f8")
            vsource = h5py.VirtualSource(str(source), "data", shape=(2, 20), maxshape=(2, None))
            layout[:, : h5py.h5s.UNLIMITED] = vsource[:, : h5py.h5s.UNLIMITED]
        else:
            layout = h5py.VirtualLayout(shape=(2, 20), dtype="<f8")
            layout[:] = h5py.VirtualSource(str(source), "data", shape=(2, 20))
        return group.create_virtual_dataset(name, layout, fillvalue=np.nan)

    return make


@pytest.fixture(scope="module")
def pipe_loads(saved_run, tmp_path_factory) -> dict[str, str]:
    """What ``hm.load`` says of each file that would make a reader open a named pipe, which
    blocks until a writer comes: external storage, a virtual dataset and an external link
    to a pipe, and a run path that is one. The files are read in one subprocess with a time
    limit (a reader blocked in HDF5 holds the interpreter's lock, so that no thread can time
    it out); a file it did not answer for blocked."""
    if os.name != "posix":
        pytest.skip("named pipes")
    folder = tmp_path_factory.mktemp("pipes")
    pipe = folder / "pipe"
    os.mkfifo(pipe)
    paths = {case: Path(shutil.copy(saved_run[0], folder / f"{case}.nc"))
             for case in ("storage", "virtual", "link")}  # fmt: skip
    _replace_draws(paths["storage"], _external(pipe))
    _replace_draws(paths["virtual"], _virtual(pipe, unlimited=True), dims=False)
    with h5py.File(paths["link"], "a") as f:
        f["posterior/x11"] = h5py.ExternalLink(str(pipe), "/data")
    paths["run path"] = folder / "run.nc"
    os.mkfifo(paths["run path"])
    try:
        done = subprocess.run([sys.executable, "-c", LOADS, *map(str, paths.values())],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        stdout = done.stdout
    except subprocess.TimeoutExpired as expired:
        stdout = (expired.stdout or b"").decode()
    said = dict(line.split("\t", 1) for line in stdout.splitlines() if "\t" in line)
    return {case: said.get(str(path), "blocked") for case, path in paths.items()}


# --- The defects of the issue: each failed before the file was vetted ---


def test_external_storage_is_refused_not_read_as_draws(run_file, tmp_path):
    secret = tmp_path / "secret.bin"
    np.arange(40, dtype="<f8").tofile(secret)
    _replace_draws(run_file, _external(secret))
    with pytest.raises(RunFileError) as caught:
        hm.load(run_file)
    message = str(caught.value)
    assert str(run_file) in message and "posterior/x1" in message
    assert "external storage" in message and str(secret) in message


def test_external_storage_on_a_named_pipe_is_refused_without_waiting(pipe_loads):
    said = pipe_loads["storage"]
    assert said.startswith("RunFileError"), said
    assert "storage.nc" in said and "posterior/x1 keeps its data outside the file" in said


#: A compressed variable of its own dimension that declares 17.9 GB and stores nothing: the
#: file is a few kB. A subprocess reads it under a 4 GiB address-space limit, on a machine
#: reported to have 1 TiB (where a check against physical memory lets it through).
ADDRESS_SPACE = textwrap.dedent(
    """
    import resource, sys
    import hamiltonia as hm
    from hamiltonia import _system
    _system.physical_memory = lambda: 2**40
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, hard))
    try:
        hm.load(sys.argv[1])
    except hm.RunFileError as err:
        print("RunFileError:", err)
        sys.exit(3)
    except MemoryError as err:
        print("MemoryError:", err)
        sys.exit(4)
    """
)


@POSIX
def test_a_compressed_block_declaring_17_9_gb_is_refused_under_an_address_space_limit(run_file):
    import h5netcdf

    count = 17_900_000_000 // 8
    with h5netcdf.File(run_file, "a") as f:
        group = f.groups["posterior"]
        group.dimensions["huge_dim"] = count
        group.create_variable("huge", ("huge_dim",), dtype="f8", compression="gzip",
                              chunks=(2**20,))  # fmt: skip
    assert run_file.stat().st_size < 50_000
    done = subprocess.run([sys.executable, "-c", ADDRESS_SPACE, str(run_file)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 3, (done.stdout + done.stderr)[-2000:]
    assert str(run_file) in done.stdout and "posterior/huge" in done.stdout
    assert "16.7 GiB" in done.stdout and "address-space limit" in done.stdout


def test_a_run_path_that_is_a_named_pipe_is_refused_without_waiting(pipe_loads):
    said = pipe_loads["run path"]
    assert said.startswith("RunFileError"), said
    assert "run.nc is not a regular file" in said


# --- What else would make a reader leave the file ---


def test_a_virtual_dataset_is_refused(run_file, tmp_path):
    source = tmp_path / "other.h5"
    with h5py.File(source, "w") as f:
        f["data"] = np.full((2, 20), 7.0)
    _replace_draws(run_file, _virtual(source, unlimited=False))
    with pytest.raises(RunFileError, match=r"posterior/x1 is a virtual dataset") as caught:
        hm.load(run_file)
    assert str(run_file) in str(caught.value) and str(source) in str(caught.value)


def test_a_virtual_dataset_of_a_named_pipe_is_refused_without_waiting(pipe_loads):
    said = pipe_loads["virtual"]
    assert said.startswith("RunFileError"), said
    assert "posterior/x1 is a virtual dataset" in said


def test_an_external_link_is_refused_and_never_followed(pipe_loads):
    said = pipe_loads["link"]
    assert said.startswith("RunFileError"), said
    assert "posterior/x11 is a link to /data in another file" in said


@pytest.mark.parametrize("target", ["/nowhere", "/posterior", "/posterior/x12"])
def test_a_soft_link_that_is_not_to_a_dataset_of_the_file_is_refused(run_file, target):
    with h5py.File(run_file, "a") as f:
        f["posterior/x12"] = h5py.SoftLink("/posterior/x2")  # to a dataset: allowed
        f["posterior/x13"] = h5py.SoftLink(target)
    with pytest.raises(RunFileError, match=rf"posterior/x13 is a link to {target}, which is not"):
        hm.load(run_file)


def test_a_soft_link_to_a_dataset_of_the_file_is_read(run_file, saved_run):
    with h5py.File(run_file, "a") as f:
        f["posterior/x12"] = h5py.SoftLink("x2")
    np.testing.assert_array_equal(hm.load(run_file).draws, saved_run[1].draws)


def test_a_group_linked_twice_is_refused(run_file):
    with h5py.File(run_file, "a") as f:
        f["again"] = f["posterior"]
    with pytest.raises(RunFileError, match=r"the group again is linked from 2 places"):
        hm.load(run_file)


@pytest.mark.parametrize(("code", "what"), [(32099, "filter 32099"), (32000, "filter 32000")])
def test_a_filter_netcdf_does_not_use_is_refused(run_file, code, what):
    _replace_draws(run_file, lambda g, name: g.create_dataset(
        name, shape=(2, 20), dtype="<f8", chunks=(2, 20), compression=code,
        allow_unknown_filter=True))  # fmt: skip
    with pytest.raises(RunFileError, match=rf"posterior/x1 is compressed with {what}") as caught:
        hm.load(run_file)
    assert str(run_file) in str(caught.value)


# --- Memory: declared sizes and bounded decompression ---


def test_compressed_draws_are_read(run_file, saved_run, monkeypatch):
    """gzip, shuffle and fletcher32 (what netCDF-4 writes), with every chunk inflated to
    check it while a tight limit is in force: no honest chunk is refused."""
    draws = saved_run[1].draws[..., 0]

    def make(group, name):
        return group.create_dataset(name, data=draws, chunks=(1, 8), compression="gzip",
                                    shuffle=True, fletcher32=True)  # fmt: skip

    _replace_draws(run_file, make)
    monkeypatch.setattr(vetting, "memory_limits", lambda: [(2**16, "a test's limit")])
    inflated = []
    inflate = vetting._Walk.inflate

    def counted(walk, chunk):
        inflated.append(chunk)
        return inflate(walk, chunk)

    monkeypatch.setattr(vetting._Walk, "inflate", counted)
    np.testing.assert_array_equal(hm.load(run_file).draws, saved_run[1].draws)
    assert len(inflated) == 6


def test_a_chunk_that_inflates_past_its_size_is_refused(run_file, monkeypatch):
    """HDF5's deflate filter grows its buffer until the stream ends: a 64 kB chunk of a
    320-byte dataset would take 64 MiB. Where that could exceed the memory left, the chunk
    is inflated first, bounded, and refused."""

    def make(group, name):
        dataset = group.create_dataset(name, shape=(2, 20), dtype="<f8", chunks=(2, 20),
                                       compression="gzip")  # fmt: skip
        packer = zlib.compressobj(9)
        bomb = b"".join(packer.compress(bytes(2**20)) for _ in range(64)) + packer.flush()
        dataset.id.write_direct_chunk((0, 0), bomb)
        return dataset

    _replace_draws(run_file, make)
    monkeypatch.setattr(vetting, "memory_limits", lambda: [(16 * 2**20, "a test's limit")])
    with pytest.raises(RunFileError, match=r"posterior/x1 has a chunk, at \(0, 0\), that "
                                           r"inflates to more than its 320 bytes"):  # fmt: skip
        hm.load(run_file)


def test_a_chunk_larger_than_memory_is_refused(run_file, monkeypatch):
    _replace_draws(run_file, lambda g, name: g.create_dataset(
        name, shape=(2, 20), dtype="<f8", chunks=(2, 2**24), maxshape=(2, None),
        compression="gzip"))  # fmt: skip
    monkeypatch.setattr(vetting, "memory_limits", lambda: [(2**27, "a test's limit")])
    with pytest.raises(RunFileError, match=r"posterior/x1 is stored in chunks of 256 MiB"):
        hm.load(run_file)


def test_the_memory_available_is_at_most_the_machine_s():
    from hamiltonia._system import available_memory, physical_memory

    assert 0 < available_memory() <= physical_memory()
    assert "the memory available" in [what for _, what in vetting.memory_limits()]
