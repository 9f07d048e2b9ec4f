"""The generated compiled log densities and gradients (hamiltonia.modelling.adjoint_source)
against autograd's, rule by rule, and the errors of densities they cannot represent.

Each density below exercises a group of rules; :func:`compile_log_density` itself compares
the compiled value and gradient with autograd's at three points when it builds them, and
the tests compare again at other points, far from the ones it was traced at."""

import re

import autograd
import autograd.numpy as np
import autograd.scipy.special as special
import autograd.scipy.stats.norm as norm
import numpy as onp
import pytest

from hamiltonia.modelling.adjoint_source import supported_functions
from hamiltonia.modelling.trace import TraceError
from hamiltonia.modelling.user_target import compile_log_density
from tests.fresh_process import printed_by
from tests.modelling.autograd_check import assert_matches_autograd

DATA = onp.linspace(-1.0, 2.0, 6)
INDEX = onp.array([0, 2, 2, 5])
MASK = onp.array([True, False, True, True, False, True])
MATRIX = onp.arange(12.0).reshape(4, 3) / 10


def unary(x):
    pos = np.exp(0.3 * x)
    terms = [
        np.log(pos + 1.0), np.sqrt(pos), np.log1p(pos), np.expm1(0.1 * x), np.tanh(x),
        np.sinh(0.2 * x), np.cosh(0.2 * x), np.sin(x), np.cos(x), np.arctan(x), np.abs(x),
        np.square(x), 1.0 / pos, np.reciprocal(pos), -x, x**3, pos**0.5, pos**x, 2.0**x,
        special.expit(x), special.gammaln(pos + 0.5), np.exp(x) * DATA,
    ]  # fmt: skip
    return sum(np.sum(t) for t in terms)


def binary(x):
    m = np.reshape(x, (2, 3))
    row, col = m[0], m[:, :1]
    terms = [
        m * row, m / (2.0 + np.exp(col)), np.logaddexp(m, col), np.logaddexp(0.0, m),
        np.maximum(m, row), np.minimum(m, 0.1), m - col, np.exp(col) ** row,
        np.where(m > 0.2, m, 2.0 * m), np.where(m < DATA.reshape(2, 3), m * m, 1.0),
        (m >= 0.0) * m, np.sign(m) * m, np.floor(3.0 * m) + m,
        np.where(x[0] > 0.1, x[0] ** 2, -x[0]),  # a comparison of a number
    ]  # fmt: skip
    return sum(np.sum(t) for t in terms)


