"""Per-chain metric adaptation in the tuners: Stan's estimate written once, each chain's
metric from its own draws (an antithetic pair's from its two chains'), each chain's step size
searched from its own, and a tuner's state cut to some chains for an executor's task."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import DenseMetric, DiagonalMetric
from hamiltonia.runner.run import make_rngs
from hamiltonia.samplers.composition import PerChainMetricSampler
from hamiltonia.state import ChainState
from hamiltonia.tuners.adaptation import (
    DualAveraging,
    WindowedMetric,
    estimate_metric,
    find_initial_step_size,
)


def test_the_estimate_is_stans_regularised_covariance():
    draws = np.random.default_rng(0).normal(size=(40, 3)) * [1.0, 2.0, 3.0]
    n = 40
    diagonal = estimate_metric(draws, "diagonal")
    assert isinstance(diagonal, DiagonalMetric)
    np.testing.assert_allclose(
        diagonal.inverse_mass, n / (n + 5) * draws.var(axis=0, ddof=1) + 1e-3 * 5 / (n + 5)
    )
    dense = estimate_metric(draws, "dense")
    assert isinstance(dense, DenseMetric)
    np.testing.assert_allclose(
        dense.inverse_mass, n / (n + 5) * np.cov(draws.T) + 1e-3 * 5 / (n + 5) * np.eye(3)
    )
    assert estimate_metric(draws[:1], "diagonal") is None  # one draw: nothing to estimate


def _window(sampler, chains, positions, first=80):
    """Feed a WindowedMetric's window the ``positions`` (iterations, chains, dim) and end it."""
    tuner = sampler.tuners[-1]
    tuner.start(sampler, None, 1000, rngs=None)
    for i, row in enumerate(positions):
        tuner.observe(row, first + i)
    tuner.end_window(sampler, None)
    return tuner


@pytest.mark.parametrize("kind", ["diagonal", "dense"])
def test_each_chain_estimates_its_metric_from_its_own_draws(kind):
    """Three chains of different spreads: per chain, each gets the estimate of its own draws
    (the Hamiltonian's own metric stays as built); pooled, all get the estimate of all."""
    target = hm.targets.get("gaussian", dim=3)
    positions = (
        np.random.default_rng(1).normal(size=(20, 3, 3)) * np.array([1.0, 5.0, 0.2])[None, :, None]
    )
    per_chain = hm.samplers.build("hmc", target, metric=kind, step_size=0.1,
                                  adapt_metric="per-chain")  # fmt: skip
    assert isinstance(per_chain, PerChainMetricSampler)
    built = per_chain.hamiltonian.metric
    _window(per_chain, 3, positions)
    assert per_chain.hamiltonian.metric is built
    for c, metric in enumerate(per_chain.chain_metrics):
        own = estimate_metric(positions[:, c], kind)
        np.testing.assert_array_equal(metric.inverse_mass, own.inverse_mass)
    pooled = hm.samplers.build("hmc", target, metric=kind, step_size=0.1)
    _window(pooled, 3, positions)
    everyone = estimate_metric(positions.reshape(-1, 3), kind)
    np.testing.assert_array_equal(pooled.hamiltonian.metric.inverse_mass, everyone.inverse_mass)
    assert not np.allclose(per_chain.chain_metrics[1].inverse_mass, everyone.inverse_mass)


def test_an_antithetic_pair_estimates_one_metric_from_its_two_chains():
    target = hm.targets.get("gaussian", dim=2)
    sampler = hm.samplers.build("a-hmc", target, metric="diagonal", step_size=0.1,
                                adapt_metric="per-chain")  # fmt: skip
    positions = (
        np.random.default_rng(2).normal(size=(10, 4, 2)) * np.array([1, 1, 3, 3])[None, :, None]
    )
    _window(sampler, 4, positions)
    metrics = sampler.chain_metrics
    assert metrics[0] is metrics[1] and metrics[2] is metrics[3]
    pair = estimate_metric(positions[:, [2, 3]].reshape(-1, 2), "diagonal")
    np.testing.assert_array_equal(metrics[2].inverse_mass, pair.inverse_mass)


