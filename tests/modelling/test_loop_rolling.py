"""Loops stay loops (issue 50, item 1): a Python loop over the data, recorded unrolled, is
found again (:mod:`hamiltonia.modelling.loop_rolling`) and compiled as a loop with its
reverse-mode adjoint (:mod:`hamiltonia.modelling.adjoint_loops`).

Each model below is written as a user writes it, with a loop; for each, the rolled compiled
log density and gradient must equal autograd's (``compile_log_density`` checks three points
itself; here five more), the loop must be found, and the code must not grow with the
number of passes.
"""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from autograd.scipy.special import logsumexp

from hamiltonia.modelling.adjoint_source import gradient_source, rolled_loops
from hamiltonia.modelling.loop_rolling import MIN_PASSES
from hamiltonia.modelling.trace import trace_graph
from hamiltonia.modelling.user_target import compile_log_density
from tests.modelling.autograd_check import assert_matches_autograd

Y = np.random.default_rng(7).normal(size=400)
COUNTS = np.random.default_rng(8).poisson(3.0, size=400).astype(float)


def arma(q, T):
    """ARMA(1,1), a scalar carry (the error) and a running sum."""
    mu, phi, theta, sigma = q[0], anp.tanh(q[1]), anp.tanh(q[2]), anp.exp(q[3])
    err = Y[0] - mu
    lp = -0.5 * (err / sigma) ** 2
    for t in range(1, T):
        err = Y[t] - (mu + phi * (Y[t - 1] - mu) + theta * err)
        lp = lp - 0.5 * (err / sigma) ** 2
    return lp - T * anp.log(sigma) - 0.5 * q[0] ** 2


def moving_average_2(q, T):
    """MA(2): carries two passes back, with two initial values."""
    mu, t1, t2 = q[0], anp.tanh(q[1]), anp.tanh(q[2])
    e_prev2 = Y[0] - mu
    e_prev1 = Y[1] - mu - t1 * e_prev2
    lp = -0.5 * (e_prev2**2 + e_prev1**2)
    for t in range(2, T):
        e = Y[t] - mu - t1 * e_prev1 - t2 * e_prev2
        lp = lp - 0.5 * e**2
        e_prev2, e_prev1 = e_prev1, e
    return lp


def garch(q, T):
    """GARCH(1,1): a variance recursion through a positive transform, terms collected in a
    list and summed by ``np.sum(np.array(...))``."""
    mu, omega = q[0], anp.exp(q[1])
    alpha, beta = 0.5 / (1 + anp.exp(-q[2])), 0.4 / (1 + anp.exp(-q[3]))
    var = omega / (1 - alpha - beta)
    terms = []
    for t in range(1, T):
        var = omega + alpha * (Y[t - 1] - mu) ** 2 + beta * var
        terms.append(-0.5 * anp.log(var) - 0.5 * (Y[t] - mu) ** 2 / var)
    return anp.sum(anp.array(terms))


def hmm_vector(q, T):
    """A two-state HMM's forward algorithm on vectors, the emissions indexed by pass
    (``emission[..., t, :]``) and a log-sum-exp over an axis, as the suite's HMMs."""
    log_a = anp.log(anp.array([[0.9, 0.1], [0.2, 0.8]]))
    mu = anp.cumsum(anp.exp(q[:2]))
    emission = -0.5 * (Y[:T, None] - mu[None, :]) ** 2
    gamma = emission[..., 0, :]
    for t in range(1, T):
        gamma = logsumexp(gamma[..., :, None] + log_a, axis=-2) + emission[..., t, :]
    return logsumexp(gamma, axis=-1)


def latent_random_walk(q, T):
    """A state-space model: latent states are parameters (``x[t]`` indexes the input) and
    the Poisson counts' rates are read at each pass; Python's ``sum`` of the terms."""
    sigma = anp.exp(q[0])
    x = q[1 : T + 1]
    lp = -0.5 * x[0] ** 2
    for t in range(1, T):
        lp = lp - 0.5 * ((x[t] - x[t - 1]) / sigma) ** 2 - anp.log(sigma)
    return lp + sum(COUNTS[t] * x[t] - anp.exp(x[t]) for t in range(T))


def windowed(q, T):
    """A slice of the data that moves with the pass (``Y[t - 3:t]``), an AR(3) mean."""
    w = q[:3]
    lp = 0.0
    for t in range(3, T):
        lp = lp - 0.5 * (Y[t] - anp.dot(w, Y[t - 3 : t])) ** 2
    return lp


MODELS = {
    "arma": (arma, 4),
    "moving_average_2": (moving_average_2, 3),
    "garch": (garch, 4),
    "hmm_vector": (hmm_vector, 2),
    "latent_random_walk": (latent_random_walk, None),
    "windowed": (windowed, 3),
}


