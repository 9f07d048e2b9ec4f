"""The suite's hidden Markov models and Gaussian processes, written as a user writes them.

Translated from posteriordb's Stan programs (Magnusson et al. 2024; ``data/LICENCE.md``) with
the same priors, parameterisation and constraints.

**Hidden Markov models** (``hmm_example-hmm_example``, ``bball_drive_event_0-hmm_drive_0``):
two states, transition rows :math:`\\theta_j` (``simplex[K]``, ``hm.simplex(2)`` each), and
the likelihood by the forward algorithm, a Python loop over time as in the Stan program,

.. math::

    \\gamma_1(k) = \\log p(y_1 \\mid k), \\qquad
    \\gamma_t(k) = \\log\\sum_j \\exp\\bigl(\\gamma_{t-1}(j) + \\log\\theta_{jk}\\bigr)
    + \\log p(y_t \\mid k), \\qquad
    \\log p(y) = \\log\\sum_k \\exp \\gamma_T(k).

The state means (rates) are ``positive_ordered[K]``, which hamiltonia has no block for; they
are written as Stan builds them, :math:`\\phi = \\operatorname{cumsum}(\\delta)` with the
steps :math:`\\delta` a ``hm.positive(K)`` block: the map :math:`\\delta \\mapsto \\phi` is
triangular with unit diagonal, so its Jacobian is 1, the log density of :math:`\\phi` is
used unchanged, and the unconstrained coordinates :math:`\\log\\delta` are Stan's.
:math:`\\phi` is reported as a generated quantity under Stan's name. The loop is recorded
unrolled and found again (:mod:`hamiltonia.modelling.loop_rolling`): it compiles as a loop,
whatever the number of steps.

**Gaussian processes**. ``gp_pois_regr-gp_regr``: an exact GP regression,
:math:`y \\sim N(0, K)`, :math:`K_{ij} = \\alpha^2 \\exp(-(x_i - x_j)^2 / 2\\rho^2) +
\\sigma\\,\\delta_{ij}` (:math:`\\sigma`, not :math:`\\sigma^2`, on the diagonal, as in the
program), by its Cholesky factor, :math:`\\rho \\sim \\Gamma(25, 4)`, half-normal
:math:`\\alpha`, :math:`\\sigma`; written for one point (``numpy.linalg.cholesky`` and
``solve_triangular`` compile with their adjoints, :mod:`hamiltonia.modelling.adjoint_linalg`).
``mcycle_gp-accel_gp``: brms's Hilbert-space approximate GPs for the mean and the log sd,
:math:`f = \\Phi\\,(\\sqrt{S(\\sqrt\\lambda)} \\odot z)`,
:math:`S(\\omega) = s^2 \\sqrt{2\\pi}\\,\\ell\\, e^{-\\ell^2\\omega^2/2}`, with brms's priors
(Student-t intercepts and scales, inverse-gamma length-scales, :math:`z \\sim N(0, I)`).
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
from autograd.scipy.linalg import solve_triangular
from autograd.scipy.special import logsumexp

from hamiltonia.modelling.parameters import positive, real, simplex
from hamiltonia.posteriors.regression import normal_lpdf
from hamiltonia.targets.model import Model

__all__ = [
    "bball_drive_event_0_hmm_drive_0",
    "forward_algorithm",
    "gp_pois_regr_gp_regr",
    "hmm_example_hmm_example",
    "mcycle_gp_accel_gp",
]


def forward_algorithm(log_theta, emission):
    """:math:`\\log p(y_{1:T})` of an HMM starting in every state with weight 1 (as the
    Stan programs do), by the forward recursion, a loop over time.

    ``log_theta``: ``(..., K, K)``, row :math:`j` the log transition probabilities out of
    state :math:`j`; ``emission``: ``(..., T, K)``, :math:`\\log p(y_t \\mid k)`.
    """
    gamma = emission[..., 0, :]
    for t in range(1, emission.shape[-2]):
        acc = gamma[..., :, None] + log_theta  # acc[j, k] = gamma(j) + log theta[j, k]
        gamma = logsumexp(acc, axis=-2) + emission[..., t, :]
    return logsumexp(gamma, axis=-1)


def _transitions(p):
    """``log theta`` with rows ``theta1``, ``theta2`` (Stan's ``theta[j] = theta_j``)."""
    return anp.log(anp.stack([p["theta1"], p["theta2"]], axis=-2))


def hmm_example_hmm_example(data: dict, **options) -> Model:
    """``mu[1] ~ normal(3, 1)``, ``mu[2] ~ normal(10, 1)`` (``positive_ordered``), flat
    transition rows, ``y[t] ~ normal(mu[z_t], 1)`` by the forward algorithm."""
    y = data["y"]
    k = int(data["K"])

    def mu_of(p):
        return anp.cumsum(p["mu_steps"], axis=-1)

    def logp(p):
        mu = mu_of(p)
        prior = normal_lpdf(mu[..., 0], 3.0, 1.0) + normal_lpdf(mu[..., 1], 10.0, 1.0)
        emission = normal_lpdf(y[:, None], mu[..., None, :], 1.0)
        return prior + forward_algorithm(_transitions(p), emission)

    return Model(
        logp,
        {"theta1": simplex(k), "theta2": simplex(k), "mu_steps": positive(k)},
        generated=lambda p: {"mu": mu_of(p)},
        **options,
    )


def _exponential_lpdf(y, rate):
    return anp.log(rate) - rate * y


def bball_drive_event_0_hmm_drive_0(data: dict, **options) -> Model:
    """Dirichlet(``alpha[k]``) transition rows, ``phi``, ``lambda`` ``positive_ordered``
    with ``normal(0, 1)`` and ``normal(3, 1)`` priors on their two elements, and
    exponential emissions of ``u`` (rate ``phi[k]``) and ``v`` (rate ``lambda[k]``)."""
    u, v = data["u"], data["v"]
    alpha = np.asarray(data["alpha"], dtype=float)
    k = int(data["K"])

    def rates(p):
        return anp.cumsum(p["phi_steps"], axis=-1), anp.cumsum(p["lambda_steps"], axis=-1)

    def logp(p):
        phi, lam = rates(p)
        log_theta = _transitions(p)
        prior = anp.sum((alpha - 1.0) * log_theta, axis=(-2, -1))  # dirichlet_lpdf rows
        for rate in (phi, lam):
            prior = prior + normal_lpdf(rate[..., 0], 0.0, 1.0)
            prior = prior + normal_lpdf(rate[..., 1], 3.0, 1.0)
        emission = _exponential_lpdf(u[:, None], phi[..., None, :]) + _exponential_lpdf(
            v[:, None], lam[..., None, :]
        )
        return prior + forward_algorithm(log_theta, emission)

    def generated(p):
        phi, lam = rates(p)
        return {"phi": phi, "lambda": lam}

    blocks = {
        "theta1": simplex(k),
        "theta2": simplex(k),
        "phi_steps": positive(k),
        "lambda_steps": positive(k),
    }
    return Model(logp, blocks, generated=generated, **options)


def gp_pois_regr_gp_regr(data: dict, **options) -> Model:
    """``rho ~ gamma(25, 4)``, ``alpha ~ normal(0, 2)``, ``sigma ~ normal(0, 1)`` (all
    positive), ``y ~ multi_normal_cholesky(0, cholesky(K))`` with ``K =
    gp_exp_quad_cov(x, alpha, rho) + diag(sigma)``. Written for one point."""
    x, y = data["x"], data["y"]
    sq_dist = (x[:, None] - x[None, :]) ** 2
    eye = np.eye(len(x))

    def logp(p):
        rho, alpha, sigma = p["rho"], p["alpha"], p["sigma"]
        cov = alpha**2 * anp.exp(-0.5 * sq_dist / rho**2) + sigma * eye
        chol = anp.linalg.cholesky(cov)
        white = solve_triangular(chol, y, lower=True)
        likelihood = -anp.sum(anp.log(anp.diag(chol))) - 0.5 * anp.sum(white**2)
        prior = 24.0 * anp.log(rho) - 4.0 * rho - 0.5 * (alpha / 2.0) ** 2 - 0.5 * sigma**2
        return prior + likelihood

    return Model(logp, {"rho": positive(), "alpha": positive(), "sigma": positive()}, **options)


def _student_t(x, nu, mu, scale):
    """Stan's ``student_t_lpdf`` up to its constant in ``x``."""
    return -0.5 * (nu + 1.0) * anp.log1p(((x - mu) / scale) ** 2 / nu)


def _inv_gamma(x, shape, scale):
    """Stan's ``inv_gamma_lpdf`` up to its constant in ``x``."""
    return -(shape + 1.0) * anp.log(x) - scale / x


def mcycle_gp_accel_gp(data: dict, **options) -> Model:
    """brms's approximate GPs of the mean (40 basis functions) and of the log sd (20)
    (module docs), with its priors: ``student_t(3, -13, 36)`` and
    ``student_t(3, 0, 10)`` on the intercepts, half ``student_t(3, 0, 36)`` on the GP sds,
    ``inv_gamma(1.124909, 0.0177)`` on the length-scales, ``normal(0, 1)`` on ``zgp``."""
    y = data["Y"]
    basis, basis_sigma = data["Xgp_1"], data["Xgp_sigma_1"]
    slambda, slambda_sigma = data["slambda_1"][:, 0], data["slambda_sigma_1"][:, 0]

    def gpa(phi, sdgp, lscale, zgp, sl):
        # spd_cov_exp_quad for D = 1, then X * (sqrt(spd) .* zgp)
        spd = (
            sdgp[..., None] ** 2
            * np.sqrt(2.0 * np.pi)
            * lscale[..., None]
            * anp.exp(-0.5 * lscale[..., None] ** 2 * sl**2)
        )
        return anp.matmul(anp.sqrt(spd) * zgp, phi.T)

    def logp(p):
        mu = p["Intercept"][..., None] + gpa(basis, p["sdgp_1"], p["lscale_1"], p["zgp_1"], slambda)
        log_sigma = p["Intercept_sigma"][..., None] + gpa(
            basis_sigma, p["sdgp_sigma_1"], p["lscale_sigma_1"], p["zgp_sigma_1"], slambda_sigma
        )
        prior = (
            _student_t(p["Intercept"], 3.0, -13.0, 36.0)
            + _student_t(p["sdgp_1"], 3.0, 0.0, 36.0)
            - 0.5 * anp.sum(p["zgp_1"] ** 2, axis=-1)
            + _inv_gamma(p["lscale_1"], 1.124909, 0.0177)
            + _student_t(p["Intercept_sigma"], 3.0, 0.0, 10.0)
            + _student_t(p["sdgp_sigma_1"], 3.0, 0.0, 36.0)
            - 0.5 * anp.sum(p["zgp_sigma_1"] ** 2, axis=-1)
            + _inv_gamma(p["lscale_sigma_1"], 1.124909, 0.0177)
        )
        likelihood = anp.sum(-0.5 * ((y - mu) * anp.exp(-log_sigma)) ** 2 - log_sigma, axis=-1)
        return prior + likelihood

    blocks = {
        "Intercept": real(),
        "sdgp_1": positive(),
        "lscale_1": positive(),
        "zgp_1": real(int(data["NBgp_1"])),
        "Intercept_sigma": real(),
        "sdgp_sigma_1": positive(),
        "lscale_sigma_1": positive(),
        "zgp_sigma_1": real(int(data["NBgp_sigma_1"])),
    }
    return Model(logp, blocks, **options)
