"""The banana-shaped posterior (Haario et al. 1999; Mongwe 2022, thesis, §3.2.1)."""

from __future__ import annotations

import numpy as np
import scipy.integrate

from hamiltonia._validation import check_int, check_positive
from hamiltonia.backend import BACKENDS, namespace_of
from hamiltonia.targets.base import ExactMoments, Target, check_setting, with_setting

__all__ = ["MAX_OBSERVATIONS", "Banana", "banana"]

#: Largest ``n_obs``: the data are drawn and kept in memory, 80 MB and a quarter of a second
#: at 10**7 (by then the posterior is all but a point on the curve ``w1 + w2**2 = 1``).
MAX_OBSERVATIONS = 10_000_000


def _banana_kernel(q, grad, fdata, idata):
    sum_y, sum_y2, n, var_y, var_w = fdata[0], fdata[1], fdata[2], fdata[3], fdata[4]
    w1, w2 = q[0], q[1]
    s = w1 + w2 * w2
    r = (sum_y - n * s) / var_y
    grad[0] = r - w1 / var_w
    grad[1] = 2.0 * w2 * r - w2 / var_w
    sse = sum_y2 - 2.0 * s * sum_y + n * s * s
    return -sse / (2.0 * var_y) - (w1 * w1 + w2 * w2) / (2.0 * var_w)


class Banana(Target):
    """Posterior of :math:`w = (w_1, w_2)` given
    :math:`y_k \\sim \\mathcal N(w_1 + w_2^2, \\sigma_y^2)`.

    .. math::

        \\log\\pi(w) = -\\sum_{k=1}^{N}\\frac{(y_k - w_1 - w_2^2)^2}{2\\sigma_y^2}
                      - \\frac{w_1^2 + w_2^2}{2\\sigma_w^2} + \\text{const}.

    The data are :math:`y_k \\sim \\mathcal N(1, \\sigma_y^2)` (the thesis's
    "w₁ + w₂² = 1", read as the data-generating mean) drawn from
    ``numpy.random.default_rng(seed)``; defaults :math:`N = 100`, :math:`\\sigma_y^2 = 4`,
    :math:`\\sigma_w^2 = 1`, seed 0 (the same data as the peer benchmarks).

    Exact moments: given :math:`w_2`, :math:`w_1` is Gaussian (conjugate), so the moments
    reduce to one-dimensional integrals over :math:`w_2`, computed by adaptive quadrature.
    """

    description = (
        "Banana-shaped 2-D posterior (Haario et al. 1999), N=100, sigma_y^2=4, sigma_w^2=1"
    )

    def __init__(self, n_obs=100, var_y=4.0, var_w=1.0, seed=0):
        super().__init__(2, ["w1", "w2"])
        self.n_obs = check_int(n_obs, "n_obs", minimum=1, maximum=MAX_OBSERVATIONS)
        self.var_y = check_positive(var_y, "var_y")
        self.var_w = check_positive(var_w, "var_w")
        self.y = np.random.default_rng(seed).normal(1.0, np.sqrt(self.var_y), size=self.n_obs)
        self._sum_y = float(self.y.sum())
        self._sum_y2 = float(np.sum(self.y**2))

    backends = BACKENDS
    research_mass_volatility = 0.1

    def _residual_terms(self, x):
        w1, w2 = x[..., 0], x[..., 1]
        s = w1 + w2**2
        sse = self._sum_y2 - 2.0 * s * self._sum_y + self.n_obs * s**2
        r = (self._sum_y - self.n_obs * s) / self.var_y  # d log-likelihood / d s
        return w1, w2, sse, r

    def log_prob(self, x):
        xp = namespace_of(x)
        x = xp.asarray(x, dtype=xp.float64)
        w1, w2, sse, _ = self._residual_terms(x)
        return -sse / (2 * self.var_y) - (w1**2 + w2**2) / (2 * self.var_w)

    def log_prob_and_grad(self, x):
        xp = namespace_of(x)
        x = xp.asarray(x, dtype=xp.float64)
        w1, w2, sse, r = self._residual_terms(x)
        lp = -sse / (2 * self.var_y) - (w1**2 + w2**2) / (2 * self.var_w)
        grad = xp.stack([r - w1 / self.var_w, 2 * w2 * r - w2 / self.var_w], axis=-1)
        return lp, grad

    def hvp(self, x, v):
        xp = namespace_of(x)
        x = xp.asarray(x, dtype=xp.float64)
        v = xp.asarray(v, dtype=xp.float64)
        _, w2, _, r = self._residual_terms(x)
        a = self.n_obs / self.var_y
        h11 = -a - 1 / self.var_w
        h12 = -2 * w2 * a
        h22 = 2 * r - 4 * w2**2 * a - 1 / self.var_w
        return xp.stack(
            [h11 * v[..., 0] + h12 * v[..., 1], h12 * v[..., 0] + h22 * v[..., 1]], axis=-1
        )

    def numba_kernel(self):
        from hamiltonia.compiled.targets import NumbaTarget

        return NumbaTarget.build(
            _banana_kernel, [self._sum_y, self._sum_y2, self.n_obs, self.var_y, self.var_w]
        )

    def _log_marginal_w2(self, w2):
        a = w2**2
        prec = self.n_obs / self.var_y + 1 / self.var_w
        b = (self._sum_y - self.n_obs * a) / self.var_y
        sse = self._sum_y2 - 2 * a * self._sum_y + self.n_obs * a**2
        return (
            -(w2**2) / (2 * self.var_w) + b**2 / (2 * prec) - sse / (2 * self.var_y),
            b / prec,
            1 / prec,
        )

    @property
    def exact_moments(self):
        # log p(w2) peaks near the mode; shift by its maximum before exponentiating.
        grid = np.linspace(-10, 10, 20001)
        shift = np.max(self._log_marginal_w2(grid)[0])

        def integrate(f):
            return scipy.integrate.quad(
                lambda t: f(t) * np.exp(self._log_marginal_w2(t)[0] - shift),
                -np.inf,
                np.inf,
                epsabs=0,
                epsrel=1e-12,
                limit=500,
            )[0]

        z = integrate(lambda t: 1.0)
        m_w2 = integrate(lambda t: t) / z
        v_w2 = integrate(lambda t: (t - m_w2) ** 2) / z
        m_w1 = integrate(lambda t: self._log_marginal_w2(t)[1]) / z
        v_w1 = (
            integrate(
                lambda t: self._log_marginal_w2(t)[2] + (self._log_marginal_w2(t)[1] - m_w1) ** 2
            )
            / z
        )
        return ExactMoments(np.array([m_w1, m_w2]), np.array([v_w1, v_w2]))


def banana(
    n_obs: int = 100,
    var_y: float = 4.0,
    var_w: float = 1.0,
    seed: int = 0,
    setting: str = "default",
) -> Banana:
    """Banana-shaped 2-D posterior (Haario et al. 1999): N=100, sigma_y^2=4, sigma_w^2=1.

    ``setting="paper"`` is the default, which already has the thesis's constants (Mongwe 2022,
    §3.2.1, eqs. 3.1-3.2): :math:`N = 100` observations
    :math:`y_k \\sim \\mathcal N(1, \\sigma_y^2)` (the printed
    ":math:`w_1 + w_2^2 = 1`" read as the data-generating mean), :math:`\\sigma_y^2 = 4`,
    :math:`\\sigma_w^2 = 1`. The thesis gives no seed for the data (GAP): ``seed`` (default 0)
    in both settings."""
    check_setting(setting)
    return with_setting(Banana(n_obs=n_obs, var_y=var_y, var_w=var_w, seed=seed), setting)
