"""The compile budget (issue 50, item 2): a model whose compile would take long is known by
its recorded size, before numba starts, and runs with autograd at once, saying why.

A Python loop over :math:`T` data points is recorded unrolled; when its passes repeat the
same operations it is compiled as a loop (:mod:`hamiltonia.modelling.loop_rolling`) and its
body counts once, else numba's compile time grows with the recording, faster than linearly:
for the :math:`S` scalar and :math:`A` array operations written the prediction is
:math:`1.2 + 0.003\\,S + 1.2 \\cdot 10^{-6} S^2 + 2.6 \\cdot 10^{-4} A^{2.35}` seconds
(:func:`~hamiltonia.modelling.compile_budget.estimated_seconds`, fitted to measured compiles).
"""

import time
import warnings

import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.modelling import compile_budget, user_target
from hamiltonia.modelling.adjoint_source import rolled_loops
from hamiltonia.modelling.compile_budget import (
    COMPILE_BUDGET_SECONDS,
    CompileBudgetError,
    estimated_seconds,
    operation_counts,
)
from hamiltonia.modelling.parameters import ParameterLayout
from hamiltonia.modelling.trace import TraceError, trace_graph

Y = np.random.default_rng(50).normal(size=1000)
ARMA = {"mu": hm.real(), "phi": hm.real(), "theta": hm.real(), "sigma": hm.positive()}
HMM = {"mu": hm.ordered(2), "stay": hm.interval(0, 1)}


def arma_logp(T):
    """The ARMA(1,1) log density over ``Y[:T]`` as a user writes it, with a loop over time:
    :math:`\\nu_t = \\mu + \\phi y_{t-1} + \\theta \\epsilon_{t-1}`,
    :math:`\\epsilon_t = y_t - \\nu_t \\sim N(0, \\sigma)` (posteriordb's ``arma11``)."""

    def logp(p):
        mu, phi, theta, sigma = p["mu"], p["phi"], p["theta"], p["sigma"]
        err = Y[0] - (mu + phi * mu)
        lp = -0.5 * (err / sigma) ** 2
        for t in range(1, T):
            err = Y[t] - (mu + phi * Y[t - 1] + theta * err)
            lp = lp - 0.5 * (err / sigma) ** 2
        return (lp - T * anp.log(sigma) - 0.5 * (mu / 10) ** 2 - 0.5 * (phi / 2) ** 2
                - 0.5 * (theta / 2) ** 2 - anp.log1p((sigma / 5) ** 2))  # fmt: skip

    return logp


def hmm_logp(T):
    """A two-state Gaussian hidden Markov model over ``Y[:T]``, the forward algorithm

    .. math::

        \\alpha_t(j) = \\log\\sum_i e^{\\alpha_{t-1}(i) + \\log A_{ij}} + \\log N(y_t; \\mu_j, 1),

    written with a loop over time on vectors of the two states (one point at a time)."""

    def logp(p):
        mu, stay = p["mu"], p["stay"]
        log_a = anp.log(anp.array([stay, 1 - stay]))
        alpha = np.log(0.5) - 0.5 * (Y[0] - mu) ** 2
        for t in range(1, T):
            to_0 = anp.logaddexp(alpha[0] + log_a[0], alpha[1] + log_a[1])
            to_1 = anp.logaddexp(alpha[0] + log_a[1], alpha[1] + log_a[0])
            alpha = anp.array([to_0, to_1]) - 0.5 * (Y[t] - mu) ** 2
        return anp.logaddexp(alpha[0], alpha[1]) - 0.5 * anp.sum(mu**2)

    return logp


def growing_logp(T):
    """A loop whose passes differ in shape (a sum over the first :math:`t` points at pass
    :math:`t`), so that it is written out pass by pass: about :math:`2T` array operations."""

    def logp(p):
        lp = -0.5 * (p["mu"] / 10) ** 2
        for t in range(1, T):
            lp = lp - 0.5 * anp.sum((Y[:t] - p["mu"]) ** 2) / t
        return lp

    return logp


GROWING = {"mu": hm.real()}


def _recorded(logp, params):
    """The recording the compiled path would make of a model's log density."""
    layout = ParameterLayout(params)

    def log_density(z):
        values, log_jac = layout.constrain(z, anp)
        return logp(values) + log_jac

    return trace_graph(log_density, np.random.default_rng(0).normal(size=layout.dim))


def test_the_budget_counts_a_rolled_loop_once_and_stops_a_loop_written_out():
    """From the recording alone (well under a second): ARMA(1,1) at T = 1,000 (about 9,000
    scalar operations recorded, minutes written out) and the HMM's forward algorithm at
    T = 200 (about 1,000 array operations recorded) are rolled into loops whose bodies fit
    the budget with room to spare; a loop whose passes differ in shape, 150 passes (about
    300 array operations written), does not fit."""
    began = time.perf_counter()
    counts = {}
    for name, logp, params in (("arma", arma_logp(1000), ARMA), ("hmm", hmm_logp(200), HMM),
                               ("growing", growing_logp(150), GROWING)):  # fmt: skip
        graph = _recorded(logp, params)
        counts[name] = operation_counts(graph), operation_counts(graph, rolled_loops(graph))
    assert time.perf_counter() - began < 5.0
    assert counts["arma"][0][0] > 5000 and counts["arma"][1][0] < 100
    assert counts["hmm"][0][1] > 500 and sum(counts["hmm"][1]) < 200
    assert counts["growing"][1][1] > 250
    for name in ("arma", "hmm"):
        assert estimated_seconds(*counts[name][0]) > COMPILE_BUDGET_SECONDS  # written out
        assert estimated_seconds(*counts[name][1]) < COMPILE_BUDGET_SECONDS / 3  # rolled
    assert estimated_seconds(*counts["growing"][1]) > COMPILE_BUDGET_SECONDS


