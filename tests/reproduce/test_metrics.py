"""The publications' figures of a run, computed as the research computes them."""

import numpy as np
import pytest

from hamiltonia.diagnostics import publication
from hamiltonia.reproduce.metrics import cell_metrics
from hamiltonia.results import Result


def _result(draws, accepted):
    chains, n, _ = draws.shape
    stats = {
        "accepted": accepted,
        "acceptance_rate": accepted.astype(float),
        "n_steps": np.full((chains, n), 5),
        "step_size": np.full((chains, n), 0.1),
        "energy": np.zeros((chains, n)),
        "diverging": np.zeros((chains, n), dtype=bool),
        "n_grad": np.full((chains, n), 5),
        "lp": np.zeros((chains, n)),
    }
    names = tuple(f"x{i}" for i in range(draws.shape[2]))
    return Result(draws=draws, stats=stats, names=names, sampling_seconds=3.0)


def test_each_figure_is_the_research_s():
    rng = np.random.default_rng(2)
    draws = rng.standard_normal((3, 400, 2))
    accepted = rng.random((3, 400)) < 0.7
    # Three chains that ran two at a time for 3 s: 2 s of one core each.
    figures = cell_metrics(_result(draws, accepted), concurrency=2)
    assert figures["acceptance"]["value"] == pytest.approx(100 * accepted.mean())
    per_chain = [publication.chain_mess(c, "less") for c in draws]
    assert figures["ess"]["per_chain"] == pytest.approx(per_chain)
    assert figures["ess"]["sd"] == pytest.approx(np.std(per_chain, ddof=1))
    assert figures["t"]["value"] == pytest.approx(2.0)
    assert figures["ess_per_t"]["value"] == pytest.approx(np.mean(per_chain) / 2.0)
    assert figures["avg_l"]["value"] == 5
    assert figures["step_size"]["value"] == pytest.approx(0.1)


def test_a_chain_that_never_moved_has_an_ess_of_zero():
    rng = np.random.default_rng(3)
    draws = rng.standard_normal((2, 300, 3))
    draws[1] = draws[1, 0]  # stuck at its start
    accepted = np.ones((2, 300), dtype=bool)
    accepted[1] = False
    figures = cell_metrics(_result(draws, accepted))
    assert figures["ess"]["per_chain"][1] == 0.0
    assert np.isfinite(figures["ess"]["value"])


def test_the_kish_factor_is_each_chain_s_weights_evenness():
    rng = np.random.default_rng(4)
    draws = rng.standard_normal((3, 200, 2))
    accepted = np.ones((3, 200), dtype=bool)
    plain = _result(draws, accepted)
    assert cell_metrics(plain, metrics={"kish"})["kish"]["per_chain"] == [1.0, 1.0, 1.0]
    log_weights = rng.normal(0.0, [[0.0], [0.5], [2.0]], size=(3, 200))
    weighted = Result(
        draws=draws, stats=plain.stats, names=plain.names, sampling_seconds=3.0,
        log_weights=log_weights,
    )  # fmt: skip
    figures = cell_metrics(weighted, metrics={"kish"})["kish"]
    expected = []
    for lw in log_weights:
        w = np.exp(lw - lw.max())
        expected.append(w.sum() ** 2 / np.sum(w**2) / lw.size)
    assert figures["per_chain"] == pytest.approx(expected)
    # Equal weights lose nothing; a log-normal spread of sd s keeps about exp(-s^2).
    assert figures["per_chain"][0] == pytest.approx(1.0)
    assert figures["per_chain"][2] < figures["per_chain"][1] < 1.0


def _pairs_result(rng, strength):
    """Two antithetic pairs: the partner is ``strength`` times the primary plus noise."""
    x = rng.standard_normal((2, 400, 3))
    y = strength * x + 0.3 * rng.standard_normal(x.shape)
    draws = np.stack([x[0], y[0], x[1], y[1]])
    return _result(draws, np.ones((4, 400), dtype=bool))


def test_an_antithetic_column_has_eta_by_either_reduction():
    rng = np.random.default_rng(5)
    result = _pairs_result(rng, np.array([-0.1, -0.9, -0.9]))
    wanted = {"ess", "eta", "eta_mean"}
    by_max = cell_metrics(result, ess="antithetic", metrics=wanted)
    by_mean = cell_metrics(result, ess="antithetic-mean", metrics=wanted)
    pairs = [result.draws[0:2], result.draws[2:4]]
    for figures in (by_max, by_mean):
        assert figures["eta"]["per_chain"] == pytest.approx(
            [publication.antithetic_eta(p, "max") for p in pairs]
        )
        assert figures["eta_mean"]["per_chain"] == pytest.approx(
            [publication.antithetic_eta(p, "mean") for p in pairs]
        )
    assert by_max["ess"]["per_chain"] == pytest.approx(
        [publication.antithetic_ess(p, eta="max") for p in pairs]
    )
    assert by_mean["ess"]["per_chain"] == pytest.approx(
        [publication.antithetic_ess(p, eta="mean") for p in pairs]
    )
    # The mean counts the two strongly anti-correlated parameters the largest ignores.
    assert by_mean["ess"]["value"] > by_max["ess"]["value"]
    # A column of single chains has no pairs, hence no eta.
    assert "eta" not in cell_metrics(result, metrics=wanted)


def test_a_pair_with_a_chain_that_never_moved_gives_nothing():
    rng = np.random.default_rng(6)
    result = _pairs_result(rng, np.array([-0.8, -0.8, -0.8]))
    result.draws[3] = result.draws[3, 0]  # the second pair's secondary stuck at its start
    figures = cell_metrics(result, ess="antithetic-mean", metrics={"ess", "eta_mean"})
    assert figures["ess"]["per_chain"][1] == 0.0
    assert figures["ess"]["per_chain"][0] > 0
    # eta is the first pair's alone: the stuck pair has no correlation.
    assert figures["eta_mean"]["per_chain"] == pytest.approx(
        [publication.antithetic_eta(result.draws[0:2], "mean")]
    )