def test_per_chain_adaptation_needs_a_sampler_with_a_metric_per_chain():
    target = hm.targets.get("gaussian", dim=2)
    sampler = hm.samplers.build("hmc", target, metric="diagonal", step_size=0.1)
    with pytest.raises(TypeError, match=r"per_chain=True.*adapt_metric='per-chain'"):
        WindowedMetric(per_chain=True).start(sampler, None, 100, rngs=None)
    with pytest.raises(ValueError, match="per_chain must be True or False"):
        WindowedMetric(per_chain="yes")


def test_a_new_run_starts_every_chain_from_the_built_metric():
    target = hm.targets.get("gaussian", dim=2)
    sampler = hm.samplers.build("hmc", target, metric="diagonal", step_size=0.1,
                                adapt_metric="per-chain")  # fmt: skip
    _window(sampler, 2, np.random.default_rng(3).normal(size=(10, 2, 2)))
    assert sampler.chain_metrics is not None
    sampler.tuners[-1].start(sampler, None, 100, rngs=None)
    assert sampler.chain_metrics is None


def test_each_chain_searches_its_step_size_from_its_own():
    """The search of a sampler with a metric per chain gives each chain what a search of that
    chain alone, with its metric, from its own step size, gives."""
    target = hm.targets.get("gaussian", dim=3)
    sampler = hm.samplers.build("hmc", target, metric="diagonal", adapt_metric="per-chain")
    sampler.set_chain_metrics([DiagonalMetric(np.full(3, s)) for s in (0.01, 1.0, 100.0)])
    start = np.array([0.5, 1.0, 2.0])
    q = np.full((3, 3), 0.3)
    rngs, _ = make_rngs(4, 3)
    chain = sampler.init(q)
    eps = find_initial_step_size(sampler, chain, rngs, start)
    for c in range(3):
        alone = hm.samplers.build("hmc", target, metric=sampler.chain_metrics[c].inverse_mass)
        one, _ = make_rngs(4, 3)
        eps_c = find_initial_step_size(alone, alone.init(q[[c]]), [one[c]], start[c])
        assert eps[c] == eps_c[0]
    # Inverse masses 100 times apart ask for step sizes about 10 times apart (the leapfrog's
    # scale is eps * sqrt(m)): each chain's own search found its own.
    assert eps[0] > 4 * eps[1] and eps[1] > 4 * eps[2]


def test_the_tuners_keep_the_rows_of_a_tasks_chains():
    dual = DualAveraging(find_initial=False)
    chain = ChainState(phase=None, step_size=np.array([0.1, 0.2, 0.3, 0.4]))
    dual.start(None, chain, 100, rngs=None)
    dual.take_chains((2, 3), rngs=None)
    np.testing.assert_array_equal(dual.state[:, 0], np.log(10 * np.array([0.3, 0.4])))
    assert dual.state.flags.c_contiguous
    target = hm.targets.get("gaussian", dim=2)
    sampler = hm.samplers.build("hmc", target, metric="diagonal", step_size=0.1,
                                adapt_metric="per-chain")  # fmt: skip
    windowed = sampler.tuners[-1]
    windowed.start(sampler, None, 200, rngs=None)
    rows = np.arange(24.0).reshape(3, 4, 2)
    for i, row in enumerate(rows):
        windowed.observe(row, 75 + i)
    twins = [np.random.default_rng(0)]
    windowed.take_chains((1,), twins)
    np.testing.assert_array_equal(np.stack(windowed._buffer), rows[:, [1]])
    assert windowed._rngs is twins
    assert windowed.independent_chains and not WindowedMetric().independent_chains
    assert dual.independent_chains and not DualAveraging(pool_chains=True).independent_chains
