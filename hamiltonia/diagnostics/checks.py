"""Problems of a finished run that a user must not miss, as data and as warnings.

After every run :func:`hamiltonia.sample` checks the draws and statistics as Stan's
``diagnose`` and ArviZ do, and warns (:class:`SamplingWarning`) for each problem found;
:meth:`hamiltonia.Result.diagnose` returns the same problems as :class:`Problem` records.

The checks and their thresholds:

``divergences``
    Any divergent transition after warm-up (Betancourt 2017, *A conceptual introduction to
    Hamiltonian Monte Carlo*, §6.2): the sampler met curvature its step size cannot follow,
    and the draws may miss part of the posterior.
``r_hat``
    Rank-normalised split :math:`\\hat R` above 1.01 for some parameter (Vehtari et al. 2021).
``ess_bulk``, ``ess_tail``
    Bulk or tail effective sample size below 100 per chain (Vehtari et al. 2021 recommend
    at least 100 per chain before trusting :math:`\\hat R` and the MCSE).
``e_bfmi``
    Energy Bayesian fraction of missing information below 0.3 in some chain,

    .. math::

        \\text{E-BFMI} = \\frac{\\sum_{n=2}^N (E_n - E_{n-1})^2}{\\sum_{n=1}^N (E_n - \\bar E)^2},

    with :math:`E_n` the Hamiltonian of draw :math:`n` (Betancourt 2016, *Diagnosing
    suboptimal cotangent disintegrations in Hamiltonian Monte Carlo*): the momentum refresh
    explores the energy levels too slowly (heavy tails, a poorly adapted metric). Not
    checked for a partial refresh (``result.attrs["momentum_memory"] > 0``), which keeps most
    of the momentum by design, so that its energy moves slowly whatever the model.
``step_size``
    The adapted step size of some chain ended at least :data:`COLLAPSE_FACTOR` times below
    the one warm-up started from: the sampler fought a region it cannot integrate
    (often a funnel or a log density of absurd scale), and its draws barely move.
``frozen``
    A chain whose draws never changed: every proposal was rejected.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "COLLAPSE_FACTOR",
    "ESS_PER_CHAIN_MIN",
    "E_BFMI_MIN",
    "R_HAT_MAX",
    "Problem",
    "SamplingWarning",
    "diagnose",
    "e_bfmi",
    "warn",
]

R_HAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100.0
E_BFMI_MIN = 0.3
COLLAPSE_FACTOR = 1e3

# Parameters named in one message; the rest are counted.
_NAMED = 5


class SamplingWarning(UserWarning):
    """A finished run shows a problem (divergences, :math:`\\hat R`, low ESS, E-BFMI, a
    collapsed step size, a frozen chain): its draws may not represent the posterior."""


@dataclass(frozen=True)
class Problem:
    """One problem of a run.

    Attributes
    ----------
    check : str
        Which check found it: ``"divergences"``, ``"r_hat"``, ``"ess_bulk"``,
        ``"ess_tail"``, ``"e_bfmi"``, ``"step_size"`` or ``"frozen"``.
    message : str
        What a user reads: what was found, the threshold, and what to try.
    value : float
        The worst value found (count of divergences, largest :math:`\\hat R`, smallest ESS
        per chain, smallest E-BFMI, largest collapse factor, number of frozen chains).
    threshold : float
        The threshold the value crossed.
    where : tuple of str
        The parameters (``r_hat``, ESS) or chains (``chain 0``...) concerned.
    """

    check: str
    message: str
    value: float
    threshold: float
    where: tuple = field(default=())


def e_bfmi(energy: np.ndarray) -> np.ndarray:
    """E-BFMI of each chain from the energies of shape ``(chains, draws)`` (see the module
    docstring); ``nan`` for a chain of fewer than two draws or constant energy."""
    e = np.asarray(energy, dtype=float)
    if e.ndim != 2:
        raise ValueError(f"energy must have shape (chains, draws), got {e.shape}")
    if e.shape[1] < 2:
        return np.full(e.shape[0], np.nan)
    from arviz_stats.base import array_stats

    centred = e - e.mean(axis=1, keepdims=True)
    # ArviZ's estimate of energies scaled per chain first: those of a log density near the
    # float limit must not overflow when squared (the ratio does not change).
    scale = np.max(np.abs(centred), axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        bfmi = np.asarray(array_stats.bfmi(centred / np.where(scale > 0, scale, 1.0)))
    return np.where(scale[:, 0] > 0, bfmi, np.nan)


def _list(names) -> str:
    names = list(names)
    shown = ", ".join(names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


def _chains(indices) -> tuple:
    return tuple(f"chain {int(i)}" for i in indices)


def diagnose(result, summary=None) -> list[Problem]:
    """The problems of ``result`` (a :class:`hamiltonia.Result`), worst first within each
    check; an empty list for a healthy run. ``summary`` is ``result.summary()`` when already
    computed (the ESS and :math:`\\hat R` are read from it)."""
    problems: list[Problem] = []
    chains, n = result.n_chains, result.n_draws
    stats = result.stats
    if n == 0:
        return problems

    diverging = np.asarray(stats.get("diverging", np.zeros((chains, n))), dtype=bool)
    count = int(diverging.sum())
    if count:
        share = count / diverging.size
        problems.append(
            Problem(
                "divergences",
                f"{count} divergent transitions after warm-up ({share:.1%} of "
                f"{diverging.size} iterations): the draws may miss part of the posterior. "
                "Raise target_accept (a smaller step size), adapt a metric, or "
                "reparameterise the model.",
                float(count),
                0.0,
                _chains(np.flatnonzero(diverging.any(axis=1))),
            )
        )

    frozen = np.flatnonzero(np.all(result.draws == result.draws[:, :1], axis=(1, 2)))
    if n > 1 and frozen.size:
        problems.append(
            Problem(
                "frozen",
                f"{frozen.size} of {chains} chains never moved in {n} draws "
                f"({_list(_chains(frozen))}): every proposal was rejected. Check the step "
                "size and the initial point.",
                float(frozen.size),
                0.0,
                _chains(frozen),
            )
        )

    initial = result.attrs.get("step_size_initial")
    if initial is not None and "step_size" in stats:
        start = np.broadcast_to(np.asarray(initial, dtype=float), (chains,))
        final = np.asarray(stats["step_size"], dtype=float)[:, -1]
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = start / final
        collapsed = np.flatnonzero(np.isfinite(start) & (factor >= COLLAPSE_FACTOR))
        if collapsed.size:
            worst = float(np.max(factor[collapsed]))
            problems.append(
                Problem(
                    "step_size",
                    f"the step size collapsed in {_list(_chains(collapsed))}: it ended up to "
                    f"{worst:.3g} times below where warm-up started. The sampler met a region "
                    "it cannot integrate (a funnel, a log density of extreme scale); "
                    "reparameterise or rescale the model.",
                    worst,
                    COLLAPSE_FACTOR,
                    _chains(collapsed),
                )
            )

    # The energy is the Hamiltonian's only where a momentum is drawn (not random walk), and
    # E-BFMI judges a fresh draw: a partial refresh keeps most of the momentum by design,
    # so the energy moves slowly whatever the model.
    fresh = not result.attrs.get("momentum_memory", 0.0) > 0.0
    if fresh and "energy" in stats and np.any(np.asarray(stats.get("n_grad", 1)) > 0):
        bfmi = e_bfmi(stats["energy"])
        low = np.flatnonzero(bfmi < E_BFMI_MIN)
        if low.size:
            problems.append(
                Problem(
                    "e_bfmi",
                    f"E-BFMI below {E_BFMI_MIN} in {_list(_chains(low))} (lowest "
                    f"{np.nanmin(bfmi):.3f}): the momentum refresh explores the energy slowly. "
                    "Adapt a metric or reparameterise the model.",
                    float(np.nanmin(bfmi)),
                    E_BFMI_MIN,
                    _chains(low),
                )
            )

    if n < 4:  # split R-hat and ESS need at least two halves of two draws
        return problems
    if summary is None:
        summary = result.summary()
    names = [str(i) for i in summary.index]
    # A value equal in every draw of every chain is fixed by the model (the first entry of
    # a Cholesky factor of a correlation matrix), not a sampling problem; a chain that
    # never moved is reported above.
    fixed = np.zeros(len(names), dtype=bool)
    if result.draws.shape[-1] == len(names):
        fixed = np.all(result.draws == result.draws[:1, :1], axis=(0, 1))
    r_hat = np.where(fixed, 1.0, np.asarray(summary["r_hat"], dtype=float))
    high = np.flatnonzero(~(r_hat <= R_HAT_MAX))
    if high.size:
        # A chain that never moved gives no within-chain variance: R-hat is nan or inf.
        r_hat = np.where(np.isnan(r_hat), np.inf, r_hat)
        order = high[np.argsort(-r_hat[high], kind="stable")]
        worst = float(r_hat[order[0]])
        problems.append(
            Problem(
                "r_hat",
                f"r_hat above {R_HAT_MAX} for {order.size} of {len(names)} parameters "
                f"({_list(names[i] for i in order)}; largest {worst:.4g}): the chains "
                "disagree. Run longer chains, or reparameterise the model.",
                worst,
                R_HAT_MAX,
                tuple(names[i] for i in order),
            )
        )
    for column in ("ess_bulk", "ess_tail"):
        per_chain = np.where(fixed, np.inf, np.asarray(summary[column], dtype=float) / chains)
        low = np.flatnonzero(~(per_chain >= ESS_PER_CHAIN_MIN))
        if low.size:
            per_chain = np.where(np.isnan(per_chain), 0.0, per_chain)
            order = low[np.argsort(per_chain[low], kind="stable")]
            worst = float(per_chain[order[0]])
            kind = column.removeprefix("ess_")
            problems.append(
                Problem(
                    column,
                    f"{kind} ESS below {ESS_PER_CHAIN_MIN:g} per chain for {order.size} of "
                    f"{len(names)} parameters ({_list(names[i] for i in order)}; lowest "
                    f"{worst:.3g} per chain): the estimates of "
                    f"{'means and sds' if kind == 'bulk' else 'tail quantiles'} are "
                    "unreliable. Run more draws.",
                    worst,
                    ESS_PER_CHAIN_MIN,
                    tuple(names[i] for i in order),
                )
            )
    return problems


def warn(problems, stacklevel: int = 2) -> None:
    """Issue one :class:`SamplingWarning` per problem."""
    for problem in problems:
        warnings.warn(problem.message, SamplingWarning, stacklevel=stacklevel + 1)
