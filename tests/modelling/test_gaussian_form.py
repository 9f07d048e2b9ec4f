"""The Gaussian log density's closed-form gradient in the covariance
(:mod:`hamiltonia.modelling.gaussian_form`, issue 53 item 1): a Cholesky factor read only
through :math:`\\alpha^\\top\\alpha` and :math:`\\sum \\log L_{ii}` gets
:math:`\\bar A = -\\bar q\\,\\beta\\beta^\\top + \\tfrac12\\bar h A^{-1}` instead of Murray's
adjoint, with autograd's gradient; read any other way it keeps the general rules; a
covariance that is not positive definite is still a rejection."""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from autograd.scipy.linalg import solve_triangular

from hamiltonia.modelling.gaussian_form import closed_forms
from hamiltonia.modelling.trace import trace_graph
from hamiltonia.modelling.user_target import compile_log_density
from tests.modelling.autograd_check import assert_matches_autograd

RNG = np.random.default_rng(5)
N = 6
X = np.sort(RNG.uniform(0.0, 5.0, N))
Y = np.sin(X) + 0.3 * RNG.normal(size=N)
OBS = RNG.normal(size=(N, 3))  # three observations of a 6-variate normal, by columns
D2 = (X[:, None] - X) ** 2

CLOSED = ("quadratic_form_adjoint", "log_determinant_adjoint")  # with _matrix, for a matrix


def gp(q):
    """The benchmark's GP (hamiltonia.bench.gradients), on six points."""
    ell, amp, sigma = anp.exp(q[0]), anp.exp(q[1]), anp.exp(q[2])
    K = amp**2 * anp.exp(-0.5 * D2 / ell**2) + (sigma**2 + 1e-8) * anp.eye(N)
    L = anp.linalg.cholesky(K)
    a = solve_triangular(L, Y, lower=True)
    return -0.5 * anp.sum(a**2) - anp.sum(anp.log(anp.diag(L))) - 0.5 * q[0] ** 2


