"""Chains of elementwise operations written as one loop over the elements
(hamiltonia.modelling.adjoint_fusion), adjoints of the input's views written as views of the
gradient (adjoint_views), running sums over a rolled loop's passes (running_sums) and the
loop's scalar carries and accumulators (adjoint_loops): each against autograd's value and
gradient, and against the same code generated without them (``fuse=False``), run as plain
NumPy."""

import re

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from hamiltonia.modelling.adjoint_source import gradient_source
from hamiltonia.modelling.trace import trace_graph
from hamiltonia.modelling.user_target import compile_log_density
from tests.modelling.autograd_check import assert_matches_autograd

Y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
SD = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])
ROWS = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
SERIES = np.random.default_rng(3).normal(size=120)


def schools(x):
    """Numbers broadcast over a vector, a chain of five steps, two sums."""
    theta = x[0] + anp.exp(x[1]) * x[2:10]
    prior = -0.5 * (x[0] / 5) ** 2 - anp.log1p((anp.exp(x[1]) / 5) ** 2)
    return prior - 0.5 * anp.sum(x[2:10] ** 2) - 0.5 * anp.sum(((Y - theta) / SD) ** 2)


def broadcasting(x):
    """A matrix against a row, a column and a number; a mean; a value read outside the loop
    (its product with a matrix); np.where; a 0-d array; powers."""
    m = anp.reshape(x[:12], (3, 4))
    row, col, zero_d = x[12:16], anp.reshape(x[16:19], (3, 1)), anp.array(x[19])
    z = anp.tanh(m * row - col) + zero_d * ROWS
    w = anp.where(z > 0.1, z**2, anp.sqrt(1.0 + z * z))
    return anp.mean(w) - anp.sum(anp.dot(z, row) ** 2) + anp.sum(row**3) - zero_d**2


def two_stages(x):
    """A sum read back by the same elements (two loops), a value of one shape read by
    another's loop."""
    v = anp.exp(0.3 * x)
    centred = v - anp.sum(v) / len(v)
    outer = anp.reshape(centred, (2, 3)) * anp.reshape(x, (2, 3))[:, :1]
    return -anp.sum(centred**2) + anp.sum(anp.log1p(outer * outer))


def autoregression(x):
    """An AR(2) with a running sum of the terms and the mean computed one pass ahead."""
    c, phi, sigma = x[0], x[1:3], anp.exp(x[3])
    lp = -0.5 * anp.sum(x**2)
    for t in range(2, len(SERIES)):
        mu = c + phi[0] * SERIES[t - 1] + phi[1] * SERIES[t - 2]
        lp = lp - 0.5 * ((SERIES[t] - mu) / sigma) ** 2
    return lp - (len(SERIES) - 2) * anp.log(sigma)


def recursion(x):
    """A true recurrence (an ARMA error) beside a running sum: carried both ways."""
    mu, theta, sigma = x[0], anp.tanh(x[1]), anp.exp(x[2])
    err, lp = SERIES[0] - mu, 0.0
    for t in range(1, 80):
        err = SERIES[t] - mu - theta * err
        lp = lp - 0.5 * (err / sigma) ** 2
    return lp - 79 * anp.log(sigma)


DENSITIES = {"schools": (schools, 10), "broadcasting": (broadcasting, 20),
             "two_stages": (two_stages, 6), "autoregression": (autoregression, 4),
             "recursion": (recursion, 3)}  # fmt: skip


def _run_as_numpy(source, point):
    namespace = {"np": np}
    exec(source.text, namespace)
    grad = np.empty(point.size)
    lp = namespace["log_prob_and_grad"](point.copy(), grad, source.fdata, source.idata)
    return lp, grad


@pytest.mark.parametrize("name", sorted(DENSITIES))
def test_fused_code_agrees_with_autograd(name):
    density, dim = DENSITIES[name]
    target = compile_log_density(density, dim, name)
    points = np.random.default_rng(11).normal(scale=0.7, size=(4, dim))
    assert_matches_autograd(target, density, points)


@pytest.mark.parametrize("name", sorted(DENSITIES))
def test_fused_and_plain_code_give_the_same_numbers(name):
    density, dim = DENSITIES[name]
    point = np.random.default_rng(12).normal(scale=0.5, size=dim)
    graph = trace_graph(density, point)
    fused, plain = (_run_as_numpy(gradient_source(graph, fuse=f), point) for f in (True, False))
    np.testing.assert_allclose(fused[0], plain[0], rtol=1e-12)
    np.testing.assert_allclose(fused[1], plain[1], rtol=1e-10, atol=1e-12)


