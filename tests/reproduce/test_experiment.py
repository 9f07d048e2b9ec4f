"""The experiment files: every shipped one loads and names samplers and targets that exist;
malformed ones are refused with the file and key named."""

import pytest

import hamiltonia as hm
from hamiltonia.reproduce.experiment import (
    ExperimentError,
    experiment_names,
    load_experiment,
)
from tests.reproduce.conftest import TINY


def test_the_issue_s_experiments_are_shipped():
    names = experiment_names()
    assert "ch5-blr" in names


@pytest.mark.parametrize("name", experiment_names())
def test_every_shipped_experiment_builds_its_samplers(name):
    experiment = load_experiment(name)
    assert experiment.name == name
    assert experiment.cells()
    targets = {}
    for t, s in experiment.cells():
        if t.label not in targets:
            targets[t.label] = hm.targets.get(t.name, **dict(t.params))
        hm.samplers.build(s.recipe, targets[t.label], **{**experiment.options, **s.options_for(t)})
    small = experiment.protocol_at("small")
    assert small.chains * small.draws <= experiment.protocol.chains * experiment.protocol.draws


def _broken(tmp_path, old, new):
    path = tmp_path / "broken.toml"
    assert old in TINY
    path.write_text(TINY.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('title = "A tiny experiment"', 'title = "x"\ncolour = "red"', "colour"),
        ('n_steps = "$L"', 'n_steps = "$M"', "'M'"),
        ("ess = { HMC = 10, PHMC = 20 }", "ess = { HMC = 10, NUTS = 20 }", "NUTS"),
        ("[published.Banana]", "[published.Funnel]", "Funnel"),
        ('metric = "ess"', 'metric = "speed"', "speed"),
        ('rule = "greater"', 'rule = "better"', "rule"),
        ("chains = 2", "chains = 0", "protocol.chains"),
        ('init = "normal"', 'init = "zeros"', "protocol.init"),
        ("[scales.small]", "[scales.full]", "scales.full"),
        ('recipe = "phmc"', 'recipe = "phmc"\ness = "pairs"', "'pairs'"),
    ],
)
def test_a_malformed_file_names_the_key(tmp_path, old, new, named):
    path = _broken(tmp_path, old, new)
    with pytest.raises(ExperimentError, match=named) as info:
        load_experiment(path)
    assert str(path) in str(info.value)


def test_an_unknown_experiment_lists_the_known_ones():
    with pytest.raises(ValueError, match="ch5-blr"):
        load_experiment("no-such-experiment")


def test_scales(tiny_file):
    experiment = load_experiment(tiny_file)
    assert experiment.protocol_at("full").draws == 60
    assert experiment.protocol_at("small").draws == 40
    assert experiment.protocol_at("small").chains == 2
    with pytest.raises(ValueError, match="scale"):
        experiment.protocol_at("huge")


def test_options_take_the_target_s_variables(tiny_file):
    experiment = load_experiment(tiny_file)
    (banana, gauss) = experiment.targets
    hmc = experiment.sampler("HMC")
    assert hmc.options_for(banana) == {"step_size": 0.1, "n_steps": 5}
    assert hmc.options_for(gauss) == {"step_size": 0.2, "n_steps": 5}
