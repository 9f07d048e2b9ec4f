"""Convergence and efficiency diagnostics.

Univariate diagnostics follow ArviZ (:mod:`arviz_stats`): rank-normalised split
:math:`\\hat R`, bulk and tail effective sample sizes, and Monte Carlo standard errors
(Vehtari et al. 2021, *Rank-normalization, folding, and localization: an improved R-hat*).
The research's own metrics are added: the multivariate ESS of Vats, Flegal and Jones (2019)
by batch means, the Kish effective sample size of importance weights, their product for
weighted draws (Mongwe 2022, thesis, §3.4.1, eq. 3.12), and ESS per second and per gradient.

Arrays of draws have shape ``(chains, draws, dim)`` (or ``(chains, draws)`` for one
quantity).

How the rank diagnostics are computed
-------------------------------------
:func:`rhat`, :func:`ess` (``"bulk"``, ``"tail"``, ``"mean"``), :func:`mcse` (``"mean"``)
and :func:`convergence` give ArviZ's numbers (the tests hold them to ``arviz_stats`` at a
relative ``1e-10``; the ranks, normal scores and :math:`\\hat R` are the same to the bit)
by a faster road, which matters for long runs (4 chains of 300,000 draws took ArviZ 27 s
after 2 s of sampling). For each quantity, with the :math:`m` chains split in halves into
:math:`2m` sequences of :math:`h = \\lfloor n/2 \\rfloor` draws and :math:`N = 2mh`:

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

Below :data:`COMPILED_MIN_SIZE` numbers the same estimators run in NumPy (ranks by
``argsort``, the autocovariances by FFT), without compiling the kernels and without
importing ``arviz_stats`` (a second, with xarray and pandas: a small run's end-of-run
checks, whose computation takes milliseconds, took 1.1 s of a first run in a process).
Quantities with an infinite value, and the other methods, are ArviZ's own computation.

The checks of a finished run
----------------------------
The warnings at the end of :func:`hamiltonia.sample` need to know only whether
:math:`\\hat R \\le 1.01` and the bulk and tail ESS reach 100 per chain, and the values of
the parameters that fail. :func:`screened_convergence` decides that without sorting: the
split draws are counted into :data:`_SCREEN_BUCKETS` buckets over their range, which fixes
every rank to within its bucket's count and every normal score :math:`z_i` to within a half
width :math:`w_i` of its bucket's middle. With :math:`a_j = \\frac1h\\sum_{i \\in j} w_i` and
:math:`U_j = \\sum_{i\\in j}(w_i + a_j)^2` per sequence :math:`j`,

.. math::

    \\operatorname{var}(\\bar z) \\le \\Bigl(\\sqrt{\\operatorname{var}(\\bar z^{\\text{mid}})}
    + \\sqrt{\\textstyle\\sum_j a_j^2/(J-1)}\\Bigr)^2, \\qquad
    s_j^2 \\ge \\frac{(\\sqrt{C_j} - \\sqrt{U_j})_+^2}{h-1}, \\qquad
    |\\hat\\gamma_{j,t} - \\hat\\gamma^{\\text{mid}}_{j,t}| \\le
    \\frac{2\\sqrt{C_j U_j} + U_j}{h},

(:math:`C_j` the sum of squares of the middles about their mean), which bound
:math:`\\hat R` above and the bulk ESS below (Geyer's sequence stops no later than where the
upper bounds of its pair sums stop being positive). The median and the tail quantiles are
exact, read from the few draws of their buckets, and so is the tail ESS. A bound on the
right side of its threshold decides the check as the exact value would; one that does not
is replaced by the exact value, which is also what a warning reports. The sums over a
sequence's middles and half widths are sums over its count of draws in each bucket, so one
pass counts the draws of each sequence into buckets (and keeps each draw's bucket, for the
autocovariances of the middles); the same counts bound the ranks of the folded draws
(:func:`_folded_bucket_scores`), and the normal scores are computed at the buckets' edges
only. A quantity's split draws are copied by one pass that also finds their range and
whether all are finite. A healthy long run costs a few passes over its draws instead of a
sort of each parameter: for 4 chains of 300,000 draws of 10 parameters, on 2 idle cores,
the first call after sampling took 0.11 to 0.16 s when the folded draws had a pass of
their own and the split, its range and its check of finite values took four, and 0.09 to
0.11 s since (side by side, fresh processes).
"""

from __future__ import annotations

import math
import os
import sys
import threading
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace

import numpy as np

__all__ = [
    "DIRECT_LAGS",
    "combined_ess",
    "convergence",
    "ess",
    "ess_per_gradient",
    "ess_per_second",
    "extremes",
    "kish_ess",
    "kish_factor",
    "linearised_values",
    "mcse",
    "multivariate_ess",
    "pair_correlation",
    "pairs_of",
    "rhat",
    "screened_convergence",
    "weighted_mean",
]


def _array_stats():
    # Imported on first use: arviz_stats with xarray-einstats (which LOO needs) takes over a
    # second to import, and every process that imports hamiltonia, a CLI call or a worker,
    # would pay it whether or not it computes a diagnostic.
    from arviz_stats.base import array_stats

    return array_stats


def _chain_draw_last(draws: np.ndarray) -> np.ndarray:
    x = np.asarray(draws, dtype=float)
    if x.ndim == 2:
        return x
    if x.ndim != 3:
        raise ValueError(f"draws must have shape (chains, draws[, dim]), got {x.shape}")
    return np.moveaxis(x, (0, 1), (-2, -1))


# Above this many numbers the parameters are split over threads: the compiled sorts and sums
# release the GIL, and so do most of NumPy's.
_THREADED_SIZE = 1_000_000


def _workers(count: int) -> int:
    """Threads for ``count`` quantities: one a core, at most one a quantity."""
    return max(min(os.cpu_count() or 1, count), 1)


