"""The composition helpers (:mod:`hamiltonia.samplers.composition`): each refuses a bad option
naming it and its valid range, each builds the part its options ask for, and a sampler
composed by hand from them is the recipe's, draw for draw."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric
from hamiltonia.samplers import composition as make
from hamiltonia.samplers import recipes
from hamiltonia.samplers.core_recipes import DEFAULT_N_STEPS_JITTER
from hamiltonia.structures.magnetic import MagneticStructure
from hamiltonia.trajectories.no_u_turn import NoUTurn


@pytest.fixture(scope="module")
def banana():
    return hm.targets.get("banana")


def test_the_helpers_are_public_from_hamiltonia_samplers():
    assert hm.samplers.composition is make
    assert "composition" in hm.samplers.__all__
    for name in make.__all__:
        assert getattr(make, name).__doc__, name
    assert recipes.MAX_STEPS == make.MAX_STEPS  # still importable where it was


# -- validation: a bad option is refused naming the parameter and its range ---------------

_G = np.array([[0.0, 1.0], [-1.0, 0.0]])

BAD = [
    (make.hamiltonian, {"metric": "diag"}, r"metric must be 'identity', 'diagonal' or 'dense'"),
    (make.hamiltonian, {"metric": [1.0]}, r"metric diagonal must have length dim=2"),
    (make.hamiltonian, {"mass_volatility": -1.0}, r"mass_volatility must be a finite number >= 0"),
    (make.structure, {"field": "bent"}, r"field must be None, 'research', 'random'"),
    (make.structure, {"field": np.eye(2)}, r"field"),
    (make.structure, {"g": 0.3}, r"g is the strength of a magnetic field"),
    (make.structure, {"field": _G, "g": 0.3}, r"g applies to field='research' or 'random'"),
    (make.structure, {"field": "random", "field_seed": -1}, r"field_seed must be an integer >= 0"),
    (make.structure, {"field": "canonical", "g": 0.3}, r"g applies to a field with a strength"),
]


@pytest.mark.parametrize(("helper", "options", "message"), BAD, ids=lambda v: str(v)[:40])
def test_target_helpers_name_the_bad_option(banana, helper, options, message):
    with pytest.raises(ValueError, match=message):
        helper(banana, **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shadow": "fourth"}, r"shadow must be None, 'separable' or 'leapfrog', got 'fourth'"),
        ({"shadow": None, "hessian": "target"}, r"hessian and shadow_sign apply to shadow="),
        ({"shadow": "separable", "shadow_sign": "printed"}, r"hessian and shadow_sign apply"),
        ({"shadow": "leapfrog", "hessian": "exact"}, r"hessian must be one of"),
        ({"shadow": "leapfrog", "shadow_sign": "x"}, r"shadow_sign must be one of"),
        ({"shadow": "leapfrog", "integrator": "two-stage"}, r"got integrator='two-stage'"),
        ({"shadow": "separable", "integrator": "two-stage"}, r"got integrator='two-stage'"),
        ({"shadow": "separable", "structure": MagneticStructure(_G)}, r"magnetic field"),
        (
            {"shadow": "separable", "fixed_point_tolerance": -1.0},
            r"fixed_point_tolerance must be a finite number > 0",
        ),
        (
            {"shadow": "separable", "fixed_point_max_iterations": 0},
            r"fixed_point_max_iterations must be an integer",
        ),
    ],
)
def test_with_shadow_names_the_bad_option(banana, options, message):
    shadow = options.pop("shadow")
    with pytest.raises(ValueError, match=message):
        make.with_shadow(make.hamiltonian(banana), shadow, **options)


def test_with_shadow_needs_a_fixed_mass(banana):
    random_mass = make.hamiltonian(banana, mass_volatility=0.1)
    with pytest.raises(ValueError, match=r"needs a fixed mass \(mass_volatility=0\)"):
        make.with_shadow(random_mass, "separable")


@pytest.mark.parametrize(
    ("helper", "args", "options", "message"),
    [
        (make.integrator, ("four-stage",), {}, r"integrator must be one of 'leapfrog'"),
        (
            make.integrator,
            (hm.Leapfrog(), MagneticStructure(_G)),
            {},
            r"give the magnetic field either through field= or inside the Integrator",
        ),
        (make.metropolis_trajectory, (0,), {}, r"n_steps must be an integer in \[1, 1000000\]"),
        (make.metropolis_trajectory, (10**9,), {}, r"n_steps must be an integer in \[1, "),
        (make.metropolis_trajectory, (2.5,), {}, r"n_steps must be an integer"),
        (
            make.metropolis_trajectory,
            (5,),
            {"n_steps_jitter": 1.5},
            r"n_steps_jitter must lie in \[0, 1\]",
        ),
        (
            make.metropolis_trajectory,
            (5,),
            {"n_steps_jitter": True},
            r"n_steps_jitter must be a number in \[0, 1\]",
        ),
        (
            make.metropolis_trajectory,
            (5,),
            {"step_size_jitter": 1.0},
            r"step_size_jitter must lie in \[0, 1\)",
        ),
        (make.no_u_turn, (0,), {}, r"max_tree_depth must be an integer in \[1, 20\]"),
        (make.no_u_turn, (21,), {}, r"max_tree_depth must be an integer in \[1, 20\]"),
        (make.no_u_turn, (10, "hmc"), {}, r"criterion must be one of 'stan', 'numpyro'"),
        (make.momentum_refresh, (1.5,), {}, r"rho must lie in \[0, 1\), got 1.5"),
        (make.momentum_refresh, (-0.1,), {}, r"rho must lie in \[0, 1\)"),
        (make.step_size_tuners, (), {"adapt_step_size": "no"}, r"adapt_step_size must be True"),
        (
            make.step_size_tuners,
            (),
            {"adapt_step_size": False},
            r"step_size must be given when adapt_step_size=False",
        ),
        (make.step_size_tuners, (), {"target_accept": 1.0}, r"target_accept must lie in \(0, 1\)"),
        (make.metric_tuners, ("diag",), {}, r"metric must be 'identity', 'diagonal' or 'dense'"),
        (make.metric_tuners, ("dense", (75, 25)), {}, r"adapt_windows must be three integers"),
        (make.metric_tuners, ("dense", (75, 0, 50)), {}, r"adapt_windows must be \(>= 0, >= 1"),
        (make.tuners, (), {"metric": "diagonal", "adapt_windows": "x"}, r"adapt_windows must be"),
        (make.tuners, (), {"target_accept": -1}, r"target_accept must lie in \(0, 1\)"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_part_helpers_name_the_bad_option(helper, args, options, message):
    with pytest.raises(ValueError, match=message):
        helper(*args, **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"antithetic": 3}, r"antithetic must be True or False, got 3"),
        ({"antithetic": "yes"}, r"antithetic must be True or False"),
        ({"control_variates": 3}, r"control_variates must be False, 1 or 2, got 3"),
        ({"control_variates": np.True_}, r"control_variates must be False, 1 or 2"),
    ],
)
def test_reducer_names_the_bad_option(banana, options, message):
    with pytest.raises(ValueError, match=message):
        make.reducer(make.hamiltonian(banana), **options)


def test_control_variates_refuse_a_target_with_constrained_draws(banana):
    target = hm.targets.get("banana")
    target.__class__ = type("Constrained", (type(banana),), {"constrain": lambda self, x: x})
    with pytest.raises(ValueError, match=r"control_variates: target Constrained reports"):
        make.reducer(make.hamiltonian(target), control_variates=1)


def test_compose_names_a_part_of_the_wrong_kind(banana):
    with pytest.raises(TypeError, match=r"hamiltonian must be a Hamiltonian"):
        make.compose(banana, make.metropolis_trajectory(5))
    with pytest.raises(TypeError, match=r"trajectory must be a TrajectoryPolicy"):
        make.compose(make.hamiltonian(banana), 5)
    with pytest.raises(TypeError, match=r"refresh must be a MomentumRefresh"):
        make.compose(make.hamiltonian(banana), make.metropolis_trajectory(5), refresh=0.5)


# -- what the helpers build -----------------------------------------------------------------


def test_the_parts_the_options_ask_for(banana):
    assert isinstance(make.hamiltonian(banana, metric="diagonal").metric, DiagonalMetric)
    assert isinstance(make.hamiltonian(banana, metric="dense").metric, DenseMetric)
    assert isinstance(make.hamiltonian(banana, mass_volatility=None), hm.RandomMassHamiltonian)
    assert make.structure(banana) is None
    assert make.structure(banana, "canonical") is None
    field = make.structure(banana, "research")
    np.testing.assert_allclose(field.field, [[0.0, 0.1], [-0.1, 0.0]])  # the research's g
    assert make.structure(banana, "research", g=0.3).field[0, 1] == 0.3
    ham = make.hamiltonian(banana)
    assert make.with_shadow(ham, None) == (ham, "leapfrog")
    shadowed, processed = make.with_shadow(ham, "separable")
    assert isinstance(shadowed, hm.SeparableShadowHamiltonian)
    assert isinstance(processed, hm.ProcessedLeapfrog)
    assert make.integrator(processed) is processed
    assert make.integrator("leapfrog", field).structure is field
    trajectory = make.metropolis_trajectory(10, n_steps_jitter=0.5, step_size_jitter=0.2)
    assert (trajectory.min_steps, trajectory.max_steps) == (5, 10)
    assert trajectory.step_size_jitter == 0.2
    tree = make.no_u_turn(6, "numpyro")
    assert isinstance(tree, NoUTurn) and tree.max_tree_depth == 6
    assert isinstance(make.momentum_refresh(0), hm.FullRefresh)
    assert isinstance(make.momentum_refresh(0.5), hm.PartialRefresh)
    leapfrog_shadow, _ = make.with_shadow(ham, "leapfrog")
    assert make.momentum_refresh(0.0, leapfrog_shadow).momentum_test
    assert make.step_size_tuners(0.1) == []
    assert [type(t).__name__ for t in make.step_size_tuners(0.1, adapt_step_size=True)] == [
        "DualAveraging"
    ]
    assert make.metric_tuners("identity", adapt_windows="not checked") == []
    kinds = [type(t).__name__ for t in make.tuners(metric="dense", adapt_windows=(10, 5, 10))]
    assert kinds == ["DualAveraging", "WindowedMetric"]
    assert make.reducer(ham) is None
    paired = make.reducer(shadowed, antithetic=True, control_variates=2)
    assert type(paired).__name__ == "ControlVariates"
    assert type(paired.inner).__name__ == "AntitheticPairs"
    assert isinstance(paired.inner.inner, hm.ImportanceWeights)
    sampler = make.compose(ham, make.metropolis_trajectory(5))
    assert sampler.name == "hamiltonian"  # build() gives it its registered name
    assert make.compose(ham, make.metropolis_trajectory(5), name="mine").name == "mine"


# -- composed by hand, a recipe's sampler: the same draws ----------------------------------


#: The number of steps' jitter of ``hmc`` and its presets on a target of the default setting.
JITTER = {"n_steps_jitter": DEFAULT_N_STEPS_JITTER}


def _hand_hmc(target):
    """``hmc`` with ``n_steps=5`` (from 3 to 5 steps: the default jitter)."""
    hamiltonian = make.hamiltonian(target)
    return make.compose(
        hamiltonian,
        integrator=make.integrator("leapfrog"),
        trajectory=make.metropolis_trajectory(5, **JITTER),
        refresh=make.momentum_refresh(0.0, hamiltonian),
        tuners=make.step_size_tuners(None),
        name="hmc",
    )


def _hand_mhmc(target):
    """``mhmc``: the research's field and the research's number of steps."""
    hamiltonian = make.hamiltonian(target)
    field = make.structure(target, "research")
    return make.compose(
        hamiltonian,
        integrator=make.integrator("leapfrog", field),
        trajectory=make.metropolis_trajectory(target.research_n_steps, **JITTER),
        refresh=make.momentum_refresh(0.0, hamiltonian),
        tuners=make.step_size_tuners(None),
        name="mhmc",
    )


def _hand_s2hmc(target):
    """``s2hmc`` with a diagonal metric: the separable shadow of the processed leapfrog."""
    adapt_metric = make.metric_tuners("diagonal")
    hamiltonian, integrator = make.with_shadow(
        make.hamiltonian(target, metric="diagonal"), "separable"
    )
    return make.compose(
        hamiltonian,
        integrator=make.integrator(integrator),
        trajectory=make.metropolis_trajectory(target.research_n_steps, **JITTER),
        refresh=make.momentum_refresh(0.0, hamiltonian),
        tuners=make.step_size_tuners(None, target_accept=0.95) + adapt_metric,
        reducer=make.reducer(hamiltonian),
        name="s2hmc",
    )


def _hand_nuts(target):
    """``nuts``: the no-U-turn tree, a diagonal metric adapted on Stan's windows."""
    return make.compose(
        make.hamiltonian(target, metric="diagonal"),
        integrator=make.integrator(),
        trajectory=make.no_u_turn(),
        tuners=make.tuners(metric="diagonal"),
        name="nuts",
    )


HAND = [
    ("hmc", {"n_steps": 5}, _hand_hmc),
    ("mhmc", {}, _hand_mhmc),
    ("s2hmc", {"metric": "diagonal"}, _hand_s2hmc),
    ("nuts", {}, _hand_nuts),
]
RUN = {"chains": 2, "warmup": 30, "draws": 10, "seed": 20261127, "progress": False}


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
@pytest.mark.parametrize(("recipe", "options", "by_hand"), HAND, ids=[h[0] for h in HAND])
def test_composed_by_hand_is_the_recipe_draw_for_draw(recipe, options, by_hand, compiled):
    target = hm.targets.get("banana")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = hm.sample(target, recipe, compiled=compiled, **RUN, **options)
        composed = hm.sample(target, sampler=by_hand(target), compiled=compiled, **RUN)
    assert composed.sampler == built.sampler == recipe
    np.testing.assert_array_equal(composed.draws, built.draws)
    if built.log_weights is not None:
        np.testing.assert_array_equal(composed.log_weights, built.log_weights)
