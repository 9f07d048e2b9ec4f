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
           (eq. 3.12); for an antithetic sampler the ESS of the pairs (eq. 8.1, with the
           experiment's reduction of eta); 0 for a chain that never moved, and for a pair
           with such a chain
t          seconds per chain of the retained iterations, burn-in excluded, as the author's
           code times a run: the run's own clock of its sampling iterations (no set-up,
           checks or file writing) times the chains it ran at once, over the chains (two
           chains for an antithetic pair); machines and libraries differ, so only ratios
           between the samplers of one experiment compare
ess_per_t  ess / t
rhat       the largest rank-normalised split :math:`\\hat R` over the parameters
avg_l      mean number of integration steps per retained iteration
step_size  mean step size of the retained iterations (the adapted one where adapted)
mean_ess   the mean over the parameters of the ESS of all chains together, computed without
           splitting the chains or rank-normalising the draws (Pyro's
           ``effective_sample_size``, which Cobb and Jalaian 2021 average over a network's
           parameters, Tables 1-3); one figure per run
eta        eq. 8.1's :math:`\\eta` of each antithetic pair: the Spearman correlation between
           its chains, per parameter, the largest over the parameters (as the thesis
           states); averaged over the pairs whose chains both moved; only for an
           antithetic column
eta_mean   the same with the mean over the parameters (which the printed figures of
           A-HMC match, :func:`hamiltonia.diagnostics.publication.antithetic_eta`)
kish       Kish's ESS of each chain's importance weights over its number of draws (eq. 3.11
           over N), averaged: the factor eq. 3.12 applies to a shadow sampler's mESS; 1 for
           a sampler without weights, for a chain that never moved (its weights are equal)
           and where a weight is not finite (the run's checks report those)
rank       an ARD target's features (numbered from 1 in the data's order, the intercept left
           out) from the most to the least relevant, by the posterior mean of their scale
           over all chains (thesis §9.3, Table 9.1;
           :func:`hamiltonia.targets.ard.feature_relevance`)
