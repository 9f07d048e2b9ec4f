"""Aggregation of GP experts' predictions in latent :math:`f`-space (Cohen et al. 2020; thesis
§5.3–5.4), the mixture over hyperparameter draws, the L-BFGS point estimate and the metrics.

All the rules are small pure functions of the experts' means and variances ``mu, var`` of
shape ``(J, n)`` (expert, test point), weights ``beta`` of the same shape and the prior
variance :math:`\\sigma_*^2 = k(x_*, x_*)`:

* PoE: :math:`\\sigma^{-2} = \\sum_j \\sigma_j^{-2}`, :math:`m = \\sigma^2\\sum_j\\sigma_j^{-2}m_j`;
* gPoE: :math:`\\sigma^{-2} = \\sum_j \\beta_j\\sigma_j^{-2}`,
  :math:`m = \\sigma^2\\sum_j\\beta_j\\sigma_j^{-2}m_j`;
* BCM: :math:`\\sigma^{-2} = \\sum_j\\sigma_j^{-2} + (1 - J)\\sigma_*^{-2}`, mean as PoE;
* rBCM: :math:`\\sigma^{-2} = \\sum_j\\beta_j(\\sigma_j^{-2} - \\sigma_*^{-2}) + \\sigma_*^{-2}`,
  mean as gPoE;
* barGP (eq. 5.19 as printed, and the authors' code): :math:`m = \\sum_j\\beta_j m_j`,
  :math:`\\sigma^2 = \\sum_j\\beta_j\\sigma_j^2`; with ``exact=True`` the exact 1-D
  Wasserstein-2 barycenter, :math:`\\sigma = \\sum_j\\beta_j\\sigma_j` (the erratum of the spec).

Weights (:func:`weights`): softmax-variance :math:`\\beta_j \\propto \\exp(-T\\sigma_j^2)`,
differential entropy :math:`\\tfrac12(\\log\\sigma_*^2 - \\log\\sigma_j^2)` and uniform
:math:`1/J`, normalised over the experts or not. The named methods of the publication's tables
(:data:`METHODS`) follow the authors' code: the weights of ``rBCM_var`` are not normalised,
those of ``rBCM_diff_entr`` are the differential entropies themselves (Cao and Fleet's
weights, no softmax), PoE and BCM have weight 1, gPoE and barGP normalised weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "METHODS",
    "WEIGHTINGS",
    "LBFGSFit",
    "aggregate",
    "barycenter",
    "bcm",
    "expert_predictions",
    "fit_lbfgs",
    "full_gp_predict",
    "gpoe",
    "mixture_moments",
    "nlpd",
    "nlpd_mixture",
    "poe",
    "predict",
    "rbcm",
    "rmse",
    "weights",
]

#: The weightings :func:`weights` computes.
WEIGHTINGS = ("variance", "diff_entr", "uniform", "none")

#: The named methods of the publication's tables: ``(rule, weighting, normalised)``.
METHODS = {
    "PoE": ("poe", "none", False),
    "gPoE_unif": ("gpoe", "uniform", True),
    "gPoE_var": ("gpoe", "variance", True),
    "BCM": ("bcm", "none", False),
    "rBCM_var": ("rbcm", "variance", False),
    "rBCM_diff_entr": ("rbcm", "diff_entr", False),
    "BAR_var": ("bar", "variance", True),
    "BAR_var_W2": ("bar_w2", "variance", True),
}

_LOG_2PI = math.log(2.0 * math.pi)


# --------------------------------------------------------------------------- weights
def weights(mu, var, kind: str, *, T: float = 1.0, prior_var=None, normalise: bool = True):
    """Weights ``beta (J, n)`` of the experts at each test point.

    ``kind``: ``"variance"`` (softmax-variance, :math:`\\exp(-T\\sigma_j^2)`, eq. 5.21),
    ``"diff_entr"`` (the differential-entropy differences
    :math:`\\tfrac12(\\log\\sigma_*^2 - \\log\\sigma_j^2)`, eq. 5.22), ``"uniform"`` (1/J)
    or ``"none"`` (1). ``normalise`` divides by the sum over the experts (for the softmax
    computed stably, by subtracting the smallest variance before the exponential, so that a
    large ``T`` does not underflow to 0/0).

    For ``"diff_entr"``, ``normalise=False`` gives the entropy differences themselves, as the
    authors' code uses them for ``rBCM_diff_entr``; ``normalise=True`` gives them divided by
    their sum.
    """
    mu = np.asarray(mu, dtype=float)
    var = np.asarray(var, dtype=float)
    if kind not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {list(WEIGHTINGS)}, got {kind!r}")
    if kind == "variance":
        if normalise:
            shifted = -T * (var - var.min(axis=0, keepdims=True))
            w = np.exp(shifted)
            return w / w.sum(axis=0, keepdims=True)
        return np.exp(-T * var)
    if kind == "uniform":
        w = np.full(var.shape, 1.0 / var.shape[0])
        return w
    if kind == "none":
        w = np.ones(var.shape)
        return w / var.shape[0] if normalise else w
    if prior_var is None:
        raise ValueError("the differential-entropy weights need prior_var")
    w = 0.5 * (np.log(prior_var) - np.log(var))
    return w / w.sum(axis=0, keepdims=True) if normalise else w


# --------------------------------------------------------------------------- rules
def poe(mu, var):
    """Product of experts (eqs. 5.5–5.7): ``(mean, var)`` of shape ``(n,)``."""
    prec = np.sum(1.0 / var, axis=0)
    v = 1.0 / prec
    return v * np.sum(mu / var, axis=0), v


def gpoe(mu, var, beta):
    """Generalised PoE (eq. 5.8)."""
    prec = np.sum(beta / var, axis=0)
    v = 1.0 / prec
    return v * np.sum(beta * mu / var, axis=0), v


def bcm(mu, var, prior_var):
    """Bayesian committee machine (eqs. 5.9–5.11)."""
    J = mu.shape[0]
    prec = np.sum(1.0 / var, axis=0) + (1 - J) / prior_var
    v = 1.0 / prec
    return v * np.sum(mu / var, axis=0), v


def rbcm(mu, var, beta, prior_var):
    """Robust BCM (eq. 5.12)."""
    prec = np.sum(beta * (1.0 / var - 1.0 / prior_var), axis=0) + 1.0 / prior_var
    v = 1.0 / prec
    return v * np.sum(beta * mu / var, axis=0), v


def barycenter(mu, var, beta, *, exact: bool = False):
    """Wasserstein barycenter of the experts' Gaussians (barGP, eqs. 5.17–5.19): the weighted
    mean, and the weighted average of the variances as printed in eq. 5.19 (and the authors'
    code), or with ``exact`` the exact 1-D :math:`W_2` barycenter, whose standard deviation
    is the weighted average of the standard deviations (eq. 5.16 in one dimension).
    ``beta`` should sum to one over the experts."""
    m = np.sum(beta * mu, axis=0)
    if exact:
        return m, np.sum(beta * np.sqrt(var), axis=0) ** 2
    return m, np.sum(beta * var, axis=0)


def aggregate(mu, var, method: str, *, T: float, prior_var):
    """The latent ``(mean, var)`` of the named ``method`` (:data:`METHODS`) at each test
    point, from the experts' ``mu, var (J, n)``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    rule, kind, normalise = METHODS[method]
    if rule == "poe":
        return poe(mu, var)
    if rule == "bcm":
        return bcm(mu, var, prior_var)
    beta = weights(mu, var, kind, T=T, prior_var=prior_var, normalise=normalise)
    if rule == "gpoe":
        return gpoe(mu, var, beta)
    if rule == "rbcm":
        return rbcm(mu, var, beta, prior_var)
    return barycenter(mu, var, beta, exact=rule == "bar_w2")


