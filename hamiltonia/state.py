"""Chain states and the guarded evaluation of a target.

A :class:`PhaseState` holds a batch of points in phase space, one row per chain, with the log
density and its gradient cached at the position so that no part evaluates the target twice.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

__all__ = ["ChainState", "PhaseState", "evaluate_target"]


@dataclass
class PhaseState:
    """A batch of phase-space points.

    Attributes
    ----------
    q : ndarray, shape ``(chains, dim)``
        Positions.
    p : ndarray, shape ``(chains, dim)``
        Momenta (zeros until a :class:`~hamiltonia.momentum.MomentumRefresh` draws them).
    log_prob : ndarray, shape ``(chains,)``
        :math:`\\log\\pi(q)`; ``nan`` where the target could not be evaluated.
    grad : ndarray, shape ``(chains, dim)``, or None
        :math:`\\nabla_q \\log\\pi(q)`; ``None`` for gradient-free samplers.
    """

    q: np.ndarray
    p: np.ndarray
    log_prob: np.ndarray
    grad: np.ndarray | None

    def copy(self) -> PhaseState:
        """A deep copy of the arrays."""
        return PhaseState(
            self.q.copy(),
            self.p.copy(),
            self.log_prob.copy(),
            None if self.grad is None else self.grad.copy(),
        )

    def with_momentum(self, p: np.ndarray) -> PhaseState:
        """The same positions with momenta ``p``."""
        return replace(self, p=p)

    def select(self, mask: np.ndarray, other: PhaseState) -> PhaseState:
        """Rows of ``self`` where ``mask`` is true, rows of ``other`` elsewhere."""
        m = mask[:, None]
        return PhaseState(
            np.where(m, self.q, other.q),
            np.where(m, self.p, other.p),
            np.where(mask, self.log_prob, other.log_prob),
            None if self.grad is None else np.where(m, self.grad, other.grad),
        )

    def take(self, rows) -> PhaseState:
        """The chains ``rows`` (an index array or slice), as a new state."""
        return PhaseState(
            self.q[rows],
            self.p[rows],
            self.log_prob[rows],
            None if self.grad is None else self.grad[rows],
        )

    @property
    def finite(self) -> np.ndarray:
        """Chains whose position, log density and gradient are all finite."""
        ok = np.isfinite(self.log_prob) & np.all(np.isfinite(self.q), axis=-1)
        if self.grad is not None:
            ok &= np.all(np.isfinite(self.grad), axis=-1)
        return ok


@dataclass
class ChainState:
    """Everything a sampler carries from one iteration to the next, for all chains.

    Attributes
    ----------
    phase : PhaseState
        The current points.
    step_size : ndarray, shape ``(chains,)``
        The current step size of each chain (tuners change it during warm-up).
    """

    phase: PhaseState
    step_size: np.ndarray


def _evaluate_rows(target, q: np.ndarray, with_grad: bool):
    flat = q.reshape(-1, q.shape[-1])
    lps = np.full(flat.shape[0], np.nan)
    grads = np.full(flat.shape, np.nan) if with_grad else None
    for i, row in enumerate(flat):
        try:
            if with_grad:
                lp, g = target.log_prob_and_grad(row)
                grads[i] = g
            else:
                lp = target.log_prob(row)
            lps[i] = lp
        except Exception:
            pass
    lps = lps.reshape(q.shape[:-1])
    return lps, None if grads is None else grads.reshape(q.shape)


def evaluate_target(target, q: np.ndarray, with_grad: bool = True):
    """Evaluate ``target`` at ``q`` without letting a bad point stop a run.

    A log density or gradient that raises, or that is not finite, is returned as ``nan`` for
    that row only (a failing batch is retried row by row), so that the sampler can reject
    the proposal and record it as divergent. ``-inf`` log densities (outside the support)
    are kept as they are.

    Returns
    -------
    log_prob : ndarray (...)
    grad : ndarray (..., dim) or None
    """
    with np.errstate(all="ignore"):
        try:
            if with_grad:
                lp, g = target.log_prob_and_grad(q)
            else:
                lp, g = target.log_prob(q), None
        except Exception:
            lp, g = _evaluate_rows(target, q, with_grad)
        lp = np.asarray(lp, dtype=float)
        if lp.shape != q.shape[:-1]:
            raise ValueError(
                f"the target's log density has shape {lp.shape}, expected {q.shape[:-1]}"
            )
        lp = np.where(np.isnan(lp) | (lp == np.inf), np.nan, lp)
        if g is not None:
            g = np.asarray(g, dtype=float)
            if g.shape != q.shape:
                raise ValueError(f"the target's gradient has shape {g.shape}, expected {q.shape}")
            lp = np.where(np.all(np.isfinite(g), axis=-1), lp, np.nan)
    return lp, g
