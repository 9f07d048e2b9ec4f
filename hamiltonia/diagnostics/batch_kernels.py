"""The kernels of the rank diagnostics of many quantities at once
(:mod:`hamiltonia.diagnostics.batched`): plain functions in the subset of Python numba
compiles, compiled on first use with the other diagnostic kernels
(:func:`hamiltonia.diagnostics.estimator_kernels._kernels`) and kept in numba's cache on
disk.

Each works on a block of quantities' split draws ``(quantities, sequences, h)`` (a
quantity's :math:`2m` half chains of :math:`h` draws, as ArviZ splits them) and loops over
the quantities itself, so that a run of a thousand chains of a hundred parameters costs a
few calls, not one per quantity and sequence:

* :func:`_ranks_kernel`: the normal scores of the ranks of the split draws (ties averaged,
  as ``scipy.stats.rankdata``) and of their distances to the median, from the draws sorted
  by NumPy (a vectorised sort), by looking each draw up in its sorted copy; and the
  rank-normalised :math:`\\hat R` of both;
* :func:`_means_kernel`, :func:`_lags_kernel`: the means of the sequences and the mean over
  the sequences of their autocovariances at a range of lags, of the values or of the
  indicators :math:`[x \\le q]` of the tail ESS;
* :func:`_geyer_kernel`: the ESS of Geyer's initial monotone sequence, step for step as
  ArviZ (:func:`hamiltonia.diagnostics.rank_estimators._geyer`).
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []

#: ArviZ's test of a constant sequence: values within this of each other.
_RESOLUTION = float(np.finfo(np.float64).resolution)

#: The helpers the kernels call, compiled before them (:func:`compile_helpers`).
_HELPERS = ("_key", "_fix_order", "_score_runs", "_fold", "_rhat_parts")


def compile_helpers(decorate) -> None:
    """Replace the helpers of the kernels, in this module, by their compiled forms
    (``decorate``, numba's ``njit`` with the kernels' options), once: a kernel compiled
    afterwards calls them compiled."""
    names = globals()
    for name in _HELPERS:
        if not hasattr(names[name], "py_func"):
            names[name] = decorate(names[name])


def _keys_kernel(split, bits, out):
    """The sort keys of each quantity's split draws ``split`` ``(quantities, rows, h)``,
    ``(quantities, rows * h)`` unsigned: the draw's bits mapped so that the keys' order is
    the numbers' (the sign bit flipped for a positive number, every bit for a negative one),
    the lowest ``bits`` replaced by the draw's place. Sorted (by NumPy's vectorised sort),
    they give each draw's place in the order of the values, up to draws within
    :math:`2^{\\text{bits}}` units in the last place of each other, which
    :func:`_fix_order` puts in order."""
    count = split.shape[0]
    places = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    top = np.uint64(1) << np.uint64(63)
    for j in range(count):
        u = split[j].ravel().view(np.uint64)
        for i in range(u.size):
            key = u[i]
            key = ~key if key & top else key | top
            out[j, i] = (key & ~places) | np.uint64(i)


def _fix_order(values, places, bits):
    """Put in order the sorted draws ``values`` (at ``places``) that :func:`_keys_kernel`'s
    keys could not: those whose keys agree but for the lowest ``bits``, which its sort put
    in the order of their places. Such draws lie within :math:`2^{\\text{bits}}` units in the
    last place of each other: a run out of order is short, found by one pass, and sorted on
    its own (a few draws of a run, where draws that close differ at all)."""
    n = values.size
    i = 1
    while i < n:
        if not values[i] < values[i - 1]:
            i += 1
            continue
        # Out of order: the keys' run about it, sorted by value.
        shift = np.uint64(bits)
        high = _key(values[i]) >> shift
        a = i - 1
        while a > 0 and (_key(values[a - 1]) >> shift) == high:
            a -= 1
        b = i + 1
        while b < n and (_key(values[b]) >> shift) == high:
            b += 1
        inner = np.argsort(values[a:b], kind="mergesort")
        values[a:b] = values[a:b][inner]
        places[a:b] = places[a:b][inner]
        i = b


def _key(v):
    """The bits of ``v`` mapped so that their order is the numbers' (the sign bit flipped
    for a positive number, every bit for a negative one)."""
    u = np.array([v]).view(np.uint64)[0]
    top = np.uint64(1) << np.uint64(63)
    return ~u if u & top else u | top


def _score_runs(values, places, table, half, out):
    """Write to ``out[places]`` the normal score of each run of equal values of the sorted
    ``values``, ties given their average rank :math:`r` (``scipy.stats.rankdata``):
    ``table[r - 1]`` for a whole rank, ``half[r - 3/2]`` for one ending in a half (a run of
    even length)."""
    n = values.size
    i = 0
    while i < n:
        e = i + 1
        while e < n and values[e] == values[i]:
            e += 1
        c = e - i
        z = table[i + c // 2] if c % 2 == 1 else half[i + c // 2 - 1]
        for k in range(i, e):
            out[places[k]] = z
        i = e


def _fold(values, places, median, out_values, out_places):
    """The distances :math:`|x - \\text{median}|` of the sorted draws ``values`` (at
    ``places``), sorted, to ``out_values`` (at ``out_places``): the two sorted runs of the
    draws below and above the median merged outwards, no second sort (each distance
    computed as a draw's own, :math:`|x - \\text{median}|`, so that equal draws tie; on a
    tie the draw below first)."""
    n = values.size
    a, b = 0, n
    while a < b:
        mid = (a + b) >> 1
        if values[mid] < median:
            a = mid + 1
        else:
            b = mid
    left, right = a - 1, a
    for k in range(n):
        take_left = right >= n or (
            left >= 0 and abs(values[left] - median) <= abs(values[right] - median)
        )
        if take_left:
            out_values[k] = abs(values[left] - median)
            out_places[k] = places[left]
            left -= 1
        else:
            out_values[k] = abs(values[right] - median)
            out_places[k] = places[right]
            right += 1


def _rhat_parts(z, rows, h):
    """:math:`\\hat R = \\sqrt{(B/W + h - 1)/h}` of the sequences ``z`` ``(rows, h)``,
    :math:`B = h \\operatorname{var}(\\bar z_j)` (ddof 1), :math:`W` the mean of their
    variances (ddof 1)."""
    means = np.empty(rows)
    within = 0.0
    for r in range(rows):
        total = 0.0
        for t in range(h):
            total += z[r, t]
        m = total / h
        squares = 0.0
        for t in range(h):
            d = z[r, t] - m
            squares += d * d
        means[r] = m
        within += squares / (h - 1)
    within /= rows
    grand = 0.0
    for r in range(rows):
        grand += means[r]
    grand /= rows
    spread = 0.0
    for r in range(rows):
        d = means[r] - grand
        spread += d * d
    between = h * (spread / (rows - 1))
    return np.sqrt((between / within + h - 1) / h)


def _ranks_kernel(split, keys, bits, table, half, z, ordered, scratch, places):
    """Write the normal scores (Blom) of the ranks of each quantity's split draws ``split``
    ``(quantities, rows, h)`` to ``z`` (the same shape) and its draws sorted to ``ordered``
    ``(quantities, rows * h)``, from ``keys``, the quantities' :func:`_keys_kernel` sorted;
    return the rank-normalised
    :math:`\\hat R` of each, the larger of those of the scores and of the folded scores (of
    the ranks of the distances :math:`|x - \\text{median}|`).

    ``table[i]`` is the score of rank :math:`i + 1` and ``half[i]`` that of rank
    :math:`i + 3/2` among ``rows * h`` numbers; ``scratch`` ``(2, rows * h)`` and ``places``
    (integers, the same shape) are room for the work, made once by the caller (new memory
    costs a page fault a page)."""
    count, rows, h = split.shape
    n = rows * h
    out = np.empty(count)
    low = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    folded, zf = scratch[0], scratch[1].reshape((rows, h))
    for j in range(count):
        x, values, key = split[j].ravel(), ordered[j], keys[j]
        at = places[0]
        for i in range(n):
            p = np.int64(key[i] & low)
            at[i] = p
            values[i] = x[p]
        _fix_order(values, at, bits)
        _score_runs(values, at, table, half, z[j].ravel())
        median = (values[n // 2 - 1] + values[n // 2]) / 2
        _fold(values, at, median, folded, places[1])
        _score_runs(folded, places[1], table, half, zf.ravel())
        bulk = _rhat_parts(z[j], rows, h)
        fold = _rhat_parts(zf, rows, h)
        out[j] = fold if fold > bulk else bulk  # Python's max(bulk, fold), nan kept
    return out


def _means_kernel(values, thresholds):
    """The mean of each sequence of ``values`` ``(quantities, rows, h)`` (of the indicators
    :math:`[x \\le q_j]` of quantity ``j`` where ``thresholds`` is not empty: its count of
    ones over ``h``, NumPy's mean to the bit), ``(quantities, rows)``, and whether each
    quantity's values are all within :data:`numpy.finfo` resolution of each other (ArviZ
    then gives the ESS as the number of draws)."""
    count, rows, h = values.shape
    indicator = thresholds.size > 0
    means = np.empty((count, rows))
    flat = np.zeros(count, np.bool_)
    for j in range(count):
        lo, hi = np.inf, -np.inf
        for r in range(rows):
            total = 0.0
            for t in range(h):
                v = values[j, r, t]
                if indicator:
                    v = 1.0 if v <= thresholds[j] else 0.0
                total += v
                lo = min(lo, v)
                hi = max(hi, v)
            means[j, r] = total / h
        flat[j] = hi - lo < _RESOLUTION
    return means, flat


def _lags_kernel(values, thresholds, means, first, last):
    """The autocovariances :math:`\\frac1h\\sum_s (x_s - \\bar x)(x_{s+t} - \\bar x)` of
    each sequence of ``values`` ``(quantities, rows, h)`` about its mean ``means[j, r]``
    (of the indicators :math:`[x \\le q_j]` where ``thresholds`` is not empty), averaged
    over the sequences, for the lags :math:`\\text{first} \\le t < \\min(\\text{last}, h)`:
    ``(quantities, lags)``, the means over the sequences that ArviZ's Geyer sums read."""
    count, rows, h = values.shape
    k_max = min(last, h)
    width = max(k_max - first, 0)
    out = np.zeros((count, width))
    centred = np.empty(h)
    sums = np.empty(width)
    indicator = thresholds.size > 0
    for j in range(count):
        for k in range(width):
            sums[k] = 0.0
        for r in range(rows):
            m = means[j, r]
            for t in range(h):
                v = values[j, r, t]
                if indicator:
                    v = 1.0 if v <= thresholds[j] else 0.0
                centred[t] = v - m
            for k in range(width):
                lag = first + k
                # Two views, not one array at two offsets: the sum stays in vector lanes.
                ahead, behind = centred[: h - lag], centred[lag:]
                s = 0.0
                for t in range(ahead.size):
                    s += ahead[t] * behind[t]
                sums[k] += s / h
        for k in range(width):
            out[j, k] = sums[k] / rows
    return out


