"""Poisson structures: the geometry of a Hamiltonian flow (canonical, magnetic), and the
registry of named structures (entry-point group ``hamiltonia.structures``).

A recipe's ``field=NAME`` option builds the structure registered as ``NAME``, passing those
of ``dim`` (the target's dimension), ``g`` (the ``g`` option, or the target's research field
strength) and ``seed`` (the ``field_seed`` option) that its factory takes: ``"research"`` and
``"random"`` are the research's field and a random one; ``"canonical"`` is the canonical
flow, as ``field=None``. ``"magnetic"`` takes the field matrix itself (``field=G`` in a
recipe). ``"research-code"`` is not a magnetic flow: it is the map the research's published
MHMC code computes with the research's field (:mod:`hamiltonia.structures.research_code`),
for reproducing the published figures only.

>>> import hamiltonia as hm
>>> hm.structures.get("research", dim=3, g=0.1)
MagneticStructure(dim=3, rank=2)
"""

from __future__ import annotations

from hamiltonia.registry import Registry, lookups
from hamiltonia.structures.base import CanonicalStructure, PoissonStructure
from hamiltonia.structures.magnetic import MagneticStructure, random_field, research_field
from hamiltonia.structures.research_code import (
    ResearchCodeMagneticStructure,
    research_code_structure,
)

__all__ = [
    "CanonicalStructure",
    "MagneticStructure",
    "PoissonStructure",
    "ResearchCodeMagneticStructure",
    "describe",
    "get",
    "names",
    "options",
    "random_field",
    "random_structure",
    "register",
    "registry",
    "research_code_structure",
    "research_field",
    "research_structure",
]


#: The registry of Poisson structures, fed by the ``hamiltonia.structures`` entry points.
registry = Registry("hamiltonia.structures", "structure", returns=PoissonStructure)


names, describe, options, get, register = lookups(registry, "Poisson structures", "dim=3, g=0.1")


def research_structure(dim: int, g: float) -> MagneticStructure:
    """The magnetic structure of the research's field :math:`G_{1i} = g = -G_{i1}`
    (:func:`~hamiltonia.structures.magnetic.research_field`)."""
    return MagneticStructure(research_field(dim, g))


def random_structure(dim: int, g: float, seed: int = 0) -> MagneticStructure:
    """The magnetic structure of a random antisymmetric field with entries of scale ``g``
    (:func:`~hamiltonia.structures.magnetic.random_field`), reproducible from ``seed``."""
    return MagneticStructure(random_field(dim, g, seed))
