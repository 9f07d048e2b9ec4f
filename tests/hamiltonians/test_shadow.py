"""The separable shadow Hamiltonian of S2HMC, its weights, and the compositions it refuses."""

import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import (
    EuclideanHamiltonian,
    RandomMassHamiltonian,
    SeparableShadowHamiltonian,
)
from hamiltonia.momentum import PartialRefresh
from hamiltonia.no_u_turn import NoUTurn

DENSE = np.array([[1.0, 0.3], [0.3, 0.8]])


def _state(ham, n=5, seed=0):
    rng = np.random.default_rng(seed)
    return ham.evaluate(rng.normal(size=(n, 2)), rng.normal(size=(n, 2)))


def test_energy_is_h_plus_the_gradient_term_and_the_weight_is_their_difference():
    """H~ = U + p'M^-1 p / 2 + eps^2/24 grad U' M^-1 grad U, written out by hand."""
    base = EuclideanHamiltonian(hm.targets.get("banana"), DENSE)
    shadow = SeparableShadowHamiltonian(base)
    state = _state(base)
    eps = np.linspace(0.05, 0.3, 5)
    g = state.grad
    by_hand = (
        -state.log_prob
        + 0.5 * np.einsum("ci,ij,cj->c", state.p, DENSE, state.p)
        + eps**2 / 24 * np.einsum("ci,ij,cj->c", g, DENSE, g)
    )
    np.testing.assert_allclose(shadow.energy(state, eps), by_hand, rtol=1e-13)
    np.testing.assert_allclose(
        shadow.log_weight(state, eps), by_hand - base.energy(state), rtol=1e-10
    )
    with pytest.raises(ValueError, match="needs the step size"):
        shadow.energy(state)


def test_partial_refresh_keeps_the_shadow_extended_energy_exactly():
    """The refresh's momentum test would accept with probability one: the rotation keeps
    H~(q, p) + u'M^-1 u / 2 to rounding (spec/seed000_004.md §1.7), so no test is made."""
    base = EuclideanHamiltonian(hm.targets.get("banana"), DENSE)
    shadow = SeparableShadowHamiltonian(base)
    state = _state(base, n=6, seed=2)
    rngs = [np.random.default_rng(c) for c in range(6)]
    u = shadow.sample_momentum([np.random.default_rng(c) for c in range(6)])
    rho = 0.7
    refreshed = PartialRefresh(rho).refresh(shadow, state, rngs, np.full(6, 0.1))
    # The same draws, rotated by hand: (p, u) -> (rho p + s u, -s p + rho u).
    s = np.sqrt(1 - rho**2)
    np.testing.assert_allclose(refreshed.p, rho * state.p + s * u, rtol=1e-12)
    u_new = -s * state.p + rho * u
    eps = np.full(6, 0.1)
    before = shadow.energy(state, eps) + base.kinetic(u)
    after = shadow.energy(refreshed, eps) + base.kinetic(u_new)
    np.testing.assert_allclose(after, before, rtol=1e-13)


def test_bad_bases_are_refused():
    target = hm.targets.get("banana")
    with pytest.raises(ValueError, match="random mass"):
        SeparableShadowHamiltonian(RandomMassHamiltonian(target, 0.3))
    with pytest.raises(ValueError, match="not another shadow"):
        SeparableShadowHamiltonian(SeparableShadowHamiltonian(EuclideanHamiltonian(target)))
    with pytest.raises(TypeError, match="must be a Hamiltonian"):
        SeparableShadowHamiltonian(target)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"step_size_jitter": 0.1}, "jitter the number of steps"),
        ({"field": "research"}, "does not apply to a magnetic field"),
        ({"integrator": "two-stage"}, "integrates with the processed leapfrog"),
        ({"mass_volatility": 0.2}, "needs a fixed mass"),
        ({"shadow": "leapfrog"}, "shadow must be None or 'separable'"),
        ({"fixed_point_tolerance": -1.0}, "tolerance must be a finite number > 0"),
    ],
)
def test_invalid_compositions_are_refused_with_the_reason(options, message):
    with pytest.raises(ValueError, match=message):
        hm.samplers.get("s2hmc")(hm.targets.get("banana"), **options)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_shadow_run_carries_weights_into_the_summary_and_arviz(compiled, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.FallbackWarning)
        run = hm.sample("banana", "s2hmc", chains=2, warmup=100, draws=200, seed=1,
                        compiled=compiled, progress=False, output=tmp_path / "run.nc")  # fmt: skip
    assert run.log_weights.shape == (2, 200) and np.all(np.isfinite(run.log_weights))
    # log w = eps^2/24 |grad U|^2 >= 0, not all equal.
    assert np.all(run.log_weights >= 0) and np.ptp(run.log_weights) > 0
    kish = hm.diagnostics.kish_ess(run.log_weights)
    assert 0 < kish < run.log_weights.size
    unweighted = hm.diagnostics.ess(run.draws, "bulk")
    np.testing.assert_allclose(
        run.summary()["ess_bulk"], unweighted * kish / run.log_weights.size, rtol=1e-12
    )
    tree = run.to_datatree()
    assert "log_weight" in tree["sample_stats"].data_vars
    assert "fixed_point_iterations" in tree["sample_stats"].data_vars
    again = hm.load(tmp_path / "run.nc")
    np.testing.assert_array_equal(again.log_weights, run.log_weights)


def test_a_shadow_sampler_weighs_its_draws_by_default():
    sampler = hm.samplers.get("ps2hmc")(hm.targets.get("banana"))
    assert isinstance(sampler.reducer, hm.ImportanceWeights)
    assert isinstance(sampler.hamiltonian, SeparableShadowHamiltonian)
    assert sampler.refresh.rho == 0.7 and isinstance(sampler.integrator, hm.ProcessedLeapfrog)


def test_adaptive_and_jittered_s2hmc_are_compositions():
    """as2hmc is the no-U-turn tree over processed steps, js2hmc S2HMC with L ~ U{1..L}."""
    banana = hm.targets.get("banana")
    adaptive = hm.samplers.get("as2hmc")(banana)
    assert isinstance(adaptive.trajectory, NoUTurn)
    assert isinstance(adaptive.integrator, hm.ProcessedLeapfrog)
    assert isinstance(adaptive.reducer, hm.ImportanceWeights)
    jittered = hm.samplers.get("js2hmc")(banana)
    assert (jittered.trajectory.min_steps, jittered.trajectory.max_steps) == (1, 15)
