"""The split integrators over data subsets (hamiltonia.integrators.data_split); their exact
properties (reversibility, volume, order, the integrate contract) are checked with every
other integrator's in test_properties.py."""

import itertools
import math
import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.compiled.plan import NotCompilable, plan_for
from hamiltonia.hamiltonians import EuclideanHamiltonian
from hamiltonia.integrators.data_split import (
    SCHEMES,
    DataSplit,
    make_split_integrator,
    split_sequence,
)
from hamiltonia.samplers import HamiltonianSampler
from hamiltonia.targets.linear import LinearRegression
from hamiltonia.targets.split import split_target
from hamiltonia.testing import assert_paths_agree, start_states
from hamiltonia.trajectories import StaticLength


def _data(n_obs=60, dim=4):
    return hm.targets.get("linear-regression", n_obs=n_obs, dim=dim, noise_scale=2.0)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("n_splits", [1, 2, 3, 5])
def test_a_step_is_consistent(scheme, n_splits):
    """Every subset is kicked for eps in all, and the drifts add up to eps: each scheme is
    consistent with the leapfrog of step eps (Algorithm 1's drift eps/D with D = 2(M - 1),
    not the eps/2 of the paper's eqs. 9-10)."""
    ops = split_sequence(scheme, n_splits)
    drifts = [op[1] for op in ops if op[0] == "drift"]
    assert math.isclose(math.fsum(drifts), 1.0, rel_tol=1e-15)
    for slot in range(n_splits):
        assert math.fsum(op[2] for op in ops if op[0] == "kick" and op[1] == slot) == 1.0
    if scheme == "symmetric" and n_splits > 1:
        assert drifts == [1.0 / (2 * (n_splits - 1))] * (2 * (n_splits - 1))
    if scheme != "randomised" or n_splits == 1:
        assert ops == ops[::-1]  # palindromic: symmetric, hence reversible


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("compiled", [False, True])
def test_one_split_is_the_leapfrog_bit_for_bit(scheme, compiled):
    """With M = 1 every scheme's chain is HMC's, draw for draw and bit for bit, on both
    paths (the randomised split draws no order for one subset)."""
    data = _data()
    options = dict(chains=2, warmup=20, draws=30, seed=5, progress=False, compiled=compiled,
                   step_size=0.05, n_steps=7, n_steps_jitter=0.0)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hmc = hm.sample(data, "hmc", **options)
        split = hm.sample(data, "split-hmc", scheme=scheme, n_splits=1, **options)
    assert split.attrs["compiled"] == hmc.attrs["compiled"] == compiled
    assert np.array_equal(split.draws, hmc.draws)
    assert np.array_equal(split.stats["energy"], hmc.stats["energy"])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_both_paths_agree(scheme):
    """The vectorised NumPy executor and the compiled kernel run the same tables with the
    same random numbers (the randomised split's orders included)."""
    assert_paths_agree(
        _data(), "split-hmc", scheme=scheme, n_splits=3, chains=3, warmup=0, draws=25,
        seed=2, step_size=0.04, n_steps=6,
    )  # fmt: skip


def test_both_paths_agree_under_the_no_u_turn_tree():
    """NUTS over the symmetric split (a negative step integrates backwards) and over the
    randomised split (backwards runs the reversed order)."""
    for scheme in ("symmetric", "randomised"):
        assert_paths_agree(
            _data(), "split-hmc", scheme=scheme, n_splits=3, trajectory="no-u-turn",
            chains=2, warmup=0, draws=15, seed=4, step_size=0.05,
        )  # fmt: skip


def test_gradients_are_counted_in_full_data_passes():
    """The symmetric split over M = 3 subsets: one subset gradient at the start, 2(M - 1)
    a step, and the whole density at the end: 1 + 4L + 3 subset gradients, ceil(/3) passes."""
    data = split_target(_data(), 3)
    ham = EuclideanHamiltonian(data)
    integrator = make_split_integrator("symmetric", 3)
    start = start_states(ham, integrator, 2, seed=0)
    integrator.start_counting(2)
    _, n_grad = integrator.integrate(ham, start, np.full(2, 0.01), 10)
    assert integrator.counted()["n_subset_grad"].tolist() == [44, 44]
    assert n_grad.tolist() == [15, 15]


def test_the_randomised_split_runs_backwards_in_the_reversed_order():
    """A step of -eps is the inverse of a step of eps for the order drawn (the no-U-turn
    tree relies on it), and the orders are uniform over the M! permutations."""
    data = split_target(_data(), 3)
    ham = EuclideanHamiltonian(data)
    integrator = make_split_integrator("randomised", 3)
    rngs = [np.random.default_rng(s) for s in range(6000)]
    start = integrator.randomise(start_states(ham, integrator, 6000, seed=1), rngs)
    forward, _ = integrator.integrate(ham, start.take(range(8)), np.full(8, 0.03), 5)
    back, _ = integrator.integrate(ham, forward, np.full(8, -0.03), 5)
    np.testing.assert_allclose(back.q, start.q[:8], atol=1e-11)
    np.testing.assert_allclose(back.p, start.p[:8], atol=1e-11)
    orders = [tuple(row) for row in start.aux["split_order"].astype(int)]
    counts = np.array([orders.count(p) for p in itertools.permutations(range(3))])
    expected = len(orders) / 6
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    # 5 degrees of freedom: P(chi2 > 20.5) = 0.001.
    assert chi2 < 20.5, counts


