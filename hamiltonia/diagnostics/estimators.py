"""Convergence and efficiency diagnostics.

Univariate diagnostics follow ArviZ (computed by :mod:`arviz_stats`): rank-normalised split
:math:`\\hat R`, bulk and tail effective sample sizes, and Monte Carlo standard errors
(Vehtari et al. 2021, *Rank-normalization, folding, and localization: an improved R-hat*).
The research's own metrics are added: the multivariate ESS of Vats, Flegal and Jones (2019)
by batch means, the Kish effective sample size of importance weights, their product for
weighted draws (Mongwe 2022, thesis, §3.4.1, eq. 3.12), and ESS per second and per gradient.

Arrays of draws have shape ``(chains, draws, dim)`` (or ``(chains, draws)`` for one
quantity).
"""

from __future__ import annotations

import os

import numpy as np

__all__ = [
    "combined_ess",
    "ess",
    "ess_per_gradient",
    "ess_per_second",
    "kish_ess",
    "mcse",
    "multivariate_ess",
    "pair_correlation",
    "pairs_of",
    "rhat",
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


# Above this many numbers the parameters are split over threads: rank normalisation is a
# sort per parameter, and NumPy's sort releases the GIL (2x on two cores for 4 x 20,000 x 100).
_THREADED_SIZE = 1_000_000


def _per_parameter(function, draws: np.ndarray) -> np.ndarray:
    """``function`` of the ``(..., chains, draws)`` array, per parameter, threaded by blocks
    of parameters when the draws are many."""
    x = _chain_draw_last(draws)
    if x.size < _THREADED_SIZE or x.ndim < 3 or x.shape[0] < 2:
        return np.asarray(function(x))
    from concurrent.futures import ThreadPoolExecutor

    workers = min(os.cpu_count() or 1, x.shape[0])
    blocks = np.array_split(np.arange(x.shape[0]), workers)
    with ThreadPoolExecutor(workers) as pool:
        parts = pool.map(lambda idx: np.asarray(function(x[idx])), blocks)
        return np.concatenate(list(parts))


def ess(draws: np.ndarray, method: str = "bulk") -> np.ndarray:
    """Effective sample size per parameter (``method`` ``"bulk"``, ``"tail"``, ``"mean"``...,
    as in :mod:`arviz_stats`)."""
    prob = None
    if method == "tail":
        from arviz_base import rcParams

        # arviz_stats.summary's own default: the quantiles of its credible interval.
        prob = rcParams["stats.ci_prob"]
    return _per_parameter(lambda x: _array_stats().ess(x, method=method, prob=prob), draws)


def rhat(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split :math:`\\hat R` per parameter."""
    return _per_parameter(lambda x: _array_stats().rhat(x, method="rank"), draws)


def mcse(draws: np.ndarray, method: str = "mean") -> np.ndarray:
    """Monte Carlo standard error per parameter of the mean (``"mean"``) or sd (``"sd"``)."""
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
    shape ``(dim,)``; the research's :math:`\\eta` is its maximum."""
    from scipy.stats import spearmanr

    draws = np.asarray(draws, dtype=float)
    pairs = pairs_of(draws.shape[0])
    eta = np.empty((len(pairs), draws.shape[2]))
    for k, (x, y) in enumerate(pairs):
        for i in range(draws.shape[2]):
            eta[k, i] = spearmanr(draws[x, :, i], draws[y, :, i]).statistic
    return eta.mean(axis=0)
