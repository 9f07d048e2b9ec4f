"""Warm-up adaptation: the step size (dual averaging) and the metric (Stan's windows)."""

from hamiltonia.tuners.adaptation import (
    DualAveraging,
    Tuner,
    WindowedMetric,
    dual_averaging_step,
    find_initial_step_size,
    metric_windows,
)

__all__ = [
    "DualAveraging",
    "Tuner",
    "WindowedMetric",
    "dual_averaging_step",
    "find_initial_step_size",
    "metric_windows",
]
