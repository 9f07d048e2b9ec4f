"""The contract between a momentum refresh and a Hamiltonian (issue 48, item 5): a partial
refresh requires a Gaussian momentum, a Hamiltonian provides it or not, and a composition
whose Hamiltonian lacks it is refused naming both parts and the refresh to use instead.

The refused composition is a real bug, not a formality: :math:`\\rho p + \\sqrt{1-\\rho^2}\\,u`
keeps :math:`\\mathcal N(0, M)` and no other distribution, so with a relativistic kinetic
energy the momentum carried over drifts away from :math:`e^{-K}` (the kit's invariance check
sees it: ``tests/testing/test_invariance.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import (
    EuclideanHamiltonian,
    LeapfrogShadowHamiltonian,
    RandomMassHamiltonian,
    SeparableShadowHamiltonian,
)
from hamiltonia.hamiltonians.conditional import ConditionalHamiltonian
from hamiltonia.refresh import GAUSSIAN_MOMENTUM, provided
from hamiltonia.refresh.momentum import FullRefresh, MetropolisPartialRefresh, PartialRefresh
from hamiltonia.samplers import composition as make
from hamiltonia.testing import check_invariance, correlated_gaussian
from tests.testing.relativistic import RelativisticHamiltonian

REFUSED = (
    r"refresh PartialRefresh\(rho=0\.9\) requires a Gaussian momentum .*which hamiltonian "
    r"{ham} does not provide \((?P<reason>.*)\)\. Use MetropolisPartialRefresh\(rho=0\.9\) "
    r"\(refresh='metropolis-partial'\).*declare provides = frozenset\(\{{'gaussian-momentum'\}}\)"
)


@pytest.fixture
def target():
    return correlated_gaussian(3)


def _compose(hamiltonian, refresh):
    return make.compose(hamiltonian, make.metropolis_trajectory(5), refresh=refresh, step_size=0.7)


class RelativisticEuclidean(EuclideanHamiltonian):
    """A relativistic kinetic energy written as a subclass of the Euclidean Hamiltonian (to
    keep its metric, say): it must not inherit the Gaussian momentum it no longer has."""

    kinetic = RelativisticHamiltonian.kinetic
    velocity = RelativisticHamiltonian.velocity
    sample_momentum = RelativisticHamiltonian.sample_momentum
    _gamma = RelativisticHamiltonian._gamma
    mass = light_speed = 1.0


class FusedEuclidean(EuclideanHamiltonian):
    """A Euclidean Hamiltonian that redefines its velocity (for speed) and says that its
    momentum is still the Gaussian one."""

    provides = frozenset({GAUSSIAN_MOMENTUM})

    def velocity(self, p, aux=None):
        return self.metric.velocity(p)


def test_a_partial_refresh_with_a_relativistic_kinetic_energy_is_refused(target):
    with pytest.raises(ValueError, match=REFUSED.format(ham="RelativisticHamiltonian")) as err:
        _compose(RelativisticHamiltonian(target), PartialRefresh(0.9))
    assert "RelativisticHamiltonian declares no provides" in str(err.value)


def test_the_alternative_is_accepted_and_keeps_the_target_and_the_momentum(target):
    """The refresh the refusal names, tested against the energy, keeps e^{-H} with the
    relativistic kinetic energy: positions and the momentum it carries over pass the kit's
    invariance check (which tests the momentum where it persists)."""
    sampler = _compose(RelativisticHamiltonian(target), MetropolisPartialRefresh(0.9))
    report = check_invariance(target, sampler)
    assert report.momentum_ks_pvalues is not None
    # A refresh that keeps nothing of the momentum needs no Gaussian either.
    _compose(RelativisticHamiltonian(target), FullRefresh())
    _compose(RelativisticHamiltonian(target), PartialRefresh(0.0))


def test_a_subclass_that_redefines_the_kinetic_energy_does_not_inherit_the_declaration(target):
    with pytest.raises(ValueError, match=REFUSED.format(ham="RelativisticEuclidean")) as err:
        _compose(RelativisticEuclidean(target), PartialRefresh(0.9))
    assert "redefines kinetic, velocity, sample_momentum below EuclideanHamiltonian" in str(
        err.value
    )

    class OwnKernels(EuclideanHamiltonian):
        """Kernels of its own: on the compiled path they are its maths."""

        def compiled(self, dim):
            return super().compiled(dim)

    assert provided(OwnKernels(target)) == set()


def test_a_declaration_is_honoured(target):
    """A class, or an instance, that declares a Gaussian momentum is taken at its word."""
    assert GAUSSIAN_MOMENTUM in provided(FusedEuclidean(target))
    _compose(FusedEuclidean(target), PartialRefresh(0.9))
    declared = RelativisticHamiltonian(target)
    declared.provides = frozenset({GAUSSIAN_MOMENTUM})
    assert provided(declared) == {GAUSSIAN_MOMENTUM}


def test_what_the_built_in_hamiltonians_provide(target):
    euclidean = EuclideanHamiltonian(target)
    gaussian = {GAUSSIAN_MOMENTUM}
    assert provided(euclidean) == gaussian
    assert provided(EuclideanHamiltonian(target, np.array([0.5, 1.0, 2.0]))) == gaussian
    assert provided(RandomMassHamiltonian(target, 0.5)) == gaussian
    # A correction of the position alone, or a mask, keeps the base's momentum.
    assert provided(SeparableShadowHamiltonian(euclidean)) == gaussian
    assert provided(ConditionalHamiltonian(euclidean, [0])) == gaussian
    assert provided(ConditionalHamiltonian(RelativisticHamiltonian(target), [0])) == set()
    # The leapfrog's shadow is not separable: its momentum given the position is not Gaussian.
    assert provided(LeapfrogShadowHamiltonian(euclidean)) == set()
    assert provided(RelativisticHamiltonian(target)) == set()


@pytest.mark.parametrize("name", hm.samplers.names())
def test_every_registered_recipe_still_composes(name):
    """The contract refuses nothing hamiltonia's recipes build, partial refreshes included."""
    options = {"rho": 0.5} if name in ("hmc", "mhmc", "split-hmc") else {}
    # A split integrator needs a data target, split into subsets.
    target = (
        hm.targets.get("linear-regression", n_obs=60, dim=4, noise_scale=2.0)
        if name == "split-hmc"
        else hm.targets.get("banana")
    )
    hm.samplers.build(name, target, step_size=0.1, **options)


def test_the_partial_recipes_with_every_gaussian_kinetic_energy_compose():
    target = hm.targets.get("banana")
    for options in ({"mass_volatility": 0.5}, {"metric": "dense"}, {"field": "research"},
                    {"shadow": "separable"}, {"shadow": "leapfrog"}):  # fmt: skip
        sampler = hm.samplers.build(target=target, name="hmc", rho=0.9, **options)
        assert sampler.refresh.keeps_momentum


def test_a_sampler_built_directly_is_refused_too(target):
    with pytest.raises(ValueError, match=REFUSED.format(ham="RelativisticHamiltonian")):
        hm.HamiltonianSampler(
            RelativisticHamiltonian(target), hm.StaticLength(5), refresh=PartialRefresh(0.9),
            step_size=0.7,
        )  # fmt: skip
