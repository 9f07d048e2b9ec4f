"""The ``example-ring`` target: a 2-D ring ("donut") density."""

from __future__ import annotations

import numpy as np
import scipy.integrate

from hamiltonia import Target
from hamiltonia.targets import ExactMoments

__all__ = ["Ring", "ring", "ring_kernel"]

#: Below this radius the Hessian-vector product clamps the radius (the Hessian is unbounded
#: at the origin).
_MIN_RADIUS = 1e-12


def ring_kernel(q, grad, fdata, idata):
    """The ring's log density and gradient for one point, compiled by numba for hamiltonia's
    compiled path: ``fdata = (radius, width)``. The same maths as :meth:`Ring.log_prob_and_grad`
    (at the origin the gradient is 0)."""
    radius, width = fdata[0], fdata[1]
    norm = 0.0
    for i in range(q.shape[0]):
        norm += q[i] * q[i]
    norm = norm**0.5
    factor = 0.0
    if norm > 0.0:
        factor = -(norm - radius) / (width * width * norm)
    for i in range(q.shape[0]):
        grad[i] = factor * q[i]
    return -((norm - radius) ** 2) / (2.0 * width * width)


class Ring(Target):
    """A ring of radius :math:`r` and width :math:`s` in the plane.

    .. math::

        \\log\\pi(x) = -\\frac{(\\lVert x\\rVert - r)^2}{2 s^2}.

    The gradient is :math:`-(\\lVert x\\rVert - r)/s^2 \\cdot x/\\lVert x\\rVert`. At the origin,
    where :math:`\\log\\pi` has a cone-shaped minimum and no gradient, it is defined as ``0``
    (the symmetric subgradient), so it is never ``nan``.
    """

    description = "2-D ring (donut) density: log pi = -(|x| - r)^2 / (2 s^2), r=2, s=0.3"

    def __init__(self, radius: float = 2.0, width: float = 0.3):
        super().__init__(2, ["x1", "x2"])
        for name, value in (("radius", radius), ("width", width)):
            if isinstance(value, bool) or not isinstance(value, int | float | np.number):
                raise ValueError(f"{name} must be a number, got {value!r}")
        if not np.isfinite(radius) or radius < 0:
            raise ValueError(f"radius must be a finite number >= 0, got {radius!r}")
        if not np.isfinite(width) or width <= 0:
            raise ValueError(f"width must be a finite number > 0, got {width!r}")
        self.radius = float(radius)
        self.width = float(width)
        self.description = (
            f"2-D ring (donut) density: log pi = -(|x| - r)^2 / (2 s^2), "
            f"r={self.radius:g}, s={self.width:g}"
        )

    @staticmethod
    def _check(x, name="x"):
        x = np.asarray(x, dtype=float)
        if x.ndim == 0 or x.shape[-1] != 2:
            raise ValueError(f"{name} must have shape (..., 2), got shape {x.shape}")
        return x

    def log_prob(self, x):
        x = self._check(x)
        norm = np.linalg.norm(x, axis=-1)
        return -((norm - self.radius) ** 2) / (2 * self.width**2)

    def log_prob_and_grad(self, x):
        x = self._check(x)
        norm = np.linalg.norm(x, axis=-1)
        lp = -((norm - self.radius) ** 2) / (2 * self.width**2)
        positive = norm > 0
        safe = np.where(positive, norm, 1.0)
        factor = np.where(positive, -(norm - self.radius) / (self.width**2 * safe), 0.0)
        return lp, factor[..., None] * x

    def hvp(self, x, v):
        """Hessian of the log density times ``v`` (radius clamped to 1e-12 at the origin)."""
        x = self._check(x)
        v = self._check(v, "v")
        norm = np.maximum(np.linalg.norm(x, axis=-1), _MIN_RADIUS)
        u = x / norm[..., None]
        uv = np.sum(u * v, axis=-1)[..., None]
        # H = -(u u^T + (1 - r/|x|) (I - u u^T)) / s^2
        tangential = (1.0 - self.radius / norm)[..., None] * (v - u * uv)
        return -(u * uv + tangential) / self.width**2

    def numba_kernel(self):
        """The compiled log density (:func:`ring_kernel`): the sampler's whole chain runs
        compiled on this target."""
        from hamiltonia.compiled import NumbaTarget

        return NumbaTarget.build(ring_kernel, [self.radius, self.width])

    @property
    def exact_moments(self):
        # By symmetry the mean is 0 and var(x_i) = E|x|^2 / 2, where |x| has density
        # proportional to t exp(-(t - r)^2 / (2 s^2)) on t > 0.
        def moment(k):
            return scipy.integrate.quad(
                lambda t: t ** (k + 1) * np.exp(-((t - self.radius) ** 2) / (2 * self.width**2)),
                0.0,
                np.inf,
                epsabs=0,
                epsrel=1e-12,
                limit=200,
            )[0]

        var = moment(2) / moment(0) / 2
        return ExactMoments(np.zeros(2), np.full(2, var))

    def __repr__(self):
        return f"Ring(radius={self.radius:g}, width={self.width:g})"


def ring(radius: float = 2.0, width: float = 0.3) -> Ring:
    """2-D ring (donut) density: log pi = -(|x| - radius)^2 / (2 width^2), default r=2, s=0.3.

    Parameters
    ----------
    radius : float
        Radius :math:`r \\geq 0` of the ring (default 2).
    width : float
        Radial standard deviation :math:`s > 0` (default 0.3).
    """
    return Ring(radius=radius, width=width)
