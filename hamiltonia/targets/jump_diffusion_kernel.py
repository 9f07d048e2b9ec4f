"""The compiled log density of the Merton jump-diffusion in the default setting's log-scale
coordinates (:class:`hamiltonia.targets.jump_diffusion.MertonJumpDiffusion`; the paper
setting has no kernel).

``fdata`` = [tau, prior means (5), prior sds (5), returns (n)], ``idata`` = [n, n_terms]. The
maths is the class's: per return the log-sum-exp of the mixture's terms, shifted by the
largest, and the gradient as the mixture weights' average of the terms' gradients, plus the
normal priors. A plain Python function (numba is not imported here):
:meth:`hamiltonia.compiled.targets.NumbaTarget.build` compiles it, cached on disk.
"""

import math

import numpy as np

__all__ = ["jdp_log_prob"]


def jdp_log_prob(q, grad, fdata, idata):
    """Compiled log posterior of :class:`~hamiltonia.targets.jump_diffusion.MertonJumpDiffusion`
    and its gradient (written into ``grad``)."""
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
