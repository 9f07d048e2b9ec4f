"""Samplers: the composed :class:`HamiltonianSampler`, random-walk Metropolis, the registry
of named recipes, and the helpers that compose a sampler from options
(:mod:`hamiltonia.samplers.composition`, which recipes and plugins both use).

>>> import hamiltonia as hm
>>> sampler = hm.samplers.build("hmc", hm.targets.get("banana"), n_steps=15)
"""

from __future__ import annotations

from hamiltonia.registry import Registry
from hamiltonia.samplers import composition
from hamiltonia.samplers.base import STAT_NAMES, Sampler
from hamiltonia.samplers.hamiltonian import HamiltonianSampler
from hamiltonia.samplers.random_walk import RandomWalkMetropolis

__all__ = [
    "STAT_NAMES",
    "HamiltonianSampler",
    "RandomWalkMetropolis",
    "Sampler",
    "build",
    "composition",
    "describe",
    "get",
    "names",
    "options",
    "register",
    "registry",
    "with_gibbs_blocks",
]

#: The registry of sampler recipes, fed by the ``hamiltonia.samplers`` entry points.
registry = Registry("hamiltonia.samplers", "sampler")


def names() -> list[str]:
    """Names of all registered samplers."""
    return registry.names()


def describe() -> dict[str, str]:
    """Name to one-line description of every registered sampler."""
    return registry.describe()


def get(name: str):
    """The recipe registered as ``name``: ``recipe(target, **options) -> Sampler``."""
    return registry.factory(name)


def options(name: str) -> list[str]:
    """The options the sampler ``name`` accepts."""
    return registry.options(name)


def build(name: str, target, **opts) -> Sampler:
    """Build the sampler ``name`` for ``target``; unknown options raise ``ValueError``."""
    sampler = registry.call(name, target, **opts)
    if not isinstance(sampler, Sampler):
        raise TypeError(
            f"sampler {name!r} from {registry.source(name)} returned "
            f"{type(sampler).__name__}, not a hamiltonia Sampler"
        )
    if sampler.name in ("sampler", "hamiltonian"):
        sampler.name = name
    return with_gibbs_blocks(sampler)


def with_gibbs_blocks(sampler: Sampler) -> Sampler:
    """Compose ``sampler`` with the Gibbs updates its target declares, if any.

    A target with hyperparameters updated by exact Gibbs steps (the ARD networks) declares
    ``gibbs_indices`` (the coordinates those steps own), ``gibbs_update(q, rngs) -> q`` and
    ``gibbs_every``. A Hamiltonian sampler then moves only the other coordinates (its
    Hamiltonian becomes a :class:`~hamiltonia.hamiltonians.conditional.ConditionalHamiltonian`)
    and is wrapped in :class:`~hamiltonia.samplers.gibbs.GibbsWithin`. Any Hamiltonian
    sampler can sit inside.
    """
    target = sampler.target
    if not hasattr(target, "gibbs_update"):
        return sampler
    from hamiltonia.hamiltonians.conditional import ConditionalHamiltonian
    from hamiltonia.samplers.gibbs import GibbsWithin

    if not isinstance(sampler, HamiltonianSampler):
        raise TypeError(
            f"target {type(target).__name__} updates some coordinates by Gibbs steps and "
            f"needs a Hamiltonian sampler for the others, got {type(sampler).__name__}"
        )
    if sampler.weighted:
        # The Hamiltonian moves leave the shadow's conditional invariant, the Gibbs steps the
        # target's: together they leave neither the target nor one the weights correct.
        raise ValueError(
            f"target {type(target).__name__} updates some coordinates by Gibbs steps, which "
            f"the importance weights of sampler {sampler.name!r} cannot correct for: use a "
            "sampler without weights (hmc, nuts, mhmc, ...)"
        )
    fixed = [int(i) for i in target.gibbs_indices]
    integrator = sampler.integrator
    structure = getattr(integrator, "structure", None)
    if structure is not None:
        held = structure.holding(fixed)
        if held is None:
            raise ValueError(
                f"target {type(target).__name__} updates some coordinates by Gibbs steps, and "
                f"the structure {type(structure).__name__} cannot hold them still (define its "
                "holding(fixed)); use a canonical or magnetic structure"
            )
        integrator.structure = held
    sampler.hamiltonian = ConditionalHamiltonian(sampler.hamiltonian, fixed)
    return GibbsWithin(sampler, target.gibbs_update, every=target.gibbs_every)


def register(name: str, recipe, *, overwrite: bool = False) -> None:
    """Register a sampler recipe in this process."""
    registry.register(name, recipe, overwrite=overwrite)
