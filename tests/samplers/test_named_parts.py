"""A recipe takes a registered refresh and trajectory policy by name (issue 27, item 6): a
plugin's part is one option away, from Python and from the command line."""

from __future__ import annotations

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from tests.compiled.test_written_once import GeometricLength, OccasionalRefresh

RUN = {"chains": 2, "warmup": 0, "draws": 30, "seed": 3, "progress": False, "step_size": 0.3}


@pytest.fixture
def registered(monkeypatch):
    """A kernel-only refresh and length policy registered in this process, as a plugin's
    entry points would register them."""
    for registry in (hm.refresh.registry, hm.trajectories.registry):
        monkeypatch.setattr(registry, "_extra", dict(registry._extra))
    hm.refresh.register("occasional", lambda prob=0.5: OccasionalRefresh(prob))
    hm.trajectories.register("geometric", lambda n_steps: GeometricLength(n_steps))


def test_a_built_in_part_by_name_is_the_recipes_own():
    by_name = hm.sample("banana", "hmc", refresh="partial", rho=0.5, n_steps=4, **RUN)
    default = hm.sample("banana", "hmc", rho=0.5, n_steps=4, **RUN)
    np.testing.assert_array_equal(by_name.draws, default.draws)


def test_a_registered_refresh_and_length_policy_by_name(registered):
    run = hm.sample("banana", "hmc", refresh="occasional", trajectory="geometric", n_steps=3,
                    **RUN)  # fmt: skip
    assert run.attrs["compiled"] is True
    assert len(np.unique(run.stats["n_steps"])) > 1  # geometric lengths, not 3 every time
    target = hm.targets.get("banana")
    by_hand = hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(target), GeometricLength(3), refresh=OccasionalRefresh(0.5),
        step_size=0.3,
    )  # fmt: skip
    same = hm.sample(target, by_hand, **{k: v for k, v in RUN.items() if k != "step_size"})
    np.testing.assert_array_equal(run.draws, same.draws)


def test_from_the_command_line(registered, tmp_path, capsys):
    out = tmp_path / "run.nc"
    assert main(["sample", "banana", "--sampler", "hmc", "-O", "refresh=occasional",
                 "-O", "trajectory=geometric", "-O", "n_steps=3", "-O", "step_size=0.3",
                 "--warmup", "0", "--draws", "20", "--seed", "1", "--no-progress",
                 "-o", str(out)]) == 0  # fmt: skip
    run = hm.load(out)
    assert run.attrs["compiled"] is True and len(np.unique(run.stats["n_steps"])) > 1


@pytest.mark.parametrize(
    "options, words",
    [
        ({"refresh": "full", "rho": 0.5}, ["refresh 'full' takes no option 'rho'"]),
        ({"trajectory": "random-length"}, ["needs max_steps", "hamiltonia.trajectories.get"]),
        ({"trajectory": "static-length", "n_steps_jitter": 0.5}, ["no option 'n_steps_jitter'"]),
    ],
)
def test_what_a_named_part_cannot_take_is_an_error_naming_it(options, words):
    with pytest.raises(ValueError) as info:
        hm.samplers.build("hmc", hm.targets.get("banana"), **options)
    for word in words:
        assert word in str(info.value)


def test_an_unknown_name_lists_the_registered_ones():
    """A recipe's option: a ValueError naming it (as integrator= gives), with the
    registry's suggestion and names."""
    with pytest.raises(ValueError, match="refresh: unknown refresh 'fulll'; did you mean 'full'"):
        hm.samplers.build("hmc", hm.targets.get("banana"), refresh="fulll")
    with pytest.raises(ValueError, match=r"trajectory: unknown trajectory policy ''"):
        hm.samplers.build("hmc", hm.targets.get("banana"), trajectory="")
