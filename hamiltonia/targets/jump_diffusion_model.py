"""The jump-diffusion posterior of the default setting (:class:`MertonJumpDiffusion`): the
Bayesian Merton jump-diffusion on daily log returns (Merton 1976; Mongwe 2022, thesis,
§3.2.4 and §3.2.7-3.2.8), the Poisson mixture of eq. 3.5 truncated to its first terms, in
the log-scale coordinates :math:`(a, \\log b, \\log\\lambda, a_J, \\log b_J)` with normal
priors (:func:`default_priors`): its log density, gradient, exact Hessian-vector product,
pointwise log likelihood and held-out predictive density.

The model, the decisions the thesis leaves open and the scales of the priors are set out in
:mod:`hamiltonia.targets.jump_diffusion`, which re-exports these names (and holds the
registered targets on the data sets). The compiled kernel is
:mod:`hamiltonia.targets.jump_diffusion_kernel`; the paper setting,
:mod:`hamiltonia.targets.jump_diffusion_paper`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from hamiltonia._validation import check_int, check_positions, check_positive
from hamiltonia.targets.base import Target
from hamiltonia.targets.bnn import normalised_weights

__all__ = ["MAX_TERMS", "NAMES", "MertonJumpDiffusion", "default_priors"]

#: Names of the sampled coordinates, in order.
NAMES = ("a", "log_b", "log_lambda", "a_jump", "log_b_jump")
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
        from hamiltonia.targets.jump_diffusion_kernel import jdp_log_prob

        fdata = np.concatenate([[self.tau], self._prior_mean, self._prior_sd, self.returns])
        return NumbaTarget.build(jdp_log_prob, fdata, [self.n_obs, self.n_terms])

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
