"""Gradient check of a target: its gradient (and Hessian-vector product) against finite
differences of its log density.

A sampler trusts ``target.log_prob_and_grad``: a gradient that is wrong in one coordinate
still gives a chain that moves and an acceptance rate that looks plausible, but the wrong
distribution. :func:`check_gradient` compares it, coordinate by coordinate, with central
differences of ``target.log_prob`` at a few points:

.. math::

    d_i = \\frac{\\log\\pi(x + h_i e_i) - \\log\\pi(x - h_i e_i)}{2 h_i}, \\qquad
    h_i = \\epsilon^{1/3} \\max(1, |x_i|),

with :math:`\\epsilon` the machine epsilon. **The step rule**: the central difference errs
by :math:`\\tfrac{h^2}{6} |\\partial_i^3 \\log\\pi|` (truncation) plus about
:math:`\\epsilon |\\log\\pi(x)| / h` (rounding of the two values subtracted); the step
:math:`h \\propto \\epsilon^{1/3}` balances the two at :math:`O(\\epsilon^{2/3})
\\approx 4 \\times 10^{-11}` in relative terms, scaled by :math:`\\max(1, |x_i|)` so that
:math:`x_i \\pm h_i` differ from :math:`x_i` in the same significant digits at every
magnitude. The gradient :math:`g_i` passes when

.. math::

    |g_i - d_i| \\le \\text{rtol} \\max(|g_i|, |d_i|) + \\tau_i, \\qquad
    \\tau_i = 10\\, \\epsilon \\max(1, |\\log\\pi(x)|) / h_i,

the first term the relative error allowed (``rtol`` :math:`= 10^{-5}`, far above the
truncation error on a smooth target, far below any real mistake: a wrong factor, a
missing term, a wrong sign) and the second the rounding noise of :math:`d_i` (ten times
its bound), which matters only where the gradient is near zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["GRADIENT_RTOL", "check_gradient", "finite_difference_gradient", "gradient_points"]

#: The relative tolerance of :func:`check_gradient` (see the module docstring).
GRADIENT_RTOL = 1e-5

_EPS = float(np.finfo(float).eps)


def gradient_points(
    target: Any, n_points: int = 4, seed: int = 0, scale: float = 1.0
) -> np.ndarray:
    """Points at which to check a target, shape ``(n_points, dim)``: exact draws when the
    target has an exact sampler (see :func:`hamiltonia.testing.invariance.exact_draws`), a
    seeded :math:`\\mathcal N(0, s^2 I)` (``scale`` :math:`s`) otherwise."""
    from hamiltonia.testing.invariance import exact_draws

    try:
        return exact_draws(target, n_points, seed=seed)
    except TypeError:
        return np.random.default_rng(seed).normal(size=(n_points, target.dim)) * scale


def _steps(x: np.ndarray) -> np.ndarray:
    """:math:`h_i = \\epsilon^{1/3}\\max(1, |x_i|)`, rounded so that :math:`x \\pm h` are
    exactly :math:`2h` apart."""
    h = _EPS ** (1.0 / 3.0) * np.maximum(1.0, np.abs(x))
    return ((x + h) - (x - h)) / 2.0


def finite_difference_gradient(target: Any, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Central differences of ``target.log_prob`` at the points ``x`` ``(n, dim)``, with the
    step rule of the module docstring; returns ``(d, h)``, both ``(n, dim)``. All
    :math:`2\\,n\\,D` shifted points go to ``log_prob`` in one batch."""
    x = np.asarray(x, dtype=float)
    n, dim = x.shape
    h = _steps(x)
    shift = np.einsum("ni,ij->nij", h, np.eye(dim))  # (n, dim, dim): row i shifts x_i
    points = np.stack([x[:, None, :] + shift, x[:, None, :] - shift])  # (2, n, dim, dim)
    values = np.asarray(target.log_prob(points.reshape(-1, dim)), dtype=float)
    values = values.reshape(2, n, dim)
    return (values[0] - values[1]) / (2.0 * h), h


def _name(target: Any, i: int) -> str:
    names = getattr(target, "names", None)
    return f"{names[i]!r} (coordinate {i})" if names is not None else f"coordinate {i}"


