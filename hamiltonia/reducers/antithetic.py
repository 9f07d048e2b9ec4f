"""Antithetic coupling: chains run in pairs whose estimates are negatively correlated.

Piponi, Hoffman and Sountsov (2020), *Hamiltonian Monte Carlo swindles*; A-HMC, A-MHMC and
A-S2HMC of Mongwe, Mbuvha and Marwala (Mongwe 2022, thesis, §2.9, Algorithm 8;
§8.2, Algorithms 14-15). Chains :math:`2k` (the primary :math:`X`) and
:math:`2k+1` (the secondary :math:`Y`) share every random number and :math:`Y` negates its
momentum normals. Then

.. math::

    \\operatorname{Var}\\Big[\\tfrac{f(X) + f(Y)}{2}\\Big]
        = \\tfrac14 \\big[\\operatorname{Var} f(X) + \\operatorname{Var} f(Y)\\big]
          + \\tfrac12 \\operatorname{Cov}[f(X), f(Y)],

which a negative covariance lowers (eq. 2.40).

**How the pair is coupled.** The two chains get generators in the same state, so they draw the
same numbers in the same order: the momentum normals, the uniform of every accept test (and
of a tested refresh), the mass normals of a random-mass Hamiltonian, a random number of steps
or a jittered step size, and a no-U-turn tree's directions and selections. The secondary chain
refreshes its momentum conjugated by the reversal :math:`R(p, s) = (-p, -s)` (``s`` the
structure's auxiliary sign, a magnetic field's), so its fresh normals enter negated:
:math:`R \\circ \\text{refresh} \\circ R`. Each chain alone is still an exact sampler: its
generator is an ordinary stream, and :math:`R` preserves the joint density of momentum and
structure (it is the reversal a rejected proposal applies), so the conjugated refresh leaves it
invariant.

Sharing everything, not only the normals and the accept uniforms, makes the coupling exact for
a target symmetric about a point :math:`c`: the reflection :math:`(q, p) \\mapsto (2c - q, -p)`
conjugates the leapfrog, the magnetic leapfrog with the same field (its flows are linear)
and the processed leapfrog, maps a no-U-turn tree onto the mirrored tree with the same
energies, so that with the same uniforms :math:`Y_t = 2c - X_t` once the pair has met; on a
Gaussian the distance from that relation contracts at every accepted step. Where the target is
not symmetric the two chains may consume different numbers of draws (no-U-turn trees of
different depths, a fixed point that converges in one chain only); from then on their streams
are offset and the pair decorrelates, still each an exact chain.

The step size is adapted on each chain in warm-up, then the secondary chain takes its
primary's (the research tunes :math:`X` and reuses its :math:`\\varepsilon` for :math:`Y`).

**Estimates.** The estimator is the pair mean (with importance weights, each chain's
self-normalised mean, then the pair average). :func:`pair_summary` gives it with a Monte Carlo
standard error from the independent pairs and from batches within them
(:func:`hamiltonia.diagnostics.pair_error.pair_mcse`: the two chains of a pair are not
independent, and once a pair has met the pair-mean series is nearly constant, so that its
error comes from the pair's start and from decouplings, which an ESS from the
autocorrelation of the series cannot see), the ESS that standard error implies, and the
plain estimate of the primary chains alone with the same kind of standard error.

The research's ESS of the pair, :math:`2\\,\\text{ESS}_X/(1+\\eta)` (thesis eq. 8.1; :math:`\\eta`
the pair's Spearman correlation), is not reported here: it takes the pair's correlation for
the correlation of the pair's means, which a correlation near :math:`-1` of the draws does not
make them (a pair that has not met keeps its offset), and replicated runs contradict it by
orders of magnitude (module :mod:`hamiltonia.diagnostics.pair_error`). A reproduction of the
publication's tables computes it with
:func:`hamiltonia.diagnostics.publication.antithetic_ess`, labelled as the publication's.
"""

from __future__ import annotations

import numpy as np

from hamiltonia.diagnostics.pairs import pair_correlation, pairs_of
from hamiltonia.reducers.base import (
    ReducerWrapper,
    VarianceReducer,
    _squared_ratio,
    linearised_values,
    reduction_table,
)

__all__ = [
    "AntitheticPairs",
    "pair_correlation",
    "pair_means",
    "pair_summary",
    "pairs_of",
]


def pair_means(values: np.ndarray, log_weights: np.ndarray | None = None) -> np.ndarray:
    """The per-draw series whose mean is the pair estimator, shape ``(pairs, draws, ...)``.

    For equal weights, :math:`z_{kt} = \\tfrac12 [f(X_{kt}) + f(Y_{kt})]`. With importance
    weights each chain's self-normalised mean :math:`\\hat\\mu_c = \\sum_t w_{ct} f_{ct} /
    \\sum_t w_{ct}` is linearised (delta method) into
    :math:`\\psi_{ct} = \\hat\\mu_c + (w_{ct}/\\bar w_c)(f_{ct} - \\hat\\mu_c)`, whose mean is
    :math:`\\hat\\mu_c` and whose Monte Carlo error is that of :math:`\\hat\\mu_c` to first
    order; :math:`z` averages the pair's :math:`\\psi`.
    """
    pairs = pairs_of(np.shape(values)[0])
    psi = linearised_values(values, log_weights, per_chain=True)
    return 0.5 * (psi[pairs[:, 0]] + psi[pairs[:, 1]])


