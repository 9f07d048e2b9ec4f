"""The entry-point registries of targets, samplers and parts, and the example plugin."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia import (
    hamiltonians,
    integrators,
    reducers,
    refresh,
    structures,
    trajectories,
    tuners,
)
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

#: The part registries, their built-ins, and options that build each built-in.
BUILTIN_PARTS = {
    hamiltonians: {
        "euclidean": {"metric": [1.0, 2.0]},
        "random-mass": {"mass_volatility": 0.2},
        "relativistic": {"mass": 2.0, "light_speed": 0.5},
    },
    integrators: {
        "leapfrog": {},
        "two-stage": {},
        "three-stage": {},
        "processed-leapfrog": {"tolerance": 1e-8},
    },
    refresh: {"full": {}, "partial": {"rho": 0.9}, "metropolis-partial": {"rho": 0.5}},
    trajectories: {
        "metropolis": {"min_steps": 2, "max_steps": 5},
        "static-length": {"n_steps": 10},
        "random-length": {"max_steps": 10},
        "no-u-turn": {"max_tree_depth": 8},
    },
    structures: {
        "canonical": {},
        "magnetic": {"field": [[0.0, 0.5], [-0.5, 0.0]]},
        "research": {"dim": 3, "g": 0.1},
        "random": {"dim": 3, "g": 0.1, "seed": 2},
    },
    tuners: {"dual-averaging": {"target_accept": 0.9}, "windowed-metric": {"kind": "dense"}},
    reducers: {"importance-weights": {}, "antithetic": {}, "control-variates": {"order": 2}},
}
PART_MODULES = list(BUILTIN_PARTS)


def _part_args(module) -> tuple:
    """What a part's factory takes by position: a Hamiltonian is built for a target."""
    return (hm.targets.get("banana"),) if module is hamiltonians else ()


def _refresh_all():
    hm.targets.registry.refresh()
    hm.samplers.registry.refresh()
    for module in PART_MODULES:
        module.registry.refresh()


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
    assert "yoshida4" not in hm.integrators.names()


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


def test_example_plugin_integrator(example_plugin):
    assert "yoshida4" in hm.integrators.names()
    assert hm.integrators.registry.source("yoshida4") == "hamiltonia-example"
    integrator = hm.integrators.get("yoshida4")
    assert type(integrator).__name__ == "Yoshida4"
    assert integrator.order == 4
    sampler = hm.samplers.build("hmc", hm.targets.get("banana"), integrator="yoshida4")
    assert sampler.integrator.n_grad_per_step == 3


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


# ---------------------------------------------------------------------------- parts

RUN = {"chains": 2, "warmup": 20, "draws": 20, "seed": 0, "progress": False}


@pytest.mark.parametrize("module", PART_MODULES, ids=lambda m: m.__name__)
def test_builtin_parts_are_listed_from_own_entry_points(module):
    names = module.names()
    assert set(BUILTIN_PARTS[module]) <= set(names)
    assert names == sorted(names)
    described = module.describe()
    for name in BUILTIN_PARTS[module]:
        assert module.registry.source(name) == "hamiltonia"
        assert described[name].strip() and "\n" not in described[name], name


@pytest.mark.parametrize(
    ("module", "name"),
    [(module, name) for module, built in BUILTIN_PARTS.items() for name in built],
    ids=lambda v: v if isinstance(v, str) else v.__name__.split(".")[-1],
)
def test_builtin_parts_build_with_their_options(module, name):
    part = module.get(name, *_part_args(module), **BUILTIN_PARTS[module][name])
    assert isinstance(part, module.registry.returns)
    assert set(BUILTIN_PARTS[module][name]) <= set(module.options(name))


def test_parts_build_as_the_classes_do():
    assert repr(integrators.get("two-stage")) == "TwoStage()"
    assert refresh.get("partial", rho=0.9).rho == 0.9
    assert repr(trajectories.get("static-length", n_steps=10)) == "StaticLength(10)"
    field = structures.get("research", dim=3, g=0.2).field
    np.testing.assert_array_equal(field, hm.research_field(3, 0.2))
    assert reducers.get("control-variates", order=2).order == 2
    assert tuners.get("windowed-metric", kind="dense").kind == "dense"
    assert integrators.options("processed-leapfrog") == ["tolerance", "max_iterations", "structure"]
    banana = hm.targets.get("banana")
    assert hamiltonians.options("random-mass") == ["mass_volatility", "metric"]
    assert hamiltonians.get("random-mass", banana).mass_volatility == (
        banana.research_mass_volatility
    )
    euclidean = hamiltonians.get("euclidean", banana, metric=[1.0, 2.0])
    assert type(euclidean) is hm.EuclideanHamiltonian and euclidean.target is banana
    np.testing.assert_array_equal(euclidean.metric.inverse_mass, [1.0, 2.0])


