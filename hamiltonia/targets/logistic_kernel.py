"""The compiled log density of Bayesian logistic regression (imports numba, so it is loaded
only when the compiled path asks for it)."""

import numpy as np

from hamiltonia.modelling.special import softplus_sigmoid

__all__ = ["logistic_log_prob"]

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
    n, d = idata[0], idata[1]
    prec = fdata[0]
    y = fdata[1 : 1 + n]
    x = fdata[1 + n : 1 + n + n * d].reshape((d, n))
    work = np.empty(4 * n)
    z = work[:n]
    softplus = work[n : 2 * n]
    residual = work[2 * n : 3 * n]
    bits = np.empty(n, np.int64)
    for i in range(n):
        z[i] = 0.0
    j = 0
    while j + _COLUMNS_PER_PASS <= d:
        x0, x1, x2, x3 = x[j], x[j + 1], x[j + 2], x[j + 3]
        q0, q1, q2, q3 = q[j], q[j + 1], q[j + 2], q[j + 3]
        for i in range(n):
            z[i] += x0[i] * q0 + x1[i] * q1 + x2[i] * q2 + x3[i] * q3
        j += _COLUMNS_PER_PASS
    for k in range(j, d):
        xk, qk = x[k], q[k]
        for i in range(n):
            z[i] += xk[i] * qk
    softplus_sigmoid(z, softplus, residual, work[3 * n :], bits)
    lp = 0.0
    for i in range(n):
        lp += y[i] * z[i] - softplus[i]
        residual[i] = y[i] - residual[i]
    j = 0
    while j + _COLUMNS_PER_PASS <= d:
        x0, x1, x2, x3 = x[j], x[j + 1], x[j + 2], x[j + 3]
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
        xk = x[k]
        s = 0.0
        for i in range(n):
            s += xk[i] * residual[i]
        grad[k] = s
    for k in range(d):
        grad[k] -= prec * q[k]
        lp -= 0.5 * prec * q[k] * q[k]
    return lp
