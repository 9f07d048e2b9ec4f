"""The entry-point registries of targets and samplers, and the example plugin."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.registry import PluginWarning, UnknownNameError

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_PLUGIN = REPO_ROOT / "plugins" / "hamiltonia-example"

BUILTIN_TARGETS = [
    "banana",
    "gaussian",
    "gaussian-d10",
    "gaussian-d50",
    "gaussian-d100",
    "funnel-d25",
    "correlated-gaussian",
]
BUILTIN_SAMPLERS = ["hmc", "mala", "rwmh"]


def _refresh_all():
    hm.targets.registry.refresh()
    hm.samplers.registry.refresh()


@pytest.fixture(autouse=True)
def _fresh_registries():
    """Every test starts and ends with registries that rediscover the entry points."""
    _refresh_all()
    yield
    _refresh_all()


def _fake_distribution(root: Path, dist: str, name: str, entry_points: str) -> None:
    """Write ``<dist>-0.1.dist-info`` (METADATA, entry_points.txt) under ``root``."""
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


# ---------------------------------------------------------------------------- built-ins


def test_builtin_names_are_listed():
    assert set(BUILTIN_TARGETS) <= set(hm.targets.names())
    assert set(BUILTIN_SAMPLERS) <= set(hm.samplers.names())
    assert hm.targets.names() == sorted(hm.targets.names())


@pytest.mark.parametrize(
    ("module", "names"), [(hm.targets, BUILTIN_TARGETS), (hm.samplers, BUILTIN_SAMPLERS)]
)
def test_builtins_have_one_line_descriptions(module, names):
    described = module.describe()
    for name in names:
        text = described[name]
        assert text.strip(), name
        assert "\n" not in text, name


@pytest.mark.parametrize("name", BUILTIN_TARGETS)
def test_builtin_targets_come_from_own_entry_points(name):
    assert hm.targets.registry.source(name) == "hamiltonia"


@pytest.mark.parametrize("name", BUILTIN_SAMPLERS)
def test_builtin_samplers_come_from_own_entry_points(name):
    assert hm.samplers.registry.source(name) == "hamiltonia"


# ---------------------------------------------------------------------------- lookup


def test_get_with_parameters():
    target = hm.targets.get("gaussian", dim=7)
    assert target.dim == 7
    assert target.registered_name == "gaussian"


def test_unknown_name_suggests_close_match():
    with pytest.raises(UnknownNameError, match="did you mean 'banana'") as info:
        hm.targets.get("banan")
    assert isinstance(info.value, KeyError)


def test_unknown_sampler_name():
    with pytest.raises(UnknownNameError, match="unknown sampler 'nuts-ish'"):
        hm.samplers.build("nuts-ish", hm.targets.get("banana"))


def test_unknown_target_parameter_is_named():
    with pytest.raises(ValueError, match="'colour'"):
        hm.targets.get("banana", colour="yellow")


def test_unknown_sampler_option_is_named():
    target = hm.targets.get("banana")
    with pytest.raises(ValueError, match="'foo'"):
        hm.samplers.build("hmc", target, foo=1)


def test_sampler_options_exclude_target():
    options = hm.samplers.options("hmc")
    assert "n_steps" in options
    assert "target" not in options


# ---------------------------------------------------------------------------- example plugin


@pytest.fixture(scope="session")
def example_plugin_dir(tmp_path_factory):
    """The example plugin installed with pip into a fresh directory (not yet on sys.path).

    The sources are copied first, so that the in-tree build leaves nothing in the repository.
    """
    source = tmp_path_factory.mktemp("example-src") / "hamiltonia-example"
    shutil.copytree(
        EXAMPLE_PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    target = tmp_path_factory.mktemp("example-plugin")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "--disable-pip-version-check",
        "--target",
        str(target),
        str(source),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"pip install failed:\n{proc.stdout}\n{proc.stderr}"
    return target


@pytest.fixture
def example_plugin(example_plugin_dir):
    """Put the installed example plugin on sys.path for one test, then take it off again."""
    path = str(example_plugin_dir)
    sys.path.insert(0, path)
    _refresh_all()
    try:
        yield example_plugin_dir
    finally:
        while path in sys.path:
            sys.path.remove(path)
        for module in [m for m in sys.modules if m.split(".")[0] == "hamiltonia_example"]:
            del sys.modules[module]
        _refresh_all()


def test_example_plugin_is_not_found_before_install():
    assert "example-ring" not in hm.targets.names()
    assert "example-jittered-hmc" not in hm.samplers.names()


def test_example_plugin_names_and_source(example_plugin):
    assert "example-ring" in hm.targets.names()
    assert "example-jittered-hmc" in hm.samplers.names()
    assert hm.targets.registry.source("example-ring") == "hamiltonia-example"
    assert hm.samplers.registry.source("example-jittered-hmc") == "hamiltonia-example"
    assert hm.targets.describe()["example-ring"].strip()
    assert hm.samplers.describe()["example-jittered-hmc"].strip()
    # Extension happens through entry points only, not at import time.
    assert "example-ring" not in hm.targets.registry._extra
    assert "example-jittered-hmc" not in hm.samplers.registry._extra


def test_example_ring_target(example_plugin):
    target = hm.targets.get("example-ring")
    assert isinstance(target, hm.Target)
    assert target.dim == 2
    x = np.random.default_rng(0).normal(size=(3, 4, 2))
    lp, grad = target.log_prob_and_grad(x)
    assert lp.shape == (3, 4)
    assert grad.shape == (3, 4, 2)
    np.testing.assert_allclose(lp, -((np.linalg.norm(x, axis=-1) - 2.0) ** 2) / (2 * 0.3**2))
    eps = 1e-6
    numeric = np.stack(
        [
            (target.log_prob(x + eps * e) - target.log_prob(x - eps * e)) / (2 * eps)
            for e in np.eye(2)
        ],
        axis=-1,
    )
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)
    # The origin: finite log density and gradient.
    lp0, grad0 = target.log_prob_and_grad(np.zeros(2))
    assert np.isfinite(lp0)
    assert np.all(np.isfinite(grad0))
    assert hm.targets.get("example-ring", radius=1.0, width=0.1).radius == 1.0


def test_example_sampler_runs(example_plugin):
    result = hm.sample(
        "example-ring",
        sampler="example-jittered-hmc",
        chains=2,
        warmup=200,
        draws=200,
        seed=0,
        progress=False,
    )
    assert result.draws.shape == (2, 200, 2)
    assert np.all(np.isfinite(result.draws))
    assert result.acceptance_rate > 0
    n_steps = result.stats["n_steps"]
    assert np.all((n_steps >= 1) & (n_steps <= 20))
    # One length per chain and iteration, from each chain's own generator: the chains'
    # lengths differ, and chain 0 alone draws the same lengths as chain 0 beside another.
    assert np.any(n_steps[0] != n_steps[1])
    assert len(np.unique(n_steps)) > 1
    alone = hm.sample(
        "example-ring", sampler="example-jittered-hmc", chains=1, warmup=200, draws=200,
        seed=0, progress=False,
    )  # fmt: skip
    np.testing.assert_array_equal(alone.stats["n_steps"][0], n_steps[0])


def test_example_sampler_fixed_step_size(example_plugin):
    target = hm.targets.get("example-ring")
    sampler = hm.samplers.build("example-jittered-hmc", target, step_size=0.1, max_steps=5)
    assert len(sampler.tuners) == 0
    assert sampler.trajectory.max_steps == 5


# ---------------------------------------------------------------------------- broken plugins


@pytest.fixture
def on_sys_path(tmp_path, monkeypatch, request):
    """``tmp_path`` on sys.path for one test; registries refreshed at teardown."""
    monkeypatch.syspath_prepend(str(tmp_path))
    request.addfinalizer(_refresh_all)
    _refresh_all()
    return tmp_path


def test_plugin_that_fails_to_import(tmp_path, on_sys_path):
    _fake_distribution(
        tmp_path,
        "broken_plugin",
        "broken-plugin",
        "[hamiltonia.targets]\nbroken-target = broken_plugin_does_not_exist:factory\n",
    )
    _refresh_all()
    with pytest.warns(PluginWarning, match="broken-target") as record:
        names = hm.targets.names()
    assert any(
        "broken-plugin" in str(w.message) and "broken-target" in str(w.message) for w in record
    )
    assert "broken-target" not in names
    assert "broken-target" not in hm.targets.names()
    assert type(hm.targets.get("banana")).__name__ == "Banana"


def test_duplicate_name_keeps_own_entry(tmp_path, on_sys_path):
    _fake_distribution(
        tmp_path,
        "dup_plugin",
        "dup-plugin",
        "[hamiltonia.targets]\nbanana = hamiltonia.targets.gaussian:gaussian_d10\n",
    )
    _refresh_all()
    with pytest.warns(PluginWarning, match="banana") as record:
        hm.targets.names()
    assert any("dup-plugin" in str(w.message) for w in record)
    assert hm.targets.registry.source("banana") == "hamiltonia"
    assert type(hm.targets.get("banana")).__name__ == "Banana"


def test_broken_plugin_does_not_leak():
    # Runs after the tests above: their fake distributions are gone again.
    assert "broken-target" not in hm.targets.names()
    assert hm.targets.registry.source("banana") == "hamiltonia"


# ---------------------------------------------------------------------------- runtime


@pytest.fixture
def cleanup_runtime():
    added = []
    yield added
    for registry, name in added:
        registry._extra.pop(name, None)


def test_runtime_registration(cleanup_runtime):
    def my_target(dim: int = 3):
        """A runtime test target."""
        return hm.targets.get("gaussian", dim=dim)

    cleanup_runtime.append((hm.targets.registry, "my-target"))
    hm.targets.register("my-target", my_target)
    assert "my-target" in hm.targets.names()
    assert hm.targets.registry.source("my-target") == "<runtime>"
    assert hm.targets.describe()["my-target"] == "A runtime test target."
    target = hm.targets.get("my-target", dim=4)
    assert target.dim == 4
    assert target.registered_name == "my-target"

    with pytest.raises(ValueError, match="already registered"):
        hm.targets.register("my-target", my_target)
    with pytest.raises(ValueError, match="already registered"):
        hm.targets.register("banana", my_target)
    hm.targets.register("my-target", lambda: hm.targets.get("gaussian", dim=2), overwrite=True)
    assert hm.targets.get("my-target").dim == 2


def test_runtime_sampler_registration(cleanup_runtime):
    def my_hmc(target, *, n_steps: int = 3):
        """HMC with few steps."""
        return hm.samplers.build("hmc", target, n_steps=n_steps, step_size=0.1)

    cleanup_runtime.append((hm.samplers.registry, "my-hmc"))
    hm.samplers.register("my-hmc", my_hmc)
    sampler = hm.samplers.build("my-hmc", hm.targets.get("banana"))
    assert isinstance(sampler, hm.Sampler)
    with pytest.raises(ValueError, match="'foo'"):
        hm.samplers.build("my-hmc", hm.targets.get("banana"), foo=1)


def test_register_rejects_non_callable():
    with pytest.raises(TypeError):
        hm.targets.register("not-callable", 42)
    assert "not-callable" not in hm.targets.names()


def test_runtime_registration_does_not_leak():
    assert "my-target" not in hm.targets.names()
    assert "my-hmc" not in hm.samplers.names()
