"""The suite's six linear regressions, written as a user writes them with :class:`hamiltonia.Model`.

Each is a normal linear model :math:`y_n \\sim N(\\mu_n, \\sigma)`, :math:`\\mu = X\\beta`,
translated from posteriordb's Stan program (Magnusson et al. 2024; ``data/LICENCE.md``) term
by term: the same priors (an absent prior is Stan's flat one, improper), the same
constraints (``real<lower=0> sigma`` is ``hm.positive()``) and the same transformed data.
The log densities are written for a batch of points, the chains as leading axes
(``beta[..., 0, None]``), and compile with the default backend.

==========================================  ===========================================
posterior                                   model
==========================================  ===========================================
``kidiq-kidscore_momhsiq``                  :math:`\\mu = \\beta_1 + \\beta_2\\,\\text{hs} +
                                            \\beta_3\\,\\text{iq}`, :math:`\\sigma \\sim
                                            \\text{half-Cauchy}(0, 2.5)`
``kidiq_with_mom_work-kidscore_mom_work``   :math:`\\mu = \\beta_1 + \\sum_{w=2}^4
                                            \\beta_w [\\text{work} = w]`, flat priors
``mesquite-logmesquite_logvolume``          :math:`\\log\\text{weight} \\sim N(\\beta_1 +
                                            \\beta_2 \\log(d_1 d_2 h), \\sigma)`, flat
``nes1980-nes``                             nine coefficients (age as a factor), flat
``sblri-blr``                               :math:`\\beta \\sim N(0, 10)`, :math:`\\sigma
                                            \\sim \\text{half-}N(0, 10)`
``kilpisjarvi_mod-kilpisjarvi``             scalars :math:`\\alpha \\sim N(\\mu_\\alpha,
                                            s_\\alpha)`, :math:`\\beta \\sim N(\\mu_\\beta,
                                            s_\\beta)`, flat :math:`\\sigma`
==========================================  ===========================================
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np

from hamiltonia.modelling.parameters import positive, real
from hamiltonia.targets.model import Model

__all__ = [
    "kidiq_kidscore_momhsiq",
    "kidiq_with_mom_work_kidscore_mom_work",
    "kilpisjarvi_mod_kilpisjarvi",
    "mesquite_logmesquite_logvolume",
    "nes1980_nes",
    "normal_lpdf",
    "sblri_blr",
]

_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


def normal_lpdf(y, mu, sigma):
    """Stan's ``normal_lpdf`` of each element (not summed): :math:`-\\tfrac12 ((y -
    \\mu)/\\sigma)^2 - \\log\\sigma - \\tfrac12\\log 2\\pi`."""
    return -0.5 * ((y - mu) / sigma) ** 2 - anp.log(sigma) - _HALF_LOG_2PI


def _likelihood(y, mu, sigma):
    """:math:`\\sum_n \\log N(y_n \\mid \\mu_n, \\sigma)` with ``mu`` of shape ``(..., N)``
    and ``sigma`` a scalar block (``(...,)``)."""
    return anp.sum(normal_lpdf(y, mu, sigma[..., None]), axis=-1)


def kidiq_kidscore_momhsiq(data: dict, **options) -> Model:
    """``kid_score ~ normal(beta[1] + beta[2] * mom_hs + beta[3] * mom_iq, sigma)``,
    ``sigma ~ cauchy(0, 2.5)`` on :math:`\\sigma > 0`."""
    y, hs, iq = data["kid_score"], data["mom_hs"], data["mom_iq"]

    def logp(p):
        beta, sigma = p["beta"], p["sigma"]
        mu = beta[..., 0, None] + beta[..., 1, None] * hs + beta[..., 2, None] * iq
        prior = -anp.log1p((sigma / 2.5) ** 2)
        return prior + _likelihood(y, mu, sigma)

    return Model(logp, {"beta": real(3), "sigma": positive()}, **options)


def kidiq_with_mom_work_kidscore_mom_work(data: dict, **options) -> Model:
    """``kid_score ~ normal(beta[1] + beta[2] * work2 + beta[3] * work3 + beta[4] * work4,
    sigma)`` with ``work_w = (mom_work == w)``; flat priors."""
    y = data["kid_score"]
    work = [(data["mom_work"] == w).astype(float) for w in (2, 3, 4)]

    def logp(p):
        beta, sigma = p["beta"], p["sigma"]
        mu = beta[..., 0, None]
        for k, indicator in enumerate(work, start=1):
            mu = mu + beta[..., k, None] * indicator
        return _likelihood(y, mu, sigma)

    return Model(logp, {"beta": real(4), "sigma": positive()}, **options)


def mesquite_logmesquite_logvolume(data: dict, **options) -> Model:
    """``log(weight) ~ normal(beta[1] + beta[2] * log(diam1 * diam2 * canopy_height),
    sigma)``; flat priors."""
    log_weight = np.log(data["weight"])
    log_volume = np.log(data["diam1"] * data["diam2"] * data["canopy_height"])

    def logp(p):
        beta, sigma = p["beta"], p["sigma"]
        mu = beta[..., 0, None] + beta[..., 1, None] * log_volume
        return _likelihood(log_weight, mu, sigma)

    return Model(logp, {"beta": real(2), "sigma": positive()}, **options)


def nes1980_nes(data: dict, **options) -> Model:
    """``partyid7 ~ normal(beta[1] + beta[2] * real_ideo + beta[3] * race_adj + beta[4] *
    age30_44 + beta[5] * age45_64 + beta[6] * age65up + beta[7] * educ1 + beta[8] * gender
    + beta[9] * income, sigma)``, the ages indicators of ``age_discrete`` 2, 3, 4; flat
    priors. Written with the design matrix :math:`X` (a column of ones first)."""
    age = data["age_discrete"]
    columns = [
        np.ones(len(age)),
        data["real_ideo"],
        data["race_adj"],
        (age == 2).astype(float),
        (age == 3).astype(float),
        (age == 4).astype(float),
        data["educ1"],
        data["gender"],
        data["income"],
    ]
    x = np.stack(columns, axis=1)
    y = data["partyid7"]

    def logp(p):
        mu = anp.matmul(p["beta"], x.T)
        return _likelihood(y, mu, p["sigma"])

    return Model(logp, {"beta": real(9), "sigma": positive()}, **options)


def sblri_blr(data: dict, **options) -> Model:
    """``beta ~ normal(0, 10)``, ``sigma ~ normal(0, 10)`` on :math:`\\sigma > 0`,
    ``y ~ normal(X * beta, sigma)``."""
    x, y = data["X"], data["y"]

    def logp(p):
        beta, sigma = p["beta"], p["sigma"]
        prior = anp.sum(normal_lpdf(beta, 0.0, 10.0), axis=-1) + normal_lpdf(sigma, 0.0, 10.0)
        return prior + _likelihood(y, anp.matmul(beta, x.T), sigma)

    return Model(logp, {"beta": real(int(data["D"])), "sigma": positive()}, **options)


def kilpisjarvi_mod_kilpisjarvi(data: dict, **options) -> Model:
    """Scalar blocks: ``alpha ~ normal(pmualpha, psalpha)``, ``beta ~ normal(pmubeta,
    psbeta)``, ``y ~ normal(alpha + beta * x, sigma)``, flat ``sigma > 0``. ``x`` are
    years (1952 to 2013), uncentred as in the Stan program: :math:`\\alpha` and
    :math:`\\beta` are correlated almost to :math:`-1`."""
    x, y = data["x"], data["y"]
    prior_alpha = (float(data["pmualpha"]), float(data["psalpha"]))
    prior_beta = (float(data["pmubeta"]), float(data["psbeta"]))

    def logp(p):
        alpha, beta, sigma = p["alpha"], p["beta"], p["sigma"]
        prior = normal_lpdf(alpha, *prior_alpha) + normal_lpdf(beta, *prior_beta)
        mu = alpha[..., None] + beta[..., None] * x
        return prior + _likelihood(y, mu, sigma)

    return Model(logp, {"alpha": real(), "beta": real(), "sigma": positive()}, **options)
