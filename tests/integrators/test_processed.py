"""The processed leapfrog of S2HMC: its maps, its shadow, its failures, on both paths.

The properties every integrator has (reversibility, volume, order, per-chain lengths) are
checked in ``test_properties.py``, where the processed leapfrog is one of the cases.
"""

import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import EuclideanHamiltonian, SeparableShadowHamiltonian
from hamiltonia.integrators import Leapfrog, ProcessedLeapfrog
from hamiltonia.integrators.processed import post_process, pre_process
from hamiltonia.testing import assert_paths_agree, energy_error_slope

METRICS = {
    "identity": None,
    "diagonal": np.array([0.5, 2.0]),
    "dense": np.array([[1.0, 0.3], [0.3, 0.8]]),
}


def _state(ham, n, seed):
    rng = np.random.default_rng(seed)
    return ham.evaluate(rng.normal(size=(n, ham.dim)) * 0.7, rng.normal(size=(n, ham.dim)))


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_post_processing_inverts_pre_processing(metric):
    """X^-1(X(q, p)) = (q, p) to 1e-8, and X(q, -p) = (q^, -p^) (spec/seed000_004.md §6)."""
    ham = EuclideanHamiltonian(hm.targets.get("banana"), METRICS[metric])
    start = _state(ham, 6, seed=1)
    eps = np.linspace(0.05, 0.2, 6)
    q_hat, p_hat, its, ok = pre_process(ham, start.q, start.p, eps, {}, 1e-12, 100)
    assert ok.all() and np.all(its >= 2)
    q, p, _, ok = post_process(ham, q_hat, p_hat, eps, {}, 1e-12, 100)
    assert ok.all()
    np.testing.assert_allclose(q, start.q, rtol=0, atol=1e-8)
    np.testing.assert_allclose(p, start.p, rtol=0, atol=1e-8)
    q_rev, p_rev, _, _ = pre_process(ham, start.q, -start.p, eps, {}, 1e-12, 100)
    np.testing.assert_allclose(q_rev, q_hat, rtol=0, atol=1e-10)
    np.testing.assert_allclose(p_rev, -p_hat, rtol=0, atol=1e-10)
    # The map moved the point: not an identity passing by default.
    assert np.max(np.abs(q_hat - start.q)) > 1e-3


def _energy_error_slope(ham, integrator, energy, total_time=0.4):
    # Step sizes from 0.025 down: the asymptotic regime on both targets.
    return energy_error_slope(
        integrator, ham, energy=energy, start=_state(ham, 8, seed=3), total_time=total_time,
        n_steps=(16, 32, 64, 128),
    )  # fmt: skip


@pytest.mark.parametrize("name", ["banana", "blr-heart"])
def test_the_processed_leapfrog_conserves_the_separable_shadow_to_fourth_order(name):
    """Over a fixed time the error in H~ falls as eps^4 and that in H as eps^2 (log-log
    slopes; spec/seed000_004.md §6 measured 4.2 and 2.0 on its quartic test potential)."""
    target = hm.targets.get(name)
    base = EuclideanHamiltonian(target)
    shadow = SeparableShadowHamiltonian(base)
    processed = ProcessedLeapfrog(tolerance=1e-13)
    slope_shadow = _energy_error_slope(base, processed, shadow.energy)
    slope_h = _energy_error_slope(base, processed, lambda s, eps: base.energy(s))
    assert abs(slope_shadow - 4.0) < 0.3, slope_shadow
    assert abs(slope_h - 2.0) < 0.3, slope_h
    # The plain leapfrog does not conserve H~ to fourth order: the processing matters.
    slope_plain = _energy_error_slope(base, Leapfrog(), shadow.energy)
    assert slope_plain < 3.0, slope_plain


