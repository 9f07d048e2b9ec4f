"""A recipe takes its Hamiltonian and extra warm-up tuners by name (issue 48, "Reach"):
``hamiltonian=`` from the ``hamiltonia.hamiltonians`` registry, ``tuners=`` from
``hamiltonia.tuners``, a plugin's among them, from Python and from the command line."""

from __future__ import annotations

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.samplers import composition as make
from hamiltonia.samplers.core_recipes import DEFAULT_N_STEPS_JITTER
from hamiltonia.tuners import DualAveraging, WindowedMetric

RUN = {"chains": 2, "warmup": 0, "draws": 25, "seed": 4, "progress": False}
WARM = {"chains": 2, "warmup": 40, "draws": 25, "seed": 4, "progress": False}


def heavy(target):
    """A Euclidean Hamiltonian of mass 4 (a test plugin's, with no metric option)."""
    return hm.EuclideanHamiltonian(target, np.full(target.dim, 0.25))


class Short(hm.Tuner):
    """A plugin's tuner: at the end of warm-up, cut every trajectory short (``steps`` steps, or
    trees of depth ``depth``); it acts at the boundary of the compiled chunks."""

    def __init__(self, steps: int = 2, depth: int = 1):
        self.steps, self.depth = steps, depth
        self.finalized = 0

    def compiled(self, dim):
        return PartKernels()

    def boundaries(self, n_warmup):
        return [n_warmup]

    def update(self, sampler, chain, info, iteration):
        pass

    def update_chunk(self, sampler, chain, positions, first_iteration):
        pass

    def finalize(self, sampler, chain):
        self.finalized += 1
        trajectory = sampler.trajectory
        if hasattr(trajectory, "max_tree_depth"):
            trajectory.max_tree_depth = self.depth
        else:
            trajectory.min_steps = trajectory.max_steps = self.steps


@pytest.fixture
def registered(monkeypatch):
    """A Hamiltonian and a tuner registered in this process, as a plugin's entry points would
    register them."""
    for registry in (hm.hamiltonians.registry, hm.tuners.registry):
        monkeypatch.setattr(registry, "_extra", dict(registry._extra))
    hm.hamiltonians.register("heavy", heavy)
    hm.tuners.register("short", Short)


# ------------------------------------------------------------------------------ hamiltonian=


@pytest.mark.parametrize("sampler", ["hmc", "nuts", "mala", "mhmc"])
def test_the_built_in_hamiltonian_by_name_is_the_recipes_own(sampler):
    by_name = hm.sample("banana", sampler, hamiltonian="euclidean", **WARM)
    default = hm.sample("banana", sampler, **WARM)
    np.testing.assert_array_equal(by_name.draws, default.draws)


@pytest.mark.parametrize("sampler", ["hmc", "qihmc"])
def test_random_mass_by_name_is_the_research_random_mass(sampler):
    """hamiltonian="random-mass" takes the target's research mass volatility, as
    mass_volatility=None does: hmc with it is qihmc."""
    by_name = hm.sample("banana", sampler, hamiltonian="random-mass", n_steps=5, **WARM)
    qihmc = hm.sample("banana", "qihmc", n_steps=5, **WARM)
    np.testing.assert_array_equal(by_name.draws, qihmc.draws)
    beta = hm.samplers.build("hmc", hm.targets.get("banana"), hamiltonian="random-mass",
                             mass_volatility=0.05).hamiltonian.mass_volatility  # fmt: skip
    assert beta == 0.05


def test_a_hamiltonian_instance_or_class():
    target = hm.targets.get("gaussian", dim=3)
    inverse_mass = np.array([0.5, 1.0, 2.0])
    given = hm.sample(target, "hmc", hamiltonian=hm.EuclideanHamiltonian(target, inverse_mass),
                      step_size=0.3, n_steps=4, **RUN)  # fmt: skip
    by_metric = hm.sample(target, "hmc", metric=inverse_mass, step_size=0.3, n_steps=4, **RUN)
    np.testing.assert_array_equal(given.draws, by_metric.draws)
    by_class = hm.samplers.build("nuts", target, hamiltonian=hm.EuclideanHamiltonian)
    assert type(by_class.hamiltonian) is hm.EuclideanHamiltonian
    assert type(by_class.hamiltonian.metric).__name__ == "DiagonalMetric"  # adapted in warm-up
    random = hm.samplers.build(
        "nuts", target, hamiltonian=hm.RandomMassHamiltonian, mass_volatility=None
    )
    assert random.hamiltonian.mass_volatility == target.research_mass_volatility
    with pytest.raises(ValueError, match=r"needs mass_volatility.*None or above 0.*"
                                         r"RandomMassHamiltonian\(target, \.\.\.\)"):  # fmt: skip
        hm.samplers.build("nuts", target, hamiltonian=hm.RandomMassHamiltonian)


