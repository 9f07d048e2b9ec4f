"""The compiled log density of the fully connected regression network
(:class:`hamiltonia.targets.mlp.MLPRegression`; imports numba, so it is loaded only when the
compiled path asks for it).

Layout
------
``q`` = :math:`(W_1, b_1, \\dots, W_{L+1}, b_{L+1})`, each :math:`W_l` of shape
``(n_{l-1}, n_l)`` stored input-major (:math:`w_{ij}` at ``offset + i * n_l + j``), with
:math:`n_0 = d` and :math:`n_{L+1} = 1`.

``fdata`` = [noise precision :math:`\\tau`, prior precision :math:`1/s^2`, X (``n * d``,
row-major), y (``n``)].

``idata`` = [n, d, L, block, activation (0: tanh, 1: ReLU), n_1 .. n_L]; the split kernel's
``idata`` is [component, M, r_0 .. r_M, *that*] (:func:`hamiltonia.targets.split.component_idata`).

The rows are processed in blocks of ``block`` rows, so the scratch memory is
``O(block * sum(n_l))`` whatever the number of rows. Within a block each layer is three
matrix products (forward :math:`H W`, weight gradient :math:`H^\\top \\Delta`, back-propagated
error :math:`\\Delta W^\\top`), written as loops whose innermost loop runs along contiguous
memory (so it vectorises) and whose next loop is unrolled by four (each load of a row serves
four rows or four outputs): 10-16 GFLOP/s on one core at the paper's width. They are not
``np.dot``, which numba hands to BLAS: OpenBLAS's own threads, called from the compiled
plan's chain threads, contend for the cores. Measured at 1 → 100 → 100 → 1 on 400 rows
(a shared two-core machine): 0.9 ms per gradient with one BLAS thread, 4.5 ms with
OpenBLAS's default threads, and 115 ms per gradient when two chains call it at once; the
loops take about 2 ms, and two chains run side by side. The tanh goes through the vectorisable
:func:`~hamiltonia.modelling.special.exp_nonpositive`,
:math:`\\tanh z = \\operatorname{sign}(z)\\,(1 - e)/(1 + e)`, :math:`e = e^{-2|z|}`
(absolute error of a few 1e-16), as in :mod:`hamiltonia.targets.bnn_kernel`.
"""

import math

import numpy as np
from numba import njit

from hamiltonia import _numba_cache
from hamiltonia.compiled.compose import SAFE_FASTMATH
from hamiltonia.modelling.special import exp_nonpositive

# The row functions are cached in the package's cache folder, not inside the package.
_numba_cache.install()

__all__ = [
    "ACTIVATION_CODES",
    "KERNEL_BLOCK",
    "mlp_log_prob",
    "mlp_rows",
    "mlp_split_log_prob",
]

#: Rows per block of the compiled kernel (at most; see ``MLPRegression._kernel_sizes``).
KERNEL_BLOCK = 256

#: The activation as the kernel reads it from ``idata[4]``.
ACTIVATION_CODES = {"tanh": 0, "relu": 1}


def mlp_log_prob(q, grad, fdata, idata):
    """Compiled log posterior of :class:`~hamiltonia.targets.mlp.MLPRegression` (all rows)."""
    return mlp_rows(q, grad, 0, idata[0], 1.0, fdata, idata)


def mlp_split_log_prob(q, grad, fdata, idata):
    """The same density split into components over its rows
    (:mod:`hamiltonia.targets.split`): ``idata`` = [component, M, r_0 .. r_M, n, d, L, block,
    activation, n_1 .. n_L]; component ``m`` is the log likelihood of rows
    ``[r_m, r_{m+1})`` plus ``1/M`` of the log prior, ``-1`` the whole density."""
    m, n_splits = idata[0], idata[1]
    base = idata[3 + n_splits :]
    if m < 0:
        return mlp_rows(q, grad, 0, base[0], 1.0, fdata, base)
    return mlp_rows(q, grad, idata[2 + m], idata[3 + m], 1.0 / n_splits, fdata, base)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=set(SAFE_FASTMATH))
def _matmul(a, b, out):
    # out (m, n) = a (m, k) b (k, n), four rows of a at a time: each row of b is loaded once
    # for four rows of out, and the inner loop runs along the rows of b and out.
    m, k = a.shape
    n = b.shape[1]
    i = 0
    while i + 4 <= m:
        for j in range(n):
            out[i, j] = 0.0
            out[i + 1, j] = 0.0
            out[i + 2, j] = 0.0
            out[i + 3, j] = 0.0
        for p in range(k):
            a0, a1, a2, a3 = a[i, p], a[i + 1, p], a[i + 2, p], a[i + 3, p]
            for j in range(n):
                bj = b[p, j]
                out[i, j] += a0 * bj
                out[i + 1, j] += a1 * bj
                out[i + 2, j] += a2 * bj
                out[i + 3, j] += a3 * bj
        i += 4
    for r in range(i, m):
        for j in range(n):
            out[r, j] = 0.0
        for p in range(k):
            a0 = a[r, p]
            for j in range(n):
                out[r, j] += a0 * b[p, j]


