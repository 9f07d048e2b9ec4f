"""Problems of a finished run that a user must not miss, as data and as warnings.

After every run :func:`hamiltonia.sample` checks the draws and statistics as Stan's
``diagnose`` and ArviZ do, and warns (:class:`SamplingWarning`) for each problem found;
:meth:`hamiltonia.Result.diagnose` returns the same problems as :class:`Problem` records.

The checks and their thresholds:

``improper``
    A coordinate that runs away: the log density looks unbounded (or flat without end)
    along it, an improper posterior (a scale left unconstrained, a missing prior). Judged in
    the coordinates the sampler moves in (the unconstrained ones of an :class:`hamiltonia.Model`,
    recovered from its reported values), by :func:`runaways`: a coordinate is named when

    1. its draws go *far*: :math:`|z| \\ge 10^{10}` (:data:`RUNAWAY_MAGNITUDE`), where no
       posterior HMC could be asked to explore lives, or, for a coordinate mapped through
       ``exp`` (a positive, bounded or interval parameter), :math:`|z| \\ge 700`
       (:data:`EXP_EDGE`), past which its value leaves double precision (:math:`e^{709}`
       overflows, :math:`e^{-745}` underflows), or beyond any number at all (a value pinned
       on its bound);
    2. they are not a settled posterior out there: the chains disagree (rank-normalised split
       :math:`\\hat R` above :data:`R_HAT_MAX`, each chain's halves compared, so that one
       drifting chain counts) or the far draws spread over a decade or more of magnitude;
    3. and where they spread over decades, the log density does not fall as they go: the
       least-squares slope of :math:`\\log p` on :math:`\\log_{10}|z|` over the far draws is
       above :math:`-`:data:`RUNAWAY_DECAY` nats per decade. A proper density's tail falls
       faster than :math:`1/|z|`, by :math:`\\ln 10 \\approx 2.3` nats per decade at
       least; a flat direction gives a slope near 0, an unbounded one a positive slope.

    A posterior at a huge but settled scale (chains that agree within a decade) is not
    named, nor a proper heavy tail (its log density falls); when nothing is far the check
    costs the least and greatest draw of each parameter, one pass shared with the checks of
    frozen chains and fixed values.

``divergences``
    Any divergent transition after warm-up (Betancourt 2017, *A conceptual introduction to
    Hamiltonian Monte Carlo*, §6.2): the sampler met curvature its step size cannot follow,
    and the draws may miss part of the posterior.
``r_hat``
    Rank-normalised split :math:`\\hat R` above 1.01 for some parameter (Vehtari et al. 2021);
    a run of one chain has no :math:`\\hat R` (it compares chains) and is not judged by it.
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
``stuck``
    A chain that barely moved: its step size ended 1000 times below the chains' median
    (:mod:`~hamiltonia.diagnostics.stuck`).
``resonance``
    A run of fixed trajectory length (the same :math:`L \\ge 2` steps every iteration, a
    step size not jittered: not NUTS, not ``n_steps_jitter`` or ``step_size_jitter``) in
    which some chain barely moves along a linear combination of the parameters: its lag-1
    autocorrelation is at least :data:`~hamiltonia.diagnostics.resonance.RESONANCE_RHO`
    = 0.9 (each trajectory ends near where it started), or that of its square is while the
    combination itself alternates in sign (each ends near its mirror image), and the
    autoregression's ESS :math:`N (1 - \\rho) / (1 + \\rho)` is below 100 per chain. The
    trajectory resonates with a period of the posterior (or is far too short for that
    direction); the coordinates, each a mix of directions, may pass :math:`\\hat R` and the
    ESS checks while their Monte Carlo standard errors are too small. The combinations are
    each chain's time-lagged independent components and the coordinates
    (:mod:`hamiltonia.diagnostics.resonance`).
``weights``
    Draws of a weighted (shadow) sampler whose importance weight is not finite: the
    shadow Hamiltonian is not finite there, and weighted estimates are undefined.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "COLLAPSE_FACTOR",
    "ESS_PER_CHAIN_MIN",
    "EXP_EDGE",
    "E_BFMI_MIN",
    "RUNAWAY_DECAY",
    "RUNAWAY_MAGNITUDE",
    "R_HAT_MAX",
    "Problem",
    "SamplingWarning",
    "diagnose",
    "e_bfmi",
    "runaways",
    "warn",
]

R_HAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100.0
E_BFMI_MIN = 0.3
COLLAPSE_FACTOR = 1e3
#: :math:`|z|` of an unconstrained coordinate from which its draws are *far* (``improper``).
RUNAWAY_MAGNITUDE = 1e10
#: :math:`|z|` of a coordinate mapped through ``exp`` from which its value leaves double
#: precision (``improper``).
EXP_EDGE = 700.0
#: Nats per tenfold growth of :math:`|z|` by which the log density must fall over far draws
#: spread over decades for them to be a proper tail (``improper``); a proper tail falls by
#: :math:`\ln 10` at least.
RUNAWAY_DECAY = 1.0

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
        Which check found it: ``"improper"``, ``"divergences"``, ``"r_hat"``,
        ``"ess_bulk"``, ``"ess_tail"``, ``"e_bfmi"``, ``"tree_depth"``, ``"step_size"``,
        ``"frozen"``, ``"stuck"``, ``"weights"`` or ``"resonance"``.
    message : str
        What a user reads: what was found, the threshold, and what to try.
    value : float
        The worst value found (largest :math:`|z|` of a runaway, count of divergences,
        largest :math:`\\hat R`, smallest ESS per chain, smallest E-BFMI, largest collapse
        factor, number of frozen chains, number of draws without a finite weight, largest
        lag-1 autocorrelation of a resonance).
    threshold : float
        The threshold the value crossed.
    where : tuple of str
        The parameters (``improper``, ``r_hat``, ESS, ``resonance``) or chains
        (``chain 0``...) concerned.
    """

    check: str
    message: str
    value: float
    threshold: float
    where: tuple = field(default=())


