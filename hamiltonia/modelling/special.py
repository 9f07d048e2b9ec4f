"""Vectorisable ``exp`` and ``log1p`` for compiled log densities.

LLVM turns a loop of ``math.exp`` calls into scalar library calls (numba on PyPI has no
vector math library), and on data-heavy targets such as logistic regression those calls
cost more than the matrix products (measured; see "Vectorisable exp and log1p" in
``docs/compiled.rst``). These versions use only arithmetic, ``floor`` and integer bit
operations, so a loop over them vectorises; both are accurate to a few units in the last
place over the range they serve (checked against NumPy in ``tests/modelling/test_special.py``).

* :func:`exp_nonpositive` computes :math:`e^{a}` for :math:`a \\le 0` by Cody-Waite range
  reduction :math:`a = k \\ln 2 + r`, :math:`|r| \\le \\ln 2 / 2`, a degree-13 Taylor
  polynomial for :math:`e^r` (truncation error below :math:`10^{-17}`) and :math:`2^k` built
  from its IEEE-754 bits; results below :math:`e^{-708}` are flushed to zero.
* :func:`log1p_unit` computes :math:`\\log(1 + e)` for :math:`0 \\le e \\le 1` as
  :math:`2\\,\\operatorname{artanh}(t)`, :math:`t = e/(2 + e) \\le 1/3`, summing the series
  :math:`\\sum_n t^{2n+1}/(2n+1)` to 18 terms (:math:`9^{-18} < 10^{-17}`); relative accuracy
  holds down to :math:`e \\to 0`.

For the log densities generated from a user's model (:mod:`hamiltonia.modelling.adjoint_source`)
there are also :func:`lgamma` and :func:`digamma` (its derivative), numba ufuncs that serve
numbers and arrays alike, and :func:`logsumexp_all` and
:func:`logsumexp_rows`. :func:`digamma` uses the reflection
:math:`\\psi(x) = \\psi(1 - x) - \\pi \\cot \\pi x` for :math:`x < 0`, the recurrence
:math:`\\psi(x) = \\psi(x + 1) - 1/x` up to :math:`x \\ge 10` and then the asymptotic series
:math:`\\log x - \\tfrac{1}{2x} - \\sum_k \\tfrac{B_{2k}}{2k\\,x^{2k}}` to :math:`x^{-10}`
(truncation error below :math:`10^{-13}`; Abramowitz and Stegun 6.3.18).

Together they give the softplus :math:`\\log(1 + e^z) = \\max(z, 0) + \\log(1 + e^{-|z|})` and
the logistic sigmoid without overflow for any :math:`z` (:func:`softplus_sigmoid`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, vectorize

from hamiltonia import _numba_cache
from hamiltonia.compiled.compose import SAFE_FASTMATH

# Before the decorators below: their caches go to the cache folder, not into the package.
_numba_cache.install()

__all__ = [
    "digamma",
    "exp_nonpositive",
    "lgamma",
    "log1p_unit",
    "logsumexp_all",
    "logsumexp_rows",
    "sigmoid_vector",
    "softplus_sigmoid",
    "softplus_sigmoid_vector",
    "softplus_vector",
]

_OPTS = {"cache": True, "nogil": True, "error_model": "numpy", "fastmath": set(SAFE_FASTMATH)}

_LOG2E = 1.4426950408889634
_LN2_HI = 0.693145751953125  # ln 2 split so that k * _LN2_HI is exact for |k| < 2^11
_LN2_LO = 1.4286068203094173e-06
_UNDERFLOW = -708.0


@njit(**_OPTS)
def exp_nonpositive(a, out, bits):
    """``out[i] = exp(a[i])`` for ``a[i] <= 0``; ``bits`` is int64 scratch of the same size."""
    n = a.shape[0]
    for i in range(n):
        x = max(a[i], _UNDERFLOW)
        k = np.floor(x * _LOG2E + 0.5)
        r = (x - k * _LN2_HI) - k * _LN2_LO
        p = 1.0 / 6227020800.0
        p = p * r + 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r + 1.0
        p = p * r + 1.0
        out[i] = p
        bits[i] = (np.int64(k) + 1023) << 52
    scale = bits.view(np.float64)
    for i in range(n):
        out[i] = out[i] * scale[i] * (a[i] > _UNDERFLOW)


@njit(**_OPTS)
def log1p_unit(e, out):
    """``out[i] = log(1 + e[i])`` for ``0 <= e[i] <= 1``."""
    for i in range(e.shape[0]):
        t = e[i] / (2.0 + e[i])
        t2 = t * t
        s = 1.0 / 37.0
        s = s * t2 + 1.0 / 35.0
        s = s * t2 + 1.0 / 33.0
        s = s * t2 + 1.0 / 31.0
        s = s * t2 + 1.0 / 29.0
        s = s * t2 + 1.0 / 27.0
        s = s * t2 + 1.0 / 25.0
        s = s * t2 + 1.0 / 23.0
        s = s * t2 + 1.0 / 21.0
        s = s * t2 + 1.0 / 19.0
        s = s * t2 + 1.0 / 17.0
        s = s * t2 + 1.0 / 15.0
        s = s * t2 + 1.0 / 13.0
        s = s * t2 + 1.0 / 11.0
        s = s * t2 + 1.0 / 9.0
        s = s * t2 + 1.0 / 7.0
        s = s * t2 + 1.0 / 5.0
        s = s * t2 + 1.0 / 3.0
        s = s * t2 + 1.0
        out[i] = 2.0 * t * s


@njit(**_OPTS)
def softplus_sigmoid(z, softplus, sigmoid, scratch, bits):
    """``softplus = log(1 + exp(z))`` and ``sigmoid = 1 / (1 + exp(-z))``, elementwise; the
    four output and scratch arrays have the shape of ``z``."""
    n = z.shape[0]
    for i in range(n):
        scratch[i] = -abs(z[i])
    exp_nonpositive(scratch, sigmoid, bits)  # sigmoid holds e = exp(-|z|) for now
    log1p_unit(sigmoid, softplus)
    for i in range(n):
        e = sigmoid[i]
        inv = 1.0 / (1.0 + e)
        softplus[i] += max(z[i], 0.0)
        sigmoid[i] = inv if z[i] >= 0.0 else e * inv


@njit(**_OPTS)
def _exp_minus_abs(z):
    """:math:`e^{-|z_i|}` of a vector by :func:`exp_nonpositive`: what the softplus and
    the sigmoid below are made from."""
    n = z.shape[0]
    scratch, e = np.empty(n), np.empty(n)
    bits = np.empty(n, dtype=np.int64)
    for i in range(n):
        scratch[i] = -abs(z[i])
    exp_nonpositive(scratch, e, bits)
    return e


@njit(**_OPTS)
def softplus_vector(z):
    """:math:`\\log(1 + e^{z_i})` of a vector, by :func:`exp_nonpositive` and
    :func:`log1p_unit` (loops that vectorise): the generated code of ``np.logaddexp(0, z)``,
    whose NumPy form costs two scalar library calls an element. ``nan`` stays ``nan``."""
    e = _exp_minus_abs(z)
    out = np.empty(z.shape[0])
    log1p_unit(e, out)
    for i in range(z.shape[0]):
        out[i] = out[i] + max(z[i], 0.0) if z[i] == z[i] else np.nan
    return out


@njit(**_OPTS)
def sigmoid_vector(z):
    """:math:`1 / (1 + e^{-z_i})` of a vector (the derivative of :func:`softplus_vector`),
    by :func:`exp_nonpositive`. ``nan`` stays ``nan``."""
    e = _exp_minus_abs(z)
    for i in range(z.shape[0]):
        inv = 1.0 / (1.0 + e[i])
        e[i] = (inv if z[i] >= 0.0 else e[i] * inv) if z[i] == z[i] else np.nan
    return e


@njit(**_OPTS)
def softplus_sigmoid_vector(z):
    """The pair (:func:`softplus_vector`, :func:`sigmoid_vector`) of a vector from one
    :math:`e^{-|z_i|}`, by :func:`softplus_sigmoid` (the built-in logistic kernel's) with its
    own arrays: the generated code of ``np.logaddexp(0, z)`` whose adjoint is needed,
    which keeps the sigmoid for the reverse pass instead of computing the exponentials a
    second time there (the logistic regression of :mod:`hamiltonia.bench.gradients`, one
    core, 15 alternating rounds in one process: 6.41 to 5.93 µs a gradient, median, beside
    the hand-written 5.00 µs). ``nan`` stays ``nan`` in both."""
    n = z.shape[0]
    softplus, sigmoid, scratch = np.empty(n), np.empty(n), np.empty(n)
    softplus_sigmoid(z, softplus, sigmoid, scratch, np.empty(n, dtype=np.int64))
    for i in range(n):
        if z[i] != z[i]:
            softplus[i] = sigmoid[i] = np.nan
    return softplus, sigmoid


@vectorize(["float64(float64)"], cache=True)
def lgamma(x):
    """:math:`\\log\\lvert\\Gamma(x)\\rvert` (``math.lgamma``), elementwise."""
    return math.lgamma(x)


@vectorize(["float64(float64)"], cache=True)
def digamma(x):
    """:math:`\\psi(x) = \\Gamma'(x) / \\Gamma(x)`, elementwise (module docs)."""
    if not math.isfinite(x) or (x <= 0.0 and x == math.floor(x)):
        return math.nan
    shift = 0.0
    if x < 0.0:
        shift = -math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    while x < 10.0:
        shift -= 1.0 / x
        x += 1.0
    inv2 = 1.0 / (x * x)
    series = inv2 * (
        1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132))))
    )
    return shift + math.log(x) - 0.5 / x - series


@njit(**_OPTS)
def logsumexp_all(a):
    """:math:`\\log \\sum_i e^{a_i}` over every element, shifted by the maximum."""
    m = np.max(a)
    if not math.isfinite(m):
        return m
    return m + math.log(np.sum(np.exp(a - m)))


@njit(**_OPTS)
def logsumexp_rows(a):
    """:math:`\\log \\sum_j e^{a_{ij}}` of each row :math:`i` of the 2-d array ``a``, each
    shifted by its row's maximum (a reduction over other axes is one over rows once they
    are moved last)."""
    rows = a.shape[0]
    out = np.empty(rows)
    for i in range(rows):
        row = a[i]
        m = np.max(row)  # nan if any is, as logsumexp_all
        if not math.isfinite(m):
            out[i] = m
            continue
        total = 0.0
        for j in range(row.shape[0]):
            total += math.exp(row[j] - m)
        out[i] = m + math.log(total)
    return out
