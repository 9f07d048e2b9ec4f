"""The compiled log density of the linear regression (imports numba, so it is loaded only when
the compiled path asks for it)."""

from numba import njit

from hamiltonia import _numba_cache
from hamiltonia.compiled.compose import SAFE_FASTMATH

# The row functions are cached in the package's cache folder, not inside the package.
_numba_cache.install()

__all__ = ["linear_log_prob", "linear_rows", "linear_split_log_prob"]


def linear_log_prob(q, grad, fdata, idata):
    """Compiled log posterior of :class:`~hamiltonia.targets.linear.LinearRegression`:
    ``fdata`` = [noise precision, prior precision, y (N), X (N x p, row-major)],
    ``idata`` = [N, p]."""
    return linear_rows(q, grad, 0, idata[0], 1.0, fdata, idata)


def linear_split_log_prob(q, grad, fdata, idata):
    """The same density split into components over its rows
    (:mod:`hamiltonia.targets.split`): ``idata`` = [component, M, r_0 .. r_M, N, p]."""
    m, n_splits = idata[0], idata[1]
    base = idata[3 + n_splits :]
    if m < 0:
        return linear_rows(q, grad, 0, base[0], 1.0, fdata, base)
    return linear_rows(q, grad, idata[2 + m], idata[3 + m], 1.0 / n_splits, fdata, base)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=set(SAFE_FASTMATH))
def linear_rows(q, grad, start, stop, prior_share, fdata, idata):
    # The log likelihood of rows [start, stop) plus prior_share of the log prior, and its
    # gradient: the maths of both kernels above, written once.
    n, d = idata[0], idata[1]
    noise_prec, prec = fdata[0], fdata[1] * prior_share
    y0 = 2
    x0 = 2 + n
    for k in range(d):
        grad[k] = 0.0
    sse = 0.0
    for i in range(start, stop):
        row = x0 + i * d
        f = 0.0
        for k in range(d):
            f += fdata[row + k] * q[k]
        e = fdata[y0 + i] - f
        sse += e * e
        r = noise_prec * e
        for k in range(d):
            grad[k] += r * fdata[row + k]
    ss = 0.0
    for k in range(d):
        ss += q[k] * q[k]
        grad[k] -= prec * q[k]
    return -0.5 * noise_prec * sse - 0.5 * prec * ss
