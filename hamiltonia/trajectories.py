"""Trajectory policies: how long to integrate, and how a trajectory becomes the next state.

A :class:`StaticLength` policy integrates a fixed number of steps and applies the Metropolis
test of Hybrid Monte Carlo. Dynamic policies (the no-U-turn tree) build a set of states and
select among them; they override :meth:`TrajectoryPolicy.transition`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hamiltonia._validation import check_int
from hamiltonia.state import PhaseState

__all__ = ["MetropolisTrajectory", "StaticLength", "TrajectoryPolicy", "metropolis_select"]

#: Energy error beyond which a trajectory is called divergent (Stan's and NumPyro's value).
MAX_ENERGY_ERROR = 1000.0


class TrajectoryPolicy:
    """Abstract trajectory policy.

    Contract
    --------
    ``transition(sampler, state, step_size, rngs)`` takes the state *after* momentum
    refreshment and returns ``(next_state, info)`` where ``info`` holds per-chain arrays
    ``accepted``, ``acceptance_rate`` (the statistic step-size adaptation targets),
    ``diverging``, ``n_grad``, ``n_steps`` and ``energy`` (the Hamiltonian at the next state).
    """

    def transition(self, sampler, state: PhaseState, step_size: np.ndarray, rngs):
        raise NotImplementedError


def metropolis_select(
    current: PhaseState,
    proposal: PhaseState,
    h0: np.ndarray,
    h1: np.ndarray,
    rngs: Sequence[np.random.Generator],
    *,
    flip_on_reject: bool = False,
):
    """Metropolis test between ``current`` and ``proposal`` with energies ``h0``, ``h1``.

    Accepts with probability :math:`\\min(1, e^{h_0 - h_1})`; one ``rng.random()`` per chain.
    A proposal with a non-finite energy or state, or an energy error above
    :data:`MAX_ENERGY_ERROR`, is rejected and marked divergent.

    The proposal's momentum is not negated: negation followed by the next refreshment's
    negation cancel, so accepting keeps :math:`p'` and rejecting keeps :math:`p` (or
    :math:`-p` when ``flip_on_reject``, as partial refreshment requires).

    Returns
    -------
    next_state, accepted, accept_prob, diverging
    """
    with np.errstate(all="ignore"):
        delta = h1 - h0
        ok = proposal.finite & np.isfinite(delta)
        diverging = ~ok | (delta > MAX_ENERGY_ERROR)
        accept_prob = np.where(ok, np.minimum(1.0, np.exp(-np.where(ok, delta, 0.0))), 0.0)
    u = np.array([rng.random() for rng in rngs])
    accepted = ok & (u < accept_prob)
    stay = current.with_momentum(-current.p) if flip_on_reject else current
    return proposal.select(accepted, stay), accepted, accept_prob, diverging


class MetropolisTrajectory(TrajectoryPolicy):
    """Integrate a number of steps, then apply the Metropolis test (HMC, Algorithm 2).

    Subclasses choose the number of steps with :meth:`n_steps`.
    """

    def n_steps(self, rngs) -> int:
        raise NotImplementedError

    def transition(self, sampler, state, step_size, rngs):
        ham = sampler.hamiltonian
        n = self.n_steps(rngs)
        proposal, n_grad = sampler.integrator.integrate(ham, state, step_size, n)
        with np.errstate(all="ignore"):  # a diverging trajectory overflows; it is rejected
            h0 = sampler.energy(state, step_size)
            h1 = sampler.energy(proposal, step_size)
        nxt, accepted, prob, diverging = metropolis_select(
            state, proposal, h0, h1, rngs, flip_on_reject=sampler.refresh.flip_on_reject
        )
        energy = np.where(accepted, h1, h0)
        info = {
            "accepted": accepted,
            "acceptance_rate": prob,
            "diverging": diverging,
            "n_grad": n_grad,
            "n_steps": np.full(state.q.shape[0], n, dtype=np.int64),
            "energy": energy,
        }
        return nxt, info


class StaticLength(MetropolisTrajectory):
    """A fixed number of integration steps :math:`L` per trajectory.

    Parameters
    ----------
    n_steps : int
        :math:`L \\geq 1`.
    """

    def __init__(self, n_steps: int):
        self.length = check_int(n_steps, "n_steps", minimum=1)

    def n_steps(self, rngs):
        return self.length

    def __repr__(self):
        return f"StaticLength({self.length})"