# --------------------------------------------------------------------------- experts
def _kernel(A, B, ls, s2):
    """RBF kernel matrix ``k(A, B)`` with lengthscales ``ls (d,)``: batched over leading
    axes of ``A (..., a, d)`` and ``B (..., b, d)``."""
    d2 = np.sum(((A[..., :, None, :] - B[..., None, :, :]) / ls) ** 2, axis=-1)
    return s2 * np.exp(-0.5 * d2)


def expert_predictions(target, theta, Xstar):
    """Each expert's latent predictive mean and variance at ``Xstar (n, d)`` under the log
    hyperparameters ``theta (P,)``, batched over the experts (eqs. 5.1–5.2): ``(mu (J, n),
    var (J, n), prior_var, noise_var)``."""
    Xstar = np.asarray(Xstar, dtype=float)
    if Xstar.ndim == 1:
        Xstar = Xstar[:, None]
    ls, s2, n2 = target.hyperparameters(np.asarray(theta, dtype=float))
    Kf = _kernel(target.Xs, target.Xs, ls, s2) * target._pair
    C = Kf + n2 * target._valid_eye + target._pad_eye
    L = np.linalg.cholesky(C)
    Ks = _kernel(target.Xs, Xstar[None], ls, s2) * target.valid[:, :, None]  # (J, m, n)
    V = np.linalg.solve(L, Ks)
    z = np.linalg.solve(L, target.ys[..., None])[..., 0]  # (J, m)
    mu = np.einsum("jmn,jm->jn", V, z)
    var = np.maximum(s2 - np.sum(V * V, axis=1), 1e-12 * s2)
    return mu, var, float(s2), float(n2)


