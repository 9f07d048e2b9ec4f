"""The ``adapt_metric`` option of every adapting recipe and the sampler it builds: a metric
per chain, its state saved and checked like any data from a file."""

import inspect
import json
import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import DenseMetric, DiagonalMetric
from hamiltonia.samplers import HamiltonianSampler
from hamiltonia.samplers import composition as make
from hamiltonia.samplers.composition import PerChainMetricSampler

RUN = dict(warmup=150, draws=20, seed=9, progress=False)


def _adapting_recipes() -> list[str]:
    """The registered samplers that can adapt a metric (they take ``metric``)."""
    return [
        name
        for name in hm.samplers.names()
        if "metric" in inspect.signature(hm.samplers.get(name)).parameters
    ]


def test_every_recipe_that_adapts_a_metric_takes_adapt_metric():
    recipes = _adapting_recipes()
    assert {"hmc", "nuts", "mhmc", "s2hmc", "mala", "split-hmc", "as2hmc"} <= set(recipes)
    for name in recipes:
        parameter = inspect.signature(hm.samplers.get(name)).parameters.get("adapt_metric")
        assert parameter is not None, name
        assert parameter.default == "pooled", name  # the default is unchanged


@pytest.mark.parametrize("name", ["hmc", "nuts", "mhmc", "s2hmc", "qihmc", "mala", "split-hmc"])
def test_adapt_metric_builds_a_sampler_with_a_metric_per_chain(name):
    target = hm.targets.get("blr-heart" if name == "split-hmc" else "banana")
    pooled = hm.samplers.build(name, target, metric="diagonal")
    per_chain = hm.samplers.build(name, target, metric="diagonal", adapt_metric="per-chain")
    assert type(pooled) is HamiltonianSampler
    assert isinstance(per_chain, PerChainMetricSampler)
    assert per_chain.tuners[-1].per_chain and not pooled.tuners[-1].per_chain
    # A fixed metric is adapted neither way: the plain sampler.
    fixed = hm.samplers.build(name, target, metric="identity", adapt_metric="per-chain")
    assert type(fixed) is HamiltonianSampler


@pytest.mark.parametrize("value", ["chains", "per_chain", True, None])
def test_a_bad_adapt_metric_is_refused_naming_it(value):
    target = hm.targets.get("banana")
    message = r"adapt_metric must be 'pooled' .* or 'per-chain' .*, got"
    for name in ("hmc", "nuts", "s2hmc"):
        with pytest.raises(ValueError, match=message):
            hm.samplers.build(name, target, adapt_metric=value)
    with pytest.raises(ValueError, match=message):
        make.tuners(metric="diagonal", adapt_metric=value)


