"""Integrators of Hamiltonian flows, and the names they are registered under.

``integrator="leapfrog" | "two-stage" | "three-stage" | "processed-leapfrog"`` selects one by
name in every Hamiltonian recipe (``-O integrator=...`` on the command line); :func:`register`
adds more.
"""

from __future__ import annotations

from hamiltonia.integrators.base import Integrator
from hamiltonia.integrators.leapfrog import Leapfrog
from hamiltonia.integrators.processed import ProcessedLeapfrog
from hamiltonia.integrators.splitting import Splitting, ThreeStage, TwoStage

__all__ = [
    "Integrator",
    "Leapfrog",
    "ProcessedLeapfrog",
    "Splitting",
    "ThreeStage",
    "TwoStage",
    "make_integrator",
    "names",
    "register",
]

_REGISTRY: dict[str, type] = {
    "leapfrog": Leapfrog,
    "two-stage": TwoStage,
    "three-stage": ThreeStage,
    "processed-leapfrog": ProcessedLeapfrog,
}


def names() -> list[str]:
    """Names of the registered integrators."""
    return sorted(_REGISTRY)


def register(name: str, factory, *, overwrite: bool = False) -> None:
    """Register ``factory(structure=None) -> Integrator`` under ``name``."""
    if name in _REGISTRY and not overwrite:
        raise ValueError(f"integrator {name!r} is already registered")
    _REGISTRY[name] = factory


def make_integrator(integrator, structure=None) -> Integrator:
    """An :class:`Integrator` from a registered name, or ``integrator`` itself."""
    if isinstance(integrator, Integrator):
        return integrator
    if isinstance(integrator, str) and integrator in _REGISTRY:
        return _REGISTRY[integrator](structure=structure)
    raise ValueError(
        f"integrator must be one of {', '.join(repr(n) for n in names())} or an Integrator, "
        f"got {integrator!r}"
    )