def _over_threads(function, count: int) -> list:
    """``[function(i) for i in range(count)]``, over :func:`_workers` threads."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(_workers(count)) as pool:
        return list(pool.map(function, range(count)))


def _per_parameter(function, draws: np.ndarray) -> np.ndarray:
    """``function`` of the ``(..., chains, draws)`` array, per parameter, threaded by blocks
    of parameters when the draws are many."""
    x = _chain_draw_last(draws)
    if x.size < _THREADED_SIZE or x.ndim < 3 or x.shape[0] < 2:
        return np.asarray(function(x))
    blocks = np.array_split(np.arange(x.shape[0]), _workers(x.shape[0]))
    parts = _over_threads(lambda i: np.asarray(function(x[blocks[i]])), len(blocks))
    return np.concatenate(parts)


# ------------------------------------------------------------------ the compiled kernels
# Plain functions in the subset of Python numba compiles, compiled on first use
# (:func:`_kernels`): importing numba costs a CLI call or a worker that never computes a
# diagnostic 0.1 s.


def _sort_kernel(values):
    """``(order, sorted values)`` of a flat array of finite numbers.

    A bucket sort: the bucket of :math:`x` is :math:`\\lfloor (x - a) B / (b - a) \\rfloor`,
    clipped to ``[0, B - 1]``, with :math:`B = N/4` and :math:`[a, b]` the 0.1 % and 99.9 %
    quantiles of a strided sample (so that heavy tails land in the end buckets instead of
    emptying the middle ones). The map is non-decreasing in :math:`x` (rounding preserves
    order), so sorting each bucket sorts the whole; a bucket holds a few draws of a smooth
    density (insertion sort) and the end buckets or a spike of one value more (quicksort).
    """
    n = values.size
    order = np.empty(n, np.int64)
    out = np.empty(n)
    if n == 0:
        return order, out
    sample = np.sort(values[:: max(n // 4096, 1)])
    cut = sample.size // 1000
    lo, hi = sample[cut], sample[sample.size - 1 - cut]
    if not hi > lo:
        lo, hi = values.min(), values.max()
    n_buckets = max(n // 4, 1)
    scale = n_buckets / (hi - lo) if hi > lo else 0.0
    if not (0.0 < scale < np.inf):  # one value, or a range too narrow to divide by
        scale, n_buckets = 0.0, 1
    starts = np.zeros(n_buckets + 1, np.int64)
    bucket = np.empty(n, np.int32)
    for i in range(n):
        k = 0
        if scale > 0.0:
            v = (values[i] - lo) * scale
            if v >= n_buckets - 1:
                k = n_buckets - 1
            elif v > 0.0:
                k = int(v)
        bucket[i] = k
        starts[k + 1] += 1
    for k in range(n_buckets):
        starts[k + 1] += starts[k]
    fill = starts[:-1].copy()
    for i in range(n):
        k = bucket[i]
        p = fill[k]
        fill[k] = p + 1
        order[p] = i
        out[p] = values[i]
    for k in range(n_buckets):
        a, b = starts[k], starts[k + 1]
        if b - a < 2:
            continue
        if b - a <= 32:
            for i in range(a + 1, b):
                v, j, q = out[i], order[i], i - 1
                while q >= a and out[q] > v:
                    out[q + 1] = out[q]
                    order[q + 1] = order[q]
                    q -= 1
                out[q + 1] = v
                order[q + 1] = j
        else:
            inner = np.argsort(out[a:b])
            seg_values, seg_order = out[a:b][inner], order[a:b][inner]
            out[a:b] = seg_values
            order[a:b] = seg_order
    return order, out


def _scores_kernel(values, order, median, table, out):
    """Write the normal score of each draw at its place in ``out``: of the ranks of the
    sorted ``values`` (at ``order``) themselves, or with ``median`` not NaN of their
    distances :math:`|x - \\text{median}|` to it.

    The distances are ranked without sorting them again: below the median they grow
    leftwards, above it rightwards (rounding keeps both monotone), so merging the two runs
    from the median out visits them in order. A run of equal values gets its average rank
    :math:`r` (``scipy.stats.rankdata``), whole for a run of odd length, scored by
    ``table[r - 1]``; one of even length has a rank ending in a half: its places and rank
    are returned, ``(places, ranks)``, for the caller to score.
    """
    n = values.size
    places = np.empty(n, np.int64)
    ranks = np.empty(n)
    group = np.empty(n, np.int64)  # the places of the current run of equal values
    folded = not np.isnan(median)
    left, right = -1, 0
    if folded:
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) // 2
            if values[mid] < median:
                lo = mid + 1
            else:
                hi = mid
        left, right = lo - 1, lo
    h = 0
    i = 0
    while i < n:
        count = 0
        current = 0.0
        while i + count < n:
            # The next value in order, and where its draw sits.
            if not folded:
                v = values[i + count]
                place = order[i + count]
                if count > 0 and v != current:
                    break
                current = v
            else:
                take_left = right >= n or (
                    left >= 0 and abs(values[left] - median) <= abs(values[right] - median)
                )
                v = abs(values[left] - median) if take_left else abs(values[right] - median)
                if count > 0 and v != current:
                    break
                current = v
                if take_left:
                    place = order[left]
                    left -= 1
                else:
                    place = order[right]
                    right += 1
            group[count] = place
            count += 1
        if count % 2 == 1:
            z = table[i + count // 2]
            for k in range(count):
                out[group[k]] = z
        else:
            # scipy.stats.rankdata's average rank: the first ordinal plus (count - 1) / 2.
            rank = (i + 1) + (count - 1) / 2.0
            for k in range(count):
                places[h] = group[k]
                ranks[h] = rank
                h += 1
        i += count
    return places[:h], ranks[:h]


def _lags_kernel(x, table, means, first, n_lags):
    """The autocovariances :math:`\\frac1h\\sum_s (x_s - \\bar x)(x_{s+t} - \\bar x)` of
    each row of ``x`` ``(rows, h)`` about its mean ``means[row]``, for the lags
    :math:`\\text{first} \\le t < \\min(\\text{n\\_lags}, h)` (``(rows, lags)``); with a
    non-empty ``table``, of the rows of ``table[x]`` (``x`` then holds indices, as
    :func:`_bucket_kernel` writes them)."""
    rows, n = x.shape
    k_max = min(n_lags, n)
    out = np.zeros((rows, max(k_max - first, 0)))
    centred = np.empty(n)
    gather = table.size > 0
    for r in range(rows):
        m = means[r]
        for t in range(n):
            centred[t] = (table[int(x[r, t])] if gather else x[r, t]) - m
        for k in range(k_max - first):
            # Two views, not one array at two offsets: LLVM keeps the sum in vector lanes
            # only then (measured: three times slower otherwise).
            ahead, behind = centred[: n - first - k], centred[first + k :]
            s = 0.0
            for t in range(ahead.size):
                s += ahead[t] * behind[t]
            out[r, k] = s / n
    return out


def _bucket_kernel(split, lo, scale, n_buckets, keys):
    """The count of each row's draws of ``split`` ``(rows, h)`` in each of ``n_buckets``
    buckets from ``lo`` on, ``1 / scale`` wide (the first and last open-ended), ``(rows,
    n_buckets)``; each draw's bucket is written to ``keys``. The bucket is non-decreasing in
    the value, so a bucket's draws hold a known range of ranks."""
    rows, n = split.shape
    counts = np.zeros((rows, n_buckets), np.int64)
    top = n_buckets - 1
    for r in range(rows):
        # The keys first, then the counts: a loop without the store-to-load dependence of
        # a count runs in vector lanes.
        for t in range(n):
            v = (split[r, t] - lo) * scale
            keys[r, t] = top if v >= top else (int(v) if v > 0.0 else 0)
        row = counts[r]
        for t in range(n):
            row[keys[r, t]] += 1
    return counts


def _split_kernel(draws, j, out):
    """The chains of quantity ``j`` of ``draws`` ``(m, n, count)`` cut in halves as
    :func:`_split` cuts them, written to ``out`` ``(2m, n // 2)``, in one pass that also
    finds the least and greatest split draw and whether every draw is finite (NumPy's
    ``min``, ``max`` and ``isfinite`` would take three more). The whole array and an index,
    not a strided view of one quantity: one layout whatever the count, so one compiled
    form serves every run."""
    chains, n, _ = draws.shape
    h = n // 2
    low, high = np.inf, -np.inf
    finite = True
    for c in range(chains):
        for t in range(n):
            v = draws[c, t, j]
            if not np.isfinite(v):
                finite = False
            if t < h:
                out[c, t] = v
            elif t >= n - h:
                out[chains + c, t - (n - h)] = v
            else:
                continue  # the middle draw of an odd count
            low = min(low, v)
            high = max(high, v)
    return low, high, finite


