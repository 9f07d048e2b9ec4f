"""check_momentum: momentum draws against exp(-K) by the virial identity, and the velocity
against finite differences of K; the negative controls are the mistakes it exists for."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians.relativistic import RelativisticHamiltonian
from hamiltonia.testing import check_momentum


def _target(dim=3):
    return hm.targets.get("gaussian", dim=dim)


@pytest.mark.parametrize(
    "metric", [None, np.array([0.5, 2.0, 4.0]), np.array([[2.0, 0.3, 0], [0.3, 1, 0], [0, 0, 3]])],
    ids=["identity", "diagonal", "dense"],
)  # fmt: skip
def test_gaussian_momenta_pass(metric):
    target = _target()
    ham = (
        hm.EuclideanHamiltonian(target)
        if metric is None
        else hm.EuclideanHamiltonian(target, metric=metric)
    )
    assert check_momentum(ham).passed


def test_relativistic_momenta_pass():
    assert check_momentum(RelativisticHamiltonian(_target(), mass=1.0, light_speed=1.0)).passed


class TooWide(hm.EuclideanHamiltonian):
    """Draws N(0, 1.1^2 I) where K is p.p/2: a momentum law that is not exp(-K)."""

    def sample_momentum(self, rngs, aux=None):
        return 1.1 * super().sample_momentum(rngs, aux)

    def compiled(self, dim):
        return None


class HalfVelocity(hm.EuclideanHamiltonian):
    """A velocity that is not dK/dp."""

    def velocity(self, p, aux=None):
        return 0.5 * super().velocity(p, aux)

    def compiled(self, dim):
        return None


def test_a_momentum_law_other_than_exp_minus_k_is_caught():
    with pytest.raises(AssertionError, match=r"TooWide: its momentum draws do not follow"):
        check_momentum(TooWide(_target()))


def test_a_velocity_that_is_not_the_gradient_is_caught():
    with pytest.raises(AssertionError, match=r"HalfVelocity: the velocity is not dK/dp"):
        check_momentum(HalfVelocity(_target()))
    assert not check_momentum(HalfVelocity(_target()), check=False).passed


@pytest.mark.parametrize(("option", "value"), [("n_draws", 10), ("n_points", 0), ("alpha", 2.0)])
def test_bad_options_are_named(option, value):
    with pytest.raises(ValueError, match=option):
        check_momentum(hm.EuclideanHamiltonian(_target()), **{option: value})
