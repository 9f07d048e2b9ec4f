"""Targets, and the registry of named targets.

>>> import hamiltonia as hm
>>> target = hm.targets.get("banana")
>>> target = hm.targets.get("gaussian", dim=7)
>>> hm.targets.names()  # doctest: +SKIP
"""

from __future__ import annotations

from hamiltonia.registry import Registry
from hamiltonia.targets.base import ExactMoments, FunctionTarget, Target

__all__ = [
    "ExactMoments",
    "FunctionTarget",
    "Target",
    "describe",
    "get",
    "names",
    "options",
    "register",
    "registry",
]

#: The registry behind :func:`get`, fed by the ``hamiltonia.targets`` entry points.
registry = Registry("hamiltonia.targets", "target")


def names() -> list[str]:
    """Names of all registered targets."""
    return registry.names()


def describe() -> dict[str, str]:
    """Name to one-line description of every registered target."""
    return registry.describe()


def options(name: str) -> list[str]:
    """The parameters (keyword options) the target ``name``'s factory takes."""
    return registry.options(name)


def get(name: str, **params) -> Target:
    """The target registered as ``name``, built with ``params`` (e.g. ``dim=7``)."""
    target = registry.call(name, **params)
    if not isinstance(target, Target):
        raise TypeError(
            f"target {name!r} from {registry.source(name)} returned "
            f"{type(target).__name__}, not a hamiltonia.Target"
        )
    target.registered_name = name
    target.registered_params = dict(params)
    return target


def register(name: str, factory, *, overwrite: bool = False) -> None:
    """Register a target factory in this process."""
    registry.register(name, factory, overwrite=overwrite)