def test_the_helpers_build_the_per_chain_sampler_for_a_plugin():
    target = hm.targets.get("banana")
    tuners = make.tuners(metric="dense", adapt_metric="per-chain")
    sampler = make.compose(make.hamiltonian(target, metric="dense"), make.no_u_turn(),
                           tuners=tuners)  # fmt: skip
    assert isinstance(sampler, PerChainMetricSampler)
    assert repr(tuners[-1]) == "WindowedMetric('dense', per_chain=True)"


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
@pytest.mark.parametrize("metric", ["diagonal", "dense"])
def test_one_chain_adapts_alike_either_way(compiled, metric):
    """With one chain, its own draws are all the draws: the two choices are the same run."""
    kw = dict(RUN, chains=1, compiled=compiled, metric=metric, n_steps=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one short chain: r_hat and ESS warnings
        pooled = hm.sample("banana", "hmc", **kw)
        per_chain = hm.sample("banana", "hmc", adapt_metric="per-chain", **kw)
    np.testing.assert_array_equal(per_chain.draws, pooled.draws)
    np.testing.assert_array_equal(per_chain.stats["step_size"], pooled.stats["step_size"])


def _adapted(chains=3, metric="diagonal"):
    target = hm.targets.get("banana")
    sampler = hm.samplers.build("hmc", target, metric=metric, n_steps=5,
                                adapt_metric="per-chain")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hm.sample(target, sampler, chains=chains, **RUN)
    return target, sampler


@pytest.mark.parametrize("metric", ["diagonal", "dense"])
def test_the_chain_metrics_go_through_json_and_back(metric):
    target, sampler = _adapted(metric=metric)
    metrics = sampler.chain_metrics
    assert len(metrics) == 3 and len({id(m) for m in metrics}) == 3
    state = json.loads(json.dumps(sampler.extra_state()))
    again = hm.samplers.build("hmc", target, metric=metric, adapt_metric="per-chain")
    assert again.chain_metrics is None and again.extra_state() == {}
    again.restore_extra_state(state)
    for a, b in zip(again.chain_metrics, metrics, strict=True):
        assert type(a) is type(b)
        np.testing.assert_array_equal(a.inverse_mass, b.inverse_mass)
    # An executor's task holds its own chains' metrics.
    part = again.select_extra_state(state, (2,))
    assert part["chain_metrics"]["inverse_mass"] == [state["chain_metrics"]["inverse_mass"][2]]


def test_chain_metrics_from_a_file_are_checked():
    target, sampler = _adapted()
    state = json.loads(json.dumps(sampler.extra_state()))
    saved = state["chain_metrics"]
    again = hm.samplers.build("hmc", target, metric="diagonal", adapt_metric="per-chain")
    for bad, message in [
        ({**saved, "kind": "IdentityMetric"}, "must hold the kind"),
        ({**saved, "inverse_mass": []}, "non-empty list"),
        ({**saved, "inverse_mass": [[1.0, 1.0, 1.0]] * 3}, r"chain 0 is invalid: shape \(3,\)"),
        ({**saved, "inverse_mass": [[1.0, -1.0]] * 3}, "chain 0 is invalid: inverse_mass"),
        ({**saved, "inverse_mass": [[1.0, 1.0], "x", [1.0, 1.0]]}, "chain 1 is invalid"),
    ]:
        with pytest.raises(ValueError, match=f"sampler_state.chain_metrics.*{message}"):
            again.restore_extra_state({"chain_metrics": bad})
    again.restore_extra_state(state)
    with pytest.raises(ValueError, match="holds the adapted metrics of 3 chains, not 2"):
        again.chain_groups(2)
    assert again.chain_groups(3) == [[0], [1], [2]]
    with pytest.raises(TypeError, match="one per chain"):
        again.set_chain_metrics([np.ones(2)])


def test_a_chain_moves_with_its_own_metric():
    """A step of three chains with different metrics is, chain by chain, the step of a
    sampler holding that chain's metric alone (the NumPy path steps one group at a time)."""
    target = hm.targets.get("gaussian", dim=3)
    metrics = [DiagonalMetric(np.full(3, s)) for s in (0.1, 1.0, 10.0)]
    sampler = hm.samplers.build("hmc", target, metric="diagonal", n_steps=3, step_size=0.2,
                                adapt_metric="per-chain")  # fmt: skip
    sampler.set_chain_metrics(metrics)
    q = np.random.default_rng(5).normal(size=(3, 3))
    rngs = [np.random.default_rng(s) for s in range(3)]
    chain, info = sampler.step(sampler.init(q), rngs)
    for c, metric in enumerate(metrics):
        alone = hm.samplers.build("hmc", target, metric=metric.inverse_mass, n_steps=3,
                                  step_size=0.2)  # fmt: skip
        one, info_c = alone.step(alone.init(q[[c]]), [np.random.default_rng(c)])
        np.testing.assert_array_equal(chain.phase.q[c], one.phase.q[0])
        for name, values in info_c.items():
            np.testing.assert_array_equal(np.asarray(info[name])[c], np.asarray(values)[0])
    assert isinstance(sampler.hamiltonian.metric, DiagonalMetric)  # the built one, put back
    np.testing.assert_array_equal(sampler.hamiltonian.metric.inverse_mass, np.ones(3))


def test_dense_metrics_per_chain():
    metrics = [DenseMetric(np.array([[1.0, 0.5], [0.5, 2.0]]) * s) for s in (1.0, 4.0)]
    target = hm.targets.get("gaussian", dim=2)
    sampler = hm.samplers.build("nuts", target, metric="dense", step_size=0.3,
                                adapt_metric="per-chain")  # fmt: skip
    sampler.set_chain_metrics(metrics)
    q = np.array([[0.1, 0.2], [0.3, -0.4]])
    chain, _ = sampler.step(sampler.init(q), [np.random.default_rng(s) for s in range(2)])
    alone = hm.samplers.build("nuts", target, metric=metrics[1].inverse_mass, step_size=0.3)
    one, _ = alone.step(alone.init(q[[1]]), [np.random.default_rng(1)])
    np.testing.assert_array_equal(chain.phase.q[1], one.phase.q[0])
