"""Calibration of error bars: is the Monte Carlo standard error a run reports the error it makes?

A run reports an estimate :math:`\\hat\\theta` and its Monte Carlo standard error (MCSE)
:math:`m`. Over independent runs (one seed each) on a target whose answer :math:`\\theta` is
exact, the errors :math:`e_s = \\hat\\theta_s - \\theta` must be as large as the MCSEs say.
:func:`check_calibration` runs a sampler over :math:`n` seeds (:func:`calibrate` takes runs
already made) and, for each estimate (the mean of each :math:`x_i` and of :math:`x_i^2`),
measures

* the **calibration ratio**, the error made over the error reported,

  .. math::

      r = \\frac{\\sqrt{\\tfrac1n \\sum_s e_s^2}}{\\bar m}, \\qquad
      \\bar m = \\sqrt{\\tfrac1n \\sum_s m_s^2},

  1 for right error bars, above 1 for error bars too small (or a bias), below 1 for error
  bars too large. Its interval assumes errors normal and independent across seeds, of
  standard deviation :math:`\\rho\\,\\bar m` (a reported MCSE that varies little between
  seeds; the truth is known, so no degree of freedom is spent on a mean): then :math:`Q =
  \\sum_s e_s^2 / \\bar m^2 = n r^2` has :math:`Q / \\rho^2 \\sim \\chi^2_n`, and at
  confidence :math:`1 - \\gamma`

  .. math::

      \\rho \\in \\Bigl[\\, r \\sqrt{n / \\chi^2_{n,\\,1-\\gamma/2}},\\;
      r \\sqrt{n / \\chi^2_{n,\\,\\gamma/2}} \\,\\Bigr];

* the **coverage** of :math:`\\hat\\theta_s \\pm 2 m_s`, the fraction of seeds with
  :math:`|e_s| \\le 2 m_s` (nominal :math:`2\\Phi(2) - 1 \\approx 0.954`,
  :data:`NOMINAL_COVERAGE`, for normal errors), with its Clopper-Pearson interval; it uses
  each seed's own MCSE, so it also sees an MCSE right on average but noisy;
* the **bias** :math:`z = \\sqrt n\\, \\bar e / \\bar m`, about standard normal for an
  unbiased estimator: it tells a bias from an MCSE too small, which both raise :math:`r`.

**Verdict.** The :math:`K` estimates share a family-wise level :math:`\\alpha` (``level``) by
Bonferroni: every interval is at confidence :math:`1 - \\alpha / K`, and the check
:attr:`~CalibrationResult.passed` when every ratio interval covers 1, so that calibrated
error bars fail it with probability at most about :math:`\\alpha`. The coverage intervals do
not decide (with tens of seeds they resolve little, and cannot see error bars too large). The
**pooled ratio** :math:`\\sqrt{\\tfrac1K \\sum_k r_k^2}` has a :math:`\\chi^2_{nK}` interval
(confidence :math:`1 - \\alpha`) that takes the estimates as independent, which correlated
coordinates are not: it is too narrow, only indicative.

**Exact estimates.** Zero-variance control variates give a Gaussian's mean to rounding. Where
the RMS error and :math:`\\bar m` are both below :data:`EXACT_RTOL` times the scale
:math:`|\\theta| + \\sigma_i`, the estimate is marked exact and left out of the verdict and
the pooled ratio (its ratio compares rounding errors).

**Estimators** (``estimator=``), each the ``mean`` and ``mcse`` hamiltonia reports:
``"plain"``, of :meth:`hamiltonia.Result.summary` (a run with importance weights is refused:
its unweighted draws sample the shadow density); ``"weighted"``, of the same summary of a run
with importance weights (a shadow sampler's self-normalised mean and its delta-method MCSE);
``"pairs"``, of :meth:`hamiltonia.Result.pair_summary` (``a-hmc``, ``a-mhmc``, ``a-s2hmc``);
``"control-variates"``, of :meth:`hamiltonia.Result.control_variate_summary`; or a callable
``estimator(run) -> (estimates, mcse)``, arrays ``(dim,)``: a plugin's own estimator of the
means of ``run.draws``. The mean of :math:`x^2` is the same estimator's, given the run with
draws :math:`x^2` (weights, statistics and pairs kept); control variates, which need the
positions too, fit :math:`x^2` on the control variates at the positions as
:func:`~hamiltonia.reducers.control_variates.control_variate_summary` fits :math:`x` (a
callable that needs the positions can calibrate ``functions=("mean",)`` only).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "CALIBRATION_LEVEL",
    "COVERAGE_Z",
    "ESTIMATORS",
    "EXACT_RTOL",
    "FUNCTIONS",
    "NOMINAL_COVERAGE",
    "CalibrationResult",
    "CalibrationRow",
    "calibrate",
    "check_calibration",
]

#: The built-in estimators (see the module docstring).
ESTIMATORS = ("plain", "weighted", "pairs", "control-variates")
#: The functions whose means are estimated: :math:`x_i` and :math:`x_i^2`.
FUNCTIONS = ("mean", "second moment")
#: The default family-wise level of :func:`check_calibration`.
CALIBRATION_LEVEL = 0.01
#: Half-width of the intervals whose coverage is measured, in MCSEs.
COVERAGE_Z = 2.0
#: :math:`2\Phi(2) - 1`, the coverage of :math:`\pm 2` MCSE for normal errors.
NOMINAL_COVERAGE = 1.0 - math.erfc(COVERAGE_Z / math.sqrt(2.0))
#: Relative size below which an error and its MCSE are rounding, not Monte Carlo error:
#: float64 sums of :math:`10^6` terms and a least-squares fit stay far below it, and a run
#: would need an ESS near :math:`10^{20}` to reach it by sampling.
EXACT_RTOL = 1e-10

Estimator = Callable[[Any], tuple[Any, Any]]


@dataclass(frozen=True)
class CalibrationRow:
    """One estimate's calibration (the module docstring has the formulas): its ``name``
    (``"E[x1]"``, ``"E[x1^2]"``), the exact value ``truth``, the estimates' average over the
    seeds ``mean_estimate``, ``rms_error`` and ``rms_mcse`` (:math:`\\bar m`), the ``ratio``
    :math:`r` and its :math:`\\chi^2_n` interval ``ratio_ci``, ``bias_z``, the ``coverage`` of
    :math:`\\pm 2` MCSE and its Clopper-Pearson interval ``coverage_ci`` (both intervals at
    the Bonferroni-corrected confidence), and whether the estimate is ``exact`` (error and
    MCSE at rounding level, left out of the verdict)."""

    name: str
    truth: float
    mean_estimate: float
    rms_error: float
    rms_mcse: float
    ratio: float
    ratio_ci: tuple[float, float]
    bias_z: float
    coverage: float
    coverage_ci: tuple[float, float]
    exact: bool = False

    @property
    def passed(self) -> bool:
        """Whether the ratio interval covers 1 (vacuously for an exact estimate)."""
        return self.exact or bool(self.ratio_ci[0] <= 1.0 <= self.ratio_ci[1])

    @property
    def coverage_ok(self) -> bool:
        """Whether the coverage interval holds :data:`NOMINAL_COVERAGE` (informative)."""
        return self.exact or bool(self.coverage_ci[0] <= NOMINAL_COVERAGE <= self.coverage_ci[1])


@dataclass
class CalibrationResult:
    """What :func:`calibrate` measured.

    Attributes
    ----------
    rows : list of CalibrationRow
        One per estimate.
    estimator, label : str
        The estimator's name (a callable's ``__name__``); what the runs were.
    level, confidence : float
        The family-wise level :math:`\\alpha`; each interval's confidence
        :math:`1 - \\alpha / K`.
    estimates, mcse : ndarray, shape ``(runs, K)``
        Each run's estimates and reported MCSEs; ``truth`` ``(K,)`` the exact values.
    pooled_ratio, pooled_ratio_ci : float, tuple of float
        :math:`\\sqrt{\\tfrac1K\\sum_k r_k^2}` over the estimates that are not exact, and its
        (indicative) :math:`\\chi^2_{nK}` interval at confidence :math:`1 - \\alpha`.
    problems : dict of str to int
        How many runs showed each problem of :meth:`hamiltonia.Result.diagnose`.
    """

    rows: list[CalibrationRow]
    estimator: str
    label: str
    level: float
    confidence: float
    estimates: np.ndarray
    mcse: np.ndarray
    truth: np.ndarray
    pooled_ratio: float
    pooled_ratio_ci: tuple[float, float]
    problems: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Whether every ratio interval covers 1 (exact estimates aside)."""
        return all(row.passed for row in self.rows)

    def failures(self) -> list[str]:
        """One line per estimate whose ratio interval misses 1, the worst (largest
        :math:`|\\log r|`) first."""
        bad = [row for row in self.rows if not row.passed]
        bad.sort(key=lambda row: -abs(np.log(row.ratio)) if row.ratio > 0 else -np.inf)
        return [
            f"{row.name}: ratio {row.ratio:.3g} [{row.ratio_ci[0]:.3g}, {row.ratio_ci[1]:.3g}], "
            f"coverage {row.coverage:.2f}, bias z {row.bias_z:.2f}"
            for row in bad
        ]

    def to_frame(self):
        """The rows as a pandas DataFrame indexed by estimate, with a column ``passed``."""
        import pandas as pd

        records = []
        for row in self.rows:
            record = dataclasses.asdict(row)
            record["ratio_low"], record["ratio_high"] = record.pop("ratio_ci")
            record["coverage_low"], record["coverage_high"] = record.pop("coverage_ci")
            records.append({**record, "passed": row.passed})
        return pd.DataFrame(records).set_index("name")

    def __str__(self) -> str:
        lines = [("estimate", "truth", "mean", "rms mcse", "ratio", "ratio CI", "coverage",
                  "coverage CI", "")]  # fmt: skip
        for row in self.rows:
            lines.append((
                row.name, f"{row.truth:.4g}", f"{row.mean_estimate:.4g}", f"{row.rms_mcse:.3g}",
                f"{row.ratio:.3g}", f"[{row.ratio_ci[0]:.3g}, {row.ratio_ci[1]:.3g}]",
                f"{row.coverage:.2f}", f"[{row.coverage_ci[0]:.2f}, {row.coverage_ci[1]:.2f}]",
                "exact" if row.exact else ("ok" if row.passed else "FAIL"),
            ))  # fmt: skip
        widths = [max(len(line[j]) for line in lines) for j in range(len(lines[0]))]
        table = ["  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                           for j, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip()
                 for line in lines]  # fmt: skip
        low, high = self.pooled_ratio_ci
        out = [
            f"calibration of the {self.estimator} estimates: {self.label}",
            f"ratio = RMS error / RMS MCSE (1 when calibrated); coverage of +-{COVERAGE_Z:g} "
            f"MCSE (nominal {NOMINAL_COVERAGE:.3f}); intervals at {100 * self.confidence:.4g} % "
            f"(level {self.level:g} over {len(self.rows)} estimates)",
            *table,
            f"pooled ratio {self.pooled_ratio:.3g} [{low:.3g}, {high:.3g}] (estimates taken "
            "as independent: indicative)",
        ]
        if self.problems:
            found = ", ".join(f"{k} {v}" for k, v in sorted(self.problems.items()))
            out.append(f"runs with problems (of {len(self.estimates)}): {found}")
        out.append("passed" if self.passed else f"FAILED: {len(self.failures())} estimate(s)")
        return "\n".join(out)


