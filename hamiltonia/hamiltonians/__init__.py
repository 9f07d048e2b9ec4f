"""Hamiltonians: the energy functions whose flows the integrators follow."""

from hamiltonia.hamiltonians.base import Hamiltonian
from hamiltonia.hamiltonians.euclidean import EuclideanHamiltonian
from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric, IdentityMetric, Metric
from hamiltonia.hamiltonians.random_mass import RandomMassHamiltonian
from hamiltonia.hamiltonians.shadow import (
    LeapfrogShadowHamiltonian,
    SeparableShadowHamiltonian,
    ShadowHamiltonian,
)

__all__ = [
    "DenseMetric",
    "DiagonalMetric",
    "EuclideanHamiltonian",
    "Hamiltonian",
    "IdentityMetric",
    "LeapfrogShadowHamiltonian",
    "Metric",
    "RandomMassHamiltonian",
    "SeparableShadowHamiltonian",
    "ShadowHamiltonian",
]
