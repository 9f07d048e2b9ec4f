"""Recording a user's log density for the compiled path (hamiltonia.modelling.trace): a
Python decision on a parameter's value is refused while recording, at any point and
whichever way it goes there, naming the line; what depends only on shapes, and comparisons
inside ``np.where``, are recorded and compiled.

Issue 26: a model with ``if x[0] > 1.0:`` compiled silently to the branch taken at the
recording point (posterior mean of x0 -0.007 against autograd's -0.32)."""

import inspect
import math
import threading

import autograd
import autograd.numpy as np
import numpy as onp
import pytest

import hamiltonia as hm
from hamiltonia.modelling.trace import TraceError, trace_graph
from hamiltonia.modelling.user_target import compile_log_density

from .test_adjoint import assert_matches_autograd

DATA = onp.linspace(-1.0, 2.0, 6)
MARK = "# refused"


def _refusal(fn) -> str:
    """A pattern for the message refusing ``fn``: this file, the line marked ``MARK`` in
    ``fn``'s source, and the ways out."""
    lines, start = inspect.getsourcelines(fn)
    (offset,) = [i for i, line in enumerate(lines) if MARK in line]
    return rf"test_trace\.py, line {start + offset}\b.*np\.where.*autograd backend"


# Each takes a Python decision on a value computed from the parameters, on the line marked.


def if_on_a_comparison(x):
    if x[0] > 0.5:  # refused
        return -np.sum(x**2)
    return -np.sum(x**4)


def a_branch_never_taken_at_the_check_points(x):
    # The comparison with autograd at three random points cannot see this one.
    if x[0] > 100.0:  # refused
        return -np.sum(x**4)
    return -np.sum(x**2)


def a_conditional_expression(x):
    return -np.sum(x**2) if x[1] < 0.0 else -np.sum(x**4)  # refused


def while_on_a_value(x):
    t = np.exp(x[0])
    while t > 1.0:  # refused
        t = t / 2.0
    return -np.sum(x**2) + t


def and_on_values(x):
    ok = x[0] > 0.0 and x[1] > 0.0  # refused
    return -np.sum(x**2) * (2.0 if ok is True else 1.0)


def or_on_values(x):
    scale = x[0] or 1.0  # refused
    return -np.sum(x**2) * scale


def not_on_a_value(x):
    return -np.sum(x**2) * (not x[2] > 0.0)  # refused


def bool_of_a_value(x):
    return -np.sum(x**2) * bool(x[0])  # refused


def float_of_a_value(x):
    return -np.sum(x**2) + float(x[0])  # refused


def int_of_a_value(x):
    return -np.sum(x**2) + int(x[0])  # refused


def range_of_a_value(x):
    total = 0.0
    for _ in range(np.floor(np.abs(x[0]) + 1.0)):  # refused
        total = total + x[1]
    return -np.sum(x**2) + total


def builtin_max(x):
    return -np.sum(x**2) + max(x[0], x[1])  # refused


def builtin_min(x):
    return -np.sum(x**2) + min(x[0], 0.0)  # refused


def builtin_sorted(x):
    return -np.sum(x**2) + sorted([x[0], x[1], x[2]])[0]  # refused


def item_of_a_value(x):
    return -np.sum(x**2) + x[0].item()  # refused


def math_of_a_value(x):
    return -np.sum(x**2) + math.exp(x[0])  # refused


def assert_on_a_value(x):
    assert x[0] > -10.0  # refused
    return -np.sum(x**2)


def membership(x):
    return -np.sum(x**2) * (2.0 if x[0] in (1.0, 2.0) else 1.0)  # refused


def any_of_a_value(x):
    if np.any(x > 3.0):  # refused
        return -np.inf
    return -np.sum(x**2)


def index_of_data_by_a_value(x):
    return -np.sum(x**2) + DATA[np.floor(np.abs(x[0]))]  # refused


def index_by_a_traced_integer_array(x):
    return -np.sum(x[np.argsort(x)] ** 2 * DATA[:3])  # refused


def index_by_a_traced_mask(x):
    return -np.sum(x[x > 0.0] ** 2)  # refused


def plain_numpy_array_of_a_value(x):
    return -np.sum(x**2) + onp.asarray(x)[0]  # refused


def index_by_argmax(x):
    return -np.sum(x**2) + DATA[np.argmax(x)]  # refused


def a_caught_refusal(x):
    # TraceError is a ValueError; catching it must not let one path's graph through.
    try:
        if x[0] > 0.0:  # refused
            return -np.sum(x**2)
    except ValueError:
        pass
    return -np.sum(x**4)


DECISIONS = [
    if_on_a_comparison,
    a_branch_never_taken_at_the_check_points,
    a_conditional_expression,
    while_on_a_value,
    and_on_values,
    or_on_values,
    not_on_a_value,
    bool_of_a_value,
    float_of_a_value,
    int_of_a_value,
    range_of_a_value,
    builtin_max,
    builtin_min,
    builtin_sorted,
    item_of_a_value,
    math_of_a_value,
    assert_on_a_value,
    membership,
    any_of_a_value,
    index_of_data_by_a_value,
    index_by_a_traced_integer_array,
    index_by_a_traced_mask,
    plain_numpy_array_of_a_value,
    index_by_argmax,
    a_caught_refusal,
]


@pytest.mark.parametrize("density", DECISIONS, ids=lambda f: f.__name__)
def test_a_decision_on_a_parameter_is_refused_naming_the_line(density):
    with pytest.raises(TraceError, match=_refusal(density)):
        compile_log_density(density, 3, density.__name__)


