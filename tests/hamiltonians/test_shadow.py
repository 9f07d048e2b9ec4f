"""The separable shadow Hamiltonian of S2HMC, its weights, and the compositions it refuses."""

import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import (
    EuclideanHamiltonian,
    LeapfrogShadowHamiltonian,
    RandomMassHamiltonian,
    SeparableShadowHamiltonian,
)
from hamiltonia.refresh.momentum import MetropolisPartialRefresh, PartialRefresh
from hamiltonia.structures.magnetic import FIELD_AUX
from hamiltonia.targets.base import FunctionTarget
from hamiltonia.testing import assert_paths_agree, energy_error_slope
from hamiltonia.trajectories.no_u_turn import NoUTurn

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
        ({"shadow": "magnetic"}, "shadow must be None, 'separable' or 'leapfrog'"),
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


def _slope(target, shadow, integrator, base, total_time=0.4):
    """Log-log slope of the shadow's error over a fixed time against the step size."""
    rng = np.random.default_rng(3)
    n = 8
    start = base.evaluate(rng.normal(size=(n, target.dim)) * 0.7, rng.normal(size=(n, target.dim)))
    # Half the chains with the field's sign reversed: the shadow follows the sign.
    start.aux[FIELD_AUX] = (np.arange(n) % 2).astype(float)[:, None]
    return energy_error_slope(
        integrator, base, energy=shadow.energy, start=start, total_time=total_time,
        n_steps=(16, 32, 64, 128),
    )  # fmt: skip


@pytest.mark.parametrize("metric", ["identity", "diagonal"])
@pytest.mark.parametrize("magnetic", [False, True])
def test_the_leapfrog_conserves_its_shadow_to_fourth_order(magnetic, metric):
    """Slope 4 for the leapfrog's shadow (finite-difference curvature) and for the magnetic
    leapfrog's with the corrected sign; the printed sign of the magnetic term leaves slope 2
    (spec/seed000_004.md §6 and erratum 3). H's own slope is 2 (test_properties)."""
    target = hm.targets.get("blr-heart")
    base = EuclideanHamiltonian(
        target, None if metric == "identity" else np.linspace(0.5, 2.0, target.dim)
    )
    field = hm.random_field(target.dim, 0.5, seed=1) if magnetic else None
    integrator = hm.Leapfrog(structure=hm.MagneticStructure(field) if magnetic else None)
    corrected = LeapfrogShadowHamiltonian(base, field=field)
    assert abs(_slope(target, corrected, integrator, base) - 4.0) < 0.3
    if magnetic:
        printed = LeapfrogShadowHamiltonian(base, field=field, shadow_sign="printed")
        assert abs(_slope(target, printed, integrator, base) - 2.0) < 0.3


def test_the_target_hessian_and_finite_differences_agree_to_the_truncation_order():
    """hessian='target' (autograd's hvp) and the central differences of step eps differ by
    O(eps^4) in the energy: a quarter-size step cuts the gap 256-fold (within 2x)."""
    pytest.importorskip("autograd")
    import autograd.numpy as anp

    target = FunctionTarget.from_logp(
        lambda x: -0.5 * anp.sum(x**2, axis=-1) - 0.1 * anp.sum(x**4, axis=-1), dim=3,
        vectorized=True,
    )  # fmt: skip
    base = EuclideanHamiltonian(target)
    exact = LeapfrogShadowHamiltonian(base, hessian="target")
    differenced = LeapfrogShadowHamiltonian(base)
    rng = np.random.default_rng(5)
    state = base.evaluate(rng.normal(size=(4, 3)), rng.normal(size=(4, 3)))
    gaps = []
    for eps in (0.2, 0.05):
        step = np.full(4, eps)
        gaps.append(np.abs(exact.energy(state, step) - differenced.energy(state, step)))
    ratio = gaps[0] / gaps[1]
    assert np.all((ratio > 128) & (ratio < 512)), ratio


@pytest.mark.parametrize("sampler", ["shmc", "pshmc", "smhmc"])
def test_non_separable_shadow_samplers_give_the_same_draws_on_both_paths(sampler):
    """Energies with finite differences, the tested refresh, the weights and the gradient
    counts (the energies' included) agree between the NumPy path and the compiled one.

    SMHMC's shadow also differences the magnetic flow's terms over the stencil: measured,
    the paths' last-bit differences reach 3e-9 in its acceptance rate (2e-10 in the draws,
    3e-11 for SHMC and PSHMC), hence 1e-8 there; a difference in the maths shows at 1e-3."""
    numpy_run, compiled_run = assert_paths_agree(
        "banana", sampler, chains=3, warmup=0, draws=10, seed=3, step_size=0.1,
        atol=1e-8 if sampler == "smhmc" else 1e-9,
    )  # fmt: skip
    # L leapfrog gradients (8 to 15: the default jitter) and two per energy: the refresh's
    # two, the trajectory's two.
    whole = ~numpy_run.stats["diverging"]
    steps = numpy_run.stats["n_steps"][whole]
    assert steps.min() >= 8 and steps.max() <= 15
    np.testing.assert_array_equal(numpy_run.stats["n_grad"][whole], steps + 8)
    # The momentum test is a real test: not every refresh is accepted over a run.
    assert 0 < compiled_run.stats["refresh_accepted"].mean() <= 1


def test_non_separable_shadow_compositions_are_checked():
    banana = hm.targets.get("banana")
    # The tree is weighed against a fresh Gaussian momentum: not the non-separable shadow's.
    with pytest.raises(ValueError, match="needs a Metropolis momentum test"):
        hm.samplers.get("nuts")(banana, shadow="leapfrog")
    with pytest.raises(ValueError, match="shadow_sign applies to the magnetic term"):
        hm.samplers.get("shmc")(banana, shadow_sign="printed")
    no_hvp = FunctionTarget.from_functions(
        lambda x: -0.5 * np.sum(x**2, axis=-1),
        lambda x: (-0.5 * np.sum(x**2, axis=-1), -x),
        dim=2,
    )
    with pytest.raises(ValueError, match="hessian='target' needs target"):
        hm.samplers.get("shmc")(no_hvp, hessian="target")
    # banana has a hand-written hvp: the NumPy path uses it, the compiled one cannot.
    with pytest.warns(hm.FallbackWarning, match="hamiltonian LeapfrogShadowHamiltonian"):
        run = hm.sample(banana, "shmc", hessian="target", chains=2, warmup=20, draws=20,
                        seed=0, progress=False)  # fmt: skip
    assert not run.attrs["compiled"] and np.all(np.isfinite(run.log_weights))
    with pytest.raises(ValueError, match="apply to shadow='leapfrog'"):
        hm.samplers.get("s2hmc")(banana, shadow_sign="printed")
    with pytest.raises(ValueError, match="Metropolis momentum test"):
        hm.HamiltonianSampler(
            LeapfrogShadowHamiltonian(EuclideanHamiltonian(banana)),
            hm.StaticLength(5),
            refresh=hm.PartialRefresh(0.5),
        )
    smhmc = hm.samplers.get("smhmc")(banana)
    assert isinstance(smhmc.refresh, MetropolisPartialRefresh)
    assert smhmc.refresh.rho == 0.7 and smhmc.hamiltonian.field is not None