def test_a_chain_of_small_arrays_is_one_loop_without_arrays():
    """Eight schools: the chain and both sums in one loop forward and one back, no array
    allocated, the adjoints added straight into the gradient's slices."""
    text = compile_log_density(schools, 10).source
    assert text.count("for u0_0 in range(8):") == 2
    assert "np.empty(" not in text and "np.zeros(" not in text and "np.full(" not in text
    assert "np.sum(" not in text
    assert "= g_0[2:10:]" in text


def test_a_matrix_is_looped_over_by_rows_and_columns():
    """The (3, 4) chain runs as nested loops, the row and the column read at their
    element, the sums as totals; ``z``, also read by a matrix product, is written into an
    array in the loop and its adjoint from the product read back by the reverse loop."""
    text = compile_log_density(broadcasting, 20).source
    assert "for u1_0 in range(3):\n        for u1_1 in range(4):" in text
    assert "np.full(" not in text and "np.sum(" not in text
    assert "np.dot(" in text and "[u1_0, u1_1] = w_" in text


def test_a_running_sum_is_added_up_in_the_loop_of_its_terms():
    """The AR's log density is a running sum: no loop of its own, no tape of its terms
    or of their adjoints; the mean, computed a pass ahead, gets a loop of its own before
    the recurrence-free rest; the coefficients' adjoints are summed in numbers."""
    text = compile_log_density(autoregression, 4).source
    assert "s_T1 += " in text and "for i_1 in" not in text
    assert "g_T" not in text  # no adjoint tape: numbers carried from pass to pass
    assert text.count("for i_0 in range(117):") == 2  # the last pass is written out
    assert "a0_0 = a0_0 + " in text


def test_a_true_recurrence_stays_one_loop():
    """The error's recursion is one loop forward (nothing to split off); the running sum,
    whose loop here covers all but one of the terms' passes, stays a loop, its total's
    adjoint carried from pass to pass in a number."""
    text = compile_log_density(recursion, 3).source
    assert text.count("for i_0 in range(79):") == 1
    assert "n_T2_0 = n_T2_0 + " in text


def test_a_value_read_only_by_a_later_loop_is_computed_there():
    """``y * z`` is read only after the softplus call: computed in the loop after it, not
    written into an array and read back; the vector the call reads is written once."""
    y = (np.arange(30) % 3 == 0).astype(float)

    def logistic(x):
        z = x[0] + 0.1 * x[1] * np.arange(30.0)
        return anp.sum(y * z - anp.logaddexp(0.0, z)) - 0.5 * anp.sum(x**2)

    target = compile_log_density(logistic, 2)
    text = target.source
    # Arrays: z (the call reads it), its adjoint, and the call's adjoint (only the loop
    # writes it, once an element: not zeroed).
    assert text.count("np.empty((30,))") == 2 and text.count("np.zeros((30,))") == 1
    assert "softplus_sigmoid_vector(" in text
    reference = autograd.value_and_grad(logistic)
    for point in np.random.default_rng(5).normal(size=(3, 2)):
        lp, grad = target.evaluate(point)
        np.testing.assert_allclose(lp, reference(point)[0], rtol=1e-10)
        np.testing.assert_allclose(grad, reference(point)[1], rtol=1e-9, atol=1e-12)


def test_a_symmetric_matrix_is_computed_over_its_lower_triangle():
    """A kernel matrix of symmetric data (distances, the identity) is symmetric: its forward
    loop runs over the lower triangle, writing both halves, its sums counting an element
    off the diagonal twice; with data that is not symmetric, over every element."""
    points = np.linspace(0.0, 3.0, 7)
    dist2 = (points[:, None] - points[None, :]) ** 2

    def gp(x, data):
        k = anp.exp(x[0]) * anp.exp(-0.5 * data / anp.exp(2 * x[1])) + anp.exp(x[2]) * np.eye(7)
        chol = anp.linalg.cholesky(k)
        return -anp.sum(anp.log(anp.diag(chol))) - anp.sum(k**2) / 50.0 - 0.5 * anp.sum(x**2)

    for data, lower in ((dist2, True), (dist2 + np.triu(np.ones((7, 7)), 1), False)):
        density = lambda x, data=data: gp(x, data)  # noqa: E731
        target = compile_log_density(density, 3)
        assert bool(re.search(r"in range\(u\d+_0 \+ 1\):", target.source)) is lower
        points = np.random.default_rng(6).normal(scale=0.3, size=(3, 3))
        assert_matches_autograd(target, density, points, atol=1e-12)
