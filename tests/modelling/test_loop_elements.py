"""A rolled loop's body written element by element into its tapes
(:mod:`hamiltonia.modelling.loop_elements`): the HMMs' forward algorithm allocates nothing
per pass, forward or back, and every loop shape agrees with autograd and with the array
code it replaces (``loop_elements.ENABLED = False``)."""

import re
import warnings

import autograd.numpy as anp
import numpy as np
import pytest
from autograd.scipy.special import logsumexp

import hamiltonia.posteriors as posteriors
from hamiltonia.modelling import loop_elements
from hamiltonia.modelling.adjoint_source import gradient_source, rolled_loops
from hamiltonia.modelling.trace import trace_graph
from hamiltonia.modelling.user_target import compile_log_density
from hamiltonia.targets.base import CompileWarning
from tests.modelling.autograd_check import assert_matches_autograd
from tests.modelling.test_loop_rolling import MODELS as LOOPS
from tests.modelling.test_loop_rolling import Y

#: What allocates an array (or copies one) in generated code.
ALLOCATING = re.compile(
    r"np\.(empty|zeros|full|ones|broadcast_to|ascontiguousarray|transpose|sum|concatenate)\b"
    r"|\.copy\(\)|\.reshape\(|logsumexp_rows\(|\badd_\d+ =|\bsrc_\d+ ="
)
#: A body value (or its adjoint) held as an array of the pass rather than in its tape.
PASS_LOCAL = re.compile(r"\b[vg]_L\d+_\d+ =")


def views_and_reductions(q, T):
    """A vector state through every form written element by element: a new axis, a
    transpose, a sum and a keepdims mean over an axis, a reshape adding an axis, a number
    broadcast over a vector (its adjoint summed), data that differs by pass, a traced
    array indexed by the pass, a reversed slice, a log-sum-exp over the first axis and
    sums of arrays into numbers."""
    a = anp.reshape(q[:4], (2, 2)) * 0.3
    s = anp.exp(q[4])
    drive = anp.tanh(anp.reshape(q[5:7], (1, 2)) * Y[:T, None])  # (T, 2), traced
    x = anp.tanh(q[5:7])
    lp = 0.0
    for t in range(1, T):
        m = anp.transpose(x[:, None] * a)
        x = anp.tanh(anp.sum(m, axis=1) + s * Y[t] + 0.1 * drive[t])
        e = anp.expand_dims(x, 0) - anp.mean(m, axis=0, keepdims=True)
        z = e[0, ::-1] * Y[t - 1]
        lp = lp - 0.5 * anp.sum(e**2) + anp.sum(logsumexp(z[:, None] + x[None, :], axis=0))
    return lp - 0.5 * anp.sum(q**2)


def array_code_between(q, T):
    """Values written element by element read by array code the path leaves as it is (a
    stack, a product of a matrix and a vector), and the other way round."""
    a = anp.reshape(q[:4], (2, 2)) * 0.5
    x = anp.tanh(q[4:6])
    lp = 0.0
    for t in range(1, T):
        both = anp.stack([x * Y[t], anp.exp(-x)])
        x = anp.tanh(anp.dot(a, logsumexp(both, axis=0)) + Y[t - 1])
        lp = lp + logsumexp(x)
    return lp - 0.5 * anp.sum(q**2)


def scalar_carries(q, T):
    """A number carried through a log-sum-exp of a vector (its adjoint kept in two
    numbers), a running sum of sums over a vector, a softplus of a vector."""
    v = anp.tanh(q[:3])
    g = 0.0
    lp = 0.0
    for t in range(1, T):
        g = logsumexp(g * 0.5 + v * Y[t]) - 1.0
        lp = lp + anp.sum(anp.exp(-((v - Y[t]) ** 2))) + g - anp.sum(anp.logaddexp(0.0, v * Y[t]))
    return lp - 0.5 * anp.sum(q**2)


SHAPES = {"arma": LOOPS["arma"], "garch": LOOPS["garch"], "hmm_vector": LOOPS["hmm_vector"],
          "views_and_reductions": (views_and_reductions, 7),
          "array_code_between": (array_code_between, 6),
          "scalar_carries": (scalar_carries, 3)}  # fmt: skip


def _loop_bodies(source: str) -> list[str]:
    """The text of every rolled loop over the passes (``for i_N in range(...)``), forward
    and reverse, up to the next statement at the loop's own indentation."""
    lines = source.splitlines()
    bodies = []
    for n, line in enumerate(lines):
        if re.match(r"\s*for i_\d+ in range\(", line):
            indent = len(line) - len(line.lstrip())
            body = []
            for later in lines[n + 1 :]:
                if later.strip() and len(later) - len(later.lstrip()) <= indent:
                    break
                body.append(later)
            bodies.append("\n".join(body))
    return bodies