def test_a_fixed_point_that_does_not_converge_rejects_and_is_counted():
    """One iteration allowed: every map fails, every proposal is a divergent rejection
    counted in fixed_point_failures, the chains stay where they started; both paths."""
    for compiled in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = hm.sample("banana", "s2hmc", chains=2, warmup=0, draws=20, seed=0,
                            step_size=0.1, fixed_point_max_iterations=1, compiled=compiled,
                            progress=False)  # fmt: skip
        assert run.attrs["compiled"] is compiled
        assert np.all(run.stats["fixed_point_failures"] == 1)
        assert np.all(run.stats["fixed_point_iterations"] == 1)
        assert np.all(run.stats["diverging"]) and not np.any(run.stats["accepted"])
        assert np.all(run.stats["n_grad"] == 2)  # the pair of gradients of one iteration
        assert np.all(run.draws == run.draws[:, :1])
        assert np.all(np.isfinite(run.draws))


@pytest.mark.parametrize("sampler", ["ps2hmc", "as2hmc"])
def test_both_paths_give_the_same_draws_weights_and_fixed_point_counts(sampler):
    """Metropolis and no-U-turn trajectories of processed steps: equal on both paths,
    fixed-point counts included (the tree stops counting a chain whose subtree failed)."""
    numpy_run, _ = assert_paths_agree(
        "banana", sampler, chains=3, warmup=0, draws=8, seed=3, step_size=0.1
    )
    if sampler == "as2hmc":
        return
    # Gradients: two per fixed-point iteration, one at q^, L steps (8 to 15: the default
    # jitter), one at the end (a trajectory that diverged stopped early).
    expected = 2 * numpy_run.stats["fixed_point_iterations"] + numpy_run.stats["n_steps"] + 2
    whole = ~numpy_run.stats["diverging"]
    assert whole.mean() > 0.5
    np.testing.assert_array_equal(numpy_run.stats["n_grad"][whole], expected[whole])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tolerance": 0.0}, "tolerance must be a finite number > 0"),
        ({"tolerance": "a"}, "tolerance"),
        ({"max_iterations": 0}, r"max_iterations must be an integer in \[1, 100000\]"),
    ],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ProcessedLeapfrog(**kwargs)
    # Through a recipe, the error names the recipe's option.
    option = {f"fixed_point_{k}": v for k, v in kwargs.items()}
    with pytest.raises(ValueError, match="fixed_point_" + message):
        hm.sample("banana", "s2hmc", progress=False, **option)


def test_a_magnetic_field_is_refused():
    structure = hm.MagneticStructure(hm.research_field(3, 0.1))
    with pytest.raises(ValueError, match="ignores the Poisson structure"):
        ProcessedLeapfrog(structure=structure)


def test_s2hmc_rejects_less_than_half_as_often_as_hmc_at_the_research_step_size():
    """gaussian-d10 with the thesis's HMC step size (Table 3.8: eps = 0.3491, L = 15).

    The thesis reports S2HMC accepting above 0.99 there; its standard deviations were drawn
    with an unpublished seed. Ours include 0.27, so eps / sigma_min = 1.28, where the
    fourth-order shadow is far less exact (0.96 measured, against HMC's 0.85). What holds
    at any such step size is the ordering: the shadow's rejection rate is less than half of
    H's, by more than four standard errors of the difference.
    """
    target = hm.targets.get("gaussian-d10")
    rates = {}
    for sampler in ("hmc", "s2hmc"):
        run = hm.sample(target, sampler, chains=4, warmup=0, draws=1000, seed=0,
                        step_size=0.3491, n_steps=15, progress=False, compiled=True)  # fmt: skip
        a = run.stats["acceptance_rate"][..., None]
        rates[sampler] = (1.0 - float(a.mean()), float(hm.diagnostics.mcse(a, "mean")[0]))
    (r_hmc, se_hmc), (r_s2, se_s2) = rates["hmc"], rates["s2hmc"]
    assert r_hmc - 2.0 * r_s2 > 4.0 * np.hypot(se_hmc, 2.0 * se_s2), rates
