"""Warm-up never leaves a chain behind (issue 53, item 4): an ARMA(1,1) whose moving-average
coefficient is unconstrained, started where its recursion explodes (:math:`|\\theta| > 1`),
gives some chains a vanishing step size; warm-up restarts them from a chain that moved,
and, where it cannot, the run's checks name the chain and its step size instead of advising
longer chains."""

import warnings

import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.diagnostics.checks import SamplingWarning, diagnose
from hamiltonia.tuners import adaptation

Y = np.random.default_rng(50).normal(size=200)
SEED = 2  # a seed whose chain 3 starts in the exploding region (R-hat 1.58 without restarts)


def arma(p):
    mu, phi, theta, sigma = p["mu"], p["phi"], p["theta"], p["sigma"]
    err = Y[0] - (mu + phi * mu)
    lp = -0.5 * (err / sigma) ** 2
    for t in range(1, len(Y)):
        err = Y[t] - (mu + phi * Y[t - 1] + theta * err)
        lp = lp - 0.5 * (err / sigma) ** 2
    return (lp - len(Y) * anp.log(sigma) - 0.5 * (mu / 10) ** 2 - 0.5 * (phi / 2) ** 2
            - 0.5 * (theta / 2) ** 2 - anp.log1p((sigma / 5) ** 2))  # fmt: skip


@pytest.fixture(scope="module")
def model():
    blocks = {"mu": hm.real(), "phi": hm.real(), "theta": hm.real(), "sigma": hm.positive()}
    return hm.Model(arma, blocks)


def _run(model):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = hm.sample(model, seed=SEED, progress=False)
    return result, [str(w.message) for w in caught if issubclass(w.category, SamplingWarning)]


def test_warm_up_restarts_a_chain_that_did_not_move(model):
    result, messages = _run(model)
    assert any("warm-up restarted 1 of 4 chains" in m and "chain 3 from chain" in m
               for m in messages), messages  # fmt: skip
    assert float(result.summary()["r_hat"].max()) <= 1.01
    spans = np.ptp(np.asarray(result.draws), axis=1).max(axis=-1)
    assert spans.min() > 0.1 * np.median(spans)


def test_without_restarts_the_check_names_the_stuck_chain(model, monkeypatch):
    """With the restart switched off (thresholds no chain can cross), the chain stays: the
    checks name it with its step size, and the R-hat and ESS advice is not "run longer"."""
    monkeypatch.setattr(adaptation, "STUCK_STEP_FACTOR", np.inf)
    result, messages = _run(model)
    assert not any("warm-up restarted" in m for m in messages)
    problems = {p.check: p for p in diagnose(result)}
    assert problems["stuck"].where == ("chain 3",)
    assert "step size" in problems["stuck"].message
    assert "Run longer chains" not in problems["r_hat"].message
    assert "did not move (chain 3, above)" in problems["r_hat"].message
    assert "Run more draws" not in problems["ess_bulk"].message
