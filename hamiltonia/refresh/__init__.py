"""Momentum refreshment between trajectories (full, partial, partial with a momentum test),
and the registry of named refreshes (entry-point group ``hamiltonia.refreshes``).

The recipes choose one by their ``rho`` option: ``"full"`` for ``rho=0``, ``"partial"``
otherwise, ``"metropolis-partial"`` for a non-separable shadow Hamiltonian.

>>> import hamiltonia as hm
>>> hm.refresh.get("partial", rho=0.9)
PartialRefresh(rho=0.9)
"""

from __future__ import annotations

from hamiltonia.refresh.contracts import GAUSSIAN_MOMENTUM, check_requirements, provided
from hamiltonia.refresh.momentum import (
    FullRefresh,
    MetropolisPartialRefresh,
    MomentumRefresh,
    PartialRefresh,
    partial_mix,
)
from hamiltonia.registry import Registry, lookups

__all__ = [
    "GAUSSIAN_MOMENTUM",
    "FullRefresh",
    "MetropolisPartialRefresh",
    "MomentumRefresh",
    "PartialRefresh",
    "check_requirements",
    "describe",
    "get",
    "names",
    "options",
    "partial_mix",
    "provided",
    "register",
    "registry",
]


#: The registry of momentum refreshes, fed by the ``hamiltonia.refreshes`` entry points.
registry = Registry("hamiltonia.refreshes", "refresh", returns=MomentumRefresh)


names, describe, options, get, register = lookups(registry, "momentum refreshes", "rho=0.9")