========== ================================================================================
"""

from __future__ import annotations

import numpy as np

from hamiltonia.diagnostics import publication
from hamiltonia.diagnostics.weights import kish_factor

__all__ = ["HIGHER_IS_BETTER", "LABELS", "VERSION", "cell_metrics", "feature_ranking"]

#: Version of these definitions: a reproduction's cells written under another are computed
#: again from their run files when read (:func:`hamiltonia.reproduce.load_reproduction`).
VERSION = 4

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
    "mean_ess": "mean ESS",
    "kish": "Kish ESS/N",
    "eta": "η (max)",
    "eta_mean": "η (mean)",
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
    "mean_ess": True,
    "kish": True,
    "eta": False,
    "eta_mean": False,
}


def _stuck(chains: np.ndarray) -> np.ndarray:
    """Chains ``(chains, draws, dim)`` that never moved: no information, an ESS of 0 (their
    batch-means covariance is singular, so the formula itself would give nan)."""
    return np.all(np.ptp(chains, axis=1) == 0, axis=-1)


#: The reduction of eq. 8.1's eta over the parameters for each antithetic ESS kind.
_ETA_OF_KIND = {"antithetic": "max", "antithetic-mean": "mean"}


def _pairs_moved(chains: np.ndarray) -> list[bool]:
    """Whether both chains of each antithetic pair ``(2k, 2k + 1)`` moved: a pair with a
    chain that never moved has no correlation and gives no estimate."""
    stuck = _stuck(chains)
    return [not (stuck[2 * k] or stuck[2 * k + 1]) for k in range(chains.shape[0] // 2)]


def _per_chain_ess(result, kind: str) -> np.ndarray:
    draws = result.draws
    if kind in _ETA_OF_KIND:
        return np.array(
            [
                # As a single chain that never moved: an ESS of 0.
                0.0
                if not moved
                else publication.antithetic_ess(
                    draws[2 * k : 2 * k + 2],
                    None if result.log_weights is None else result.log_weights[2 * k : 2 * k + 2],
                    eta=_ETA_OF_KIND[kind],
                )
                for k, moved in enumerate(_pairs_moved(draws))
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


#: The figures computed unless an experiment asks for others (``rank``, ``mean_ess``,
#: ``kish``, ``eta`` and ``eta_mean`` only where named).
DEFAULT_METRICS = ("acceptance", "ess", "t", "ess_per_t", "rhat", "avg_l", "step_size")


def cell_metrics(result, concurrency: int = 1, ess: str = "auto", metrics=DEFAULT_METRICS) -> dict:
    """The figures of one cell: ``{metric: {"value": mean, "sd": spread over chains or
    None, "per_chain": list or None}}``.

    Parameters
    ----------
    result : Result
        The cell's run.
    concurrency : int
        How many of the chains ran at once (the compiled path runs one per core; the NumPy
        path advances all chains together in one thread: 1).
    ess : {"auto", "antithetic", "antithetic-mean"}
        Which ESS the publication reports for this sampler
        (:data:`hamiltonia.reproduce.experiment.ESS_KINDS`).
    metrics : collection of str
        The figures to compute (the experiment's ``metrics``): a chain's mESS, for one,
        needs more draws than parameters, which a network's run does not have.
    """
    metrics = set(metrics)
    chains = result.n_chains
    t_chain = result.sampling_seconds * concurrency / chains
    # An antithetic pair is one "run" of the research: it costs two chains.
    t_unit = t_chain * (2 if ess in _ETA_OF_KIND else 1)

    def spread(values):
        values = np.asarray(values, dtype=float)
        return {
            "value": float(np.mean(values)),
            "sd": float(np.std(values, ddof=1)) if values.size > 1 else None,
            "per_chain": [float(v) for v in values],
        }

    def single(value):
        return {"value": value, "sd": None, "per_chain": None}

    figures = {}
    if "acceptance" in metrics:
        figures["acceptance"] = spread(
            100.0 * np.asarray(result.stats["accepted"], float).mean(axis=1)
        )
    if metrics & {"ess", "ess_per_t"}:
        per_chain_ess = _per_chain_ess(result, ess)
        figures["ess"] = spread(per_chain_ess)
        figures["ess_per_t"] = spread(per_chain_ess / t_unit)
    if "t" in metrics:
        figures["t"] = single(t_unit)
    if "rhat" in metrics:
        rhat = float(np.nanmax(result.summary()["r_hat"].to_numpy())) if chains > 1 else np.nan
        figures["rhat"] = single(rhat)
    if "avg_l" in metrics:
        figures["avg_l"] = spread(np.asarray(result.stats["n_steps"], dtype=float).mean(axis=1))
    if "step_size" in metrics:
        figures["step_size"] = spread(np.asarray(result.stats["step_size"], float).mean(axis=1))
    if "rank" in metrics:
        figures["rank"] = single(feature_ranking(result))
    if "mean_ess" in metrics:
        from hamiltonia.diagnostics.univariate import ess as ess_of

        figures["mean_ess"] = single(float(np.nanmean(ess_of(result.draws, method="identity"))))
    for name, reduction in (("eta", "max"), ("eta_mean", "mean")):
        # Only pairs of chains have an eta; a column of single chains leaves it out.
        if name in metrics and ess in _ETA_OF_KIND:
            draws = result.draws
            moving = [k for k, moved in enumerate(_pairs_moved(draws)) if moved]
            figures[name] = (
                spread(
                    [
                        publication.antithetic_eta(draws[2 * k : 2 * k + 2], reduction)
                        for k in moving
                    ]
                )
                if moving
                else single(float("nan"))
            )
    if "kish" in metrics:
        # The factor eq. 3.12 applies to a weighted chain's mESS: how even its weights are.
        weights = result.log_weights
        figures["kish"] = spread(
            [kish_factor(None if weights is None else weights[c]) for c in range(chains)]
        )
    return figures
