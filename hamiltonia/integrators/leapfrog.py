"""The leapfrog (Störmer-Verlet) integrator."""

from __future__ import annotations

import numpy as np

from hamiltonia import backend
from hamiltonia.integrators.base import Integrator
from hamiltonia.state import PhaseState

__all__ = ["Leapfrog"]


class Leapfrog(Integrator):
    """Leapfrog: half kick, drift, half kick.

    .. math::

        p_{1/2} &= p_0 + \\tfrac{\\varepsilon}{2} \\nabla\\log\\pi(q_0) \\\\
        q_1 &= q_0 + \\varepsilon\\, M^{-1} p_{1/2} \\\\
        p_1 &= p_{1/2} + \\tfrac{\\varepsilon}{2} \\nabla\\log\\pi(q_1)

    (spec/seed002_ch1-3.md §2.3, eq. 2.19 with the sign erratum corrected: the kick follows
    :math:`-\\nabla U = \\nabla\\log\\pi`). Adjacent half kicks of consecutive steps are merged,
    so ``L`` steps cost ``L`` gradient evaluations (the gradient at the start is cached);
    a trajectory that stops being finite counts the evaluations up to that point.
    Symplectic, reversible and of order 2.

    References
    ----------
    Neal (2011), *MCMC using Hamiltonian dynamics*, §2.3.
    """

    order = 2

    def step(self, hamiltonian, state, step_size):
        return self.integrate(hamiltonian, state, step_size, 1)[0]

    def integrate(self, hamiltonian, state: PhaseState, step_size, n_steps: int):
        if n_steps == 0:
            return state, np.zeros(state.q.shape[0], dtype=np.int64)
        eps = backend.asarray(step_size)[..., None]
        q, p, grad = state.q, state.p, state.grad
        lp = state.log_prob
        # A chain's count stops at its first non-finite state, as where chains run one by one
        # (the compiled path) and stop integrating there: the rest is wasted on a rejection.
        n_grad = np.zeros(q.shape[0], dtype=np.int64)
        alive = np.ones(q.shape[0], dtype=bool)
        with np.errstate(all="ignore"):
            p = p + 0.5 * eps * grad
            for i in range(n_steps):
                q = q + eps * hamiltonian.velocity(p)
                new = hamiltonian.evaluate(q)
                lp, grad = new.log_prob, new.grad
                p = p + (eps if i < n_steps - 1 else 0.5 * eps) * grad
                n_grad += alive
                alive &= backend.to_numpy(new.finite)
        n_grad *= hamiltonian.n_grad_per_evaluation
        return PhaseState(q, p, lp, grad), n_grad
