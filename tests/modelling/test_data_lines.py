"""Products of a data matrix with a traced vector as loops along the matrix's lines
(:mod:`hamiltonia.modelling.data_lines`): the loops equal NumPy's products, and every way a
user writes the product compiles to them, forward and back, with autograd's gradient."""

import autograd.numpy as anp
import numpy as np
import pytest

from hamiltonia.modelling.user_target import compile_log_density
from tests.modelling.autograd_check import assert_matches_autograd


@pytest.mark.parametrize("lines", [1, 3, 4, 7, 24])
def test_the_loops_are_numpys_products(lines):
    """Four lines a pass and the lines left over: ``b @ M`` and ``M @ g``."""
    from hamiltonia.modelling.data_lines import combine_lines, dot_lines

    rng = np.random.default_rng(lines)
    m = rng.normal(size=(lines, 37))
    b, g = rng.normal(size=lines), rng.normal(size=37)
    np.testing.assert_allclose(combine_lines(m, b), b @ m, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(dot_lines(m, g), m @ g, rtol=1e-13, atol=1e-13)


_X = np.random.default_rng(0).normal(size=(60, 5))
_Y = (np.random.default_rng(1).uniform(size=60) < 0.5).astype(float)

#: The linear predictor written each way a user writes it; X tall (stored by columns) or
#: its transpose wide (stored by rows).
_PREDICTORS = {
    "X @ w": lambda w: _X @ w,
    "w @ X.T": lambda w: w @ _X.T,
    "np.dot(X, w)": lambda w: anp.dot(_X, w),
    "np.dot(w, X.T)": lambda w: anp.dot(w, _X.T),
}


@pytest.mark.parametrize("written", list(_PREDICTORS))
def test_every_way_of_writing_the_product_compiles_to_the_loops(written):
    predictor = _PREDICTORS[written]

    def logistic(w):
        z = predictor(w)
        return anp.sum(_Y * z - anp.logaddexp(0.0, z)) - 0.5 * anp.sum(w**2)

    target = compile_log_density(logistic, 5)
    text = target.source
    assert "combine_lines(" in text or "dot_lines(" in text, text
    assert "np.dot(" not in text, text
    points = np.random.default_rng(2).normal(size=(3, 5))
    assert_matches_autograd(target, logistic, points, rtol=1e-10, atol=1e-11)


def test_a_matrix_of_short_lines_or_a_traced_matrix_keeps_blas():
    """A tall data matrix also read by an elementwise product is stored by rows, lines of 5
    numbers: its product stays ``np.dot``, as does a product of two traced vectors."""

    def density(w):
        v = _X @ w + anp.sum(_X * w)  # X read elementwise too: stored by rows
        return -0.5 * anp.sum(v**2) - 0.5 * anp.dot(w[:2], w[2:4])

    target = compile_log_density(density, 5)
    assert "combine_lines(" not in target.source and "dot_lines(" not in target.source
    assert "np.dot(" in target.source
    points = np.random.default_rng(4).normal(size=(2, 5))
    assert_matches_autograd(target, density, points)