# The lower factor's entries below the diagonal, one matrix each.
BELOW = np.zeros((N * (N - 1) // 2, N, N))
for _n, (_i, _j) in enumerate(zip(*np.tril_indices(N, -1), strict=True)):
    BELOW[_n, _i, _j] = 1.0
DIM = 12 + len(BELOW)


def covariance(q):
    """:math:`B B^\\top + 0.3 I`, :math:`B` lower-triangular with the diagonal
    ``exp(q[6:12])`` and ``q[12:]`` below it: every entry depends on the parameters."""
    low = anp.diag(anp.exp(q[N : 2 * N])) + anp.sum(q[2 * N :, None, None] * BELOW, axis=0)
    return low @ low.T + 0.3 * anp.eye(N)


def mvn(q):
    """A multivariate normal of one observation, mean ``q[:6]``: ``a @ a``."""
    L = anp.linalg.cholesky(covariance(q))
    a = solve_triangular(L, Y - q[:N], lower=True)
    return -0.5 * (a @ a) - anp.sum(anp.log(anp.diag(L))) - 0.5 * anp.sum(q**2)


def mvn_dot_square(q):
    """Two factors of the same covariance, each read one way (the solve's result by two
    sums of squares, ``np.dot`` and ``np.square``, of a scaled right-hand side; the
    slogdet-like ``2 * sum(log diag)``)."""
    K = covariance(q)
    a = solve_triangular(anp.linalg.cholesky(K), 2.0 * (Y - q[:N]), lower=True, trans="N")
    logdet = 2 * anp.log(anp.diag(anp.linalg.cholesky(K))).sum()
    return -0.125 * anp.dot(a, a) - 0.5 * logdet + 0.1 * anp.sum(anp.square(a))


def mvn_matrix(q):
    """Three observations at once: a matrix right-hand side, ``(a * a).sum()``."""
    L = anp.linalg.cholesky(covariance(q))
    a = solve_triangular(L, OBS - q[:N, None], lower=True)
    return -0.5 * (a * a).sum() - 3 * anp.sum(anp.log(anp.diag(L))) - 0.5 * anp.sum(q**2)


CLOSED_CASES = {"gp": (gp, 3), "mvn": (mvn, DIM), "mvn_dot_square": (mvn_dot_square, DIM),
                "mvn_matrix": (mvn_matrix, DIM)}  # fmt: skip


def _agrees(f, dim, density, scale=0.3, seed=7):
    points = np.random.default_rng(seed).normal(scale=scale, size=(5, dim))
    assert_matches_autograd(density, f, points, lp_rtol=1e-9, atol=1e-12, finite=True)


@pytest.mark.parametrize("name", sorted(CLOSED_CASES))
def test_the_closed_form_is_used_and_agrees_with_autograd(name):
    f, dim = CLOSED_CASES[name]
    density = compile_log_density(f, dim, name)
    assert "cholesky_adjoint(" not in density.source
    assert all(helper in density.source for helper in CLOSED)
    _agrees(f, dim, density)


def test_the_closed_form_handles_each_matrix_shape_of_its_right_hand_side():
    """The matrix right-hand side gets the matrix form; its adjoint flows to the mean."""
    density = compile_log_density(mvn_matrix, DIM, "mvn_matrix")
    assert "quadratic_form_adjoint_matrix(" in density.source
    assert "solve_triangular_matrix(" in density.source


def _product(q):
    L = anp.linalg.cholesky(covariance(q))
    a = solve_triangular(L, Y - q[:N], lower=True)
    return -0.5 * anp.sum(a**2) - anp.sum(anp.log(anp.diag(L))) + 0.1 * anp.sum(L @ Y)


def _solve_read_twice(q):
    L = anp.linalg.cholesky(covariance(q))
    a = solve_triangular(L, Y - q[:N], lower=True)
    return -0.5 * anp.sum(a**2) - anp.sum(anp.log(anp.diag(L))) + anp.sum(a)


def _transposed(q):
    L = anp.linalg.cholesky(covariance(q))
    a = solve_triangular(L, Y - q[:N], lower=True, trans="T")
    return -0.5 * anp.sum(a**2) - anp.sum(anp.log(anp.diag(L)))


def _mean_of_squares(q):
    L = anp.linalg.cholesky(covariance(q))
    a = solve_triangular(L, Y - q[:N], lower=True)
    return -0.5 * anp.mean(a**2) - anp.sum(anp.log(anp.diag(L)))


def _cube(q):
    L = anp.linalg.cholesky(covariance(q))
    a = solve_triangular(L, Y - q[:N], lower=True)
    return -0.1 * anp.sum(a**3) - anp.sum(anp.log(anp.diag(L)))


def _diagonal_squared(q):
    L = anp.linalg.cholesky(covariance(q))
    a = solve_triangular(L, Y - q[:N], lower=True)
    return -0.5 * anp.sum(a**2) - anp.sum(anp.diag(L) ** 2)


def _log_diagonal_partial_sum(q):
    L = anp.linalg.cholesky(covariance(q))
    a = solve_triangular(L, Y - q[:N], lower=True)
    return -0.5 * anp.sum(a**2) - anp.sum(anp.log(anp.diag(L))[:3])


FALLBACKS = {"product": _product, "solve_read_twice": _solve_read_twice,
             "transposed": _transposed, "mean_of_squares": _mean_of_squares, "cube": _cube,
             "diagonal_squared": _diagonal_squared,
             "log_diagonal_partial_sum": _log_diagonal_partial_sum}  # fmt: skip


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_a_factor_read_another_way_keeps_the_general_rules(name):
    f = FALLBACKS[name]
    graph = trace_graph(f, np.zeros(DIM))
    assert closed_forms(graph) is graph
    density = compile_log_density(f, DIM, name)
    assert "cholesky_adjoint(" in density.source
    assert not any(helper in density.source for helper in CLOSED)
    _agrees(f, DIM, density)


def test_the_closed_form_changes_the_graph_only_where_it_matches():
    """Two factors, one read only by the Gaussian terms and one also in a product: the
    first gets the closed form, the second Murray's adjoint."""

    def two(q):
        return mvn(q) + _product(q)

    density = compile_log_density(two, DIM, "two")
    assert "cholesky_adjoint(" in density.source
    assert all(helper in density.source for helper in CLOSED)
    _agrees(two, DIM, density)


def correlated_pair(q):
    """A bivariate normal with correlation ``q[0]``, not positive definite for
    :math:`|q_0| \\ge 1`."""
    cov = anp.array([[1.0, q[0]], [q[0], 1.0]])
    L = anp.linalg.cholesky(cov)
    a = solve_triangular(L, np.array([0.9, 0.7]) - q[1], lower=True)
    return -anp.sum(anp.log(anp.diag(L))) - 0.5 * anp.sum(a**2)


def test_a_covariance_that_is_not_positive_definite_is_still_nan():
    """The closed form's value and gradient are nan where the factor is (a rejected
    proposal, as on the general path), and finite where it exists."""
    density = compile_log_density(correlated_pair, 2, "pair")
    assert all(helper in density.source for helper in CLOSED)
    for r in (1.2, -1.0, 3.0):
        lp, grad = density.evaluate(np.array([r, 0.3]))
        assert np.isnan(lp) and np.all(np.isnan(grad))
    lp, grad = density.evaluate(np.array([0.5, 0.3]))
    want_lp, want_grad = autograd.value_and_grad(correlated_pair)(np.array([0.5, 0.3]))
    np.testing.assert_allclose(lp, want_lp, rtol=1e-9)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 7, 50])
def test_the_closed_form_helpers_are_numpys(n):
    """:math:`\\tfrac12 \\bar h A^{-1}` and :math:`-\\bar q \\beta\\beta^\\top` from the factor."""
    from hamiltonia.modelling.linalg_special import (
        log_determinant_adjoint,
        quadratic_form_adjoint,
        quadratic_form_adjoint_matrix,
    )

    rng = np.random.default_rng(n)
    a = rng.normal(size=(n, n))
    matrix = a @ a.T + n * np.eye(n)
    factor, inverse = np.linalg.cholesky(matrix), np.linalg.inv(matrix)
    np.testing.assert_allclose(log_determinant_adjoint(factor, -3.0), -1.5 * inverse,
                               rtol=1e-12, atol=1e-15)  # fmt: skip
    r, rs = rng.normal(size=n), rng.normal(size=(n, 3))
    beta, betas = inverse @ r, inverse @ rs
    alpha, alphas = np.linalg.solve(factor, r), np.linalg.solve(factor, rs)
    np.testing.assert_allclose(quadratic_form_adjoint(factor, alpha, 0.7),
                               -0.7 * np.outer(beta, beta), rtol=1e-12, atol=1e-15)  # fmt: skip
    np.testing.assert_allclose(quadratic_form_adjoint_matrix(factor, alphas, 0.7),
                               -0.7 * betas @ betas.T, rtol=1e-12, atol=1e-15)  # fmt: skip