def _geyer_kernel(acov, means, n_draw):
    """The ESS of each quantity from ``acov`` ``(quantities, lags)``, the mean over its
    sequences of their autocovariances (:func:`_lags_kernel`), and ``means`` ``(quantities,
    rows)``, the sequences' means, by Geyer's initial positive and monotone sequences step
    for step as ArviZ (:func:`hamiltonia.diagnostics.rank_estimators._geyer`); and whether
    each needed more lags than ``acov`` holds (its ESS then nan).

    .. math::

        \\hat\\rho_t = 1 - \\frac{W - \\overline{\\hat\\gamma_t}}{\\widehat{\\text{var}}^+},
        \\qquad \\hat\\tau = -1 + 2\\sum_{t=0}^{2k+1} \\hat\\rho_t, \\qquad
        \\text{ESS} = \\frac{N}{\\max(\\hat\\tau, 1/\\log_{10} N)}.
    """
    count, lags = acov.shape
    rows = means.shape[1]
    out = np.full(count, np.nan)
    more = np.zeros(count, np.bool_)
    rho = np.empty(n_draw)
    size = rows * n_draw
    floor = 1.0 / np.log10(size)
    for j in range(count):
        mean_var = acov[j, 0] * n_draw / (n_draw - 1.0)
        var_plus = mean_var * (n_draw - 1.0) / n_draw
        if rows > 1:
            grand = 0.0
            for r in range(rows):
                grand += means[j, r]
            grand /= rows
            spread = 0.0
            for r in range(rows):
                d = means[j, r] - grand
                spread += d * d
            var_plus += spread / (rows - 1)
        for t in range(n_draw):
            rho[t] = 0.0
        rho_even = 1.0
        rho[0] = rho_even
        rho_odd = 1.0 - (mean_var - acov[j, 1]) / var_plus
        rho[1] = rho_odd
        t = 1
        short = False
        while t < (n_draw - 3) and (rho_even + rho_odd) > 0.0:
            if t + 2 >= lags:
                short = True
                break
            rho_even = 1.0 - (mean_var - acov[j, t + 1]) / var_plus
            rho_odd = 1.0 - (mean_var - acov[j, t + 2]) / var_plus
            if (rho_even + rho_odd) >= 0:
                rho[t + 1] = rho_even
                rho[t + 2] = rho_odd
            t += 2
        if short:
            more[j] = True
            continue
        max_t = t - 2
        if rho_even > 0:
            rho[max_t + 1] = rho_even
        t = 1
        while t <= max_t - 2:
            if (rho[t + 1] + rho[t + 2]) > (rho[t - 1] + rho[t]):
                rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
                rho[t + 2] = rho[t + 1]
            t += 2
        total = 0.0
        for k in range(max_t + 1):
            total += rho[k]
        tau = -1.0 + 2.0 * total + (rho[max_t + 1] if max_t + 1 < n_draw else 0.0)
        if not tau >= floor:
            tau = floor if tau == tau else tau
        if np.isnan(rho).any():
            continue
        out[j] = size / tau
    return out, more