def e_bfmi(energy: np.ndarray, compiled: bool | None = None) -> np.ndarray:
    """E-BFMI of each chain from the energies of shape ``(chains, draws)`` (see the module
    docstring); ``nan`` for a chain of fewer than two draws or constant energy.

    ``compiled``: whether to take the diagnostics' compiled road
    (:data:`~hamiltonia.diagnostics.estimator_kernels.COMPILED_MIN_SIZE`; by default, when the
    energies alone are that many), the same numbers in fewer passes."""
    from hamiltonia.diagnostics import estimator_kernels

    e = np.asarray(energy, dtype=float)
    if e.ndim != 2:
        raise ValueError(f"energy must have shape (chains, draws), got {e.shape}")
    if e.shape[1] < 2:
        return np.full(e.shape[0], np.nan)
    if estimator_kernels._compiled_road(e) if compiled is None else compiled:
        # Contiguous, as a run's energies are: one compiled form for every call.
        return estimator_kernels._kernels().bfmi(np.ascontiguousarray(e))
    # A chain with an energy that is not finite has no E-BFMI (nan), without a warning.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        centred = e - e.mean(axis=1, keepdims=True)
        # ArviZ's estimate of energies scaled per chain first: those of a log density near
        # the float limit must not overflow when squared (the ratio does not change).
        scale = np.maximum(centred.max(axis=1, keepdims=True), -centred.min(axis=1, keepdims=True))
        centred /= np.where(scale > 0, scale, 1.0)
        # arviz_stats' bfmi (the mean squared step over the variance), without importing
        # arviz_stats (a second, at the end of every run), and in place: a long run's
        # energies are as large as one parameter's draws.
        steps = np.diff(centred, axis=1)
        np.square(steps, out=steps)
        bfmi = steps.mean(axis=1) / np.var(centred, axis=1, ddof=1)
    return np.where(scale[:, 0] > 0, bfmi, np.nan)


