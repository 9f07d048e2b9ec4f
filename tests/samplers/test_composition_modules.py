"""The composition helpers live in modules of one job each (issue 48);
``samplers.composition`` still gives every name it gave before, the same objects as their
new homes'."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from hamiltonia.samplers import composition

#: Each name ``composition`` exported before the split that moved, by its new home.
HOMES = {
    "per_chain": ["PerChainMetricSampler"],
    "warmup_tuners": ["ADAPTED_METRICS", "METRIC_POOLING", "metric_tuners", "step_size_tuners",
                      "tuners"],
}  # fmt: skip

#: ``composition.__all__`` before the split: unchanged.
PUBLIC = [
    "ADAPTED_METRICS", "MAX_STEPS", "METRIC_POOLING", "PerChainMetricSampler", "compose",
    "hamiltonian", "integrator", "metric_tuners", "metropolis_trajectory", "momentum_refresh",
    "named_refresh", "named_trajectory", "no_u_turn", "reducer", "step_size_tuners",
    "structure", "tuners", "with_shadow",
]  # fmt: skip


def test_the_public_names_are_unchanged():
    assert composition.__all__ == PUBLIC


@pytest.mark.parametrize("module", sorted(HOMES))
def test_every_name_is_re_exported_from_its_home(module):
    home = importlib.import_module(f"hamiltonia.samplers.{module}")
    for name in HOMES[module]:
        assert getattr(composition, name) is getattr(home, name), name
        assert name in home.__all__, name


@pytest.mark.parametrize("module", ["composition", *sorted(HOMES)])
def test_each_module_is_a_small_room(module):
    home = importlib.import_module(f"hamiltonia.samplers.{module}")
    assert home.__doc__ and len(home.__doc__.strip()) > 100
    assert len(Path(home.__file__).read_text().splitlines()) <= 600
