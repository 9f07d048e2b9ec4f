"""Poisson structures: the geometry of a Hamiltonian flow (canonical, magnetic)."""

from hamiltonia.structures.base import CanonicalStructure, PoissonStructure
from hamiltonia.structures.magnetic import MagneticStructure, random_field, research_field

__all__ = [
    "CanonicalStructure",
    "MagneticStructure",
    "PoissonStructure",
    "random_field",
    "research_field",
]
