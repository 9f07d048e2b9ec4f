"""The compiled log density of the Bayesian neural network classifier
(:class:`~hamiltonia.targets.softmax_bnn.BNNClassifier`; imports numba, so it is loaded only
when the compiled path asks for it).

Data layout (flat arrays of :class:`~hamiltonia.compiled.NumbaTarget`):

* ``fdata`` = [prior precision :math:`1/s^2`, :math:`X^\\top` (``d * n``: column ``m`` of
  :math:`X` at ``1 + m * n``), labels :math:`y` (``n``, exact small integers stored as
  floats, so that ``idata`` stays a few sizes long: a split integrator copies ``idata``)];
* ``idata`` = [n, d, h, C, block];
* ``q`` = (:math:`W` (``d * h``, feature-major: :math:`w_{mj}` at ``m * h + j``), :math:`a`
  (``h``), :math:`V` (``h * C``, hidden-major: :math:`v_{jk}` at ``d * h + h + j * C + k``),
  :math:`b` (``C``)).
"""

import math

import numpy as np
from numba import njit

from hamiltonia import _numba_cache
from hamiltonia.compiled.compose import SAFE_FASTMATH
from hamiltonia.modelling.special import exp_nonpositive

# Before the decorator below: its cache goes to the cache folder, not into the package.
_numba_cache.install()

__all__ = [
    "KERNEL_BLOCK",
    "softmax_bnn_log_prob",
    "softmax_bnn_rows",
    "softmax_bnn_split_log_prob",
]

#: Rows per block of the compiled kernel: the block's work arrays, about
#: ``4 (h + C) * 256`` numbers (160 kB for the digits' 10 hidden units and 10 classes), stay
#: in the second-level cache while the block is processed.
KERNEL_BLOCK = 256
#: Columns of X combined in one pass over a block's rows (as in
#: :mod:`hamiltonia.targets.logistic_kernel`): measured on the digits, about 3.5 times
#: faster than one column per pass; eight gain a few per cent more.
_COLUMNS_PER_PASS = 4


def softmax_bnn_log_prob(q, grad, fdata, idata):
    """Compiled log posterior of :class:`~hamiltonia.targets.softmax_bnn.BNNClassifier`
    (all rows)."""
    return softmax_bnn_rows(q, grad, 0, idata[0], 1.0, fdata, idata)


def softmax_bnn_split_log_prob(q, grad, fdata, idata):
    """The same density split into components over its rows
    (:mod:`hamiltonia.targets.split`): ``idata`` = [component, M, r_0 .. r_M, n, d, h, C,
    block]."""
    m, n_splits = idata[0], idata[1]
    base = idata[3 + n_splits :]
    if m < 0:
        return softmax_bnn_rows(q, grad, 0, base[0], 1.0, fdata, base)
    return softmax_bnn_rows(q, grad, idata[2 + m], idata[3 + m], 1.0 / n_splits, fdata, base)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=set(SAFE_FASTMATH))