def _no_compile(*args, **kwargs):
    raise AssertionError("numba was asked to compile a model over the budget")


def test_a_model_over_the_budget_runs_with_autograd_at_once_and_says_why(monkeypatch):
    """The default backend: one CompileWarning at the user's line, naming the recorded size,
    the predicted time, the budget and the ways out; numba never starts; the model samples
    with autograd."""
    monkeypatch.setattr(user_target, "_load", _no_compile)
    monkeypatch.setattr(user_target, "_is_cached", lambda text: False)  # never compiled
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = hm.Model(growing_logp(150), GROWING)
    compile_warnings = [w for w in caught if w.category is hm.CompileWarning]
    assert len(compile_warnings) == 1
    message = str(compile_warnings[0].message)
    for part in ("operations", "on arrays", "compile budget of 30 s", "Vectorise the loop",
                 "backend='numba'", "backend='autograd' silences this"):  # fmt: skip
        assert part in message, message
    assert compile_warnings[0].filename == __file__
    assert model.backend == "autograd" and model.numba_kernel() is None
    lp, grad = model.log_prob_and_grad(np.zeros((2, model.dim)))
    assert np.all(np.isfinite(lp)) and np.all(np.isfinite(grad))


def test_from_logp_falls_back_over_the_budget_too(monkeypatch):
    """``Target.from_logp`` shares the default backend's choice: over a (lowered) budget, a
    CompileWarning and autograd, without compiling."""
    monkeypatch.setattr(compile_budget, "COMPILE_BUDGET_SECONDS", 0.5)
    monkeypatch.setattr(user_target, "_load", _no_compile)
    monkeypatch.setattr(user_target, "_is_cached", lambda text: False)  # never compiled
    with pytest.warns(hm.CompileWarning, match="over the compile budget of 0.5 s"):
        target = hm.Target.from_logp(lambda x: -0.5 * anp.sum(x**2), dim=3)
    assert target.numba_kernel() is None


def test_compile_log_density_refuses_over_the_budget_with_the_size():
    """The refusal is a TraceError (the default backend's signal to fall back) carrying the
    counts and the prediction."""
    with pytest.raises(CompileBudgetError, match="Vectorise the loop") as info:
        user_target.compile_log_density(
            lambda z: growing_logp(150)(ParameterLayout(GROWING).constrain(z, anp)[0]), 1
        )
    assert isinstance(info.value, TraceError)
    assert info.value.array_ops > 100 and info.value.seconds > COMPILE_BUDGET_SECONDS


def test_an_explicit_numba_backend_compiles_over_the_budget_after_a_warning(monkeypatch):
    """``backend="numba"`` is the user's choice: honoured, with the CompileWarning given
    before numba starts (so a long compile is never a silent one)."""
    monkeypatch.setattr(compile_budget, "COMPILE_BUDGET_SECONDS", 0.5)
    monkeypatch.setattr(user_target, "_is_cached", lambda text: False)  # a first compile
    seen = []
    load = user_target._load

    def watched(text):
        seen.append(len(caught))
        return load(text)

    monkeypatch.setattr(user_target, "_load", watched)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = hm.Model(arma_logp(5), ARMA, backend="numba")
    budget_warnings = [w for w in caught if w.category is hm.CompileWarning]
    assert len(budget_warnings) == 1
    assert "compiling it, as backend='numba' asks" in str(budget_warnings[0].message)
    assert budget_warnings[0].filename == __file__
    assert seen and seen[0] >= 1  # warned before the compile began
    assert model.backend == "numba" and model.numba_kernel() is not None


def test_from_logp_with_an_explicit_numba_backend_compiles_over_the_budget_too(monkeypatch):
    """``Target.from_logp(backend="numba")`` is the same choice as the model's: honoured,
    warned first, not a CompileBudgetError."""
    monkeypatch.setattr(compile_budget, "COMPILE_BUDGET_SECONDS", 0.5)
    monkeypatch.setattr(user_target, "_is_cached", lambda text: False)  # a first compile
    with pytest.warns(hm.CompileWarning, match="as backend='numba' asks"):
        target = hm.Target.from_logp(lambda x: -0.5 * anp.sum(x**2), dim=3, backend="numba")
    assert target.numba_kernel() is not None


def test_a_model_compiled_before_is_compiled_by_default_over_the_budget(monkeypatch):
    """The budget bounds a compile, not a load: once ``backend="numba"`` has compiled a
    model over the budget into numba's disk cache, the default backend loads it, without a
    warning, in this process and in a new one (the cache is found on disk)."""
    from hamiltonia.compiled import compose

    monkeypatch.setattr(compile_budget, "COMPILE_BUDGET_SECONDS", 0.5)
    logp = lambda p: arma_logp(7)(p) + 0.25 * p["mu"]  # noqa: E731 (a model of this test's own)
    with monkeypatch.context() as first, pytest.warns(hm.CompileWarning, match="numba' asks"):
        first.setattr(user_target, "_is_cached", lambda text: False)  # as on a fresh machine
        hm.Model(logp, ARMA, backend="numba")
    # A new process has nothing loaded: only the files on disk say it is compiled.
    monkeypatch.setattr(compose, "_LOADED", {})
    with warnings.catch_warnings():
        warnings.simplefilter("error", hm.CompileWarning)
        model = hm.Model(logp, ARMA)
    assert model.backend == "numba"
