"""Variance reducers: importance weights, antithetic pairs, control variates, and the registry
of named reducers (entry-point group ``hamiltonia.reducers``).

The recipes build ``"importance-weights"`` for a shadow Hamiltonian, and wrap it (or
nothing) in ``"antithetic"`` (option ``antithetic=True``) and ``"control-variates"``
(option ``control_variates=1`` or ``2``) by their ``inner`` option.

>>> import hamiltonia as hm
>>> hm.reducers.get("control-variates", order=2)  # doctest: +ELLIPSIS
<hamiltonia.reducers.control_variates.ControlVariates object at ...>
"""

from __future__ import annotations

from hamiltonia.reducers.antithetic import AntitheticPairs
from hamiltonia.reducers.base import (
    ImportanceWeights,
    ReducerWrapper,
    VarianceReducer,
    gives_weights,
    weighted_mean,
)
from hamiltonia.reducers.control_variates import ControlVariates
from hamiltonia.registry import Registry

__all__ = [
    "AntitheticPairs",
    "ControlVariates",
    "ImportanceWeights",
    "ReducerWrapper",
    "VarianceReducer",
    "describe",
    "get",
    "gives_weights",
    "names",
    "options",
    "register",
    "registry",
    "weighted_mean",
]


#: The registry of variance reducers, fed by the ``hamiltonia.reducers`` entry points.
registry = Registry("hamiltonia.reducers", "reducer", returns=VarianceReducer)


def names() -> list[str]:
    """Names of the registered variance reducers."""
    return registry.names()


def describe() -> dict[str, str]:
    """Name to one-line description of every registered reducer."""
    return registry.describe()


def options(name: str) -> list[str]:
    """The keyword options the reducer ``name`` takes."""
    return registry.options(name)


def get(name: str, **options) -> VarianceReducer:
    """The reducer registered as ``name``, built with ``options`` (e.g. ``order=2``)."""
    return registry.build(name, **options)


def register(name: str, factory, *, overwrite: bool = False) -> None:
    """Register ``factory(**options) -> VarianceReducer`` under ``name`` in this process (a
    reducer class qualifies)."""
    registry.register(name, factory, overwrite=overwrite)
