"""numba kernels of the compiled path.

One call of :func:`hmc_chunk` runs ``n_iter`` iterations of one chain of static-length HMC
(momentum refresh, leapfrog trajectory, Metropolis test, optional dual averaging of the step
size) and writes the draws and statistics into caller-provided buffers. The per-iteration
order of random draws is that of the NumPy path: ``dim`` standard normals for the momentum,
then one uniform for the accept test.

Metric kinds: 0 identity, 1 diagonal (``minv_diag`` and ``mass_sqrt`` =
:math:`1/\\sqrt{m}`, the scale of the momentum draws), 2 dense (``minv_dense`` with its lower
Cholesky factor ``chol``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

MAX_ENERGY_ERROR = 1000.0

# Columns of the float statistics buffer.
ACCEPTED, ACCEPT_PROB, DIVERGING, ENERGY, LOG_PROB, STEP_SIZE, N_GRAD = range(7)
N_STATS = 7

#: NaN-safe fast-math: reassociation lets LLVM vectorise the sums; no flag that assumes
#: finite values ('nnan', 'ninf', 'nsz'), which would delete the divergence checks
#: (spec/numba_notes.md §7.2).
SAFE_FASTMATH = {"reassoc", "contract", "arcp"}
_OPTS = {"cache": True, "nogil": True, "error_model": "numpy", "fastmath": SAFE_FASTMATH}


@njit(**_OPTS)
def _velocity(p, out, kind, minv_diag, minv_dense):
    d = p.shape[0]
    if kind == 0:
        for i in range(d):
            out[i] = p[i]
    elif kind == 1:
        for i in range(d):
            out[i] = minv_diag[i] * p[i]
    else:
        for i in range(d):
            s = 0.0
            for j in range(d):
                s += minv_dense[i, j] * p[j]
            out[i] = s


@njit(**_OPTS)
def _kinetic(p, v):
    s = 0.0
    for i in range(p.shape[0]):
        s += p[i] * v[i]
    return 0.5 * s


@njit(**_OPTS)
def _draw_momentum(rng, p, kind, mass_sqrt, chol):
    d = p.shape[0]
    for i in range(d):
        p[i] = rng.standard_normal()
    if kind == 1:
        for i in range(d):
            p[i] = p[i] * mass_sqrt[i]
    elif kind == 2:
        # Solve L^T p = z by back substitution (M^{-1} = L L^T, so cov(p) = M).
        for i in range(d - 1, -1, -1):
            s = p[i]
            for j in range(i + 1, d):
                s -= chol[j, i] * p[j]
            p[i] = s / chol[i, i]


@njit(**_OPTS)
def _leapfrog(q, p, grad, v, eps, n_steps, kind, minv_diag, minv_dense, logp, fdata, idata):
    """In place; returns (log_prob, gradient evaluations made). Stops early once the state is
    no longer finite (the proposal will be rejected)."""
    d = q.shape[0]
    lp = 0.0
    for i in range(d):
        p[i] += 0.5 * eps * grad[i]
    for step in range(n_steps):
        # x - x is 0 for finite x and nan otherwise: the checks ride along the updates.
        check = 0.0
        if kind == 0:
            for i in range(d):
                q[i] += eps * p[i]
                check += q[i] - q[i]
        elif kind == 1:
            for i in range(d):
                q[i] += eps * (minv_diag[i] * p[i])
                check += q[i] - q[i]
        else:
            _velocity(p, v, kind, minv_diag, minv_dense)
            for i in range(d):
                q[i] += eps * v[i]
                check += q[i] - q[i]
        lp = logp(q, grad, fdata, idata)
        scale = eps if step < n_steps - 1 else 0.5 * eps
        for i in range(d):
            p[i] += scale * grad[i]
            check += grad[i] - grad[i]
        if not (math.isfinite(lp) and check == 0.0):
            return math.nan, step + 1
    return lp, n_steps


@njit(**_OPTS)
def hmc_chunk(
    q, state_lp, grad, step_size, rng, n_iter, n_steps, jitter,
    kind, minv_diag, minv_dense, chol, mass_sqrt,
    logp, fdata, idata,
    adapt, da_state, da_params,
    out_q, out_stats,
):  # fmt: skip
    """Run ``n_iter`` HMC iterations of one chain, in place.

    ``q``, ``grad`` (dim,), ``state_lp`` (1,) and ``step_size`` (1,) hold the chain's state
    and are updated. With ``adapt``, ``da_state`` = (mu, h_bar, log_eps_bar, m) is updated by
    dual averaging with ``da_params`` = (target_accept, gamma, t0, kappa) after every
    iteration, exactly as :class:`hamiltonia.tuners.DualAveraging` does.
    """
    d = q.shape[0]
    p = np.empty(d)
    v = np.empty(d)
    q1 = np.empty(d)
    p1 = np.empty(d)
    g1 = np.empty(d)
    for it in range(n_iter):
        _draw_momentum(rng, p, kind, mass_sqrt, chol)
        eps = step_size[0]
        if jitter > 0.0:
            eps = eps * (1.0 + jitter * (2.0 * rng.random() - 1.0))
        _velocity(p, v, kind, minv_diag, minv_dense)
        h0 = -state_lp[0] + _kinetic(p, v)
        for i in range(d):
            q1[i] = q[i]
            p1[i] = p[i]
            g1[i] = grad[i]
        lp1, n_grad = _leapfrog(
            q1, p1, g1, v, eps, n_steps, kind, minv_diag, minv_dense, logp, fdata, idata
        )
        ok = math.isfinite(lp1)
        h1 = math.nan
        prob = 0.0
        if ok:
            _velocity(p1, v, kind, minv_diag, minv_dense)
            h1 = -lp1 + _kinetic(p1, v)
            delta = h1 - h0
            ok = math.isfinite(delta)
            if ok:
                prob = min(1.0, math.exp(-delta))
        diverging = (not ok) or (h1 - h0 > MAX_ENERGY_ERROR)
        u = rng.random()
        accepted = ok and u < prob
        if accepted:
            for i in range(d):
                q[i] = q1[i]
                grad[i] = g1[i]
            state_lp[0] = lp1
        if adapt:
            alpha = 0.0 if diverging else prob
            m = da_state[3] + 1.0
            w = 1.0 / (m + da_params[2])
            h_bar = (1.0 - w) * da_state[1] + w * (da_params[0] - alpha)
            log_eps = da_state[0] - math.sqrt(m) / da_params[1] * h_bar
            eta = m ** (-da_params[3])
            da_state[2] = eta * log_eps + (1.0 - eta) * da_state[2]
            da_state[1] = h_bar
            da_state[3] = m
            step_size[0] = math.exp(log_eps)
        for i in range(d):
            out_q[it, i] = q[i]
        out_stats[it, ACCEPTED] = 1.0 if accepted else 0.0
        out_stats[it, ACCEPT_PROB] = prob
        out_stats[it, DIVERGING] = 1.0 if diverging else 0.0
        out_stats[it, ENERGY] = h1 if accepted else h0
        out_stats[it, LOG_PROB] = state_lp[0]
        out_stats[it, STEP_SIZE] = step_size[0]
        out_stats[it, N_GRAD] = n_grad
