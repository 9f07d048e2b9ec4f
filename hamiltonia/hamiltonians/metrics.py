"""Metrics (mass matrices) of the Gaussian kinetic energy.

The kinetic energy is

.. math::

    K(p) = \\tfrac12\\, p^\\top M^{-1} p,

and momenta are drawn from :math:`\\mathcal N(0, M)`. As in Stan, a metric is given by its
*inverse* mass matrix :math:`M^{-1}`, which warm-up sets to an estimate of the posterior
covariance. The normalising constant :math:`\\tfrac12\\log((2\\pi)^D |M|)` is left out: it is
constant for a fixed metric (random-mass samplers add it themselves).

Momenta for a batch of chains are drawn row by row from each chain's own generator, one
``standard_normal(dim)`` call per chain, so a chain's stream does not depend on how many
chains run beside it.

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.linalg

from hamiltonia import backend
from hamiltonia.compiled import python_calls
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import own

__all__ = ["DenseMetric", "DiagonalMetric", "IdentityMetric", "Metric", "make_metric"]


# -- kernels (see hamiltonia.compiled.roles): one chain; the metric's arrays are its
# parameters ``inverse_mass`` and ``sqrt_mass`` or ``cholesky`` (by rows)


def gaussian_kinetic_kernel(ctx, q, p, v):
    """:math:`\\tfrac12 p^\\top v` with :math:`v = M^{-1} p`."""
    s = 0.0
    for i in range(p.shape[0]):
        s += p[i] * v[i]
    return 0.5 * s


def identity_velocity_kernel(ctx, q, p, out):
    # M = I: the velocity is p itself, and handing p back saves a copy every drift.
    return p


def identity_position_flow_kernel(ctx, q, p, v, h):
    """:math:`q \\leftarrow q + h p` in one pass, with the finite check."""
    check = 0.0
    for i in range(q.shape[0]):
        q[i] += h * p[i]
        check += q[i] - q[i]
    return check


def diagonal_position_flow_kernel(ctx, q, p, v, h):
    """:math:`q \\leftarrow q + h\\, m \\odot p` in one pass, with the finite check."""
    inverse_mass = own.inverse_mass
    check = 0.0
    for i in range(q.shape[0]):
        q[i] += h * (inverse_mass[i] * p[i])
        check += q[i] - q[i]
    return check


def identity_draw_kernel(ctx, q, p):
    for i in range(p.shape[0]):
        p[i] = ctx.rng.standard_normal()


def diagonal_velocity_kernel(ctx, q, p, out):
    inverse_mass = own.inverse_mass
    for i in range(p.shape[0]):
        out[i] = inverse_mass[i] * p[i]
    return out


def diagonal_draw_kernel(ctx, q, p):
    d = p.shape[0]
    sqrt_mass = own.sqrt_mass
    for i in range(d):
        p[i] = ctx.rng.standard_normal()
    for i in range(d):
        p[i] = p[i] * sqrt_mass[i]


def dense_velocity_kernel(ctx, q, p, out):
    d = p.shape[0]
    inverse_mass = own.inverse_mass
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += inverse_mass[i * d + j] * p[j]
        out[i] = s
    return out


def dense_draw_kernel(ctx, q, p):
    d = p.shape[0]
    chol = own.cholesky
    for i in range(d):
        p[i] = ctx.rng.standard_normal()
    # Solve L^T p = z by back substitution (M^{-1} = L L^T, so cov(p) = M).
    for i in range(d - 1, -1, -1):
        s = p[i]
        for j in range(i + 1, d):
            s -= chol[j * d + i] * p[j]
        p[i] = s / chol[i * d + i]


class Metric:
    """Abstract metric: kinetic energy, velocity and momentum draws for a fixed ``M``.

    ``velocity`` and ``kinetic`` work on arrays of the current backend; ``from_standard``
    maps NumPy draws on the host, and ``sample`` moves the result to the backend.
    """

    #: The shape of :math:`M^{-1}`: ``"identity"``, ``"diagonal"`` or ``"dense"`` (what a
    #: structure that depends on the metric, the magnetic one, dispatches on).
    form: str = ""

    def kinetic(self, p):
        """:math:`\\tfrac12 p^\\top M^{-1} p` for ``p`` of shape ``(..., dim)``."""
        return 0.5 * backend.xp().sum(p * self.velocity(p), axis=-1)

    def velocity(self, p):
        """:math:`\\partial K/\\partial p = M^{-1} p`; here, for a metric written only as a
        kernel, its ``velocity`` kernel, chain by chain
        (:mod:`hamiltonia.compiled.python_calls`)."""
        form = python_calls.kernel_form(self, "metric", "velocity", np.shape(p)[-1])
        return form.velocity(p, None)

    def from_standard(self, z: np.ndarray) -> np.ndarray:
        """Map standard normal ``z`` (NumPy) to momenta ``p ~ N(0, M)`` (NumPy)."""
        raise python_calls.NoPythonForm(
            f"metric {type(self).__name__} has no Python from_standard: a metric written only "
            "as a kernel draws its momenta with its draw_momentum kernel, which sample() "
            f"calls; write {type(self).__name__}.from_standard to map standard normals yourself"
        )

    def sample(self, rngs: Sequence[np.random.Generator], dim: int):
        """One momentum per generator, shape ``(len(rngs), dim)``, on the backend; for a
        metric with no Python ``from_standard``, its ``draw_momentum`` kernel's, chain by
        chain (the draws of the compiled chain)."""
        if type(self).from_standard is Metric.from_standard:
            form = python_calls.kernel_form(self, "metric", "from_standard", dim)
            return form.sample(rngs, None, dim)
        z = np.stack([rng.standard_normal(dim) for rng in rngs])
        return backend.asarray(self.from_standard(z))

    #: Methods whose maths the compiled counterpart repeats: a subclass overriding one of them
    #: without its own ``compiled`` runs on the NumPy path.
    numeric_methods = ("kinetic", "velocity", "from_standard", "sample")

    def compiled(self, dim: int) -> PartKernels | None:
        """The compiled counterpart (kernels ``velocity``, ``kinetic``, ``draw_momentum``
        and the metric's arrays), or ``None``."""
        return None

    def _on_backend(self, name: str, array: np.ndarray):
        """``array`` as an array of the current backend, converted once per backend."""
        if backend.get_backend() == "numpy":
            return array
        cache = self.__dict__.setdefault("_device_arrays", {})
        key = (name, backend.get_backend())
        if key not in cache:
            cache[key] = backend.asarray(array)
        return cache[key]


class IdentityMetric(Metric):
    """:math:`M = I`."""

    form = "identity"

    def velocity(self, p):
        return p

    def kinetic(self, p):
        return 0.5 * backend.xp().sum(p * p, axis=-1)

    def from_standard(self, z):
        return z

    def compiled(self, dim):
        return PartKernels(
            {
                "velocity": identity_velocity_kernel,
                "position_flow": identity_position_flow_kernel,
                "kinetic": gaussian_kinetic_kernel,
                "draw_momentum": identity_draw_kernel,
            }
        )

    def __repr__(self):
        return "IdentityMetric()"


class DiagonalMetric(Metric):
    """:math:`M^{-1} = \\operatorname{diag}(m)` with ``inverse_mass`` :math:`m > 0`."""

    form = "diagonal"

    def __init__(self, inverse_mass):
        m = np.asarray(inverse_mass, dtype=float)
        if m.ndim != 1 or not np.all(np.isfinite(m)) or np.any(m <= 0):
            raise ValueError(
                "inverse_mass of a diagonal metric must be a 1-D array of finite values > 0"
            )
        self.inverse_mass = m
        self._sqrt_mass = 1.0 / np.sqrt(m)

    def velocity(self, p):
        return self._on_backend("inverse_mass", self.inverse_mass) * p

    def from_standard(self, z):
        return z * self._sqrt_mass

    def compiled(self, dim):
        return PartKernels(
            {
                "velocity": diagonal_velocity_kernel,
                "position_flow": diagonal_position_flow_kernel,
                "kinetic": gaussian_kinetic_kernel,
                "draw_momentum": diagonal_draw_kernel,
            },
            params={"inverse_mass": self.inverse_mass, "sqrt_mass": self._sqrt_mass},
        )

    def __repr__(self):
        return f"DiagonalMetric(dim={self.inverse_mass.size})"


class DenseMetric(Metric):
    """A dense symmetric positive definite :math:`M^{-1}`.

    With the Cholesky factor :math:`M^{-1} = L L^\\top`, momenta are
    :math:`p = L^{-\\top} z`, whose covariance is :math:`(L L^\\top)^{-1} = M`.
    """

    form = "dense"

    def __init__(self, inverse_mass):
        m = np.asarray(inverse_mass, dtype=float)
        if m.ndim != 2 or m.shape[0] != m.shape[1] or not np.all(np.isfinite(m)):
            raise ValueError("inverse_mass of a dense metric must be a finite square matrix")
        if not np.allclose(m, m.T, rtol=1e-10, atol=1e-12):
            raise ValueError("inverse_mass of a dense metric must be symmetric")
        try:
            self._chol = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            raise ValueError("inverse_mass of a dense metric must be positive definite") from None
        self._inv_chol = scipy.linalg.solve_triangular(self._chol, np.eye(len(m)), lower=True)
        self.inverse_mass = m

    def velocity(self, p):
        # Row by row (a stack of 1 x d products), so that a chain's velocity does not depend
        # on how many chains share the batch (BLAS sums a d x d product with m rows in an
        # order that depends on m): a chain gives the same draws alone on a worker
        # (hamiltonia.runner.executors) as among others. M^{-1} is symmetric: p M^{-1}.
        m = self._on_backend("inverse_mass", self.inverse_mass)
        return (p[..., None, :] @ m)[..., 0, :]

    def from_standard(self, z):
        # p = L^{-T} z, as rows: p^T = z^T L^{-1}, a chain at a time (see velocity).
        inv_chol = self._on_backend("_inv_chol", self._inv_chol)
        return (z[..., None, :] @ inv_chol)[..., 0, :]

    def compiled(self, dim):
        return PartKernels(
            {
                "velocity": dense_velocity_kernel,
                "kinetic": gaussian_kinetic_kernel,
                "draw_momentum": dense_draw_kernel,
            },
            params={"inverse_mass": self.inverse_mass, "cholesky": self._chol},
        )

    def __repr__(self):
        return f"DenseMetric(dim={self.inverse_mass.shape[0]})"


def make_metric(metric, dim: int) -> Metric:
    """Build a metric from ``None``/``"identity"``, a 1-D inverse-mass diagonal, a 2-D inverse
    mass matrix, or a :class:`Metric`."""
    if metric is None or (isinstance(metric, str) and metric == "identity"):
        return IdentityMetric()
    if isinstance(metric, Metric):
        return metric
    if isinstance(metric, str):
        raise ValueError(
            f"metric must be 'identity', an inverse-mass array or a Metric, got {metric!r}"
        )
    try:
        arr = np.asarray(metric, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(
            "metric must be 'identity', an inverse-mass array of numbers or a Metric, got "
            f"{metric!r:.80}"
        ) from None
    if arr.ndim == 1:
        if arr.size != dim:
            raise ValueError(f"metric diagonal must have length dim={dim}, got {arr.size}")
        return DiagonalMetric(arr)
    if arr.ndim == 2:
        if arr.shape != (dim, dim):
            raise ValueError(f"metric matrix must have shape ({dim}, {dim}), got {arr.shape}")
        return DenseMetric(arr)
    raise ValueError(f"metric array must be 1-D or 2-D, got {arr.ndim}-D")
