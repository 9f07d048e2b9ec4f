"""The moment check of the kit (hamiltonia.testing.moments): it passes on correct draws, against
exact moments or a reference run, weighs importance-weighted draws, and fails on biased ones.

The draws are independent normals with fixed seeds, so their ESS is their number and every
expected z-score is known: a bias of ``b`` standard deviations on ``n`` draws gives a mean
z-score of ``b sqrt(n)``, which the tests choose far beyond ``Z_THRESHOLD``.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from hamiltonia.targets.base import ExactMoments
from hamiltonia.testing import (
    MIN_ESS,
    Z_THRESHOLD,
    assert_moments_recovered,
    min_ess,
    moment_z_scores,
)

MU = np.array([-1.0, 0.5, 2.0])
SD = np.array([0.5, 1.0, 2.0])
EXACT = ExactMoments(MU, SD**2)
CHAINS, DRAWS = 4, 1000  # n = 4000 independent draws


def _draws(seed, shift=0.0, scale=1.0, chains=CHAINS, draws=DRAWS):
    rng = np.random.default_rng(seed)
    return MU + shift * SD + scale * SD * rng.normal(size=(chains, draws, 3))


def test_correct_draws_pass_against_exact_moments():
    assert assert_moments_recovered(SimpleNamespace(draws=_draws(0)), EXACT) is None
    z_mean, z_var = moment_z_scores(_draws(0), EXACT)
    assert z_mean.shape == z_var.shape == (3,)
    assert min_ess(_draws(0), EXACT) >= MIN_ESS  # independent draws: ESS about n


def test_a_biased_mean_fails_naming_the_parameter():
    # A shift of 0.2 sd on n = 4000 draws: z = 0.2 sqrt(4000) = 12.6 on every parameter.
    run = SimpleNamespace(draws=_draws(1, shift=0.2), names=("a", "b", "c"))
    with pytest.raises(AssertionError, match=r"mean of a"):
        assert_moments_recovered(run, EXACT)
    z_mean, _ = moment_z_scores(run, EXACT)
    expected = 0.2 * np.sqrt(CHAINS * DRAWS)
    assert np.all(np.abs(z_mean - expected) < Z_THRESHOLD)


def test_a_wrong_variance_fails():
    # sd 10 % too large: the variance 21 % too large; its MCSE is sqrt(2/n) sigma^2, so
    # z = 0.21 / sqrt(2 / 4000) = 9.4.
    with pytest.raises(AssertionError, match=r"var of x\[0\]"):
        assert_moments_recovered(_draws(2, scale=1.1), EXACT)


def test_a_short_run_fails_asking_for_more_draws():
    with pytest.raises(AssertionError, match="too short a run for a z-test; draw more"):
        assert_moments_recovered(_draws(3, draws=100), EXACT)


def test_params_select_parameters_and_exact_moments_may_be_a_callable():
    draws = _draws(4)
    draws[..., 2] += 5.0  # only the third parameter is wrong
    assert_moments_recovered(draws, lambda: EXACT, params=[0, 1])
    with pytest.raises(AssertionError):
        assert_moments_recovered(draws, EXACT)


def test_against_a_reference_run():
    """Two independent correct runs agree; the difference's z-score has the two MCSEs in
    quadrature, so a shift of 0.2 sd gives z = 0.2 sqrt(n / 2) = 8.9."""
    assert_moments_recovered(_draws(5), SimpleNamespace(draws=_draws(6)))
    with pytest.raises(AssertionError, match="mean of"):
        assert_moments_recovered(_draws(7, shift=0.2), _draws(8))
    with pytest.raises(AssertionError, match="var of"):
        assert_moments_recovered(_draws(9, scale=1.15), _draws(10))


def _weighted(seed, widen=1.5):
    """Draws from N(mu, (widen sd)^2) with the log weights that take them to N(mu, sd^2)."""
    x = _draws(seed, scale=widen, draws=4000)
    log_w = np.sum(-0.5 * ((x - MU) / SD) ** 2 * (1 - 1 / widen**2), axis=-1)
    return SimpleNamespace(draws=x, log_weights=log_w)


def test_importance_weights_are_honoured():
    """Draws of a wider proposal fail unweighted and pass with their weights, against exact
    moments and against an unweighted reference run."""
    run = _weighted(11)
    assert_moments_recovered(run, EXACT)
    assert_moments_recovered(run, SimpleNamespace(draws=_draws(12)))
    with pytest.raises(AssertionError, match="var of"):
        assert_moments_recovered(run.draws, EXACT)  # the bare draws carry no weights


def test_z_scores_are_standard_normal_under_correct_sampling():
    """The calibration the threshold rests on: over 100 independent runs the z-scores of the
    mean, plain and weighted, have mean 0 and standard deviation 1, each within four of
    its standard errors (1/sqrt(m) for the mean, 1/sqrt(2m) for the sd, m = 100 x 3)."""
    plain = np.array([moment_z_scores(_draws(100 + k, chains=2, draws=300), EXACT)[0]
                      for k in range(100)]).ravel()  # fmt: skip
    weighted = []
    for k in range(100):
        run = _weighted(1000 + k)
        run = SimpleNamespace(draws=run.draws[:2, :600], log_weights=run.log_weights[:2, :600])
        weighted.append(moment_z_scores(run, EXACT)[0])
    for z in (plain, np.ravel(weighted)):
        m = z.size
        assert abs(z.mean()) < Z_THRESHOLD / np.sqrt(m), z.mean()
        assert abs(z.std() - 1.0) < Z_THRESHOLD / np.sqrt(2 * m), z.std()


def test_shapes_are_checked():
    with pytest.raises(ValueError, match=r"draws must have shape \(chains, draws, dim\)"):
        moment_z_scores(np.zeros((10, 3)), EXACT)
    with pytest.raises(ValueError, match="log_weights must have shape"):
        moment_z_scores(SimpleNamespace(draws=_draws(0), log_weights=np.zeros(3)), EXACT)
    with pytest.raises(ValueError, match="reference run has 2 parameters"):
        moment_z_scores(_draws(0), _draws(1)[..., :2])