def _pack_kernel(split, thresholds):
    """The indicators :math:`I_s = [x_s \\le q]` of each row of ``split`` ``(rows, h)``,
    for each of the ``thresholds``, packed in words of 64 bits ``(thresholds, rows, words +
    1)`` (a word of zeros after the last), and their counts ``(thresholds, rows)``."""
    rows, n = split.shape
    n_q = thresholds.size
    words = (n + 63) // 64
    bits = np.zeros((n_q, rows, words + 1), np.uint64)
    ones = np.zeros((n_q, rows), np.int64)
    for j in range(n_q):
        q = thresholds[j]
        for r in range(rows):
            c = 0
            for i in range(words):
                # A word at a time, in a register.
                w = np.uint64(0)
                for b in range(min(64, n - i * 64)):
                    below = split[r, i * 64 + b] <= q
                    w |= np.uint64(below) << np.uint64(b)
                    c += below
                bits[j, r, i] = w
            ones[j, r] = c
    return bits, ones


def _bit_lags_kernel(bits, ones, n, n_lags):
    """The autocovariances ``(thresholds, rows, lags)`` of the indicators that
    :func:`_pack_kernel` packed (``n`` a row), for the lags :math:`t < \\min(\\text{n\\_lags},
    n)`, with :math:`p = c / n` from the exact count :math:`c` of ones (NumPy's mean to
    the bit):

    .. math::

        \\frac1n \\sum_{s<n-t} (I_s - p)(I_{s+t} - p)
        = \\frac1n \\Bigl(P_t - p\\bigl(\\textstyle\\sum_{s<n-t} I_s
        + \\sum_{s \\ge t} I_s\\bigr) + (n - t) p^2\\Bigr),

    with the count :math:`P_t` of pairs both below counted 64 at a time (a lag costs a pass
    over :math:`n/64` words), and the two partial sums :math:`2c` less the ones among the
    first and among the last :math:`t`."""
    n_q, rows, width = bits.shape
    words = width - 1
    k_max = min(n_lags, n)
    out = np.zeros((n_q, rows, k_max))
    one = np.uint64(1)
    m1, m2 = np.uint64(0x5555555555555555), np.uint64(0x3333333333333333)
    m4, h01 = np.uint64(0x0F0F0F0F0F0F0F0F), np.uint64(0x0101010101010101)
    for j in range(n_q):
        for r in range(rows):
            row = bits[j, r]
            c = ones[j, r]
            p = c / n
            head = 0  # ones among the first k
            tail = 0  # ones among the last k
            for k in range(k_max):
                ws, bs = k >> 6, np.uint64(k & 63)
                pairs = 0
                for i in range(words - ws):
                    # The bits of s + k brought to the places of s.
                    shifted = row[i + ws] >> bs
                    if bs != 0:
                        shifted |= row[i + ws + 1] << (np.uint64(64) - bs)
                    v = row[i] & shifted
                    # Population count (the pattern LLVM turns into one instruction).
                    v = v - ((v >> one) & m1)
                    v = (v & m2) + ((v >> np.uint64(2)) & m2)
                    v = (v + (v >> np.uint64(4))) & m4
                    pairs += np.int64((v * h01) >> np.uint64(56))
                total = 2 * c - head - tail
                out[j, r, k] = (pairs - p * total + (n - k) * p * p) / n
                head += np.int64((row[k >> 6] >> np.uint64(k & 63)) & one)
                s = n - 1 - k
                tail += np.int64((row[s >> 6] >> np.uint64(s & 63)) & one)
    return out


def _members_kernel(values, buckets, wanted, size):
    """The ``values`` whose ``buckets`` (as :func:`_bucket_kernel` writes them, of the same
    shape) are ``wanted`` (``size`` of them)."""
    out = np.empty(size)
    flat_values, flat_buckets = values.ravel(), buckets.ravel()
    j = 0
    for i in range(flat_values.size):
        if wanted[flat_buckets[i]]:
            out[j] = flat_values[i]
            j += 1
    return out


def _nearer_kernel(v, q, cumulative, strict):
    """For each ``q[i]``, the count of draws in the buckets :math:`j` with ``v[j] < q[i]``
    (``strict``) or ``v[j] <= q[i]``, from the ``cumulative`` counts (``cumulative[j]``
    the draws of the buckets before :math:`j`); ``v`` and ``q`` each fall, then rise.

    The buckets found form an interval about ``v``'s least value, which grows with the
    query: taken in increasing order (a merge of ``q``'s two runs), the queries widen it
    step by step, each bucket passed once."""
    b, n_q = v.size, q.size
    out = np.zeros(n_q, np.int64)
    pv, pq = np.argmin(v), np.argmin(q)
    lo, hi = pv + 1, pv  # the interval [lo, hi] found so far: empty
    down, up = pq, pq + 1  # the next query of the falling run, of the rising one
    while down >= 0 or up < n_q:
        if down >= 0 and (up >= n_q or q[down] <= q[up]):
            i = down
            down -= 1
        else:
            i = up
            up += 1
        t = q[i]
        while lo > 0 and (v[lo - 1] < t if strict else v[lo - 1] <= t):
            lo -= 1
        while hi + 1 < b and (v[hi + 1] < t if strict else v[hi + 1] <= t):
            hi += 1
        if hi >= lo:
            out[i] = cumulative[hi + 1] - cumulative[lo]
    return out


def _bfmi_kernel(energy):
    """E-BFMI of each chain of ``energy`` ``(chains, n)``, ``n >= 2``, as
    :func:`hamiltonia.diagnostics.checks.e_bfmi` computes it in NumPy (the energies centred
    and scaled by their largest distance from the mean, the mean squared step over the
    variance), in three passes over a chain and no array made: NumPy's form takes about
    ten passes and three arrays of the energies' size, 30 to 50 ms at 4 chains of 300,000
    draws (measured), most of a long run's checks besides the rank diagnostics."""
    chains, n = energy.shape
    out = np.full(chains, np.nan)
    for c in range(chains):
        e = energy[c]
        total, lo, hi = 0.0, np.inf, -np.inf
        for t in range(n):
            total += e[t]
            lo = min(lo, e[t])
            hi = max(hi, e[t])
        mean = total / n
        scale = max(hi - mean, mean - lo)
        if not (np.isfinite(mean) and scale > 0):
            continue
        centred_sum, steps = 0.0, 0.0
        previous = (e[0] - mean) / scale
        for t in range(n):
            z = (e[t] - mean) / scale
            centred_sum += z
            steps += (z - previous) * (z - previous)
            previous = z
        centred_mean = centred_sum / n
        squares = 0.0
        for t in range(n):
            d = (e[t] - mean) / scale - centred_mean
            squares += d * d
        out[c] = (steps / (n - 1)) / (squares / (n - 1))
    return out


