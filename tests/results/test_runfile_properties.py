"""Property-based tests of the run file (hypothesis): random output paths, kills at random
moments and tampered manifests, driven through :func:`hamiltonia.sample` and
:func:`hamiltonia.resume`.

The properties:

* an output path is either written (the file loads with the run's draws) or refused with a
  :class:`~hamiltonia.results.runfile.RunFileError` before any work, and what was there before is
  untouched;
* a run killed at any moment after its first checkpoint resumes to the draws of an
  uninterrupted run (a kill is simulated at a write of the run file: from the disk's point
  of view every moment between two writes is the same moment, so the write boundaries are
  every distinct state a kill can leave);
* a manifest changed after the run wrote it is refused with a ``RunFileError`` naming the
  file; one changed and sealed anew (a crafted file) either resumes or is refused with a
  documented error, never a crash, a hang or an undocumented exception.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hamiltonia as hm
from hamiltonia.results import runfile
from hamiltonia.results.runfile import RunFileError, partial_dir, seal_manifest

from .test_runfile import Counting

RUN = {"chains": 2, "warmup": 30, "draws": 40, "seed": 11, "progress": False}
PROPERTY = settings(
    max_examples=25, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip


PATH_KINDS = [
    "new", "existing", "folder", "missing-folder", "fifo", "link-to-file", "dangling-link",
    "partial-is-a-file", "odd-name",
]  # fmt: skip


def _make_path(root: Path, kind: str) -> tuple[Path, object]:
    """An output path of ``kind`` under ``root``, and what stands there before the run."""
    path = root / "run.nc"
    if kind == "existing":
        path.write_bytes(b"precious")
    elif kind == "folder":
        path.mkdir()
    elif kind == "missing-folder":
        path = root / "missing" / "run.nc"
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-to-file":
        (root / "real.nc").write_bytes(b"old")
        path.symlink_to(root / "real.nc")
    elif kind == "dangling-link":
        path.symlink_to(root / "nowhere.nc")
    elif kind == "partial-is-a-file":
        partial_dir(path).write_bytes(b"not ours")
    elif kind == "odd-name":
        path = root / "a run ü (1).nc"
    return path, _snapshot(root)


def _snapshot(root: Path) -> dict:
    """What the folder holds: names, kinds and contents of regular files."""
    out = {}
    for p in sorted(root.rglob("*")):
        mode = p.lstat().st_mode
        content = p.read_bytes() if stat.S_ISREG(mode) else None
        out[str(p.relative_to(root))] = (stat.S_IFMT(mode), content)
    return out


@pytest.mark.skipif(os.name != "posix", reason="named pipes and links")
@PROPERTY
@given(kind=st.sampled_from(PATH_KINDS), overwrite=st.booleans())
def test_an_output_path_is_written_or_refused_before_any_work(kind, overwrite):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path, before = _make_path(root, kind)
        Counting.calls = 0
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = hm.sample(Counting(), output=path, overwrite=overwrite,
                                   compiled=False, **RUN)  # fmt: skip
        except RunFileError:
            assert Counting.calls == 0
            assert _snapshot(root) == before
            return
        written = path.resolve()
        np.testing.assert_array_equal(hm.load(written).draws, result.draws)
        assert path.exists() and not partial_dir(written).exists()
        assert kind in ("new", "odd-name", "link-to-file") or (kind == "existing" and overwrite)


class _Killed(BaseException):
    """The process died here: nothing after it runs, no write after it happens."""


def _count_writes(**kwargs) -> int:
    calls = {"n": 0}
    original = runfile.atomic_write

    def counting(path, write, scratch=None):
        calls["n"] += 1
        return original(path, write, scratch)

    runfile.atomic_write = counting
    try:
        with tempfile.TemporaryDirectory() as folder:
            hm.sample("banana", "hmc", output=Path(folder) / "run.nc", **kwargs)
    finally:
        runfile.atomic_write = original
    return calls["n"]


def _killed_at(path: Path, n: int, after: bool, kwargs: dict) -> None:
    """Run with the process 'killed' at the ``n``-th write of its run file: before that
    write happens, or just after it, and every later write fails as a dead process's."""
    calls = {"n": 0, "dead": False}
    original = runfile.atomic_write

    def dying(target, write, scratch=None):
        if calls["dead"]:
            raise _Killed
        calls["n"] += 1
        if calls["n"] == n and not after:
            calls["dead"] = True
            raise _Killed
        result = original(target, write, scratch)
        if calls["n"] == n:
            calls["dead"] = True
            raise _Killed
        return result

    runfile.atomic_write = dying
    try:
        hm.sample("banana", "hmc", output=path, **kwargs)
    except _Killed:
        pass
    finally:
        runfile.atomic_write = original
    # A killed process holds no lock: the kernel released its flock. (Here the process
    # lives on, so its lock is released as the run unwinds; nothing else is cleaned.)


