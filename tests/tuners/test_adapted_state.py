"""A tuner's adapted state (issue 48): the part parameters it declares in ``adapts`` are read
from the sampler, written as JSON, checked as data from a file against the rebuilt
sampler's own values, and set again."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.runner import resume_state
from hamiltonia.runner.run import make_rngs
from hamiltonia.tuners import DualAveraging, Tuner, WindowedMetric
from hamiltonia.tuners.adaptation import declared_parameters, read_parameter


class Adapting(Tuner):
    """Declares parameters of every kind the default methods save."""

    adapts = (
        "trajectory.min_steps",
        "trajectory.jitter",
        "refresh.flip",
        "integrator.scheme",
        "integrator.unset",
        "hamiltonian.scales",
        "hamiltonian.counts",
        "hamiltonian.pair",
    )

    def update(self, sampler, chain, info, iteration):
        pass


def _sampler(**values):
    """A sampler as the default methods see it: parts holding parameters, by attribute."""
    own = dict(min_steps=3, jitter=0.0, flip=False, scheme="a", unset=None, scales=np.ones(3),
               counts=np.array([1, 2], dtype=np.int64), pair=(1.0, 2.0))  # fmt: skip
    own.update(values)
    return SimpleNamespace(
        trajectory=SimpleNamespace(min_steps=own["min_steps"], jitter=own["jitter"]),
        refresh=SimpleNamespace(flip=own["flip"]),
        integrator=SimpleNamespace(scheme=own["scheme"], unset=own["unset"]),
        hamiltonian=SimpleNamespace(scales=own["scales"], counts=own["counts"], pair=own["pair"]),
    )


ADAPTED = dict(min_steps=np.int64(11), jitter=np.float64(0.1), flip=np.bool_(True), scheme="b",
               unset=0.25, scales=np.array([0.5, 1.5, 2.5]),
               counts=np.array([4, 5], dtype=np.int64), pair=(3.0, 0.1))  # fmt: skip


def test_the_declared_parameters_go_through_json_and_back():
    tuner = Adapting()
    adapted = _sampler(**ADAPTED)
    state = json.loads(json.dumps(tuner.adapted_state(adapted)))
    assert state == {
        "trajectory.min_steps": 11, "trajectory.jitter": 0.1, "refresh.flip": True,
        "integrator.scheme": "b", "integrator.unset": 0.25,
        "hamiltonian.scales": [0.5, 1.5, 2.5], "hamiltonian.counts": [4, 5],
        "hamiltonian.pair": [3.0, 0.1],
    }  # fmt: skip
    rebuilt = _sampler()
    checked = tuner.check_adapted_state(rebuilt, state)
    tuner.restore_adapted_state(rebuilt, checked)
    # The rebuilt sampler's own types (the recipe's), the adapted values exactly.
    assert type(rebuilt.trajectory.min_steps) is int and rebuilt.trajectory.min_steps == 11
    assert type(rebuilt.trajectory.jitter) is float and rebuilt.trajectory.jitter == 0.1
    assert rebuilt.refresh.flip is True and rebuilt.integrator.scheme == "b"
    assert rebuilt.integrator.unset == 0.25
    np.testing.assert_array_equal(rebuilt.hamiltonian.scales, [0.5, 1.5, 2.5])
    assert rebuilt.hamiltonian.counts.dtype == np.int64
    np.testing.assert_array_equal(rebuilt.hamiltonian.counts, [4, 5])
    assert rebuilt.hamiltonian.pair == (3.0, 0.1)
    # Taken in this process (an executor's task), the state is put back as it is.
    again = _sampler()
    tuner.restore_adapted_state(again, tuner.adapted_state(adapted))
    assert again.trajectory.min_steps == 11 and again.hamiltonian.pair == (3.0, 0.1)


def test_the_saved_arrays_are_copies():
    tuner, adapted = Adapting(), _sampler(**ADAPTED)
    state = tuner.adapted_state(adapted)
    adapted.hamiltonian.scales[0] = 99.0
    assert state["hamiltonian.scales"][0] == 0.5


BAD_VALUES = [
    ("trajectory.min_steps", "many", r"trajectory.min_steps must be an integer, got 'many'"),
    ("trajectory.min_steps", 7.0, r"trajectory.min_steps must be an integer, got 7.0"),
    ("trajectory.min_steps", True, r"trajectory.min_steps must be an integer, got True"),
    ("trajectory.jitter", float("nan"), r"trajectory.jitter must be a finite number"),
    ("trajectory.jitter", 10**400, r"trajectory.jitter must be a finite number"),
    ("trajectory.jitter", [0.1], r"trajectory.jitter must be a number"),
    ("refresh.flip", 1, r"refresh.flip must be True or False, got 1"),
    ("integrator.scheme", 3, r"integrator.scheme must be a string, got 3"),
    ("integrator.unset", {"a": 1}, r"integrator.unset must be None, a bool, a number"),
    ("integrator.unset", [1.0, float("inf")], r"integrator.unset holds non-finite values"),
    ("hamiltonian.scales", [1.0, 2.0], r"hamiltonian.scales has shape \(2,\), expected \(3,\)"),
    ("hamiltonian.scales", [1.0, 2.0, float("inf")], r"hamiltonian.scales holds non-finite"),
    ("hamiltonian.scales", ["a", "b", "c"], r"hamiltonian.scales is not an array of numbers"),
    ("hamiltonian.scales", [[1.0], [2.0, 3.0]], r"hamiltonian.scales is not an array of numbers"),
    ("hamiltonian.counts", [1.5, 2.0], r"hamiltonian.counts is not an array of integers"),
    ("hamiltonian.counts", [2**70, 1], r"hamiltonian.counts (is not an array of integers|does n)"),
    ("hamiltonian.pair", [1.0], r"hamiltonian.pair has shape \(1,\), expected \(2,\)"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD_VALUES,
                         ids=[f"{p}={v!r:.20}" for p, v, _ in BAD_VALUES])  # fmt: skip
def test_a_value_from_a_file_is_checked_against_the_samplers_own(path, value, message):
    tuner = Adapting()
    state = json.loads(json.dumps(tuner.adapted_state(_sampler(**ADAPTED))))
    with pytest.raises(ValueError, match=message):
        tuner.check_adapted_state(_sampler(), {**state, path: value})


def test_a_state_must_hold_the_declared_parameters_and_nothing_else():
    tuner = Adapting()
    state = tuner.adapted_state(_sampler())
    short = {k: v for k, v in state.items() if k != "trajectory.min_steps"}
    with pytest.raises(ValueError, match=r"trajectory.min_steps is missing"):
        tuner.check_adapted_state(_sampler(), short)
    with pytest.raises(ValueError, match=r"target.dim is not a parameter Adapting adapts"):
        tuner.check_adapted_state(_sampler(), {**state, "target.dim": 3})
    with pytest.raises(ValueError, match=r"the adapted state is not a mapping"):
        tuner.check_adapted_state(_sampler(), [1, 2])


@pytest.mark.parametrize(
    ("adapts", "message"),
    [
        ("trajectory.min_steps", r"adapts must be a tuple of parameter paths"),
        (("trajectory..min_steps",), r"holds 'trajectory..min_steps', which is not a path"),
        (("trajectory.min-steps",), r"which is not a path of attribute names"),
        (("refresh.rho", "refresh.rho"), r"names a parameter twice"),
    ],
)
def test_a_malformed_declaration_is_named(adapts, message):
    tuner = Adapting()
    tuner.adapts = adapts
    with pytest.raises(TypeError, match=message):
        declared_parameters(tuner)


def test_a_path_the_sampler_lacks_and_a_value_no_file_holds_are_named():
    tuner = Adapting()
    tuner.adapts = ("trajectory.length",)
    with pytest.raises(AttributeError, match=r"trajectory.length: sampler SimpleNamespace has "
                                             r"no 'trajectory.length'"):  # fmt: skip
        tuner.adapted_state(_sampler())
    with pytest.raises(AttributeError, match=r"has no 'structure'"):
        read_parameter(_sampler(), "structure.field")
    tuner.adapts = ("refresh.flip",)
    with pytest.raises(TypeError, match=r"Adapting adapts refresh.flip, a object, which a resume "
                                        r"state cannot hold"):  # fmt: skip
        tuner.adapted_state(_sampler(flip=object()))


@pytest.mark.parametrize("tuner", [DualAveraging(), WindowedMetric()], ids=repr)
def test_the_built_in_tuners_adapt_no_part_parameter(tuner):
    """Their adapted values (the step sizes, the metric) are saved with the chains."""
    sampler = hm.samplers.build("hmc", hm.targets.get("banana"), metric="diagonal")
    assert tuner.adapts == () and tuner.adapted_state(sampler) == {}
    assert tuner.check_adapted_state(sampler, {}) == {}
    with pytest.raises(ValueError, match=r"refresh.rho is not a parameter .* \(it adapts: none\)"):
        tuner.check_adapted_state(sampler, {"refresh.rho": 0.5})


class Lengthening(Tuner):
    """Doubles the trajectory's number of steps at its first update."""

    adapts = ("trajectory.min_steps", "trajectory.max_steps")

    def update(self, sampler, chain, info, iteration):
        if iteration == 0:
            sampler.trajectory.min_steps *= 2
            sampler.trajectory.max_steps *= 2


