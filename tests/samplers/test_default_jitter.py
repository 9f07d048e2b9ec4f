"""The hmc recipe (and its presets) draws its number of steps at random by default, except
on a target of the research's setting, which keeps the research's fixed length."""

import types

import pytest

import hamiltonia as hm
from hamiltonia.samplers.core_recipes import DEFAULT_N_STEPS_JITTER, _is_research_setting


def _lengths(sampler):
    return sampler.trajectory.min_steps, sampler.trajectory.max_steps


@pytest.mark.parametrize("recipe", ["hmc", "mhmc", "phmc", "s2hmc", "a-hmc"])
def test_the_default_draws_the_length_and_the_research_setting_keeps_it_fixed(recipe):
    assert DEFAULT_N_STEPS_JITTER == 0.5
    default = hm.targets.get("gaussian")
    paper = hm.targets.get("gaussian", setting="paper")
    assert _lengths(hm.samplers.build(recipe, default)) == (8, 15)
    assert _lengths(hm.samplers.build(recipe, paper)) == (15, 15)
    assert _lengths(hm.samplers.build(recipe, default, n_steps_jitter=0)) == (15, 15)
    assert _lengths(hm.samplers.build(recipe, paper, n_steps_jitter=0.5)) == (8, 15)


def test_mala_a_named_trajectory_and_js2hmc_keep_their_own_lengths():
    banana = hm.targets.get("banana")
    assert _lengths(hm.samplers.build("mala", banana)) == (1, 1)
    assert _lengths(hm.samplers.build("js2hmc", banana)) == (1, 15)
    delayed = hm.samplers.build("hmc", banana, trajectory="delayed-rejection")
    assert delayed.trajectory.length_policy.min_steps == 15
    hm.samplers.build("chees", banana)  # its trajectory takes no n_steps_jitter


def test_a_wrapped_target_of_the_research_setting_is_recognised():
    paper = hm.targets.get("gaussian", setting="paper")
    assert _is_research_setting(paper)
    assert _is_research_setting(types.SimpleNamespace(setting="default", base=paper))
    assert not _is_research_setting(hm.targets.get("gaussian"))


def test_a_run_records_the_drawn_lengths():
    run = hm.sample("banana", "hmc", chains=2, warmup=20, draws=50, seed=0, progress=False)
    steps = run.stats["n_steps"]
    assert steps.min() >= 8 and steps.max() <= 15 and steps.min() < steps.max()
    assert (run.stats["n_grad"] == steps).all()
