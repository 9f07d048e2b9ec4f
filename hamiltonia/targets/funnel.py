"""Neal's funnel (Neal 2003; Mongwe 2022, thesis, §3.2.3)."""

from __future__ import annotations

import math

import numpy as np

from hamiltonia._validation import MAX_TARGET_DIM, check_int, check_positive
from hamiltonia.backend import BACKENDS, namespace_of
from hamiltonia.targets.base import ExactMoments, Target, check_setting, with_setting

__all__ = ["Funnel", "funnel", "funnel_d25"]


def _funnel_kernel(q, grad, fdata, idata):
    scale2 = fdata[0]
    n_x = q.shape[0] - 1
    v = q[0]
    e = math.exp(-v)
    ss = 0.0
    for i in range(1, n_x + 1):
        ss += q[i] * q[i]
        grad[i] = -q[i] * e
    grad[0] = -v / scale2 + 0.5 * ss * e - 0.5 * n_x
    return -(v * v) / (2.0 * scale2) - 0.5 * ss * e - 0.5 * n_x * v


class Funnel(Target):
    """Neal's funnel: :math:`v \\sim \\mathcal N(0, \\sigma^2)`, :math:`x_i \\mid v \\sim
    \\mathcal N(0, e^{v})` for :math:`i = 1..n_x` (:math:`e^v` is the variance).

    .. math::

        \\log\\pi(v, x) = -\\frac{v^2}{2\\sigma^2}
                         - \\sum_{i=1}^{n_x}\\Bigl(\\frac{x_i^2 e^{-v}}{2} + \\frac v2\\Bigr)

    Parameters are ordered :math:`(v, x_1, \\dots, x_{n_x})`, so ``dim = n_x + 1``: the
    thesis's "D = 25" is read as 25 x's plus v, 26 parameters in all (§3.2.3 is ambiguous;
    the peer benchmarks use the same reading). Exact moments: :math:`v` has mean 0 and variance
    :math:`\\sigma^2`; each :math:`x_i` has mean 0 and variance
    :math:`\\mathbb E[e^v] = e^{\\sigma^2/2}`.
    """

    description = "Neal's funnel: v ~ N(0, 3^2), x_i | v ~ N(0, e^v); dim = n_x + 1"

    def __init__(self, n_x: int = 25, scale: float = 3.0):
        # dim = n_x + 1 parameters, at most MAX_TARGET_DIM
        self.n_x = check_int(n_x, "n_x", minimum=1, maximum=MAX_TARGET_DIM - 1)
        self.scale = check_positive(scale, "scale")
        super().__init__(self.n_x + 1, ["v"] + [f"x{i + 1}" for i in range(self.n_x)])

    backends = BACKENDS
    research_n_steps = 50

    def log_prob(self, x):
        xp = namespace_of(x)
        x = xp.asarray(x, dtype=xp.float64)
        v, xs = x[..., 0], x[..., 1:]
        return (
            -(v**2) / (2 * self.scale**2)
            - 0.5 * xp.sum(xs**2, axis=-1) * xp.exp(-v)
            - 0.5 * self.n_x * v
        )

    def log_prob_and_grad(self, x):
        xp = namespace_of(x)
        x = xp.asarray(x, dtype=xp.float64)
        v, xs = x[..., 0], x[..., 1:]
        e = xp.exp(-v)
        ss = xp.sum(xs**2, axis=-1)
        lp = -(v**2) / (2 * self.scale**2) - 0.5 * ss * e - 0.5 * self.n_x * v
        gv = -v / self.scale**2 + 0.5 * ss * e - 0.5 * self.n_x
        gx = -xs * e[..., None]
        return lp, xp.concat([gv[..., None], gx], axis=-1)

    def hvp(self, x, v_):
        xp = namespace_of(x)
        x = xp.asarray(x, dtype=xp.float64)
        u = xp.asarray(v_, dtype=xp.float64)
        v, xs = x[..., 0], x[..., 1:]
        e = xp.exp(-v)
        ss = xp.sum(xs**2, axis=-1)
        hvv = -1 / self.scale**2 - 0.5 * ss * e
        # d^2/dv dx_i = x_i e^{-v};  d^2/dx_i^2 = -e^{-v}
        out_v = hvv * u[..., 0] + e * xp.sum(xs * u[..., 1:], axis=-1)
        out_x = xs * (e * u[..., 0])[..., None] - e[..., None] * u[..., 1:]
        return xp.concat([out_v[..., None], out_x], axis=-1)

    def numba_kernel(self):
        from hamiltonia.compiled.targets import NumbaTarget

        return NumbaTarget.build(_funnel_kernel, [self.scale**2])

    @property
    def exact_moments(self):
        var_x = np.exp(self.scale**2 / 2)
        var = np.concatenate([[self.scale**2], np.full(self.n_x, var_x)])
        return ExactMoments(np.zeros(self.dim), var)


_FUNNEL_PAPER = """

    ``setting="paper"`` is the default, which has the thesis's density (Mongwe 2022, §3.2.3,
    eq. 3.3): :math:`v \\sim \\mathcal N(0, 3^2)`, :math:`x_i \\mid v \\sim \\mathcal N(0, e^v)`
    with :math:`e^v` the variance, and "D = 25" read as 25 x's plus v (the thesis is
    ambiguous; GAP)."""


def funnel(n_x: int = 25, scale: float = 3.0, setting: str = "default") -> Funnel:
    """Neal's funnel with n_x latent x's plus v (dim = n_x + 1), v ~ N(0, scale^2)."""
    check_setting(setting)
    return with_setting(Funnel(n_x=n_x, scale=scale), setting)


def funnel_d25(setting: str = "default") -> Funnel:
    """Neal's funnel, 25 x's plus v (26 parameters), v ~ N(0, 9)."""
    check_setting(setting)
    return with_setting(Funnel(25), setting)


funnel.__doc__ = (funnel.__doc__ or "") + _FUNNEL_PAPER
funnel_d25.__doc__ = (funnel_d25.__doc__ or "") + _FUNNEL_PAPER