def _values_run(run: Any, values: np.ndarray) -> Any:
    """``run`` with draws ``values`` (a function's values at its draws; its weights,
    statistics and pairs kept): the summaries of it estimate the function's mean."""
    if values is run.draws:
        return run
    return dataclasses.replace(
        run, draws=values, names=tuple(f"{name}^2" for name in run.names), gradients=None,
        warmup_draws=None, _summary=None, _rank_diagnostics=None,
    )  # fmt: skip


def _columns(table) -> tuple[np.ndarray, np.ndarray]:
    return table["mean"].to_numpy(dtype=float), table["mcse"].to_numpy(dtype=float)


def _summary(run, values, weighted: bool):
    if (run.log_weights is not None) != weighted:
        raise ValueError(
            f"estimator='plain': the {run.sampler or 'sampler'} run carries importance weights "
            "(its unweighted draws sample the shadow density): use estimator='weighted'"
            if not weighted
            else f"estimator='weighted': the {run.sampler or 'sampler'} run has no importance "
            "weights: use a shadow sampler (s2hmc, shmc...) or estimator='plain'"
        )
    return _columns(_values_run(run, values).summary())


def _pairs(run, values):
    if not run.pairs:
        raise ValueError(
            f"estimator='pairs': the {run.sampler or 'sampler'} run has no antithetic pairs: "
            "use an 'a-' sampler (a-hmc, a-mhmc, a-s2hmc) or antithetic=True"
        )
    return _columns(_values_run(run, values).pair_summary())