def _extremes_kernel(draws):
    """The least and greatest value of each chain and parameter of ``draws``
    ``(chains, draws, dim)``, NaN left out, and whether there was a NaN."""
    chains, n, dim = draws.shape
    low = np.full((chains, dim), np.inf)
    high = np.full((chains, dim), -np.inf)
    nan = np.zeros((chains, dim), np.bool_)
    for c in range(chains):
        for t in range(n):
            for d in range(dim):
                v = draws[c, t, d]
                if v < low[c, d]:
                    low[c, d] = v
                if v > high[c, d]:
                    high[c, d] = v
                if v != v:
                    nan[c, d] = True
    return low, high, nan


_KERNELS: SimpleNamespace | None = None
_KERNELS_LOCK = threading.Lock()

#: Fewest numbers (chains x draws x parameters) for which the compiled road below is taken.
#: Below it, the same estimators by NumPy (argsort ranks, FFT autocovariances) take less
#: than numba's first compilation of these kernels (about 7 s, once per install; measured),
#: so a small run, and a user's first, never waits for it: 4 million numbers take ArviZ
#: about 4 s.
COMPILED_MIN_SIZE = 4_000_000


def _compiled_road(x: np.ndarray) -> bool:
    """Whether the diagnostics of ``x`` (all the parameters together) take the compiled
    road (:data:`COMPILED_MIN_SIZE`); read at each call, so tests can force either road."""
    return np.size(x) >= COMPILED_MIN_SIZE


def _kernels() -> SimpleNamespace:
    """The kernels above, compiled once per process (numba's on-disk cache makes that a
    load after the first run of an install)."""
    global _KERNELS
    with _KERNELS_LOCK:
        if _KERNELS is None:
            from hamiltonia import _numba_cache

            _numba_cache.install()
            from numba import njit

            plain = njit(cache=True, nogil=True, error_model="numpy")
            # Reassociation lets the sums of products run in vector lanes (more accurate,
            # not less: the lanes are partial sums); nothing else may be reordered.
            summing = njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
            _KERNELS = SimpleNamespace(
                sort=plain(_sort_kernel),
                scores=plain(_scores_kernel),
                lags=summing(_lags_kernel),
                buckets=plain(_bucket_kernel),
                split=plain(_split_kernel),
                nearer=plain(_nearer_kernel),
                pack=plain(_pack_kernel),
                bit_lags=plain(_bit_lags_kernel),
                members=plain(_members_kernel),
                extremes=plain(_extremes_kernel),
                bfmi=summing(_bfmi_kernel),
            )
        return _KERNELS


def extremes(draws: np.ndarray) -> tuple:
    """``(low, high, nan)`` of ``draws`` ``(chains, draws, dim)``, each ``(chains, dim)``:
    the least and greatest value of each chain and parameter (NaN left out) and whether it
    holds a NaN, in one pass over the draws (what the checks of a finished run read:
    frozen chains, fixed values, runaways)."""
    x = np.asarray(draws, dtype=float)
    if x.ndim != 3:
        raise ValueError(f"draws must have shape (chains, draws, dim), got {x.shape}")
    if _compiled_road(x):
        return _kernels().extremes(x)
    # fmin/fmax skip NaN as the kernel's comparisons do; an all-NaN slice gives +-inf.
    low = np.fmin.reduce(x, axis=1, initial=np.inf)
    high = np.fmax.reduce(x, axis=1, initial=-np.inf)
    return low, high, np.isnan(x).any(axis=1)


# ------------------------------------------------------------------ ArviZ's estimators
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
    :math:`B = h \\operatorname{var}(\\bar z_j)` and :math:`W` the mean of their variances."""
    _, n = z.shape
    between = n * np.var(np.mean(z, axis=1), ddof=1)
    within = np.mean(np.var(z, axis=1, ddof=1))
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


# ------------------------------------------------------------------ the checks' screen
#: Buckets of the screen (:func:`_screened`): the ranks in one are known to within its
#: count, about 40 draws of 1.2 million, so that the bounds decide a healthy run.
_SCREEN_BUCKETS = 32_768
#: Split draws from which the screen is used; below, the exact road is as cheap.
_SCREEN_MIN = 65_536
#: Relative slack for the rounding of the bounds' own sums.
_SLACK = 1e-9


def _bucket_scores(counts: np.ndarray, size: int) -> tuple:
    """The middle and half width of the normal scores of the ranks each bucket holds
    (bucket :math:`k` holds the ranks after those of the buckets before it, ties
    included: an average rank lies in the same range), and the buckets' first and last
    rank positions."""
    ends = np.cumsum(counts)
    starts = ends - counts
    middle, half = _scores_between(counts, starts, ends - 1, size)
    return middle, half, starts, ends


def _scores_between(counts: np.ndarray, first: np.ndarray, last: np.ndarray,
                    size: int) -> tuple:  # fmt: skip
    """The middle and half width of the normal scores (of ``size`` ranks) at the rank
    positions ``first`` to ``last`` of each bucket's draws (ties averaged: an average rank
    lies between the same positions); zeros for an empty bucket."""
    full = counts > 0
    low = _scores_at(np.where(full, first, 0), size)
    high = _scores_at(np.where(full, last, 0), size)
    middle = np.where(full, (low + high) / 2, 0.0)
    # One rounding of the middle: the score stays within the half width.
    half = np.where(full, (high - low) / 2, 0.0) + 4 * np.finfo(float).eps * np.maximum(
        np.abs(low), np.abs(high)
    )
    return middle, half


def _folded_bucket_scores(counts: np.ndarray, lo: float, scale: float, high_value: float,
                          median: float, size: int) -> tuple:  # fmt: skip
    """The middle and half width of the normal scores (of ``size`` ranks) of the folded draws
    :math:`|x - \\text{median}|` in each bucket of the draws (:func:`_bucket_kernel`),
    without counting the folded draws into buckets of their own.

    The draws of bucket :math:`k`, :math:`[e_k, e_{k+1}]`, lie at distances
    :math:`[d^-_k, d^+_k]` from the median, with :math:`d^-_k = \\max(e_k - m, m - e_{k+1},
    0)` and :math:`d^+_k = \\max(m - e_k, e_{k+1} - m)`, each widened by a margin for the
    roundings of the buckets' edges and of the distances. A folded rank position of bucket
    :math:`k` is at least the count of draws in the buckets with :math:`d^+_j < d^-_k`
    (certainly nearer the median) and at most one less than the count in those with
    :math:`d^-_j \\le d^+_k` (possibly as near). Both sequences fall then rise over the
    buckets, so each count is of an interval of buckets about the sequence's least value,
    found for every bucket in one sweep (:func:`_nearer_kernel`), no sort. The ranges
    overlap: about three buckets' counts, where buckets of the distances themselves would
    hold one.
    """
    eps = np.finfo(float).eps
    b = counts.size
    edges = lo + np.arange(b + 1) / scale
    edges[-1] = max(edges[-1], high_value)
    margin = 1e-6 / scale + 16 * eps * max(abs(lo), abs(high_value), abs(median))
    below, above = median - edges[:-1], edges[1:] - median
    near = np.maximum(np.maximum(-below, -above), 0.0) - margin
    far = np.maximum(below, above) + margin
    cumulative = np.concatenate(([0], np.cumsum(counts)))
    nearer = _kernels().nearer
    first = nearer(far, near, cumulative, True)
    last = np.maximum(nearer(near, far, cumulative, False) - 1, first)
    return _scores_between(counts, first, last, size)


def _bucket_sums(row_counts: np.ndarray, *scores: tuple) -> np.ndarray:
    """Per row, with each draw's normal score taken as the ``middle`` of its bucket's
    scores (off by at most the bucket's ``half`` width), for each ``(middle, half)`` of
    ``scores``: the sums of the scores, of their squares, of the half widths and of their
    squares, ``(len(scores), rows, 4)``, from the rows' counts of draws per bucket ``(rows,
    buckets)``, by one product."""
    columns = [c for middle, half in scores for c in (middle, middle * middle, half, half * half)]
    sums = row_counts.astype(float) @ np.stack(columns, 1)
    return sums.reshape(sums.shape[0], len(scores), 4).transpose(1, 0, 2)


def _parts(sums: np.ndarray, h: int) -> tuple:
    """From the bucket sums ``(rows, 4)``: the rows' mean scores :math:`m_j`, the bounds
    on their sums of squares about them :math:`C_j` (low, high), the bound :math:`a_j` on
    how far a row's true mean is from :math:`m_j`, and :math:`U_j = \\sum_s (w_s + a_j)^2`,
    the squared length of the largest error of a row's centred scores."""
    s1, s2, sw, sww = sums.T
    m = s1 / h
    c = s2 - s1 * m
    slack = _SLACK * (s2 + 1.0)
    c_low, c_high = np.maximum(c - slack, 0.0), c + slack
    a = sw / h * (1 + _SLACK) + _SLACK
    u = (sww + 2 * a * sw + h * a * a) * (1 + _SLACK)
    return m, c_low, c_high, a, u


