"""Statistical recovery of known moments (DESIGN.md, correctness layer 2).

Fixed seeds; tolerances are z-scores on the Monte Carlo standard error (see
:mod:`hamiltonia.testing.moments`).
"""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.testing import assert_moments_recovered, moment_z_scores
from hamiltonia.trajectories.metropolis import StaticLength

# (sampler, target name, target params, sampler options, warmup, draws, compiled). Draws are
# chosen so that every estimate rests on an ESS of at least MIN_ESS. Fixed-length HMC on a
# Gaussian resonates (a coordinate whose period matches the trajectory barely moves), so the
# Gaussian cases jitter the step size; the banana runs plain HMC as in the thesis.
J = {"step_size_jitter": 0.5}
CASES = [
    ("hmc", "gaussian-d10", {}, J, 1000, 3000, False),
    ("hmc", "gaussian-d10", {}, J, 1000, 10000, True),
    ("hmc", "correlated-gaussian", {"dim": 5, "rho": 0.9}, {"n_steps": 20, **J}, 1000, 3000, False),
    ("hmc", "banana", {}, {}, 1000, 10000, False),
    ("hmc", "banana", {}, {}, 1000, 40000, True),
    ("mala", "gaussian", {"dim": 5}, {"metric": "diagonal"}, 1000, 10000, False),
    ("mala", "gaussian", {"dim": 5}, {}, 1000, 200000, True),
    ("mala", "banana", {}, {}, 2000, 400000, True),
    ("rwmh", "gaussian", {"dim": 5}, {}, 1000, 60000, None),
    ("rwmh", "banana", {}, {}, 1000, 40000, None),
    # The options every Hamiltonian recipe has: multi-stage splittings, partial momentum
    # refreshment (momentum kept between iterations) and random trajectory lengths.
    (
        "hmc",
        "banana",
        {},
        {"integrator": "two-stage", "rho": 0.8, "n_steps_jitter": 1.0},
        1000,
        20000,
        True,
    ),
    (
        "hmc",
        "banana",
        {},
        {"integrator": "three-stage", "rho": 0.5, "n_steps": 8},
        1000,
        11000,  # 4 to 8 steps (the default jitter): less motion an iteration than 8
        False,
    ),
    (
        "hmc",
        "gaussian-d10",
        {},
        {"integrator": "three-stage", "n_steps_jitter": 0.5, "metric": "diagonal"},
        1000,
        10000,
        True,
    ),
    ("hmc", "gaussian-d10", {}, {"rho": 0.9, "n_steps": 5, **J}, 1000, 5000, False),
    ("mala", "gaussian", {"dim": 5}, {"rho": 0.9, "integrator": "two-stage"}, 1000, 40000, True),
    # The magnetic, partial-refresh and quantum-inspired recipes with the research's
    # defaults (fixed L, so the Gaussians jitter the step size against resonance where the
    # random mass does not break it already). Banana runs longer: a chain that reaches the
    # curved tip with the adapted step size sticks there for a while, with every one of
    # these samplers as with HMC, and the MCSE does not see it in short runs.
    ("mhmc", "gaussian-d10", {}, J, 1000, 3000, False),
    ("mhmc", "banana", {}, {}, 1000, 20000, True),
    ("phmc", "gaussian-d10", {}, J, 1000, 4000, True),
    ("phmc", "banana", {}, {}, 1000, 20000, True),
    ("pmhmc", "gaussian-d10", {}, J, 1000, 4000, True),
    ("pmhmc", "banana", {}, {}, 1000, 20000, True),
    ("qihmc", "gaussian-d10", {}, {}, 1000, 6000, True),
    ("qihmc", "banana", {}, {}, 1000, 20000, True),
    ("qimhmc", "gaussian-d10", {}, {}, 1000, 4000, False),
    ("qimhmc", "banana", {}, {}, 1000, 20000, True),
    # A composition no paper ran: quantum-inspired PMHMC with a random field, one line.
    (
        "hmc",
        "banana",
        {},
        {"field": "random", "rho": 0.7, "mass_volatility": 0.3},
        1000,
        20000,
        True,
    ),
    # NUTS over the magnetic flow (valid: see NoUTurn). On banana a step size adapted to
    # 0.8 leaves one chain in four diverging hundreds of times in the curved tail (seed
    # 2024), which biases its tail draws; 0.9 is what a Stan user does about divergences.
    ("nuts", "gaussian-d10", {}, {"field": "research", "g": 0.3}, 1000, 2000, True),
    ("nuts", "banana", {}, {"field": "research", "target_accept": 0.9}, 1000, 20000, True),
    # NUTS with its defaults (diagonal metric adapted on Stan's windows).
    ("nuts", "gaussian-d10", {}, {}, 1000, 2000, False),
    ("nuts", "gaussian-d10", {}, {}, 1000, 2000, True),
    ("nuts", "banana", {}, {}, 1000, 10000, True),
    ("nuts", "correlated-gaussian", {"dim": 5, "rho": 0.9}, {"metric": "dense"}, 1000, 2000, True),
]


