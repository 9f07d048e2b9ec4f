"""Resume trusts nothing in the file: every field is checked and a bad one is one clear error
naming the file (a run file is data from outside)."""

import json
import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.results.runfile import RunFileError, partial_dir, seal_manifest
from hamiltonia.runner import run as run_module
from tests.interrupting import in_warmup_from, interrupted, killed_at_checkpoint


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
    """Change the manifest and record its new checksum, as a crafted file would: each
    field is checked on its own, beyond the checksum (test_runfile.py tests that)."""
    manifest_path = partial_dir(path) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    change(manifest)
    manifest_path.write_text(json.dumps(seal_manifest(manifest)))


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


def _assert_refused(path, change, message):
    """The manifest of ``path`` changed by ``change`` is refused at resume, naming the file."""
    _tamper(path, change)
    with pytest.raises(RunFileError, match=message) as info:
        hm.resume(path, progress=False)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("case", list(BAD))
def test_a_tampered_field_is_one_clear_error(unfinished, case):
    _assert_refused(unfinished, *BAD[case])


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


@pytest.fixture
def in_warmup(tmp_path, monkeypatch):
    """A run killed in its first metric window (iteration 90 of 200), its warm-up draws kept
    and thinned: dual averaging's and the window's state, an unfinished thinning group."""
    path = tmp_path / "run.nc"
    killed_at_checkpoint(monkeypatch, in_warmup_from(91), lambda: hm.sample(
        "banana", "hmc", chains=2, warmup=200, draws=50, seed=3, progress=False,
        compiled=False, metric="diagonal", save_warmup=True, thin=2, output=path,
        checkpoint_seconds=0.0))  # fmt: skip
    assert hm.load(path).attrs["warmup_done"] == 90
    return path


def _set_warmup(change):
    def edit(manifest):
        change(manifest["attrs"]["resume"]["warmup"])

    return edit


def _set_tuner(k, key, value):
    return _set_warmup(lambda w: w["tuners"][k]["state"].__setitem__(key, value))


NAN = float("nan")
OTHER_PARAMETERS = {"target_accept": 0.9, "gamma": 0.05, "t0": 10.0, "kappa": 0.75}
WARMUP_BAD = {
    "iteration beyond warm-up": (
        _set_warmup(lambda w: w.__setitem__("done", 10**6)),
        r"warmup.done \(1000000\) is not an integer in \[0, 200\]",
    ),
    "iteration not an integer": (
        _set_warmup(lambda w: w.__setitem__("done", 90.5)),
        r"warmup.done \(90.5\) is not an integer",
    ),
    "another warm-up length": (
        _set_warmup(lambda w: w.__setitem__("of", 7)),
        r"warmup.of \(7\) is not the run's warm-up \(200\)",
    ),
    "tuners not a list": (
        _set_warmup(lambda w: w.__setitem__("tuners", "DualAveraging")),
        r"warmup.tuners is not a list",
    ),
    "tuners in another order": (
        _set_warmup(lambda w: w["tuners"].reverse()),
        r"warmup.tuners lists \['WindowedMetric', 'DualAveraging'\], the sampler adapts with",
    ),
    "h_bar of the wrong shape": (
        _set_tuner(0, "h_bar", [0.0]),
        r"warmup.tuners\[0\] \(DualAveraging\): h_bar has shape \(1,\), expected \(2,\)",
    ),
    "nan mu": (_set_tuner(0, "mu", [NAN, 0.0]), r"tuners\[0\] \(DualAveraging\): mu holds non-fin"),
    "log_eps_bar missing": (
        _set_warmup(lambda w: w["tuners"][0]["state"].pop("log_eps_bar")),
        r"log_eps_bar is missing",
    ),
    "a count that is no count": (_set_tuner(0, "m", [-1.0, 2.5]), r"m must count updates"),
    "other dual averaging parameters": (
        _set_tuner(0, "parameters", OTHER_PARAMETERS),
        r"parameters .* are not the sampler's options",
    ),
    "a buffer short of a position": (
        _set_warmup(lambda w: w["tuners"][1]["state"]["buffer"].pop()),
        r"warmup.tuners\[1\] \(WindowedMetric\): buffer holds 14 positions, expected 15",
    ),
    "an infinite buffered position": (
        _set_warmup(lambda w: w["tuners"][1]["state"]["buffer"][0][0].__setitem__(0, 1e999)),
        r"buffer holds non-finite values",
    ),
    "a buffered position of the wrong shape": (
        _set_warmup(lambda w: w["tuners"][1]["state"]["buffer"][0].pop()),
        r"buffer is not an array of numbers|buffer has shape",
    ),
    "another window schedule": (
        _set_tuner(1, "windows", [[0, 10]]),
        r"windows \[\[0, 10\]\] are not the schedule",
    ),
    "unfinished group of the wrong length": (
        _set_warmup(lambda w: w["tail"].__setitem__("n_grad", [[1, 2], [3, 4]])),
        r"warmup.tail.n_grad is not an array of shape \(2, 0\)",
    ),
    "kept warm-up draws missing": (
        lambda m: (m.pop("warmup"), m.pop("warmup_sha256")),
        r"it keeps its warm-up draws \(save_warmup\) but holds none",
    ),
}