def _coordinates(result):
    """The draws in the coordinates the sampler moved in, ``(chains, draws, k)``, their
    names and the :math:`|z|` from which each is far: the draws themselves (far from
    :data:`RUNAWAY_MAGNITUDE`) for a target that reports its coordinates; for a model with
    constrained blocks (a target with a ``layout``), the unconstrained coordinates recovered
    from its reported values, far from :data:`EXP_EDGE` for an elementwise constrained block
    (its value is ``exp`` of the coordinate, up to a bound and a scale). A value pinned on
    its bound, where the coordinate went beyond any number, comes back infinite."""
    draws = result.draws
    target = getattr(result, "_target", None)
    # A split target (hamiltonia.targets.split) holds the model as its base.
    layout = getattr(target, "layout", None) or getattr(
        getattr(target, "base", None), "layout", None
    )
    if layout is None or draws.shape[-1] < layout.size:
        return draws, tuple(result.names), np.full(draws.shape[-1], RUNAWAY_MAGNITUDE)
    batch = draws.shape[:-1]
    values = layout.unflatten(draws[..., : layout.size])
    parts, names, edges = [], [], []
    start = 0
    with np.errstate(all="ignore"):
        for name, param in layout.params.items():
            size = param.unconstrained_size
            # A block whose bounds read others is inverted at its own draws' bounds.
            constraint = layout.constraint_at(name, values, batch)
            parts.append(np.reshape(constraint.inverse(values[name]), (*batch, size)))
            # Identity coordinates are the model's own numbers; an elementwise constraint
            # maps its coordinate through exp (positive, bounded, interval).
            identity = param.constraint.description == "real"
            elementwise = param.constraint.event_ndim == 0
            edge = EXP_EDGE if elementwise and not identity else RUNAWAY_MAGNITUDE
            own = layout.names[start : start + param.size]
            names.extend(own if size == param.size else [name] * size)
            edges.extend([edge] * size)
            start += param.size
    return np.concatenate(parts, axis=-1), tuple(names), np.asarray(edges)


def _runs_away(z: np.ndarray, edge: float, lp) -> bool:
    """Whether the draws ``z`` ``(chains, draws)`` of one coordinate, some of them far (at
    least ``edge`` in magnitude), run away (criteria 2 and 3 of the ``improper`` check)."""
    from hamiltonia.diagnostics.rank_estimators import _Quantity

    magnitude = np.abs(z)
    far = magnitude >= edge
    out = magnitude[far]
    if not np.all(np.isfinite(out)):
        return True  # beyond any number: no proper posterior goes there
    decades = float(np.log10(out.max() / out.min()))
    if decades < 1.0:
        # Around one magnitude: settled if the chains agree there (each chain's halves too).
        if z.shape[1] < 4:
            return True
        return not _Quantity(np.ascontiguousarray(z, dtype=float)).rhat() <= R_HAT_MAX
    if lp is None:
        return True
    u, v = np.log10(out), np.asarray(lp, dtype=float)[far]
    keep = np.isfinite(v)
    u, v = u[keep], v[keep]
    if u.size < 2 or np.ptp(u) == 0:
        return True
    slope = np.sum((u - u.mean()) * (v - v.mean())) / np.sum((u - u.mean()) ** 2)
    return not slope <= -RUNAWAY_DECAY


