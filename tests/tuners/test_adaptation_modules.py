"""The tuners live in modules of one job each (issue 48); ``tuners.adaptation`` still gives
every name it gave before (setup.cfg's entry points and the docs name it), the same objects
as their new homes'. The tuners' kernels stay in ``adaptation``: the composed module names
them by their module path (docs/compiled.rst), and its text keys the kernel cache."""

from __future__ import annotations

from hamiltonia.tuners import adaptation
from tests.moved import assert_re_exported

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


def test_every_name_is_where_it_was():
    homes = {f"hamiltonia.tuners.{module}": names for module, names in HOMES.items()}
    assert_re_exported("hamiltonia.tuners.adaptation", homes, PUBLIC)


def test_the_kernels_keep_their_module_path():
    for kernel in (adaptation.dual_averaging_step, adaptation.dual_averaging_kernel):
        assert kernel.__module__ == "hamiltonia.tuners.adaptation"
