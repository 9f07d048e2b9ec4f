"""Rank diagnostics per parameter: rank-normalised split :math:`\\hat R`, bulk and tail
effective sample sizes, Monte Carlo standard errors, and ESS per second and per gradient.

The diagnostics follow ArviZ (:mod:`arviz_stats`): rank-normalised split :math:`\\hat R`,
bulk and tail effective sample sizes, and Monte Carlo standard errors (Vehtari et al. 2021,
*Rank-normalization, folding, and localization: an improved R-hat*). :func:`rhat`,
:func:`ess` (``"bulk"``, ``"tail"``, ``"mean"``), :func:`mcse` (``"mean"``) and
:func:`convergence` give ArviZ's numbers by the road
:mod:`hamiltonia.diagnostics.rank_estimators` describes: by the compiled kernels
(:mod:`hamiltonia.diagnostics.estimator_kernels`) from
:data:`~hamiltonia.diagnostics.estimator_kernels.COMPILED_MIN_SIZE` numbers on, by NumPy
below. On the compiled road the quantities are computed by blocks
(:mod:`hamiltonia.diagnostics.batched`: a few calls for a block of quantities, whatever
their chains, so that 1,024 chains of 80 draws cost what 4 chains of 20,480 do), or one at
a time for a run longer than
:data:`~hamiltonia.diagnostics.batched.BATCH_MAX_SIZE` split draws a quantity. Quantities
with an infinite value, and the other methods, are ArviZ's own computation
(``arviz_stats`` imported on first use). The parameters are spread over threads when the
draws are many.

Arrays of draws have shape ``(chains, draws, dim)`` (or ``(chains, draws)`` for one
quantity).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from hamiltonia.diagnostics.batched import batched_diagnostics, takes_batched
from hamiltonia.diagnostics.estimator_kernels import _compiled_road, _kernels
from hamiltonia.diagnostics.rank_estimators import _Quantity

__all__ = [
    "convergence",
    "ess",
    "ess_per_gradient",
    "ess_per_second",
    "mcse",
    "rhat",
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


def _blocks(flat: np.ndarray, names: tuple, prob: float) -> np.ndarray:
    """The diagnostics ``names`` ``(quantities, len(names))`` of the quantities ``flat``
    ``(quantities, chains, draws)`` by blocks of quantities
    (:func:`~hamiltonia.diagnostics.batched.batched_diagnostics`), those with a draw that
    is not finite by :func:`_one`."""
    values, finite = batched_diagnostics(flat, names, prob)
    for i in np.flatnonzero(~finite):
        values[i] = _one(flat[i], names, prob)
    return values


def _diagnostics(draws: np.ndarray, names: tuple, prob: float | None = None) -> dict:
    """``{name: array}`` of the diagnostics ``names`` of each quantity of ``draws``, the
    quantities spread over threads when the draws are many: by blocks of quantities on the
    compiled road (:func:`~hamiltonia.diagnostics.batched.takes_batched`), else one at a
    time."""
    x = _chain_draw_last(draws)
    lead = x.shape[:-2]
    flat = x.reshape((-1, *x.shape[-2:])) if lead else x[None]
    if prob is None and "ess_tail" in names:
        prob = _ci_prob()
    count = flat.shape[0]
    compiled = _compiled_road(x)
    if compiled and count and takes_batched(*flat.shape[1:]):
        values = _blocks(flat, names, prob)
        return {name: values[:, k].reshape(lead) for k, name in enumerate(names)}
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


def ess_per_second(result, method: str = "bulk") -> np.ndarray:
    """ESS per second of post-warm-up sampling time, per parameter."""
    return ess(result.draws, method) / result.sampling_seconds


def ess_per_gradient(result, method: str = "bulk") -> np.ndarray:
    """ESS per gradient evaluation spent after warm-up, per parameter (``inf`` when the
    sampler uses no gradient)."""
    n_grad = float(np.sum(result.stats["n_grad"]))
    with np.errstate(divide="ignore"):
        return ess(result.draws, method) / n_grad