def _dim(name, T):
    dim = MODELS[name][1]
    return T + 1 if dim is None else dim


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_loop_compiles_as_a_loop_and_agrees_with_autograd(name):
    fn, T = MODELS[name][0], 120
    dim = _dim(name, T)
    f = lambda q: fn(q, T)  # noqa: E731
    graph = trace_graph(f, np.random.default_rng(0).normal(size=dim) * 0.3)
    loops = rolled_loops(graph)
    assert loops, "the loop was not found"
    assert sum(loop.count * loop.period for loop in loops) > len(graph.ops) / 2
    density = compile_log_density(f, dim)
    assert "for i_0 in range(" in density.source
    points = np.random.default_rng(1).normal(size=(5, dim)) * 0.3
    assert_matches_autograd(density, f, points, rtol=1e-8, atol=0.0, atol_per_lp=1e-10)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_code_does_not_grow_with_the_passes(name):
    """The same model over 100 and 400 points is written as the same code, but for the
    number of passes and the data's offsets: numba compiles the same function."""
    fn = MODELS[name][0]
    sizes = {}
    for T in (100, 400):
        graph = trace_graph(lambda q, T=T: fn(q, T), np.full(_dim(name, T), 0.1))
        sizes[T] = len(gradient_source(graph).text.splitlines())
        if T == 100:
            written_out = len(gradient_source(graph, loops=[]).text.splitlines())
    assert sizes[100] == sizes[400]
    assert written_out > 4 * sizes[100]


def test_rolled_and_written_out_code_give_the_same_numbers():
    """Rolling changes the code's shape, not its arithmetic: the same operations in the
    same order."""
    f = lambda q: garch(q, 60)  # noqa: E731
    point = np.array([0.1, -0.3, 0.2, 0.4])
    graph = trace_graph(f, point)
    results = []
    for loops in (None, []):
        source = gradient_source(graph, loops=loops)
        namespace = {"np": np}
        exec(source.text, namespace)  # plain Python: the generated code runs as NumPy too
        grad = np.empty(4)
        lp = namespace["log_prob_and_grad"](point.copy(), grad, source.fdata, source.idata)
        results.append((lp, grad))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_passes_that_differ_in_shape_or_are_few_stay_written_out():
    """A loop over growing prefixes (a shape per pass) has no repeating body; a loop of
    fewer than MIN_PASSES passes is left as straight-line code."""

    def growing(q):
        lp = 0.0
        for t in range(1, 60):
            lp = lp - 0.5 * anp.sum((Y[:t] - q[0]) ** 2)
        return lp

    assert rolled_loops(trace_graph(growing, np.zeros(1))) == []
    short = lambda q: arma(q, MIN_PASSES - 1)  # noqa: E731
    assert rolled_loops(trace_graph(short, np.full(4, 0.1))) == []


def test_a_data_dependent_branch_inside_the_loop_still_compiles_per_pass():
    """Passes that take different branches on the data (not the parameters: those are
    refused when recorded) differ in their operations; the runs that repeat are rolled and
    the result is still autograd's."""

    def branchy(q):
        lp = 0.0
        for t in range(200):
            if Y[t] > 0:
                lp = lp - 0.5 * (Y[t] - q[0]) ** 2
            else:
                lp = lp - anp.abs(Y[t] - q[1])
        return lp

    density = compile_log_density(branchy, 2)
    reference = autograd.value_and_grad(branchy)
    point = np.array([0.3, -0.2])
    lp, grad = density.evaluate(point)
    want_lp, want_grad = reference(point)
    np.testing.assert_allclose(lp, want_lp, rtol=1e-10)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-8)


def test_a_rolled_loop_that_fails_its_check_is_written_out_with_a_warning(monkeypatch):
    """The check against autograd guards the rolling too: a defect in a loop's code (here
    its reverse loop dropped) is caught, and the loop is written out pass by pass instead,
    so the model still compiles right; a Model says so in a CompileWarning."""
    import hamiltonia as hm
    from hamiltonia.modelling import adjoint_loops

    monkeypatch.setattr(adjoint_loops.LoopAdjoint, "statements", lambda self: [])
    f = lambda q: arma(q, 40)  # noqa: E731
    density = compile_log_density(f, 4)
    assert "written out pass by pass instead" in density.note
    assert "for i_0 in range(" not in density.source
    with pytest.warns(hm.CompileWarning, match="written out pass by pass instead"):
        model = hm.Model(lambda p: arma(p["q"], 40), {"q": hm.real(4)})
    assert model.backend == "numba"
    point = np.array([0.2, 0.1, -0.3, 0.05])
    np.testing.assert_allclose(density.evaluate(point)[1], autograd.grad(f)(point), rtol=1e-8)


def test_an_arma_over_200_points_samples_compiled_and_recovers_its_parameters():
    """Issue 50's model: ARMA(1,1) written with a loop over 200 simulated observations
    (:func:`hamiltonia.bench.loops.arma11_model`) builds with the default backend, compiled
    with its loop as a loop, and default NUTS puts the simulating parameters where the
    posterior says: :math:`z = (\\bar x - x_{\\text{true}})/\\sqrt{\\text{sd}^2 +
    \\text{mcse}^2}` within Bonferroni's bound for the four at a 1 % family-wise rate,
    :math:`\\Phi^{-1}(1 - 0.01/8) = 3.02` (over twelve data sets its z-scores had sd 1.06-1.18
    per parameter and means within 0.53 of 0). The data set and the chains use seed 50."""
    from scipy.stats import norm

    import hamiltonia as hm
    from hamiltonia.bench.loops import TRUE, arma11_model

    model = arma11_model(200, seed=50)
    assert model.backend == "numba" and "for i_0 in range(" in model.numba_kernel().source
    result = hm.sample(model, seed=50, progress=False)
    assert result.attrs["compiled"] and result.n_divergent == 0
    summary = result.summary()
    bound = norm.ppf(1 - 0.01 / (2 * len(TRUE)))
    for name, true in TRUE.items():
        row = summary.loc[name]
        z = (row["mean"] - true) / np.hypot(row["sd"], row["mcse"])
        assert abs(z) <= bound, (name, row["mean"], true, z)
