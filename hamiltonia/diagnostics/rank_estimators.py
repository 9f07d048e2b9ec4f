"""ArviZ's rank diagnostics of one quantity, by a faster road: the normal scores of the
ranks of the split draws, the autocovariances and Geyer's initial sequences, the tail ESS,
and :class:`_Quantity`, which computes the :math:`\\hat R`, bulk and tail ESS and MCSE of
the mean of one quantity's draws, each once.

The numbers are those of :mod:`arviz_stats` (Vehtari et al. 2021, *Rank-normalization,
folding, and localization: an improved R-hat*). :mod:`hamiltonia.diagnostics.univariate`
computes them per parameter, :mod:`hamiltonia.diagnostics.screening` bounds them, and
:mod:`hamiltonia.diagnostics.estimator_kernels` holds the kernels they run on.

How the rank diagnostics are computed
-------------------------------------
:func:`~hamiltonia.diagnostics.univariate.rhat`,
:func:`~hamiltonia.diagnostics.univariate.ess` (``"bulk"``, ``"tail"``, ``"mean"``),
:func:`~hamiltonia.diagnostics.univariate.mcse` (``"mean"``) and
:func:`~hamiltonia.diagnostics.univariate.convergence` give ArviZ's numbers (the tests hold
them to ``arviz_stats`` at a relative ``1e-10``; the ranks, normal scores and
:math:`\\hat R` are the same to the bit) by a faster road, which matters for long runs (4
chains of 300,000 draws took ArviZ 27 s after 2 s of sampling). For each quantity, with the
:math:`m` chains split in halves into :math:`2m` sequences of
:math:`h = \\lfloor n/2 \\rfloor` draws and :math:`N = 2mh`:

* the :math:`N` split draws are sorted once (a bucket sort compiled by numba, buckets over
  the sample's 0.1 % to 99.9 % range, each sorted in place), which gives the ranks
  :math:`r` (ties averaged, as ``scipy.stats.rankdata``) and the normal scores

  .. math::

      z = \\Phi^{-1}\\left(\\frac{r - 3/8}{N - 2\\cdot 3/8 + 1}\\right)

  from one table of :math:`\\Phi^{-1}` per :math:`N` (a tie of an even count, whose rank
  ends in a half, is scored on its own);
* the folded draws :math:`|\\theta - \\operatorname{median}|` are ranked by merging the
  sorted draws outwards from the median (two sorted runs), not by a second sort; the
  median and the tail quantiles are read from the sorted draws;
* the bulk :math:`\\hat R` and ESS share the scores, the tail ESS the sorted draws;
* the autocovariances of Geyer's initial positive sequence

  .. math::

      \\hat\\gamma_t = \\frac{1}{h} \\sum_{s=1}^{h-t} (x_s - \\bar x)(x_{s+t} - \\bar x)

  are summed directly for the first :data:`DIRECT_LAGS` lags of a long sequence (the
  sequence of a well-mixing chain ends after a few), by FFT as ArviZ does when it goes on
  longer or the sequence is short (the tail ESS's indicators by counting pairs of ones in
  words of 64 bits). The direct sums differ from the FFT's in the last bits, which moves an
  ESS by about :math:`10^{-13}` of itself.

This is the road of one quantity at a time. On the compiled road,
:mod:`hamiltonia.diagnostics.batched` computes the same numbers by blocks of quantities
(every run up to :data:`~hamiltonia.diagnostics.batched.BATCH_MAX_SIZE` split draws a
quantity); a longer run, and the checks' screen and runaway check, use the kernels here.

Below :data:`~hamiltonia.diagnostics.estimator_kernels.COMPILED_MIN_SIZE` numbers the same
estimators run in NumPy (ranks by ``argsort``, the autocovariances by FFT), without
compiling the kernels and without importing ``arviz_stats`` (a second, with xarray and
pandas: a small run's end-of-run checks, whose computation takes milliseconds, took 1.1 s
of a first run in a process). Quantities with an infinite value, and the other methods, are
ArviZ's own computation.
"""

from __future__ import annotations

import math
import threading
from functools import cached_property

import numpy as np

from hamiltonia.diagnostics.estimator_kernels import _kernels

__all__ = ["DIRECT_LAGS"]