def _with_lengthening(target):
    sampler = hm.samplers.build("hmc", target, n_steps=4, n_steps_jitter=0, step_size=0.2)
    sampler.tuners.append(Lengthening())
    return sampler


def test_the_chain_state_carries_the_adapted_parameters_to_a_rebuilt_sampler():
    """Through JSON, into a sampler built anew: the same length, and the same draws."""
    target, chains = hm.targets.get("banana"), 2
    sampler, (rngs, _) = _with_lengthening(target), make_rngs(4, chains)
    chain = sampler.init(np.full((chains, 2), 0.3))
    chain, info = sampler.step(chain, rngs)
    for tuner in sampler.tuners:
        tuner.update(sampler, chain, info, 0)
    saved = json.loads(json.dumps(resume_state.chain_state(chain, rngs, sampler)))
    assert saved["adapted"] == [{"kind": "Lengthening", "state": {
        "trajectory.min_steps": 8, "trajectory.max_steps": 8}}]  # fmt: skip
    again = _with_lengthening(target)
    assert again.trajectory.min_steps == 4
    twins = [np.random.default_rng() for _ in range(chains)]
    resumed = resume_state.restore(again, saved, twins)
    assert (again.trajectory.min_steps, again.trajectory.max_steps) == (8, 8)
    for _ in range(3):
        chain, first = sampler.step(chain, rngs)
        resumed, second = again.step(resumed, twins)
        np.testing.assert_array_equal(resumed.phase.q, chain.phase.q)
        np.testing.assert_array_equal(second["n_steps"], first["n_steps"])


