"""Splitting integrators given by their coefficient tables: leapfrog and its multi-stage
relatives.

A symmetric splitting of :math:`H = U + K` composes the flows of the potential (a *kick*,
:math:`p \\leftarrow p + h\\nabla\\log\\pi(q)`) and of the kinetic energy (a *drift*,
:math:`q \\leftarrow q + h M^{-1}p`) as

.. math::

    \\Psi_\\varepsilon = \\varphi^{U}_{b_0\\varepsilon} \\circ \\varphi^{K}_{a_1\\varepsilon}
        \\circ \\varphi^{U}_{b_1\\varepsilon} \\circ \\cdots \\circ
        \\varphi^{K}_{a_k\\varepsilon} \\circ \\varphi^{U}_{b_k\\varepsilon},

with :math:`\\sum_i b_i = \\sum_i a_i = 1` (consistency) and palindromic coefficients
(symmetry, hence reversibility and even order). Each flow is exact and symplectic, so the
composition is symplectic and volume preserving. The kicks and drifts are those of the
integrator's :class:`~hamiltonia.structures.base.PoissonStructure`, so the same table integrates a
magnetic flow when the structure is magnetic. The last kick of a step and the first of the
next are merged, so a step costs :math:`k` gradient evaluations.

References
----------
Blanes, Casas and Sanz-Serna (2014), *Numerical integrators for the Hybrid Monte Carlo
method*, SIAM J. Sci. Comput. 36(4): the two- and three-stage integrators that minimise the
expected energy error of Gaussian targets; mici's symmetric compositions
(``mici.integrators``) and BlackJAX's coefficient lists (``blackjax.mcmc.integrators``)
follow the same idea.

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").
"""

from __future__ import annotations

import math

import numpy as np

from hamiltonia import backend
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import drift, kick, own
from hamiltonia.integrators.base import Integrator, per_chain_lengths
from hamiltonia.state import PhaseState

__all__ = ["Splitting", "ThreeStage", "TwoStage", "merged_kick"]


def merged_kick(kicks, stage: int, continues):
    """The kick coefficient after drift ``stage`` (from 0): :math:`b_{s+1}`, plus
    :math:`b_0` at the end of a step that another step follows (the merged kicks).
    ``continues`` is a bool or an array of them (one per chain)."""
    b = kicks[stage + 1]
    if stage == len(kicks) - 2:
        return b + kicks[0] * continues
    return b


def splitting_integrate_kernel(ctx, q, p, grad, lp, eps, n_steps, v):
    """Kernel of :meth:`Splitting.integrate` for one chain, in place (role ``integrate``).
    Its parameters are the table: the kicks :math:`b_0..b_k` and the drifts
    :math:`a_1..a_k`."""
    kicks = own.kicks
    drifts = own.drifts
    k = drifts.shape[0]
    n_grad = 0
    if n_steps == 0:
        return lp, n_grad
    kick(ctx, q, p, grad, kicks[0] * eps)
    for step in range(n_steps):
        for s in range(k):
            check = drift(ctx, q, p, v, drifts[s] * eps)
            lp = ctx.logp(q, grad, ctx.fdata, ctx.idata)
            n_grad += 1
            h = merged_kick(kicks, s, step < n_steps - 1) * eps
            check += kick(ctx, q, p, grad, h)
            if not (math.isfinite(lp) and check == 0.0):
                return math.nan, n_grad
    return lp, n_grad


