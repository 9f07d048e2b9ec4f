"""Gaussian targets (Mongwe 2022, thesis, §3.2.2; D = 100 also in Mongwe et al.'s PS2HMC paper)."""

from __future__ import annotations

import numpy as np

from hamiltonia._validation import check_int
from hamiltonia.backend import BACKENDS, DeviceData, namespace_of
from hamiltonia.targets.base import ExactMoments, Target, check_setting, with_setting

__all__ = [
    "MAX_DENSE_DIM",
    "CorrelatedGaussian",
    "DiagonalGaussian",
    "correlated_gaussian",
    "gaussian",
    "gaussian_d10",
    "gaussian_d50",
    "gaussian_d100",
]

#: Largest ``dim`` of :class:`CorrelatedGaussian`: it holds dense ``dim x dim`` matrices (the
#: covariance, its inverse and the index differences, 32 MB each at 2000) and inverts one, in
#: O(dim**3): a second or two at 2000, minutes at 10**4.
MAX_DENSE_DIM = 2_000


def _diagonal_gaussian_kernel(q, grad, fdata, idata):
    # fdata: the precisions 1 / sigma_i^2
    lp = 0.0
    for i in range(q.shape[0]):
        g = -q[i] * fdata[i]
        grad[i] = g
        lp += q[i] * g
    return 0.5 * lp


def _dense_gaussian_kernel(q, grad, fdata, idata):
    # fdata: the precision matrix, row-major (symmetric)
    d = q.shape[0]
    lp = 0.0
    for i in range(d):
        g = 0.0
        for j in range(d):
            g -= fdata[i * d + j] * q[j]
        grad[i] = g
        lp += q[i] * g
    return 0.5 * lp


class DiagonalGaussian(DeviceData, Target):
    """:math:`\\mathcal N(0, \\operatorname{diag}(\\sigma^2))` with log-normal scales.

    .. math::

        \\log\\pi(x) = -\\tfrac12\\sum_i x_i^2/\\sigma_i^2, \\qquad
        \\sigma_i = e^{z_i},\\ z \\sim \\mathcal N(0, I)

    with :math:`z` drawn from ``numpy.random.default_rng(seed).normal(size=dim)`` (seed 1 by
    default, as in the peer benchmarks), so the first scales agree across dimensions.
    """

    description = "Diagonal Gaussian N(0, diag(sigma^2)), log-normal scales sigma_i = exp(z_i)"

    def __init__(self, dim: int, seed: int = 1, scales=None):
        super().__init__(dim)  # checks dim before anything is built
        dim = self.dim
        if scales is None:
            scales = np.exp(np.random.default_rng(seed).normal(size=dim))
        scales = np.asarray(scales, dtype=float)
        if scales.shape != (dim,) or np.any(~np.isfinite(scales)) or np.any(scales <= 0):
            raise ValueError(f"scales must be {dim} finite positive numbers")
        self.scales = scales
        self._precision = 1.0 / scales**2

    backends = BACKENDS

    def log_prob(self, x):
        xp = namespace_of(x)
        x = xp.asarray(x, dtype=xp.float64)
        return -0.5 * xp.sum(x * x * self.on(xp, "_precision"), axis=-1)

    def log_prob_and_grad(self, x):
        xp = namespace_of(x)
        x = xp.asarray(x, dtype=xp.float64)
        g = -x * self.on(xp, "_precision")
        return 0.5 * xp.sum(x * g, axis=-1), g

    def hvp(self, x, v):
        xp = namespace_of(v)
        return -xp.asarray(v, dtype=xp.float64) * self.on(xp, "_precision")

    def numba_kernel(self):
        from hamiltonia.compiled.targets import NumbaTarget

        return NumbaTarget.build(_diagonal_gaussian_kernel, self._precision)

    @property
    def exact_moments(self):
        return ExactMoments(np.zeros(self.dim), self.scales**2)


