"""Trajectory policies: how long to integrate and how a trajectory becomes the next state
(the Metropolis transition over a length policy; the no-U-turn tree), and the registry of
named policies (entry-point group ``hamiltonia.trajectories``).

The recipes build ``"metropolis"`` (:func:`~hamiltonia.samplers.recipes.hmc` and its
presets, from ``n_steps``, ``n_steps_jitter`` and ``step_size_jitter``) and ``"no-u-turn"``
(:func:`~hamiltonia.samplers.recipes.nuts`, from ``max_tree_depth`` and ``criterion``).

>>> import hamiltonia as hm
>>> hm.trajectories.get("static-length", n_steps=10)
StaticLength(10)
"""

from __future__ import annotations

from hamiltonia.registry import Registry, lookups
from hamiltonia.trajectories.delayed_rejection import DelayedRejection
from hamiltonia.trajectories.jittered_length import JitteredLength
from hamiltonia.trajectories.metropolis import (
    MAX_ENERGY_ERROR,
    MetropolisTrajectory,
    RandomLength,
    StaticLength,
    TrajectoryPolicy,
    is_divergent,
    jittered_step_size,
    metropolis_probability,
    metropolis_select,
)
from hamiltonia.trajectories.no_u_turn import NoUTurn

__all__ = [
    "MAX_ENERGY_ERROR",
    "DelayedRejection",
    "JitteredLength",
    "MetropolisTrajectory",
    "NoUTurn",
    "RandomLength",
    "StaticLength",
    "TrajectoryPolicy",
    "describe",
    "get",
    "is_divergent",
    "jittered_step_size",
    "metropolis_probability",
    "metropolis_select",
    "names",
    "options",
    "register",
    "registry",
]


#: The registry of trajectory policies, fed by the ``hamiltonia.trajectories`` entry points.
registry = Registry("hamiltonia.trajectories", "trajectory policy", returns=TrajectoryPolicy)


names, describe, options, get, register = lookups(registry, "trajectory policies", "n_steps=10")