def softmax_bnn_rows(q, grad, row_start, row_stop, prior_share, fdata, idata):
    """:math:`\\sum_{i \\in [a, b)} \\ell_i(\\theta) + s \\log p(\\theta)` and its gradient
    (into ``grad``) for the rows ``[row_start, row_stop)`` and prior share ``s``: the maths
    of both kernels above, written once.

    Rows are processed in blocks of ``idata[4]`` so that the work arrays are bounded and
    every inner loop runs over contiguous rows (where it vectorises). Per block: the hidden
    layer :math:`T = \\tanh(XW + a)`, with :math:`\\tanh z = \\operatorname{sign}(z)
    (1 - e)/(1 + e)`, :math:`e = e^{-2|z|}` from the vectorisable
    :func:`~hamiltonia.modelling.special.exp_nonpositive`; the logits :math:`Z = TV + b`; the
    log-sum-exp :math:`m_i + \\log\\sum_k e^{z_{ik} - m_i}`, :math:`m_i = \\max_k z_{ik}`
    (every exponent :math:`\\le 0`, so nothing overflows); the residuals
    :math:`R = \\operatorname{onehot}(y) - \\operatorname{softmax}(Z)`; then
    back-propagation, :math:`\\nabla_b = R^\\top\\mathbf 1`, :math:`\\nabla_V = T^\\top R`,
    :math:`G = (RV^\\top) \\odot (1 - T^2)`, :math:`\\nabla_a = G^\\top\\mathbf 1`,
    :math:`\\nabla_W = X^\\top G`.
    """
    n, d, h, n_classes, bsize = idata[0], idata[1], idata[2], idata[3], idata[4]
    prior_prec = fdata[0] * prior_share
    y0 = 1 + n * d
    ia = d * h
    iv = ia + h
    ib = iv + h * n_classes
    dim = ib + n_classes
    # Work arrays of one block, a unit's (or a class's) rows contiguous at j * bsize: every
    # loop below runs over a 1-D view of nb contiguous rows, which LLVM vectorises.
    hid = np.empty(h * bsize)  # pre-activations, then tanh
    back = np.empty(bsize)  # back-propagated errors G of one hidden unit
    res = np.empty(n_classes * bsize)  # logits, then residuals R
    arg = np.zeros(h * bsize)  # exponents <= 0; stays <= 0 beyond a short last block
    ex = np.empty(h * bsize)
    bits = np.empty(h * bsize, dtype=np.int64)
    sarg = np.zeros(n_classes * bsize)
    sex = np.empty(n_classes * bsize)
    sbits = np.empty(n_classes * bsize, dtype=np.int64)
    mx = np.empty(bsize)
    tot = np.empty(bsize)
    for k in range(dim):
        grad[k] = 0.0
    ll = 0.0
    for start in range(row_start, row_stop, bsize):
        nb = min(bsize, row_stop - start)
        c0 = 1 + start  # column m of X, rows of this block: fdata[c0 + m * n :][:nb]
        # forward, hidden layer: z_j = a_j + sum_m w_mj x_m, four columns of X per pass
        # over the rows (a quarter of the loads and stores of z_j).
        for j in range(h):
            zj = hid[j * bsize : j * bsize + nb]
            aj = q[ia + j]
            for i in range(nb):
                zj[i] = aj
            m = 0
            while m + _COLUMNS_PER_PASS <= d:
                o = c0 + m * n
                xa = fdata[o : o + nb]
                xb = fdata[o + n : o + n + nb]
                xc = fdata[o + 2 * n : o + 2 * n + nb]
                xd = fdata[o + 3 * n : o + 3 * n + nb]
                wa, wb = q[m * h + j], q[(m + 1) * h + j]
                wc, wd = q[(m + 2) * h + j], q[(m + 3) * h + j]
                for i in range(nb):
                    zj[i] += wa * xa[i] + wb * xb[i] + wc * xc[i] + wd * xd[i]
                m += _COLUMNS_PER_PASS
            for mm in range(m, d):
                o = c0 + mm * n
                xa = fdata[o : o + nb]
                wa = q[mm * h + j]
                for i in range(nb):
                    zj[i] += wa * xa[i]
            aj_ = arg[j * bsize : j * bsize + nb]
            for i in range(nb):
                aj_[i] = -2.0 * abs(zj[i])
        exp_nonpositive(arg, ex, bits)  # one call for all units: fewer, longer loops
        for j in range(h):
            zj = hid[j * bsize : j * bsize + nb]
            ej = ex[j * bsize : j * bsize + nb]
            for i in range(nb):
                e = ej[i]
                zj[i] = math.copysign((1.0 - e) / (1.0 + e), zj[i])
        # forward, output layer: z_k = b_k + sum_j v_jk t_j, and the row maximum over k.
        for k in range(n_classes):
            zk = res[k * bsize : k * bsize + nb]
            bk = q[ib + k]
            for i in range(nb):
                zk[i] = bk
            for j in range(h):
                v = q[iv + j * n_classes + k]
                tj = hid[j * bsize : j * bsize + nb]
                for i in range(nb):
                    zk[i] += v * tj[i]
            if k == 0:
                for i in range(nb):
                    mx[i] = zk[i]
            else:
                for i in range(nb):
                    mx[i] = max(mx[i], zk[i])
        for k in range(n_classes):
            zk = res[k * bsize : k * bsize + nb]
            sk = sarg[k * bsize : k * bsize + nb]
            for i in range(nb):
                sk[i] = zk[i] - mx[i]
        exp_nonpositive(sarg, sex, sbits)
        for i in range(nb):
            tot[i] = 0.0
        for k in range(n_classes):
            ek = sex[k * bsize : k * bsize + nb]
            for i in range(nb):
                tot[i] += ek[i]
        # log likelihood z_{i, y_i} - logsumexp_k z_ik, and residuals R = onehot - softmax.
        # One scalar log per row (tot >= 1): small beside the h (d + C) products of a row.
        for i in range(nb):
            yi = int(fdata[y0 + start + i])
            ll += res[yi * bsize + i] - mx[i] - math.log(tot[i])
            tot[i] = 1.0 / tot[i]
        for k in range(n_classes):
            rk = res[k * bsize : k * bsize + nb]
            ek = sex[k * bsize : k * bsize + nb]
            for i in range(nb):
                rk[i] = -ek[i] * tot[i]
        for i in range(nb):
            res[int(fdata[y0 + start + i]) * bsize + i] += 1.0
        # backward, output layer: grad b_k = sum_i R_ik, grad v_jk = sum_i t_ij R_ik.
        for k in range(n_classes):
            rk = res[k * bsize : k * bsize + nb]
            s = 0.0
            for i in range(nb):
                s += rk[i]
            grad[ib + k] += s
        for j in range(h):
            tj = hid[j * bsize : j * bsize + nb]
            gj = back[:nb]
            for i in range(nb):
                gj[i] = 0.0
            for k in range(n_classes):
                v = q[iv + j * n_classes + k]
                rk = res[k * bsize : k * bsize + nb]
                s = 0.0
                for i in range(nb):
                    s += tj[i] * rk[i]
                    gj[i] += v * rk[i]
                grad[iv + j * n_classes + k] += s
            # G_j = (R V^T)_j (1 - t_j^2); grad a_j = sum_i G_ij; grad w_mj = sum_i x_im G_ij,
            # four columns of X per pass over the rows.
            sa = 0.0
            for i in range(nb):
                g = gj[i] * (1.0 - tj[i] * tj[i])
                gj[i] = g
                sa += g
            grad[ia + j] += sa
            m = 0
            while m + _COLUMNS_PER_PASS <= d:
                o = c0 + m * n
                xa = fdata[o : o + nb]
                xb = fdata[o + n : o + n + nb]
                xc = fdata[o + 2 * n : o + 2 * n + nb]
                xd = fdata[o + 3 * n : o + 3 * n + nb]
                s0 = s1 = s2 = s3 = 0.0
                for i in range(nb):
                    gi = gj[i]
                    s0 += gi * xa[i]
                    s1 += gi * xb[i]
                    s2 += gi * xc[i]
                    s3 += gi * xd[i]
                grad[m * h + j] += s0
                grad[(m + 1) * h + j] += s1
                grad[(m + 2) * h + j] += s2
                grad[(m + 3) * h + j] += s3
                m += _COLUMNS_PER_PASS
            for mm in range(m, d):
                o = c0 + mm * n
                xa = fdata[o : o + nb]
                s = 0.0
                for i in range(nb):
                    s += gj[i] * xa[i]
                grad[mm * h + j] += s
    ss = 0.0
    for k in range(dim):
        ss += q[k] * q[k]
        grad[k] -= prior_prec * q[k]
    return ll - 0.5 * prior_prec * ss