def check_gradient(
    target: Any,
    points: np.ndarray | None = None,
    *,
    n_points: int = 4,
    seed: int = 0,
    rtol: float = GRADIENT_RTOL,
    hvp: bool | None = None,
) -> float:
    """Assert that ``target.log_prob_and_grad`` is consistent with ``target.log_prob``.

    Checks, at each point (``points`` ``(n, dim)``, or :func:`gradient_points`):

    * the log density of ``log_prob_and_grad`` equals ``log_prob`` (to
      :math:`10^{-10} \\max(1, |\\log\\pi|)`);
    * the gradient against central differences of ``log_prob``, coordinate by coordinate,
      with the step rule and tolerance of the module docstring;
    * when the target has a Hessian-vector product (``target.has_hvp``, or ``hvp=True``),
      :math:`\\nabla^2\\log\\pi(x)\\,v` for a seeded normal :math:`v` against the central
      difference of the gradient along :math:`v`,

      .. math::

          \\frac{\\nabla\\log\\pi(x + h v) - \\nabla\\log\\pi(x - h v)}{2h}, \\qquad
          h = \\epsilon^{1/3} \\max(1, \\|x\\|_\\infty) / \\|v\\|_\\infty,

      component by component with the same tolerance form (:math:`|\\log\\pi|` replaced by
      :math:`\\|\\nabla\\log\\pi\\|_\\infty` in the rounding term).

    Returns
    -------
    float
        The largest ratio of error to tolerance found (below one when the check passes).

    Raises
    ------
    AssertionError
        Naming the point, the coordinate (by the target's parameter name), the gradient,
        the finite difference and the tolerance.
    """
    x = gradient_points(target, n_points, seed) if points is None else np.asarray(points, float)
    x = np.atleast_2d(x)
    kind = type(target).__name__
    lp, grad = target.log_prob_and_grad(x)
    lp, grad = np.asarray(lp, dtype=float), np.asarray(grad, dtype=float)
    assert grad.shape == x.shape, f"{kind}: gradient of shape {grad.shape} at points {x.shape}"
    lp_alone = np.asarray(target.log_prob(x), dtype=float)
    scale = np.maximum(1.0, np.abs(lp_alone))
    bad = np.abs(lp - lp_alone) > 1e-10 * scale
    assert not bad.any(), (
        f"{kind}: log_prob_and_grad and log_prob disagree at point {int(np.argmax(bad))}: "
        f"{lp[bad][0]!r} against {lp_alone[bad][0]!r}"
    )
    d, h = finite_difference_gradient(target, x)
    tol = rtol * np.maximum(np.abs(grad), np.abs(d)) + 10 * _EPS * scale[:, None] / h
    worst = _assert_within(kind, "gradient", grad, d, tol, target)
    if hvp if hvp is not None else getattr(target, "has_hvp", False):
        worst = max(worst, _check_hvp(target, x, grad, seed, rtol, kind))
    return worst


def _assert_within(kind, what, value, reference, tol, target) -> float:
    ratio = np.abs(value - reference) / tol
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    if np.all(ratio <= 1.0):
        return float(ratio.max(initial=0.0))
    n, i = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    raise AssertionError(
        f"{kind}: the {what} of {_name(target, int(i))} at point {int(n)} is "
        f"{float(value[n, i])!r}, the finite difference {float(reference[n, i])!r} (error "
        f"{abs(value[n, i] - reference[n, i]):.3g}, tolerance {tol[n, i]:.3g}); "
        f"{int(np.sum(ratio > 1.0))} of {ratio.size} components fail"
    )


def _check_hvp(target, x, grad, seed, rtol, kind) -> float:
    v = np.random.default_rng(seed + 1).normal(size=x.shape)
    h = _EPS ** (1.0 / 3.0) * np.maximum(1.0, np.abs(x).max(axis=-1)) / np.abs(v).max(axis=-1)
    h = h[:, None]
    _, g_plus = target.log_prob_and_grad(x + h * v)
    _, g_minus = target.log_prob_and_grad(x - h * v)
    d = (np.asarray(g_plus, float) - np.asarray(g_minus, float)) / (2.0 * h)
    hv = np.asarray(target.hvp(x, v), dtype=float)
    assert hv.shape == x.shape, f"{kind}: hvp of shape {hv.shape} at points {x.shape}"
    g_scale = np.maximum(1.0, np.abs(grad).max(axis=-1, keepdims=True))
    tol = rtol * np.maximum(np.abs(hv), np.abs(d)) + 10 * _EPS * g_scale / h
    return _assert_within(kind, "Hessian-vector product", hv, d, tol, target)
