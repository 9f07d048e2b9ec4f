"""Gibbs steps on some coordinates between the transitions of another sampler."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hamiltonia import backend
from hamiltonia._validation import check_int
from hamiltonia.samplers.base import Sampler

__all__ = ["GibbsWithin"]


class GibbsWithin(Sampler):
    """Alternate an exact Gibbs update of some coordinates with an inner sampler.

    Every ``every`` iterations the coordinates :math:`\\theta` are drawn from their full
    conditional :math:`\\pi(\\theta \\mid w)` by ``update``; every iteration the inner
    sampler moves :math:`w` given :math:`\\theta` (a Hamiltonian sampler whose Hamiltonian
    is a :class:`~hamiltonia.hamiltonians.conditional.ConditionalHamiltonian`). Each block
    leaves :math:`\\pi(w, \\theta)` invariant, so their composition does. This is the
    HMC-within-Gibbs scheme of the ARD neural networks (Mbuvha 2021, thesis, Algorithm 4.1;
    Neal 1996), with :math:`n_{\\text{Gibbs}} = 50` there.

    Parameters
    ----------
    inner : Sampler
        The sampler of :math:`w \\mid \\theta`; its tuners adapt during warm-up.
    update : callable
        ``update(q, rngs) -> q``: returns positions with :math:`\\theta` redrawn from its
        full conditional, row ``c`` using only ``rngs[c]``.
    every : int
        Iterations between Gibbs updates (>= 1).
    """

    def __init__(self, inner: Sampler, update: Callable, every: int = 50):
        if not isinstance(inner, Sampler):
            raise TypeError(f"inner must be a Sampler, got {type(inner).__name__}")
        if not callable(update):
            raise TypeError("update must be callable: update(q, rngs) -> q")
        super().__init__(inner.target, tuners=inner.tuners, reducer=inner.reducer)
        self.inner = inner
        self.update = update
        self.every = check_int(every, "every", minimum=1)
        self.name = inner.name
        self._count = 0

    @property
    def hamiltonian(self):
        return self.inner.hamiltonian

    def init(self, positions):
        self._count = 0
        return self.inner.init(positions)

    def step(self, chain, rngs):
        self._count += 1
        if self._count % self.every == 0:
            q = self.update(np.array(backend.to_numpy(chain.phase.q), copy=True), rngs)
            moved = self.inner.init(backend.asarray(q)).phase
            # The momentum (and any auxiliary variable) carries over: a partial refresh
            # mixes it into the next one.
            moved.p, moved.aux = chain.phase.p, chain.phase.aux
            chain.phase = moved
        return self.inner.step(chain, rngs)

    def stats(self):
        return self.inner.stats()

    def extra_state(self):
        return {"count": self._count, "inner": self.inner.extra_state()}

    def restore_extra_state(self, state):
        self._count = int(state.get("count", 0))
        self.inner.restore_extra_state(state.get("inner", {}))

    def probe_acceptance(self, chain, step_size, rngs):
        return self.inner.probe_acceptance(chain, step_size, rngs)

    def log_weight(self, chain):
        return self.inner.log_weight(chain)

    def __repr__(self):
        return f"GibbsWithin({self.inner!r}, every={self.every})"