#: Lags of the autocovariance summed directly (without FFT) in a long sequence; a sequence
#: whose Geyer sum goes on beyond them is computed again by FFT.
DIRECT_LAGS = 64
#: The lags summed directly, growing at each try until the sequence ends within them (most
#: sequences of a mixing chain end within the first); a try sums only its new lags.
_LAG_STEPS = (8, 16, 32, DIRECT_LAGS)
#: Numbers in the split array from which the autocovariance lags are summed directly: below
#: it the FFT is as cheap, and exactly ArviZ's.
_DIRECT_MIN = 65_536
#: Blom's offset of the normal scores of ranks.
_BLOM = 3 / 8
_RESOLUTION = np.finfo(float).resolution

#: The empty table of :func:`_lags_kernel` for sequences of values, not of bucket keys.
_NO_TABLE = np.empty(0)

_TABLES: dict[int, np.ndarray] = {}
_TABLES_LOCK = threading.Lock()


def _blom_scores(ranks: np.ndarray, size: int) -> np.ndarray:
    """The normal scores :math:`\\Phi^{-1}((r - 3/8) / (N - 3/4 + 1))` of the ranks ``ranks``
    (from 1, ties averaged) among ``size`` numbers, as ArviZ computes them from
    ``scipy.stats.rankdata``'s ranks (``norm.ppf`` is ``ndtri``)."""
    from scipy.special import ndtri

    return ndtri((ranks - _BLOM) / (size - 2 * _BLOM + 1))


def _score_table(size: int) -> np.ndarray:
    """:func:`_blom_scores` of the ranks :math:`r = 1 .. N` (``size``); the last two sizes
    are kept."""
    with _TABLES_LOCK:
        table = _TABLES.get(size)
        if table is None:
            table = _blom_scores(np.arange(1, size + 1, dtype=float), size)
            if len(_TABLES) >= 2:
                _TABLES.pop(next(iter(_TABLES)))
            _TABLES[size] = table
        return table


def _scores_at(positions: np.ndarray, size: int) -> np.ndarray:
    """``_score_table(size)[positions]``: read from the kept table where there is one, else
    computed at these positions alone, by the same arithmetic (the same numbers to the
    bit). The screen needs the scores at its buckets' edges only: a few tens of thousands
    where the table of a long run holds millions (50 ms at 1.2 million, measured)."""
    table = _TABLES.get(size)
    if table is not None:
        return table[positions]
    return _blom_scores(positions + 1.0, size)


def _scores(values: np.ndarray, order: np.ndarray, shape: tuple, median=np.nan) -> np.ndarray:
    """The normal scores (Blom) of the ranks of the draws whose sorted ``values`` sit at
    ``order`` of an array of ``shape``, or of their distances to ``median`` where given."""
    size = values.size
    out = np.empty(size)
    places, ranks = _kernels().scores(values, order, float(median), _score_table(size), out)
    if places.size:
        out[places] = _blom_scores(ranks, size)
    return out.reshape(shape)


def _split(x: np.ndarray) -> np.ndarray:
    """The chains ``(m, n)`` cut in halves, ``(2m, n // 2)`` (the middle draw of an odd
    count left out), as ArviZ splits them."""
    half = x.shape[1] // 2
    return np.vstack((x[:, :half], x[:, -half:]))


