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
from hamiltonia.registry import Registry, lookups

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


names, describe, options, get, register = lookups(registry, "variance reducers", "order=2")