@njit(cache=True, nogil=True, error_model="numpy", fastmath=set(SAFE_FASTMATH))
def _matmul_tn(a, b, out):
    # out (k, n) = a (m, k)^T b (m, n): rank-one updates of four rows of a and b at a time.
    m, k = a.shape
    n = b.shape[1]
    for p in range(k):
        for j in range(n):
            out[p, j] = 0.0
    i = 0
    while i + 4 <= m:
        for p in range(k):
            a0, a1, a2, a3 = a[i, p], a[i + 1, p], a[i + 2, p], a[i + 3, p]
            for j in range(n):
                out[p, j] += a0 * b[i, j] + a1 * b[i + 1, j] + a2 * b[i + 2, j] + a3 * b[i + 3, j]
        i += 4
    for r in range(i, m):
        for p in range(k):
            a0 = a[r, p]
            for j in range(n):
                out[p, j] += a0 * b[r, j]


@njit(cache=True, nogil=True, error_model="numpy", fastmath=set(SAFE_FASTMATH))
def _matmul_nt(a, b, out):
    # out (m, k) = a (m, n) b (k, n)^T: dot products along the rows, four outputs per load
    # of a row of a.
    m, n = a.shape
    k = b.shape[0]
    for i in range(m):
        p = 0
        while p + 4 <= k:
            s0 = s1 = s2 = s3 = 0.0
            for j in range(n):
                aij = a[i, j]
                s0 += aij * b[p, j]
                s1 += aij * b[p + 1, j]
                s2 += aij * b[p + 2, j]
                s3 += aij * b[p + 3, j]
            out[i, p], out[i, p + 1], out[i, p + 2], out[i, p + 3] = s0, s1, s2, s3
            p += 4
        for r in range(p, k):
            s = 0.0
            for j in range(n):
                s += a[i, j] * b[r, j]
            out[i, r] = s


@njit(cache=True, nogil=True, error_model="numpy", fastmath=set(SAFE_FASTMATH))
def _activate(a, act, arg, ex, bits):
    # a (flat, in place): pre-activations -> activations.
    m = a.shape[0]
    if act == 1:
        for k in range(m):
            a[k] = max(a[k], 0.0)
        return
    for k in range(m):
        arg[k] = -2.0 * abs(a[k])
    exp_nonpositive(arg[:m], ex[:m], bits[:m])
    for k in range(m):
        e = ex[k]
        a[k] = math.copysign((1.0 - e) / (1.0 + e), a[k])


@njit(cache=True, nogil=True, error_model="numpy", fastmath=set(SAFE_FASTMATH))
def _times_derivative(delta, h, act):
    # delta (flat, in place) *= phi'(z), written with the activation h = phi(z):
    # 1 - h^2 for tanh, [h > 0] for ReLU.
    if act == 1:
        for k in range(delta.shape[0]):
            if h[k] <= 0.0:
                delta[k] = 0.0
        return
    for k in range(delta.shape[0]):
        delta[k] *= 1.0 - h[k] * h[k]


