"""Moment recovery: z-scores of Monte Carlo estimates on their standard errors.

For each parameter :math:`x` the mean and the variance are estimated from the draws, and
each estimate is compared with what it should be in units of its Monte Carlo standard
error (MCSE, from ArviZ's ESS of the mean), either against **exact moments** (an object
with ``.mean`` and ``.var``, such as :attr:`hamiltonia.targets.base.Target.exact_moments`)
or against the estimate of an independent **reference run** (another sampler's draws):

.. math::

    z_\\text{mean} = \\frac{\\hat\\mu - \\mu}{\\text{MCSE}(\\hat\\mu)}, \\qquad
    z_\\text{mean} = \\frac{\\hat\\mu_1 - \\hat\\mu_2}
    {\\sqrt{\\text{MCSE}_1^2 + \\text{MCSE}_2^2}}.

The variance is estimated as the mean of one function, :math:`f = (x - c)^2` about a fixed
centre :math:`c`, so that it is a plain average with an ordinary MCSE: against exact
moments :math:`c = \\mu` and :math:`\\widehat{f}` is compared with :math:`\\sigma^2`;
against a reference run :math:`c` is the two runs' pooled mean and the two means of
:math:`f` are compared with each other (they differ by
:math:`\\sigma_1^2 - \\sigma_2^2 + (\\mu_1 - c)^2 - (\\mu_2 - c)^2`, zero when the two
runs sample the same distribution; the two independent estimates' errors add in
quadrature as above).

**Importance weights.** A run with ``log_weights`` (a shadow sampler, whose chain targets
:math:`e^{-\\tilde H}`) is weighted, self-normalised: with :math:`w_i` its weights and
:math:`\\bar w` their mean, :math:`\\hat\\mu_f = \\sum_i w_i f_i / \\sum_i w_i`, and to first
order in the error of :math:`\\bar w` (the delta method; the term dropped is a product of
two errors) its error is the plain mean of

.. math::

    y_i = \\frac{w_i}{\\bar w}\\,(f_i - \\mu_f),

so :math:`\\text{MCSE}(\\hat\\mu_f) = \\text{MCSE}(\\bar y)` from ArviZ's ESS of the
:math:`y_i` along the chains (:math:`\\mu_f` the exact value, or :math:`\\hat\\mu_f` itself
against a reference run, as in :func:`hamiltonia.diagnostics.estimators.linearised_values`). This
ESS accounts for the weights' spread and for the chains' autocorrelation at once; the Kish
factor (:func:`hamiltonia.diagnostics.kish_ess`) is the weights' part alone, which
:meth:`hamiltonia.Result.summary` multiplies into the unweighted ESS.

**Thresholds.** A correct sampler gives z-scores that are approximately standard normal
once the ESS is large enough for the MCSE itself to be accurate (its relative error is
about :math:`1/\\sqrt{2\\,\\text{ESS}}` for independent draws and larger for autocorrelated
ones), so every estimate must rest on an ESS of at least :data:`MIN_ESS`; a run too short
for that fails, asking for more draws, rather than passing or failing by luck. A test suite
compares about a hundred z-scores in all, so the threshold is :data:`Z_THRESHOLD` = 4: under
correct sampling the chance that any one of them exceeds it by accident is below 1 %
(:math:`100 \\times 2\\,(1 - \\Phi(4)) \\approx 0.6\\,\\%`), while a biased sampler fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from hamiltonia import diagnostics

__all__ = [
    "MIN_ESS",
    "Z_THRESHOLD",
    "MomentsLike",
    "assert_moments_recovered",
    "min_ess",
    "moment_z_scores",
]

#: The largest absolute z-score a correct sampler is allowed (see the module docstring).
Z_THRESHOLD = 4.0
#: The smallest ESS on which a z-score is trusted (see the module docstring).
MIN_ESS = 1000


class MomentsLike(Protocol):
    """Anything with exact marginal ``mean`` and ``var`` arrays of shape ``(dim,)``, such as
    :class:`hamiltonia.targets.base.ExactMoments`."""

    mean: np.ndarray
    var: np.ndarray


def _draws_and_weights(run: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """``(draws, log_weights)`` of a result-like object (``.draws``, optional
    ``.log_weights``) or of a bare draws array ``(chains, draws, dim)``."""
    if hasattr(run, "draws"):
        draws, log_weights = run.draws, getattr(run, "log_weights", None)
    else:
        draws, log_weights = run, None
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 3:
        raise ValueError(f"draws must have shape (chains, draws, dim), got {draws.shape}")
    if log_weights is not None:
        log_weights = np.asarray(log_weights, dtype=float)
        if log_weights.shape != draws.shape[:2]:
            raise ValueError(
                f"log_weights must have shape (chains, draws) = {draws.shape[:2]}, "
                f"got {log_weights.shape}"
            )
    return draws, log_weights


def _exact(expected: Any) -> MomentsLike | None:
    """``expected`` as exact moments, or ``None`` when it is a reference run."""
    if callable(expected) and not hasattr(expected, "mean"):
        expected = expected()  # e.g. a bound ``exact_moments`` method
    if hasattr(expected, "mean") and hasattr(expected, "var") and not hasattr(expected, "shape"):
        return expected
    return None


def _estimate(
    values: np.ndarray, log_weights: np.ndarray | None, truth: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(estimate, mcse, ess)`` of the mean of ``values`` ``(chains, draws, k)``, weighted
    when ``log_weights`` is given (the delta method around ``truth``, or around the
    estimate itself when ``truth`` is ``None``)."""
    if log_weights is None:
        return (
            values.mean(axis=(0, 1)),
            diagnostics.mcse(values, "mean"),
            diagnostics.ess(values, "mean"),
        )
    w = np.exp(log_weights - np.max(log_weights))
    w = (w / w.mean())[..., None]
    estimate = (w * values).mean(axis=(0, 1))
    y = w * (values - (estimate if truth is None else truth))
    return estimate, diagnostics.mcse(y, "mean"), diagnostics.ess(y, "mean")


