"""Linear algebra on the compiled path (issue 53, items 2 and 3): each rule of
:mod:`hamiltonia.modelling.adjoint_linalg` gives autograd's value and gradient, a Gaussian
process written with ``cholesky`` and ``solve_triangular`` compiles, and where the
mathematics is undefined (a covariance that is not positive definite) the proposal is
rejected on both paths, never a crash."""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from autograd.scipy.linalg import solve_triangular

import hamiltonia as hm
from hamiltonia.modelling.user_target import compile_log_density
from hamiltonia.state import evaluate_target

X = np.linspace(0, 1, 6)
Y = np.sin(3 * X)
B = np.random.default_rng(0).normal(size=(6, 6))


def covariance(q):
    sq = (X[:, None] - X[None, :]) ** 2
    return anp.exp(q[0]) * anp.exp(-0.5 * sq / anp.exp(q[1])) + 0.1 * np.eye(6)


def chol(q):
    return anp.linalg.cholesky(covariance(q))


CASES = {
    "gp": lambda q: (
        -anp.sum(anp.log(anp.diag(chol(q))))
        - 0.5 * anp.sum(solve_triangular(chol(q), Y, lower=True) ** 2)
    ),
    "triangular_transposed": lambda q: anp.sum(
        solve_triangular(chol(q), Y * q[2], lower=True, trans="T") ** 2
    ),
    "triangular_upper": lambda q: anp.sum(solve_triangular(chol(q).T, Y, lower=False) ** 2),
    "triangular_matrix": lambda q: anp.sum(solve_triangular(chol(q), B * q[2], lower=True) ** 2),
    "slogdet": lambda q: anp.linalg.slogdet(covariance(q))[1],
    "det": lambda q: anp.log(anp.linalg.det(covariance(q))),
    "inv": lambda q: anp.sum(anp.linalg.inv(covariance(q)) * B),
    "solve": lambda q: anp.sum(anp.linalg.solve(covariance(q), Y * q[2]) ** 2),
    "solve_matrix": lambda q: anp.sum(anp.linalg.solve(covariance(q), B) ** 2),
    "trace": lambda q: anp.trace(covariance(q) @ covariance(q)),
    "diagonal_matrix": lambda q: anp.sum(anp.diag(q) @ B[:3, :3]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_linear_algebra_compiles_and_agrees_with_autograd(name):
    f = CASES[name]
    density = compile_log_density(f, 3)
    for point in np.random.default_rng(2).normal(size=(4, 3)) * 0.4:
        lp, grad = density.evaluate(point)
        want_lp, want_grad = autograd.value_and_grad(f)(point)
        np.testing.assert_allclose(lp, want_lp, rtol=1e-9)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-7, atol=1e-9)


def correlated_pair(p):
    """Two observations of a bivariate normal with correlation ``r``, written by its
    Cholesky factor: a proposal with :math:`|r| \\ge 1` has a covariance that is not
    positive definite."""
    r = p["r"]
    cov = anp.array([[1.0, r], [r, 1.0]])
    factor = anp.linalg.cholesky(cov)
    white = solve_triangular(factor, np.array([0.9, 0.7]), lower=True)
    return -anp.sum(anp.log(anp.diag(factor))) - 0.5 * anp.sum(white**2)


@pytest.mark.parametrize("backend", ["numba", "autograd"])
def test_a_covariance_that_is_not_positive_definite_is_a_rejection(backend):
    """``r`` ranges over (-1.5, 1.5) where the density exists for |r| < 1 only: at r = 1.2
    the compiled density is nan and autograd's LinAlgError is a rejection (no reject_on
    given), and a whole default run keeps every draw inside the support."""
    model = hm.Model(correlated_pair, {"r": hm.interval(-1.5, 1.5)}, backend=backend)
    assert model.backend == backend
    z = model.unconstrain({"r": np.array([1.2, 0.3])}, chains=2)
    lp, _ = evaluate_target(model, np.asarray(z, dtype=float).reshape(2, 1))
    assert np.isnan(lp[0]) and np.isfinite(lp[1])
    size = 150 if backend == "numba" else 40  # autograd's NUTS costs ~0.1 s an iteration
    result = hm.sample(model, seed=3, progress=False, chains=2, warmup=size, draws=size)
    r = np.asarray(result.draws)[..., 0]
    assert np.all(np.abs(r) < 1)


def test_an_exception_that_is_not_a_rejection_names_reject_on():
    """A genuine error in the user's code still stops the run, and the message says how to
    declare it a rejection if it means "outside the support"."""

    def broken(p):
        if p["x"] > 1.0:  # a bug away from where the model is built
            raise KeyError("a missing column")
        return -0.5 * p["x"] ** 2

    model = hm.Model(broken, {"x": hm.real()}, backend="autograd")
    with pytest.raises(hm.ModelError, match=r"reject_on=\(KeyError,\)"):
        hm.sample(model, seed=1, progress=False, chains=1, warmup=5, draws=5)


def test_the_inverse_of_a_lower_factor_is_numpys():
    """The Cholesky adjoint's :math:`L^{-1}`, row by row."""
    from hamiltonia.modelling.linalg_special import lower_inverse

    a = np.random.default_rng(3).normal(size=(30, 30))
    factor = np.linalg.cholesky(a @ a.T + 30 * np.eye(30))
    np.testing.assert_allclose(lower_inverse(factor), np.linalg.inv(factor), atol=1e-14)
