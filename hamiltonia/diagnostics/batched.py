"""ArviZ's rank diagnostics of many quantities at once: rank-normalised split
:math:`\\hat R`, bulk and tail ESS, the ESS and MCSE of the mean, computed over blocks of
quantities by the kernels of :mod:`hamiltonia.diagnostics.batch_kernels`, with a cost
linear in the number of draws and the same numbers as the road of one quantity at a time
(:mod:`hamiltonia.diagnostics.rank_estimators`).

Why a second road
-----------------
The road of one quantity at a time pays, for each quantity, a few dozen NumPy calls and
kernel calls, and its sums run over sequences; that is nothing beside the draws of a long
run (4 chains of 300,000 draws) and most of the cost of many short ones: 1,024 chains of 80
draws of 100 parameters is 100 quantities of 2,048 split sequences of 40 draws. Here a
block of quantities costs a handful of calls:

* the split draws of the block, copied once from the draws ``(chains, draws, dim)``
  (:func:`_split_into`), and sorted by NumPy (its vectorised sort, in place, along the
  quantities' rows);
* the normal scores of the ranks and of the folded ranks, and both :math:`\\hat R`, by one
  kernel that looks every draw up in its sorted copy (:func:`~hamiltonia.diagnostics.
  batch_kernels._ranks_kernel`), no argsort;
* each ESS from the means of the sequences and the mean over them of their
  autocovariances at the first lags (``_means_kernel``, ``_lags_kernel``), Geyer's sequence
  in a kernel (``_geyer_kernel``); a quantity whose sequence goes on past the lags summed is
  summed further (:data:`~hamiltonia.diagnostics.rank_estimators._LAG_STEPS`), and past
  :data:`~hamiltonia.diagnostics.rank_estimators.DIRECT_LAGS` by FFT, as ArviZ;
* the tail ESS of the indicators :math:`[x \\le q]`, made inside the kernels from the draws
  and the two quantiles, which are read from the sorted draws (NumPy's ``"linear"``
  quantile, to the bit).

The blocks are a few MB, so that their arrays are made once per thread and stay in cache,
and the threads (one a core) take contiguous ranges of quantities. The numbers are
ArviZ's: the ranks, the ties' average ranks and their scores to the bit, the sums in
another order (an :math:`\\hat R` or ESS moved by about :math:`10^{-15}` of itself; the
tests hold them to ``arviz_stats`` at a relative :math:`10^{-10}`). A quantity with a draw
that is not finite takes the road of one quantity
(:func:`~hamiltonia.diagnostics.univariate._one`: nan for a NaN, ArviZ's own computation
for an infinite draw).
"""

from __future__ import annotations

import os
import threading

import numpy as np

from hamiltonia.diagnostics.estimator_kernels import _kernels
from hamiltonia.diagnostics.rank_estimators import (
    _LAG_STEPS,
    _autocov_fft,
    _blom_scores,
    _quantile_of,
    _score_table,
)

__all__ = ["BATCH_MAX_SIZE", "BLOCK_NUMBERS", "batched_diagnostics", "tail_ess", "takes_batched"]

#: Numbers (split draws, all the block's quantities) of a block: its arrays stay in cache,
#: and are made once per thread (new memory costs a page fault a page on first touch).
BLOCK_NUMBERS = 2**18
#: Most split draws of one quantity (chains x draws) that the compiled road computes by
#: blocks; a longer run takes the road of one quantity at a time
#: (:mod:`hamiltonia.diagnostics.rank_estimators`), whose work arrays are fewer: a block's
#: take eight numbers a draw per thread.
BATCH_MAX_SIZE = 2**22

_NO_THRESHOLDS = np.empty(0)

_HALVES: dict[int, np.ndarray] = {}
_HALVES_LOCK = threading.Lock()


def _half_table(size: int) -> np.ndarray:
    """The normal scores of the ranks :math:`r = 3/2, 5/2, \\ldots, N - 1/2` among ``size``
    numbers (a tie of an even count has such a rank), by the arithmetic of
    :func:`~hamiltonia.diagnostics.rank_estimators._blom_scores`; the last two sizes kept."""
    with _HALVES_LOCK:
        table = _HALVES.get(size)
        if table is None:
            table = _blom_scores(np.arange(1, size, dtype=float) + 0.5, size)
            if len(_HALVES) >= 2:
                _HALVES.pop(next(iter(_HALVES)))
            _HALVES[size] = table
        return table


