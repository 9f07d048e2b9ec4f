"""The estimators the research reports, by name, as its author computed them.

The research's tables (Mongwe 2022, thesis, §3.4; the PS2HMC, SMHMC and antithetic papers)
report figures that hamiltonia's own diagnostics compute differently, for good reasons: the
thesis's multivariate ESS is per chain and averaged over the chains (hamiltonia's
:func:`~hamiltonia.diagnostics.multivariate.multivariate_ess` pools the chains, about ``m``
times larger for ``m`` chains), its acceptance rate is the fraction of proposals accepted
(hamiltonia's ``acceptance_rate`` statistic is the mean acceptance probability), and the
antithetic ESS is eq. 8.1 with the largest correlation over the parameters. A reproduction
compares like with like through the functions here.

The mESS follows the author's code, a port of ``lacerbi/multiESS`` (Vats, Flegal and Jones
2019, batch means): for a chain of ``n`` draws of ``p`` parameters and a batch size ``b``,
``a = n // b`` batches start at each of up to ``n_offsets`` offsets evenly spread over the
``n - a b`` draws left over, and

.. math::

    \\hat\\Sigma = \\frac{b}{a - 1}\\,\\frac{1}{|O|}\\sum_{o \\in O}\\sum_{k=1}^{a}
        (\\bar Y_{k,o} - \\bar\\theta)(\\bar Y_{k,o} - \\bar\\theta)^\\top, \\qquad
    \\text{mESS} = n \\left(\\frac{|\\Lambda|}{|\\hat\\Sigma|}\\right)^{1/p},

with :math:`\\Lambda` the chain's sample covariance and :math:`\\bar\\theta` its mean. The
batch size is :math:`\\lfloor\\sqrt n\\rfloor` (``"sqroot"``, the utility's default),
:math:`\\lfloor n^{1/3}\\rfloor` (``"cuberoot"``) or, with ``"less"`` (the experiment
harness's choice, thesis spec §4.10), the one of ``n_sizes`` log-spaced sizes from
:math:`n^{1/4}` to :math:`\\max(\\lfloor n / \\max(p, 20)\\rfloor, \\lfloor\\sqrt n\\rfloor)`
that gives the lowest mESS.
"""

from __future__ import annotations

import numpy as np

from hamiltonia.diagnostics.pairs import pair_correlation, pairs_of
from hamiltonia.diagnostics.weights import kish_ess

__all__ = [
    "BATCH_RULES",
    "ETA_REDUCTIONS",
    "antithetic_ess",
    "antithetic_eta",
    "batch_sizes",
    "chain_mess",
    "fraction_accepted",
    "published_mess",
    "published_weighted_ess",
]

#: The batch-size rules of the author's mESS.
BATCH_RULES = ("sqroot", "cuberoot", "less")


def batch_sizes(n: int, p: int, rule="sqroot", n_sizes: int = 20) -> list[int]:
    """The batch sizes the rule ``rule`` tries for ``n`` draws of ``p`` parameters (one for
    ``"sqroot"``, ``"cuberoot"`` or an integer; up to ``n_sizes`` for ``"less"``)."""
    if isinstance(rule, str):
        if rule == "sqroot":
            return [int(np.floor(np.sqrt(n)))]
        if rule == "cuberoot":
            return [int(np.floor(np.cbrt(n)))]
        if rule == "less":
            low = np.floor(n**0.25)
            high = max(np.floor(n / max(p, 20)), np.floor(np.sqrt(n)))
            sizes = np.exp(np.linspace(np.log(low), np.log(high), n_sizes))
            return sorted({int(b) for b in np.round(sizes)})
        raise ValueError(f"batch_size must be an integer or one of {BATCH_RULES}, got {rule!r}")
    if isinstance(rule, bool) or not isinstance(rule, int | np.integer) or not 1 < rule < n / 2:
        raise ValueError(f"batch_size must be an integer in (1, {n / 2:g}), got {rule!r}")
    return [int(rule)]