@pytest.mark.parametrize("case", list(WARMUP_BAD))
def test_a_tampered_warmup_field_is_one_clear_error(in_warmup, case):
    """The tuners' state of a run stopped in warm-up is checked field by field, as the
    chains' is: wrong shapes, non-finite values, another schedule or other parameters."""
    _assert_refused(in_warmup, *WARMUP_BAD[case])


def test_an_untouched_warmup_checkpoint_resumes(in_warmup):
    resumed = hm.resume(in_warmup, progress=False)
    assert resumed.attrs["complete"] is True and resumed.warmup_draws.shape == (2, 100, 2)


def _another_target(name, params):
    def change(manifest):
        manifest["target"] = name
        manifest["attrs"]["target_params"] = params

    return change


@pytest.mark.parametrize(
    ("name", "params"),
    [("gaussian", {"dim": 2}), ("correlated-gaussian", {"dim": 2, "rho": 0.5})],
    ids=["gaussian", "correlated-gaussian"],
)
def test_a_manifest_naming_another_target_is_refused(unfinished, name, params):
    """A registered target of the same dimension passes every check of the fields; only
    the log densities at the saved positions tell that the draws are not its own."""
    _tamper(unfinished, _another_target(name, params))
    with pytest.raises(RunFileError, match=r"its target \(name, parameters or data\) does "
                                           r"not match its draws") as info:  # fmt: skip
        hm.resume(unfinished, progress=False)
    assert str(unfinished) in str(info.value)


def test_a_manifest_with_other_target_parameters_is_refused(tmp_path, monkeypatch):
    """The same target name with another parameter (the Gaussian's scales' seed), in
    warm-up: refused before any work."""
    path = tmp_path / "run.nc"
    target = hm.targets.get("gaussian", dim=3, seed=0)
    killed_at_checkpoint(monkeypatch, in_warmup_from(30), lambda: hm.sample(
        target, "hmc", chains=2, warmup=100, draws=20, seed=1, progress=False,
        compiled=False, output=path, checkpoint_seconds=0.0))  # fmt: skip
    assert hm.load(path).attrs["target_params"] == {"dim": 3, "seed": 0}
    _tamper(path, lambda m: m["attrs"].__setitem__("target_params", {"dim": 3, "seed": 1}))
    with pytest.raises(RunFileError, match=r"does not match its draws"):
        hm.resume(path, progress=False)


def test_a_model_that_raises_while_the_target_is_checked_is_shown(unfinished, monkeypatch):
    """The model's own exception is a bug to show, not a target mismatch to guess at."""
    from hamiltonia.targets.banana import Banana

    def broken(self, x):
        raise ZeroDivisionError("a bug in the model")

    monkeypatch.setattr(Banana, "log_prob_and_grad", broken)
    with pytest.raises(hm.ModelError, match="checking the target before resuming") as info:
        hm.resume(unfinished, progress=False)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
