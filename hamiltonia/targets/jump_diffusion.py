"""Bayesian Merton jump-diffusion on daily log returns (Merton 1976;
Mongwe 2022, thesis, §3.2.4 and §3.2.7-3.2.8).

The model of the thesis's eqs. 3.4-3.5: the log price follows

.. math::

    d\\ln X_t = (a - \\tfrac12 b^2)\\,dt + b\\,dZ_t + d\\Bigl(\\sum_{i=1}^{K_t} J_i\\Bigr),
    \\qquad K_t \\sim \\operatorname{Poisson}(\\lambda t),\\ J_i \\sim \\mathcal N(a_J, b_J^2),

and a return :math:`r` over a time step :math:`\\tau` has the Poisson mixture density of
eq. 3.5, **truncated to its first 10 terms** :math:`n = 0, \\dots, 9` (as in the thesis):

.. math::

    p(r \\mid \\theta) = \\sum_{n=0}^{9} \\frac{e^{-\\lambda\\tau}(\\lambda\\tau)^n}{n!}\\,
        \\mathcal N\\bigl(r;\\ a\\tau + n a_J,\\ b^2\\tau + n b_J^2\\bigr).

Decisions (the thesis, §3.2.4, leaves them open)
------------------------------------------------
* **τ = 1: time is counted in trading days** (``tau``). The data are daily log returns
  :math:`r_i = \\log(S_i/S_{i-1})` of consecutive trading days (weekends and holidays are not
  steps), so :math:`a` is the drift per day, :math:`b` the daily diffusive volatility and
  :math:`\\lambda` the expected number of jumps per day. With :math:`\\lambda\\tau` of order
  0.01-1 the ten terms hold all but :math:`P(K \\ge 10) \\le 1.1\\cdot10^{-7}` of the mixture
  (at :math:`\\lambda\\tau = 1`). The mean is :math:`a\\tau` as printed in eq. 3.5 (the SDE of
  eq. 3.4 has the drift :math:`a - b^2/2`; eq. 3.5 is implemented as written, so :math:`a`
  is the drift of :math:`\\ln X`).
* **Positive parameters on the log scale.** The sampled vector is
  :math:`\\theta = (a, \\log b, \\log\\lambda, a_J, \\log b_J)`, named ``a``, ``log_b``,
  ``log_lambda``, ``a_jump``, ``log_b_jump``. :meth:`~hamiltonia.Target.constrain` is the
  identity (the draws are reported under these names); :meth:`MertonJumpDiffusion.natural`
  gives :math:`b, \\lambda, b_J`.
* **Priors** (weakly informative, in units of one trading day; each an option through
  ``priors``): :math:`a \\sim \\mathcal N(0, 0.01^2)` and :math:`a_J \\sim \\mathcal N(0,
  0.05^2)`, and log-normal priors :math:`b \\sim \\operatorname{LogNormal}(\\log 0.01,
  1.5^2)`, :math:`\\lambda \\sim \\operatorname{LogNormal}(\\log 0.05, 1.5^2)`,
  :math:`b_J \\sim \\operatorname{LogNormal}(\\log 0.03, 1^2)`. Why these scales: a daily drift
  of 1 % (about 250 % a year) is some 20 times the standard error of the sample mean of the
  S&P 500 returns (0.013/√905); a median diffusive volatility of 1 % a day (16 % a year)
  with a 95 % range of 0.05 %-19 % covers the three markets (Table 3.1: daily standard
  deviations 0.85 %-4.4 %); a median of one jump per 20 days with 95 % range 0.003-0.95
  jumps a day keeps :math:`\\lambda\\tau` where the truncation is exact; jumps of mean
  within ±10 % and typical size 3 % (95 % range 0.4 %-21 %) are the scale of the crashes and
  rallies in the data. The log-normal density of :math:`b` times the Jacobian
  :math:`|db/d\\log b| = b` of the change of variables is exactly the normal density of
  :math:`\\log b`, so in the sampled coordinates every prior is normal:
  :math:`\\theta_k \\sim \\mathcal N(\\mu_k, s_k^2)`. For another ``tau`` the default
  location and scale of :math:`a` become :math:`0/\\tau, 0.01/\\tau`, :math:`b`'s median
  :math:`0.01/\\sqrt\\tau` and :math:`\\lambda`'s median :math:`0.05/\\tau`, so the prior
  says the same about a day.
* The log density includes every normalising constant (likelihood and prior), so
  :meth:`MertonJumpDiffusion.log_likelihood` is the truncated log-likelihood itself and
  :meth:`MertonJumpDiffusion.predictive_log_density` is a proper log predictive density.

Sampling: the posterior scales differ by a factor of several hundred (on the S&P 500 returns
the posterior sd of :math:`a` is about 2e-4, that of :math:`\\log\\lambda` about 0.15), so HMC
with the identity mass matrix (the thesis's :math:`M = I`) needs step sizes of a few 1e-4, as
in the thesis's Table 3.8, and mixes slowly in the log-scale parameters. An adapted diagonal
mass matrix (``hm.sample(..., metric="diagonal")``) removes most of that.

Paper setting (``setting="paper"``, :class:`NaturalMertonJumpDiffusion`): the five parameters
of eq. 3.5 sampled as they are, time in years (:math:`\\tau = 1/252`), flat priors on
:math:`a, b, \\lambda` and :math:`\\mathcal N(0, 1)` on :math:`a_J, b_J` (the weakest choice
that keeps the posterior proper; the thesis states no priors, transform or :math:`\\tau`).
There the published step sizes (Table 3.8, :math:`M = I`, :math:`L = 15`) are of the right
size: HMC accepts 92-94 % of proposals on the S&P 500 (thesis, Table 5.1: 92.7 %), 99.8 % on
Bitcoin and 99.5 % on USD/ZAR (99.99 %), but a chain started where :math:`|b|` is tiny (0.04,
a 4 % yearly volatility) meets gradients so steep there that it never moves on the S&P 500
(measured with 4 chains from standard normal starts, 500 warm-up and 1000 draws, seed 1).

The registered targets ``jdp-sp500``, ``jdp-btc`` and ``jdp-usdzar`` fit the training returns
of :func:`hamiltonia.datasets.load` (the earliest 90 %, thesis §3.2.8) and keep the later 10 % for
:meth:`MertonJumpDiffusion.predictive_log_density`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from hamiltonia._validation import check_int, check_positions, check_positive
from hamiltonia.targets.base import Target, check_setting, with_setting
from hamiltonia.targets.bnn import normalised_weights

__all__ = [
    "MAX_TERMS",
    "NAMES",
    "PAPER_NAMES",
    "PAPER_TAU",
    "MertonJumpDiffusion",
    "NaturalMertonJumpDiffusion",
    "default_priors",
    "jdp_btc",
    "jdp_sp500",
    "jdp_usdzar",
]

#: Names of the sampled coordinates, in order.
NAMES = ("a", "log_b", "log_lambda", "a_jump", "log_b_jump")
#: Names of the sampled coordinates of the paper setting (:class:`NaturalMertonJumpDiffusion`).
PAPER_NAMES = ("a", "b", "lambda", "a_jump", "b_jump")
#: The paper setting's time step: one trading day in years.
PAPER_TAU = 1.0 / 252.0
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
# Cap on the elements of one (draws, returns, terms) block in predictive_log_density.
_PREDICT_BLOCK = 1 << 22
#: Largest ``n_terms``: every evaluation holds (chains, returns, n_terms) arrays, about 8 MB
#: each per chain at 1000 terms and 1000 returns. The Poisson weight of n jumps in one step
#: is negligible once n exceeds the rate lambda * tau by ten standard deviations, so the
#: default 10 terms serve rates well below one per step and 1000 serve several hundred.
MAX_TERMS = 1_000


def default_priors(tau: float = 1.0) -> dict[str, tuple[float, float]]:
    """The default normal priors ``name -> (mean, sd)`` on the sampled coordinates.

    Stated per trading day (see the module docs) and converted to the time unit ``tau``:
    :math:`a \\sim \\mathcal N(0, (0.01/\\tau)^2)`,
    :math:`\\log b \\sim \\mathcal N(\\log(0.01/\\sqrt\\tau), 1.5^2)`,
    :math:`\\log\\lambda \\sim \\mathcal N(\\log(0.05/\\tau), 1.5^2)`,
    :math:`a_J \\sim \\mathcal N(0, 0.05^2)`, :math:`\\log b_J \\sim \\mathcal N(\\log 0.03, 1)`.
    """
    tau = check_positive(tau, "tau")
    return {
        "a": (0.0, 0.01 / tau),
        "log_b": (math.log(0.01 / math.sqrt(tau)), 1.5),
        "log_lambda": (math.log(0.05 / tau), 1.5),
        "a_jump": (0.0, 0.05),
        "log_b_jump": (math.log(0.03), 1.0),
    }


# --------------------------------------------------------------------------- compiled kernel
def _jdp_kernel(q, grad, fdata, idata):
    # idata: n_returns, n_terms. fdata: tau, prior means (5), prior sds (5), returns (n).
    n_ret, n_terms = idata[0], idata[1]
    tau = fdata[0]
    a, log_b, log_lam, a_j, log_bj = q[0], q[1], q[2], q[3], q[4]
    b2t = math.exp(2.0 * log_b) * tau
    bj2 = math.exp(2.0 * log_bj)
    lam_t = math.exp(log_lam) * tau
    log_lam_t = log_lam + math.log(tau)
    mean = np.empty(n_terms)
    prec = np.empty(n_terms)
    const = np.empty(n_terms)
    ell = np.empty(n_terms)
    for n in range(n_terms):
        s = b2t + n * bj2
        mean[n] = a * tau + n * a_j
        prec[n] = 1.0 / s
        const[n] = -lam_t + n * log_lam_t - math.lgamma(n + 1.0) - 0.5 * math.log(s)
        const[n] -= 0.9189385332046727  # log(2 pi) / 2
    ll = 0.0
    g_a = 0.0
    g_aj = 0.0
    g_q = 0.0
    g_qn = 0.0
    g_n = 0.0
    for i in range(n_ret):
        r = fdata[11 + i]
        mx = -math.inf
        for n in range(n_terms):
            e = r - mean[n]
            ell[n] = const[n] - 0.5 * e * e * prec[n]
            if ell[n] > mx:
                mx = ell[n]
        sw = 0.0
        sa = 0.0
        saj = 0.0
        sq = 0.0
        sqn = 0.0
        sn = 0.0
        for n in range(n_terms):
            w = math.exp(ell[n] - mx)
            ep = (r - mean[n]) * prec[n]
            qn = 0.5 * (ep * (r - mean[n]) - 1.0) * prec[n]
            sw += w
            sa += w * ep
            saj += w * n * ep
            sq += w * qn
            sqn += w * n * qn
            sn += w * n
        ll += mx + math.log(sw)
        g_a += sa / sw
        g_aj += saj / sw
        g_q += sq / sw
        g_qn += sqn / sw
        g_n += sn / sw
    grad[0] = tau * g_a
    grad[1] = 2.0 * b2t * g_q
    grad[2] = g_n - n_ret * lam_t
    grad[3] = g_aj
    grad[4] = 2.0 * bj2 * g_qn
    lp = ll
    for k in range(5):
        sd = fdata[6 + k]
        z = (q[k] - fdata[1 + k]) / sd
        lp -= 0.5 * z * z + math.log(sd) + 0.9189385332046727
        grad[k] -= z / sd
    return lp


# --------------------------------------------------------------------------- target
class MertonJumpDiffusion(Target):
    """Posterior of the Merton jump-diffusion parameters given log returns.

    With :math:`\\theta = (a, \\beta, \\eta, a_J, \\gamma) = (a, \\log b, \\log\\lambda, a_J,
    \\log b_J)`, per mixture term :math:`n` and return :math:`r_i`:

    .. math::

        m_n = a\\tau + n a_J, \\quad S_n = b^2\\tau + n b_J^2, \\quad e_{in} = r_i - m_n,

        \\ell_{in} = -\\lambda\\tau + n\\log(\\lambda\\tau) - \\log n!
            - \\tfrac12\\log(2\\pi S_n) - \\frac{e_{in}^2}{2 S_n},

        \\log\\pi(\\theta) = \\sum_i \\operatorname{LSE}_{n=0}^{9}\\,\\ell_{in}
            + \\sum_k \\log\\mathcal N(\\theta_k;\\ \\mu_k, s_k^2),

    the log-sum-exp taken stably (shifted by its largest term). With the mixture weights
    :math:`w_{in} = \\operatorname{softmax}_n \\ell_{in}` the gradient is
    :math:`\\sum_i\\sum_n w_{in}\\, g_{in} - (\\theta - \\mu)/s^2`, where

    .. math::

        g_{in} = \\Bigl(\\frac{\\tau e_{in}}{S_n},\\ 2\\tau b^2 q_{in},\\ n - \\lambda\\tau,\\
            \\frac{n e_{in}}{S_n},\\ 2 n b_J^2 q_{in}\\Bigr), \\qquad
        q_{in} = \\frac{e_{in}^2 / S_n - 1}{2 S_n}.

    The Hessian-vector product is exact: the Hessian of a log-sum-exp is
    :math:`\\sum_n w_n (\\nabla^2\\ell_n + g_n g_n^\\top) - \\bar g\\bar g^\\top` with
    :math:`\\bar g = \\sum_n w_n g_n`, and :math:`\\nabla^2\\ell_n u` is written out by forward
    differentiation of :math:`g_n` along :math:`u` (:math:`\\dot e = -\\tau u_a - n u_{a_J}`,
    :math:`\\dot S = 2\\tau b^2 u_\\beta + 2 n b_J^2 u_\\gamma`; see :meth:`hvp`). All
    methods take :math:`\\theta` of shape ``(..., 5)``.

    Parameters
    ----------
    returns : array of shape (N,)
        Log returns of consecutive steps (e.g. ``Dataset.returns_train``).
    tau : float
        Length of one step in the model's time unit (default 1: one trading day).
    n_terms : int
        Terms :math:`n = 0, \\dots, K-1` of the Poisson mixture (default 10, the thesis's).
    priors : mapping, optional
        ``name -> (mean, sd)`` of the normal prior of a sampled coordinate (names as in
        :data:`NAMES`), replacing those of :func:`default_priors` for the names given.
    returns_test : array, optional
        Held-out returns for :meth:`predictive_log_density`.
    """

    description = "Bayesian Merton jump-diffusion on daily log returns (10-term mixture, tau=1)"

    #: Names of the sampled coordinates.
    parameter_names: tuple[str, ...] = NAMES

    def __init__(
        self,
        returns,
        *,
        tau: float = 1.0,
        n_terms: int = 10,
        priors: Mapping[str, tuple[float, float]] | None = None,
        returns_test=None,
    ):
        self.returns = self._check_returns(returns, "returns")
        self.tau = check_positive(tau, "tau")
        self.n_terms = check_int(n_terms, "n_terms", minimum=1, maximum=MAX_TERMS)
        merged = default_priors(self.tau)
        if priors is not None:
            if not isinstance(priors, Mapping):
                raise ValueError(
                    f"priors must be a mapping name -> (mean, sd), got {type(priors).__name__}"
                )
            for name, value in priors.items():
                if name not in NAMES:
                    raise ValueError(f"priors: unknown parameter {name!r}; expected one of {NAMES}")
                try:
                    mean, sd = value
                    mean = float(mean)
                except (TypeError, ValueError):
                    raise ValueError(
                        f"priors[{name!r}] must be a pair (mean, sd), got {value!r}"
                    ) from None
                if not math.isfinite(mean):
                    raise ValueError(f"priors[{name!r}]: the mean must be finite, got {mean!r}")
                merged[name] = (mean, check_positive(sd, f"priors[{name!r}] sd"))
        self.priors = merged
        self._prior_mean = np.array([merged[n][0] for n in NAMES])
        self._prior_sd = np.array([merged[n][1] for n in NAMES])
        self._prior_prec = 1.0 / self._prior_sd**2
        self._prior_const = -np.sum(np.log(self._prior_sd)) - 5 * _HALF_LOG_2PI
        self._n = np.arange(self.n_terms, dtype=float)
        self._log_fact = np.array([math.lgamma(k + 1.0) for k in range(self.n_terms)])
        self.returns_test = (
            None if returns_test is None else self._check_returns(returns_test, "returns_test")
        )
        super().__init__(5, self.parameter_names)

    @staticmethod
    def _check_returns(returns, name: str) -> np.ndarray:
        r = np.asarray(returns, dtype=float)
        if r.ndim != 1 or r.size < 1:
            raise ValueError(f"{name} must be a 1-D array with at least one return, got {r.shape}")
        if not np.all(np.isfinite(r)):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        return r

    @property
    def n_obs(self) -> int:
        """Number of training returns."""
        return self.returns.shape[0]

    # ------------------------------------------------------------------ pieces
    def _terms(self, x):
        """Per-term mean, variance and constant, each ``(..., K)``, plus the scalars."""
        a, log_b, log_lam, a_j, log_bj = (x[..., k] for k in range(5))
        n = self._n
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            b2t = np.exp(2.0 * log_b) * self.tau
            bj2 = np.exp(2.0 * log_bj)
            lam_t = np.exp(log_lam) * self.tau
            mean = (a * self.tau)[..., None] + n * a_j[..., None]
            var = b2t[..., None] + n * bj2[..., None]
            const = (
                -lam_t[..., None]
                + n * (log_lam + math.log(self.tau))[..., None]
                - self._log_fact
                - 0.5 * np.log(var)
                - _HALF_LOG_2PI
            )
        return mean, var, const, b2t, bj2, lam_t

    @staticmethod
    def _mixture(returns, mean, var, const):
        """:math:`\\ell_{in}`, the log-sum-exp over ``n`` and the softmax weights, with
        ``e`` and ``1/S``; shapes ``(..., N, K)`` and ``(..., N)``."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            e = returns[:, None] - mean[..., None, :]
            prec = 1.0 / var[..., None, :]
            ell = const[..., None, :] - 0.5 * e * e * prec
            mx = np.max(ell, axis=-1, keepdims=True)
            w = np.exp(ell - mx)
            sw = np.sum(w, axis=-1, keepdims=True)
            lse = (mx + np.log(sw))[..., 0]
            w = w / sw
        return e, prec, lse, w

    def _prior(self, x):
        z = x - self._prior_mean
        lp = self._prior_const - 0.5 * np.sum(z * z * self._prior_prec, axis=-1)
        return lp, -z * self._prior_prec

    def return_log_likelihood(self, x, returns=None) -> np.ndarray:
        """:math:`\\log p(r_i \\mid \\theta)` (truncated mixture) for every return, shape
        ``(..., N)``; ``returns`` defaults to the training returns."""
        x = check_positions(x, self.dim)
        r = self.returns if returns is None else self._check_returns(returns, "returns")
        mean, var, const, *_ = self._terms(x)
        return self._mixture(r, mean, var, const)[2]

    def log_likelihood(self, x) -> np.ndarray:
        """The truncated log-likelihood :math:`\\sum_i \\log p(r_i\\mid\\theta)`."""
        return np.sum(self.return_log_likelihood(x), axis=-1)

    def pointwise_log_likelihood(self, draws) -> dict:
        """The log likelihood of each training return at each of ``draws`` (reported
        values): ``{"returns": (..., N)}``, ArviZ's ``log_likelihood`` group
        (:meth:`return_log_likelihood`)."""
        return {"returns": self.return_log_likelihood(draws)}

    @property
    def observed_data(self) -> dict:
        """The training returns (ArviZ's ``observed_data`` group)."""
        return {"returns": self.returns}

    def log_prob(self, x):
        x = check_positions(x, self.dim)
        return self.log_likelihood(x) + self._prior(x)[0]

    def _per_term_grads(self, x):
        mean, var, const, b2t, bj2, lam_t = self._terms(x)
        e, prec, lse, w = self._mixture(self.returns, mean, var, const)
        n = self._n
        with np.errstate(over="ignore", invalid="ignore"):
            ep = e * prec
            q = 0.5 * (ep * e - 1.0) * prec
            g = (
                self.tau * ep,
                2.0 * b2t[..., None, None] * q,
                n - lam_t[..., None, None],
                n * ep,
                2.0 * n * bj2[..., None, None] * q,
            )
        return g, e, prec, q, lse, w, b2t, bj2, lam_t

    def _likelihood_and_grad(self, x):
        """The truncated log-likelihood and its gradient in the sampled coordinates
        :math:`(a, \\log b, \\log\\lambda, a_J, \\log b_J)`, no prior."""
        g, _, _, _, lse, w, _, _, _ = self._per_term_grads(x)
        with np.errstate(over="ignore", invalid="ignore"):
            grad = np.stack([np.sum(w * gk, axis=(-2, -1)) for gk in g], axis=-1)
        return np.sum(lse, axis=-1), grad

    def log_prob_and_grad(self, x):
        x = check_positions(x, self.dim)
        ll, grad = self._likelihood_and_grad(x)
        lp_prior, g_prior = self._prior(x)
        return ll + lp_prior, grad + g_prior

    def hvp(self, x, v):
        """Exact Hessian-vector product (see the class docs).

        For term :math:`n` (dropping the return index), with :math:`\\dot e` and
        :math:`\\dot S` as in the class docs,

        .. math::

            \\dot\\delta = \\frac{\\dot e}{S} - \\frac{e\\dot S}{S^2}, \\quad
            \\dot q = \\frac{e\\,\\dot e}{S^2} + \\Bigl(\\frac{1}{2S^2} - \\frac{e^2}{S^3}\\Bigr)
                \\dot S,

            \\nabla^2\\ell_n u = \\bigl(\\tau\\dot\\delta,\\
                2\\tau b^2(\\dot q + 2 q u_\\beta),\\ -\\lambda\\tau u_\\eta,\\
                n\\dot\\delta,\\ 2 n b_J^2(\\dot q + 2 q u_\\gamma)\\bigr),

        and the Hessian of the log prior adds :math:`-u/s^2`.
        """
        x = check_positions(x, self.dim)
        u = check_positions(v, self.dim, "v")
        return self._likelihood_hvp(x, u) - u * self._prior_prec

    def _likelihood_hvp(self, x, u):
        """The Hessian of the truncated log-likelihood (no prior) times ``u``, in the sampled
        coordinates (see :meth:`hvp`)."""
        x, u = np.broadcast_arrays(x, u)
        g, e, prec, q, _, w, b2t, bj2, lam_t = self._per_term_grads(x)
        n = self._n
        ua, ub, ul, uaj, uj = (u[..., k][..., None, None] for k in range(5))
        with np.errstate(over="ignore", invalid="ignore"):
            ed = -self.tau * ua - n * uaj
            sd = 2.0 * b2t[..., None, None] * ub + 2.0 * n * bj2[..., None, None] * uj
            dd = (ed - e * prec * sd) * prec  # d(e/S)
            qd = (e * ed + (0.5 - e * e * prec) * sd) * prec * prec
            hu = (
                self.tau * dd,
                2.0 * b2t[..., None, None] * (qd + 2.0 * q * ub),
                -lam_t[..., None, None] * ul,
                n * dd,
                2.0 * n * bj2[..., None, None] * (qd + 2.0 * q * uj),
            )
            gu = sum(gk * uk for gk, uk in zip(g, (ua, ub, ul, uaj, uj), strict=True))
            gbar = [np.sum(w * gk, axis=-1) for gk in g]  # (..., N) each
            gbar_u = sum(
                gb * uk[..., 0] for gb, uk in zip(gbar, (ua, ub, ul, uaj, uj), strict=True)
            )
            out = np.stack(
                [
                    np.sum(np.sum(w * (hk + gk * gu), axis=-1) - gb * gbar_u, axis=-1)
                    for hk, gk, gb in zip(hu, g, gbar, strict=True)
                ],
                axis=-1,
            )
        return out

    def numba_kernel(self):
        from hamiltonia.compiled.targets import NumbaTarget

        fdata = np.concatenate([[self.tau], self._prior_mean, self._prior_sd, self.returns])
        return NumbaTarget.build(_jdp_kernel, fdata, [self.n_obs, self.n_terms])

    # ------------------------------------------------------------------ reporting
    def natural(self, draws) -> dict[str, np.ndarray]:
        """The model parameters :math:`a, b, \\lambda, a_J, b_J` from draws ``(..., 5)``."""
        x = check_positions(draws, self.dim, "draws")
        return {
            "a": x[..., 0].copy(),
            "b": np.exp(x[..., 1]),
            "lambda": np.exp(x[..., 2]),
            "a_jump": x[..., 3].copy(),
            "b_jump": np.exp(x[..., 4]),
        }

    def predictive_log_density(self, draws, returns=None, *, log_weights=None) -> float:
        """Mean log posterior predictive density of held-out returns.

        .. math::

            \\overline{\\text{lpd}} = \\frac1T\\sum_{t=1}^{T}
                \\log\\sum_s \\bar w_s\\, p(r_t \\mid \\theta^{(s)})

        with equal weights :math:`\\bar w_s = 1/S` or self-normalised importance weights
        :math:`\\bar w_s \\propto e^{\\text{log\\_weights}_s}`; the returns are independent
        given :math:`\\theta` (independent increments), and :math:`p` is the truncated
        mixture of the likelihood.

        Parameters
        ----------
        draws : array of shape (..., 5)
            Posterior draws, e.g. ``result.draws``.
        returns : array of shape (T,), optional
            Held-out returns; default ``returns_test``.
        log_weights : array of shape ``draws.shape[:-1]``, optional
            Log importance weights (e.g. ``result.log_weights``).

        Returns
        -------
        float
        """
        draws = check_positions(draws, self.dim, "draws").reshape(-1, self.dim)
        if returns is None:
            if self.returns_test is None:
                raise ValueError("returns is required: this target was built without returns_test")
            r = self.returns_test
        else:
            r = self._check_returns(returns, "returns")
        weights = normalised_weights(log_weights, draws.shape[0])
        if weights is None:
            log_w = np.full(draws.shape[0], -math.log(draws.shape[0]))
        else:
            with np.errstate(divide="ignore"):
                log_w = np.log(weights)
        block = max(1, _PREDICT_BLOCK // (r.shape[0] * self.n_terms))
        parts = []
        for start in range(0, draws.shape[0], block):
            ll = self.return_log_likelihood(draws[start : start + block], r)  # (s, T)
            parts.append(ll + log_w[start : start + block, None])
        stacked = np.concatenate(parts, axis=0)
        mx = np.max(stacked, axis=0)
        lpd = mx + np.log(np.sum(np.exp(stacked - mx), axis=0))
        return float(np.mean(lpd))

    def test_metrics(self, draws, log_weights=None) -> dict[str, float]:
        """``{"lpd": ...}``: :meth:`predictive_log_density` on the test returns (the metric
        of this target); used by ``Result.test_metrics`` and the CLI."""
        if self.returns_test is None:
            raise ValueError("this target has no test split (returns_test is None)")
        return {"lpd": self.predictive_log_density(draws, log_weights=log_weights)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_obs={self.n_obs}, tau={self.tau}, n_terms={self.n_terms})"


# --------------------------------------------------------------------------- paper setting
class NaturalMertonJumpDiffusion(MertonJumpDiffusion):
    """The jump-diffusion posterior of the paper setting: the five parameters of eq. 3.5
    sampled as they are, annualised time, flat priors where they keep the posterior proper.

    The sampled vector is :math:`\\theta = (a, b, \\lambda, a_J, b_J)` (names ``a``, ``b``,
    ``lambda``, ``a_jump``, ``b_jump``), with the truncated likelihood of
    :class:`MertonJumpDiffusion` (eq. 3.5, terms :math:`n = 0, \\dots, K-1`) and the prior

    .. math::

        \\log\\pi(\\theta) = \\sum_i \\log\\sum_{n=0}^{K-1}
            \\frac{e^{-\\lambda\\tau}(\\lambda\\tau)^n}{n!}\\,
            \\mathcal N\\bigl(r_i;\\ a\\tau + n a_J,\\ b^2\\tau + n b_J^2\\bigr)
            - \\frac{a_J^2 + b_J^2}{2 s^2} - 2\\log s - \\log 2\\pi,
        \\qquad \\lambda > 0,

    and :math:`-\\infty` for :math:`\\lambda \\le 0`: flat (improper) priors on :math:`a`,
    :math:`b` and :math:`\\lambda`, and :math:`a_J, b_J \\sim \\mathcal N(0, s^2)` with
    :math:`s = 1` (``jump_prior_scale``). Mongwe 2022 (thesis, §3.2.4 and §3.2.8; Table 3.8)
    states neither priors, nor a transform of the positive parameters, nor :math:`\\tau`
    (GAP); the choices, and why:

    * **Coordinates as printed.** The thesis names the five parameters of eq. 3.5 as the
      model's :math:`D = 5` and samples with :math:`M = I`, so the published step sizes
      (Table 3.8) are steps in these coordinates. :math:`b` and :math:`b_J` enter only as
      :math:`b^2` and :math:`b_J^2`: they are sampled on the whole line, where the density is
      even in each, and reported as :math:`|b|`, :math:`|b_J|` (:meth:`constrain`), whose
      posterior is the one on :math:`b, b_J > 0`. :math:`\\lambda` is a rate: its support is
      :math:`\\lambda > 0`, and a trajectory that crosses 0 is rejected.
    * **The weakest priors that keep the posterior proper.** A flat prior on all five makes
      it improper: the likelihood is bounded below by the term in which every return comes
      from the diffusion alone (:math:`n = 0`), which does not depend on :math:`a_J, b_J`, so
      the integral over :math:`(a_J, b_J)` diverges (and likewise along the lines on which
      every return comes from the same :math:`n \\ge 1`, where :math:`a\\tau + n a_J` is
      fixed). A proper prior on :math:`a_J` and :math:`b_J` removes both. Flat priors on the
      rest are then enough: in :math:`a` the likelihood decays like a Gaussian, in
      :math:`|b| \\to \\infty` like :math:`|b|^{-N}`, in :math:`\\lambda \\to \\infty` like
      :math:`e^{-N\\lambda\\tau}(\\lambda\\tau)^{N(K-1)}` (the truncated weights), and its
      :math:`1/|b|` peak as :math:`b \\to 0` with :math:`a\\tau` on one return has
      :math:`a`-width :math:`\\propto |b|`, so it integrates (no two returns coincide in
      these data). :math:`s = 1` (jumps of 100 % in log price) is far wider than any jump
      in the data (the largest daily log return of the three series is 0.46, Bitcoin's).
    * **Annualised time**, :math:`\\tau = 1/252` (``tau``): :math:`a` and :math:`b` are the
      yearly drift and volatility and :math:`\\lambda` the expected jumps per year, the
      usual convention in finance for daily data (252 trading days a year; the thesis does
      not state it). Bitcoin trades every calendar day, so there a "year" is 252 daily
      steps.
    * **Starts.** The research starts chains at standard normal draws (thesis §5 gives none;
      the author's code uses ``torch.randn``); :meth:`unconstrain` reads a negative
      :math:`\\lambda` in initial values as :math:`|\\lambda|`, so such starts are valid.

    The gradient and the Hessian-vector product are those of :class:`MertonJumpDiffusion` in
    its coordinates :math:`x = (a, \\log|b|, \\log\\lambda, a_J, \\log|b_J|)` carried over by
    the chain rule: with :math:`J = \\operatorname{diag}(1, 1/b, 1/\\lambda, 1, 1/b_J)` and
    :math:`c = (0, -1/b^2, -1/\\lambda^2, 0, -1/b_J^2)`,

    .. math::

        \\nabla_\\theta \\ell = J\\,\\nabla_x \\ell, \\qquad
        \\nabla^2_\\theta \\ell\\, u = J\\,\\nabla^2_x \\ell\\,(J u)
            + (\\nabla_x \\ell \\odot c) \\odot u,

    plus the prior's :math:`-(0, 0, 0, a_J, b_J)/s^2` and :math:`-(0, 0, 0, u_{a_J},
    u_{b_J})/s^2`. There is no compiled kernel: the compiled path calls this target back.

    Parameters
    ----------
    returns : array of shape (N,)
        Log returns of consecutive steps.
    tau : float
        Length of one step in years (default 1/252).
    n_terms : int
        Terms of the Poisson mixture (default 10, the thesis's).
    jump_prior_scale : float
        :math:`s`, the prior standard deviation of :math:`a_J` and :math:`b_J` (default 1).
    returns_test : array, optional
        Held-out returns for :meth:`predictive_log_density`.
    """

    description = (
        "Bayesian Merton jump-diffusion, (a, b, lambda, a_J, b_J) as in eq. 3.5, tau = 1/252, "
        "flat priors on a, b, lambda"
    )
    parameter_names = PAPER_NAMES

    def __init__(
        self,
        returns,
        *,
        tau: float = PAPER_TAU,
        n_terms: int = 10,
        jump_prior_scale: float = 1.0,
        returns_test=None,
    ):
        super().__init__(returns, tau=tau, n_terms=n_terms, returns_test=returns_test)
        self.jump_prior_scale = check_positive(jump_prior_scale, "jump_prior_scale")
        s = self.jump_prior_scale
        #: ``name -> (mean, sd)`` of the proper priors; the others are flat (``None``).
        self.priors = {"a": None, "b": None, "lambda": None, "a_jump": (0.0, s),
                       "b_jump": (0.0, s)}  # fmt: skip
        self._jump_prec = 1.0 / s**2
        self._jump_const = -2.0 * math.log(s) - 2.0 * _HALF_LOG_2PI

    # ------------------------------------------------------------------ coordinates
    @staticmethod
    def _to_log(theta):
        """``(x, inverse Jacobian factors, valid)``: the coordinates of
        :class:`MertonJumpDiffusion`, :math:`1/\\theta_k` for the positive ones (1 for
        :math:`a, a_J`), and where :math:`\\lambda > 0`."""
        valid = theta[..., 2] > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            x = theta.copy()
            for k in (1, 2, 4):
                x[..., k] = np.log(np.abs(theta[..., k]))
            inv = np.ones_like(theta)
            for k in (1, 2, 4):
                inv[..., k] = 1.0 / theta[..., k]
        return x, inv, valid

    def _jump_prior(self, theta):
        z = theta[..., 3:]
        lp = self._jump_const - 0.5 * self._jump_prec * np.sum(z * z, axis=-1)
        grad = np.zeros_like(theta)
        grad[..., 3:] = -self._jump_prec * z
        return lp, grad

    def return_log_likelihood(self, x, returns=None) -> np.ndarray:
        """:math:`\\log p(r_i \\mid \\theta)` for every return, shape ``(..., N)``
        (:math:`-\\infty` where :math:`\\lambda \\le 0`)."""
        theta = check_positions(x, self.dim)
        r = self.returns if returns is None else self._check_returns(returns, "returns")
        lx, _, valid = self._to_log(theta)
        mean, var, const, *_ = self._terms(lx)
        ll = self._mixture(r, mean, var, const)[2]
        return np.where(valid[..., None], ll, -np.inf)

    def log_prob(self, x):
        theta = check_positions(x, self.dim)
        return self.log_likelihood(theta) + self._jump_prior(theta)[0]

    def log_prob_and_grad(self, x):
        theta = check_positions(x, self.dim)
        lx, inv, valid = self._to_log(theta)
        ll, g = self._likelihood_and_grad(lx)
        lp_prior, g_prior = self._jump_prior(theta)
        with np.errstate(invalid="ignore"):
            lp = np.where(valid, ll + lp_prior, -np.inf)
            grad = np.where(valid[..., None], g * inv + g_prior, 0.0)
        return lp, grad

    def hvp(self, x, v):
        """Exact Hessian-vector product by the chain rule (see the class docs)."""
        theta = check_positions(x, self.dim)
        u = check_positions(v, self.dim, "v")
        theta, u = np.broadcast_arrays(theta, u)
        lx, inv, _ = self._to_log(theta)
        _, g = self._likelihood_and_grad(lx)
        curv = inv * inv  # -c: the second derivative of log|theta_k| is -1/theta_k^2
        curv[..., [0, 3]] = 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            out = inv * self._likelihood_hvp(lx, inv * u) - g * curv * u
        out[..., 3:] -= self._jump_prec * u[..., 3:]
        return out

    def numba_kernel(self):
        return None

    # ------------------------------------------------------------------ reporting
    def constrain(self, x):
        """The draws as reported: :math:`(a, |b|, \\lambda, a_J, |b_J|)`."""
        out = np.array(x, dtype=float, copy=True)
        out[..., 1] = np.abs(out[..., 1])
        out[..., 4] = np.abs(out[..., 4])
        return out

    def unconstrain(self, values, chains: int = 1) -> np.ndarray:
        """Initial positions from ``values`` (shape ``(5,)`` or ``(chains, 5)``), with a
        negative :math:`\\lambda` read as :math:`|\\lambda|` (see the class docs); a zero
        :math:`\\lambda` stays outside the support."""
        q = super().unconstrain(values, chains)
        q[..., 2] = np.abs(q[..., 2])
        return q

    def natural(self, draws) -> dict[str, np.ndarray]:
        """The model parameters :math:`a, b, \\lambda, a_J, b_J` (with :math:`|b|, |b_J|`)."""
        x = self.constrain(check_positions(draws, self.dim, "draws"))
        return {name: x[..., k].copy() for k, name in enumerate(("a", "b", "lambda", "a_jump",
                                                                   "b_jump"))}  # fmt: skip

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_obs={self.n_obs}, tau={self.tau:.6g}, "
            f"n_terms={self.n_terms}, jump_prior_scale={self.jump_prior_scale})"
        )


# --------------------------------------------------------------------------- factories
def _from_dataset(name: str, tau, n_terms, priors, test_fraction, setting) -> MertonJumpDiffusion:
    from hamiltonia import datasets

    # Checked before the data are loaded (or downloaded).
    check_setting(setting)
    check_int(n_terms, "n_terms", minimum=1, maximum=MAX_TERMS)
    if setting == "paper" and priors is not None:
        raise ValueError(
            "priors sets normal priors on the default setting's log-scale coordinates; the "
            "paper setting has flat priors on a, b, lambda and N(0, 1) on a_jump, b_jump"
        )
    data = datasets.load(name, test_fraction=test_fraction)
    returns_test = data.returns_test if len(data.returns_test) else None
    if setting == "paper":
        target = NaturalMertonJumpDiffusion(
            data.returns_train,
            tau=PAPER_TAU if tau is None else tau,
            n_terms=n_terms,
            returns_test=returns_test,
        )
    else:
        target = MertonJumpDiffusion(
            data.returns_train,
            tau=1.0 if tau is None else tau,
            n_terms=n_terms,
            priors=priors,
            returns_test=returns_test,
        )
    target.dataset = data
    target.description = f"Bayesian Merton jump-diffusion on {datasets.describe()[name]}"
    return with_setting(target, setting)


_FACTORY_DOC = """

    Parameters
    ----------
    tau : float, optional
        Length of one step: default 1 (a trading day) for ``setting="default"``, 1/252 (a
        day in years) for ``setting="paper"``.
    n_terms : int
        Terms of the Poisson mixture (default 10, the thesis's).
    priors : mapping, optional
        Default setting only: ``name -> (mean, sd)`` of the normal priors on the log-scale
        coordinates (:func:`~hamiltonia.targets.jump_diffusion.default_priors`).
    test_fraction : float
        Latest fraction of the returns held out (default 0.1).
    setting : {"default", "paper"}
        ``"default"``: :class:`~hamiltonia.targets.jump_diffusion.MertonJumpDiffusion`
        (log-scale coordinates, weakly informative priors, :math:`\\tau = 1`). ``"paper"``:
        :class:`~hamiltonia.targets.jump_diffusion.NaturalMertonJumpDiffusion`, the
        parameters of eq. 3.5 as printed, :math:`\\tau = 1/252`, flat priors where they
        keep the posterior proper (Mongwe 2022, thesis, §3.2.4; the publication's gaps are
        filled as that class says).
    """


def _factory(name: str, doc: str):
    def factory(
        tau: float | None = None,
        n_terms: int = 10,
        priors: Mapping[str, tuple[float, float]] | None = None,
        test_fraction: float = 0.1,
        setting: str = "default",
    ) -> MertonJumpDiffusion:
        return _from_dataset(name, tau, n_terms, priors, test_fraction, setting)

    factory.__name__ = factory.__qualname__ = f"jdp_{name}"
    factory.__doc__ = doc + _FACTORY_DOC
    return factory


jdp_sp500 = _factory(
    "sp500",
    "Merton JDP on S&P 500 daily log returns 2017-2020 (D = 5), earliest 90% for training.",
)
jdp_btc = _factory(
    "btc", "Merton JDP on Bitcoin (USD) daily log returns 2017-2020 (D = 5), earliest 90% training."
)
jdp_usdzar = _factory(
    "usdzar",
    "Merton JDP on USD/ZAR daily log returns 2017-2020 (D = 5), earliest 90% for training.",
)
