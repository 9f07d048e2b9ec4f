"""The compiled log density of the Bayesian neural network (imports numba, so it is loaded
only when the compiled path asks for it)."""

import math

import numpy as np
from numba import njit

from hamiltonia import _numba_cache
from hamiltonia.compiled.compose import SAFE_FASTMATH
from hamiltonia.modelling.special import exp_nonpositive

# The row functions are cached in the package's cache folder, not inside the package.
_numba_cache.install()

__all__ = ["KERNEL_BLOCK", "bnn_log_prob", "bnn_rows", "bnn_split_log_prob"]

#: Rows per block of the compiled kernel.
KERNEL_BLOCK = 256


def bnn_log_prob(q, grad, fdata, idata):
    """Compiled log posterior of :class:`BayesianNeuralNetwork` (all rows)."""
    return bnn_rows(q, grad, 0, idata[0], 1.0, fdata, idata)


def bnn_split_log_prob(q, grad, fdata, idata):
    """The same density split into components over its rows
    (:mod:`hamiltonia.targets.split`): ``idata`` = [component, M, r_0 .. r_M, n, d, h,
    block]."""
    m, n_splits = idata[0], idata[1]
    base = idata[3 + n_splits :]
    if m < 0:
        return bnn_rows(q, grad, 0, base[0], 1.0, fdata, base)
    return bnn_rows(q, grad, idata[2 + m], idata[3 + m], 1.0 / n_splits, fdata, base)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=set(SAFE_FASTMATH))
def bnn_rows(q, grad, row_start, row_stop, prior_share, fdata, idata):
    # The log likelihood of rows [row_start, row_stop) plus prior_share of the log prior,
    # and its gradient: the maths of both kernels above, written once.
    # idata: n, d, h, block. fdata: noise precision, prior precision, X^T (d*n: column m of X
    # at 2 + m*n), y (n). q: W (d*h, feature-major: w_mj at m*h + j), a (h), v (h), b.
    # Rows are processed in blocks so that every inner loop runs over contiguous rows, and
    # tanh(z) = sign(z) (1 - e) / (1 + e) with e = exp(-2|z|) from the vectorisable
    # exp_nonpositive (absolute error of a few 1e-16;).
    n, d, h, bsize = idata[0], idata[1], idata[2], idata[3]
    noise_prec, prior_prec = fdata[0], fdata[1] * prior_share
    x0 = 2
    y0 = 2 + n * d
    ia = d * h
    iv = ia + h
    ib = iv + h
    dim = ib + 1
    work = np.empty((h, bsize))  # pre-activations, then tanh, then back-propagated errors
    res = np.empty(bsize)
    arg = np.zeros(bsize)  # stays <= 0 beyond the rows of a short last block
    ex = np.empty(bsize)
    bits = np.empty(bsize, dtype=np.int64)
    for k in range(dim):
        grad[k] = 0.0
    sse = 0.0
    for start in range(row_start, row_stop, bsize):
        nb = min(bsize, row_stop - start)
        # forward: work[j] = a_j + sum_m w_mj x_m, then tanh; res = f
        for i in range(nb):
            res[i] = q[ib]
        for j in range(h):
            aj = q[ia + j]
            vj = q[iv + j]
            for i in range(nb):
                work[j, i] = aj
            for m in range(d):
                w = q[m * h + j]
                col = x0 + m * n + start
                for i in range(nb):
                    work[j, i] += w * fdata[col + i]
            for i in range(nb):
                arg[i] = -2.0 * abs(work[j, i])
            exp_nonpositive(arg, ex, bits)
            for i in range(nb):
                e = ex[i]
                tj = math.copysign((1.0 - e) / (1.0 + e), work[j, i])
                work[j, i] = tj
                res[i] += vj * tj
        # residuals: res = (y - f) / sigma^2
        for i in range(nb):
            e = fdata[y0 + start + i] - res[i]
            sse += e * e
            res[i] = e * noise_prec
            grad[ib] += res[i]
        # backward
        for j in range(h):
            vj = q[iv + j]
            sv = 0.0
            sa = 0.0
            for i in range(nb):
                tj = work[j, i]
                sv += res[i] * tj
                g = res[i] * vj * (1.0 - tj * tj)
                work[j, i] = g
                sa += g
            grad[iv + j] += sv
            grad[ia + j] += sa
            for m in range(d):
                col = x0 + m * n + start
                s = 0.0
                for i in range(nb):
                    s += work[j, i] * fdata[col + i]
                grad[m * h + j] += s
    ss = 0.0
    for k in range(dim):
        ss += q[k] * q[k]
        grad[k] -= prior_prec * q[k]
    return -0.5 * noise_prec * sse - 0.5 * prior_prec * ss
