"""Momentum refreshment between trajectories (full, partial, partial with a momentum test),
and the registry of named refreshes (entry-point group ``hamiltonia.refreshes``).

The recipes choose one by their ``rho`` option: ``"full"`` for ``rho=0``, ``"partial"``
otherwise, ``"metropolis-partial"`` for a non-separable shadow Hamiltonian.

>>> import hamiltonia as hm
>>> hm.refresh.get("partial", rho=0.9)
PartialRefresh(rho=0.9)
"""

from __future__ import annotations

from hamiltonia.refresh.momentum import (
    FullRefresh,
    MetropolisPartialRefresh,
    MomentumRefresh,
    PartialRefresh,
    partial_mix,
)
from hamiltonia.registry import Registry

__all__ = [
    "FullRefresh",
    "MetropolisPartialRefresh",
    "MomentumRefresh",
    "PartialRefresh",
    "describe",
    "get",
    "names",
    "options",
    "partial_mix",
    "register",
    "registry",
]


#: The registry of momentum refreshes, fed by the ``hamiltonia.refreshes`` entry points.
registry = Registry("hamiltonia.refreshes", "refresh", returns=MomentumRefresh)


def names() -> list[str]:
    """Names of the registered momentum refreshes."""
    return registry.names()


def describe() -> dict[str, str]:
    """Name to one-line description of every registered refresh."""
    return registry.describe()


def options(name: str) -> list[str]:
    """The keyword options the refresh ``name`` takes."""
    return registry.options(name)


def get(name: str, **options) -> MomentumRefresh:
    """The refresh registered as ``name``, built with ``options`` (e.g. ``rho=0.9``)."""
    return registry.build(name, **options)


def register(name: str, factory, *, overwrite: bool = False) -> None:
    """Register ``factory(**options) -> MomentumRefresh`` under ``name`` in this process (a
    refresh class qualifies)."""
    registry.register(name, factory, overwrite=overwrite)