@pytest.mark.parametrize(
    ("sampler", "name", "params", "options", "warmup", "draws", "compiled"),
    CASES,
    ids=[
        f"{c[0]}-{c[1]}-{ {False: 'numpy', True: 'compiled', None: 'auto'}[c[6]] }" for c in CASES
    ],
)
def test_moments(sampler, name, params, options, warmup, draws, compiled):
    target = hm.targets.get(name, **params)
    result = hm.sample(
        target,
        sampler,
        chains=4,
        warmup=warmup,
        draws=draws,
        seed=2024,
        progress=False,
        compiled=compiled,
        **options,
    )
    # z-scores only: R-hat is not asserted here because fixed-length HMC on a Gaussian can
    # resonate (a coordinate whose period matches the trajectory length barely moves in
    # radius, e.g. x8 of gaussian-d10 with 15 steps of the adapted size), which R-hat rightly
    # reports while the MCSE-based z-scores stay valid.
    assert_moments_recovered(result, target.exact_moments)


@pytest.mark.parametrize("metric", ["diagonal", "dense"])
def test_hmc_with_a_metric(metric):
    """A metric matched to the target's covariance gives correct moments (and mixes well).
    The step size is jittered as in the Gaussian cases above: on this target dual averaging
    settles near the leapfrog's stability limit for the stiffest direction, where a fixed
    length mixes that direction badly for some adapted step sizes and not others."""
    target = hm.targets.get("correlated-gaussian", dim=4, rho=0.8)
    inverse_mass = target.covariance if metric == "dense" else np.diag(target.covariance)
    result = hm.sample(
        target,
        "hmc",
        chains=4,
        warmup=500,
        draws=4000,
        seed=5,
        progress=False,
        metric=inverse_mass,
        n_steps=5,
        **J,
    )
    assert_moments_recovered(result, target.exact_moments)


def test_funnel_v_is_normal_with_variance_9():
    """Neal's funnel: v ~ N(0, 9). A fixed small step (0.03, 60 steps) keeps the leapfrog
    stable down the neck, to v ~ -7, so HMC sees the whole of v's distribution; adapted
    step sizes of about 0.15 cannot enter the neck and under-sample negative v (the funnel's
    known failure, which is why it is a benchmark)."""
    target = hm.targets.get("funnel", n_x=1)
    result = hm.sample(
        target,
        "hmc",
        chains=4,
        warmup=500,
        draws=20000,
        seed=1,
        progress=False,
        step_size=0.03,
        n_steps=60,
    )
    assert_moments_recovered(result, target.exact_moments, params=[0])


class AlwaysAccept(StaticLength):
    """A broken sampler for the negative control: it skips the Metropolis test."""

    def transition(self, sampler, state, step_size, rngs):
        proposal, n_grad = sampler.integrator.integrate(
            sampler.hamiltonian, state, step_size, self.length
        )
        n = state.q.shape[0]
        info = {
            "accepted": np.ones(n, bool),
            "acceptance_rate": np.ones(n),
            "diverging": np.zeros(n, bool),
            "n_grad": n_grad,
            "n_steps": np.full(n, self.length),
            "energy": np.zeros(n),
        }
        return proposal, info


def test_the_check_detects_a_biased_sampler():
    """Negative control: unadjusted Langevin (MALA without its accept step) on the banana is
    biased, and the same check flags it."""
    target = hm.targets.get("banana")
    sampler = hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(target), AlwaysAccept(1), step_size=0.15
    )
    result = hm.sample(
        target, sampler, chains=4, warmup=500, draws=10000, seed=2024, progress=False
    )
    z_mean, z_var = moment_z_scores(result.draws, target.exact_moments)
    assert np.max(np.abs(np.concatenate([z_mean, z_var]))) > 4


