"""The compiled kernels of the rank diagnostics and of the checks of a finished run, and
the choice between the compiled road and NumPy's.

The kernels are plain functions in the subset of Python numba compiles, compiled on first
use by :func:`_kernels` and kept in numba's cache on disk, in the package's cache folder
(:mod:`hamiltonia._numba_cache`), not next to this file: the bucket
sort of the split draws (``_sort_kernel``) and the normal scores of their ranks, or of the
ranks of their distances to the median (``_scores_kernel``); the autocovariances of Geyer's
initial sequence summed directly (``_lags_kernel``), and those of the tail ESS's indicators
packed in words of 64 bits (``_pack_kernel``, ``_bit_lags_kernel``); the buckets of the
checks' screen (``_bucket_kernel``, ``_members_kernel``, ``_nearer_kernel``) and the split
of the chains (``_split_kernel``); the E-BFMI of each chain (``_bfmi_kernel``; Betancourt
2016) and the extremes of the draws (:func:`extremes`); and the kernels of
:mod:`hamiltonia.diagnostics.batch_kernels`, which compute the rank diagnostics of a block
of quantities at once (``batch_keys``, ``batch_ranks``, ``batch_means``, ``batch_lags``,
``batch_geyer``).

The diagnostics take the compiled road from :data:`COMPILED_MIN_SIZE` numbers on
(:func:`_compiled_road`), NumPy's below. What the kernels compute, and why it is ArviZ's
numbers (Vehtari et al. 2021, *Rank-normalization, folding, and localization: an improved
R-hat*), is told in :mod:`hamiltonia.diagnostics.rank_estimators`; the screen's bounds in
:mod:`hamiltonia.diagnostics.screening`.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np

__all__ = ["COMPILED_MIN_SIZE", "extremes"]


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
            from hamiltonia.diagnostics import batch_kernels as batch

            batch.compile_helpers(plain)
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
                # Many quantities at once (hamiltonia.diagnostics.batched).
                batch_keys=plain(batch._keys_kernel),
                batch_ranks=plain(batch._ranks_kernel),
                batch_means=plain(batch._means_kernel),
                batch_lags=summing(batch._lags_kernel),
                batch_geyer=plain(batch._geyer_kernel),
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