@pytest.mark.parametrize(
    ("module", "typo", "meant"),
    [
        (integrators, "leapfrg", "leapfrog"),
        (refresh, "partal", "partial"),
        (trajectories, "no-u-trn", "no-u-turn"),
        (structures, "reserch", "research"),
        (tuners, "dual-averagin", "dual-averaging"),
        (reducers, "antithetik", "antithetic"),
        (hamiltonians, "euclidian", "euclidean"),
    ],
)
def test_unknown_part_name_suggests_close_match(module, typo, meant):
    with pytest.raises(UnknownNameError, match=f"did you mean '{meant}'") as info:
        module.get(typo, *_part_args(module))
    assert f"unknown {module.registry.kind} {typo!r}" in str(info.value)
    assert ", ".join(module.names()) in str(info.value)  # the registered names are listed


def test_unknown_part_option_is_named():
    with pytest.raises(ValueError, match=r"'colour'.*'partial'"):
        refresh.get("partial", rho=0.5, colour="red")


def test_unknown_integrator_option_of_a_recipe_lists_the_registered_names():
    with pytest.raises(ValueError, match="integrator must be one of") as info:
        hm.sample("banana", "hmc", integrator="leapfrg", **RUN)
    message = str(info.value)
    assert all(repr(name) in message for name in integrators.names())
    assert "did you mean 'leapfrog'" in message
    with pytest.raises(ValueError, match="field must be None, 'research', 'random'"):
        hm.sample("banana", "hmc", field="reserch", **RUN)


def _sampler_parts(sampler):
    return sampler.integrator, sampler.refresh, sampler.trajectory, sampler.tuners


def test_recipes_build_their_parts_through_the_registries():
    target = hm.targets.get("banana")
    sampler = hm.samplers.build("hmc", target, metric="dense", rho=0.5, n_steps=7)
    integrator, momentum, trajectory, tuner_list = _sampler_parts(sampler)
    assert repr(integrator) == "Leapfrog()"
    assert repr(momentum) == "PartialRefresh(rho=0.5)"
    # From 4 to 7 steps: the recipe's default jitter on a target of the default setting.
    assert repr(trajectory) == repr(trajectories.get("metropolis", min_steps=4, max_steps=7))
    assert [type(t).__name__ for t in tuner_list] == ["DualAveraging", "WindowedMetric"]
    s2 = hm.samplers.build("a-s2hmc", target, control_variates=1, fixed_point_tolerance=1e-8)
    assert s2.integrator.tolerance == 1e-8
    assert type(s2.reducer).__name__ == "ControlVariates"
    assert type(s2.reducer.inner).__name__ == "AntitheticPairs"
    assert type(s2.reducer.inner.inner).__name__ == "ImportanceWeights"
    assert type(hm.samplers.build("nuts", target).trajectory).__name__ == "NoUTurn"
    # A canonical structure by name is the canonical flow.
    canonical = hm.samplers.build("hmc", target, field="canonical", shadow="separable")
    assert canonical.integrator.structure.is_canonical


def test_a_part_registered_in_process_is_usable_by_name(cleanup_runtime):
    class HalfLeapfrog(hm.Splitting):
        """Two leapfrog half steps (a test integrator, as a coefficient table)."""

        kicks = (0.25, 0.5, 0.25)
        drifts = (0.5, 0.5)

    cleanup_runtime.append((integrators.registry, "my-int"))
    integrators.register("my-int", HalfLeapfrog)
    assert "my-int" in integrators.names()
    assert integrators.registry.source("my-int") == "<runtime>"
    assert integrators.describe()["my-int"].startswith("Two leapfrog half steps")
    result = hm.sample("banana", "hmc", integrator="my-int", n_steps=3, **RUN)
    assert np.all(np.isfinite(result.draws))
    assert np.all(result.stats["n_grad"] == 2 * result.stats["n_steps"])
    # A coefficient table compiles with no kernel of its own.
    assert result.attrs["compiled"] is True
    # And follows a magnetic field, which it is given as its structure.
    sampler = hm.samplers.build("mhmc", hm.targets.get("banana"), integrator="my-int")
    assert type(sampler.integrator) is HalfLeapfrog
    assert not sampler.integrator.structure.is_canonical
    with pytest.raises(ValueError, match="already registered"):
        integrators.register("my-int", HalfLeapfrog)
    with pytest.raises(ValueError, match="already registered"):
        integrators.register("leapfrog", HalfLeapfrog)


