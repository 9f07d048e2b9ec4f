"""The compiled log density of Bayesian logistic regression (imports numba, so it is loaded
only when the compiled path asks for it)."""

import math

import numpy as np
from numba import njit

from hamiltonia import _numba_cache
from hamiltonia.compiled.compose import SAFE_FASTMATH
from hamiltonia.modelling.special import softplus_sigmoid

# The row functions are cached in the package's cache folder, not inside the package.
_numba_cache.install()

__all__ = ["device_log_prob", "logistic_log_prob", "logistic_rows", "logistic_split_log_prob"]

#: Columns of the design matrix combined in one pass over the rows.
_COLUMNS_PER_PASS = 4


def logistic_log_prob(q, grad, fdata, idata):
    """Compiled log posterior of :class:`LogisticRegression`.

    ``fdata`` = [prior precision, y (N), X (D x N row-major, i.e. the design matrix stored
    column by column)], ``idata`` = [N, D].

    The design matrix is stored by columns because both products,
    :math:`z = Xw` and :math:`X^\\top (y - \\sigma(z))`, then run along the long axis
    (the rows), where they vectorise; four columns share each pass over the rows, so the
    row-length arrays are read a quarter as often. The link functions go through
    :func:`hamiltonia.modelling.special.softplus_sigmoid`, which vectorises (the scalar
    ``exp``/``log1p`` would dominate the cost).
    """
    return logistic_rows(q, grad, 0, idata[0], 1.0, fdata, idata)


def logistic_split_log_prob(q, grad, fdata, idata):
    """The same density split into components over its rows
    (:mod:`hamiltonia.targets.split`): ``idata`` = [component, M, r_0 .. r_M, N, D]."""
    m, n_splits = idata[0], idata[1]
    base = idata[3 + n_splits :]
    if m < 0:
        return logistic_rows(q, grad, 0, base[0], 1.0, fdata, base)
    return logistic_rows(q, grad, idata[2 + m], idata[3 + m], 1.0 / n_splits, fdata, base)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=set(SAFE_FASTMATH))
def logistic_rows(q, grad, start, stop, prior_share, fdata, idata):
    """:math:`\\sum_{i \\in [a, b)} \\ell_i(w) + s \\log p(w)` and its gradient (into
    ``grad``) for the rows ``[start, stop)`` and prior share ``s``: the maths of both kernels
    above, written once."""
    n_all, d = idata[0], idata[1]
    n = stop - start
    prec = fdata[0] * prior_share
    y = fdata[1 + start : 1 + stop]
    # Column j's rows [start, stop): a contiguous slice, as the loops below vectorise.
    c0 = 1 + n_all + start
    work = np.empty(4 * n)
    z = work[:n]
    softplus = work[n : 2 * n]
    residual = work[2 * n : 3 * n]
    bits = np.empty(n, np.int64)
    for i in range(n):
        z[i] = 0.0
    j = 0
    while j + _COLUMNS_PER_PASS <= d:
        a0 = c0 + j * n_all
        x0 = fdata[a0 : a0 + n]
        x1 = fdata[a0 + n_all : a0 + n_all + n]
        x2 = fdata[a0 + 2 * n_all : a0 + 2 * n_all + n]
        x3 = fdata[a0 + 3 * n_all : a0 + 3 * n_all + n]
        q0, q1, q2, q3 = q[j], q[j + 1], q[j + 2], q[j + 3]
        for i in range(n):
            z[i] += x0[i] * q0 + x1[i] * q1 + x2[i] * q2 + x3[i] * q3
        j += _COLUMNS_PER_PASS
    for k in range(j, d):
        xk, qk = fdata[c0 + k * n_all : c0 + k * n_all + n], q[k]
        for i in range(n):
            z[i] += xk[i] * qk
    softplus_sigmoid(z, softplus, residual, work[3 * n :], bits)
    lp = 0.0
    for i in range(n):
        lp += y[i] * z[i] - softplus[i]
        residual[i] = y[i] - residual[i]
    j = 0
    while j + _COLUMNS_PER_PASS <= d:
        a0 = c0 + j * n_all
        x0 = fdata[a0 : a0 + n]
        x1 = fdata[a0 + n_all : a0 + n_all + n]
        x2 = fdata[a0 + 2 * n_all : a0 + 2 * n_all + n]
        x3 = fdata[a0 + 3 * n_all : a0 + 3 * n_all + n]
        s0 = s1 = s2 = s3 = 0.0
        for i in range(n):
            r = residual[i]
            s0 += x0[i] * r
            s1 += x1[i] * r
            s2 += x2[i] * r
            s3 += x3[i] * r
        grad[j], grad[j + 1], grad[j + 2], grad[j + 3] = s0, s1, s2, s3
        j += _COLUMNS_PER_PASS
    for k in range(j, d):
        xk = fdata[c0 + k * n_all : c0 + k * n_all + n]
        s = 0.0
        for i in range(n):
            s += xk[i] * residual[i]
        grad[k] = s
    for k in range(d):
        grad[k] -= prec * q[k]
        lp -= 0.5 * prec * q[k] * q[k]
    return lp


def device_log_prob(q, grad, fdata, idata):
    r"""The log posterior of :func:`logistic_log_prob` for the fused device chain
    (:mod:`hamiltonia.compiled.device_chain`), one chain a GPU thread.

    .. math::

        \log p(w \mid y) = \sum_i \bigl(y_i z_i - \log(1 + e^{z_i})\bigr)
        - \tfrac{\lambda}{2} \lVert w \rVert^2, \qquad
        \nabla = \sum_i \bigl(y_i - \sigma(z_i)\bigr) x_i - \lambda w,
        \qquad z_i = x_i^\top w.

    A second form of the same maths, for a reason: the CPU form runs each product along the
    rows through work arrays, so that its softplus vectorises, and a GPU thread cannot
    allocate them. Here a row is taken whole (its :math:`z_i`, then its share of the
    gradient), in scalars; every thread reads the same row at the same time, which the
    GPU serves as one read. The test-suite checks the two forms against each other.
    """
    n, d = idata[0], idata[1]
    prec = fdata[0]
    lp = 0.0
    for k in range(d):
        grad[k] = -prec * q[k]
        lp -= 0.5 * prec * q[k] * q[k]
    for i in range(n):
        z = 0.0
        for k in range(d):
            z += fdata[1 + n + k * n + i] * q[k]
        e = math.exp(-abs(z))
        inv = 1.0 / (1.0 + e)
        lp += fdata[1 + i] * z - (max(z, 0.0) + math.log1p(e))
        residual = fdata[1 + i] - (inv if z >= 0.0 else e * inv)
        for k in range(d):
            grad[k] += fdata[1 + n + k * n + i] * residual
    return lp
