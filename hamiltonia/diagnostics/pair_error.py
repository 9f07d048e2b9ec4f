"""The Monte Carlo standard error of an estimate from antithetic pairs of chains, from the
spread of independent pairs and of batches within them.

Why not the autocorrelation of the pair-mean series
---------------------------------------------------
The pair estimator is the mean of the series :math:`z_{kt} = \\tfrac12 [f(X_{kt}) +
f(Y_{kt})]` of pairs :math:`k = 1..K` (:func:`hamiltonia.reducers.antithetic.pair_means`).
Chains of different pairs are independent; the two chains of a pair are not. Where the target
is symmetric about :math:`c`, the coupled pair meets, :math:`Y_t = 2c - X_t`, and then
:math:`z_t` of :math:`f(x) = x` is constant: the error of the pair estimate is then made of
events that are not stationary, which an effective sample size from the autocorrelation of
the series (split-chain, as :func:`hamiltonia.diagnostics.mcse` does for independent chains)
cannot measure:

* the **transient before the pair meets**. Warm-up adapts each chain's step size on its own,
  so the two trajectories are not mirrored and the pair does not contract; it is joined at
  the end of warm-up and starts sampling apart (a distance of order the posterior's scale),
  then the distance shrinks per Gaussian mode by :math:`|\\cos\\theta|`,
  :math:`\\theta \\approx L\\varepsilon\\omega`, at every jointly accepted step: in a few
  steps for some modes, over the whole run for a mode near a multiple of :math:`\\pi`;
* **decouplings**: one chain accepts where the other rejects, and the pair starts apart again.

The resulting errors are heavy-tailed across runs (excess kurtosis 8 to 60 measured for
``a-hmc`` on the 12-d ``correlated_gaussian``) and the autocorrelation estimate errs both
ways: 200 runs of ``a-hmc`` there (4 chains, 1,000 warm-up, 2,000 draws) gave calibration
ratios (RMS error over RMS MCSE, :mod:`hamiltonia.testing.calibration`) of 0.50 to 1.47 for
the means and 1.17 to 1.66 for the means of :math:`x^2`; treating all four chains as
independent, as a summary of the draws does, gave 0.04 to 0.80 and up to 2.3.

The estimate here
-----------------
Two estimates of the variance of the overall mean need nothing from the autocorrelation:

* the **spread of the pairs**: each pair's mean :math:`m_k` is an independent replicate, so
  :math:`\\sum_k (m_k - \\bar m)^2 / (K(K-1))` is unbiased whatever happens inside a pair,
  with :math:`K - 1` degrees of freedom (one for the two pairs of four chains);
* **batch means**: each pair's series cut into :data:`BATCHES` contiguous batches, the
  :math:`KB` batch means' variance about their mean over :math:`KB`, with :math:`KB - 1`
  degrees of freedom, right when a batch is longer than the memory of the series (a short
  transient, a decoupling that heals within a batch), too small when a transient spans
  several batches.

A one-way analysis of variance of the batch means by pair decides between them: where the
pairs' means differ more than the batches within the pairs explain (the F test, level
:data:`TEST_LEVEL`), the batch means are not to be trusted and the pairs' spread is the
MCSE; otherwise the pooled batch means are. Measured over 100 to 200 runs each (``a-hmc``
and ``a-mhmc`` on the 3-d and 12-d correlated Gaussians, ``a-s2hmc`` on the 12-d one,
``a-hmc`` and ``a-nuts`` on banana; 500 to 2,000 draws, 2 and 4 pairs), the calibration
ratios fall in 0.82 to 1.18 and the coverage of :math:`\\pm 2` MCSE in 0.89 to 0.97 on
average, and each run's MCSE follows its own error (runs binned by their MCSE, which spans
two decades, have ratios of 0.98 to 1.11 in every quarter). Taking
the larger of the two estimates instead is about 10 % more conservative on well-mixed runs
(a one-degree-of-freedom estimate is often large by chance); the batch means alone reach a
ratio of 3.8 on ``a-hmc``, the pairs' spread alone covers 70 % of :math:`\\pm 2` MCSE with
two pairs (a :math:`t_1` pivot).

``dof`` says which estimate was taken and how far to trust it: a 95 % interval is the
estimate :math:`\\pm t_{\\text{dof}, 0.975}` MCSE (12.7 MCSE at one degree of freedom). A
single pair cannot check its batches against another pair: its MCSE is the batch means'
alone, which the transient can make too small, and :func:`pair_mcse` warns. A start that
fades over two batches or more is undercounted by the batch means (by up to 1.5 on synthetic
pairs contracting by 0.995 a draw), which the F test of two pairs often misses: more pairs
make the check stronger.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

__all__ = ["BATCHES", "TEST_LEVEL", "PairError", "pair_mcse", "paired_mcse"]

#: Batches each pair's series is cut into.
BATCHES = 8
#: Level of the F test by which the pairs' spread overrules the batch means.
TEST_LEVEL = 0.05


@dataclass(frozen=True)
class PairError:
    """The standard error of the mean of a paired series (module docstring), per quantity.

    Attributes
    ----------
    mcse : ndarray
        The Monte Carlo standard error of the overall mean.
    dof : ndarray
        Degrees of freedom of its variance estimate: :math:`KB - 1` for the pooled batch
        means, :math:`K - 1` where the pairs' spread was taken, :math:`B - 1` for one pair.
    between : ndarray of bool
        Where the pairs disagreed beyond their batches and their spread was taken.
    p_value : ndarray
        The F test's p-value (nan for one pair, or one draw per pair).
    """

    mcse: np.ndarray
    dof: np.ndarray
    between: np.ndarray
    p_value: np.ndarray


def _batch_means(series: np.ndarray, batches: int) -> np.ndarray:
    """``(pairs, batches, ...)``: each pair's series cut into contiguous batches whose
    lengths differ by one at most."""
    parts = np.array_split(np.arange(series.shape[1]), batches)
    return np.stack([series[:, idx].mean(axis=1) for idx in parts], axis=1)


def pair_mcse(
    series, *, batches: int = BATCHES, level: float = TEST_LEVEL, warn: bool = True
) -> PairError:
    """The MCSE of ``series.mean(axis=(0, 1))`` for a series ``(pairs, draws, ...)`` whose
    pairs are independent of each other (module docstring); a
    :class:`~hamiltonia.diagnostics.checks.SamplingWarning` for a single pair unless
    ``warn`` is false. Independent chains are pairs of one chain each."""
    from scipy import stats

    z = np.asarray(series, dtype=float)
    if z.ndim < 2 or z.shape[0] < 1 or z.shape[1] < 1:
        raise ValueError(f"series must have shape (pairs, draws, ...), got {z.shape}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    k, n = z.shape[:2]
    b = max(1, min(int(batches), n))
    y = _batch_means(z, b)
    m = y.mean(axis=1)
    ss_between = b * np.sum((m - m.mean(axis=0)) ** 2, axis=0)
    ss_within = np.sum((y - m[:, None]) ** 2, axis=(0, 1))
    shape = z.shape[2:]
    nan = np.full(shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = (ss_between + ss_within) / (k * b - 1) / (k * b) if k * b > 1 else nan
        spread = ss_between / (b * (k - 1)) / k if k > 1 else nan
        if k > 1 and b > 1:
            f = (ss_between / (k - 1)) / (ss_within / (k * (b - 1)))
            p = np.where(np.isnan(f), 1.0, stats.f.sf(f, k - 1, k * (b - 1)))
        else:
            p = nan
    between = (p < level) if k > 1 and b > 1 else np.full(shape, b == 1 and k > 1)
    variance = np.where(between, spread, pooled)
    dof = np.where(between, k - 1, k * b - 1).astype(float)
    if k == 1 and warn:
        warnings.warn(
            "one antithetic pair: its standard error comes from batches within the pair "
            "alone, which a slow start or a decoupling of the pair can make too small; run "
            "two pairs or more (4 chains) for an error bar checked against independent pairs",
            _sampling_warning(),
            stacklevel=2,
        )
    return PairError(
        mcse=np.sqrt(np.maximum(variance, 0.0)),
        dof=dof,
        between=np.asarray(between, dtype=bool),
        p_value=np.asarray(p, dtype=float),
    )


def _sampling_warning():
    from hamiltonia.diagnostics.checks import SamplingWarning

    return SamplingWarning


def paired_mcse(values, log_weights=None, **options) -> np.ndarray:
    """The MCSE of the (self-normalised) mean of ``values`` ``(chains, draws, ...)`` over all
    draws of a run whose chains ``2k`` and ``2k + 1`` are antithetic pairs: the mean of all
    draws is that of the pair series :math:`\\tfrac12(\\psi_{2k} + \\psi_{2k+1})`, with
    :math:`\\psi` the draws, or their linearisation about the weighted mean
    (:func:`~hamiltonia.diagnostics.weights.linearised_values`); :func:`pair_mcse` of it.
    ``options`` go to :func:`pair_mcse`."""
    from hamiltonia.diagnostics.pairs import pairs_of
    from hamiltonia.diagnostics.weights import linearised_values

    psi = linearised_values(np.asarray(values, dtype=float), log_weights)
    pairs = pairs_of(psi.shape[0])
    return pair_mcse(0.5 * (psi[pairs[:, 0]] + psi[pairs[:, 1]]), **options).mcse
