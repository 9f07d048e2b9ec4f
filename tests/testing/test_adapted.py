"""check_adapted_state: every part parameter warm-up changes comes back on resume; a tuner
that sets one without declaring it is caught, naming the parameter."""

import pytest

import hamiltonia as hm
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.testing import check_adapted_state
from hamiltonia.tuners import Tuner


class SetsLength(Tuner):
    """Sets the trajectory's number of steps at the end of warm-up (a plugin's tuner)."""

    def start(self, sampler, chain, n_warmup, rngs):
        self.started = True

    def compiled(self, dim):
        return PartKernels()

    def update_chunk(self, sampler, chain, positions, first_iteration):
        pass

    def update(self, sampler, chain, info, iteration):
        pass

    def finalize(self, sampler, chain):
        if getattr(self, "started", False):
            sampler.trajectory.min_steps = sampler.trajectory.max_steps = 9


class DeclaresLength(SetsLength):
    adapts = ("trajectory.min_steps", "trajectory.max_steps")


def _with(tuner_class):
    def recipe(target, **options):
        sampler = hm.samplers.build("hmc", target, n_steps=3, **options)
        sampler.tuners.append(tuner_class())
        return sampler

    return recipe


@pytest.mark.parametrize(
    ("sampler", "options"),
    [
        ("hmc", {"metric": "diagonal"}),
        ("nuts", {}),
        ("chees", {}),
        ("mhmc", {"metric": "diagonal"}),
    ],
    ids=["hmc-diagonal", "nuts", "chees", "mhmc-diagonal"],
)
def test_the_built_in_tuners_lose_nothing(sampler, options):
    result = check_adapted_state(hm.targets.get("gaussian"), sampler, **options)
    assert result.passed and result.compared > 0


def test_an_undeclared_parameter_is_caught_by_name():
    with pytest.raises(AssertionError, match=r"lose 2 of .*trajectory\.max_steps: \[9\.\]"):
        check_adapted_state(hm.targets.get("gaussian"), _with(SetsLength))


def test_the_same_parameter_declared_passes():
    assert check_adapted_state(hm.targets.get("gaussian"), _with(DeclaresLength)).passed


def test_a_built_sampler_is_refused():
    target = hm.targets.get("gaussian")
    with pytest.raises(TypeError, match="recipe"):
        check_adapted_state(target, 3)


def test_a_chees_that_does_not_declare_its_duration_is_caught():
    """The negative control of ChEES: the same tuner, its ``adapts`` emptied. It still sets
    the trajectory's duration in warm-up, which a resumed run would not get back."""
    from hamiltonia.tuners.chees import ChEES

    class UndeclaredChEES(ChEES):
        adapts = ()

    def recipe(target, **options):
        return hm.samplers.build("chees", target, tuners=[UndeclaredChEES()], **options)

    with pytest.raises(AssertionError, match=r"trajectory\.duration"):
        check_adapted_state(hm.targets.get("gaussian"), recipe)
    assert check_adapted_state(hm.targets.get("gaussian"), "chees").passed
