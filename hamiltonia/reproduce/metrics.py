"""The publications' figures of a run, by the names the experiment files use.

Each is computed the way the research computes it (:mod:`hamiltonia.diagnostics.publication`),
per chain where the research averages over runs, so that a figure comes with its spread over
the chains (the publications' "runs"):

========== ================================================================================
name       figure
========== ================================================================================
acceptance percentage of proposals accepted (the ``accepted`` statistic; thesis §3.4)
ess        mESS of each chain with the author's batch-size rule, averaged (eq. 3.10);
           times Kish's factor of the chain's importance weights for a shadow sampler
           (eq. 3.12); for an antithetic sampler the ESS of the pairs (eq. 8.1); 0 for a
           chain that never moved
t          seconds per chain of the retained iterations, burn-in excluded, as the author's
           code times a run: the run's own clock of its sampling iterations (no set-up,
           checks or file writing) times the chains it ran at once, over the chains (two
           chains for an antithetic pair); machines and libraries differ, so only ratios
           between the samplers of one experiment compare
ess_per_t  ess / t
rhat       the largest rank-normalised split :math:`\\hat R` over the parameters
avg_l      mean number of integration steps per retained iteration
step_size  mean step size of the retained iterations (the adapted one where adapted)
rank       an ARD target's features (numbered from 1 in the data's order, the intercept left
           out) from the most to the least relevant, by the posterior mean of their scale
           over all chains (thesis §9.3, Table 9.1;
           :func:`hamiltonia.targets.ard.feature_relevance`)
========== ================================================================================
"""

from __future__ import annotations

import numpy as np

from hamiltonia.diagnostics import publication

__all__ = ["HIGHER_IS_BETTER", "LABELS", "VERSION", "cell_metrics", "feature_ranking"]

#: Version of these definitions: a reproduction's cells written under another are computed
#: again from their run files when read (:func:`hamiltonia.reproduce.load_reproduction`).
VERSION = 3

#: Column headings of the metrics.
LABELS = {
    "acceptance": "AR (%)",
    "ess": "ESS",
    "t": "t (s)",
    "ess_per_t": "ESS/t",
    "rhat": "R̂ max",
    "avg_l": "avg L",
    "step_size": "ε",
    "rank": "rank",
}

#: Whether a larger figure is better (claims of "best" read this).
HIGHER_IS_BETTER = {
    "acceptance": True,
    "ess": True,
    "t": False,
    "ess_per_t": True,
    "rhat": False,
    "avg_l": False,
    "step_size": True,
}


def _stuck(chains: np.ndarray) -> np.ndarray:
    """Chains ``(chains, draws, dim)`` that never moved: no information, an ESS of 0 (their
    batch-means covariance is singular, so the formula itself would give nan)."""
    return np.all(np.ptp(chains, axis=1) == 0, axis=-1)


def _per_chain_ess(result, kind: str) -> np.ndarray:
    draws = result.draws
    if kind == "antithetic":
        pairs = draws.shape[0] // 2
        stuck = _stuck(draws)
        return np.array(
            [
                0.0
                if stuck[2 * k] and stuck[2 * k + 1]
                else publication.antithetic_ess(
                    draws[2 * k : 2 * k + 2],
                    None if result.log_weights is None else result.log_weights[2 * k : 2 * k + 2],
                )
                for k in range(pairs)
            ]
        )
    weights = result.log_weights
    stuck = _stuck(draws)
    return np.array(
        [
            0.0
            if stuck[c]
            else publication.published_weighted_ess(
                draws[c : c + 1], None if weights is None else weights[c : c + 1]
            )
            for c in range(draws.shape[0])
        ]
    )


def feature_ranking(result) -> list[int]:
    """The features of an ARD run, numbered from 1 in the data's order (the intercept left
    out), from the most to the least relevant."""
    from hamiltonia.targets.ard import feature_relevance

    order = [n.removeprefix("log_alpha_") for n in result.names if n.startswith("log_alpha_")]
    order = [n for n in order if n != "intercept"]
    return [order.index(label) + 1 for label, _ in feature_relevance(result)]


def cell_metrics(result, concurrency: int = 1, ess: str = "auto", rank: bool = False) -> dict:
    """The figures of one cell: ``{metric: {"value": mean, "sd": spread over chains or
    None, "per_chain": list or None}}``.

    Parameters
    ----------
    result : Result
        The cell's run.
    concurrency : int
        How many of the chains ran at once (the compiled path runs one per core; the NumPy
        path advances all chains together in one thread: 1).
    ess : {"auto", "antithetic"}
        Which ESS the publication reports for this sampler.
    rank : bool
        Also rank the features of an ARD target (``"rank"``).
    """
    chains = result.n_chains
    accepted = np.asarray(result.stats["accepted"], dtype=float)
    acceptance = 100.0 * accepted.mean(axis=1)
    per_chain_ess = _per_chain_ess(result, ess)
    t_chain = result.sampling_seconds * concurrency / chains
    # An antithetic pair is one "run" of the research: it costs two chains.
    t_unit = t_chain * (2 if ess == "antithetic" else 1)
    rhat = float(np.nanmax(result.summary()["r_hat"].to_numpy())) if chains > 1 else np.nan
    n_steps = np.asarray(result.stats["n_steps"], dtype=float).mean(axis=1)
    step = np.asarray(result.stats["step_size"], dtype=float).mean(axis=1)

    def spread(values):
        values = np.asarray(values, dtype=float)
        return {
            "value": float(np.mean(values)),
            "sd": float(np.std(values, ddof=1)) if values.size > 1 else None,
            "per_chain": [float(v) for v in values],
        }

    figures = {
        "acceptance": spread(acceptance),
        "ess": spread(per_chain_ess),
        "t": {"value": t_unit, "sd": None, "per_chain": None},
        "ess_per_t": spread(per_chain_ess / t_unit),
        "rhat": {"value": rhat, "sd": None, "per_chain": None},
        "avg_l": spread(n_steps),
        "step_size": spread(step),
    }
    if rank:
        figures["rank"] = {"value": feature_ranking(result), "sd": None, "per_chain": None}
    return figures
