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

The Gaussian log density's two terms in the factor, :math:`q = \\alpha^\\top\\alpha` with
:math:`\\alpha = L^{-1} r` and :math:`h = \\sum_i \\log L_{ii}`, have closed-form adjoints
in :math:`A` (:mod:`hamiltonia.modelling.gaussian_form`), which :func:`quadratic_form_adjoint`
and :func:`log_determinant_adjoint` write without Murray's three products:

.. math::

    \\bar A = -\\bar q\\, \\beta\\beta^\\top, \\quad \\beta = L^{-\\top}\\alpha = A^{-1} r;
    \\qquad \\bar A = \\tfrac12 \\bar h\\, A^{-1}, \\quad A^{-1} = L^{-\\top} L^{-1}.
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
    "log_determinant_adjoint",
    "log_diagonal_sum",
    "lower_inverse",
    "quadratic_form_adjoint",
    "quadratic_form_adjoint_matrix",
    "solve_or_nan",
    "solve_triangular_matrix",
    "solve_triangular_vector",
    "sum_of_squares",
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
def sum_of_squares(a):
    """:math:`\\sum a_i^2` over every element of ``a`` (a vector or a matrix)."""
    flat = np.ascontiguousarray(a).reshape(a.size)
    total = 0.0
    for i in range(flat.shape[0]):
        total += flat[i] * flat[i]
    return total


@njit(**_OPTS)
def log_diagonal_sum(factor):
    """:math:`\\sum_i \\log L_{ii}` (half the log-determinant of :math:`L L^\\top`)."""
    total = 0.0
    for i in range(min(factor.shape[0], factor.shape[1])):
        total += np.log(factor[i, i])
    return total


@njit(**_OPTS)
def quadratic_form_adjoint(factor, alpha, g):
    """:math:`-\\bar q\\, \\beta\\beta^\\top` (``g`` :math:`= \\bar q`,
    :math:`\\beta = L^{-\\top}\\alpha`): the adjoint of :math:`A` of
    :math:`q = \\alpha^\\top\\alpha = r^\\top A^{-1} r`, :math:`\\alpha = L^{-1} r` a vector
    (module docs)."""
    beta = solve_triangular_vector(factor, alpha, True, True)
    n = beta.shape[0]
    out = np.empty((n, n))
    for i in range(n):
        scale = -g * beta[i]
        for j in range(n):
            out[i, j] = scale * beta[j]
    return out


@njit(**_OPTS)
def quadratic_form_adjoint_matrix(factor, alpha, g):
    """:func:`quadratic_form_adjoint` for a matrix :math:`\\alpha = L^{-1} R`
    (:math:`q = \\operatorname{tr}(R^\\top A^{-1} R)`): :math:`-\\bar q\\, \\beta\\beta^\\top`."""
    beta = solve_triangular_matrix(factor, alpha, True, True)
    return -g * np.dot(beta, np.ascontiguousarray(beta.T))


@njit(**_OPTS)
def log_determinant_adjoint(factor, g):
    """:math:`\\tfrac12 \\bar h\\, A^{-1}` (``g`` :math:`= \\bar h`), the adjoint of :math:`A`
    of :math:`h = \\sum_i \\log L_{ii} = \\tfrac12 \\log\\det A` (module docs), with
    :math:`A^{-1} = M^\\top M`, :math:`M = L^{-1}` (:func:`lower_inverse`): its lower triangle
    by the rank-one updates of the rows of :math:`M`, each as long as its nonzeros
    (:math:`n^3/6` products, half the time of a general matrix product for 50 points),
    then mirrored."""
    inverse = lower_inverse(factor)
    n = inverse.shape[0]
    out = np.zeros((n, n))
    half = 0.5 * g
    for k in range(n):
        row = inverse[k]
        for i in range(k + 1):
            scale = half * row[i]
            target = out[i]
            for j in range(i + 1):
                target[j] += scale * row[j]
    for i in range(n):
        for j in range(i):
            out[j, i] = out[i, j]
    return out


@njit(**_OPTS)
def diagonal_matrix(v, rows, cols):
    """The ``(rows, cols)`` matrix with ``v`` on its diagonal and zeros elsewhere (the
    adjoint of the diagonal of a matrix)."""
    out = np.zeros((rows, cols))
    for i in range(v.shape[0]):
        out[i, i] = v[i]
    return out
