"""The compiled log density of the SIR / SEIR change-point models and its exact gradient.

One function serves all six models (``idata`` says SIR or SEIR and how many change
points): a forward pass (spreading rate per day, the day's mean of the continuous-time
ramps, the discrete daily recursion, the reporting
delay by linear interpolation, the Student-t likelihood) and a hand-written reverse-mode
adjoint of the same steps, in numba. It works in the sampler's unconstrained coordinates
``z`` (``x = exp(z)`` for the positive parameters, with the log-Jacobian ``z`` added), in the
order of the model's blocks (:mod:`hamiltonia_epidemics.model`).

``fdata = [N, mean of t1, mean of t2, y_0 .. y_{T-1}]``;
``idata = [seir (0/1), change points k, T (observed days), L (days simulated before the
first observed day)]``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["PRIORS", "batch_log_prob_and_grad", "epidemic_kernel", "log_prob_and_grad_z"]

#: Table 6.1 (LogNormal(log median, sigma)), Dehning et al.'s transient length and
#: observation noise, and the change points' standard deviation (days).
PRIORS = {
    "lambda_median": 0.4,
    "lambda_sigma": (0.5, 0.7, 0.7),
    "sigma_median": 1.0 / 5.0,
    "sigma_sigma": 0.5,
    "mu_median": 1.0 / 8.0,
    "mu_sigma": 0.2,
    "D_median": 8.0,
    "D_sigma": 0.2,
    "I0_scale": 20.0,
    "E0_scale": 20.0,
    "t_sd": 1.0,
    "transient_median": 3.0,
    "transient_sigma": 0.3,
    "sigma_obs_scale": 10.0,
    "nu": 4.0,
}

_LAM_LOGM = math.log(PRIORS["lambda_median"])
_LAM_SD1 = PRIORS["lambda_sigma"][0]
_LAM_SD2 = PRIORS["lambda_sigma"][1]
_SIG_LOGM = math.log(PRIORS["sigma_median"])
_SIG_SD = PRIORS["sigma_sigma"]
_MU_LOGM = math.log(PRIORS["mu_median"])
_MU_SD = PRIORS["mu_sigma"]
_D_LOGM = math.log(PRIORS["D_median"])
_D_SD = PRIORS["D_sigma"]
_HC_I0 = PRIORS["I0_scale"]
_HC_E0 = PRIORS["E0_scale"]
_T_SD = PRIORS["t_sd"]
_TR_LOGM = math.log(PRIORS["transient_median"])
_TR_SD = PRIORS["transient_sigma"]
_HC_OBS = PRIORS["sigma_obs_scale"]
_NU = PRIORS["nu"]
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_2_OVER_PI = math.log(2.0 / math.pi)
_T_CONST = math.lgamma((_NU + 1.0) / 2.0) - math.lgamma(_NU / 2.0) - 0.5 * math.log(_NU * math.pi)


@njit(cache=True)
def _lognormal_z(q, grad, i, logm, sd):
    """log N(z; log m, sd): a LogNormal(log m, sd) prior on exp(z) with its Jacobian."""
    d = q[i] - logm
    grad[i] += -d / (sd * sd)
    return -0.5 * d * d / (sd * sd) - math.log(sd) - _HALF_LOG_2PI


@njit(cache=True)
def _halfcauchy_z(q, grad, i, beta):
    """HalfCauchy(beta) on x = exp(z), with the Jacobian z."""
    x = math.exp(q[i])
    x2 = x * x
    grad[i] += 1.0 - 2.0 * x2 / (beta * beta + x2)
    return _LOG_2_OVER_PI - math.log(beta) - math.log1p(x2 / (beta * beta)) + q[i]


@njit(cache=True)
def _ramp_integral(u):
    """The integral of clip(v, 0, 1) from -inf to u."""
    if u <= 0.0:
        return 0.0
    if u >= 1.0:
        return u - 0.5
    return 0.5 * u * u


@njit(cache=True)
def _daily_ramp(tau, t, d):
    """The mean over day [tau, tau + 1] of the ramp clip((s - t) / d, 0, 1), and its
    derivatives in t and d."""
    a = (tau - t) / d
    b = (tau + 1.0 - t) / d
    ca = 0.0 if a <= 0.0 else (1.0 if a >= 1.0 else a)
    cb = 0.0 if b <= 0.0 else (1.0 if b >= 1.0 else b)
    ga = _ramp_integral(a)
    gb = _ramp_integral(b)
    return d * (gb - ga), -(cb - ca), gb - ga - b * cb + a * ca


@njit(cache=True)
def log_prob_and_grad_z(q, grad, fdata, idata):
    """Log density at the unconstrained point ``q``; its gradient is written to ``grad``.
    ``-inf`` where the model is not defined (a non-finite value on the way)."""
    seir = idata[0] != 0
    k = idata[1]
    T = idata[2]
    L = idata[3]
    n = L + T
    N = fdata[0]
    for i in range(q.shape[0]):
        grad[i] = 0.0
    # ---- indices of the blocks
    ilam = 0
    j = k + 1
    isig = -1
    if seir:
        isig = j
        j += 1
    imu = j
    iD = j + 1
    iI0 = j + 2
    j += 3
    iE0 = -1
    if seir:
        iE0 = j
        j += 1
    it = j
    j += k
    itr = j
    j += k
    iobs = j
    # ---- priors (in z)
    lp = 0.0
    for i in range(k + 1):
        lp += _lognormal_z(q, grad, ilam + i, _LAM_LOGM, _LAM_SD1 if i == 0 else _LAM_SD2)
    if seir:
        lp += _lognormal_z(q, grad, isig, _SIG_LOGM, _SIG_SD)
        lp += _halfcauchy_z(q, grad, iE0, _HC_E0)
    lp += _lognormal_z(q, grad, imu, _MU_LOGM, _MU_SD)
    lp += _lognormal_z(q, grad, iD, _D_LOGM, _D_SD)
    lp += _halfcauchy_z(q, grad, iI0, _HC_I0)
    for i in range(k):
        d = q[it + i] - fdata[1 + i]
        lp += -0.5 * d * d / (_T_SD * _T_SD) - math.log(_T_SD) - _HALF_LOG_2PI
        grad[it + i] += -d / (_T_SD * _T_SD)
        lp += _lognormal_z(q, grad, itr + i, _TR_LOGM, _TR_SD)
    lp += _halfcauchy_z(q, grad, iobs, _HC_OBS)
    # ---- parameters
    lam = np.empty(k + 1)
    for i in range(k + 1):
        lam[i] = math.exp(q[ilam + i])
    sig = math.exp(q[isig]) if seir else 0.0
    mu = math.exp(q[imu])
    D = math.exp(q[iD])
    I0 = math.exp(q[iI0])
    E0 = math.exp(q[iE0]) if seir else 0.0
    sobs = math.exp(q[iobs])
    tcp = np.empty(k)
    tr = np.empty(k)
    for i in range(k):
        tcp[i] = q[it + i]
        tr[i] = math.exp(q[itr + i])
    # ---- spreading rate per simulated day: the day's mean of linear ramps from t_i over
    # tr_i days (continuous in time)
    lam_s = np.empty(n)
    for s in range(n):
        tau = s - L
        v = lam[0]
        for i in range(k):
            r, _, _ = _daily_ramp(float(tau), tcp[i], tr[i])
            v += (lam[i + 1] - lam[i]) * r
        lam_s[s] = v
    # ---- discrete daily recursion
    S = np.empty(n + 1)
    E = np.empty(n + 1)
    I_ = np.empty(n + 1)
    x = np.empty(n)
    S[0] = N - I0 - E0
    E[0] = E0
    I_[0] = I0
    for s in range(n):
        f = lam_s[s] * S[s] * I_[s] / N
        if seir:
            g = sig * E[s]
            S[s + 1] = S[s] - f
            E[s + 1] = E[s] + f - g
            I_[s + 1] = I_[s] * (1.0 - mu) + g
            x[s] = g
        else:
            S[s + 1] = S[s] - f
            E[s + 1] = 0.0
            I_[s + 1] = I_[s] * (1.0 - mu) + f
            x[s] = f
    # ---- reporting delay (linear interpolation) and Student-t likelihood
    xbar = np.zeros(n)
    Dbar = 0.0
    obar = 0.0
    for jd in range(T):
        p = L + jd - D
        kk = math.floor(p)
        w = p - kk
        ik = int(kk)
        a = x[ik] if ik >= 0 else 0.0
        b = x[ik + 1] if ik + 1 >= 0 else 0.0
        C = (1.0 - w) * a + w * b
        c1 = C + 1.0
        if not c1 > 0.0:
            return -np.inf
        sc = sobs * math.sqrt(c1)
        r = (fdata[3 + jd] - C) / sc
        u = 1.0 + r * r / _NU
        lp += _T_CONST - math.log(sc) - 0.5 * (_NU + 1.0) * math.log(u)
        gr = -(_NU + 1.0) * r / (_NU * u)
        dC = -0.5 / c1 + gr * (-1.0 / sc - 0.5 * r / c1)
        obar += -1.0 / sobs - gr * r / sobs
        if ik >= 0:
            xbar[ik] += dC * (1.0 - w)
        if ik + 1 >= 0:
            xbar[ik + 1] += dC * w
        Dbar -= dC * (b - a)
    if not math.isfinite(lp):
        return -np.inf
    # ---- adjoint of the recursion
    Sb = 0.0
    Eb = 0.0
    Ib = 0.0
    mub = 0.0
    sigb = 0.0
    lamb_s = np.empty(n)
    for s in range(n - 1, -1, -1):
        if seir:
            gb = xbar[s] - Eb + Ib
            fb = -Sb + Eb
            sigb += gb * E[s]
            Eb_new = Eb + gb * sig
        else:
            fb = xbar[s] - Sb + Ib
            Eb_new = 0.0
        mub -= Ib * I_[s]
        lamb_s[s] = fb * S[s] * I_[s] / N
        Sb_new = Sb + fb * lam_s[s] * I_[s] / N
        Ib = Ib * (1.0 - mu) + fb * lam_s[s] * S[s] / N
        Sb = Sb_new
        Eb = Eb_new
    I0b = Ib - Sb
    E0b = Eb - Sb
    # ---- adjoint of the spreading rate
    lamb = np.zeros(k + 1)
    tb = np.zeros(k)
    trb = np.zeros(k)
    for s in range(n):
        tau = s - L
        lb = lamb_s[s]
        lamb[0] += lb
        for i in range(k):
            r, dr_dt, dr_dtr = _daily_ramp(float(tau), tcp[i], tr[i])
            lamb[i + 1] += lb * r
            lamb[i] -= lb * r
            dl = lb * (lam[i + 1] - lam[i])
            tb[i] += dl * dr_dt
            trb[i] += dl * dr_dtr
    # ---- to z
    for i in range(k + 1):
        grad[ilam + i] += lamb[i] * lam[i]
    if seir:
        grad[isig] += sigb * sig
        grad[iE0] += E0b * E0
    grad[imu] += mub * mu
    grad[iD] += Dbar * D
    grad[iI0] += I0b * I0
    for i in range(k):
        grad[it + i] += tb[i]
        grad[itr + i] += trb[i] * tr[i]
    grad[iobs] += obar * sobs
    for i in range(q.shape[0]):
        if not math.isfinite(grad[i]):
            return -np.inf
    return lp


def epidemic_kernel(q, grad, fdata, idata):
    """The compiled path's log density (``NumbaTarget.build`` signature)."""
    return log_prob_and_grad_z(q, grad, fdata, idata)


@njit(cache=True)
def batch_log_prob_and_grad(x, fdata, idata):
    """:func:`log_prob_and_grad_z` at each row of ``x`` ``(m, dim)``."""
    m = x.shape[0]
    lp = np.empty(m)
    grad = np.empty_like(x)
    for i in range(m):
        lp[i] = log_prob_and_grad_z(x[i], grad[i], fdata, idata)
    return lp, grad
