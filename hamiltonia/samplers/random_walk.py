"""Random-walk Metropolis-Hastings."""

from __future__ import annotations

import numpy as np

from hamiltonia import backend
from hamiltonia.samplers.base import Sampler
from hamiltonia.state import ChainState, PhaseState, evaluate_target
from hamiltonia.trajectories.metropolis import metropolis_select

__all__ = ["RandomWalkMetropolis"]


class RandomWalkMetropolis(Sampler):
    """Random-walk Metropolis (Metropolis et al. 1953; Mongwe 2022, thesis, §2.2, Algorithm 1).

    .. math::

        x^* = x + \\varepsilon z,\\quad z \\sim \\mathcal N(0, I), \\qquad
        \\text{accept w.p.}\\ \\min\\bigl(1, \\pi(x^*)/\\pi(x)\\bigr).

    The step size :math:`\\varepsilon` is the proposal **standard deviation** (the thesis
    writes the proposal covariance as :math:`\\varepsilon I`; its author's code, and this
    library, use :math:`\\varepsilon` as the standard deviation, so the covariance is
    :math:`\\varepsilon^2 I`). It needs no gradient, and reports ``n_grad = 0``.

    References
    ----------
    Metropolis et al. (1953); Hastings (1970); Roberts and Rosenthal (2001) for the 0.234
    optimal acceptance rate.
    """

    name = "rwmh"

    def init(self, positions):
        q = backend.asarray(positions)
        lp, _ = evaluate_target(self.target, q, with_grad=False)
        phase = PhaseState(q, backend.xp().zeros_like(q), lp, None)
        return ChainState(phase, self._initial_step_sizes(q.shape[0]))

    def _propose(self, phase, step_size, rngs):
        z = np.stack([rng.standard_normal(self.target.dim) for rng in rngs])
        q = phase.q + backend.asarray(np.asarray(step_size)[:, None] * z)
        lp, _ = evaluate_target(self.target, q, with_grad=False)
        return PhaseState(q, phase.p, lp, None)

    def step(self, chain, rngs):
        phase = chain.phase
        proposal = self._propose(phase, chain.step_size, rngs)
        nxt, accepted, prob, _ = metropolis_select(
            phase, proposal, -phase.log_prob, -proposal.log_prob, rngs
        )
        host = backend.to_numpy
        # A random walk has no energy error to blow up: only a log density that could not
        # be evaluated (nan) counts as divergent; -inf (outside the support) is a rejection.
        diverging = np.isnan(host(proposal.log_prob))
        chain.phase = nxt
        n = phase.q.shape[0]
        info = {
            "accepted": host(accepted),
            "acceptance_rate": host(prob),
            "diverging": diverging,
            "n_grad": np.zeros(n, dtype=np.int64),
            "n_steps": np.ones(n, dtype=np.int64),
            "energy": -host(nxt.log_prob),
        }
        return chain, info

    def probe_acceptance(self, chain, step_size, rngs):
        phase = chain.phase
        proposal = self._propose(phase, step_size, rngs)
        with np.errstate(all="ignore"):
            prob = np.exp(backend.to_numpy(proposal.log_prob - phase.log_prob))
        return np.where(np.isfinite(prob), np.minimum(1.0, prob), 0.0)