def test_an_integrator_factory_without_a_structure(cleanup_runtime):
    def plain():
        """A leapfrog that knows no structure."""
        return hm.Leapfrog()

    cleanup_runtime.append((integrators.registry, "plain"))
    integrators.register("plain", plain)
    sampler = hm.samplers.build("hmc", hm.targets.get("banana"), integrator="plain")
    assert type(sampler.integrator) is hm.Leapfrog
    with pytest.raises(ValueError, match="takes no Poisson structure"):
        hm.samplers.build("mhmc", hm.targets.get("banana"), integrator="plain")


def test_a_factory_of_the_wrong_kind_is_refused(cleanup_runtime):
    cleanup_runtime.append((integrators.registry, "not-an-integrator"))
    integrators.register("not-an-integrator", lambda: hm.FullRefresh())
    with pytest.raises(TypeError, match="returned FullRefresh, not a hamiltonia Integrator"):
        integrators.get("not-an-integrator")
    with pytest.raises(TypeError):
        integrators.register("not-callable", 42)


def test_a_structure_registered_in_process_is_usable_as_a_field(cleanup_runtime):
    seen = {}

    def corner(dim, g):
        """A field on the last two coordinates."""
        seen.update(dim=dim, g=g)
        field = np.zeros((dim, dim))
        field[-2, -1], field[-1, -2] = g, -g
        return hm.MagneticStructure(field)

    cleanup_runtime.append((structures.registry, "corner"))
    structures.register("corner", corner)
    target = hm.targets.get("gaussian", dim=4)
    sampler = hm.samplers.build("hmc", target, field="corner", g=0.3)
    assert seen == {"dim": 4, "g": 0.3}
    assert sampler.integrator.structure.field[2, 3] == 0.3
    hm.samplers.build("hmc", target, field="corner")  # g: the target's research value
    assert seen["g"] == target.research_field_strength
    result = hm.sample(target, "hmc", field="corner", **RUN)
    assert np.all(np.isfinite(result.draws))
    with pytest.raises(ValueError, match="g applies to a field with a strength"):
        hm.samplers.build("hmc", target, field="canonical", g=0.3)
    with pytest.raises(ValueError, match="needs the field matrix"):
        hm.samplers.build("hmc", target, field="magnetic")


@pytest.mark.parametrize("module", PART_MODULES, ids=lambda m: m.__name__)
def test_part_plugin_that_fails_to_import(module, tmp_path, on_sys_path):
    _fake_distribution(
        tmp_path,
        "broken_part",
        "broken-part",
        f"[{module.registry.group}]\nbroken-part = broken_part_does_not_exist:factory\n",
    )
    _refresh_all()
    with pytest.warns(PluginWarning, match="broken-part") as record:
        names = module.names()
    assert any("broken-part" in str(w.message) for w in record)
    assert "broken-part" not in names
    assert set(BUILTIN_PARTS[module]) <= set(names)


def test_part_plugin_clashing_with_a_builtin(tmp_path, on_sys_path):
    _fake_distribution(
        tmp_path,
        "clash_plugin",
        "clash-plugin",
        "[hamiltonia.integrators]\nleapfrog = hamiltonia.integrators.splitting:TwoStage\n"
        "[hamiltonia.refreshes]\nfull = hamiltonia.refresh.momentum:PartialRefresh\n",
    )
    _refresh_all()
    with pytest.warns(PluginWarning, match="integrator 'leapfrog' is registered more than once"):
        assert integrators.registry.source("leapfrog") == "hamiltonia"
    with pytest.warns(PluginWarning, match="clash-plugin"):
        assert refresh.registry.source("full") == "hamiltonia"
    assert type(integrators.get("leapfrog")) is hm.Leapfrog
    assert type(refresh.get("full")) is hm.FullRefresh


def test_part_plugin_found_through_its_entry_point(tmp_path, on_sys_path):
    module_dir = tmp_path / "my_parts"
    module_dir.mkdir()
    (module_dir / "__init__.py").write_text(
        "import hamiltonia as hm\n\n\n"
        "class Hop(hm.Splitting):\n"
        '    """A leapfrog from a plugin."""\n\n'
        "    kicks = (0.5, 0.5)\n"
        "    drifts = (1.0,)\n"
    )
    _fake_distribution(
        tmp_path, "my_parts", "my-parts", "[hamiltonia.integrators]\nhop = my_parts:Hop\n"
    )
    _refresh_all()
    try:
        assert integrators.registry.source("hop") == "my-parts"
        result = hm.sample("banana", "hmc", integrator="hop", n_steps=3, **RUN)
        plain = hm.sample("banana", "hmc", integrator="leapfrog", n_steps=3, **RUN)
        np.testing.assert_array_equal(result.draws, plain.draws)
    finally:
        sys.modules.pop("my_parts", None)


