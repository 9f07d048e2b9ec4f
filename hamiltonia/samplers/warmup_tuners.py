"""The warm-up tuners of a recipe's options: dual averaging of the step size and Stan's
windowed adaptation of the metric, pooled over the chains or per chain.

One job: turn the options ``step_size``, ``adapt_step_size``, ``target_accept``, ``metric``,
``adapt_windows`` and ``adapt_metric`` into the tuners that adapt the sampler during warm-up
(:func:`step_size_tuners`, :func:`metric_tuners`, both at once :func:`tuners`), built through
the tuner registry (:mod:`hamiltonia.tuners`) and refused, naming the option and what it
accepts, when one is wrong. :mod:`hamiltonia.samplers.composition`, which re-exports them,
composes them with the other parts.

The step size: with ``step_size=None`` it is found by the initial-step-size heuristic and
adapted by dual averaging during warm-up, then frozen; a number fixes it (no adaptation),
unless ``adapt_step_size=True``, in which case it is the starting point of the adaptation.
"""

from __future__ import annotations

import numpy as np

from hamiltonia import tuners as _tuners
from hamiltonia._validation import check_flag
from hamiltonia.tuners.metric_estimate import METRIC_POOLING

__all__ = [
    "ADAPTED_METRICS",
    "METRIC_POOLING",
    "metric_tuners",
    "step_size_tuners",
    "tuners",
]

#: The ``metric`` options adapted during warm-up.
ADAPTED_METRICS = ("diagonal", "dense")

_STAN_WINDOWS = (75, 25, 50)


def _check_adapt_metric(adapt_metric) -> bool:
    """Whether ``adapt_metric`` asks for a metric per chain, or ``ValueError`` naming it."""
    if not isinstance(adapt_metric, str) or adapt_metric not in METRIC_POOLING:
        raise ValueError(
            "adapt_metric must be 'pooled' (one metric from every chain's warm-up draws) or "
            f"'per-chain' (each chain's own, from its own draws), got {adapt_metric!r:.80}"
        )
    return adapt_metric == "per-chain"


def _check_metric(metric) -> None:
    if isinstance(metric, str) and metric not in ("identity", *ADAPTED_METRICS):
        raise ValueError(
            "metric must be 'identity', 'diagonal' or 'dense' (adapted in warm-up), an "
            f"inverse-mass array or a Metric, got {metric!r}"
        )


def step_size_tuners(
    step_size: float | None = None,
    *,
    adapt_step_size: bool | None = None,
    target_accept: float = 0.8,
) -> list:
    """Dual averaging of the step size, when asked: ``[DualAveraging]`` or ``[]``.

    It drives the acceptance statistic :math:`\\alpha_t` towards :math:`\\delta`:
    :math:`\\log\\varepsilon_{t+1} = \\mu - \\tfrac{\\sqrt t}{\\gamma}\\bar H_t`,
    :math:`\\bar H_t = (1 - \\tfrac{1}{t + t_0})\\bar H_{t-1}
    + \\tfrac{1}{t + t_0}(\\delta - \\alpha_t)`, then freezes the averaged step size
    (:class:`~hamiltonia.tuners.DualAveraging`).

    Parameters
    ----------
    step_size : float > 0, optional
        Fixed, or the start of the adaptation (default: the initial-step-size heuristic).
    adapt_step_size : bool, optional
        Adapt (default: only when ``step_size`` is not given).
    target_accept : float in (0, 1)
        :math:`\\delta` (default 0.8).

    Returns
    -------
    list of Tuner
        ``ValueError`` names ``adapt_step_size`` or ``target_accept``.

    References
    ----------
    Nesterov (2009), *Primal-dual subgradient methods*; Hoffman and Gelman (2014), §3.2.
    """
    adapt_step_size = check_flag(adapt_step_size, "adapt_step_size", allow_none=True)
    adapt = step_size is None if adapt_step_size is None else adapt_step_size
    if not adapt:
        if step_size is None:
            raise ValueError("step_size must be given when adapt_step_size=False")
        return []
    return [_tuners.get("dual-averaging", target_accept=target_accept, initial_step_size=step_size)]


