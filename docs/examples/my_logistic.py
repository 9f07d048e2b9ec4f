"""my_logistic.py: logistic regression without intercept, with a compiled kernel.

The kernel is a module-level function in a file: numba caches compiled code next to the
source file, and cannot cache a function that has none.
"""

import math

import numpy as np

import hamiltonia as hm
from hamiltonia.compiled import NumbaTarget


def logistic_kernel(q, grad_out, fdata, idata):
    """Log posterior and its gradient, for the compiled path.

    fdata = [prior precision, y (n values), X (n x d, row-major)], idata = [n, d].
    """
    n, d = idata[0], idata[1]
    prec = fdata[0]
    lp = 0.0
    for j in range(d):
        grad_out[j] = -prec * q[j]
        lp -= 0.5 * prec * q[j] * q[j]
    for i in range(n):
        row = 1 + n + i * d
        z = 0.0
        for j in range(d):
            z += fdata[row + j] * q[j]
        e = math.exp(-abs(z))  # <= 1: no overflow
        lp += fdata[1 + i] * z - (max(z, 0.0) + math.log1p(e))  # y z - log(1 + e^z)
        sigmoid = 1.0 / (1.0 + e) if z >= 0.0 else e / (1.0 + e)
        r = fdata[1 + i] - sigmoid
        for j in range(d):
            grad_out[j] += fdata[row + j] * r
    return lp


class Logistic(hm.Target):
    """y_i ~ Bernoulli(sigmoid(x_i . w)), w ~ N(0, prior_scale^2 I)."""

    def __init__(self, X, y, prior_scale=1.0):
        self.X = np.asarray(X, dtype=float)
        self.y = np.asarray(y, dtype=float)
        self.prec = 1.0 / prior_scale**2
        super().__init__(self.X.shape[1], [f"w{j + 1}" for j in range(self.X.shape[1])])

    def log_prob_and_grad(self, x):
        # The NumPy path: any batch shape (..., d).
        x = np.asarray(x, dtype=float)
        z = x @ self.X.T
        prior = 0.5 * self.prec * np.sum(x * x, axis=-1)
        lp = z @ self.y - np.sum(np.logaddexp(0.0, z), axis=-1) - prior
        sigmoid = np.exp(-np.logaddexp(0.0, -z))
        return lp, (self.y - sigmoid) @ self.X - self.prec * x

    def numba_kernel(self):
        # The compiled path: the data flattened into one float and one integer array.
        fdata = np.concatenate([[self.prec], self.y, self.X.ravel()])
        return NumbaTarget.build(logistic_kernel, fdata, [len(self.y), self.dim])