def full_gp_predict(X, y, theta, Xstar, *, ard: bool = False):
    """The full GP's latent ``(mean, var)`` at ``Xstar`` with the log hyperparameters
    ``theta`` (the reference of the figures)."""
    X = np.asarray(X, float).reshape(len(y), -1)
    Xstar = np.asarray(Xstar, float).reshape(-1, X.shape[1])
    theta = np.asarray(theta, float)
    d = X.shape[1]
    ls = np.exp(theta[:d]) if ard else np.full(d, np.exp(theta[0]))
    s2, n2 = np.exp(theta[-2]), np.exp(theta[-1])
    L = np.linalg.cholesky(_kernel(X, X, ls, s2) + n2 * np.eye(len(X)))
    V = np.linalg.solve(L, _kernel(X, Xstar, ls, s2))
    z = np.linalg.solve(L, np.asarray(y, float))
    return V.T @ z, np.maximum(s2 - np.sum(V * V, axis=0), 1e-12 * s2)


def predict(target, thetas, Xstar, method: str, *, T: float):
    """The predictive for :math:`y` of ``method`` at each of the log-hyperparameter draws
    ``thetas (S, P)``: ``(means (S, n), variances (S, n))``, the variance of :math:`y` (the
    aggregated latent variance plus the noise variance)."""
    thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
    means, variances = [], []
    for theta in thetas:
        mu, var, s2, n2 = expert_predictions(target, theta, Xstar)
        m, v = aggregate(mu, var, method, T=T, prior_var=s2)
        means.append(m)
        variances.append(v + n2)
    return np.array(means), np.array(variances)


# --------------------------------------------------------------------------- mixture, metrics
def mixture_moments(means, variances):
    """Mean and variance of the equal-weight mixture of the Gaussians ``N(means[s],
    variances[s])`` over draws ``s`` (law of total variance)."""
    means, variances = np.asarray(means, float), np.asarray(variances, float)
    m = means.mean(axis=0)
    return m, variances.mean(axis=0) + means.var(axis=0)


def _log_normal(y, m, v):
    return -0.5 * (_LOG_2PI + np.log(v) + (y - m) ** 2 / v)


def nlpd(y, mean, var):
    """Mean negative log predictive density of ``y`` under ``N(mean, var)``."""
    return float(-np.mean(_log_normal(np.asarray(y, float), mean, var)))


def nlpd_mixture(y, means, variances):
    """Mean negative log predictive density of ``y`` under the mixture over draws: the
    densities are averaged over the draws, :math:`-\\frac1n\\sum_i\\log\\frac1S\\sum_s
    \\mathcal N(y_i\\mid m_{si}, v_{si})` (not the NLPD of the moment-matched Gaussian)."""
    means, variances = np.atleast_2d(means), np.atleast_2d(variances)
    lp = _log_normal(np.asarray(y, float)[None], means, variances)
    return float(-np.mean(logsumexp(lp, axis=0) - math.log(lp.shape[0])))


def rmse(y, mean):
    """Root mean squared error of the predictive mean."""
    return float(np.sqrt(np.mean((np.asarray(y, float) - mean) ** 2)))


# --------------------------------------------------------------------------- point estimate
@dataclass
class LBFGSFit:
    """The L-BFGS point estimate: log hyperparameters ``theta``, the summed negative log
    marginal likelihood there, the number of objective-and-gradient evaluations and
    iterations, and scipy's message."""

    theta: np.ndarray
    nlml: float
    n_grad: int
    n_iter: int
    message: str


def fit_lbfgs(target, theta0=None, *, maxiter: int = 200, with_prior: bool = False) -> LBFGSFit:
    """Minimise the summed negative log marginal likelihood (eq. 5.4) over the log
    hyperparameters with scipy's L-BFGS-B, ``maxiter=200``, from lengthscale, signal and
    noise variance 1 (GPflow's defaults, where the authors' code starts), as the authors
    do; ``with_prior`` adds the target's priors (a MAP estimate)."""
    from scipy.optimize import minimize

    theta0 = np.zeros(target.dim) if theta0 is None else np.asarray(theta0, float)
    count = [0]

    def objective(theta):
        count[0] += 1
        if with_prior:
            lp, g = target.log_prob_and_grad(theta)
        else:
            lp, g = target.log_likelihood_and_grad(theta)
        if not np.isfinite(lp):
            return 1e300, np.zeros_like(theta)
        return -float(lp), -np.asarray(g, float)

    res = minimize(objective, theta0, jac=True, method="L-BFGS-B",
                   options={"maxiter": maxiter})  # fmt: skip
    return LBFGSFit(np.asarray(res.x), float(res.fun), count[0], int(res.nit), str(res.message))
