"""Hamiltonians: the energy functions whose flows the integrators follow, and the registry of
named Hamiltonians (entry-point group ``hamiltonia.hamiltonians``).

``hamiltonian="euclidean" | "random-mass" | "relativistic"`` selects one by name in every
Hamiltonian recipe (``-O hamiltonian=...`` on the command line), built for the recipe's
target with the recipe's ``metric`` and ``mass_volatility`` where its factory takes them; a
plugin registers its own under the group (:mod:`hamiltonia.registry`), and :func:`register`
adds one in the running process. A factory is called as ``factory(target, **options)`` and returns a
:class:`Hamiltonian`.

The shadow Hamiltonians are not registered: each wraps a base Hamiltonian and is the shadow
of one integrator (the processed leapfrog's, the leapfrog's), with importance weights on the
draws, so the recipes' ``shadow=`` option builds the three together.

>>> import hamiltonia as hm
>>> target = hm.targets.get("banana")
>>> hm.hamiltonians.get("random-mass", target, mass_volatility=0.2).mass_volatility
0.2
>>> hm.hamiltonians.names()  # doctest: +SKIP
['euclidean', 'random-mass', 'relativistic']
"""

from __future__ import annotations

import difflib

from hamiltonia.hamiltonians.base import Hamiltonian
from hamiltonia.hamiltonians.euclidean import EuclideanHamiltonian
from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric, IdentityMetric, Metric
from hamiltonia.hamiltonians.random_mass import RandomMassHamiltonian
from hamiltonia.hamiltonians.relativistic import RelativisticHamiltonian, relativistic_hamiltonian
from hamiltonia.hamiltonians.shadow import (
    LeapfrogShadowHamiltonian,
    SeparableShadowHamiltonian,
    ShadowHamiltonian,
)
from hamiltonia.registry import Registry, lookups

__all__ = [
    "DenseMetric",
    "DiagonalMetric",
    "EuclideanHamiltonian",
    "Hamiltonian",
    "IdentityMetric",
    "LeapfrogShadowHamiltonian",
    "Metric",
    "RandomMassHamiltonian",
    "RelativisticHamiltonian",
    "SeparableShadowHamiltonian",
    "ShadowHamiltonian",
    "describe",
    "euclidean_hamiltonian",
    "get",
    "make_hamiltonian",
    "names",
    "options",
    "random_mass_hamiltonian",
    "register",
    "registry",
    "relativistic_hamiltonian",
]


def euclidean_hamiltonian(target, metric=None) -> EuclideanHamiltonian:
    """The Euclidean Hamiltonian :math:`H = U(q) + \\tfrac{1}{2} p^\\top M^{-1} p`, a Gaussian
    kinetic energy with a fixed (or warm-up adapted) metric: standard HMC.

    ``metric``: the inverse mass matrix, as
    :class:`~hamiltonia.hamiltonians.EuclideanHamiltonian` takes it (default: identity).
    """
    return EuclideanHamiltonian(target, metric)


def random_mass_hamiltonian(target, mass_volatility: float | None = None,
                            metric=None) -> RandomMassHamiltonian:  # fmt: skip
    """A diagonal mass redrawn every iteration, :math:`\\log m_i \\sim \\mathcal N(0,
    \\beta^2)`: quantum-inspired HMC (Liu and Zhang 2019; Mongwe 2022, thesis, §2.6).

    ``mass_volatility``: :math:`\\beta` (default ``None``: the target's research value,
    :attr:`~hamiltonia.targets.Target.research_mass_volatility`); ``metric``: the base metric,
    identity (default) or diagonal (:class:`~hamiltonia.hamiltonians.RandomMassHamiltonian`).
    """
    if mass_volatility is None:
        mass_volatility = target.research_mass_volatility
    return RandomMassHamiltonian(target, mass_volatility, metric)


#: The registry of Hamiltonians, fed by the ``hamiltonia.hamiltonians`` entry points. A
#: factory is called as ``factory(target, **options)`` and returns a :class:`Hamiltonian`.
registry = Registry("hamiltonia.hamiltonians", "Hamiltonian", returns=Hamiltonian)


names, describe, options, _, register = lookups(
    registry, "Hamiltonians", "metric=[1.0, 2.0]", "factory(target, **options)"
)


def get(name: str, target, **options) -> Hamiltonian:
    """The Hamiltonian registered as ``name``, built for ``target`` with ``options`` (e.g.
    ``mass_volatility=0.2``); an unknown name is an error listing the registered ones."""
    return registry.build(name, target, **options)


def make_hamiltonian(hamiltonian, target, **options) -> Hamiltonian:
    """A :class:`Hamiltonian` for ``target`` from a registered name or a Hamiltonian class
    (built with ``options``), or ``hamiltonian`` itself (which must be built for ``target``).

    ``ValueError`` names ``hamiltonian``: an unknown name (listing the registered ones), a
    value that is none of the three, or a Hamiltonian built for another target."""
    if isinstance(hamiltonian, Hamiltonian):
        if hamiltonian.target is not target:
            raise ValueError(
                f"hamiltonian: the given {type(hamiltonian).__name__} was built for another "
                f"target than the sampler's ({type(target).__name__}); give its name or class "
                "to have it built for the sampler's target"
            )
        return hamiltonian
    if isinstance(hamiltonian, type) and issubclass(hamiltonian, Hamiltonian):
        built = hamiltonian(target, **options)
        if not isinstance(built, Hamiltonian):  # a __new__ of its own
            raise TypeError(f"hamiltonian {hamiltonian.__name__} built a {type(built).__name__}")
        return built
    known = names()
    if not isinstance(hamiltonian, str) or hamiltonian not in known:
        close = difflib.get_close_matches(str(hamiltonian), known, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ValueError(
            f"hamiltonian must be one of {', '.join(repr(n) for n in known)} (the registered "
            f"Hamiltonians), a Hamiltonian class or a Hamiltonian, got {hamiltonian!r:.80}{hint}"
        )
    return get(hamiltonian, target, **options)