def _build(name: str, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = posteriors.get(name, **options)
    assert not [w for w in caught if issubclass(w.category, CompileWarning)]
    return model


@pytest.mark.parametrize("name", ["hmm_example-hmm_example", "bball_drive_event_0-hmm_drive_0"])
def test_the_hmms_passes_allocate_nothing_and_agree_with_autograd(name):
    model = _build(name)
    source = model.numba_kernel().source
    bodies = _loop_bodies(source)
    assert len(bodies) == 4  # the emissions' loop and the forward algorithm, each way
    for body in bodies:  # every body value of the HMMs is an array
        assert not ALLOCATING.search(body) and not PASS_LOCAL.search(body), body
    reference = _build(name, backend="autograd")
    for z in np.random.default_rng(2).normal(size=(5, model.dim)):
        lp, grad = model.log_prob_and_grad(z)
        want_lp, want_grad = reference.log_prob_and_grad(z)
        np.testing.assert_allclose(lp, want_lp, rtol=1e-9)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-12 * np.abs(want_lp))


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_loop_written_by_element_agrees_with_autograd(name):
    fn, dim = SHAPES[name]
    T = 120
    f = lambda q: fn(q, T)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        density = compile_log_density(f, dim)
    assert "for i_0 in range(" in density.source
    points = np.random.default_rng(4).normal(size=(5, dim)) * 0.5
    assert_matches_autograd(density, f, points, lp_rtol=1e-9, atol=0.0, atol_per_lp=1e-12)


@pytest.mark.parametrize("name", ["hmm_vector", "views_and_reductions"])
def test_a_body_of_small_arrays_allocates_nothing_per_pass(name):
    fn, dim = SHAPES[name]
    graph = trace_graph(lambda q: fn(q, 120), np.full(dim, 0.1))
    text = gradient_source(graph).text
    arrays = [
        f"{kind}_L{loop.number}_{slot}"
        for loop in rolled_loops(graph)
        for slot, op in enumerate(loop.body(graph))
        for kind in "vg"
        if op.shape
    ]
    bodies = _loop_bodies(text)
    assert bodies and arrays
    for body in bodies:
        # The numbers of the pass (``v_L2_12 = 0.5 * v_T2_11[i_2 + 0]``) are no arrays.
        assert not ALLOCATING.search(body), body
        assert not any(re.search(rf"\b{name} =", body) for name in arrays), body


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_element_code_gives_the_array_codes_numbers(name, monkeypatch):
    """The same operations in the same order, each element as the array code computes it:
    equal to rounding, run as plain NumPy."""
    fn, dim = SHAPES[name]
    f = lambda q: fn(q, 60)  # noqa: E731
    point = np.random.default_rng(5).normal(size=dim) * 0.5
    graph = trace_graph(f, point)
    results = []
    for enabled in (True, False):
        monkeypatch.setattr(loop_elements, "ENABLED", enabled)
        source = gradient_source(graph)
        namespace = {"np": np, **_special()}
        exec(source.text, namespace)
        grad = np.empty(dim)
        lp = namespace["log_prob_and_grad"](point.copy(), grad, source.fdata, source.idata)
        results.append((lp, grad))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-13)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-11, atol=1e-13)


def _special() -> dict:
    from hamiltonia.modelling import special

    return {n: getattr(special, n) for n in dir(special) if not n.startswith("_")}


@pytest.mark.parametrize("case", ["a transition of probability 0", "tied states"])
def test_a_two_term_log_sum_exp_has_no_branch_on_the_larger_and_keeps_the_infinities(case):
    """A log-sum-exp of two terms in a loop's body (a two-state HMM) is
    ``max + log1p(exp(-|a - b|))``, with autograd's value and gradient where a term is
    ``-inf`` (``log 0``: weighted 0) and where the two terms tie in every pass (two states
    of the same mean and transitions: weighted one half each)."""
    if case == "tied states":
        probabilities, offsets = [[0.5, 0.5], [0.5, 0.5]], [0.0, 0.0]
    else:  # state 0 never leaves
        probabilities, offsets = [[1.0, 0.0], [0.3, 0.7]], [0.0, 1.0]
    with np.errstate(divide="ignore"):
        log_theta = np.log(np.array(probabilities))

    def hmm(q, T=80):
        mu = anp.array(offsets) + q[0] + (0.0 if case == "tied states" else q[1] * anp.array(
            [0.0, 1.0]))  # fmt: skip
        g = -0.5 * (Y[0] - mu) ** 2
        for t in range(1, T):
            g = logsumexp(g[:, None] + log_theta, axis=0) - 0.5 * (Y[t] - mu) ** 2
        return logsumexp(g) - 0.5 * anp.sum(q**2)

    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        density = compile_log_density(hmm, 2)
    body = "".join(_loop_bodies(density.source))
    assert "np.log1p(" in body and " == 0.0 else np.exp(" not in body
    points = np.random.default_rng(6).normal(size=(4, 2)) * 0.5
    assert_matches_autograd(density, hmm, points, lp_rtol=1e-10, atol=0.0, atol_per_lp=1e-12)