def _control_variates(run, values):
    if values is run.draws:
        return _columns(run.control_variate_summary())
    # Another function's mean, fitted on the control variates at the positions as
    # control_variate_summary fits the draws themselves.
    from hamiltonia import diagnostics
    from hamiltonia.diagnostics.pair_error import pair_mcse
    from hamiltonia.reducers.antithetic import pair_means
    from hamiltonia.reducers.base import linearised_values
    from hamiltonia.reducers.control_variates import controlled_values

    grads = run.gradients
    if grads is None:
        flat = run.draws.reshape(-1, run.draws.shape[-1])
        grads = np.asarray(run.get_target().log_prob_and_grad(flat)[1], dtype=float)
        grads = grads.reshape(run.draws.shape)
    order = int(run.attrs.get("control_variates", 1))
    controlled = controlled_values(values, run.draws, grads, order, run.log_weights)
    if run.pairs:  # the pairs' standard error, as control_variate_summary gives it
        series = pair_means(controlled, run.log_weights)
        return series.mean(axis=(0, 1)), pair_mcse(series).mcse
    series = linearised_values(controlled, run.log_weights)
    return series.mean(axis=(0, 1)), np.asarray(diagnostics.mcse(series, "mean"), dtype=float)


_BUILT_IN = {
    "plain": lambda run, values: _summary(run, values, weighted=False),
    "weighted": lambda run, values: _summary(run, values, weighted=True),
    "pairs": _pairs,
    "control-variates": _control_variates,
}