@pytest.mark.parametrize("metric", ["diagonal", "dense"])
def test_hmc_with_adapted_metric(metric):
    target = hm.targets.get("correlated-gaussian", dim=5, rho=0.9)
    result = hm.sample(
        target,
        "hmc",
        chains=4,
        warmup=1000,
        draws=2000,
        seed=8,
        progress=False,
        metric=metric,
        n_steps=10,
        **J,
    )
    assert_moments_recovered(result, target.exact_moments)


def test_nuts_adapts_a_metric_across_three_orders_of_magnitude():
    """A 100-d Gaussian with scales from 10^-1.5 to 10^1.5: the diagonal metric adapted in
    warm-up is within 20 % of the true variances and the moments are recovered."""
    from hamiltonia.targets.gaussian import DiagonalGaussian

    scales = np.logspace(-1.5, 1.5, 100)
    target = DiagonalGaussian(100, scales=scales)
    sampler = hm.samplers.build("nuts", target)
    result = hm.sample(target, sampler, chains=4, warmup=1000, draws=1000, seed=7,
                       progress=False)  # fmt: skip
    ratio = sampler.hamiltonian.metric.inverse_mass / scales**2
    assert np.all(np.abs(ratio - 1.0) < 0.2), (ratio.min(), ratio.max())
    assert_moments_recovered(result, target.exact_moments)


def test_nuts_on_the_funnel_is_never_silently_wrong():
    """Neal's funnel with 25 x's: NUTS cannot enter the neck with one step size, so v's
    variance is under-estimated (its known failure). The run must say so, by divergences or
    by the chains disagreeing and mixing slowly (r_hat, E-BFMI), with its defaults and with
    target_accept=0.99."""
    target = hm.targets.get("funnel-d25")
    for options in ({}, {"target_accept": 0.99}):
        result = hm.sample(target, "nuts", chains=4, warmup=1000, draws=5000, seed=2024,
                           progress=False, **options)  # fmt: skip
        checks = {p.check for p in result.diagnose()}
        _, z_var = moment_z_scores(result.draws, target.exact_moments, params=[0])
        assert z_var[0] < 0  # v's variance under-estimated ...
        assert checks & {"divergences", "r_hat", "e_bfmi"}, checks  # ... and reported


SHADOW_CASES = [
    (sampler, name)
    for sampler in ("s2hmc", "ps2hmc", "js2hmc", "as2hmc", "shmc", "pshmc", "smhmc")
    for name in ("gaussian-d10", "banana")
    # as2hmc's tree of processed steps takes half a minute to compile for each target:
    # banana (which test_processed compiles too) guards it.
    if (sampler, name) != ("as2hmc", "gaussian-d10")
]


@pytest.mark.parametrize(("sampler", "name"), SHADOW_CASES)
def test_shadow_samplers_recover_moments_after_reweighting(sampler, name):
    """Weighted means and variances within MCSE z-scores; the unweighted draws target
    exp(-H~), whose q-marginal differs from the target, so the weights are what makes
    them right (the check with equal weights is not asked to pass). On the Gaussian a fixed
    length resonates (see test_moments); a shadow sampler cannot jitter its step size (its
    target depends on it), so it jitters the number of steps."""
    target = hm.targets.get(name)
    fixed_length = sampler not in ("js2hmc", "as2hmc")
    options = {"n_steps_jitter": 0.5} if fixed_length and name.startswith("gaussian") else {}
    draws = 5000
    if name == "banana":
        # The banana's tail mixes slowly, and at the default target acceptance of 0.8 the
        # step size suits its body, not its tail: measured, the shadow samplers diverge
        # 500-2,500 times a chain there, a chain sticking for up to 1,000 iterations (SMHMC,
        # seed 2024), and over seeds 0-13 PSHMC's 20,000 draws left the ESS of the squared
        # deviations below MIN_ESS a third of the time. At 0.9 the divergences fall tenfold.
        # It does not resonate: the research's fixed length, as this was measured with.
        options, draws = {"target_accept": 0.9}, 40000
        if fixed_length:
            options["n_steps_jitter"] = 0.0
    result = hm.sample(target, sampler, chains=4, warmup=1000, draws=draws, seed=2024,
                       progress=False, compiled=True, **options)  # fmt: skip
    assert result.log_weights is not None  # and the check weighs the draws with them
    assert_moments_recovered(result, target.exact_moments)