def shapes(x):
    m = np.reshape(x, (2, 3))
    cube = np.reshape(np.concatenate([x, x * x]), (2, 3, 2))
    terms = [
        np.sum(m, axis=0) * DATA[:3], np.sum(m, axis=1, keepdims=True) * m,
        np.mean(cube, axis=(0, 2)), np.sum(cube, axis=-1) ** 2, np.mean(x) * x,
        np.max(x) * x, np.min(m), np.cumsum(x) ** 2, np.transpose(m) * MATRIX[:3, :2],
        m.T, np.ravel(m) * DATA, np.squeeze(m[:1]), np.expand_dims(x, 0) ** 2,
        np.stack([x, 2 * x], axis=1) ** 2, np.array([x[0], x[3] * x[1], 2.0]) ** 2,
        special.logsumexp(x), x[2], x[1:5:2] ** 2, x[::-1] * DATA, x[None, :] * DATA,
        m[..., 1] ** 2, x[INDEX] ** 2, x[MASK] * DATA[:4], m[onp.array([1, 1, 0])] ** 2,
        np.concatenate([m, m * m], axis=1) ** 2, x[0:1] * x, x * [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        np.reshape(x[:3], (3, 1)) * x[:2],
        # Only new axes (and ...): the whole operand, as np.stack on axis 0 indexes it.
        x[None] * DATA, x[..., None] * DATA[:2], x[None, ...] ** 2, np.stack([x, 2 * x]) ** 2,
    ]  # fmt: skip
    return sum(np.sum(t) for t in terms)


def linear(x):
    v, w = x[:3], x[3:]
    a = np.reshape(np.concatenate([x, x]), (4, 3))
    terms = [
        np.dot(v, w), np.dot(MATRIX, v) ** 2, np.dot(v, MATRIX.T) * 0.5, a @ v, v @ a.T,
        np.dot(a.T, a), np.matmul(MATRIX, w), 2.0 * np.dot(w, 3.0),
        norm.logpdf(DATA, x, np.exp(0.1 * x)), norm.logpdf(x), norm.logpdf(x[0], 1.0, 2.0),
    ]  # fmt: skip
    return sum(np.sum(t) for t in terms)


def reductions(x):
    """logsumexp over axes (a mixture's components), and the gradient of indexing by an
    array on any axis whose others are whole (a group effect ``g[..., idx]``)."""
    m = np.reshape(x, (2, 3))
    cube = np.reshape(np.concatenate([x, x * x]), (2, 3, 2))
    terms = [
        special.logsumexp(m, axis=-1) ** 2, special.logsumexp(m, axis=0) * DATA[:3],
        special.logsumexp(cube, axis=(0, 2)) ** 2, special.logsumexp(m, axis=1, keepdims=True) * m,
        special.logsumexp(cube, axis=1), special.logsumexp(m, keepdims=True) * m,
        m[..., onp.array([2, 0, 2, 1])] ** 2, m[:, onp.array([1, 1])] * DATA[:2],
        x[..., INDEX] ** 2, cube[:, onp.array([2, 0]), ...] ** 3,
        np.sin(cube[..., onp.array([1, 1])]),
    ]  # fmt: skip
    return sum(np.sum(t) for t in terms)


def test_logsumexp_over_axes_and_a_group_lookup_compile():
    target = compile_log_density(reductions, 6, "reductions")
    points = onp.random.default_rng(9).normal(scale=1.5, size=(5, 6))
    assert_matches_autograd(target, reductions, points)
    # Non-finite terms: the row's maximum is returned as logsumexp_all does.
    lse = compile_log_density(lambda x: np.sum(special.logsumexp(np.reshape(x, (2, 3)), 1)), 6)
    for bad, want in ((-onp.inf, -onp.inf), (onp.inf, onp.inf)):
        x = onp.zeros(6)
        x[:3] = bad
        assert lse.evaluate(x)[0] == want
    x = onp.zeros(6)
    x[1] = onp.nan
    assert onp.isnan(lse.evaluate(x)[0])


@pytest.mark.parametrize(
    "density, message",
    [
        (lambda x: special.logsumexp(x, b=DATA), "without b= and return_sign="),
        (lambda x: np.sum(np.reshape(x, (2, 3))[1:, onp.array([0, 2])]),
         "other axes are taken whole"),
    ],
)  # fmt: skip
def test_reductions_and_lookups_it_cannot_compile_are_named(density, message):
    with pytest.raises(TraceError, match=message):
        compile_log_density(density, 6)


@pytest.mark.parametrize("density", [unary, binary, shapes, linear])
def test_compiled_gradient_equals_autograds(density):
    target = compile_log_density(density, 6, density.__name__)
    assert_matches_autograd(
        target, density, onp.random.default_rng(7).normal(scale=1.5, size=(5, 6))
    )
    # A batch of rows gives each row's values.
    rows = onp.random.default_rng(8).normal(size=(2, 3, 6))
    lps, grads = target.rows(rows)
    assert lps.shape == (2, 3) and grads.shape == (2, 3, 6)
    want = autograd.grad(density)(rows[1, 2])
    onp.testing.assert_allclose(grads[1, 2], want, rtol=1e-9, atol=1e-9)


def test_the_data_go_into_arrays_not_the_source():
    big = onp.random.default_rng(0).normal(size=50)

    def density(x):
        return -0.5 * np.sum((big - x[0]) ** 2) - 0.5 * x[1] ** 2

    target = compile_log_density(density, 2)
    assert "fdata[0:50]" in target.source and repr(float(big[0])) not in target.source
    onp.testing.assert_array_equal(target.fdata, big)


def test_the_source_avoids_the_forms_numba_is_slow_to_compile():
    """A sum of a vector over its axis, a 1-d constant reshaped and an array added into a
    slice each make numba compile a formatted error message (seconds on a model's first
    run): the generated source writes them as a plain sum, the slice, and a loop (here the
    loop over the elements of the fused chains, adding into views of the gradient)."""
    weights = onp.linspace(0.5, 1.5, 4)

    def density(x):
        centre = x[0:1] * weights  # (4,): its adjoint sums a vector into a slice of one
        return -0.5 * np.sum((centre - weights) ** 2) - 0.5 * np.sum(x[1:5] ** 2)

    target = compile_log_density(density, 5)
    assert "axis=" not in target.source and ".reshape(" not in target.source
    # An index with a slice is an array: never the target of an augmented assignment.
    assert not re.search(r"\[[^\]]*:[^\]]*\]\s*\+=", target.source)
    # The slices' adjoints are views of the gradient, added into element by element.
    assert "= g_0[0:1:]" in target.source and "= g_0[1:5:]" in target.source
    assert re.search(r"g_\d+\[u0_0\] \+=", target.source)
    assert_matches_autograd(target, density, onp.random.default_rng(1).normal(size=(3, 5)))


def test_branching_on_a_parameter_is_refused_with_the_way_out():
    def density(x):
        if x[0] > 0:
            return -np.sum(x**2)
        return -np.sum(x**4)

    with pytest.raises(TraceError, match=r"np\.where"):
        compile_log_density(density, 2)


def test_a_computation_that_changes_between_points_is_caught():
    calls = []

    def density(x):  # a different computation after the point it was recorded at
        calls.append(1)
        return -np.sum(x**2) if len(calls) == 1 else -np.sum(x**4)

    with pytest.raises(TraceError, match="differs from autograd"):
        compile_log_density(density, 2)


def test_a_function_without_a_compiled_derivative_is_named_with_the_alternatives():
    with pytest.raises(TraceError, match=r"sort has no compiled derivative.*logaddexp"):
        compile_log_density(lambda x: np.sum(np.sort(x) * DATA[:3]), 3)


@pytest.mark.parametrize(
    "density, message",
    [(lambda x: x * 2.0, "one number"), (lambda x: 1.0, "does not depend")],
)
def test_what_is_not_a_log_density_is_refused(density, message):
    with pytest.raises(TraceError, match=message):
        compile_log_density(density, 3)


def test_the_supported_functions_are_listed_by_name():
    names = supported_functions()
    assert {"exp", "logaddexp", "indexing", "dot", "gammaln", "logpdf"} <= set(names)


def test_the_source_imports_only_the_special_functions_it_calls():
    plain = compile_log_density(lambda x: -0.5 * np.sum(x**2), 3)
    assert "hamiltonia.modelling.special" not in plain.source
    with_gamma = compile_log_density(lambda x: np.sum(special.gammaln(np.exp(x))), 3)
    assert "from hamiltonia.modelling.special import digamma, lgamma\n" in with_gamma.source


def test_compiling_a_model_without_scipy_stats_does_not_import_it():
    """Importing scipy.stats takes 0.4 s of a first run; its rule is registered when a
    model calls it (through autograd.scipy.stats, which imports it)."""
    script = (
        "import sys\n"
        "import autograd.numpy as np\n"
        "from hamiltonia.modelling.user_target import compile_log_density\n"
        "compile_log_density(lambda x: -0.5 * np.sum(x ** 2), 3)\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    assert printed_by(script) == ["False"]
    # A model that calls it gets its rule.
    target = compile_log_density(lambda x: np.sum(norm.logpdf(x, 0.5, 2.0)), 3)
    assert_matches_autograd(target, lambda x: np.sum(norm.logpdf(x, 0.5, 2.0)), onp.ones((2, 3)))


def test_a_density_not_finite_at_a_test_point_compiles_without_an_invalid_tolerance():
    """Where the log density is nan or -inf at a test point (normal(0, 1) draws; the
    second coordinate is negative at two of the three), the finite values are compared on
    a scale of their own, without numpy's "One of rtol or atol is not valid" (an infinite or
    nan tolerance)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # log of a negative number: nan at two test points, its gradient finite.
        compile_log_density(lambda x: -0.5 * np.sum(x**2) + np.log(x[1]), 3)
        # -inf at every test point, with a finite gradient.
        compile_log_density(lambda x: -0.5 * np.sum(x**2) - onp.inf, 3)


def test_a_computation_that_changes_where_the_density_is_not_finite_is_caught():
    """An infinite log density made the tolerance infinite, and the comparison of the
    gradients vacuous; its finite gradient is compared now, and a non-finite log density
    must be the same one (-inf is not nan)."""
    calls = []

    def density(x):
        calls.append(1)  # the graph is recorded on the first call only
        return (-np.sum(x**2) if len(calls) == 1 else -np.sum(x**4)) - onp.inf

    with pytest.raises(TraceError, match="differs from autograd"):
        compile_log_density(density, 2)
    calls.clear()

    def nan_after(x):
        calls.append(1)  # -inf when recorded, nan afterwards
        return -np.sum(x**2) + (-onp.inf if len(calls) == 1 else onp.nan)

    with pytest.raises(TraceError, match="differs from autograd"):
        compile_log_density(nan_after, 2)