def _scores(run: Any, expected: Any, params: Sequence[int] | None):
    """``(z_mean, z_var, ess)`` of ``run`` against ``expected``."""
    draws, log_weights = _draws_and_weights(run)
    idx = np.arange(draws.shape[-1]) if params is None else np.asarray(params)
    x = draws[..., idx]
    exact = _exact(expected)
    if exact is not None:
        mu = np.asarray(exact.mean, dtype=float)[idx]
        var = np.asarray(exact.var, dtype=float)[idx]
        m, se_m, ess_m = _estimate(x, log_weights, mu)
        v, se_v, ess_v = _estimate((x - mu) ** 2, log_weights, var)
        z_mean, z_var = (m - mu) / se_m, (v - var) / se_v
    else:
        ref, ref_weights = _draws_and_weights(expected)
        if ref.shape[-1] != draws.shape[-1]:
            raise ValueError(
                f"the reference run has {ref.shape[-1]} parameters, this one {draws.shape[-1]}"
            )
        r = ref[..., idx]
        m1, se1, ess1 = _estimate(x, log_weights, None)
        m2, se2, ess2 = _estimate(r, ref_weights, None)
        centre = 0.5 * (m1 + m2)
        v1, sv1, essv1 = _estimate((x - centre) ** 2, log_weights, None)
        v2, sv2, essv2 = _estimate((r - centre) ** 2, ref_weights, None)
        z_mean = (m1 - m2) / np.hypot(se1, se2)
        z_var = (v1 - v2) / np.hypot(sv1, sv2)
        ess_m, ess_v = np.minimum(ess1, ess2), np.minimum(essv1, essv2)
    return z_mean, z_var, float(min(np.min(ess_m), np.min(ess_v)))


def moment_z_scores(
    run: Any, expected: Any, params: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """z-scores of the means and variances of ``run`` against ``expected``.

    Parameters
    ----------
    run : Result, result-like or ndarray
        An object with ``draws`` ``(chains, draws, dim)`` and optionally ``log_weights``
        ``(chains, draws)`` (honoured when not ``None``), or the draws array itself.
    expected : ExactMoments-like, callable or run
        Exact moments (an object with ``mean`` and ``var``, or a callable returning one),
        or an independent reference run (anything ``run`` may be).
    params : sequence of int, optional
        The parameter indices to score (default: all).

    Returns
    -------
    z_mean, z_var : ndarray
        One z-score per selected parameter (see the module docstring for the formulas).
    """
    z_mean, z_var, _ = _scores(run, expected, params)
    return z_mean, z_var


def min_ess(run: Any, expected: Any, params: Sequence[int] | None = None) -> float:
    """The smallest ESS (of the mean) behind the z-scores of :func:`moment_z_scores`: over
    the parameters, their squared deviations and, against a reference run, both runs.

    .. math::

        \\text{ESS}_\\text{min} = \\min_{j,\\, f \\in \\{x_j,\\,(x_j - c_j)^2\\}}
        \\text{ESS}(f)

    With importance weights the ESS is that of the linearised series :math:`y_i` (see the
    module docstring).
    """
    return _scores(run, expected, params)[2]


def assert_moments_recovered(
    run: Any,
    expected: Any,
    params: Sequence[int] | None = None,
    *,
    threshold: float = Z_THRESHOLD,
    min_ess: float = MIN_ESS,
) -> None:
    """Assert that ``run`` recovers the means and variances of ``expected``; silent when
    it does.

    Every estimate must rest on an ESS of at least ``min_ess`` (else the run is too short
    for the test, and the assertion says to draw more), and every z-score must satisfy

    .. math::

        |z_\\text{mean}| < z_\\ast, \\qquad |z_\\text{var}| < z_\\ast,
        \\qquad z_\\ast = \\texttt{threshold}.

    Parameters
    ----------
    run, expected, params
        As in :func:`moment_z_scores`; ``run.log_weights`` is honoured when present.
    threshold : float
        :data:`Z_THRESHOLD` by default.
    min_ess : float
        :data:`MIN_ESS` by default.

    Raises
    ------
    AssertionError
        Naming the parameters whose z-scores exceed the threshold, or the ESS found.
    """
    z_mean, z_var, ess = _scores(run, expected, params)
    assert ess >= min_ess, f"ESS {ess:.0f} < {min_ess}: too short a run for a z-test; draw more"
    names = getattr(run, "names", None)
    idx = np.arange(len(z_mean)) if params is None else np.asarray(params)
    label = [str(names[i]) if names is not None else f"x[{i}]" for i in idx]
    bad = {
        f"{kind} of {label[j]}": round(float(z[j]), 2)
        for kind, z in (("mean", z_mean), ("var", z_var))
        for j in range(len(z))
        if not abs(z[j]) < threshold
    }
    assert not bad, f"z-scores beyond {threshold}: {bad}"