class Splitting(Integrator):
    """A symmetric splitting integrator from its coefficient table.

    Parameters
    ----------
    kicks : sequence of float
        :math:`b_0, \\dots, b_k`, palindromic, summing to one.
    drifts : sequence of float
        :math:`a_1, \\dots, a_k`, palindromic, summing to one.
    structure : PoissonStructure, optional
        Canonical by default.

    A subclass may give ``kicks`` and ``drifts`` as class attributes instead; it then runs
    compiled with no kernel of its own.
    """

    kicks: tuple[float, ...] = ()
    drifts: tuple[float, ...] = ()
    uses_structure = True

    def __init__(self, kicks=None, drifts=None, structure=None):
        super().__init__(structure)
        kicks = tuple(float(b) for b in (self.kicks if kicks is None else kicks))
        drifts = tuple(float(a) for a in (self.drifts if drifts is None else drifts))
        name = type(self).__name__
        if len(drifts) < 1 or len(kicks) != len(drifts) + 1:
            raise ValueError(
                f"{name}: kicks must have one more coefficient than drifts (>= 1), got "
                f"{len(kicks)} kicks and {len(drifts)} drifts"
            )
        for label, table in (("kicks", kicks), ("drifts", drifts)):
            if not all(math.isfinite(c) for c in table):
                raise ValueError(f"{name}: {label} must be finite, got {table}")
            if abs(math.fsum(table) - 1.0) > 1e-12:
                raise ValueError(f"{name}: {label} must sum to 1 (consistency), got {table}")
            if not np.allclose(table, table[::-1], rtol=0, atol=1e-14):
                raise ValueError(
                    f"{name}: {label} must be palindromic (a symmetric, reversible "
                    f"integrator), got {table}"
                )
        self.kicks, self.drifts = kicks, drifts

    @property
    def n_grad_per_step(self) -> int:
        return len(self.drifts)

    def step(self, hamiltonian, state, step_size):
        return self.integrate(hamiltonian, state, step_size, 1)[0]

    def integrate(self, hamiltonian, state: PhaseState, step_size, n_steps):
        n_chains = state.q.shape[0]
        lengths = per_chain_lengths(n_steps, n_chains)
        n_grad = np.zeros(n_chains, dtype=np.int64)
        longest = int(lengths.max(initial=0))
        if longest == 0:
            return state, n_grad
        structure, aux = self.structure, state.aux
        same_length = bool(np.all(lengths == longest))
        eps = backend.asarray(np.asarray(step_size, dtype=np.float64))[..., None]
        q, p, grad, lp = state.q, state.p, state.grad, state.log_prob
        # A chain's count stops at its first non-finite state, as in the compiled kernel,
        # which stops integrating there: the rest is wasted on a rejection.
        alive = np.ones(n_chains, dtype=bool)
        with np.errstate(all="ignore"):
            q, p = structure.kick(hamiltonian, q, p, grad, self.kicks[0] * eps, aux)
            for step in range(longest):
                running = step < lengths
                before = (q, p, lp, grad)
                continues = step < lengths - 1
                for s in range(len(self.drifts)):
                    q, p = structure.drift(hamiltonian, q, p, self.drifts[s] * eps, aux)
                    new = hamiltonian.evaluate(q)
                    lp, grad = new.log_prob, new.grad
                    n_grad += running & alive
                    alive &= backend.to_numpy(new.finite) | ~running
                    last = step < longest - 1 if same_length else continues
                    b = merged_kick(self.kicks, s, last)
                    h = b * eps if np.ndim(b) == 0 else backend.asarray(b)[:, None] * eps
                    q, p = structure.kick(hamiltonian, q, p, grad, h, aux)
                if not same_length and not running.all():
                    keep = PhaseState(q, p, lp, grad).select(
                        backend.asmask(running), PhaseState(*before)
                    )
                    q, p, grad, lp = keep.q, keep.p, keep.grad, keep.log_prob
        n_grad *= hamiltonian.n_grad_per_evaluation
        if not alive.all():
            # A chain that met a non-finite state ends there, as the compiled kernel does:
            # integrating on from nan may come back to finite numbers, never to be accepted.
            xp = backend.xp()
            lp = xp.where(backend.asmask(alive), lp, xp.asarray(np.nan))
        end = PhaseState(q, p, lp, grad, dict(aux))
        if not np.all(lengths > 0):  # no step, not even the opening kick
            end = end.select(backend.asmask(lengths > 0), state)
        return end, n_grad

    def compiled(self, dim):
        return PartKernels(
            {"integrate": splitting_integrate_kernel},
            params={"kicks": self.kicks, "drifts": self.drifts},
        )

    def __repr__(self):
        if type(self) is Splitting:
            return f"Splitting(kicks={self.kicks}, drifts={self.drifts})"
        return f"{type(self).__name__}()"


class TwoStage(Splitting):
    """The two-stage integrator of Blanes, Casas and Sanz-Serna (2014):
    :math:`b_0 = b_2 = b = (3 - \\sqrt 3)/6 \\approx 0.21132`, :math:`b_1 = 1 - 2b`,
    :math:`a_1 = a_2 = 1/2`. Order 2 with two gradients a step, and a smaller error constant
    than two leapfrog steps of half the size on Gaussian targets.
    """

    b = (3.0 - math.sqrt(3.0)) / 6.0
    kicks = (b, 1.0 - 2.0 * b, b)
    drifts = (0.5, 0.5)


class ThreeStage(Splitting):
    """The three-stage integrator of Blanes, Casas and Sanz-Serna (2014):
    :math:`b_0 = b_3 = 0.11888010966548`, :math:`b_1 = b_2 = 1/2 - b_0`,
    :math:`a_1 = a_3 = 0.29619504261126`, :math:`a_2 = 1 - 2a_1`. Order 2 with three
    gradients a step.
    """

    b = 0.11888010966548
    a = 0.29619504261126
    kicks = (b, 0.5 - b, 0.5 - b, b)
    drifts = (a, 1.0 - 2.0 * a, a)