def test_a_target_split_otherwise_is_refused():
    data = split_target(_data(), 2)
    with pytest.raises(ValueError, match=r"SymmetricSplit\(n_splits=3\).*split 2 ways"):
        HamiltonianSampler(
            EuclideanHamiltonian(data), StaticLength(5), make_split_integrator("symmetric", 3)
        )
    with pytest.raises(ValueError, match="is not split"):
        HamiltonianSampler(
            EuclideanHamiltonian(_data()), StaticLength(5), make_split_integrator("naive", 2)
        )


def test_a_target_kernel_without_components_runs_on_the_numpy_path():
    """A row target with no compiled split kernel: the split integrator cannot evaluate its
    subsets through a called-back Python target (which evaluates the whole density only),
    so the run takes the NumPy path and says why."""

    class NoKernel(LinearRegression):
        def numba_kernel(self):
            return None

        def split_numba_kernel(self, boundaries):
            return None

    base = _data()
    data = NoKernel(base.X, base.y, noise_scale=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = hm.sample(data, "split-hmc", n_splits=3, chains=1, warmup=0, draws=5,
                        step_size=0.05, n_steps=3, progress=False)  # fmt: skip
    assert not run.attrs["compiled"]
    assert "no numba kernel" in run.attrs["path_reason"]
    sampler = hm.samplers.build("split-hmc", data, n_splits=3, step_size=0.05, n_steps=3)
    with pytest.raises(NotCompilable, match="evaluates 3 components of the target, whose "
                       "compiled kernel has no components"):  # fmt: skip
        plan_for(sampler, python_target=True)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"scheme": "leapfrog"}, "scheme must be one of 'naive', 'randomised', 'symmetric'"),
        ({"field": "research"}, "unknown option 'field'"),
        ({"shadow": "separable"}, "unknown option 'shadow'"),
        ({"integrator": "leapfrog"}, "unknown option 'integrator'"),
        ({"n_splits": 0}, r"n_splits .* in \[1, 60\]"),
        ({"n_splits": 61}, r"n_splits .* in \[1, 60\]"),
        ({"n_splits": 1.5}, r"n_splits .* in \[1, 60\]"),
    ],
)
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        hm.samplers.build("split-hmc", _data(), **options)


def test_the_recipe_refuses_what_the_split_replaces():
    """Called directly (not through the registry, which lists the valid options), the recipe
    names what a split integrator cannot do."""
    from hamiltonia.samplers.recipes import split_hmc

    with pytest.raises(ValueError, match="field='research' is not available"):
        split_hmc(_data(), field="research")
    with pytest.raises(ValueError, match="chooses its integrator by scheme="):
        split_hmc(_data(), integrator="leapfrog")


def test_registered_integrators_take_n_splits():
    for scheme in SCHEMES:
        integrator = hm.integrators.get(f"{scheme}-split", n_splits=4)
        assert isinstance(integrator, DataSplit) and integrator.n_splits == 4
    with pytest.raises(ValueError, match="n_splits"):
        hm.integrators.get("symmetric-split", n_splits=0)


def test_split_hmc_composes_with_reducers_and_an_adapted_metric():
    """Antithetic pairs, zero-variance control variates (the gradient at the draws is the
    data target's: a split target reports its coordinates unchanged) and a diagonal metric
    adapted in warm-up, over the split, on the compiled path."""
    data = _data(n_obs=90, dim=3)
    common = dict(n_splits=3, chains=2, warmup=60, draws=40, seed=1, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pair = hm.sample(data, "split-hmc", antithetic=True, **common)
        cv = hm.sample(data, "split-hmc", control_variates=1, **common)
        diagonal = hm.sample(data, "split-hmc", metric="diagonal", **common)
    assert pair.pairs == [[0, 1]] and pair.attrs["compiled"]
    assert cv.control_variate_summary().shape == (data.dim, 5)
    assert diagonal.attrs["compiled"] and diagonal.acceptance_rate > 0.5


def test_a_diverging_chain_stops_at_its_first_non_finite_subset_on_both_paths():
    """A step size far beyond stability: every trajectory overflows. The NumPy executor
    stops a chain at its first non-finite subset gradient, within a kick group too, as the
    kernel returns there, so both count the same subset gradients (the naive split: its
    groups hold every subset, and its trajectories overflow at the same step on both paths;
    the other schemes may overflow one step apart, rounding differences growing without
    bound)."""
    data = _data()
    common = dict(scheme="naive", n_splits=3, step_size=3.0, n_steps=400, chains=2, warmup=0,
                  draws=5, seed=2, progress=False)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        numpy_path = hm.sample(data, "split-hmc", compiled=False, **common)
        compiled = hm.sample(data, "split-hmc", compiled=True, **common)
    assert numpy_path.stats["diverging"].all() and compiled.stats["diverging"].all()
    np.testing.assert_array_equal(
        numpy_path.stats["n_subset_grad"], compiled.stats["n_subset_grad"]
    )


def test_another_array_backend_is_refused_clearly():
    from hamiltonia import backend

    data = split_target(_data(), 2)
    ham = EuclideanHamiltonian(data)
    integrator = make_split_integrator("symmetric", 2)
    start = start_states(ham, integrator, 2, seed=0)
    with backend.using("array_api_strict"):
        with pytest.raises(ValueError, match="runs on the NumPy backend and compiled"):
            integrator.integrate(ham, start, np.full(2, 0.01), 3)
