"""Options of hm.sample that are a registered target's parameters go to the target."""

import numpy as np
import pytest

import hamiltonia as hm


def _run(target="gaussian", sampler="hmc", **options):
    return hm.sample(target, sampler, chains=1, warmup=10, draws=10, seed=0, progress=False,
                     **options)  # fmt: skip


def test_a_target_parameter_by_name_builds_the_target_and_is_recorded(tmp_path):
    run = _run(dim=3, n_steps=5, output=tmp_path / "run.nc")
    assert run.draws.shape == (1, 10, 3)
    assert run.attrs["target_params"] == {"dim": 3}
    assert run.attrs["options"] == {"n_steps": 5}
    # Recorded as the target's, so that the saved run rebuilds the same target.
    assert hm.load(tmp_path / "run.nc").get_target().dim == 3
    same = hm.sample(hm.targets.get("gaussian", dim=3), "hmc", chains=1, warmup=10, draws=10,
                     seed=0, progress=False, n_steps=5)  # fmt: skip
    np.testing.assert_array_equal(run.draws, same.draws)


def test_an_option_neither_takes_is_named_with_both_lists():
    with pytest.raises(
        ValueError,
        match=r"unknown option 'T' for sampler 'hmc' or target "
        r"'gaussian'; sampler options: n_steps.*; target parameters: dim",
    ):
        _run(T=30)


def test_a_name_both_take_is_refused_as_ambiguous(monkeypatch):
    def factory(*, n_steps=3, setting="default"):
        return hm.targets.get("gaussian", dim=n_steps)

    hm.targets.register("both-take-n-steps", factory)
    try:
        with pytest.raises(
            ValueError,
            match="both a parameter of target 'both-take-n-steps' and an option of sampler 'hmc'",
        ):
            _run("both-take-n-steps", n_steps=4)
    finally:
        hm.targets.registry._extra.pop("both-take-n-steps", None)


def test_a_sampler_name_in_other_capitals_gets_a_did_you_mean():
    with pytest.raises(hm.registry.UnknownNameError, match="did you mean 'nuts'"):
        _run(sampler="NUTS")