def test_a_hamiltonian_registered_in_process_is_usable_by_name(cleanup_runtime):
    def heavy(target, metric=None, mass: float = 4.0):
        """A Euclidean Hamiltonian of a heavier mass (a test plugin's)."""
        base = hm.EuclideanHamiltonian(target, metric)
        return hm.EuclideanHamiltonian(target, base.metric.inverse_mass / mass
                                       if hasattr(base.metric, "inverse_mass")
                                       else np.full(target.dim, 1.0 / mass))  # fmt: skip

    cleanup_runtime.append((hamiltonians.registry, "my-heavy"))
    hamiltonians.register("my-heavy", heavy)
    assert "my-heavy" in hamiltonians.names()
    assert hamiltonians.registry.source("my-heavy") == "<runtime>"
    described = hamiltonians.describe()["my-heavy"]
    assert described == "A Euclidean Hamiltonian of a heavier mass (a test plugin's)."
    assert hamiltonians.options("my-heavy") == ["metric", "mass"]
    target = hm.targets.get("banana")
    sampler = hm.samplers.build("hmc", target, hamiltonian="my-heavy")
    np.testing.assert_array_equal(sampler.hamiltonian.metric.inverse_mass, [0.25, 0.25])
    # nuts's adapted diagonal metric reaches the factory as a DiagonalMetric.
    sampler = hm.samplers.build("nuts", target, hamiltonian="my-heavy")
    assert type(sampler.hamiltonian.metric).__name__ == "DiagonalMetric"
    result = hm.sample("banana", "hmc", hamiltonian="my-heavy", n_steps=3, **RUN)
    assert np.all(np.isfinite(result.draws))
    with pytest.raises(ValueError, match="already registered"):
        hamiltonians.register("euclidean", heavy)
    with pytest.raises(TypeError, match="returned FullRefresh, not a hamiltonia Hamiltonian"):
        cleanup_runtime.append((hamiltonians.registry, "not-a-hamiltonian"))
        hamiltonians.register("not-a-hamiltonian", lambda target: hm.FullRefresh())
        hamiltonians.get("not-a-hamiltonian", target)


def test_hamiltonian_plugin_found_through_its_entry_point(tmp_path, on_sys_path):
    module_dir = tmp_path / "my_energy"
    module_dir.mkdir()
    (module_dir / "__init__.py").write_text(
        "import numpy as np\n"
        "import hamiltonia as hm\n\n\n"
        "def light(target):\n"
        '    """A Euclidean Hamiltonian of mass 1/4, from a plugin."""\n'
        "    return hm.EuclideanHamiltonian(target, np.full(target.dim, 4.0))\n"
    )
    _fake_distribution(
        tmp_path, "my_energy", "my-energy", "[hamiltonia.hamiltonians]\nlight = my_energy:light\n"
    )
    _refresh_all()
    try:
        assert hamiltonians.registry.source("light") == "my-energy"
        assert (
            hamiltonians.describe()["light"]
            == "A Euclidean Hamiltonian of mass 1/4, from a plugin."
        )
        run = hm.sample("banana", "hmc", hamiltonian="light", n_steps=3, step_size=0.1, **RUN)
        by_metric = hm.sample("banana", "hmc", metric=[4.0, 4.0], n_steps=3, step_size=0.1, **RUN)
        np.testing.assert_array_equal(run.draws, by_metric.draws)
    finally:
        sys.modules.pop("my_energy", None)


def test_parts_registered_in_process_do_not_leak():
    assert not {"my-int", "plain", "not-an-integrator", "hop"} & set(integrators.names())
    assert "corner" not in structures.names()
    assert not {"my-heavy", "not-a-hamiltonian", "light"} & set(hamiltonians.names())


def test_describe_gives_the_whole_first_sentence_as_plain_text():
    def factory(*, setting="default"):
        """A test target whose first sentence runs over two lines, with :math:`\\rho` and
        ``code`` in it. A second sentence is not shown.

        Details.
        """
        return hm.targets.get("gaussian", dim=2)

    hm.targets.register("two-line-sentence", factory)
    try:
        text = hm.targets.describe()["two-line-sentence"]
    finally:
        hm.targets.registry._extra.pop("two-line-sentence", None)
    assert text == (
        "A test target whose first sentence runs over two lines, with ρ and code in it."
    )


def test_an_unknown_option_names_the_samplers_that_take_it():
    """``trajectory=`` is an option of ``hmc``, not of ``nuts`` (the default): the message
    says where it belongs."""
    with pytest.raises(ValueError, match=r"unknown option 'trajectory' for sampler 'nuts'.*"
                       r"'trajectory' is an option of the sampler .*\bhmc\b"):  # fmt: skip
        hm.samplers.build("nuts", hm.targets.get("banana"), trajectory="delayed-rejection")
    with pytest.raises(ValueError, match=r"valid options: [^(]*$"):
        hm.samplers.build("nuts", hm.targets.get("banana"), no_such_option=1)
