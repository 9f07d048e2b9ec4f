"""Trajectory policies: how long to integrate, and how a trajectory becomes the next state.

A :class:`StaticLength` policy integrates a fixed number of steps and applies the Metropolis
test of Hybrid Monte Carlo. Dynamic policies (the no-U-turn tree) build a set of states and
select among them; they override :meth:`TrajectoryPolicy.transition`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hamiltonia import backend
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
    xp = backend.xp()
    with np.errstate(all="ignore"):
        delta = h1 - h0
        ok = proposal.finite & xp.isfinite(delta)
        diverging = ~ok | (delta > MAX_ENERGY_ERROR)
        accept_prob = xp.where(ok, xp.exp(-xp.where(ok, delta, 0.0)), 0.0)
        accept_prob = xp.where(accept_prob > 1.0, 1.0, accept_prob)
    u = backend.asarray(np.array([rng.random() for rng in rngs]))
    accepted = ok & (u < accept_prob)
    stay = current.with_momentum(-current.p) if flip_on_reject else current
    return proposal.select(accepted, stay), accepted, accept_prob, diverging


class MetropolisTrajectory(TrajectoryPolicy):
    """Integrate a number of steps, then apply the Metropolis test (HMC, Algorithm 2).

    Subclasses choose the number of steps with :meth:`n_steps`.

    With ``step_size_jitter`` :math:`j > 0`, each chain integrates with
    :math:`\\varepsilon (1 + j (2u - 1))`, :math:`u \\sim U(0, 1)` drawn from its generator
    after the momentum (Neal 2011, §5.4.2.2): a fixed trajectory length can resonate with a
    period of the target, so that a coordinate barely moves (on Gaussians in particular),
    and a random length breaks the resonance.
    """

    step_size_jitter: float = 0.0

    def n_steps(self, rngs) -> int:
        raise NotImplementedError

    def jittered(self, step_size, rngs):
        """The step sizes to integrate with this iteration (one uniform per chain when
        jittering, none otherwise)."""
        if not self.step_size_jitter:
            return step_size
        u = np.array([rng.random() for rng in rngs])
        return np.asarray(step_size) * (1.0 + self.step_size_jitter * (2.0 * u - 1.0))

    def transition(self, sampler, state, step_size, rngs):
        ham = sampler.hamiltonian
        n = self.n_steps(rngs)
        eps = self.jittered(step_size, rngs)
        proposal, n_grad = sampler.integrator.integrate(ham, state, eps, n)
        with np.errstate(all="ignore"):  # a diverging trajectory overflows; it is rejected
            h0 = sampler.energy(state, step_size)
            h1 = sampler.energy(proposal, step_size)
        nxt, accepted, prob, diverging = metropolis_select(
            state, proposal, h0, h1, rngs, flip_on_reject=sampler.refresh.flip_on_reject
        )
        energy = backend.xp().where(accepted, h1, h0)
        host = backend.to_numpy
        info = {
            "accepted": host(accepted),
            "acceptance_rate": host(prob),
            "diverging": host(diverging),
            "n_grad": n_grad,
            "n_steps": np.full(state.q.shape[0], n, dtype=np.int64),
            "energy": host(energy),
        }
        return nxt, info


class StaticLength(MetropolisTrajectory):
    """A fixed number of integration steps :math:`L` per trajectory.

    Parameters
    ----------
    n_steps : int
        :math:`L \\geq 1`.
    step_size_jitter : float in [0, 1)
        Relative jitter of the step size (default 0: none), see
        :class:`MetropolisTrajectory`.
    """

    def __init__(self, n_steps: int, step_size_jitter: float = 0.0):
        self.length = check_int(n_steps, "n_steps", minimum=1)
        jitter = float(step_size_jitter)
        if not 0.0 <= jitter < 1.0:
            raise ValueError(f"step_size_jitter must lie in [0, 1), got {step_size_jitter!r}")
        self.step_size_jitter = jitter

    def n_steps(self, rngs):
        return self.length

    def __repr__(self):
        if self.step_size_jitter:
            return f"StaticLength({self.length}, step_size_jitter={self.step_size_jitter})"
        return f"StaticLength({self.length})"
