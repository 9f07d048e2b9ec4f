"""Targets whose answers are known: a Gaussian with exact moments and an exact sampler.

:class:`GaussianTarget` is :math:`\\mathcal N(\\mu, \\Sigma)` with a mean away from zero
and unequal, correlated scales, so that a sampler that is biased in location, in scale or
in orientation shows it. It has everything the checks of :mod:`hamiltonia.testing` use:
``exact_moments``, an exact sampler ``sample_exact(rng, n)``, a Hessian-vector product, and
a numba kernel, so that it also runs on the compiled path.
"""

from __future__ import annotations

import numpy as np

from hamiltonia.targets.base import ExactMoments, Target

__all__ = ["GaussianTarget", "correlated_gaussian"]


def _shifted_gaussian_kernel(q, grad, fdata, idata):
    # fdata: the mean (dim values), then the precision matrix, row-major (symmetric)
    d = q.shape[0]
    lp = 0.0
    for i in range(d):
        g = 0.0
        for j in range(d):
            g -= fdata[d + i * d + j] * (q[j] - fdata[j])
        grad[i] = g
        lp += (q[i] - fdata[i]) * g
    return 0.5 * lp


class GaussianTarget(Target):
    """:math:`\\mathcal N(\\mu, \\Sigma)`, with its exact sampler.

    .. math::

        \\log\\pi(x) = -\\tfrac12 (x - \\mu)^\\top \\Sigma^{-1} (x - \\mu), \\qquad
        \\nabla\\log\\pi(x) = -\\Sigma^{-1}(x - \\mu),

    and exact draws :math:`x = \\mu + L z`, :math:`z \\sim \\mathcal N(0, I)`,
    :math:`LL^\\top = \\Sigma` (Cholesky).

    Parameters
    ----------
    mean : array of shape (dim,)
        :math:`\\mu`.
    covariance : array of shape (dim, dim)
        :math:`\\Sigma`, symmetric positive definite.
    """

    description = "Gaussian N(mu, Sigma) with an exact sampler (hamiltonia.testing)"

    def __init__(self, mean, covariance):
        mean = np.asarray(mean, dtype=float)
        covariance = np.asarray(covariance, dtype=float)
        if mean.ndim != 1 or covariance.shape != (mean.size, mean.size):
            raise ValueError(
                f"mean must have shape (dim,) and covariance (dim, dim), got {mean.shape} "
                f"and {covariance.shape}"
            )
        if not np.allclose(covariance, covariance.T):
            raise ValueError("covariance must be symmetric")
        super().__init__(mean.size)
        self.mean = mean
        self.covariance = covariance
        self.cholesky = np.linalg.cholesky(covariance)  # raises if not positive definite
        precision = np.linalg.inv(covariance)
        self.precision = 0.5 * (precision + precision.T)

    def log_prob(self, x):
        d = np.asarray(x, dtype=float) - self.mean
        return -0.5 * np.sum((d @ self.precision) * d, axis=-1)

    def log_prob_and_grad(self, x):
        d = np.asarray(x, dtype=float) - self.mean
        g = -(d @ self.precision)
        return 0.5 * np.sum(g * d, axis=-1), g

    def hvp(self, x, v):
        return -(np.asarray(v, dtype=float) @ self.precision)

    def numba_kernel(self):
        from hamiltonia.compiled.targets import NumbaTarget

        return NumbaTarget.build(
            _shifted_gaussian_kernel, np.concatenate([self.mean, self.precision.ravel()])
        )

    @property
    def exact_moments(self) -> ExactMoments:
        return ExactMoments(self.mean.copy(), np.diag(self.covariance).copy())

    def sample_exact(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` independent exact draws, shape ``(n, dim)``."""
        return self.mean + rng.normal(size=(n, self.dim)) @ self.cholesky.T

    def __repr__(self):
        return f"GaussianTarget(dim={self.dim})"


def correlated_gaussian(dim: int = 3, rho: float = 0.5) -> GaussianTarget:
    """A small correlated Gaussian: means :math:`\\mu_i` evenly spaced on
    :math:`[-1, 1.5]`, scales :math:`s_i` evenly spaced on :math:`[0.5, 2]` and AR(1)
    correlations :math:`\\rho^{|i-j|}`, so :math:`\\Sigma_{ij} = s_i s_j \\rho^{|i-j|}`."""
    idx = np.arange(dim)
    scales = np.linspace(0.5, 2.0, dim) if dim > 1 else np.ones(1)
    covariance = np.outer(scales, scales) * rho ** np.abs(idx[:, None] - idx[None, :])
    return GaussianTarget(np.linspace(-1.0, 1.5, dim) if dim > 1 else np.zeros(1), covariance)