@pytest.mark.parametrize("sampler", ["hmc", "nuts"])
def test_a_registered_hamiltonian_by_name(registered, sampler):
    target = hm.targets.get("banana")
    run = hm.sample(target, sampler, hamiltonian="heavy", metric="identity", step_size=0.2,
                    **RUN)  # fmt: skip
    trajectory = (
        make.no_u_turn()
        if sampler == "nuts"
        else make.metropolis_trajectory(15, n_steps_jitter=DEFAULT_N_STEPS_JITTER)
    )
    by_hand = make.compose(heavy(target), trajectory, step_size=0.2)
    same = hm.sample(target, by_hand, **RUN)
    np.testing.assert_array_equal(run.draws, same.draws)
    plain = hm.sample(target, sampler, metric="identity", step_size=0.2, **RUN)
    assert not np.array_equal(run.draws, plain.draws)  # the mass moves the chains differently
    assert hm.hamiltonians.registry.source("heavy") == "<runtime>"


@pytest.mark.parametrize(
    ("sampler", "options", "words"),
    [
        ("hmc", {"hamiltonian": "eucldean"}, ["hamiltonian must be one of", "'euclidean'",
                                              "'random-mass'", "did you mean 'euclidean'"]),
        ("nuts", {"hamiltonian": 3}, ["nuts:", "hamiltonian must be one of"]),
        ("s2hmc", {"hamiltonian": "euclidean"}, ["s2hmc:", "hamiltonian='euclidean'",
                                                 "shadow='separable'"]),
        ("shmc", {"hamiltonian": "euclidean"}, ["shmc:", "shadow='leapfrog'"]),
        ("as2hmc", {"hamiltonian": "euclidean"}, ["as2hmc:", "hamiltonian="]),
        ("hmc", {"hamiltonian": "euclidean", "mass_volatility": 0.3},
         ["takes no mass_volatility"]),
        ("qihmc", {"hamiltonian": "euclidean"}, ["qihmc:", "mass_volatility=None"]),
        ("nuts", {"hamiltonian": "heavy", "metric": "dense"},
         ["hamiltonian='heavy' takes no metric", "metric='dense'", "metric='identity'"]),
        ("rwmh", {"hamiltonian": "euclidean"}, ["unknown option 'hamiltonian'", "'rwmh'"]),
    ],
)  # fmt: skip
def test_a_hamiltonian_the_recipe_cannot_take_is_refused(registered, sampler, options, words):
    with pytest.raises(ValueError) as info:
        hm.samplers.build(sampler, hm.targets.get("banana"), **options)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_a_hamiltonian_instance_must_match_the_metric_and_the_target():
    target = hm.targets.get("banana")
    plain = hm.EuclideanHamiltonian(target)
    with pytest.raises(ValueError, match="nuts: metric='diagonal' adapts the Hamiltonian's "
                                         "DiagonalMetric"):  # fmt: skip
        hm.samplers.build("nuts", target, hamiltonian=plain)
    assert hm.samplers.build("nuts", target, hamiltonian=plain, metric="identity").hamiltonian is (
        plain
    )
    with pytest.raises(ValueError, match="not both"):
        hm.samplers.build("hmc", target, hamiltonian=plain, metric=[1.0, 2.0])
    with pytest.raises(ValueError, match="built for another target"):
        hm.samplers.build("hmc", hm.targets.get("banana"), hamiltonian=plain)


# ----------------------------------------------------------------------------------- tuners=


def test_dual_averaging_by_name_adapts_a_fixed_step_size():
    added = hm.sample("banana", "hmc", step_size=0.3, tuners="dual-averaging", n_steps=5, **WARM)
    asked = hm.sample("banana", "hmc", step_size=0.3, adapt_step_size=True, n_steps=5, **WARM)
    fixed = hm.sample("banana", "hmc", step_size=0.3, n_steps=5, **WARM)
    np.testing.assert_array_equal(added.draws, asked.draws)
    assert np.all(fixed.stats["step_size"] == 0.3)
    assert not np.any(added.stats["step_size"] == 0.3)


@pytest.mark.parametrize("sampler", ["hmc", "nuts"])
def test_a_named_tuner_of_the_recipes_own_class_changes_nothing(sampler):
    target = hm.targets.get("banana")
    own = hm.samplers.build(sampler, target, metric="diagonal")
    named = hm.samplers.build(sampler, target, metric="diagonal",
                              tuners="dual-averaging, windowed-metric")  # fmt: skip
    assert [repr(t) for t in named.tuners] == [repr(t) for t in own.tuners]
    assert [type(t) for t in named.tuners] == [DualAveraging, WindowedMetric]