def runaways(result, extremes=None) -> Problem | None:
    """The ``improper`` problem of ``result`` (module docstring), or ``None``: the
    coordinates that run away, the log density looking unbounded or flat along them.
    ``extremes``: :func:`~hamiltonia.diagnostics.estimator_kernels.extremes` of the draws, when
    already computed."""
    if result.n_draws == 0:
        return None
    z, names, edges = _coordinates(result)
    if z is not result.draws or extremes is None:
        from hamiltonia.diagnostics.estimator_kernels import extremes as extremes_of

        # One pass over the draws: nothing is far in a healthy run, and the check then
        # costs no more.
        extremes = extremes_of(z)
    low, high, _ = extremes
    reach = np.maximum(high.max(axis=0), -low.min(axis=0))  # NaN draws are not far
    candidates = np.flatnonzero(reach >= edges)
    if not candidates.size:
        return None
    lp = result.stats.get("lp")
    found = [j for j in candidates if _runs_away(z[..., j], edges[j], lp)]
    if not found:
        return None
    # One name per parameter (a block's coordinates may share it), farthest first.
    worst: dict[str, float] = {}
    for j in sorted(found, key=lambda j: -np.nan_to_num(reach[j], nan=np.inf)):
        value = float(np.nan_to_num(reach[j], nan=np.inf))
        worst.setdefault(names[j], value)
    where = tuple(worst)
    largest = max(worst.values())
    threshold = float(min(edges[j] for j in found))
    return Problem(
        "improper",
        f"the log density looks unbounded (an improper posterior): {_list(where)} ran away "
        f"to {largest:.3g} in the unconstrained space, beyond {threshold:g}, where no proper "
        "posterior puts its mass, without settling there. Give "
        f"{'it' if len(where) == 1 else 'them'} a proper prior or the right constraint (a "
        "scale needs hm.positive() and a prior), or look for a term missing from the log "
        "density.",
        largest,
        threshold,
        where,
    )


