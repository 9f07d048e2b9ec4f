"""A Hamiltonian that moves only some coordinates: HMC as one block of a Gibbs sampler."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hamiltonia import backend
from hamiltonia.hamiltonians.base import Hamiltonian
from hamiltonia.hamiltonians.metrics import DiagonalMetric, IdentityMetric

__all__ = ["ConditionalHamiltonian"]


class ConditionalHamiltonian(Hamiltonian):
    """Hamiltonian dynamics of the free coordinates given the fixed ones.

    With the position split as :math:`q = (w, \\theta)` and :math:`\\theta` held fixed, the
    momentum of :math:`\\theta` is zero and

    .. math::

        H(w, p_w \\mid \\theta) = -\\log\\pi(w, \\theta) + \\tfrac12 p_w^\\top M_{ww}^{-1} p_w,

    so an HMC transition leaves :math:`\\pi(w \\mid \\theta)` invariant: one block of a
    Metropolis-within-Gibbs sampler (Neal 2011, §5.4.5; the HMC-with-Gibbs algorithms of
    Mbuvha 2021, thesis, Algorithm 4.1 and Appendix B.3). The other block is updated by
    :class:`~hamiltonia.samplers.gibbs.GibbsWithin`.

    Parameters
    ----------
    base : Hamiltonian
        A Hamiltonian with an identity or diagonal metric (for a dense metric the momentum of
        the free block is not the masked draw, so it is refused).
    fixed : sequence of int
        Indices of the fixed coordinates :math:`\\theta`.
    """

    @property
    def provides(self) -> frozenset[str]:
        """What its base provides: the fixed coordinates' momentum is held at
        zero, the free ones keep their base's law."""
        from hamiltonia.refresh.contracts import provided

        return provided(self.base)

    def __init__(self, base: Hamiltonian, fixed: Sequence[int]):
        super().__init__(base.target)
        metric = getattr(base, "metric", None)
        if metric is not None and not isinstance(metric, IdentityMetric | DiagonalMetric):
            raise ValueError(
                "ConditionalHamiltonian needs an identity or diagonal metric, "
                f"got {type(metric).__name__}"
            )
        fixed = np.unique(np.asarray(fixed, dtype=int))
        if fixed.size == 0 or fixed.min() < 0 or fixed.max() >= base.dim:
            raise ValueError(f"fixed must be indices in [0, {base.dim}), got {fixed.tolist()}")
        self.base = base
        self.fixed = fixed
        self.free_mask = np.ones(base.dim)
        self.free_mask[fixed] = 0.0

    @property
    def metric(self):
        return self.base.metric

    @metric.setter
    def metric(self, value):
        # Metric adaptation sets the metric of the dynamics; the fixed block stays frozen.
        self.base.metric = value

    def _mask(self):
        return backend.asarray(self.free_mask)

    def kinetic(self, p, aux=None):
        return self.base.kinetic(p * self._mask(), aux)

    def velocity(self, p, aux=None):
        return self.base.velocity(p, aux) * self._mask()

    def sample_momentum(self, rngs, aux=None):
        return self.base.sample_momentum(rngs, aux) * self._mask()

    @property
    def per_chain_mass(self):
        return self.base.per_chain_mass

    def update_auxiliary(self, state, rngs):
        # A random mass of the base: its rescaling keeps the fixed block's zero momentum.
        return self.base.update_auxiliary(state, rngs)

    def inverse_mass_diagonal(self, aux):
        return self.base.inverse_mass_diagonal(aux)

    def evaluate(self, q, p=None):
        state = self.base.evaluate(q, p)
        # The force on the fixed block is irrelevant; zero it so that it cannot move them.
        state.grad = state.grad * self._mask()
        return state

    def __repr__(self):
        return f"ConditionalHamiltonian({self.base!r}, fixed={self.fixed.tolist()})"