def test_restoring_needs_the_same_tuners_unless_they_were_dropped():
    target = hm.targets.get("banana")
    state = [{"kind": "Lengthening", "state": {"trajectory.min_steps": 8,
                                               "trajectory.max_steps": 8}}]  # fmt: skip
    plain = hm.samplers.build("hmc", target, n_steps=4)
    with pytest.raises(ValueError, match=r"lists the tuners \['Lengthening'\], the sampler "
                                         r"adapts with \['DualAveraging'\]"):  # fmt: skip
        resume_state.restore_adapted(plain, state)
    # An executor's task drops the tuners of a sampler whose parts are adapted already.
    frozen = _with_lengthening(target)
    frozen.tuners = []
    resume_state.restore_adapted(frozen, state)
    assert frozen.trajectory.min_steps == 4
    # A file written before the adapted state was saved: nothing to restore.
    resume_state.restore_adapted(_with_lengthening(target), None)


def test_an_adapted_state_that_is_not_plain_data_is_named():
    class Opaque(Lengthening):
        def adapted_state(self, sampler):
            return {"length": object()}

    sampler = hm.samplers.build("hmc", hm.targets.get("banana"), n_steps=4, step_size=0.2)
    sampler.tuners.append(Opaque())
    with pytest.raises(TypeError, match=r"Opaque.adapted_state\(\) holds values a resume state "
                                        r"cannot hold"):  # fmt: skip
        resume_state.adapted_state(sampler)
