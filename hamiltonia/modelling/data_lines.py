"""Products of a data matrix with a vector, for compiled log densities: loops along the
matrix's long lines, four lines a pass, as a careful hand-written kernel makes them.

A generated gradient reads a data matrix :math:`M` (:math:`p` lines of :math:`n` numbers,
C-contiguous, :math:`n \\ge p`: a design matrix stored by columns,
:func:`hamiltonia.modelling.adjoint_source.tall_matrices`, or a wide one by rows) in two
products, the linear predictor forward and its adjoint back:

.. math::

    \\text{combine}(M, b) = M^\\top b = \\sum_{l} b_l\\, M_{l,:}, \\qquad
    \\text{dot}(M, g) = M g, \\quad (M g)_l = \\sum_i M_{l,i}\\, g_i .

Each is one pass over :math:`M` in memory order, four lines sharing each pass over the
:math:`n`-vector, so that vector is read a quarter as often; the inner loops vectorise.
For the matrices of regression models (tens of lines of thousands of numbers) this is
faster than OpenBLAS's ``dgemv``, whose call and dispatch cost more than the arithmetic
(measured on :mod:`hamiltonia.bench.gradients`' models, one core, 12 alternating rounds
in one process, medians: the logistic regression, 24 lines of 1,000, its whole gradient
6.56 µs with ``np.dot`` both ways and 5.97 µs with these loops, beside the hand-written
4.88 µs; the linear regression, 25 lines of 5,000, 21.3 and 18.4 µs, beside 18.2 µs). The
rule that calls them (:class:`~hamiltonia.modelling.adjoint_rules.Dot`) keeps ``np.dot``
for a matrix whose lines are short and for any matrix that is not data.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hamiltonia import _numba_cache
from hamiltonia.compiled.compose import SAFE_FASTMATH

# Before the decorators below: their caches go to the cache folder, not into the package.
_numba_cache.install()

__all__ = ["combine_lines", "dot_lines"]

_OPTS = {"cache": True, "nogil": True, "error_model": "numpy", "fastmath": set(SAFE_FASTMATH)}


@njit(**_OPTS)
def combine_lines(m, b):
    """:math:`\\sum_l b_l M_{l,:}` of the lines of ``m`` ``(p, n)`` weighted by ``b``
    ``(p,)``: ``b @ m``, a new ``(n,)`` array."""
    p, n = m.shape
    out = np.zeros(n)
    last = p - p % 4
    for k in range(0, last, 4):
        m0, m1, m2, m3 = m[k], m[k + 1], m[k + 2], m[k + 3]
        b0, b1, b2, b3 = b[k], b[k + 1], b[k + 2], b[k + 3]
        for i in range(n):
            out[i] += b0 * m0[i] + b1 * m1[i] + b2 * m2[i] + b3 * m3[i]
    for k in range(last, p):
        ml, bl = m[k], b[k]
        for i in range(n):
            out[i] += bl * ml[i]
    return out


@njit(**_OPTS)
def dot_lines(m, g):
    """:math:`(M g)_l = \\sum_i M_{l,i} g_i` of the lines of ``m`` ``(p, n)`` with ``g``
    ``(n,)``: ``m @ g``, a new ``(p,)`` array."""
    p, n = m.shape
    out = np.empty(p)
    last = p - p % 4
    for k in range(0, last, 4):
        m0, m1, m2, m3 = m[k], m[k + 1], m[k + 2], m[k + 3]
        s0 = s1 = s2 = s3 = 0.0
        for i in range(n):
            gi = g[i]
            s0 += m0[i] * gi
            s1 += m1[i] * gi
            s2 += m2[i] * gi
            s3 += m3[i] * gi
        out[k], out[k + 1], out[k + 2], out[k + 3] = s0, s1, s2, s3
    for k in range(last, p):
        ml = m[k]
        s = 0.0
        for i in range(n):
            s += ml[i] * g[i]
        out[k] = s
    return out
