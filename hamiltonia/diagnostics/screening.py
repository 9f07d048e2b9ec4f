"""The checks' screen: :func:`screened_convergence`, which decides whether each parameter's
rank-normalised :math:`\\hat R` and bulk ESS pass the checks' thresholds from counts of its
draws in buckets, without a sort, and computes the exact values only where a bound does not
decide.

The bounded diagnostics are ArviZ's (Vehtari et al. 2021, *Rank-normalization, folding, and
localization: an improved R-hat*), the exact values those of
:func:`~hamiltonia.diagnostics.univariate.convergence`, by its own road (by blocks of
quantities, :mod:`hamiltonia.diagnostics.batched`, or one at a time,
:mod:`hamiltonia.diagnostics.rank_estimators`), to the bit; the counts are made by the
kernels of :mod:`hamiltonia.diagnostics.estimator_kernels`.

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

Many short chains
-----------------
The counts are kept per sequence and bucket: :math:`2m \\times` :data:`_SCREEN_BUCKETS`
numbers a quantity, which for 1,024 chains of 80 draws is 64 million counts for 81,920
draws (a run of 1.4 s of sampling then spent 61.5 s in the screen, issue 51). The screen is
used only while they are at most two numbers a draw (:func:`_screens`); a run of more,
shorter chains is computed exactly, by blocks of quantities
(:mod:`hamiltonia.diagnostics.batched`), which costs less than the screen would. The
values the screen leaves to be computed exactly are computed that way too, all the
quantities that need them at once (:func:`_exact`).
"""

from __future__ import annotations

import math

import numpy as np

from hamiltonia.diagnostics.batched import tail_ess, takes_batched
from hamiltonia.diagnostics.estimator_kernels import _compiled_road, _kernels
from hamiltonia.diagnostics.rank_estimators import (
    _autocov_fft,
    _ess_tails,
    _growing_lags,
    _quantile_of,
    _score_table,
    _scores_at,
)
from hamiltonia.diagnostics.univariate import (
    _blocks,
    _chain_draw_last,
    _ci_prob,
    _diagnostics,
    _one,
    _over_threads,
    _workers,
)

__all__ = ["screened_convergence"]


#: Buckets of the screen (:func:`_screened`): the ranks in one are known to within its
#: count, about 40 draws of 1.2 million, so that the bounds decide a healthy run.
_SCREEN_BUCKETS = 32_768
#: Split draws from which the screen is used; below, the exact road (by blocks of
#: quantities) is as cheap: on 2 busy cores, 4 chains of 20,480 draws of 100 parameters took
#: the screen 0.21 s and the exact road 0.11 s, 4 chains of 81,920 draws of 25 parameters
#: 0.08 s and 0.13 s (measured, best of three).
_SCREEN_MIN = 131_072
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
    which needs no ranks. A diagnostic whose bound does not decide its check is left
    ``None``, for the caller to compute exactly (:func:`_exact`); a healthy run costs a few
    passes over its draws, no sort.
    """
    rows, h = split.shape
    n = split.size
    chains = x.shape[0]
    scale = _SCREEN_BUCKETS / (high_value - low_value) if high_value > low_value else 0.0
    if n < _SCREEN_MIN or not 0.0 < scale < math.inf:
        # Few draws (the exact road is as cheap), one value, or a range too narrow.
        return [None, None, None], [True] * 3
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
    ess_tail = _tail_ess(split, q_low, q_high, x.shape[1])

    values, exact = [np.nan, np.nan, ess_tail], [chains < 2, False, True]
    if chains >= 2:
        folded = _folded_bucket_scores(counts, low_value, scale, high_value, median, n)
        sums, f_sums = _bucket_sums(row_counts, (middle, half), folded)
        r_hat = max(_rhat_upper(sums, h), _rhat_upper(f_sums, h))
        if r_hat <= r_hat_max:
            values[0] = r_hat
        else:
            values[0], exact[0] = None, True
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
        values[1], exact[1] = None, True
    return values, exact


def _tail_ess(split: np.ndarray, q_low: float, q_high: float, draws: int) -> float:
    """The tail ESS of one quantity's split draws at its quantiles, by the road its exact
    diagnostics take (:func:`~hamiltonia.diagnostics.batched.takes_batched`), so that the
    screen's is theirs to the bit."""
    chains = split.shape[0] // 2
    if takes_batched(chains, draws):
        return float(tail_ess(split[None], q_low, q_high)[0])
    return _ess_tails(split, q_low, q_high)


def _screens(chains: int, n: int) -> bool:
    """Whether the screen (:func:`_screened`) is worth its passes over quantities of
    ``chains`` chains of ``n`` draws: from :data:`_SCREEN_MIN` split draws on, and while
    its counts of each sequence's draws in each bucket are at most two numbers a draw
    (many short chains are computed exactly, by blocks of quantities, for less: 1,024 chains
    of 80 draws would count 64 million a quantity)."""
    size = 2 * chains * (n // 2)
    return size >= _SCREEN_MIN and 2 * chains * _SCREEN_BUCKETS <= 2 * size


def _screen_compiled(draws: np.ndarray, prob: float, r_hat_max: float, ess_min: float) -> list:
    """:func:`_screened` of each quantity of ``draws`` ``(chains, n, count)`` (``n`` at
    least 4), or its exact values where a draw is not finite, the quantities over threads;
    the values the screen leaves to be computed exactly, by the diagnostics' own road
    (:func:`~hamiltonia.diagnostics.univariate._diagnostics`) for all those quantities at
    once. A quantity's draws are split by one pass (:func:`_split_kernel`) into an array of
    its own, which the allocator reuses for the next (one array for all would be new
    memory, slow to touch first)."""
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

    rows = _over_threads(one, count)
    left = [i for i, (values, _) in enumerate(rows) if None in values]
    if left:
        names = ("r_hat", "ess_bulk", "ess_tail")
        wanted = tuple(n for k, n in enumerate(names) if any(rows[i][0][k] is None for i in left))
        table = _exact(np.moveaxis(draws[:, :, left], -1, 0), wanted, prob)
        for i, values in zip(left, table, strict=True):
            for name, value in zip(wanted, values, strict=True):
                k = names.index(name)
                if rows[i][0][k] is None:
                    rows[i][0][k] = float(value)
    return rows


def _exact(flat: np.ndarray, names: tuple, prob: float) -> np.ndarray:
    """The exact diagnostics ``names`` of the finite quantities ``flat`` ``(quantities,
    chains, n)``, ``(quantities, len(names))``, by the compiled road that
    :func:`~hamiltonia.diagnostics.univariate.convergence` takes for their shape (whatever
    their number), so that they are its values to the bit."""
    if takes_batched(*flat.shape[1:]):
        return _blocks(flat, names, prob)
    return np.array(_over_threads(lambda i: _one(flat[i], names, prob), flat.shape[0]))


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
        if not _compiled_road(x) or flat.shape[2] < 4 or not _screens(*flat.shape[1:]):
            # A small run (NumPy's road), or many short chains (by blocks): exact values.
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
