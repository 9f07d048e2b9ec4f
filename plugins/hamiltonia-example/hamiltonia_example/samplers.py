"""The ``example-jittered-hmc`` sampler: HMC with a random number of leapfrog steps."""

from __future__ import annotations

import numbers

from hamiltonia import HamiltonianSampler
from hamiltonia.samplers import composition as make
from hamiltonia.trajectories.metropolis import MetropolisTrajectory

__all__ = ["JitteredLength", "jittered_hmc"]


class JitteredLength(MetropolisTrajectory):
    """A number of integration steps drawn uniformly from :math:`\\{1, \\dots, L_{max}\\}`.

    A fresh length is drawn at every iteration for every chain, from that chain's own
    generator (so a chain's draws do not depend on the others), then the trajectory is
    integrated and Metropolis-tested as in :class:`hamiltonia.StaticLength`. Jittering the
    length avoids the near-periodic trajectories a fixed length can fall into. It is a
    :class:`~hamiltonia.trajectories.metropolis.MetropolisTrajectory` with ``min_steps=1``,
    so it runs compiled with no kernel of its own.

    Parameters
    ----------
    max_steps : int
        :math:`L_{max} \\geq 1`.
    """

    def __init__(self, max_steps: int):
        if (
            isinstance(max_steps, bool)
            or not isinstance(max_steps, numbers.Integral)
            or max_steps < 1
        ):
            raise ValueError(f"max_steps must be an integer >= 1, got {max_steps!r}")
        super().__init__(1, int(max_steps))

    def __repr__(self):
        return f"JitteredLength({self.max_steps})"


def jittered_hmc(
    target,
    *,
    max_steps: int = 20,
    step_size: float | None = None,
    target_accept: float = 0.8,
) -> HamiltonianSampler:
    """HMC with a number of leapfrog steps drawn uniformly from 1..max_steps each iteration.

    Full momentum refreshment, :class:`JitteredLength` trajectories integrated with the
    leapfrog, and a Metropolis test on :math:`H`, composed with the helpers of
    :mod:`hamiltonia.samplers.composition`. With ``step_size=None`` (default) the step
    size is adapted by dual averaging during warm-up towards ``target_accept``; a number fixes
    it.

    Parameters
    ----------
    target : Target
    max_steps : int
        Largest number of leapfrog steps per trajectory (default 20).
    step_size : float, optional
        Fixed step size; adapted during warm-up when not given.
    target_accept : float
        Target acceptance rate of dual averaging (default 0.8).
    """
    # The built-in recipes' helpers build every part but the trajectory, the new one, so the
    # options mean what they mean in ``hmc`` and are refused with the same messages.
    hamiltonian = make.hamiltonian(target)
    return make.compose(
        hamiltonian,
        trajectory=JitteredLength(max_steps),
        integrator=make.integrator("leapfrog"),
        refresh=make.momentum_refresh(0.0, hamiltonian),
        tuners=make.step_size_tuners(step_size, target_accept=target_accept),
        step_size=step_size,
    )
