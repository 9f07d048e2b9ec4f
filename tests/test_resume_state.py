"""Resume trusts nothing in the file: every field is checked and a bad one is one clear error
naming the file (a run file is data from outside)."""

import json
import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia import run as run_module
from hamiltonia.cli import main
from hamiltonia.runfile import RunFileError, partial_dir

from .interrupting import interrupted


@pytest.fixture
def unfinished(tmp_path, monkeypatch):
    """An unfinished run (Ctrl-C after two stored blocks) with a diagonal metric."""
    path = tmp_path / "run.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.InterruptedRunWarning)
        interrupted(monkeypatch, 2, lambda: hm.sample(
            "banana", "hmc", chains=2, warmup=40, draws=200, seed=3, progress=False,
            compiled=False, metric="diagonal", output=path))  # fmt: skip
    assert hm.load(path).attrs["complete"] is False
    return path


def _tamper(path, change):
    manifest_path = partial_dir(path) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    change(manifest)
    manifest_path.write_text(json.dumps(manifest))


def _set_resume(key, value):
    def change(manifest):
        manifest["attrs"]["resume"][key] = value

    return change


def test_an_untouched_file_resumes(unfinished):
    assert hm.resume(unfinished, progress=False).attrs["complete"] is True


BAD = {
    "metric class outside the list": (
        _set_resume("metric", {"kind": "make_metric", "inverse_mass": [1.0, 1.0]}),
        r"metric kind 'make_metric' is not one of IdentityMetric, DiagonalMetric, DenseMetric",
    ),
    "negative inverse mass": (
        _set_resume("metric", {"kind": "DiagonalMetric", "inverse_mass": [1.0, -1.0]}),
        r"its metric is invalid",
    ),
    "nan position": (_set_resume("q", [[float("nan"), 0.0], [0.0, 0.0]]), r"q holds non-finite"),
    "position of the wrong shape": (_set_resume("q", [[0.0, 0.0, 0.0]] * 2), r"q has shape"),
    "inf log density": (_set_resume("log_prob", [float("-inf"), 0.0]), r"log_prob holds"),
    "nan step size": (_set_resume("step_size", [float("nan"), 0.1]), r"step_size must be finite"),
    "zero step size": (_set_resume("step_size", [0.0, 0.1]), r"step_size must be > 0"),
    "generators missing": (_set_resume("rng_states", []), r"0 generator states for 2 chains"),
    "a garbage generator": (_set_resume("rng_states", [{"x": 1}, {"x": 2}]), r"chain 0"),
    "unregistered sampler": (_set_resume("sampler", "os.system"), r"sampler 'os.system' is not"),
    "an option out of range": (_set_resume("options", {"n_steps": 10**9}), r"n_steps must be"),
    "an unknown option": (_set_resume("options", {"bogus": 1}), r"bogus"),
    "fewer draws planned than held": (
        lambda m: m["attrs"].__setitem__("draws", 1),
        r"number of draws \(1\) is not an integer of at least",
    ),
    "no resume state fields": (lambda m: m["attrs"].__setitem__("resume", {"q": 1}), r"lacks"),
    "an unregistered target": (lambda m: m.__setitem__("target", "nope"), r"nope"),
    "a block outside the folder": (
        lambda m: m["blocks"][0].__setitem__(2, "../../secret.npz"),
        r"block name '../../secret.npz' is not one of this folder's blocks",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_tampered_field_is_one_clear_error(unfinished, case):
    change, message = BAD[case]
    _tamper(unfinished, change)
    with pytest.raises(RunFileError, match=message) as info:
        hm.resume(unfinished, progress=False)
    assert str(unfinished) in str(info.value)


def test_absurd_sizes_are_refused_before_any_work(unfinished):
    _tamper(unfinished, lambda m: m["attrs"].__setitem__("draws", 10**15))
    with pytest.raises(ValueError, match=r"draws=1000000000000000 .* GiB"):
        hm.resume(unfinished, progress=False)


def test_a_truncated_block_or_manifest_is_one_clear_error(unfinished):
    folder = partial_dir(unfinished)
    block = sorted(folder.glob("block-*.npz"))[-1]
    block.write_bytes(block.read_bytes()[:50])
    with pytest.raises(RunFileError, match=r"cannot be read"):
        hm.resume(unfinished, progress=False)
    (folder / "manifest.json").write_text('{"format": 1, "blo')
    with pytest.raises(RunFileError, match=r"manifest.json cannot be read"):
        hm.load(unfinished)


def test_the_cli_prints_the_error_on_one_line(unfinished, capsys):
    _tamper(unfinished, _set_resume("q", [[float("nan"), 0.0], [0.0, 0.0]]))
    assert main(["resume", str(unfinished), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "q holds non-finite values" in err


def test_draws_beyond_memory_are_refused_by_sample_too():
    with pytest.raises(ValueError, match=r"draws=10000000000000 .* GiB"):
        hm.sample("banana", draws=10**13, progress=False)
    assert np.isfinite(run_module._physical_memory() or 1.0)