def _rhat_of(z: np.ndarray) -> float:
    """:math:`\\hat R = \\sqrt{(B/W + h - 1)/h}` of the sequences ``z`` ``(2m, h)``, with
    :math:`B = h \\operatorname{var}(\\bar z_j)` and :math:`W` the mean of their variances;
    nan where every sequence is constant (:math:`W = 0`: every draw tied), as ArviZ's and the
    compiled kernel's :math:`0/0`, without NumPy's warning."""
    _, n = z.shape
    between = n * np.var(np.mean(z, axis=1), ddof=1)
    within = np.mean(np.var(z, axis=1, ddof=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _autocov_fft(centred: np.ndarray) -> np.ndarray:
    """ArviZ's autocovariance of each row at every lag, by FFT of twice the length."""
    from scipy.fftpack import next_fast_len  # ArviZ's: 5-smooth lengths

    n = centred.shape[1]
    m = next_fast_len(2 * n)
    spectrum = np.fft.rfft(centred, n=m, axis=1)
    spectrum *= np.conjugate(spectrum)
    cov = np.fft.irfft(spectrum, n=m, axis=1)[:, :n]
    cov /= n
    return cov


def _geyer(acov: np.ndarray, chain_mean: np.ndarray, n_draw: int) -> float | None:
    """The ESS from the autocovariances ``acov`` ``(sequences, lags)`` by Geyer's initial
    positive and monotone sequences, step for step as ArviZ; ``None`` when the positive
    sequence needs more lags than ``acov`` holds.

    .. math::

        \\hat\\rho_t = 1 - \\frac{W - \\overline{\\hat\\gamma_t}}{\\widehat{\\text{var}}^+},
        \\qquad \\hat\\tau = -1 + 2\\sum_{t=0}^{2k+1} \\hat\\rho_t, \\qquad
        \\text{ESS} = \\frac{N}{\\max(\\hat\\tau, 1/\\log_{10} N)}.
    """
    n_chain, lags = acov.shape[0], acov.shape[1]
    mean_var = np.mean(acov[:, 0]) * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += np.var(chain_mean, axis=None, ddof=1)
    rho_hat_t = np.zeros(n_draw)
    rho_hat_even = 1.0
    rho_hat_t[0] = rho_hat_even
    rho_hat_odd = 1.0 - (mean_var - np.mean(acov[:, 1])) / var_plus
    rho_hat_t[1] = rho_hat_odd
    # Geyer's initial positive sequence
    t = 1
    while t < (n_draw - 3) and (rho_hat_even + rho_hat_odd) > 0.0:
        if t + 2 >= lags:
            return None
        rho_hat_even = 1.0 - (mean_var - np.mean(acov[:, t + 1])) / var_plus
        rho_hat_odd = 1.0 - (mean_var - np.mean(acov[:, t + 2])) / var_plus
        if (rho_hat_even + rho_hat_odd) >= 0:
            rho_hat_t[t + 1] = rho_hat_even
            rho_hat_t[t + 2] = rho_hat_odd
        t += 2
    max_t = t - 2
    if rho_hat_even > 0:
        rho_hat_t[max_t + 1] = rho_hat_even
    # Geyer's initial monotone sequence
    t = 1
    while t <= max_t - 2:
        if (rho_hat_t[t + 1] + rho_hat_t[t + 2]) > (rho_hat_t[t - 1] + rho_hat_t[t]):
            rho_hat_t[t + 1] = (rho_hat_t[t - 1] + rho_hat_t[t]) / 2.0
            rho_hat_t[t + 2] = rho_hat_t[t + 1]
        t += 2
    ess = n_chain * n_draw
    tau_hat = -1.0 + 2.0 * np.sum(rho_hat_t[: max_t + 1]) + np.sum(rho_hat_t[max_t + 1 : max_t + 2])
    tau_hat = max(tau_hat, 1 / np.log10(ess))
    if np.isnan(rho_hat_t).any():
        return np.nan
    return ess / tau_hat


def _ess_of(y: np.ndarray, direct: bool = True) -> float:
    """ArviZ's ESS of the sequences ``y`` ``(sequences, draws)`` (already split); the
    autocovariances by FFT unless ``direct`` and the sequences are long."""
    y = np.asarray(y, dtype=float)
    if np.max(y) - np.min(y) < _RESOLUTION:
        return float(y.size)
    n_draw = y.shape[1]
    chain_mean = y.mean(axis=1)
    if direct and y.size >= _DIRECT_MIN:
        for acov in _growing_lags(y, _NO_TABLE, chain_mean):
            ess = _geyer(acov, chain_mean, n_draw)
            if ess is not None:
                return float(ess)
    return float(_geyer(_autocov_fft(y - chain_mean[:, None]), chain_mean, n_draw))


def _growing_lags(x: np.ndarray, table: np.ndarray, means: np.ndarray):
    """The autocovariances of :func:`_lags_kernel` for each number of lags of
    :data:`_LAG_STEPS` in turn, each step summing only the lags it adds."""
    acov = np.empty((x.shape[0], 0))
    for lags in _LAG_STEPS:
        acov = np.hstack((acov, _kernels().lags(x, table, means, acov.shape[1], lags)))
        yield acov


def _ess_tails(split: np.ndarray, q_low: float, q_high: float, direct: bool = True) -> float:
    """ArviZ's tail ESS: the smaller ESS of the indicators ``split <= q`` of the split draws
    at the two quantiles, from counts and lag sums of the indicators packed in bits (unless
    not ``direct``, or the draws are few: then by FFT of the indicators)."""
    n = split.shape[1]
    if not direct or split.size < _DIRECT_MIN:
        return min(_ess_of(split <= q_low, direct), _ess_of(split <= q_high, direct))
    thresholds = np.array([q_low, q_high])
    found = [None, None]
    bits, counts = _kernels().pack(split, thresholds)
    # All the direct lags at once: packing the indicators costs more than the lags.
    acov = _kernels().bit_lags(bits, counts, n, DIRECT_LAGS)
    for j in range(2):
        if counts[j].min() == counts[j].max() and counts[j, 0] in (0, n):
            found[j] = float(split.size)  # all below, or none: a constant sequence
        else:
            # The mean of n zeros and ones is its count over n: NumPy's to the bit.
            found[j] = _geyer(acov[j], counts[j] / n, n)
    for j, q in enumerate(thresholds):
        if found[j] is None:
            y = (split <= q).astype(float)
            chain_mean = y.mean(axis=1)
            found[j] = _geyer(_autocov_fft(y - chain_mean[:, None]), chain_mean, n)
    return min(float(found[0]), float(found[1]))  # ArviZ's min, nan kept as it keeps it


def _quantile_of(order_statistic, count: int, prob: float) -> float:
    """``np.quantile(a, prob)`` (method ``"linear"``) of ``count`` numbers, from the order
    statistics that ``order_statistic(i)`` gives, with NumPy's own arithmetic."""
    virtual = (count - 1) * prob
    if virtual >= count - 1:
        return order_statistic(count - 1)
    previous = math.floor(virtual)
    gamma = virtual - previous
    a, b = order_statistic(previous), order_statistic(previous + 1)
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def _rank_scores(a: np.ndarray) -> np.ndarray:
    """The normal scores (Blom) of the ranks of all the numbers of ``a``, ties given their
    average rank (``scipy.stats.rankdata``), in the shape of ``a``: the road of NumPy, for
    draws too few for the compiled kernels (:data:`COMPILED_MIN_SIZE`). The compiled road
    (:func:`_sort_kernel`, :func:`_scores_kernel`) is the measured optimisation of the same
    numbers for long runs (module docs); the tests hold both to ArviZ's."""
    flat = a.ravel()
    size = flat.size
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    edges = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1], True])
    # A run of equal values at the places [s, e) of the order: rank (s + 1 + e) / 2.
    ranks = np.empty(size)
    ranks[order] = np.repeat((edges[:-1] + 1 + edges[1:]) / 2, np.diff(edges))
    return _blom_scores(ranks, size).reshape(a.shape)