def test_a_tuner_instance_replaces_the_recipes_own_of_its_class():
    mine = DualAveraging(target_accept=0.95, gamma=0.1)
    sampler = hm.samplers.build("nuts", hm.targets.get("banana"), tuners=[mine])
    assert sampler.tuners[0] is mine
    assert [type(t) for t in sampler.tuners] == [DualAveraging, WindowedMetric]


@pytest.mark.parametrize("sampler", ["hmc", "nuts"])
def test_a_registered_tuner_by_name_is_added_and_acts(registered, sampler):
    run = hm.sample("banana", sampler, tuners="short", **WARM)
    default = hm.sample("banana", sampler, **WARM)
    built = hm.samplers.build(sampler, hm.targets.get("banana"), tuners=["short"])
    assert [type(t) for t in built.tuners][-1] is Short
    assert type(built.tuners[0]) is DualAveraging  # the recipe's own stay
    if sampler == "nuts":
        assert np.all(run.stats["n_steps"] == 1)  # trees of depth 1
    else:
        assert np.all(run.stats["n_steps"] == 2)
    assert not np.all(default.stats["n_steps"] == run.stats["n_steps"])
    # The step size was still adapted by the recipe's dual averaging.
    assert not np.allclose(run.stats["step_size"], 1.0)


@pytest.mark.parametrize(
    ("sampler", "options", "words"),
    [
        ("hmc", {"tuners": "dual-averagin"}, ["hmc: tuners: unknown tuner 'dual-averagin'",
                                              "did you mean 'dual-averaging'",
                                              "registered: chees, dual-averaging"]),
        ("nuts", {"tuners": [0.5]}, ["nuts:", "tuners must be", "registered:"]),
        ("hmc", {"tuners": 3}, ["tuners must be"]),
        ("hmc", {"tuners": ""}, ["unknown tuner ''"]),
        ("hmc", {"tuners": "dual-averaging", "step_size": 0.1, "adapt_step_size": False},
         ["tuners='dual-averaging' adapts the step size", "adapt_step_size=False"]),
        ("hmc", {"tuners": "windowed-metric"}, ["adapts a 'diagonal' metric",
                                                "metric='identity'"]),
        ("nuts", {"tuners": WindowedMetric("dense")}, ["adapts a 'dense' metric"]),
        ("rwmh", {"tuners": "windowed-metric"}, ["rwmh has no Hamiltonian"]),
        ("hmc", {"tuners": ["short", Short()]}, ["two tuners of one class, Short"]),
        ("s2hmc", {"tuners": "nope"}, ["s2hmc: tuners: unknown tuner"]),
    ],
)  # fmt: skip
def test_a_tuner_the_recipe_cannot_take_is_refused(registered, sampler, options, words):
    with pytest.raises(ValueError) as info:
        hm.samplers.build(sampler, hm.targets.get("banana"), **options)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_rwmh_takes_tuners():
    fixed = hm.samplers.build("rwmh", hm.targets.get("banana"), step_size=0.5)
    added = hm.samplers.build("rwmh", hm.targets.get("banana"), step_size=0.5,
                              tuners="dual-averaging")  # fmt: skip
    assert fixed.tuners == [] and [type(t) for t in added.tuners] == [DualAveraging]


# ------------------------------------------------------------------------- the command line


def test_from_the_command_line(registered, tmp_path):
    out = tmp_path / "run.nc"
    assert main(["sample", "banana", "--sampler", "hmc", "-O", "hamiltonian=heavy",
                 "-O", "tuners=short", "-O", "n_steps=3", "--warmup", "20", "--draws", "10",
                 "--chains", "2", "--seed", "1", "--no-progress", "-o", str(out)]) == 0  # fmt: skip
    run = hm.load(out)
    assert np.all(run.stats["n_steps"] == 2)


@pytest.mark.parametrize(
    "option", ["hamiltonian=euclidean", "tuners=dual-averaging", "hamiltonian=random-mass"]
)
def test_the_issues_command_lines(option, capsys):
    assert main(["sample", "banana", "-O", option, "--warmup", "20", "--draws", "10",
                 "--chains", "2", "--seed", "1", "--no-progress"]) == 0  # fmt: skip


def test_an_unknown_name_from_the_command_line_is_a_one_line_error(capsys):
    assert main(["sample", "banana", "-O", "hamiltonian=eucl"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hamiltonia: error: nuts: hamiltonian must be one of") and "\n" not in err
    assert main(["sample", "banana", "-O", "tuners=dual"]) == 2
    assert "unknown tuner 'dual'" in capsys.readouterr().err


def test_an_adapted_metric_with_a_hamiltonian_that_has_none_says_so():
    target = hm.targets.get("banana")
    ham = hm.hamiltonians.RelativisticHamiltonian(target)
    with pytest.raises(ValueError, match=r"has no metric: build it with a DenseMetric"):
        hm.samplers.build("nuts", target, hamiltonian=ham, metric="dense")
