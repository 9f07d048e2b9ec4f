"""The summary table of a run's draws: weighted moments and quantiles, MCSE, bulk and tail
ESS and :math:`\\hat R` per parameter (the table :meth:`hamiltonia.Result.summary` gives)."""

from __future__ import annotations

import warnings

import numpy as np

from hamiltonia.diagnostics import estimators
from hamiltonia.diagnostics.estimators import weighted_mean

__all__ = [
    "DEFAULT_QUANTILES",
    "check_quantiles",
    "format_summary",
    "quantile_label",
    "summary_table",
    "weighted_quantiles",
]


#: The quantiles :meth:`Result.summary` reports by default.
DEFAULT_QUANTILES = (0.05, 0.95)


def check_quantiles(quantiles) -> tuple:
    try:
        q = tuple(float(x) for x in np.atleast_1d(quantiles))
    except (TypeError, ValueError):
        raise ValueError(f"quantiles must be numbers in (0, 1), got {quantiles!r}") from None
    if not all(0.0 < x < 1.0 for x in q):
        raise ValueError(f"quantiles must be numbers in (0, 1), got {quantiles!r}")
    return q


def quantile_label(q: float) -> str:
    """The column name of quantile ``q``: ``"5%"``, ``"2.5%"``."""
    return f"{100 * q:g}%"


def weighted_quantiles(draws: np.ndarray, log_weights, probs) -> np.ndarray:
    """Quantiles per parameter (rows ``probs``), weighted by the importance weights."""
    flat = draws.reshape(-1, draws.shape[-1])
    lw = None if log_weights is None else np.asarray(log_weights, dtype=float).reshape(-1)
    if lw is None or np.ptp(lw) == 0:
        # Equal weights: ArviZ's (interpolated) quantiles; numpy's weighted quantiles take
        # the inverse of the empirical CDF, which differs from them by up to one draw.
        return np.quantile(flat, probs, axis=0)
    w = np.exp(lw - lw.max())
    return np.stack(
        [np.quantile(flat[:, i], probs, weights=w, method="inverted_cdf")
         for i in range(flat.shape[1])],
        axis=-1,
    )  # fmt: skip


def summary_table(draws, names, log_weights=None, quantiles=DEFAULT_QUANTILES):
    """The summary of draws ``(chains, draws, dim)`` (see :meth:`hamiltonia.Result.summary`
    for the columns), weighted by ``log_weights`` ``(chains, draws)`` when given."""
    with warnings.catch_warnings():
        # Chains that never moved have no variance: ArviZ divides by zero and gives nan or
        # inf, which the table shows and diagnose() reports.
        warnings.filterwarnings("ignore", "divide by zero", RuntimeWarning)
        warnings.filterwarnings("ignore", "invalid value", RuntimeWarning)
        return _summary_table(draws, names, log_weights, quantiles)


def _summary_table(draws, names, log_weights, quantiles):
    import pandas as pd

    mean = weighted_mean(draws, log_weights)
    n_eff = draws.shape[0] * draws.shape[1]
    if log_weights is not None:
        n_eff = estimators.kish_ess(log_weights)
    # Without Bessel's correction, as arviz_stats.summary's sd.
    sd = np.sqrt(np.maximum(weighted_mean((draws - mean) ** 2, log_weights), 0.0))
    qs = weighted_quantiles(draws, log_weights, (0.5, *quantiles))
    ess_bulk = estimators.ess(draws, "bulk")
    ess_tail = estimators.ess(draws, "tail")
    if log_weights is None:
        mcse = estimators.mcse(draws, "mean")
    else:
        factor = n_eff / log_weights.size
        ess_bulk, ess_tail = ess_bulk * factor, ess_tail * factor
        # ArviZ's MCSE of the mean takes the sd with Bessel's correction (Kish's size here).
        corrected = sd * np.sqrt(n_eff / max(n_eff - 1.0, 1e-300))
        mcse = corrected / np.sqrt(estimators.ess(draws, "mean") * factor)
    columns = {"mean": mean, "sd": sd, "median": qs[0]}
    columns.update({quantile_label(q): qs[k + 1] for k, q in enumerate(quantiles)})
    columns.update(
        {"mcse": mcse, "ess_bulk": ess_bulk, "ess_tail": ess_tail, "r_hat": estimators.rhat(draws)}
    )
    return pd.DataFrame(columns, index=pd.Index(names, name="parameter"))


def format_summary(table) -> str:
    """A summary table as text rounded for reading: ESS as whole numbers, :math:`\\hat R`
    to two decimals, the estimates to four significant digits."""
    shown = table.copy()
    for column in shown.columns:
        values = shown[column]
        if column.startswith("ess"):
            shown[column] = values.map(lambda v: f"{v:,.0f}" if np.isfinite(v) else "nan")
        elif column == "r_hat":
            shown[column] = values.map(lambda v: f"{v:.2f}")
        else:
            shown[column] = values.map(lambda v: f"{v:.4g}")
    return shown.to_string()
