"""The compiled log density of Bayesian logistic regression (imports numba, so it is loaded
only when the compiled path asks for it)."""

import numpy as np

from hamiltonia.compiled.special import softplus_sigmoid

__all__ = ["logistic_log_prob"]


def logistic_log_prob(q, grad, fdata, idata):
    """Compiled log posterior of :class:`LogisticRegression`.

    ``fdata`` = [prior precision, y (N), Xt (N x D row-major)], ``idata`` = [N, D]. The link
    functions go through :func:`hamiltonia.compiled.special.softplus_sigmoid`, which
    vectorises (the scalar ``exp``/``log1p`` would dominate the cost).
    """
    n, d = idata[0], idata[1]
    prec = fdata[0]
    y = fdata[1 : 1 + n]
    xt = fdata[1 + n : 1 + n + n * d].reshape((n, d))
    z = np.empty(n)
    for i in range(n):
        s = 0.0
        for j in range(d):
            s += xt[i, j] * q[j]
        z[i] = s
    softplus = np.empty(n)
    sigmoid = np.empty(n)
    softplus_sigmoid(z, softplus, sigmoid, np.empty(n), np.empty(n, np.int64))
    lp = 0.0
    for j in range(d):
        grad[j] = -prec * q[j]
        lp -= 0.5 * prec * q[j] * q[j]
    for i in range(n):
        lp += y[i] * z[i] - softplus[i]
        r = y[i] - sigmoid[i]
        for j in range(d):
            grad[j] += xt[i, j] * r
    return lp
