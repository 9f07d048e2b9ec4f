"""Exact properties every integrator must have, checked once per property.

The checks are those of the kit, :mod:`hamiltonia.testing.integrators` (reversibility,
volume preservation, order, the contract of ``integrate``); here they run on every
integrator of ``INTEGRATORS`` (a name and a factory of the target's dimension) with every
kind of kinetic energy in ``HAMILTONIANS``. To check a new integrator, add a case.
"""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import EuclideanHamiltonian, RandomMassHamiltonian
from hamiltonia.integrators import Integrator, Leapfrog, ProcessedLeapfrog, TwoStage
from hamiltonia.integrators.data_split import DataSplit
from hamiltonia.state import PhaseState
from hamiltonia.structures.magnetic import MagneticStructure
from hamiltonia.targets.split import split_target
from hamiltonia.testing import (
    check_energy_error_order,
    check_integrate_contract,
    check_reversibility,
    check_volume_preservation,
    start_states,
)


class PlainLeapfrog(Integrator):
    """A leapfrog written as a user would, step by step in plain Python, with no merged kicks:
    checks that the default ``Integrator.integrate`` and user subclasses keep the properties."""

    order = 2

    def step(self, hamiltonian, state, step_size):
        eps = np.asarray(step_size)[:, None]
        p = state.p + 0.5 * eps * state.grad
        q = state.q + eps * hamiltonian.velocity(p, state.aux)
        new = hamiltonian.evaluate(q)
        return PhaseState(q, p + 0.5 * eps * new.grad, new.log_prob, new.grad, dict(state.aux))


#: Every registered integrator, the magnetic ones, and a plain-Python one written as a
#: user would; each built for a target of dimension ``dim``.
INTEGRATORS = {
    **{name: (lambda dim, name=name: hm.integrators.make_integrator(name)) for name in
       hm.integrators.names()},
    # The fixed points converged far below the checks' tolerances.
    "processed-leapfrog": lambda dim: ProcessedLeapfrog(tolerance=1e-14),
    "plain-python-leapfrog": lambda dim: PlainLeapfrog(),
    # The research's rank-two field (singular from dim 3 on) and a full-rank random one.
    "magnetic-leapfrog-research": lambda dim: Leapfrog(
        structure=MagneticStructure(hm.research_field(dim, 0.6))),
    "magnetic-leapfrog-random": lambda dim: Leapfrog(
        structure=MagneticStructure(hm.random_field(dim, 0.5, seed=1))),
    "magnetic-two-stage-random": lambda dim: TwoStage(
        structure=MagneticStructure(hm.random_field(dim, 0.5, seed=2))),
    # The split integrators over three data subsets (their target is split that many ways).
    **{name: (lambda dim, name=name: hm.integrators.get(name, n_splits=3)) for name in
       ("naive-split", "randomised-split", "symmetric-split")},
}  # fmt: skip


def target(name: str, integrator, **params):
    """The target ``name``; for a split integrator, a linear regression on synthetic data
    split into its number of subsets (smooth, and Gaussian: its flow map is linear)."""
    if isinstance(integrator, DataSplit):
        data = hm.targets.get("linear-regression", n_obs=60, dim=4, noise_scale=2.0)
        return split_target(data, integrator.n_splits)
    return hm.targets.get(name, **params)


#: Kinetic energies: fixed metrics, and a random mass (drawn per chain before the run).
HAMILTONIANS = {
    "identity": lambda target: EuclideanHamiltonian(target),
    "diagonal": lambda target: EuclideanHamiltonian(target, np.linspace(0.5, 2.0, target.dim)),
    "dense": lambda target: EuclideanHamiltonian(
        target, np.eye(target.dim) + 0.3 * np.ones((target.dim, target.dim)) / target.dim
    ),
    "random-mass": lambda target: RandomMassHamiltonian(target, 0.5),
}


@pytest.fixture(params=sorted(INTEGRATORS), ids=str)
def make(request):
    return INTEGRATORS[request.param]


@pytest.fixture(params=sorted(HAMILTONIANS), ids=str)
def hamiltonian(request):
    return HAMILTONIANS[request.param]


def test_integrate_contract(make, hamiltonian):
    """One length per chain (each chain as if alone), the gradients counted, the input
    state unchanged."""
    integrator = make(2)
    check_integrate_contract(integrator, hamiltonian(target("banana", integrator)))


def test_reversible(make, hamiltonian):
    """Integrate, negate p and the structure's auxiliary variables (the field's sign) and
    the integrator's (the randomised split's subset order), integrate again: back to the
    start to 1e-10."""
    integrator = make(2)
    check_reversibility(integrator, hamiltonian(target("banana", integrator)), atol=1e-10)


@pytest.mark.parametrize("name", ["correlated-gaussian", "banana"])
def test_volume_preserving(make, hamiltonian, name):
    """The Jacobian determinant (finite differences) is one: on a Gaussian target, where
    the map is linear and the differences are exact up to rounding, and on the banana."""
    params = {"dim": 4, "rho": 0.7} if name == "correlated-gaussian" else {}
    integrator = make(4 if params else 2)
    check_volume_preservation(integrator, hamiltonian(target(name, integrator, **params)))


def test_energy_error_order(make, hamiltonian):
    """Over a fixed time, the energy error falls as step_size**order (log-log slope)."""
    integrator = make(2)
    check_energy_error_order(integrator, hamiltonian(target("banana", integrator)))


def test_multi_stage_splittings_have_smaller_energy_errors_at_equal_cost():
    """Blanes, Casas and Sanz-Serna chose the two- and three-stage coefficients to minimise
    the energy error on Gaussian targets: at the same number of gradient evaluations over
    the same time, their mean squared energy error is below the leapfrog's (here by more
    than a factor 4 for each, on a 10-dimensional standard normal)."""
    target = hm.targets.get("gaussian-d10")
    ham = EuclideanHamiltonian(target)
    start = start_states(ham, hm.integrators.make_integrator("leapfrog"), 200, seed=5)
    h0 = ham.energy(start)
    grads, total_time = 12, 3.0
    errors = {}
    for name in ("leapfrog", "two-stage", "three-stage"):
        integrator = hm.integrators.make_integrator(name)
        n = grads // integrator.n_grad_per_step
        end, _ = integrator.integrate(ham, start, np.full(200, total_time / n), n)
        errors[name] = np.mean((ham.energy(end) - h0) ** 2)
    assert errors["two-stage"] < errors["leapfrog"] / 4, errors
    assert errors["three-stage"] < errors["leapfrog"] / 4, errors
