"""Split HMC samples the exact posterior: moment recovery on a linear regression whose
Gaussian posterior is known, for each split scheme, within MCSE z-scores."""

import pytest

import hamiltonia as hm
from hamiltonia.testing import assert_moments_recovered


@pytest.fixture(scope="module")
def data():
    return hm.targets.get("linear-regression", n_obs=200, dim=5, noise_scale=1.0)


@pytest.mark.parametrize("scheme", ["naive", "randomised", "symmetric"])
def test_each_scheme_recovers_the_posterior(data, scheme):
    """Four subsets, static trajectories with a jittered step size, the step size adapted;
    means and variances of all five coefficients within the family-wise z threshold."""
    run = hm.sample(
        data, "split-hmc", scheme=scheme, n_splits=4, n_steps=8, step_size_jitter=0.3,
        chains=4, warmup=300, draws=1500, seed=11, progress=False,
    )  # fmt: skip
    assert run.n_divergent == 0
    assert_moments_recovered(run, data.exact_moments)


def test_nuts_over_the_symmetric_split_recovers_the_posterior(data):
    run = hm.sample(
        data, "split-hmc", scheme="symmetric", n_splits=4, trajectory="no-u-turn",
        chains=4, warmup=300, draws=1000, seed=12, progress=False,
    )  # fmt: skip
    assert_moments_recovered(run, data.exact_moments)


def test_partial_refresh_over_the_randomised_split_recovers_the_posterior(data):
    """The split composes with any refresh: partial momentum refreshment (rho = 0.7),
    momentum negated on rejection."""
    run = hm.sample(
        data, "split-hmc", scheme="randomised", n_splits=3, rho=0.7, n_steps=6,
        step_size_jitter=0.3, chains=4, warmup=300, draws=4000, seed=13, progress=False,
    )  # fmt: skip
    assert_moments_recovered(run, data.exact_moments)
