"""Compositions that would sample the wrong distribution are refused with errors naming the
parts; bad options name the parameter and its valid range; declared statistics reach the
result, the file and the ArviZ tree."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import ShadowHamiltonian
from hamiltonia.integrators import Integrator, Splitting
from hamiltonia.structures.base import PoissonStructure
from hamiltonia.trajectories.metropolis import StaticLength


class ToyShadow(ShadowHamiltonian):
    def energy(self, state, step_size=None):
        return self.base.energy(state, step_size)


class NonSeparableShadow(ToyShadow):
    needs_momentum_test = True


class WeightingReducer(hm.VarianceReducer):
    def log_weights(self, sampler, state, step_size):
        return np.zeros(state.q.shape[0])


def test_shadow_without_importance_weights_is_refused():
    target = hm.targets.get("banana")
    with pytest.raises(ValueError, match=r"hamiltonian ToyShadow .*importance weights"):
        hm.HamiltonianSampler(
            ToyShadow(hm.EuclideanHamiltonian(target)),
            StaticLength(5),
            reducer=hm.VarianceReducer(),
        )
    # With no reducer given, a shadow Hamiltonian gets the importance weights it needs.
    default = hm.HamiltonianSampler(ToyShadow(hm.EuclideanHamiltonian(target)), StaticLength(5))
    assert isinstance(default.reducer, hm.ImportanceWeights)
    # With a reducer that supplies weights the composition is accepted.
    hm.HamiltonianSampler(
        ToyShadow(hm.EuclideanHamiltonian(target)), StaticLength(5), reducer=WeightingReducer()
    )


def test_non_separable_shadow_with_a_plain_refresh_is_refused():
    target = hm.targets.get("banana")
    ham = NonSeparableShadow(hm.EuclideanHamiltonian(target))
    with pytest.raises(ValueError, match=r"NonSeparableShadow .*refresh PartialRefresh"):
        hm.HamiltonianSampler(
            ham, StaticLength(5), refresh=hm.PartialRefresh(0.5), reducer=WeightingReducer()
        )


class Bent(PoissonStructure):
    """A non-canonical structure (only its flag matters here)."""


class IgnoresStructure(Integrator):
    def step(self, hamiltonian, state, step_size):
        raise NotImplementedError


def test_integrator_that_ignores_a_non_canonical_structure_is_refused():
    with pytest.raises(ValueError, match=r"IgnoresStructure ignores .* non-canonical Bent"):
        IgnoresStructure(structure=Bent())
    Splitting((0.5, 0.5), (1.0,), structure=Bent())  # a splitting follows its structure


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rho": 1.0}, r"rho must lie in \[0, 1\), got 1.0 .*not ergodic"),
        ({"rho": -0.1}, r"rho must lie in \[0, 1\)"),
        ({"rho": "abc"}, r"rho must lie in \[0, 1\)"),
        ({"n_steps_jitter": 1.5}, r"n_steps_jitter must lie in \[0, 1\]"),
        ({"n_steps_jitter": "x"}, r"n_steps_jitter must be a number in \[0, 1\]"),
        ({"integrator": "four-stage"}, r"integrator must be one of 'leapfrog', 'naive-split'"),
        ({"step_size_jitter": 1.0}, r"step_size_jitter must lie in \[0, 1\)"),
        ({"metric": "diag"}, r"metric must be 'identity', 'diagonal' or 'dense' .*got 'diag'"),
        ({"adapt_step_size": "no"}, r"adapt_step_size must be True, False or None, got 'no'"),
        ({"n_steps": 10**9}, r"n_steps must be an integer in \[1, 1000000\]"),
        ({"metric": "diagonal", "adapt_windows": (75, 25)}, r"adapt_windows must be three"),
        ({"metric": "diagonal", "adapt_windows": (75, 0, 50)}, r"adapt_windows must be \(>= 0"),
    ],
)
def test_bad_options_name_the_parameter_and_range(options, message):
    with pytest.raises(ValueError, match=message):
        hm.samplers.build("hmc", hm.targets.get("banana"), **options)


@pytest.mark.parametrize(
    ("kicks", "drifts", "message"),
    [
        ((0.5, 0.5), (0.5, 0.5), "one more coefficient"),
        ((0.3, 0.3), (1.0,), "must sum to 1"),
        ((0.2, 0.4, 0.4), (0.5, 0.5), "palindromic"),
        ((0.5, 0.5), (float("nan"),), "finite"),
    ],
)
def test_bad_coefficient_tables(kicks, drifts, message):
    with pytest.raises(ValueError, match=message):
        Splitting(kicks, drifts)


class CountingLength(StaticLength):
    """A trajectory that declares one more statistic (runs on the NumPy path)."""

    def transition(self, sampler, state, step_size, rngs):
        nxt, info = super().transition(sampler, state, step_size, rngs)
        info["half_steps"] = 2 * info["n_steps"]
        return nxt, info

    def stats(self):
        return (*super().stats(), ("half_steps", "int64"))


def test_declared_statistics_reach_result_file_and_tree(tmp_path):
    target = hm.targets.get("banana")
    sampler = hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(target), CountingLength(4), step_size=0.1
    )
    with pytest.warns(hm.FallbackWarning, match="trajectory CountingLength"):
        run = hm.sample(target, sampler, chains=2, warmup=0, draws=20, seed=0, progress=False)
    assert run.stats["half_steps"].dtype == np.int64
    np.testing.assert_array_equal(run.stats["half_steps"], 8)
    path = run.save(tmp_path / "run.nc")
    np.testing.assert_array_equal(hm.load(path).stats["half_steps"], 8)
    tree = run.to_datatree()
    np.testing.assert_array_equal(tree["sample_stats"]["half_steps"].values, 8)
