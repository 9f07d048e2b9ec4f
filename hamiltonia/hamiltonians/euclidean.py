"""The Euclidean (Gaussian kinetic energy) Hamiltonian of standard HMC."""

from __future__ import annotations

from dataclasses import replace

from hamiltonia.hamiltonians.base import Hamiltonian, position_flow_kernel, separable_energy_kernel
from hamiltonia.hamiltonians.metrics import Metric, make_metric
from hamiltonia.refresh.contracts import GAUSSIAN_MOMENTUM

__all__ = ["EuclideanHamiltonian"]


class EuclideanHamiltonian(Hamiltonian):
    """:math:`H(q, p) = -\\log\\pi(q) + \\tfrac12 p^\\top M^{-1} p` with a fixed metric.

    Parameters
    ----------
    target : Target
        The distribution of :math:`q`.
    metric : None, "identity", array or Metric
        The inverse mass matrix :math:`M^{-1}`: identity (default), a 1-D diagonal, a 2-D
        dense matrix, or a :class:`~hamiltonia.hamiltonians.metrics.Metric`.

    References
    ----------
    Duane, Kennedy, Pendleton and Roweth (1987), *Hybrid Monte Carlo*; Neal (2011), *MCMC using
    Hamiltonian dynamics*.
    """

    #: Under :math:`e^{-H}` the momentum given the position is :math:`\mathcal N(0, M)`.
    provides = frozenset({GAUSSIAN_MOMENTUM})

    def __init__(self, target, metric=None):
        super().__init__(target)
        self.metric: Metric = make_metric(metric, target.dim)

    def kinetic(self, p, aux=None):
        return self.metric.kinetic(p)

    def velocity(self, p, aux=None):
        return self.metric.velocity(p)

    def sample_momentum(self, rngs, aux=None):
        return self.metric.sample(rngs, self.dim)

    def compiled(self, dim):
        from hamiltonia.compiled.parts import compiled_counterpart

        kernels = compiled_counterpart(self.metric, dim, "metric")
        # A metric that gives no fused position flow gets the generic one.
        functions = {"position_flow": position_flow_kernel, **kernels.functions}
        return replace(kernels, functions={**functions, "energy": separable_energy_kernel})

    def __repr__(self):
        return f"EuclideanHamiltonian({self.target!r}, metric={self.metric!r})"
