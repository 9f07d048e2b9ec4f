"""Linear algebra for compiled log densities, with the reverse-mode adjoints the generated
gradients call (:mod:`hamiltonia.modelling.adjoint_linalg`).

The factorisations and solves are numba's LAPACK bindings (``np.linalg``), wrapped so that
where the mathematics is undefined (a matrix that is not positive definite for
:func:`cholesky_or_nan`, a singular one for :func:`solve_or_nan` and :func:`inv_or_nan`)
the result is ``nan`` rather than an exception: the log density is then ``nan``, which the
sampler rejects as a divergent proposal, as Stan rejects a proposal whose
``cholesky_decompose`` fails. Triangular solves are substitution loops
(:func:`solve_triangular_vector`, :func:`solve_triangular_matrix`), which numba's ``np.linalg``
lacks.

The adjoint of the Cholesky factor :math:`L` of :math:`A = L L^\\top` (Murray 2016,
"Differentiation of the Cholesky decomposition", arXiv:1602.07527; the form autograd uses):

.. math::

    \\bar A = \\tfrac12 (S + S^\\top), \\qquad
    S = L^{-\\top}\\, \\Phi(L^\\top \\bar L)\\, L^{-1},

with :math:`\\Phi` the lower triangle with its diagonal halved.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hamiltonia import _numba_cache
from hamiltonia.compiled.compose import SAFE_FASTMATH

# Before the decorators below: their caches go to the cache folder, not into the package.
_numba_cache.install()

__all__ = [
    "cholesky_adjoint",
    "cholesky_or_nan",
    "diagonal_matrix",
    "inv_or_nan",
    "lower_inverse",
    "solve_or_nan",
    "solve_triangular_matrix",
    "solve_triangular_vector",
]

_OPTS = {"cache": True, "nogil": True, "error_model": "numpy", "fastmath": set(SAFE_FASTMATH)}


@njit(**_OPTS)
def cholesky_or_nan(a):
    """The lower Cholesky factor of ``a``, or ``nan`` everywhere when ``a`` is not
    (numerically) positive definite."""
    try:
        return np.ascontiguousarray(np.linalg.cholesky(np.ascontiguousarray(a)))
    except Exception:  # numba's LinAlgError: not positive definite
        return np.full(a.shape, np.nan)


@njit(**_OPTS)
def solve_or_nan(a, b):
    """:math:`a^{-1} b` (``b`` a vector or a matrix), or ``nan`` where ``a`` is singular."""
    try:
        # LAPACK's result is Fortran-ordered: C order for the dot products that read it.
        x = np.linalg.solve(np.ascontiguousarray(a), np.ascontiguousarray(b))
        return np.ascontiguousarray(x)
    except Exception:  # singular
        return np.full(b.shape, np.nan)


@njit(**_OPTS)
def inv_or_nan(a):
    """:math:`a^{-1}`, or ``nan`` where ``a`` is singular."""
    try:
        return np.ascontiguousarray(np.linalg.inv(np.ascontiguousarray(a)))
    except Exception:  # singular
        return np.full(a.shape, np.nan)


@njit(**_OPTS)
def solve_triangular_vector(a, b, lower, trans):
    """:math:`x = a^{-1} b` (``trans``: :math:`a^{-\\top} b`) for a triangular ``a``
    (``lower`` or upper) and a vector ``b``, by substitution."""
    n = b.shape[0]
    x = np.empty(n)
    # The triangle read: a's own, or its transpose's (the other one) when trans.
    forward = lower != trans
    for step in range(n):
        i = step if forward else n - 1 - step
        total = b[i]
        if forward:
            for j in range(i):
                total -= (a[j, i] if trans else a[i, j]) * x[j]
        else:
            for j in range(i + 1, n):
                total -= (a[j, i] if trans else a[i, j]) * x[j]
        x[i] = total / a[i, i]
    return x


@njit(**_OPTS)
def solve_triangular_matrix(a, b, lower, trans):
    """:func:`solve_triangular_vector` for each column of the matrix ``b``."""
    out = np.empty(b.shape)
    for k in range(b.shape[1]):
        out[:, k] = solve_triangular_vector(a, np.ascontiguousarray(b[:, k]), lower, trans)
    return out


@njit(**_OPTS)
def lower_inverse(factor):
    """:math:`L^{-1}` of a lower-triangular ``factor``, row by row (row :math:`i` is
    :math:`(e_i - \\sum_{k<i} L_{ik} (L^{-1})_{k\\cdot}) / L_{ii}`, contiguous rows)."""
    n = factor.shape[0]
    inverse = np.zeros((n, n))
    for i in range(n):
        row = inverse[i]
        for k in range(i):
            scale = factor[i, k]
            other = inverse[k]
            for j in range(k + 1):
                row[j] -= scale * other[j]
        row[i] += 1.0
        pivot = factor[i, i]
        for j in range(i + 1):
            row[j] /= pivot
    return inverse


@njit(**_OPTS)
def cholesky_adjoint(factor, g):
    """:math:`\\bar A` of :math:`L = \\operatorname{chol}(A)` from :math:`\\bar L` ``g``
    (module docs), as :math:`S = (L^{-1})^\\top \\Phi L^{-1}` by two matrix products: the
    triangular solves column by column, the form autograd writes, read the factor down its
    columns and took 120 of a 50-point GP's 148 us a gradient (55 us this way)."""
    n = factor.shape[0]
    phi = np.dot(factor.T, np.ascontiguousarray(g))
    for i in range(n):
        for j in range(i + 1, n):
            phi[i, j] = 0.0
        phi[i, i] *= 0.5
    inverse = lower_inverse(factor)
    s = np.dot(np.ascontiguousarray(inverse.T), np.dot(phi, inverse))
    return 0.5 * (s + s.T)


@njit(**_OPTS)
def diagonal_matrix(v, rows, cols):
    """The ``(rows, cols)`` matrix with ``v`` on its diagonal and zeros elsewhere (the
    adjoint of the diagonal of a matrix)."""
    out = np.zeros((rows, cols))
    for i in range(v.shape[0]):
        out[i, i] = v[i]
    return out
