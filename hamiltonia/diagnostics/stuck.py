"""The run's check of chains that barely moved (``stuck``,
:mod:`hamiltonia.diagnostics.checks`).

Chains share a metric and a target acceptance, so their adapted step sizes are alike; a
chain whose step size ended a thousand times below the others' started where the model is
hard to integrate (an exploding recursion, a funnel's neck) and stayed near there. Its
:math:`\\hat R` and ESS then say that it disagrees with the others, but more draws would not
help: the check names it, with its step size and the span of its draws, and the checks of
:math:`\\hat R` and ESS name it as their cause. Warm-up restarts such a chain where it can
(:meth:`hamiltonia.tuners.adaptation.WindowedMetric.end_window`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["STUCK_STEP_FACTOR", "stuck_chains"]

#: A chain whose step size is this many times below the chains' median is stuck: the
#: run's check names it, and warm-up restarts it
#: (:meth:`hamiltonia.tuners.adaptation.WindowedMetric.end_window`), by this one threshold.
STUCK_STEP_FACTOR = 1e3


def stuck_chains(result, least, most, has_nan, frozen, factor: float = STUCK_STEP_FACTOR) -> tuple:
    """The chains that moved, but barely: a final step size ``factor`` times or more
    below the chains' median (the chains share a metric and a target acceptance, so
    their step sizes are alike). Such a chain sat where it started (warm-up restarts one it
    catches, in :meth:`~hamiltonia.tuners.adaptation.WindowedMetric.end_window`); its R-hat
    and ESS say it disagrees, but more draws would not help. Returns the chains' indices
    and the message that names them (``None`` when there are none)."""
    chains = result.n_chains
    none = np.empty(0, dtype=int)
    if chains < 2:
        return none, None
    step = result.stats.get("step_size")
    if step is None:
        return none, None
    with np.errstate(invalid="ignore"):
        span = np.where(has_nan, np.nan, most - least).max(axis=-1)
    typical = float(np.nanmedian(span))
    final = np.asarray(step, dtype=float)[:, -1]
    typical_step = float(np.median(final))
    slow = ~(final * factor > typical_step)
    slow[np.asarray(frozen, dtype=int)] = False  # reported already
    where = np.flatnonzero(slow)
    if where.size == 0 or where.size == chains:
        return none, None
    parts = []
    for k in where:
        parts.append(f"chain {k}: step size {final[k]:.3g} (median {typical_step:.3g}), draws "
                     f"spanning {span[k]:.3g} (median {typical:.3g})")  # fmt: skip
    return where, (
        f"{where.size} of {chains} chains barely moved ({'; '.join(parts)}): they stayed "
        "near where they started, so their draws are not from the posterior and the R-hat "
        "and ESS below are theirs, not a lack of draws. Drop them, or rerun from other "
        "initial points (or reparameterise the model)."
    )