def _offsets(n: int, b: int, n_offsets: int) -> list[int]:
    """Where the author's code starts its ``n // b`` batches of ``b`` draws: up to
    ``n_offsets`` starts spread over the draws the batches leave over."""
    return sorted({int(o) for o in np.round(np.linspace(0, n - (n // b) * b, n_offsets))})


def _is_singular(n: int, p: int, b: int, n_offsets: int) -> bool:
    """Whether the batch-means covariance of batch size ``b`` is singular in exact
    arithmetic: it sums the outer products of ``n // b`` batch means per offset, each centred
    on the chain's mean, and when the batches cover the chain (one offset, ``n`` a multiple
    of ``b``) those means sum to zero; fewer independent vectors than ``p`` span less than
    the space. Decided by counting because in floating point the determinant of such a
    matrix is a rounding residue, whose sign varies between processors."""
    a = n // b
    rank = a * len(_offsets(n, b, n_offsets)) - (1 if a * b == n else 0)
    return rank < p


def _batch_covariance(chain: np.ndarray, theta: np.ndarray, b: int, n_offsets: int):
    """:math:`\\hat\\Sigma` of the module's docstring for batch size ``b``. A second form of
    the batch means of :func:`~hamiltonia.diagnostics.multivariate.multivariate_ess`, kept for
    the author's offsets (each centred on the whole chain's mean); with one offset the two
    agree (``tests/diagnostics/test_publication.py``)."""
    n, p = chain.shape
    a = n // b
    offsets = _offsets(n, b, n_offsets)
    sigma = np.zeros((p, p))
    for o in offsets:
        z = chain[o : o + a * b].reshape(a, b, p).mean(axis=1) - theta
        sigma += z.T @ z
    return sigma * b / (a - 1) / len(offsets)


def chain_mess(chain, batch_size="sqroot", *, n_offsets: int = 10, n_sizes: int = 20) -> float:
    """The mESS of one chain ``(n, p)`` as the author's code computes it (module docstring):
    with ``"less"``, the lowest over the batch sizes tried. A batch size that leaves no more
    batches than parameters gives a singular batch-means covariance, where the mESS is not
    defined: it is left out, and only a chain where every size is singular gets ``nan`` (a
    short chain of many parameters; the published protocols never come near it)."""
    x = np.asarray(chain, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"chain must have shape (draws, parameters), got {x.shape}")
    n, p = x.shape
    if p > n:
        raise ValueError(f"a chain of {n} draws cannot give the mESS of {p} parameters")
    theta = x.mean(axis=0)
    sign_l, logdet_l = np.linalg.slogdet(np.atleast_2d(np.cov(x, rowvar=False)))
    values = []
    for b in batch_sizes(n, p, batch_size, n_sizes):
        if _is_singular(n, p, b, n_offsets):
            values.append(np.nan)
            continue
        sign_s, logdet_s = np.linalg.slogdet(_batch_covariance(x, theta, b, n_offsets))
        if sign_l <= 0 or sign_s <= 0:
            values.append(np.nan)
        else:
            values.append(n * np.exp((logdet_l - logdet_s) / p))
    values = [v for v in values if not np.isnan(v)]
    return float(min(values)) if values else float("nan")


def published_mess(draws, batch_size="less", **options) -> float:
    """The thesis's mESS of a run: :func:`chain_mess` of each chain of ``draws`` ``(chains,
    draws, p)``, averaged over the chains (eq. 3.10; the author's harness uses ``"less"``)."""
    x = np.asarray(draws, dtype=float)
    if x.ndim == 2:
        x = x[..., None]
    return float(np.mean([chain_mess(c, batch_size, **options) for c in x]))


def published_weighted_ess(draws, log_weights, batch_size="less", **options) -> float:
    """The thesis's ESS of importance-weighted draws (eq. 3.12), per chain and averaged:
    :math:`\\text{ESS}_\\text{IMP}/N \\cdot \\text{mESS}`, Kish's ESS of the chain's weights
    over its draws times its unweighted mESS; ``log_weights=None`` gives
    :func:`published_mess`."""
    if log_weights is None:
        return published_mess(draws, batch_size, **options)
    x = np.asarray(draws, dtype=float)
    if x.ndim == 2:
        x = x[..., None]
    lw = np.asarray(log_weights, dtype=float)
    return float(
        np.mean(
            [
                kish_ess(w) / x.shape[1] * chain_mess(c, batch_size, **options)
                for c, w in zip(x, lw, strict=True)
            ]
        )
    )


def fraction_accepted(accepted) -> float:
    """The acceptance rate the publications report: the fraction of proposals accepted (the
    ``accepted`` statistic, ``(chains, draws)``), not the mean acceptance probability."""
    a = np.asarray(accepted)
    if a.size == 0:
        raise ValueError("accepted is empty")
    return float(np.mean(a.astype(float)))


#: How :func:`antithetic_eta` reduces the per-parameter correlations to one figure.
ETA_REDUCTIONS = ("max", "mean")


def antithetic_eta(draws, reduction: str = "max") -> float:
    """The research's :math:`\\eta` of antithetic pairs: the Spearman rank correlation
    between the paired chains, per parameter and averaged over the pairs
    (:func:`~hamiltonia.diagnostics.pairs.pair_correlation`), reduced over the
    parameters by ``reduction``.

    ``"max"`` is what the thesis states (§8.3: the largest over the dimensions, which makes
    eq. 8.1 a lower bound); ``"mean"`` is the mean over the parameters, which the printed
    :math:`\\eta` of A-HMC in Table 8.1 match (within 0.07 on the four BLR data sets, where
    the largest is 0.11-0.87 away; experiment ``ch8-blr``).
    """
    if reduction not in ETA_REDUCTIONS:
        raise ValueError(f"reduction must be one of {ETA_REDUCTIONS}, got {reduction!r}")
    x = np.asarray(draws, dtype=float)
    if x.ndim == 2:
        x = x[..., None]
    per_parameter = pair_correlation(x)
    return float(np.max(per_parameter) if reduction == "max" else np.mean(per_parameter))


def antithetic_ess(draws, log_weights=None, batch_size="less", eta="max", **options) -> float:
    """The ESS of antithetic pairs of the research (thesis eq. 8.1):

    .. math::

        \\text{ESS}_\\text{antithetic} = \\frac{2\\,\\text{ESS}_X}{1 + \\eta},

    with :math:`\\text{ESS}_X` the primary chains' ESS (:func:`published_weighted_ess`,
    importance-weighted for a shadow sampler) and :math:`\\eta` from :func:`antithetic_eta`
    with the reduction ``eta`` (``"max"``, as the thesis states, a lower bound; ``"mean"``, which
    its printed figures match). Chains ``2k`` and ``2k + 1`` are a pair
    (:mod:`hamiltonia.reducers.antithetic`).

    The publication's estimator, for reproducing its tables: not one hamiltonia trusts. It
    takes the correlation of the paired draws for that of the pairs' estimates, which a pair
    that starts apart or decouples does not make them, and replicated runs contradict it by
    orders of magnitude; :meth:`hamiltonia.Result.pair_summary` reports the ESS that the
    spread of independent pairs supports (:mod:`hamiltonia.diagnostics.pair_error`)."""
    x = np.asarray(draws, dtype=float)
    if x.ndim == 2:
        x = x[..., None]
    correlation = antithetic_eta(x, eta)
    primary = pairs_of(x.shape[0])[:, 0]
    weights = None if log_weights is None else np.asarray(log_weights)[primary]
    ess_x = published_weighted_ess(x[primary], weights, batch_size, **options)
    return 2.0 * ess_x / (1.0 + correlation)
