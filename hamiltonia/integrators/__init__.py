"""Integrators of Hamiltonian flows, and the registry of named integrators.

``integrator="leapfrog" | "two-stage" | "three-stage" | "processed-leapfrog"`` selects one by
name in every Hamiltonian recipe (``-O integrator=...`` on the command line). The names come
from the entry-point group ``hamiltonia.integrators``, where a plugin registers its own
(:mod:`hamiltonia.registry`); :func:`register` adds one in the running process.

>>> import hamiltonia as hm
>>> hm.integrators.get("two-stage")
TwoStage()
>>> hm.integrators.names()  # doctest: +SKIP
['leapfrog', 'processed-leapfrog', 'three-stage', 'two-stage']
"""

from __future__ import annotations

import difflib

from hamiltonia.integrators.base import Integrator
from hamiltonia.integrators.leapfrog import Leapfrog
from hamiltonia.integrators.processed import ProcessedLeapfrog
from hamiltonia.integrators.splitting import Splitting, ThreeStage, TwoStage
from hamiltonia.registry import Registry, lookups

__all__ = [
    "Integrator",
    "Leapfrog",
    "ProcessedLeapfrog",
    "Splitting",
    "ThreeStage",
    "TwoStage",
    "describe",
    "get",
    "make_integrator",
    "names",
    "options",
    "register",
    "registry",
]

#: The registry of integrators, fed by the ``hamiltonia.integrators`` entry points. A factory
#: is called as ``factory(structure=None, **options)`` and returns an :class:`Integrator`.
registry = Registry("hamiltonia.integrators", "integrator", returns=Integrator)


names, describe, options, get, register = lookups(
    registry, "integrators", "structure=MagneticStructure(G)", "factory(structure=None, **options)"
)


def make_integrator(integrator, structure=None) -> Integrator:
    """An :class:`Integrator` from a registered name, or ``integrator`` itself.

    A name's factory gets ``structure`` only when one is given, so a factory that takes
    none still serves the canonical flow. An unknown name raises ``ValueError`` listing the
    registered ones."""
    if isinstance(integrator, Integrator):
        return integrator
    known = names()
    if not isinstance(integrator, str) or integrator not in known:
        close = difflib.get_close_matches(str(integrator), known, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ValueError(
            f"integrator must be one of {', '.join(repr(n) for n in known)} or an Integrator, "
            f"got {integrator!r}{hint}"
        )
    if structure is None:
        return get(integrator)
    if not registry.accepts(integrator, "structure"):
        raise ValueError(
            f"integrator {integrator!r} ({registry.source(integrator)}) takes no Poisson "
            "structure, so it cannot integrate a magnetic field"
        )
    return get(integrator, structure=structure)