class _Quantity:
    """The draws ``(chains, draws)`` of one quantity, finite and at least four per chain:
    its rank diagnostics, each computed once and sharing the sort of the split draws (by
    the compiled kernels, or by NumPy unless ``compiled``)."""

    def __init__(self, x: np.ndarray, split: np.ndarray | None = None, compiled: bool = True):
        self.x = x
        self.split = _split(x) if split is None else split
        self.compiled = compiled

    @cached_property
    def _sorted(self) -> tuple:
        return _kernels().sort(self.split.ravel())

    @cached_property
    def z_bulk(self) -> np.ndarray:
        if not self.compiled:
            return _rank_scores(self.split)
        order, values = self._sorted
        return _scores(values, order, self.split.shape)

    @cached_property
    def z_folded(self) -> np.ndarray:
        if not self.compiled:
            return _rank_scores(np.abs(self.split - np.median(self.split)))
        order, values = self._sorted
        h = values.size // 2  # the split draws are always an even number
        median = (values[h - 1] + values[h]) / 2  # np.median's, of an even count
        return _scores(values, order, self.split.shape, median)

    def rhat(self) -> float:
        return max(_rhat_of(self.z_bulk), _rhat_of(self.z_folded))

    def ess_bulk(self) -> float:
        return _ess_of(self.z_bulk, self.compiled)

    def ess_tail(self, prob: float) -> float:
        low, high = sorted((prob, 1 - prob))
        if "_sorted" in self.__dict__ and self.x.shape[1] % 2 == 0:
            # The split draws are all the draws: their sorted copy makes the selection free
            # (a quantile depends on the order statistics only).
            q_low, q_high = (np.quantile(self._sorted[1], p) for p in (low, high))
        else:
            q_low, q_high = (np.quantile(self.x, p) for p in (low, high))
        return _ess_tails(self.split, q_low, q_high, self.compiled)

    def ess_mean(self) -> float:
        return _ess_of(self.split, self.compiled)

    def mcse_mean(self) -> float:
        return np.std(self.x, ddof=1) / np.sqrt(self.ess_mean())
