"""Momentum refreshment between trajectories (full, partial, partial with a momentum test)."""

from hamiltonia.refresh.momentum import (
    FullRefresh,
    MetropolisPartialRefresh,
    MomentumRefresh,
    PartialRefresh,
    partial_mix,
)

__all__ = [
    "FullRefresh",
    "MetropolisPartialRefresh",
    "MomentumRefresh",
    "PartialRefresh",
    "partial_mix",
]