def _resolve_estimator(estimator: str | Estimator) -> tuple[str, Callable]:
    """``(name, fn(run, values))``."""
    if isinstance(estimator, str) and estimator in _BUILT_IN:
        return estimator, _BUILT_IN[estimator]
    if isinstance(estimator, str) or not callable(estimator):
        raise ValueError(
            f"estimator must be one of {', '.join(map(repr, ESTIMATORS))} or a callable "
            f"run -> (estimates, mcse), got {estimator!r:.80}"
        )
    name = getattr(estimator, "__name__", type(estimator).__name__)
    return name, lambda run, values: estimator(_values_run(run, values))


def _check_functions(functions: Sequence[str]) -> tuple[str, ...]:
    seq = (functions,) if isinstance(functions, str) else functions
    seq = tuple(seq) if isinstance(seq, Iterable) else ()
    if not seq or not all(f in FUNCTIONS for f in seq) or len(set(seq)) < len(seq):
        raise ValueError(
            f"functions must be a non-empty sequence of distinct names from {FUNCTIONS}, "
            f"got {functions!r:.80}"
        )
    return seq


def _check_level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), got {level!r:.80}")
    return float(level)


def _is_int(value, minimum: int) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum


def _check_seeds(seeds: int | Sequence[int]) -> tuple[int, ...]:
    if _is_int(seeds, 2):
        return tuple(range(int(seeds)))
    seq = tuple(seeds) if isinstance(seeds, Iterable) and not isinstance(seeds, str) else ()
    if not all(_is_int(s, 0) for s in seq) or len(seq) < 2 or len(set(seq)) < len(seq):
        raise ValueError(
            "seeds must be an integer >= 2 or a sequence of at least 2 distinct integers "
            f">= 0, got {seeds!r:.80}"
        )
    return tuple(int(s) for s in seq)