@pytest.mark.parametrize("point", [[2.0, 0.0, 0.0], [-2.0, 0.0, 0.0], [0.7, 0.3, -1.0]])
def test_the_refusal_does_not_depend_on_the_branch_taken(point):
    # Recorded on either side of the branch, or far from it.
    for density in (if_on_a_comparison, a_branch_never_taken_at_the_check_points):
        with pytest.raises(TraceError, match=_refusal(density)):
            trace_graph(density, onp.array(point))


def _branching_logp(p):
    x = p["x"]
    if x[0] > 1.0:  # refused
        return -0.5 * np.sum(x**2) - 3.0 * (x[0] - 1.0)
    return -0.5 * np.sum(x**2)


def _branch_on_a_scalar_block(p):
    if p["mu"] > 0.0:  # refused
        return -0.5 * p["mu"] ** 2 - p["s"]
    return -0.5 * p["mu"] ** 2 - 2.0 * p["s"]


def _truth_of_a_scalar_block(p):
    scale = 2.0 if p["s"] else 1.0  # refused
    return -0.5 * (p["mu"] / scale) ** 2 - p["s"]


@pytest.mark.parametrize(
    "logp, blocks",
    [
        (_branching_logp, {"x": hm.real(2)}),  # the model of the report
        (_branch_on_a_scalar_block, {"mu": hm.real(), "s": hm.positive()}),
        (_truth_of_a_scalar_block, {"mu": hm.real(), "s": hm.positive()}),
    ],
    ids=["report", "scalar-block", "truth-of-a-block"],
)
def test_a_branching_model_is_refused_when_built(logp, blocks):
    with pytest.raises(TraceError, match=_refusal(logp)):
        hm.Model(logp, blocks, backend="numba")


def test_a_branching_flat_log_density_is_refused_when_built():
    with pytest.raises(TraceError, match=_refusal(if_on_a_comparison)):
        hm.Target.from_logp(if_on_a_comparison, dim=3, backend="numba")


def shape_decisions_and_where(x):
    """Decisions on shapes (fixed), comparisons inside np.where and arithmetic."""
    n = len(x)
    assert x.shape == (n,) and x.ndim == 1 and x.size == n
    total = 0.0
    for i in range(len(x)):
        total = total + DATA[i] * x[i]
    for xi in x:  # iterating a vector indexes it with Python integers
        total = total + 0.1 * xi**2
    if x.shape[0] > 2:
        total = total + np.sum(np.where(x > 0.3, x**2, -x))
    return (
        total
        + np.where(x[0] > 0.1, x[0] ** 2, -x[0])
        + np.sum((x >= 0.0) * x)
        + np.sum(np.maximum(x, 0.2))
        + sum(abs(x[i]) for i in range(n))
    )


def test_shape_decisions_and_comparisons_in_where_compile_and_match_autograd():
    target = compile_log_density(shape_decisions_and_where, 4)
    points = onp.random.default_rng(3).normal(scale=1.5, size=(6, 4))
    assert_matches_autograd(target, shape_decisions_and_where, points)


def test_a_model_with_where_in_place_of_the_branch_compiles_and_matches_autograd():
    def logp(p):
        x = p["x"]
        penalty = np.where(x[..., 0] > 1.0, -3.0 * (x[..., 0] - 1.0), 0.0)
        return -0.5 * np.sum(x**2, axis=-1) + penalty

    model = hm.Model(logp, {"x": hm.real(2)}, backend="numba")
    reference = hm.Model(logp, {"x": hm.real(2)})
    z = onp.random.default_rng(5).normal(scale=2.0, size=(8, 2))
    lp, grad = model.log_prob_and_grad(z)
    want_lp, want_grad = reference.log_prob_and_grad(z)
    onp.testing.assert_allclose(lp, want_lp, rtol=1e-10)
    onp.testing.assert_allclose(grad, want_grad, rtol=1e-10, atol=1e-12)


def test_autograd_is_untouched_after_a_recording():
    from autograd.numpy.numpy_boxes import ArrayBox
    from autograd.tracer import Box

    with pytest.raises(TraceError):
        trace_graph(if_on_a_comparison, onp.ones(3))
    trace_graph(lambda x: np.sum(x**2), onp.ones(3))
    assert Box.type_mappings[onp.ndarray] is ArrayBox
    assert Box.type_mappings[onp.float64] is ArrayBox

    def branching(x):  # autograd's own gradient follows the branch, as ever
        return x[0] ** 2 if x[0] > 0 else -x[0] + float(x[1] > 0)

    onp.testing.assert_allclose(autograd.grad(branching)(onp.array([2.0, 1.0])), [4.0, 0.0])
    onp.testing.assert_allclose(autograd.grad(branching)(onp.array([-2.0, 1.0])), [-1.0, 0.0])


def test_a_gradient_taken_in_another_thread_during_a_recording_still_branches():
    started, release, results = threading.Event(), threading.Event(), []

    def slow(x):  # holds the recording open while the other thread differentiates
        started.set()
        release.wait(10)
        return np.sum(x**2)

    def as_numpy_sees_it(x):  # numpy makes an object array of an ArrayBox's elements
        seen = onp.asarray(x)
        assert seen.dtype == object and seen.shape == (3,)
        return np.sum(x**2)

    def other():
        started.wait(10)
        try:
            point = onp.array([1.0, 2.0, 3.0])
            results.append(autograd.grad(if_on_a_comparison)(point))
            results.append(autograd.grad(as_numpy_sees_it)(point))
        finally:
            release.set()

    thread = threading.Thread(target=other)
    thread.start()
    trace_graph(slow, onp.ones(3))
    thread.join()
    onp.testing.assert_allclose(results[0], [-2.0, -4.0, -6.0])
    onp.testing.assert_allclose(results[1], [2.0, 4.0, 6.0])
    onp.testing.assert_allclose(autograd.grad(as_numpy_sees_it)(onp.ones(3)), [2.0] * 3)
