"""The random mass of quantum-inspired HMC: its draws, and the momentum it keeps."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import RandomMassHamiltonian
from hamiltonia.hamiltonians.random_mass import MASS_AUX
from hamiltonia.refresh.momentum import PartialRefresh

Z = 4.0  # z-score threshold of the statistical checks, as in tests/statistical


def _generators(n, seed=0):
    return [np.random.default_rng(seed + c) for c in range(n)]


def _chains(ham, n, seed=0):
    rng = np.random.default_rng(seed)
    state = ham.evaluate(rng.normal(size=(n, ham.dim)))
    return state.with_momentum(ham.sample_momentum(_generators(n, seed + 1000), state.aux))


def test_log_mass_is_normal_with_sd_beta():
    """ln m_i ~ N(0, beta^2) independently (the thesis's convention, not the public code's
    2 beta): mean and variance of 4000 x 3 draws within Z standard errors."""
    beta, n = 0.3, 4000
    ham = RandomMassHamiltonian(hm.targets.get("gaussian", dim=3), beta)
    log_mass = ham.update_auxiliary(_chains(ham, n), _generators(n, 7)).aux[MASS_AUX].ravel()
    assert abs(log_mass.mean()) < Z * beta / np.sqrt(log_mass.size)
    var_se = beta**2 * np.sqrt(2.0 / (log_mass.size - 1))
    assert abs(log_mass.var(ddof=1) - beta**2) < Z * var_se


def test_redraw_keeps_the_whitened_momentum():
    """The Gibbs step in (q, z = M^-1/2 p, m): the new mass rescales p so z is unchanged."""
    ham = RandomMassHamiltonian(hm.targets.get("gaussian", dim=4), 0.5, metric=[0.5, 1, 2, 4])
    state = ham.update_auxiliary(_chains(ham, 6), _generators(6, 1))
    new = ham.update_auxiliary(state, _generators(6, 2))
    assert not np.allclose(new.aux[MASS_AUX], state.aux[MASS_AUX])
    whitened = [s.p * np.sqrt(ham.inverse_mass_diagonal(s.aux)) for s in (state, new)]
    np.testing.assert_allclose(whitened[0], whitened[1], rtol=1e-12)
    np.testing.assert_array_equal(new.q, state.q)


def test_momentum_kinetic_energy_and_velocity_use_the_drawn_mass():
    """p ~ N(0, M) for the chain's M: the whitened momenta are standard normal; K and dK/dp
    are those of that M (base metric times the random factor)."""
    n = 3000
    base = np.array([0.5, 2.0])
    ham = RandomMassHamiltonian(hm.targets.get("gaussian", dim=2), 0.6, metric=base)
    state = ham.update_auxiliary(_chains(ham, n), _generators(n, 3))
    inverse = ham.inverse_mass_diagonal(state.aux)
    np.testing.assert_allclose(inverse, base * np.exp(-state.aux[MASS_AUX]))
    p = ham.sample_momentum(_generators(n, 4), state.aux)
    z = p * np.sqrt(inverse)
    assert np.all(np.abs(z.mean(axis=0)) < Z / np.sqrt(n))
    assert np.all(np.abs(z.var(axis=0, ddof=1) - 1.0) < Z * np.sqrt(2.0 / (n - 1)))
    np.testing.assert_allclose(ham.velocity(p, state.aux), inverse * p)
    np.testing.assert_allclose(ham.kinetic(p, state.aux), 0.5 * np.sum(inverse * p * p, -1))


def test_partial_refresh_after_a_redraw_keeps_the_momentum_distribution():
    """Momentum kept between iterations: redrawing the mass, then mixing the rescaled
    momentum with a fresh draw, leaves p ~ N(0, M_new). Keeping p unscaled would not (its
    whitened variance would be E[m_old/m_new] = e^{beta^2} > 1 for the new mass)."""
    n, beta = 4000, 0.8
    ham = RandomMassHamiltonian(hm.targets.get("gaussian", dim=2), beta)
    state = ham.update_auxiliary(_chains(ham, n), _generators(n, 5))
    state = state.with_momentum(ham.sample_momentum(_generators(n, 6), state.aux))
    state = ham.update_auxiliary(state, _generators(n, 8))
    state = PartialRefresh(0.9).refresh(ham, state, _generators(n, 9))
    z = state.p * np.sqrt(ham.inverse_mass_diagonal(state.aux))
    assert np.all(np.abs(z.var(axis=0, ddof=1) - 1.0) < Z * np.sqrt(2.0 / (n - 1)))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mass_volatility": -0.1}, "mass_volatility must be a finite number >= 0"),
        ({"mass_volatility": np.nan}, "mass_volatility must be a finite number >= 0"),
        ({"mass_volatility": True}, "mass_volatility must be a number >= 0"),
        ({"mass_volatility": 0.3, "metric": np.eye(2)}, "identity or diagonal base metric"),
    ],
)
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RandomMassHamiltonian(hm.targets.get("banana"), **kwargs)