def takes_batched(chains: int, draws: int) -> bool:
    """Whether the compiled road computes quantities of ``chains`` chains of ``draws`` draws
    by blocks (this module): at least 4 draws a chain and at most :data:`BATCH_MAX_SIZE`
    split draws (read at each call, so tests can force either road)."""
    return draws >= 4 and chains >= 1 and 2 * chains * (draws // 2) <= BATCH_MAX_SIZE


def _split_into(out: np.ndarray, x: np.ndarray) -> None:
    """Write the chains of each quantity of ``x`` ``(quantities, m, n)`` cut in halves, as
    ArviZ cuts them (first halves, then second halves; the middle draw of an odd count left
    out), to ``out`` ``(quantities, 2m, n // 2)``."""
    m, n = x.shape[1], x.shape[2]
    h = n // 2
    out[:, :m] = x[:, :, :h]
    out[:, m:] = x[:, :, n - h :]


def _ess(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """ArviZ's ESS of each quantity's split sequences ``values`` ``(quantities, rows, h)``
    (of their indicators :math:`[x \\le q_j]` where ``thresholds`` is not empty): the draws'
    number where they are all equal, else Geyer's, from the lags summed directly in steps
    (:data:`~hamiltonia.diagnostics.rank_estimators._LAG_STEPS`), by FFT past them."""
    kernels = _kernels()
    count, rows, h = values.shape
    means, flat = kernels.batch_means(values, thresholds)
    out = np.where(flat, float(rows * h), np.nan)
    todo = np.flatnonzero(~flat)
    if not todo.size:
        return out
    acov = np.empty((count, 0))
    part, part_q, part_m = values, thresholds, means
    if todo.size < count:
        part, part_m = values[todo], means[todo]
        part_q = thresholds[todo] if thresholds.size else thresholds
    acov = acov[todo]
    for lags in _LAG_STEPS:
        acov = np.hstack((acov, kernels.batch_lags(part, part_q, part_m, acov.shape[1], lags)))
        ess, more = kernels.batch_geyer(acov, part_m, h)
        out[todo] = ess
        if not more.any():
            return out
        keep = np.flatnonzero(more)
        todo, acov, part, part_m = todo[keep], acov[keep], part[keep], part_m[keep]
        part_q = part_q[keep] if part_q.size else part_q
    # Past the direct lags: every lag by FFT, as ArviZ (the sequence then ends within them).
    for k, j in enumerate(todo):
        y = part[k]
        if part_q.size:
            y = (y <= part_q[k]).astype(float)
        full = _autocov_fft(y - part_m[k][:, None]).mean(axis=0)
        out[j] = kernels.batch_geyer(full[None], part_m[k][None], h)[0][0]
    return out


def tail_ess(split: np.ndarray, q_low: np.ndarray, q_high: np.ndarray) -> np.ndarray:
    """ArviZ's tail ESS of each quantity's split draws ``split`` ``(quantities, rows, h)``
    at its quantiles ``q_low`` and ``q_high``: the smaller ESS of the indicators
    :math:`[x \\le q]` (Python's ``min``, as ArviZ: a nan first is kept, a nan second is
    not)."""
    low = _ess(split, np.asarray(q_low, dtype=float).reshape(-1))
    high = _ess(split, np.asarray(q_high, dtype=float).reshape(-1))
    return np.where(high < low, high, low)


def _tail_thresholds(ordered: np.ndarray, x: np.ndarray, prob: float) -> tuple:
    """The two quantiles of the tail ESS of each quantity: from its sorted split draws
    ``ordered`` where they are all its draws (an even count a chain), with NumPy's
    arithmetic, else ``np.quantile`` of its draws ``x``."""
    low, high = sorted((prob, 1 - prob))
    size = ordered.shape[1]
    if x.shape[2] % 2 == 0:
        return tuple(
            np.asarray(_quantile_of(lambda i: ordered[:, i], size, p), dtype=float)
            for p in (low, high)
        )
    flat = x.reshape(x.shape[0], -1)
    return tuple(np.quantile(flat, p, axis=1) for p in (low, high))


def _block(x: np.ndarray, names: tuple, prob: float, buffers: tuple) -> np.ndarray:
    """The diagnostics ``names`` ``(quantities, len(names))`` of the quantities ``x``
    ``(quantities, m, n)``, finite ones or not (those that are not are replaced by the
    caller), in the arrays ``buffers``."""
    kernels = _kernels()
    count, m, n = x.shape
    h = n // 2
    size = 2 * m * h
    split_all, ordered_all, z_all, keys_all = buffers[:4]
    split, ordered = split_all[:count], ordered_all[:count]
    _split_into(split, x)
    r_hat = None
    if {"r_hat", "ess_bulk"} & set(names):
        # Each draw's place in the order, by NumPy's sort of keys that hold it.
        z, keys = z_all[:count], keys_all[:count]
        bits = max(int(size - 1).bit_length(), 1)
        kernels.batch_keys(split, bits, keys)
        keys.sort(axis=1)
        table, half = _score_table(size), _half_table(size)
        scratch, places = buffers[4:]
        r_hat = kernels.batch_ranks(split, keys, bits, table, half, z, ordered, scratch, places)
    else:
        ordered[...] = split.reshape(count, size)
        ordered.sort(axis=1)
    out = np.full((count, len(names)), np.nan)
    for k, name in enumerate(names):
        if name == "r_hat":
            out[:, k] = r_hat if m >= 2 else np.nan
        elif name == "ess_bulk":
            out[:, k] = _ess(z, _NO_THRESHOLDS)
        elif name == "ess_tail":
            out[:, k] = tail_ess(split, *_tail_thresholds(ordered, x, prob))
        elif name in ("ess_mean", "mcse_mean"):
            ess_mean = _ess(split, _NO_THRESHOLDS)
            if name == "ess_mean":
                out[:, k] = ess_mean
            else:
                # Each quantity's own: NumPy's sums over a block run in another order, and
                # a constant quantity's sd would come out a rounding away from 0.
                sd = np.array([np.std(x[i], ddof=1) for i in range(count)])
                out[:, k] = sd / np.sqrt(ess_mean)
        else:
            raise ValueError(f"unknown diagnostic {name!r}")
    return out


def _finite(x: np.ndarray, ordered_ends: tuple) -> np.ndarray:
    """Whether every draw of each quantity is finite, from the least and greatest sorted
    split draw (NaN sorts last) and, for an odd count, the middle draws left out of the
    split."""
    first, last = ordered_ends
    ok = np.isfinite(first) & np.isfinite(last)
    n = x.shape[2]
    if n % 2 == 1:
        ok &= np.isfinite(x[:, :, n // 2]).all(axis=1)
    return ok


def _threads(blocks: int) -> int:
    """Threads for ``blocks`` blocks: one a core, at most one a block."""
    return max(min(os.cpu_count() or 1, blocks), 1)


def batched_diagnostics(flat: np.ndarray, names: tuple, prob: float) -> tuple:
    """The diagnostics ``names`` (among ``r_hat``, ``ess_bulk``, ``ess_tail``,
    ``ess_mean``, ``mcse_mean``) of each quantity of ``flat`` ``(quantities, chains,
    draws)``, at least 4 draws, computed by blocks of quantities over threads (module
    docs): ``(values, finite)``, ``values`` ``(quantities, len(names))`` ArviZ's numbers
    where ``finite`` (every draw of the quantity finite), to be computed by the road of one
    quantity elsewhere (:func:`~hamiltonia.diagnostics.univariate._one`); an
    :math:`\\hat R` of one chain is nan."""
    from concurrent.futures import ThreadPoolExecutor

    count, m, n = flat.shape
    h = n // 2
    size = 2 * m * h
    per = max(1, min(count, BLOCK_NUMBERS // max(size, 1)))
    _kernels()  # compiled (or loaded) once, before the threads ask for it
    if {"r_hat", "ess_bulk"} & set(names):
        _score_table(size), _half_table(size)
    threads = _threads(-(-count // per))
    ranges = np.array_split(np.arange(count), threads)
    values = np.full((count, len(names)), np.nan)
    finite = np.zeros(count, dtype=bool)

    def work(own: np.ndarray) -> None:
        if not own.size:
            return
        buffers = (np.empty((per, 2 * m, h)), np.empty((per, size)),
                   np.empty((per, 2 * m, h)), np.empty((per, size), np.uint64),
                   np.empty((2, size)), np.empty((2, size), np.int64))  # fmt: skip
        last = int(own[-1]) + 1
        for start in range(int(own[0]), last, per):
            stop = min(start + per, last)
            x = flat[start:stop]
            values[start:stop] = _block(x, names, prob, buffers)
            ordered = buffers[1][: stop - start]
            finite[start:stop] = _finite(x, (ordered[:, 0], ordered[:, -1]))

    if threads == 1:
        work(ranges[0])
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(work, ranges))
    if m < 2 and "r_hat" in names:
        values[:, names.index("r_hat")] = np.nan  # R-hat compares chains
    return values, finite
