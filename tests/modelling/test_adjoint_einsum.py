"""``np.einsum`` and ``np.outer`` on the compiled path (issue 53, item 1): each contraction
gives autograd's value and gradient; a model written with ``einsum`` builds compiled; a
function without a compiled derivative is named with the user's line."""

import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.modelling.trace import TraceError
from hamiltonia.modelling.user_target import compile_log_density

RNG = np.random.default_rng(0)
X = RNG.normal(size=(7, 3))
M = RNG.normal(size=(3, 3))
T3 = RNG.normal(size=(2, 3, 4))

CASES = {
    "dot": lambda q: anp.einsum("i,i->", q, q),
    "matrix_vector": lambda q: anp.sum(anp.einsum("ij,j->i", X, q) ** 2),
    "implicit_output": lambda q: anp.sum(anp.exp(anp.einsum("ij,j", X, q))),
    "quadratic_form": lambda q: anp.einsum("i,ij,j->", q, M, q),
    "matrix_matrix": lambda q: anp.sum(anp.einsum("ij,jk->ik", X, M * q[0]) ** 2),
    "sum_all": lambda q: anp.einsum("ij->", anp.outer(q, q)),
    "sum_rows": lambda q: anp.sum(anp.einsum("ij->j", X * q) ** 2),
    "tensor_vector": lambda q: anp.sum(anp.einsum("bij,j->bi", T3[:, :, :3] * q[0], q) ** 2),
    "batch": lambda q: anp.sum(anp.einsum("bi,bi->b", X * q, X) ** 2),
    "transpose": lambda q: anp.sum(anp.einsum("ij->ji", anp.outer(q, q * 2)) * M),
    "three_axes": lambda q: anp.sum(anp.einsum("ijk,k->ij", T3, anp.concatenate([q, q[:1]])) ** 2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_einsum_compiles_and_agrees_with_autograd(name):
    f = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numba's performance warnings included
        density = compile_log_density(f, 3)
    for point in RNG.normal(size=(3, 3)):
        lp, grad = density.evaluate(point)
        want_lp, want_grad = autograd.value_and_grad(f)(point)
        np.testing.assert_allclose(lp, want_lp, rtol=1e-10)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-8, atol=1e-12)


def test_a_logistic_regression_written_with_einsum_builds_compiled():
    """The issue's case: ``einsum`` fell to autograd with a CompileWarning (21x slower)."""
    y = (X @ np.array([1.0, -1.0, 0.5]) > 0).astype(float)

    def logp(p):
        z = anp.einsum("nk,k->n", X, p["w"])
        return anp.sum(y * z - anp.logaddexp(0.0, z)) - 0.5 * anp.sum(p["w"] ** 2)

    with warnings.catch_warnings():
        warnings.simplefilter("error", hm.CompileWarning)
        model = hm.Model(logp, {"w": hm.real(3)})
    assert model.backend == "numba"


def test_a_function_without_a_compiled_derivative_is_named_with_its_line():
    def logp(q):
        return anp.sum(anp.sort(q) * np.arange(3.0))  # the line to name

    with pytest.raises(TraceError, match=r"sort at .*test_adjoint_einsum\.py, line \d+ "
                       r"\('return anp\.sum\(anp\.sort\(q\)"):  # fmt: skip
        compile_log_density(logp, 3)