def _list(names) -> str:
    names = list(names)
    shown = ", ".join(names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


def _chains(indices) -> tuple:
    return tuple(f"chain {int(i)}" for i in indices)


def diagnose(result, summary=None) -> list[Problem]:
    """The problems of ``result`` (a :class:`hamiltonia.Result`), worst first within each
    check, a runaway (an improper posterior) first; an empty list for a healthy run.

    The ESS and :math:`\\hat R` are read from ``summary`` (a table with the columns
    ``r_hat``, ``ess_bulk`` and ``ess_tail`` and one row per parameter, as
    ``result.summary()``) when given, else computed alone, without the rest of the table,
    each value exact or a bound on the right side of its threshold that decides the check as
    the exact value would (:func:`~hamiltonia.diagnostics.screening.screened_convergence`):
    the values a problem reports are exact."""
    problems: list[Problem] = []
    chains, n = result.n_chains, result.n_draws
    stats = result.stats
    if n == 0:
        return problems

    from hamiltonia.diagnostics import estimator_kernels

    # One pass over the draws for the frozen chains, the fixed values and the runaways.
    least, most, has_nan = estimator_kernels.extremes(result.draws)
    improper = runaways(result, (least, most, has_nan))
    if improper is not None:
        problems.append(improper)

    diverging = np.asarray(stats.get("diverging", np.zeros((chains, n))), dtype=bool)
    count = int(diverging.sum())
    if count:
        share = count / diverging.size
        thin = int(result.attrs.get("thin", 1) or 1)
        # A thinned draw's flag says whether any of its iterations diverged: the count is of
        # draws, not of transitions.
        what = (
            f"{count} divergent transitions after warm-up ({share:.1%} of "
            f"{diverging.size} iterations)"
            if thin == 1
            else f"divergent transitions after warm-up in {count} of {diverging.size} kept "
            f"draws ({share:.1%}; a draw is kept every {thin} iterations)"
        )
        problems.append(
            Problem(
                "divergences",
                f"{what}: the draws may miss part of the posterior. "
                "Raise target_accept (a smaller step size), adapt a metric, or "
                "reparameterise the model.",
                float(count),
                0.0,
                _chains(np.flatnonzero(diverging.any(axis=1))),
            )
        )

    if result.log_weights is not None:
        unweighted = ~np.isfinite(np.asarray(result.log_weights, dtype=float))
        if unweighted.any():
            where = _chains(np.flatnonzero(unweighted.any(axis=1)))
            problems.append(
                Problem(
                    "weights",
                    f"{int(unweighted.sum())} of {unweighted.size} draws have an importance "
                    f"weight that is not finite ({_list(where)}): "
                    "the shadow Hamiltonian is not finite at them (its finite differences "
                    "reach where the log density is not), so the weighted estimates are "
                    "undefined. Use a smaller step size, or a sampler without weights.",
                    float(unweighted.sum()),
                    0.0,
                    where,
                )
            )

    # Every draw equal to the chain's first: no NaN, and least and greatest equal.
    frozen = np.flatnonzero(np.all((least == most) & ~has_nan, axis=1))
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

    # A chain whose step size collapsed from its own start is reported above; the others
    # that barely moved, by comparison with the other chains.
    shown = frozen
    if initial is not None and "step_size" in stats:
        shown = np.union1d(frozen, collapsed)
    from hamiltonia.diagnostics.stuck import stuck_chains

    stuck_rows, stuck = stuck_chains(result, least, most, has_nan, shown)
    if stuck is not None:
        problems.append(Problem("stuck", stuck, float(stuck_rows.size), 0.0, _chains(stuck_rows)))
    idle = sorted(set(frozen.tolist()) | set(stuck_rows.tolist()))

    limit = result.attrs.get("max_tree_depth")
    if limit is not None and "tree_depth" in stats:
        full = np.asarray(stats["tree_depth"]) >= int(limit)
        if full.any():
            share = full.mean()
            thin = int(result.attrs.get("thin", 1) or 1)
            # A thinned draw keeps its last iteration's depth: a sample of the iterations.
            counted = (
                f"{int(full.sum())} of {full.size} iterations after warm-up ({share:.1%})"
                if thin == 1
                else f"the last iteration of {int(full.sum())} of {full.size} kept draws "
                f"({share:.1%}; a draw is kept every {thin} iterations)"
            )
            problems.append(
                Problem(
                    "tree_depth",
                    f"{counted} stopped at the maximum tree depth of {int(limit)}: their "
                    "trajectories were cut short, which costs efficiency (not validity). Raise "
                    "max_tree_depth, adapt a metric, or reparameterise the model.",
                    float(share),
                    0.0,
                    _chains(np.flatnonzero(full.any(axis=1))),
                )
            )

    # The energy is the Hamiltonian's only where a momentum is drawn (not random walk), and
    # E-BFMI judges a fresh draw: a partial refresh keeps most of the momentum by design,
    # so the energy moves slowly whatever the model.
    fresh = not result.attrs.get("momentum_memory", 0.0) > 0.0
    if fresh and "energy" in stats and np.any(np.asarray(stats.get("n_grad", 1)) > 0):
        bfmi = e_bfmi(stats["energy"], compiled=estimator_kernels._compiled_road(result.draws))
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

    resonance = _resonance(result)
    if resonance is not None:
        problems.append(resonance)

    if n < 4:  # split R-hat and ESS need at least two halves of two draws
        return problems
    if summary is not None:
        names = [str(i) for i in summary.index]
        table = {c: np.asarray(summary[c], dtype=float) for c in ("r_hat", "ess_bulk", "ess_tail")}
    else:
        names = [str(i) for i in result.names]
        table = _convergence(result)
    # A value equal in every draw of every chain is fixed by the model (the first entry of
    # a Cholesky factor of a correlation matrix), not a sampling problem; a chain that
    # never moved is reported above.
    fixed = np.zeros(len(names), dtype=bool)
    if result.draws.shape[-1] == len(names):
        fixed = (least.min(axis=0) == most.max(axis=0)) & ~has_nan.any(axis=0)
    r_hat = np.where(fixed, 1.0, table["r_hat"])
    # One chain has no other to be compared with: its R-hat is nan, not a disagreement
    # (the frozen chain and the ESS checks still judge it).
    high = np.flatnonzero(~(r_hat <= R_HAT_MAX)) if chains > 1 else np.empty(0, dtype=int)
    if high.size:
        # A chain that never moved gives no within-chain variance: R-hat is nan or inf.
        r_hat = np.where(np.isnan(r_hat), np.inf, r_hat)
        order = high[np.argsort(-r_hat[high], kind="stable")]
        worst = float(r_hat[order[0]])
        # Chains that never left their start disagree with the others for that reason: more
        # draws would not help, and the advice says so.
        advice = (
            f"The chains that did not move ({_list(_chains(idle))}, above) explain it: drop "
            "them or rerun from other initial points; longer chains would not help."
            if idle
            else "Run longer chains, or reparameterise the model."
        )
        problems.append(
            Problem(
                "r_hat",
                f"r_hat above {R_HAT_MAX} for {order.size} of {len(names)} parameters "
                f"({_list(names[i] for i in order)}; largest {worst:.4g}): the chains "
                f"disagree. {advice}",
                worst,
                R_HAT_MAX,
                tuple(names[i] for i in order),
            )
        )
    for column in ("ess_bulk", "ess_tail"):
        per_chain = np.where(fixed, np.inf, table[column] / chains)
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
                    "unreliable. "
                    + (
                        f"The chains that did not move ({_list(_chains(idle))}, above) explain "
                        "it: more draws would not help."
                        if idle
                        else "Run more draws."
                    ),
                    worst,
                    ESS_PER_CHAIN_MIN,
                    tuple(names[i] for i in order),
                )
            )
    return problems