def _spread_of_means(m: np.ndarray, a: np.ndarray) -> tuple:
    """Bounds on the variance (ddof 1) of the rows' true means, each within :math:`a_j`
    of :math:`m_j`: :math:`(\\sqrt{v} \\mp \\lVert a\\rVert/\\sqrt{J-1})^2` (Minkowski)."""
    root = math.sqrt(np.var(m, ddof=1))
    shift = math.sqrt(np.sum(a * a) / (len(m) - 1))
    return max(root - shift, 0.0) ** 2, (root + shift) ** 2


def _rhat_upper(sums: np.ndarray, h: int) -> float:
    """An upper bound on :math:`\\hat R` of the rows' true scores, from their bucket
    sums: the between-chain variance at its most, the within-chain variances at their
    least, :math:`W \\ge \\operatorname{mean}_j (\\sqrt{C_j} - \\sqrt{U_j})_+^2/(h-1)`."""
    m, c_low, _, a, u = _parts(sums, h)
    _, var_high = _spread_of_means(m, a)
    within = np.mean(np.maximum(np.sqrt(c_low) - np.sqrt(u), 0.0) ** 2) / (h - 1)
    if not within > 0:
        return math.inf
    return math.sqrt((h * var_high / within + h - 1) / h) * (1 + _SLACK)