@njit(cache=True, nogil=True, error_model="numpy", fastmath=set(SAFE_FASTMATH))
def mlp_rows(q, grad, row_start, row_stop, prior_share, fdata, idata):
    """:math:`\\sum_{i \\in [a, b)} \\ell_i(\\theta) + s \\log p(\\theta)` and its gradient
    (into ``grad``) for the rows ``[row_start, row_stop)`` and prior share ``s``: the maths
    of both kernels above, written once (layout in the module docstring)."""
    n, d, n_hidden, bsize, act = idata[0], idata[1], idata[2], idata[3], idata[4]
    n_layers = n_hidden + 1
    tau = fdata[0]
    prior_prec = fdata[1] * prior_share
    x0 = 2
    y0 = 2 + n * d
    # Sizes and offsets of each layer: inputs n_in[l], outputs n_out[l], weights at w_off[l],
    # biases at b_off[l]; activations of hidden layer l at a_off[l] of the scratch `acts`.
    n_in = np.empty(n_layers, np.int64)
    n_out = np.empty(n_layers, np.int64)
    w_off = np.empty(n_layers, np.int64)
    b_off = np.empty(n_layers, np.int64)
    a_off = np.zeros(n_layers, np.int64)
    off = 0
    a_total = 0
    widest = 1
    weights = 1
    for layer in range(n_layers):
        n_in[layer] = d if layer == 0 else idata[4 + layer]
        n_out[layer] = 1 if layer == n_hidden else idata[5 + layer]
        w_off[layer] = off
        b_off[layer] = off + n_in[layer] * n_out[layer]
        off = b_off[layer] + n_out[layer]
        if layer < n_hidden:
            a_off[layer] = a_total
            a_total += bsize * n_out[layer]
            widest = max(widest, n_out[layer])
        weights = max(weights, n_in[layer] * n_out[layer])
    dim = off
    acts = np.empty(max(a_total, 1))
    delta = np.empty(bsize * widest)
    delta_next = np.empty(bsize * widest)
    arg = np.empty(bsize * widest)
    ex = np.empty(bsize * widest)
    bits = np.empty(bsize * widest, dtype=np.int64)
    gbuf = np.empty(weights)
    fbuf = np.empty(bsize)
    rbuf = np.empty(bsize)
    for k in range(dim):
        grad[k] = 0.0
    sse = 0.0
    out = n_hidden  # the output layer
    h_last = n_out[n_hidden - 1]
    for start in range(row_start, row_stop, bsize):
        nb = min(bsize, row_stop - start)
        xb = fdata[x0 + start * d : x0 + (start + nb) * d].reshape((nb, d))
        # forward: H_l = phi(H_{l-1} W_l + b_l), H_0 = X
        h_prev = xb
        for layer in range(n_hidden):
            ni, no = n_in[layer], n_out[layer]
            flat = acts[a_off[layer] : a_off[layer] + nb * no]
            h = flat.reshape((nb, no))
            w = q[w_off[layer] : w_off[layer] + ni * no].reshape((ni, no))
            _matmul(h_prev, w, h)
            b0 = b_off[layer]
            for i in range(nb):
                for j in range(no):
                    h[i, j] += q[b0 + j]
            _activate(flat, act, arg, ex, bits)
            h_prev = h
        # output f = H_L w + b and residuals r = tau (y - f)
        w_out = q[w_off[out] : w_off[out] + h_last].reshape((h_last, 1))
        f = fbuf[:nb].reshape((nb, 1))
        _matmul(h_prev, w_out, f)
        b_last = q[b_off[out]]
        r_sum = 0.0
        for i in range(nb):
            e = fdata[y0 + start + i] - (fbuf[i] + b_last)
            sse += e * e
            rbuf[i] = tau * e
            r_sum += rbuf[i]
        grad[b_off[out]] += r_sum
        r = rbuf[:nb].reshape((nb, 1))
        g_out = gbuf[:h_last].reshape((h_last, 1))
        _matmul_tn(h_prev, r, g_out)
        for k in range(h_last):
            grad[w_off[out] + k] += gbuf[k]
        # backward: delta_L = (r w^T) * phi'(Z_L); grad W_l = H_{l-1}^T delta_l,
        # grad b_l = 1^T delta_l, delta_{l-1} = (delta_l W_l^T) * phi'(Z_{l-1})
        for i in range(nb):
            for k in range(h_last):
                delta[i * h_last + k] = rbuf[i] * q[w_off[out] + k]
        top = n_hidden - 1
        _times_derivative(delta[: nb * h_last], acts[a_off[top] : a_off[top] + nb * h_last], act)
        for layer in range(n_hidden - 1, -1, -1):
            ni, no = n_in[layer], n_out[layer]
            dl = delta[: nb * no].reshape((nb, no))
            if layer == 0:
                h_below = xb
            else:
                h_below = acts[a_off[layer - 1] : a_off[layer - 1] + nb * ni].reshape((nb, ni))
            g = gbuf[: ni * no].reshape((ni, no))
            _matmul_tn(h_below, dl, g)
            w0 = w_off[layer]
            for k in range(ni * no):
                grad[w0 + k] += gbuf[k]
            b0 = b_off[layer]
            for i in range(nb):
                for j in range(no):
                    grad[b0 + j] += dl[i, j]
            if layer > 0:
                w = q[w0 : w0 + ni * no].reshape((ni, no))
                dn = delta_next[: nb * ni].reshape((nb, ni))
                _matmul_nt(dl, w, dn)
                below = acts[a_off[layer - 1] : a_off[layer - 1] + nb * ni]
                _times_derivative(delta_next[: nb * ni], below, act)
                delta, delta_next = delta_next, delta
    ss = 0.0
    for k in range(dim):
        ss += q[k] * q[k]
        grad[k] -= prior_prec * q[k]
    return -0.5 * tau * sse - 0.5 * prior_prec * ss