def _resonance(result) -> Problem | None:
    """The ``resonance`` problem of a fixed-length run (module docstring), or ``None``."""
    from hamiltonia.diagnostics.resonance import RESONANCE_RHO, find_resonance

    found = find_resonance(result, ESS_PER_CHAIN_MIN)
    if found is None:
        return None
    names = [str(result.names[i]) for i in found.parameters]
    chains = _chains(found.chains)
    ends = "the mirror image of their start" if found.square else "where they started"
    what = "its square's lag-1 autocorrelation" if found.square else "lag-1 autocorrelation"
    return Problem(
        "resonance",
        f"the fixed trajectory length of {found.n_steps} steps resonates in {_list(chains)}: "
        f"along {'' if len(names) == 1 else 'some combination of '}{_list(names)} the "
        f"trajectories end near {ends} ({what} {found.rho:.3g}, about {found.ess:.3g} "
        f"effective draws per chain, below {ESS_PER_CHAIN_MIN:g}), and the error bars of "
        f"estimates that involve {'it' if len(names) == 1 else 'them'} are too small. Draw "
        "the number of steps or the step size at random (n_steps_jitter=0.5 or "
        "step_size_jitter=0.2), or sample with nuts.",
        found.rho,
        RESONANCE_RHO,
        tuple(names),
    )


def _convergence(result) -> dict:
    """``r_hat``, ``ess_bulk``, ``ess_tail`` per parameter as the checks need them: exact,
    or a bound on the right side of its threshold (the result's own, where it is a
    :class:`hamiltonia.Result`, else as its summary would give them)."""
    own = getattr(result, "_convergence", None)
    if own is not None:
        return own(decide=(R_HAT_MAX, ESS_PER_CHAIN_MIN))
    from hamiltonia.diagnostics.screening import screened_convergence
    from hamiltonia.diagnostics.weights import kish_factor

    factor = kish_factor(result.log_weights)
    table, _ = screened_convergence(
        result.draws, R_HAT_MAX, ESS_PER_CHAIN_MIN * result.n_chains / factor
    )
    for column in ("ess_bulk", "ess_tail"):
        table[column] = table[column] * factor
    return table


def warn(problems, stacklevel: int = 2) -> None:
    """Issue one :class:`SamplingWarning` per problem."""
    for problem in problems:
        warnings.warn(problem.message, SamplingWarning, stacklevel=stacklevel + 1)