def _windows(adapt_windows) -> dict:
    """Stan's warm-up windows ``(initial buffer, first window, terminal buffer)``."""
    if (
        not isinstance(adapt_windows, tuple | list)
        or len(adapt_windows) != 3
        or any(isinstance(v, bool) or not isinstance(v, int | np.integer) for v in adapt_windows)
    ):
        raise ValueError(
            "adapt_windows must be three integers (initial buffer, first window, terminal "
            f"buffer), such as Stan's (75, 25, 50); got {adapt_windows!r:.80}"
        )
    first, window, last = (int(v) for v in adapt_windows)
    if first < 0 or window < 1 or last < 0:
        raise ValueError(
            f"adapt_windows must be (>= 0, >= 1, >= 0) iterations, got {tuple(adapt_windows)}"
        )
    return {"initial_buffer": first, "window": window, "terminal_buffer": last}


def metric_tuners(metric="identity", adapt_windows=_STAN_WINDOWS,
                  adapt_metric: str = "pooled") -> list:  # fmt: skip
    """Stan's windowed adaptation of a ``"diagonal"`` or ``"dense"`` metric, or ``[]``.

    Each window sets :math:`M^{-1} = \\tfrac{n}{n + 5}\\hat\\Sigma + 10^{-3}\\tfrac{5}{n + 5}I`
    from its :math:`n` draws' covariance (its diagonal for ``"diagonal"``), pooled over
    chains or per chain (:class:`~hamiltonia.tuners.adaptation.WindowedMetric`). Give
    :func:`~hamiltonia.samplers.composition.hamiltonian` the same ``metric``;
    :func:`~hamiltonia.samplers.composition.compose` builds the
    :class:`~hamiltonia.samplers.per_chain.PerChainMetricSampler` that a metric per chain needs.

    Parameters
    ----------
    metric : str, array or Metric
        As in :func:`~hamiltonia.samplers.composition.hamiltonian`.
    adapt_windows : (int >= 0, int >= 1, int >= 0)
        Iterations of the initial buffer (step size only), the first metric window (each next
        one twice as long) and the terminal buffer (default ``(75, 25, 50)``, Stan's);
        checked only for an adapted metric.
    adapt_metric : {"pooled", "per-chain"}
        ``"pooled"`` (default): one metric from every chain's draws of a window.
        ``"per-chain"`` (Stan's and NumPyro's choice): each chain (each antithetic pair) its
        own, from its own draws, so that a chain's draws do not depend on the number of
        chains (:doc:`/adaptation`). Checked whatever the metric; a fixed metric is not
        adapted either way.

    Returns
    -------
    list of Tuner
        ``ValueError`` names ``metric``, ``adapt_windows`` or ``adapt_metric`` and what they
        accept.

    References
    ----------
    Stan Development Team, *Stan Reference Manual*, "Automatic parameter tuning".
    """
    _check_metric(metric)
    per_chain = _check_adapt_metric(adapt_metric)
    if isinstance(metric, str) and metric in ADAPTED_METRICS:
        options = _windows(adapt_windows)
        if per_chain:  # only then: a tuner of the registry that knows no per_chain still builds
            options["per_chain"] = True
        return [_tuners.get("windowed-metric", kind=metric, **options)]
    return []


def tuners(
    step_size: float | None = None,
    *,
    adapt_step_size: bool | None = None,
    target_accept: float = 0.8,
    metric="identity",
    adapt_windows=_STAN_WINDOWS,
    adapt_metric: str = "pooled",
) -> list:
    """The warm-up tuners of the options: :func:`step_size_tuners` + :func:`metric_tuners`.

    Parameters
    ----------
    step_size, adapt_step_size, target_accept
        As in :func:`step_size_tuners`.
    metric, adapt_windows, adapt_metric
        As in :func:`metric_tuners` (checked first, as the recipes check them).

    Returns
    -------
    list of Tuner

    References
    ----------
    Hoffman and Gelman (2014), §3.2; the Stan Reference Manual.
    """
    adapt_metric = metric_tuners(metric, adapt_windows, adapt_metric)
    adapt_step = step_size_tuners(
        step_size, adapt_step_size=adapt_step_size, target_accept=target_accept
    )
    return adapt_step + adapt_metric
