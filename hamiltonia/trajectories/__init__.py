"""Trajectory policies: how long to integrate and how a trajectory becomes the next state
(the Metropolis transition over a length policy; the no-U-turn tree)."""

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
    "MetropolisTrajectory",
    "NoUTurn",
    "RandomLength",
    "StaticLength",
    "TrajectoryPolicy",
    "is_divergent",
    "jittered_step_size",
    "metropolis_probability",
    "metropolis_select",
]
