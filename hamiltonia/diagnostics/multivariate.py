"""Multivariate effective sample sizes: the mESS of Vats, Flegal and Jones (2019,
*Multivariate output analysis for Markov chain Monte Carlo*, Biometrika) by replicated batch
means over several chains (Vats and Knudson 2021, *Revisiting the Gelman-Rubin diagnostic*,
Statist. Sci.), and the ESS of importance-weighted draws, the mESS times the Kish factor of
their weights (Mongwe 2022, thesis, §3.4.1, eq. 3.12, after Heide et al. 2021).

Arrays of draws have shape ``(chains, draws, dim)`` (or ``(chains, draws)`` for one
quantity).
"""

from __future__ import annotations

import numpy as np

from hamiltonia.diagnostics.weights import kish_ess

__all__ = ["combined_ess", "multivariate_ess"]


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
    if n_chains * (n // b) - 1 < dim or n_chains * (n - 1) < dim:
        # Too few centred batch means (or draws) to span the space: Sigma (or Lambda) is
        # singular in exact arithmetic. Decided by counting, since in floating point its
        # determinant is a rounding residue whose sign varies between processors.
        return float("nan")
    sigma = _replicated_batch_means_covariance(x, b)
    lam = np.mean([np.atleast_2d(np.cov(chain, rowvar=False)) for chain in x], axis=0)
    sign_l, logdet_l = np.linalg.slogdet(lam)
    sign_s, logdet_s = np.linalg.slogdet(np.atleast_2d(sigma))
    if sign_l <= 0 or sign_s <= 0:
        return float("nan")
    return float(n_chains * n * np.exp((logdet_l - logdet_s) / dim))


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
