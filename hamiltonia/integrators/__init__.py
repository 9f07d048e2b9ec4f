"""Integrators of Hamiltonian flows."""

from hamiltonia.integrators.base import Integrator
from hamiltonia.integrators.leapfrog import Leapfrog

__all__ = ["Integrator", "Leapfrog"]