def pair_summary(result):
    """Plain and antithetic estimates of each parameter's mean (a pandas DataFrame).

    Columns: ``plain_mean`` and ``plain_mcse``, the primary chains alone, as a run without
    the coupling would give them (weighted for a shadow sampler), with the standard error of
    :func:`~hamiltonia.diagnostics.pair_error.pair_mcse` taking each primary chain as a
    replicate; ``mean`` and ``mcse``, the pair estimator (:func:`pair_means`) and its
    standard error from the independent pairs and the batches within them (module
    :mod:`hamiltonia.diagnostics.pair_error`); ``dof``, the degrees of freedom of that
    standard error (a 95 % interval is ``mean`` :math:`\\pm t_{\\text{dof},0.975}` ``mcse``:
    1 where two pairs disagreed beyond their batches and their spread was taken); ``eta``,
    the pair's Spearman correlation (descriptive); ``ess_pair``, the ESS the standard error
    implies, :math:`\\text{sd}^2/\\text{mcse}^2` with the primaries' sd (above the number of
    draws where the pairs beat independent draws); and ``reduction``, the variance of the
    plain estimate over that of the pair estimate, :math:`(\\text{plain\\_mcse} /
    \\text{mcse})^2`, the factor by which the pairs beat their primary chains (at twice their
    cost). Both standard errors are of one kind, so the reduction compares like with like.

    The ESS and the reduction are this run's: its standard error follows its own error (on
    the 12-d ``correlated_gaussian``, runs binned by the MCSE they reported have calibration
    ratios of 0.98 to 1.11 in every quarter), and a run whose pairs met at once is that
    precise. They are not the sampler's average, which the rare runs whose pairs meet late
    dominate: there the median ``a-hmc`` run reported a reduction near 1,800 for ``x1``
    where the variance across 200 runs fell 3.4 times (as the runs' mean squared standard
    errors say: their ratio is 3.5). Compare samplers over replicated runs.

    The research's ESS :math:`2\\,\\text{ESS}_X/(1+\\eta)` (thesis eq. 8.1), which this table
    reported, is left to :func:`hamiltonia.diagnostics.publication.antithetic_ess`, the
    publication's estimator: it reads the draws' correlation as that of the pairs'
    estimates, and the standard error beside it, from the autocorrelation of the pair-mean
    series, was too small by up to 1.7 and too large by up to 2 (module
    :mod:`~hamiltonia.diagnostics.pair_error`).
    """
    from hamiltonia.diagnostics.pair_error import pair_mcse
    from hamiltonia.diagnostics.summary import summary_table

    draws, lw = result.draws, result.log_weights
    pairs = pairs_of(draws.shape[0])
    primary_lw = None if lw is None else lw[pairs[:, 0]]
    primary = summary_table(draws[pairs[:, 0]], result.names, primary_lw)
    primary["mcse"] = pair_mcse(linearised_values(draws[pairs[:, 0]], primary_lw), warn=False).mcse
    series = pair_means(draws, lw)
    error = pair_mcse(series)
    sd = primary["sd"].to_numpy()
    ess = _squared_ratio(sd, error.mcse)
    return reduction_table(
        result.names,
        primary,
        series,
        mcse=error.mcse,
        dof=error.dof,
        eta=pair_correlation(draws),
        ess_pair=ess,
    )


class AntitheticPairs(ReducerWrapper):
    """Antithetic pairs of chains (module docs), over an ``inner`` reducer that supplies the
    draws' weights (:class:`~hamiltonia.reducers.base.ImportanceWeights` for a shadow sampler).

    The run gives chains :math:`2k` and :math:`2k+1` generators in one state and has the
    secondary refresh its momentum through the reversal; the estimate is the pair mean.
    """

    #: The run couples its chains in pairs.
    pairs = True

    def __init__(self, inner: VarianceReducer | None = None):
        super().__init__(inner)
        if self.inner.pairs:
            raise ValueError("antithetic pairs cannot be nested")

    def pairing(self, chains: int) -> list:
        """Chains ``2k`` and ``2k+1``, as lists (an even number of chains is required)."""
        return pairs_of(chains).tolist()

    def mirrored(self, chains: int) -> np.ndarray:
        """The chains that refresh through the reversal: the secondaries, the odd ones."""
        pairs_of(chains)  # an even number of chains, or the error naming it
        return np.arange(chains) % 2 == 1

    def rejoin(self, step_size: np.ndarray, rngs) -> None:
        """Give each secondary chain its primary's step size (in place) and generator state.

        Called where the two may have drawn different numbers of values, at points that do
        not depend on timing (after a step-size search, at the end of warm-up), so that the
        pair shares its random numbers again. The secondary stays an exact chain: the state
        it jumps to is that of a stream whose coming values are independent of everything
        drawn so far.
        """
        step_size[1::2] = step_size[0::2]
        for primary, secondary in zip(rngs[0::2], rngs[1::2], strict=True):
            secondary.bit_generator.state = primary.bit_generator.state

    def estimate(self, values, log_weights):
        """The pair mean: each chain's self-normalised mean, averaged over chains."""
        return linearised_values(values, log_weights, per_chain=True).mean(axis=(0, 1))
