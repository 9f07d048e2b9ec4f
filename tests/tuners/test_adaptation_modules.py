"""The tuners live in modules of one job each (issue 48); ``tuners.adaptation`` still gives
every name it gave before (setup.cfg's entry points and the docs name it), the same objects
as their new homes'. The tuners' kernels stay in ``adaptation``: the composed module names
them by their module path (docs/compiled.rst), and its text keys the kernel cache."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from hamiltonia.tuners import adaptation

#: Each name ``adaptation`` had before the split that moved, by its new home.
HOMES = {
    "base": ["Tuner", "checked_parameter", "declared_parameters", "read_parameter",
             "write_parameter"],
    "metric_estimate": ["METRIC_POOLING", "estimate_metric", "metric_windows"],
}  # fmt: skip

#: ``adaptation.__all__`` before the split: unchanged.
PUBLIC = [
    "DualAveraging", "Tuner", "WindowedMetric", "checked_parameter", "declared_parameters",
    "dual_averaging_step", "estimate_metric", "find_initial_step_size", "metric_windows",
    "read_parameter", "write_parameter",
]  # fmt: skip


def test_the_public_names_are_unchanged():
    assert adaptation.__all__ == PUBLIC


@pytest.mark.parametrize("module", sorted(HOMES))
def test_every_name_is_re_exported_from_its_home(module):
    home = importlib.import_module(f"hamiltonia.tuners.{module}")
    for name in HOMES[module]:
        assert getattr(adaptation, name) is getattr(home, name), name
        assert name in home.__all__, name


def test_the_kernels_keep_their_module_path():
    for kernel in (adaptation.dual_averaging_step, adaptation.dual_averaging_kernel):
        assert kernel.__module__ == "hamiltonia.tuners.adaptation"


@pytest.mark.parametrize("module", ["adaptation", *sorted(HOMES)])
def test_each_module_is_a_small_room(module):
    home = importlib.import_module(f"hamiltonia.tuners.{module}")
    assert home.__doc__ and len(home.__doc__.strip()) > 100
    assert len(Path(home.__file__).read_text().splitlines()) <= 600
