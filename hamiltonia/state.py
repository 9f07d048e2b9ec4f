"""Chain states and the guarded evaluation of a target.

A :class:`PhaseState` holds a batch of points in phase space, one row per chain, with the log
density and its gradient cached at the position so that no part evaluates the target twice.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from hamiltonia import backend

__all__ = ["ChainState", "PhaseState", "evaluate_target"]


@dataclass
class PhaseState:
    """A batch of phase-space points, with any per-chain variables the parts declare.

    Attributes
    ----------
    q : ndarray, shape ``(chains, dim)``
        Positions.
    p : ndarray, shape ``(chains, dim)``
        Momenta. They are kept between iterations (a partial refresh mixes the old momentum
        into the new one) and saved with a checkpoint.
    log_prob : ndarray, shape ``(chains,)``
        :math:`\\log\\pi(q)`; ``nan`` where the target could not be evaluated.
    grad : ndarray, shape ``(chains, dim)``, or None
        :math:`\\nabla_q \\log\\pi(q)`; ``None`` for gradient-free samplers.
    aux : dict of str to ndarray
        Auxiliary variables, each with the chains on its first axis: the sign of a magnetic
        field, a random mass, a permutation... A part declares the ones its kernels use in
        its :class:`~hamiltonia.compiled.parts.PartKernels` (``aux``; a variable not set
        yet starts at zero) and sets them on the NumPy path; :meth:`select`, :meth:`take`
        and :meth:`copy` treat them
        like ``q``, and checkpoints save them.
    """

    q: np.ndarray
    p: np.ndarray
    log_prob: np.ndarray
    grad: np.ndarray | None
    aux: dict = field(default_factory=dict)

    def _map(self, fn) -> PhaseState:
        def one(a):
            return None if a is None else fn(a)

        return PhaseState(
            one(self.q),
            one(self.p),
            one(self.log_prob),
            one(self.grad),
            {k: fn(v) for k, v in self.aux.items()},
        )

    def copy(self) -> PhaseState:
        """A deep copy of the arrays."""
        xp = backend.xp()
        return self._map(lambda a: xp.asarray(a, copy=True))

    def with_momentum(self, p: np.ndarray) -> PhaseState:
        """The same positions (and auxiliary variables) with momenta ``p``."""
        return replace(self, p=p, aux=dict(self.aux))

    def select(self, mask, other: PhaseState) -> PhaseState:
        """Rows of ``self`` where ``mask`` (shape ``(chains,)``) is true, rows of ``other``
        elsewhere."""
        xp = backend.xp()

        def pick(a, b):
            if a is None:
                return None
            m = xp.reshape(mask, mask.shape + (1,) * (a.ndim - 1))
            return xp.where(m, a, b)

        return PhaseState(
            pick(self.q, other.q),
            pick(self.p, other.p),
            pick(self.log_prob, other.log_prob),
            pick(self.grad, other.grad),
            {k: pick(v, other.aux[k]) for k, v in self.aux.items()},
        )

    def take(self, rows) -> PhaseState:
        """The chains ``rows`` (an index array or slice), as a new state."""
        if isinstance(rows, slice):
            return self._map(lambda a: a[rows, ...])
        xp = backend.xp()
        index = xp.asarray(np.asarray(rows), dtype=xp.int64)
        return self._map(lambda a: xp.take(a, index, axis=0))

    @property
    def finite(self):
        """Chains whose position, log density and gradient are all finite."""
        xp = backend.xp()
        ok = xp.isfinite(self.log_prob) & xp.all(xp.isfinite(self.q), axis=-1)
        if self.grad is not None:
            ok = ok & xp.all(xp.isfinite(self.grad), axis=-1)
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


def _evaluate_rows(target, q, with_grad: bool):
    flat = backend.to_numpy(q).reshape(-1, q.shape[-1])
    lps = np.full(flat.shape[0], np.nan)
    grads = np.full(flat.shape, np.nan) if with_grad else None
    for i, row in enumerate(flat):
        try:
            if with_grad:
                lp, g = target.log_prob_and_grad(backend.asarray(row))
                grads[i] = backend.to_numpy(g)
            else:
                lp = target.log_prob(backend.asarray(row))
            lps[i] = float(backend.to_numpy(lp))
        except Exception:  # a failing point is a rejected proposal, by design
            pass
    lps = backend.asarray(lps.reshape(q.shape[:-1]))
    return lps, None if grads is None else backend.asarray(grads.reshape(q.shape))


def _shapes_fit(xp, lp, g, q) -> bool:
    try:
        lp_shape = xp.asarray(lp).shape
    except (TypeError, ValueError):
        return False
    if lp_shape != q.shape[:-1]:
        return False
    return g is None or tuple(getattr(g, "shape", np.shape(g))) == q.shape


def evaluate_target(target, q, with_grad: bool = True):
    """Evaluate ``target`` at ``q`` without letting a bad point stop a run.

    A log density or gradient that raises, or that is not finite, is returned as ``nan`` for
    that row only (a failing batch is retried row by row), so that the sampler can reject
    the proposal and record it as divergent. ``-inf`` log densities (outside the support)
    are kept as they are. Arrays are of the current :mod:`~hamiltonia.backend`.

    Returns
    -------
    log_prob : array (...)
    grad : array (..., dim) or None
    """
    xp = backend.xp()
    with np.errstate(all="ignore"):
        if getattr(target, "_row_by_row", False) and q.ndim > 1:
            lp, g = _evaluate_rows(target, q, with_grad)
        else:
            try:
                if with_grad:
                    lp, g = target.log_prob_and_grad(q)
                else:
                    lp, g = target.log_prob(q), None
            except Exception:  # retry row by row: only the failing rows become nan
                lp, g = _evaluate_rows(target, q, with_grad)
            if not _shapes_fit(xp, lp, g, q) and q.ndim > 1:
                # A target written for one point at a time: evaluate rows from now on.
                warnings.warn(
                    f"{type(target).__name__} does not evaluate a batch (..., dim) as the "
                    "Target contract asks; evaluating chains one at a time (slower)",
                    RuntimeWarning,
                    stacklevel=2,
                )
                target._row_by_row = True
                lp, g = _evaluate_rows(target, q, with_grad)
        lp = xp.asarray(lp, dtype=xp.float64)
        if lp.shape != q.shape[:-1]:
            raise ValueError(
                f"the target's log density has shape {lp.shape}, expected {q.shape[:-1]}"
            )
        if g is not None:
            g = xp.asarray(g, dtype=xp.float64)
            if g.shape != q.shape:
                raise ValueError(f"the target's gradient has shape {g.shape}, expected {q.shape}")
        bad = xp.isnan(lp) | (lp == xp.inf)
        if g is not None:
            bad = bad | ~xp.all(xp.isfinite(g), axis=-1)
        lp = xp.where(bad, xp.nan, lp)
    return lp, g