@pytest.fixture(scope="module")
def references():
    """Uninterrupted runs and their numbers of writes, per path and option set."""
    out = {}
    for compiled in (True, False):
        for thin, save_warmup in ((1, False), (2, True)):
            kwargs = dict(RUN, compiled=compiled, thin=thin, save_warmup=save_warmup,
                          checkpoint_seconds=0.0)  # fmt: skip
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reference = hm.sample("banana", "hmc", **{**kwargs, "checkpoint_seconds": 60.0})
                out[compiled, thin, save_warmup] = (kwargs, reference, _count_writes(**kwargs))
    return out


@PROPERTY
@given(
    compiled=st.booleans(),
    options=st.sampled_from([(1, False), (2, True)]),
    moment=st.floats(0.0, 1.0, exclude_max=True),
    after=st.booleans(),
)
def test_a_run_killed_at_any_write_resumes_to_the_uninterrupted_draws(
    references, compiled, options, moment, after
):
    kwargs, reference, writes = references[(compiled, *options)]
    n = 1 + int(moment * writes)
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(folder) / "run.nc"
        _killed_at(path, n, after, kwargs)
        if path.exists():  # killed after its final write
            result = hm.load(path)
        elif (partial_dir(path) / "manifest.json").exists():
            assert hm.load(path).attrs["complete"] is False
            result = hm.resume(path, progress=False)
        else:  # killed before its first checkpoint: nothing kept, nothing in the way
            result = hm.sample("banana", "hmc", output=path, **kwargs)
        assert result.attrs["complete"] is True
        np.testing.assert_array_equal(result.draws, reference.draws)
        for name, values in reference.stats.items():
            np.testing.assert_array_equal(result.stats[name], values, err_msg=name)
        if reference.warmup_draws is not None:
            np.testing.assert_array_equal(result.warmup_draws, reference.warmup_draws)
        np.testing.assert_array_equal(hm.load(path).draws, reference.draws)


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """An unfinished run (killed after a few checkpoints), and its uninterrupted draws."""
    kwargs = dict(RUN, compiled=True, checkpoint_seconds=0.0)
    path = tmp_path_factory.mktemp("stopped") / "run.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _killed_at(path, 4, True, kwargs)
    assert (partial_dir(path) / "manifest.json").exists()
    return path


def _leaves(value, prefix=()):
    """Paths to every leaf of a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*prefix, key))
    elif isinstance(value, list) and value:
        for i, item in enumerate(value):
            yield from _leaves(item, (*prefix, i))
    else:
        yield prefix


def _set(value, where, new):
    for key in where[:-1]:
        value = value[key]
    value[where[-1]] = new


JSON_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**18), 10**18),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.lists(st.floats(-1e3, 1e3), max_size=3),
)  # fmt: skip


@PROPERTY
@given(data=st.data(), reseal=st.booleans())
def test_a_tampered_manifest_is_refused_or_resumes_never_an_undocumented_error(
    stopped_run, data, reseal
):
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(folder) / "run.nc"
        shutil.copytree(partial_dir(stopped_run), partial_dir(path))
        manifest_path = partial_dir(path) / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        leaves = [w for w in _leaves(manifest) if w and w[-1] != "sha256"]
        where = data.draw(st.sampled_from(leaves), label="field")
        new = data.draw(JSON_VALUES, label="value")
        old = manifest
        for key in where:
            old = old[key]
        assume(json.dumps(old) != json.dumps(new))
        _set(manifest, where, new)
        if reseal:
            manifest = seal_manifest(manifest)
        manifest_path.write_text(json.dumps(manifest))
        try:
            result = hm.resume(path, progress=False)
        except RunFileError as err:
            assert str(path) in str(err) or str(partial_dir(path)) in str(err)
            return
        except ValueError as err:  # resume's documented checks of sizes and options
            assert reseal, f"an unsealed change reached the checks: {err}"
            return
        assert reseal, "a manifest changed without its checksum was resumed"
        assert result.attrs["complete"] is True
        assert np.all(np.isfinite(result.draws))
