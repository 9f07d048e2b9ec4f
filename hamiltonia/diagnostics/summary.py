"""The summary table of a run's draws: weighted moments and quantiles, MCSE, bulk and tail
ESS and :math:`\\hat R` per parameter (the table :meth:`hamiltonia.Result.summary` gives)."""

from __future__ import annotations

import warnings

import numpy as np

from hamiltonia.diagnostics import univariate, weights
from hamiltonia.diagnostics.weights import weighted_mean

__all__ = [
    "DEFAULT_QUANTILES",
    "check_quantiles",
    "column_format",
    "format_summary",
    "format_table",
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
    for the columns), weighted by ``log_weights`` ``(chains, draws)`` when given.

    Parameters
    ----------
    draws : ndarray, shape ``(chains, draws, dim)``
        The draws.
    names : sequence of str
        The parameters' names, the table's index.
    log_weights : ndarray, shape ``(chains, draws)``, optional
        Log importance weights (a shadow sampler's); ``None`` for equal weights.
    quantiles : sequence of float
        The quantiles to report besides the median.

    Returns
    -------
    pandas.DataFrame
        One row per parameter: ``mean``, ``sd``, ``median``, the quantiles, ``mcse`` (of
        the mean), ``ess_bulk``, ``ess_tail`` and ``r_hat``.

    Notes
    -----
    Without weights ``mcse`` is ArviZ's :math:`\\text{sd}/\\sqrt{\\text{ESS}_\\text{mean}}`.
    With importance weights :math:`w_i` the mean is the self-normalised estimate, a ratio
    of two means, whose error to first order (the delta method, Owen 2013, *Monte Carlo
    theory, methods and examples*, §9.2) is the error of the plain mean of the linearised
    values :math:`\\psi_i` (:func:`hamiltonia.diagnostics.weights.linearised_values`):

    .. math::

        \\hat\\mu = \\frac{\\sum_i w_i f_i}{\\sum_i w_i}, \\qquad
        \\psi_i = \\hat\\mu + \\frac{w_i}{\\bar w}\\,(f_i - \\hat\\mu),

        \\text{MCSE}(\\hat\\mu)
        = \\frac{\\text{sd}(\\psi)}{\\sqrt{\\text{ESS}_\\text{mean}(\\psi)}},

    :math:`\\bar\\psi = \\hat\\mu` exactly, :math:`\\text{sd}` with Bessel's correction
    and :math:`\\text{ESS}_\\text{mean}` the split-chain ESS of the series
    :math:`\\psi` over all chains (Vehtari et al. 2021, as for unweighted draws). It
    accounts for the weights' spread, for their correlation with :math:`f` and for the
    chains' autocorrelation at once. Kish's factor alone,
    :math:`\\text{sd}_w(f) / \\sqrt{\\text{ESS}_\\text{mean}(f)\\,\\text{ESS}_\\text{IMP}/N}`,
    assumes weights independent of :math:`f` and understates the error where they are not
    (for draws :math:`x \\sim N(0, 1)` weighted by :math:`e^{ax}` and :math:`f = x`, by a
    factor :math:`\\sqrt{1 + a^2}`). Equal weights give :math:`\\psi_i = f_i`, the
    unweighted MCSE.

    ``ess_bulk`` and ``ess_tail`` stay the rank-normalised ESS of the unweighted draws
    times Kish's factor :math:`\\text{ESS}_\\text{IMP}/N`
    (:func:`~hamiltonia.diagnostics.weights.kish_ess`), the diagnostics of the chains'
    mixing that :meth:`hamiltonia.Result.diagnose` reads; with weights, ``mcse`` is not
    derived from them.
    """
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
        n_eff = weights.kish_ess(log_weights)
    # Without Bessel's correction, as arviz_stats.summary's sd.
    sd = np.sqrt(np.maximum(weighted_mean((draws - mean) ** 2, log_weights), 0.0))
    qs = weighted_quantiles(draws, log_weights, (0.5, *quantiles))
    # One sort of each parameter's draws serves R-hat and both ESS.
    rank = univariate.convergence(draws)
    ess_bulk, ess_tail = rank["ess_bulk"], rank["ess_tail"]
    if log_weights is None:
        mcse = univariate.mcse(draws, "mean")
    else:
        factor = n_eff / log_weights.size
        ess_bulk, ess_tail = ess_bulk * factor, ess_tail * factor
        # The delta method (Notes of summary_table): the Kish factor alone ignores how the
        # weights move with f and understates the error when they are uneven.
        mcse = univariate.mcse(weights.linearised_values(draws, log_weights), "mean")
    columns = {"mean": mean, "sd": sd, "median": qs[0]}
    columns.update({quantile_label(q): qs[k + 1] for k, q in enumerate(quantiles)})
    columns.update(
        {"mcse": mcse, "ess_bulk": ess_bulk, "ess_tail": ess_tail, "r_hat": rank["r_hat"]}
    )
    return pd.DataFrame(columns, index=pd.Index(names, name="parameter"))


#: Significant digits of a column's typical value (the median magnitude of its finite,
#: nonzero values) that :func:`column_format` keeps.
SIGNIFICANT_DIGITS = 4
#: Fewest decimals of an estimate column, as ArviZ's ``summary(round_to=2)``.
MIN_DECIMALS = 2


def column_format(values) -> str:
    """One format specification for a whole column of estimates (``"{:.4f}"``, ``"{:.3e}"``).

    Fixed decimals, as ArviZ and NumPyro print their summaries, with the number of decimals
    chosen from the column's typical magnitude (the median of its finite nonzero absolute
    values) so that a typical value shows :data:`SIGNIFICANT_DIGITS` significant digits,
    and never fewer than :data:`MIN_DECIMALS`; a column whose typical value is below
    ``1e-4`` or of ``1e8`` or more is in scientific notation throughout. Every value of the
    column is then printed the same way: a column of means is never a mix of ``1.2e-05``
    and ``3.4``, and its decimal points line up.
    """
    v = np.abs(np.asarray(values, dtype=float).ravel())
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return f"{{:.{MIN_DECIMALS}f}}"
    exponent = int(np.floor(np.log10(np.median(v))))
    if exponent < -4 or exponent >= 8:
        return f"{{:.{SIGNIFICANT_DIGITS - 1}e}}"
    return f"{{:.{max(MIN_DECIMALS, SIGNIFICANT_DIGITS - 1 - exponent)}f}}"


def _format_value(fmt: str, value) -> str:
    value = float(value)
    # nan and inf in a column of numbers read as such ("nan", "inf", "-inf").
    return fmt.format(value) if np.isfinite(value) else str(value)


def format_table(table, formats: dict | None = None) -> str:
    """``table`` (a pandas DataFrame of numbers) as text with one format per column: the
    format of ``formats[column]`` where given (``"{:.0f}"``), else :func:`column_format`
    of the column's values."""
    shown = table.copy()
    for column in shown.columns:
        values = shown[column].to_numpy(dtype=float)
        fmt = (formats or {}).get(column) or column_format(values)
        shown[column] = [_format_value(fmt, v) for v in values]
    return shown.to_string()


def format_summary(table) -> str:
    """A summary table (:func:`summary_table`) as text rounded for reading, one format per
    column as ArviZ and NumPyro print theirs: ESS as whole numbers, :math:`\\hat R` to two
    decimals, fixed decimals for the estimates (:func:`column_format`).

    The mean, sd, median and quantiles share the decimals that suit the sd column: they are
    in the parameters' units, and digits far below the posterior's spread carry nothing (a
    mean of ``-0.0000051`` beside an sd of ``1.4`` prints as ``-0.000``, as ArviZ rounds it).
    The MCSE, a much smaller number, gets its own.
    """
    formats = {c: "{:.0f}" for c in table.columns if str(c).startswith("ess")}
    if "r_hat" in table.columns:
        formats["r_hat"] = "{:.2f}"
    if "sd" in table.columns:
        spread = column_format(table["sd"])
        for column in table.columns:
            if column in ("mean", "sd", "median") or str(column).endswith("%"):
                formats[column] = spread
    return format_table(table, formats)