def _ess_lower(sums: np.ndarray, h: int, acov: np.ndarray) -> float:
    """A lower bound on ArviZ's ESS of the rows' true scores, from the autocovariances
    ``acov`` ``(rows, lags)`` of the bucket middles about their means.

    Each autocovariance of row :math:`j` is within
    :math:`\\epsilon_j = 2\\sqrt{C_j U_j}/h + U_j/h` of the middles' (Cauchy-Schwarz), at
    every lag; so each :math:`\\hat\\rho_t` lies in an interval, and so does each sum of a
    pair. Geyer's sequence stops at the first pair whose true sum is not positive, no later
    than the first whose upper bound is not, and its monotone sums are at most the running
    minimum of the upper bounds; the last even term it adds is at most 1. That bounds
    :math:`\\hat\\tau` above, and the ESS below; a sequence that has not ended within the lags
    is bounded by its last running minimum for every pair that could follow.
    """
    rows, lags = acov.shape
    m, _, c_high, a, u = _parts(sums, h)
    eps = (2 * np.sqrt(c_high * u) / h + u / h) * (1 + _SLACK) + _SLACK * np.abs(acov[:, 0])
    eps_bar = float(np.mean(eps))
    g = acov.mean(axis=0)
    g0_low, g0_high = float(np.mean(acov[:, 0] - eps)), float(np.mean(acov[:, 0] + eps))
    var_low, var_high = _spread_of_means(m, a)
    mean_var_low = g0_low * h / (h - 1)
    plus_low, plus_high = g0_low + var_low, g0_high + var_high
    n = rows * h
    if not plus_low > 0:
        return 0.0
    num = mean_var_low - (g + eps_bar)  # the least numerator of 1 - rho_t
    rho_high = 1 - np.where(num >= 0, num / plus_high, num / plus_low)
    rho_high[0] = 1.0
    n_pairs = lags // 2
    pairs = rho_high[0 : 2 * n_pairs : 2] + rho_high[1 : 2 * n_pairs : 2]
    ended = np.flatnonzero(~(pairs > 0))
    stop = int(ended[0]) if ended.size else n_pairs
    running = np.minimum.accumulate(pairs[:stop]) if stop else np.zeros(0)
    total = float(np.sum(running))
    if not ended.size and stop:
        # Not ended within the lags: every pair that could follow, at the last minimum.
        total += max(h // 2 + 1 - n_pairs, 0) * float(running[-1])
    tau = 2 * total + _SLACK  # -1 + 2 (sum of the pairs) + (last even term <= 1)
    return n / max(tau, 1 / np.log10(n)) * (1 - _SLACK)


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


def _screened(x: np.ndarray, prob: float, r_hat_max: float, ess_min: float,
              split: np.ndarray, low_value: float, high_value: float) -> tuple:  # fmt: skip
    """``r_hat``, ``ess_bulk``, ``ess_tail`` of one quantity's finite draws ``x`` (at least 4
    a chain; ``split`` as :func:`_split` cuts them, its least and greatest values given),
    and whether each is the exact value (else a bound that decides its check: an
    :math:`\\hat R` of at most ``r_hat_max``, a bulk ESS of at least ``ess_min``).

    The split draws are counted into buckets over their range; the ranks in a bucket are
    known to within its count, so each normal score to within its bucket's half width,
    which bounds :math:`\\hat R` above (:func:`_rhat_upper`) and the bulk ESS below
    (:func:`_ess_lower`); the same counts bound the folded draws' ranks
    (:func:`_folded_bucket_scores`). The median and the tail quantiles are exact: their
    order statistics are read from the few draws of their buckets; so is the tail ESS,
    which needs no ranks. A diagnostic whose bound does not decide its check is computed
    exactly (:class:`_Quantity`); a healthy run costs a few passes over its draws, no sort.
    """
    rows, h = split.shape
    n = split.size
    chains = x.shape[0]
    quantity = _Quantity(x, split)
    scale = _SCREEN_BUCKETS / (high_value - low_value) if high_value > low_value else 0.0
    if n < _SCREEN_MIN or not 0.0 < scale < math.inf:
        # Few draws (the exact road is as cheap), one value, or a range too narrow.
        r_hat = quantity.rhat() if chains >= 2 else np.nan
        return [r_hat, quantity.ess_bulk(), quantity.ess_tail(prob)], [True] * 3
    kernels = _kernels()
    b = _SCREEN_BUCKETS
    keys = np.empty((rows, h), np.int32)
    row_counts = kernels.buckets(split, low_value, scale, b, keys)
    counts = row_counts.sum(axis=0)
    middle, half, starts, ends = _bucket_scores(counts, n)
    # The order statistics wanted exactly: the median's, and the tail quantiles' where the
    # split draws are all the draws (an even number a chain).
    low, high = sorted((prob, 1 - prob))
    positions = [n // 2 - 1, n // 2]
    even = x.shape[1] % 2 == 0
    if even:
        for p in (low, high):
            before = min(math.floor((n - 1) * p), n - 1)
            positions += [before, min(before + 1, n - 1)]
    wanted = np.zeros(b, dtype=bool)
    wanted[np.searchsorted(ends, positions, side="right")] = True
    members = kernels.members(split, keys, wanted, int(counts[wanted].sum()))
    members.sort()  # the buckets follow the keys: sorted keys are in bucket order
    offsets = np.cumsum(np.where(wanted, counts, 0)) - np.where(wanted, counts, 0)

    def order_statistic(i: int) -> float:
        k = int(np.searchsorted(ends, i, side="right"))
        return members[offsets[k] + i - starts[k]]

    median = (order_statistic(n // 2 - 1) + order_statistic(n // 2)) / 2
    if even:
        q_low, q_high = (_quantile_of(order_statistic, n, p) for p in (low, high))
    else:
        q_low, q_high = (np.quantile(x, p) for p in (low, high))
    ess_tail = _ess_tails(split, q_low, q_high)

    values, exact = [np.nan, np.nan, ess_tail], [chains < 2, False, True]
    if chains >= 2:
        folded = _folded_bucket_scores(counts, low_value, scale, high_value, median, n)
        sums, f_sums = _bucket_sums(row_counts, (middle, half), folded)
        r_hat = max(_rhat_upper(sums, h), _rhat_upper(f_sums, h))
        if r_hat <= r_hat_max:
            values[0] = r_hat
        else:
            values[0], exact[0] = quantity.rhat(), True
    else:
        (sums,) = _bucket_sums(row_counts, (middle, half))
    means = sums[:, 0] / h
    ess = 0.0
    for acov in _growing_lags(keys, middle, means):
        ess = _ess_lower(sums, h, acov)
        if ess >= ess_min:
            break
    else:
        # Every lag, by FFT: cheaper than the sort, and the sequence then ends within them.
        scores = middle[keys]
        ess = _ess_lower(sums, h, _autocov_fft(scores - means[:, None]))
    if ess >= ess_min:
        values[1] = ess
    else:
        values[1], exact[1] = quantity.ess_bulk(), True
    return values, exact


def _screen_compiled(draws: np.ndarray, prob: float, r_hat_max: float, ess_min: float) -> list:
    """:func:`_screened` of each quantity of ``draws`` ``(chains, n, count)`` (``n`` at
    least 4), or its exact values where a draw is not finite, the quantities over threads.
    A quantity's draws are split by one pass (:func:`_split_kernel`) into an array of its
    own, which the allocator reuses for the next (one array for all would be new memory,
    slow to touch first)."""
    kernels = _kernels()
    draws = np.ascontiguousarray(draws, dtype=float)  # the draws' own order: no copy
    chains, n, count = draws.shape
    size = 2 * chains * (n // 2)
    if 4 * _SCREEN_BUCKETS * count >= size * _workers(count):
        # The quantities' bucket edges (four scores a bucket, over the threads) hold more
        # scores than the table: make it once, and keep it.
        _score_table(size)

    def one(i):
        x = draws[:, :, i]
        split = np.empty((2 * chains, n // 2))
        low, high, finite = kernels.split(draws, i, split)
        if not finite:
            return _one(x, ("r_hat", "ess_bulk", "ess_tail"), prob), [True] * 3
        return _screened(x, prob, r_hat_max, ess_min, split, low, high)

    return _over_threads(one, count)


def screened_convergence(draws: np.ndarray, r_hat_max: float, ess_min: float,
                         prob: float | None = None) -> tuple[dict, dict]:  # fmt: skip
    """:func:`convergence` as the checks of a finished run need it: each value exact, or a
    bound on the right side of its threshold (an :math:`\\hat R` at most ``r_hat_max``, a
    bulk ESS at least ``ess_min``, which is then all a check reads).

    Returns ``(values, exact)``, dicts of arrays by ``r_hat``, ``ess_bulk``, ``ess_tail``,
    the second saying which values are exact. The decisions ``r_hat <= r_hat_max`` and
    ``ess_bulk >= ess_min`` are those of the exact values; the exact values are those of
    :func:`convergence`. See :func:`_screened` for the bounds; they are used on the
    compiled road (:data:`COMPILED_MIN_SIZE`), and a smaller run's values are all exact.
    """
    import warnings

    x = _chain_draw_last(draws)
    lead = x.shape[:-2]
    flat = x.reshape((-1, *x.shape[-2:])) if lead else x[None]
    prob = _ci_prob() if prob is None else prob
    count = flat.shape[0]
    names = ("r_hat", "ess_bulk", "ess_tail")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "divide by zero", RuntimeWarning)
        warnings.filterwarnings("ignore", "invalid value", RuntimeWarning)
        if not _compiled_road(x) or flat.shape[2] < 4:
            table = _diagnostics(draws, names, prob)
            return table, {k: np.ones(lead, dtype=bool) for k in names}
        # (count, chains, n) back to the draws' own order (chains, n, count): a view of
        # draws of shape (chains, n, dim) or (chains, n).
        rows = _screen_compiled(np.moveaxis(flat, 0, -1), prob, r_hat_max, ess_min)
    values = np.array([r[0] for r in rows], dtype=float).reshape((count, 3))
    exact = np.array([r[1] for r in rows], dtype=bool).reshape((count, 3))
    return (
        {k: values[:, i].reshape(lead) for i, k in enumerate(names)},
        {k: exact[:, i].reshape(lead) for i, k in enumerate(names)},
    )


#: arviz_base's default of ``rcParams["stats.ci_prob"]``, read without importing arviz_base
#: (a third of a second) where no arvizrc file can change it.
_ARVIZ_CI_PROB = 0.89


def _arvizrc_candidates() -> list[Path]:
    """Where arviz_base looks for an ``arvizrc`` file (``arviz_base.rcparams``)."""
    out = [Path(os.getcwd(), "arvizrc")]
    if os.environ.get("ARVIZ_DATA"):
        out.append(Path(os.environ["ARVIZ_DATA"], "arvizrc"))
    xdg = os.environ.get("XDG_CONFIG_HOME", str(Path.home() / ".config"))
    folder = (
        Path(xdg, "arviz")
        if sys.platform.startswith(("linux", "freebsd"))
        else (Path.home() / ".arviz")
    )
    out.append(folder / "arvizrc")
    return out


def _ci_prob() -> float:
    """``arviz_base.rcParams["stats.ci_prob"]``, the probability whose quantiles the tail
    ESS reads (arviz_stats.summary's own default)."""
    if "arviz_base" not in sys.modules and not any(p.is_file() for p in _arvizrc_candidates()):
        return _ARVIZ_CI_PROB
    from arviz_base import rcParams

    return rcParams["stats.ci_prob"]


# What each diagnostic needs: the fewest chains ArviZ accepts, ArviZ's own computation
# (for a quantity with an infinite value), and ours.
_MIN_CHAINS = {"r_hat": 2, "ess_bulk": 1, "ess_tail": 1, "ess_mean": 1, "mcse_mean": 1}


def _arviz(name: str, x: np.ndarray, prob: float) -> float:
    stats = _array_stats()
    if name == "r_hat":
        return stats.rhat(x, method="rank")
    if name == "mcse_mean":
        return stats.mcse(x, method="mean")
    method = name.removeprefix("ess_")
    return stats.ess(x, method=method, prob=prob if method == "tail" else None)


def _ours(quantity: _Quantity, name: str, prob: float) -> float:
    if name == "ess_tail":
        return quantity.ess_tail(prob)
    return getattr(quantity, name.replace("r_hat", "rhat"))()


def _one(x: np.ndarray, names: tuple, prob: float, compiled: bool = True) -> list[float]:
    """The diagnostics ``names`` of one quantity's ``(chains, draws)``: nan where ArviZ
    refuses it (any NaN, fewer than 4 draws, fewer chains than the diagnostic needs);
    ArviZ's own estimators where a draw is infinite; else ours, by the compiled kernels, or
    by NumPy unless ``compiled`` (:func:`_compiled_road`)."""
    x = np.asarray(x, dtype=float)
    m, n = x.shape
    if n < 4 or m < 1 or np.isnan(x).any():
        return [np.nan] * len(names)
    finite = bool(np.isfinite(x).all())
    quantity = _Quantity(x, compiled=compiled) if finite else None
    out = []
    for name in names:
        if m < _MIN_CHAINS[name]:
            out.append(np.nan)
        elif finite:
            out.append(float(_ours(quantity, name, prob)))
        else:
            out.append(float(np.asarray(_arviz(name, x, prob))))
    return out


def _diagnostics(draws: np.ndarray, names: tuple, prob: float | None = None) -> dict:
    """``{name: array}`` of the diagnostics ``names`` of each quantity of ``draws``, the
    quantities spread over threads when the draws are many."""
    x = _chain_draw_last(draws)
    lead = x.shape[:-2]
    flat = x.reshape((-1, *x.shape[-2:])) if lead else x[None]
    if prob is None and "ess_tail" in names:
        prob = _ci_prob()
    count = flat.shape[0]
    compiled = _compiled_road(x)
    if x.size >= _THREADED_SIZE and count > 1:
        if compiled:
            _kernels()  # compiled (or loaded) once, before the threads ask for it
        rows = _over_threads(lambda i: _one(flat[i], names, prob, compiled), count)
    else:
        rows = [_one(flat[i], names, prob, compiled) for i in range(count)]
    values = np.array(rows, dtype=float).reshape((count, len(names)))
    return {name: values[:, k].reshape(lead) for k, name in enumerate(names)}


def convergence(draws: np.ndarray, prob: float | None = None) -> dict[str, np.ndarray]:
    """Rank-normalised split :math:`\\hat R` and bulk and tail ESS per parameter: the
    columns ``r_hat``, ``ess_bulk``, ``ess_tail`` of :meth:`hamiltonia.Result.summary`,
    equal to :func:`rhat`, ``ess(draws, "bulk")`` and ``ess(draws, "tail")``, computed
    together (one sort of each parameter's draws serves all three).

    ``prob``: the probability whose two quantiles the tail ESS reads (default ArviZ's
    ``rcParams["stats.ci_prob"]``, as :func:`ess`). A parameter whose chains never moved
    gives nan or inf without NumPy's warnings about it, as the summary does.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "divide by zero", RuntimeWarning)
        warnings.filterwarnings("ignore", "invalid value", RuntimeWarning)
        return _diagnostics(draws, ("r_hat", "ess_bulk", "ess_tail"), prob)


def ess(draws: np.ndarray, method: str = "bulk") -> np.ndarray:
    """Effective sample size per parameter (``method`` ``"bulk"``, ``"tail"``, ``"mean"``...,
    as in :mod:`arviz_stats`; the first three computed as the module docstring says)."""
    if method in ("bulk", "tail", "mean"):
        return _diagnostics(draws, (f"ess_{method}",))[f"ess_{method}"]
    return _per_parameter(lambda x: _array_stats().ess(x, method=method), draws)


def rhat(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split :math:`\\hat R` per parameter (Vehtari et al. 2021):

    .. math::

        \\hat R = \\max\\left(\\hat R(z), \\hat R(z_{\\text{fold}})\\right),

    of the normal scores of the ranks of the split chains and of their distances to the
    median."""
    return _diagnostics(draws, ("r_hat",))["r_hat"]


def mcse(draws: np.ndarray, method: str = "mean") -> np.ndarray:
    """Monte Carlo standard error per parameter of the mean (``"mean"``,
    :math:`\\text{sd}/\\sqrt{\\text{ESS}_{\\text{mean}}}`) or sd (``"sd"``)."""
    if method == "mean":
        return _diagnostics(draws, ("mcse_mean",))["mcse_mean"]
    return _per_parameter(lambda x: _array_stats().mcse(x, method=method), draws)


def _replicated_batch_means_covariance(x: np.ndarray, batch_size: int) -> np.ndarray:
    """:math:`\\hat\\Sigma = \\frac{b}{am-1}\\sum_{c,k} (\\bar Y_{ck} - \\bar\\theta)(\\bar Y_{ck}
    - \\bar\\theta)^\\top` from ``a = n // b`` non-overlapping batches of each of the ``m``
    chains ``x`` (chains, draws, dim), centred on the mean of all of them."""
    m, n, dim = x.shape
    a = n // batch_size
    means = x[:, : a * batch_size].reshape(m * a, batch_size, dim).mean(axis=1)
    centred = means - means.mean(axis=0)
    return batch_size * centred.T @ centred / (m * a - 1)


def multivariate_ess(draws: np.ndarray, batch_size: int | str = "sqroot") -> float:
    """Multivariate effective sample size (Vats, Flegal and Jones 2019), over several chains
    as Vats and Knudson (2021, *Revisiting the Gelman-Rubin diagnostic*, Statist. Sci.)
    estimate it.

    .. math::

        \\text{mESS} = mn \\left(\\frac{|\\Lambda|}{|\\Sigma|}\\right)^{1/D}

    with :math:`mn` the number of draws of the :math:`m` chains, :math:`\\Lambda` the mean of
    the chains' sample covariances and :math:`\\Sigma` the asymptotic covariance of the
    Markov-chain CLT, estimated by replicated batch means: the batch means of every chain
    centred on the mean of all draws, so that chains that disagree (have not mixed) inflate
    :math:`\\Sigma` and lower the mESS, as :math:`\\hat R` would flag them. ``batch_size`` is
    an integer or ``"sqroot"`` (:math:`b = \\lfloor\\sqrt{n}\\rfloor`, the default of Vats et
    al.) or ``"cuberoot"``. Determinants are taken through log-determinants for stability.
    Independent draws give :math:`\\text{mESS} \\approx mn`.
    """
    x = np.asarray(draws, dtype=float)
    if x.ndim == 2:
        x = x[..., None]
    if x.ndim != 3:
        raise ValueError(f"draws must have shape (chains, draws[, dim]), got {x.shape}")
    n_chains, n, dim = x.shape
    if isinstance(batch_size, str):
        rules = {"sqroot": np.sqrt, "cuberoot": np.cbrt}
        if batch_size not in rules:
            raise ValueError(
                f"batch_size must be an integer, 'sqroot' or 'cuberoot', got {batch_size!r}"
            )
        b = int(np.floor(rules[batch_size](n)))
    else:
        b = int(batch_size)
    if not 1 <= b <= n // 2:
        raise ValueError(f"batch_size must lie in [1, {n // 2}] for {n} draws per chain, got {b}")
    if n_chains * (n // b) - 1 < dim or n_chains * (n - 1) < dim:
        # Too few centred batch means (or draws) to span the space: Sigma (or Lambda) is
        # singular in exact arithmetic. Decided by counting, since in floating point its
        # determinant is a rounding residue whose sign varies between processors.
        return float("nan")
    sigma = _replicated_batch_means_covariance(x, b)
    lam = np.mean([np.atleast_2d(np.cov(chain, rowvar=False)) for chain in x], axis=0)
    sign_l, logdet_l = np.linalg.slogdet(lam)
    sign_s, logdet_s = np.linalg.slogdet(np.atleast_2d(sigma))
    if sign_l <= 0 or sign_s <= 0:
        return float("nan")
    return float(n_chains * n * np.exp((logdet_l - logdet_s) / dim))


def kish_ess(log_weights: np.ndarray) -> float:
    """Kish's effective sample size of importance weights (thesis eq. 3.11).

    .. math::

        \\text{ESS}_{\\text{IMP}} = \\frac{1}{\\sum_j \\bar b_j^2},
        \\qquad \\bar b_j = \\frac{b_j}{\\sum_k b_k},

    computed from log weights with the maximum subtracted. Equal weights give the number of
    draws.
    """
    lw = np.asarray(log_weights, dtype=float).ravel()
    if lw.size == 0 or not np.all(np.isfinite(lw)):
        raise ValueError("log_weights must be a non-empty array of finite values")
    w = np.exp(lw - lw.max())
    w /= w.sum()
    return float(1.0 / np.sum(w**2))


def kish_factor(log_weights) -> float:
    """:func:`kish_ess` over the number of draws, the factor by which importance weights
    shrink an ESS: 1 without weights, and where a weight is not finite (it has no Kish
    ESS; the run's checks report such weights)."""
    if log_weights is None or not np.all(np.isfinite(log_weights)):
        return 1.0
    return kish_ess(log_weights) / np.size(log_weights)


def combined_ess(draws: np.ndarray, log_weights: np.ndarray | None, batch_size="sqroot") -> float:
    """ESS of importance-weighted draws (thesis eq. 3.12, after Heide et al. 2021).

    .. math::

        \\text{ESS} = \\frac{\\text{ESS}_{\\text{IMP}}}{N}\\,\\text{mESS},

    :math:`\\text{mESS}` from the unweighted draws. ``log_weights=None`` gives the mESS.
    """
    m = multivariate_ess(draws, batch_size)
    if log_weights is None:
        return m
    lw = np.asarray(log_weights)
    return kish_ess(lw) / lw.size * m


def ess_per_second(result, method: str = "bulk") -> np.ndarray:
    """ESS per second of post-warm-up sampling time, per parameter."""
    return ess(result.draws, method) / result.sampling_seconds


def ess_per_gradient(result, method: str = "bulk") -> np.ndarray:
    """ESS per gradient evaluation spent after warm-up, per parameter (``inf`` when the
    sampler uses no gradient)."""
    n_grad = float(np.sum(result.stats["n_grad"]))
    with np.errstate(divide="ignore"):
        return ess(result.draws, method) / n_grad


def weighted_mean(values: np.ndarray, log_weights: np.ndarray | None) -> np.ndarray:
    """Self-normalised importance-weighted mean over the (chain, draw) axes.

    .. math::

        \\hat\\mu = \\frac{\\sum_i w_i f(x_i)}{\\sum_i w_i}, \\qquad w_i = e^{\\log w_i}.

    ``values`` has shape ``(chains, draws, ...)``; ``log_weights`` ``(chains, draws)`` or
    ``None`` for equal weights.
    """
    if log_weights is None:
        return values.mean(axis=(0, 1))
    lw = log_weights - np.max(log_weights)
    w = np.exp(lw)
    w = w / w.sum()
    return np.tensordot(w, values, axes=([0, 1], [0, 1]))


def pairs_of(chains: int) -> np.ndarray:
    """The pairs ``[[0, 1], [2, 3], ...]`` of ``chains`` chains (an even number)."""
    if chains < 2 or chains % 2:
        raise ValueError(
            f"chains must be an even number >= 2 for antithetic pairs, got chains={chains}"
        )
    return np.arange(chains).reshape(-1, 2)


def pair_correlation(draws: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of each pair's chains, per parameter, averaged over pairs:
    shape ``(dim,)``; the research's :math:`\\eta` reduces it over the parameters
    (:func:`hamiltonia.diagnostics.publication.antithetic_eta`)."""
    from scipy.stats import spearmanr

    draws = np.asarray(draws, dtype=float)
    pairs = pairs_of(draws.shape[0])
    eta = np.empty((len(pairs), draws.shape[2]))
    for k, (x, y) in enumerate(pairs):
        for i in range(draws.shape[2]):
            eta[k, i] = spearmanr(draws[x, :, i], draws[y, :, i]).statistic
    return eta.mean(axis=0)


def linearised_values(values, log_weights, per_chain: bool = False) -> np.ndarray:
    """The per-draw series whose plain mean is the self-normalised estimate, with the same
    Monte Carlo error to first order (the delta method), shape of ``values``
    ``(chains, draws, ...)``:

    .. math::

        \\psi_i = \\hat\\mu + \\frac{w_i}{\\bar w}\\,(f_i - \\hat\\mu), \\qquad
        \\hat\\mu = \\frac{\\sum_i w_i f_i}{\\sum_i w_i},

    over all draws, or over each chain's own draws with ``per_chain`` (each chain its own
    estimate, as an antithetic pair's chains are averaged). The values themselves when
    ``log_weights`` is ``None``.
    """
    values = np.asarray(values, dtype=float)
    if log_weights is None:
        return values
    axes = (1,) if per_chain else (0, 1)
    lw = np.asarray(log_weights, dtype=float)
    w = np.exp(lw - np.max(lw, axis=axes, keepdims=True))
    w = w / w.mean(axis=axes, keepdims=True)
    w = w.reshape(w.shape + (1,) * (values.ndim - 2))
    mu = (w * values).mean(axis=axes, keepdims=True)
    return mu + w * (values - mu)