class CorrelatedGaussian(DeviceData, Target):
    """:math:`\\mathcal N(0, \\Sigma)` with :math:`\\Sigma_{ij} = \\rho^{|i-j|}` (AR(1)
    correlation, unit variances), a test of samplers on strongly correlated targets.

    .. math::

        \\log\\pi(x) = -\\tfrac12 x^\\top \\Sigma^{-1} x
    """

    description = "Correlated Gaussian N(0, Sigma), Sigma_ij = rho^|i-j| (default dim 10, rho 0.9)"

    def __init__(self, dim: int = 10, rho: float = 0.9):
        dim = check_int(dim, "dim", minimum=1, maximum=MAX_DENSE_DIM)
        super().__init__(dim)
        if not -1 < rho < 1:
            raise ValueError(f"rho must lie in (-1, 1), got {rho!r}")
        idx = np.arange(dim)
        self.rho = float(rho)
        self.covariance = self.rho ** np.abs(idx[:, None] - idx[None, :])
        self.precision = np.linalg.inv(self.covariance)
        self.precision = 0.5 * (self.precision + self.precision.T)

    backends = BACKENDS

    def log_prob(self, x):
        xp = namespace_of(x)
        x = xp.asarray(x, dtype=xp.float64)
        return -0.5 * xp.sum((x @ self.on(xp, "precision")) * x, axis=-1)

    def log_prob_and_grad(self, x):
        xp = namespace_of(x)
        x = xp.asarray(x, dtype=xp.float64)
        g = -(x @ self.on(xp, "precision"))
        return 0.5 * xp.sum(g * x, axis=-1), g

    def hvp(self, x, v):
        xp = namespace_of(v)
        return -(xp.asarray(v, dtype=xp.float64) @ self.on(xp, "precision"))

    def numba_kernel(self):
        from hamiltonia.compiled.targets import NumbaTarget

        return NumbaTarget.build(_dense_gaussian_kernel, self.precision)

    @property
    def exact_moments(self):
        return ExactMoments(np.zeros(self.dim), np.diag(self.covariance).copy())


_GAUSSIAN_PAPER = """

    ``setting="paper"`` is the default: the thesis (Mongwe 2022, §3.2.2) draws the standard
    deviations log-normally, :math:`\\sigma_i = e^{z_i}`, :math:`z_i \\sim \\mathcal N(0, 1)`,
    without giving the seed (GAP), so both settings use ``seed`` (default 1)."""


def gaussian(dim: int = 10, seed: int = 1, setting: str = "default") -> DiagonalGaussian:
    """Diagonal Gaussian of any dimension with log-normal scales (parameters dim, seed)."""
    check_setting(setting)
    return with_setting(DiagonalGaussian(dim, seed=seed), setting)


def gaussian_d10(setting: str = "default") -> DiagonalGaussian:
    """Diagonal Gaussian, D=10, log-normal scales (thesis §3.2.2)."""
    check_setting(setting)
    return with_setting(DiagonalGaussian(10), setting)


def gaussian_d50(setting: str = "default") -> DiagonalGaussian:
    """Diagonal Gaussian, D=50, log-normal scales (thesis §3.2.2)."""
    check_setting(setting)
    return with_setting(DiagonalGaussian(50), setting)


def gaussian_d100(setting: str = "default") -> DiagonalGaussian:
    """Diagonal Gaussian, D=100, log-normal scales."""
    check_setting(setting)
    return with_setting(DiagonalGaussian(100), setting)


for _factory in (gaussian, gaussian_d10, gaussian_d50, gaussian_d100):
    _factory.__doc__ = (_factory.__doc__ or "") + _GAUSSIAN_PAPER
del _factory


def correlated_gaussian(
    dim: int = 10, rho: float = 0.9, setting: str = "default"
) -> CorrelatedGaussian:
    """Correlated Gaussian with AR(1) correlation rho^|i-j| (parameters dim, rho).

    Not a target of the research: ``setting="paper"`` is accepted and gives the default."""
    check_setting(setting)
    return with_setting(CorrelatedGaussian(dim, rho), setting)