def _exact_arrays(exact: Any) -> tuple[np.ndarray, np.ndarray]:
    if callable(exact) and not hasattr(exact, "mean"):
        exact = exact()
    if not (hasattr(exact, "mean") and hasattr(exact, "var")):
        raise ValueError(
            "the target has no exact moments: give exact= (an object with mean and var "
            f"arrays, such as hamiltonia.targets.base.ExactMoments), got {exact!r:.80}"
        )
    mean = np.atleast_1d(np.asarray(exact.mean, dtype=float))
    var = np.atleast_1d(np.asarray(exact.var, dtype=float))
    if mean.shape != var.shape or mean.ndim != 1:
        raise ValueError(
            f"exact moments: mean and var must have one shape (dim,), got {mean.shape} and "
            f"{var.shape}"
        )
    return mean, var


def _rows(names, truth, scale, estimates, mcse, confidence):
    """The :class:`CalibrationRow` of each estimate (columns of ``estimates``)."""
    from scipy import stats

    n = estimates.shape[0]
    gamma = 1.0 - confidence
    errors = estimates - truth
    rms_error = np.sqrt(np.mean(errors**2, axis=0))
    rms_mcse = np.sqrt(np.mean(mcse**2, axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = rms_error / rms_mcse
        bias_z = np.sqrt(n) * errors.mean(axis=0) / rms_mcse
    low = ratio * np.sqrt(n / stats.chi2.isf(gamma / 2, n))
    high = ratio * np.sqrt(n / stats.chi2.ppf(gamma / 2, n))
    covered = np.sum(np.abs(errors) <= COVERAGE_Z * mcse, axis=0)
    exact = (rms_error <= EXACT_RTOL * scale) & (rms_mcse <= EXACT_RTOL * scale)
    rows = []
    for k, name in enumerate(names):
        ci = stats.binomtest(int(covered[k]), n).proportion_ci(confidence, method="exact")
        rows.append(CalibrationRow(
            name=name, truth=float(truth[k]), mean_estimate=float(estimates[:, k].mean()),
            rms_error=float(rms_error[k]), rms_mcse=float(rms_mcse[k]), ratio=float(ratio[k]),
            ratio_ci=(float(low[k]), float(high[k])), bias_z=float(bias_z[k]),
            coverage=float(covered[k] / n), coverage_ci=(float(ci.low), float(ci.high)),
            exact=bool(exact[k]),
        ))  # fmt: skip
    return rows


def _pooled(rows, n: int, level: float) -> tuple[float, tuple[float, float]]:
    from scipy import stats

    ratios = np.array([row.ratio for row in rows if not row.exact] or [np.nan])
    dof = n * ratios.size
    pooled = float(np.sqrt(np.mean(ratios**2)))
    low = pooled * np.sqrt(dof / stats.chi2.isf(level / 2, dof))
    high = pooled * np.sqrt(dof / stats.chi2.ppf(level / 2, dof))
    return pooled, (float(low), float(high))


def calibrate(
    runs: Iterable[Any],
    exact: Any,
    *,
    estimator: str | Estimator = "plain",
    functions: Sequence[str] = FUNCTIONS,
    level: float = CALIBRATION_LEVEL,
    label: str | None = None,
    check: bool = True,
) -> CalibrationResult:
    """Calibrate an estimator's error bars over independent ``runs`` of one sampler (see the
    module docstring; :func:`check_calibration` makes the runs).

    Parameters
    ----------
    runs : iterable of Result
        At least two independent runs (different seeds) of the same sampler on a target with
        exact moments; consumed one at a time (a generator keeps one run in memory).
    exact : ExactMoments-like or callable
        Exact marginal ``mean`` and ``var`` (``target.exact_moments``). The truth of
        :math:`\\mathbb E[x_i^2]` is :math:`\\sigma_i^2 + \\mu_i^2`. Coordinates with a
        non-finite exact value are left out.
    estimator : str or callable
        One of :data:`ESTIMATORS`, or ``estimator(run) -> (estimates, mcse)``.
    functions : sequence of str
        Those of :data:`FUNCTIONS` whose means are estimated.
    level : float
        The family-wise level :math:`\\alpha` in (0, 1), Bonferroni-corrected over the
        estimates.
    label : str, optional
        What the runs were, for the report (default: from the first run).
    check : bool
        Raise ``AssertionError`` naming the worst estimates unless the result
        :attr:`~CalibrationResult.passed` (default); with ``False`` only measure.

    Returns
    -------
    CalibrationResult

    Raises
    ------
    ValueError
        For a bad argument (naming it and its valid range), fewer than two runs, or an
        estimator that does not apply to the runs (``"weighted"`` without weights).
    AssertionError
        With ``check=True``, when a ratio interval misses 1.
    """
    from hamiltonia.diagnostics.checks import SamplingWarning

    name, fn = _resolve_estimator(estimator)
    functions = _check_functions(functions)
    level = _check_level(level)
    mean, var = _exact_arrays(exact)
    keep = np.flatnonzero(np.isfinite(mean) & np.isfinite(var))
    if keep.size == 0:
        raise ValueError("exact moments: no coordinate has a finite exact mean and variance")
    truths = {"mean": mean[keep], "second moment": var[keep] + mean[keep] ** 2}
    estimates, mcse, problems, first = [], [], {}, None
    for run in runs:
        if run.dim != mean.size:
            raise ValueError(f"a run has {run.dim} parameters, the exact moments {mean.size}")
        first = run if first is None else first
        row_est, row_se = [], []
        for function in functions:
            values = run.draws if function == "mean" else run.draws**2
            est, se = fn(run, values)
            est, se = np.asarray(est, dtype=float), np.asarray(se, dtype=float)
            if est.shape != (run.dim,) or se.shape != (run.dim,):
                raise ValueError(
                    f"estimator {name!r} must return (estimates, mcse) of shape "
                    f"({run.dim},), got {est.shape} and {se.shape}"
                )
            row_est.append(est[keep])
            row_se.append(se[keep])
        estimates.append(np.concatenate(row_est))
        mcse.append(np.concatenate(row_se))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplingWarning)
            for check_name in {problem.check for problem in run.diagnose()}:
                problems[check_name] = problems.get(check_name, 0) + 1
    if len(estimates) < 2:
        raise ValueError(f"runs must hold at least 2 independent runs, got {len(estimates)}")
    estimates, mcse = np.array(estimates), np.array(mcse)
    coords = [str(first.names[i]) for i in keep]
    names = [f"E[{c}]" if f == "mean" else f"E[{c}^2]" for f in functions for c in coords]
    truth = np.concatenate([truths[f] for f in functions])
    scale = np.concatenate([np.abs(truths[f]) + np.sqrt(var[keep]) for f in functions])
    confidence = 1.0 - level / truth.size
    rows = _rows(names, truth, scale, estimates, mcse, confidence)
    n = estimates.shape[0]
    if label is None:
        label = (
            f"{first.sampler or 'sampler'} on {first.target or 'target'}, {n} runs x "
            f"{first.n_chains} chains x {first.n_draws} draws"
        )
    pooled, pooled_ci = _pooled(rows, n, level)
    result = CalibrationResult(
        rows=rows, estimator=name, label=label, level=level, confidence=confidence,
        estimates=estimates, mcse=mcse, truth=truth, pooled_ratio=pooled,
        pooled_ratio_ci=pooled_ci, problems=problems,
    )  # fmt: skip
    if check and not result.passed:
        raise AssertionError(
            f"the {name} error bars are not calibrated ({label}; family-wise level {level:g}, "
            f"each ratio interval at {100 * confidence:.4g} %): " + "; ".join(result.failures()[:5])
        )
    return result


def check_calibration(
    target: Any,
    sampler: Any = "nuts",
    *,
    seeds: int | Sequence[int] = 24,
    chains: int = 4,
    warmup: int = 500,
    draws: int = 1000,
    estimator: str | Estimator = "plain",
    functions: Sequence[str] = FUNCTIONS,
    level: float = CALIBRATION_LEVEL,
    exact: Any = None,
    check: bool = True,
    **options: Any,
) -> CalibrationResult:
    """Run ``sampler`` on ``target`` once per seed and calibrate the error bars of
    ``estimator`` against the exact moments (module docstring).

    Each run is :func:`hamiltonia.sample` with ``seed=s``, ``progress=False`` and the
    default path (compiled where every part allows it; ``compiled=False`` in ``options``
    for the NumPy path); its sampling problems (:meth:`hamiltonia.Result.diagnose`) are
    counted in :attr:`CalibrationResult.problems` instead of warned.

    Parameters
    ----------
    target : Target or str
        A target with exact moments (``target.exact_moments``), or a registered name.
    sampler : str or Sampler
        A registered name (built with ``options``) or a ready sampler (copied for each run).
    seeds : int or sequence of int
        :math:`n \\ge 2` runs with seeds ``0 .. n-1``, or these distinct seeds ``>= 0``.
    chains, warmup, draws : int
        Of each run, as :func:`hamiltonia.sample` takes them.
    estimator, functions, level, check
        As in :func:`calibrate`.
    exact : ExactMoments-like, optional
        Default ``target.exact_moments`` (of the target the first run sampled).
    **options
        Options of the sampler (and of a target given by name), passed to every run.

    Returns
    -------
    CalibrationResult

    """
    from hamiltonia.diagnostics.checks import SamplingWarning
    from hamiltonia.runner.run import sample

    seeds = _check_seeds(seeds)
    _resolve_estimator(estimator)
    functions = _check_functions(functions)
    level = _check_level(level)
    if exact is None and not isinstance(target, str):
        exact = getattr(target, "exact_moments", None)
        _exact_arrays(exact)  # a target without exact moments is refused before any run

    def run(seed: int):
        # A run adapts its Sampler object: each seed gets a fresh copy (the target shared).
        smp = sampler if isinstance(sampler, str) else copy.deepcopy(sampler, {id(target): target})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplingWarning)
            return sample(target, smp, chains=chains, warmup=warmup, draws=draws, seed=seed,
                          progress=False, **options)  # fmt: skip

    first = run(seeds[0])
    if exact is None:
        exact = first.get_target().exact_moments
    name = sampler if isinstance(sampler, str) else first.sampler or type(sampler).__name__
    label = (
        f"{name} on {first.target or type(target).__name__}, {len(seeds)} seeds x {chains} "
        f"chains x ({warmup} warm-up, {draws} draws)"
    )

    def runs():
        yield first
        for seed in seeds[1:]:
            yield run(seed)

    return calibrate(runs(), exact, estimator=estimator, functions=functions, level=level,
                     label=label, check=check)  # fmt: skip
