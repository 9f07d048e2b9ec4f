"""Warm-up adaptation: the step size (dual averaging) and the metric (Stan's windows), and
the registry of named tuners (entry-point group ``hamiltonia.tuners``).

The recipes build ``"dual-averaging"`` (from ``target_accept`` and ``step_size``) and, for
``metric="diagonal"`` or ``"dense"``, ``"windowed-metric"`` (from ``adapt_windows``, pooled
over the chains or per chain as ``adapt_metric`` says: :doc:`/adaptation`).

>>> import hamiltonia as hm
>>> hm.tuners.get("dual-averaging", target_accept=0.9)  # doctest: +ELLIPSIS
<hamiltonia.tuners.adaptation.DualAveraging object at ...>
"""

from __future__ import annotations

from hamiltonia.registry import Registry, lookups
from hamiltonia.tuners.adaptation import (
    DualAveraging,
    WindowedMetric,
    dual_averaging_step,
    find_initial_step_size,
)
from hamiltonia.tuners.base import Tuner
from hamiltonia.tuners.chees import ChEES
from hamiltonia.tuners.metric_estimate import estimate_metric, metric_windows

__all__ = [
    "ChEES",
    "DualAveraging",
    "Tuner",
    "WindowedMetric",
    "describe",
    "dual_averaging_step",
    "estimate_metric",
    "find_initial_step_size",
    "get",
    "metric_windows",
    "names",
    "options",
    "register",
    "registry",
]


#: The registry of tuners, fed by the ``hamiltonia.tuners`` entry points.
registry = Registry("hamiltonia.tuners", "tuner", returns=Tuner)


names, describe, options, get, register = lookups(registry, "tuners", "target_accept=0.9")
