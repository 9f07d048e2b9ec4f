"""Variance reducers: importance weights, antithetic pairs, control variates."""

from hamiltonia.reducers.antithetic import AntitheticPairs
from hamiltonia.reducers.base import (
    ImportanceWeights,
    ReducerWrapper,
    VarianceReducer,
    gives_weights,
    weighted_mean,
)
from hamiltonia.reducers.control_variates import ControlVariates

__all__ = [
    "AntitheticPairs",
    "ControlVariates",
    "ImportanceWeights",
    "ReducerWrapper",
    "VarianceReducer",
    "gives_weights",
    "weighted_mean",
]
