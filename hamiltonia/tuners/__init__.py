"""Warm-up adaptation: the step size (dual averaging) and the metric (Stan's windows), and
the registry of named tuners (entry-point group ``hamiltonia.tuners``).

The recipes build ``"dual-averaging"`` (from ``target_accept`` and ``step_size``) and, for
``metric="diagonal"`` or ``"dense"``, ``"windowed-metric"`` (from ``adapt_windows``).

>>> import hamiltonia as hm
>>> hm.tuners.get("dual-averaging", target_accept=0.9)  # doctest: +ELLIPSIS
<hamiltonia.tuners.adaptation.DualAveraging object at ...>
"""

from __future__ import annotations

from hamiltonia.registry import Registry
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
    "describe",
    "dual_averaging_step",
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


def names() -> list[str]:
    """Names of the registered tuners."""
    return registry.names()


def describe() -> dict[str, str]:
    """Name to one-line description of every registered tuner."""
    return registry.describe()


def options(name: str) -> list[str]:
    """The keyword options the tuner ``name`` takes."""
    return registry.options(name)


def get(name: str, **options) -> Tuner:
    """The tuner registered as ``name``, built with ``options`` (e.g. ``target_accept=0.9``)."""
    return registry.build(name, **options)


def register(name: str, factory, *, overwrite: bool = False) -> None:
    """Register ``factory(**options) -> Tuner`` under ``name`` in this process (a
    tuner class qualifies)."""
    registry.register(name, factory, overwrite=overwrite)
