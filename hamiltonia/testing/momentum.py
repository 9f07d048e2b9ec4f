"""Momentum check of a Hamiltonian: its momentum draws follow :math:`e^{-K}`, and its
velocity is the gradient of its kinetic energy.

:func:`~hamiltonia.testing.check_invariance` sees a wrong momentum law only through the
positions it moves, and ten transitions can dilute it below what it resolves (a rejection
sampler that forgets its rejection step draws from a law close to :math:`e^{-K}`). This check
reads the draws alone. For any kinetic energy whose momentum has density
:math:`\\propto e^{-K(p)}`, integrating :math:`p_i\\, \\partial_i e^{-K}` by parts gives the
equipartition (virial) identity

.. math::

    E\\bigl[p_i\\, \\partial K / \\partial p_i\\bigr] = 1 \\quad (i = 1, \\dots, d),
    \\qquad E\\bigl[p^\\top \\partial K / \\partial p\\bigr] = d,

which :func:`check_momentum` tests by :math:`z`-scores over ``n_draws`` draws (one generator
each), at the family-wise level ``alpha`` over the :math:`d + 1` scores (Bonferroni); and it
checks the velocity :math:`\\partial K/\\partial p` against central differences of
:math:`K` at a few of the draws (:func:`~hamiltonia.testing.gradients.check_gradient`'s rule
and tolerance, :math:`-K` taking the place of the log density). A Gaussian momentum
:math:`\\mathcal N(0, M)` has :math:`\\partial K/\\partial p = M^{-1} p` and passes; so does
any exact non-Gaussian law (the relativistic one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hamiltonia._validation import check_int, check_probability

__all__ = ["MomentumResult", "check_momentum", "virial_z"]


@dataclass
class MomentumResult:
    """What :func:`check_momentum` measured: ``z`` the virial :math:`z`-score of each
    coordinate and (last) of the sum, ``threshold`` the Bonferroni bound on :math:`|z|`,
    ``velocity_error`` the largest velocity error over its tolerance (at most 1 passes)."""

    z: np.ndarray
    threshold: float
    velocity_error: float

    @property
    def passed(self) -> bool:
        return bool(np.all(np.abs(self.z) < self.threshold) and self.velocity_error <= 1.0)


def virial_z(hamiltonian: Any, p: np.ndarray) -> np.ndarray:
    """:math:`z`-scores of the virial identity over momentum draws ``p`` ``(n, d)``: of
    :math:`E[p_i\\, \\partial K/\\partial p_i] = 1` for each coordinate and (last) of
    :math:`E[p^\\top \\partial K/\\partial p] = d`."""
    p = np.asarray(p, dtype=float)
    terms = p * np.asarray(hamiltonian.velocity(p), dtype=float)
    columns = np.column_stack([terms, terms.sum(axis=1)])
    expected = np.append(np.ones(p.shape[1]), p.shape[1])
    return (columns.mean(axis=0) - expected) / (columns.std(axis=0, ddof=1) / np.sqrt(len(p)))


class _NegativeKinetic:
    """:math:`-K` as a "target" of the gradient check: its log density and gradient."""

    has_hvp = False

    def __init__(self, hamiltonian):
        self.hamiltonian, self.dim = hamiltonian, hamiltonian.dim
        self.names = [f"p[{i}]" for i in range(self.dim)]

    def log_prob(self, p):
        return -np.asarray(self.hamiltonian.kinetic(np.atleast_2d(p)), dtype=float)

    def log_prob_and_grad(self, p):
        p = np.atleast_2d(p)
        return self.log_prob(p), -np.asarray(self.hamiltonian.velocity(p), dtype=float)


def check_momentum(
    hamiltonian: Any,
    *,
    n_draws: int = 10_000,
    n_points: int = 4,
    seed: int = 0,
    alpha: float = 1e-3,
    check: bool = True,
) -> MomentumResult:
    """Assert that ``hamiltonian``'s momentum draws follow :math:`e^{-K}` and its velocity is
    :math:`\\partial K/\\partial p` (see the module docstring).

    Parameters
    ----------
    hamiltonian : Hamiltonian
        With ``sample_momentum(rngs)``, ``kinetic(p)`` and ``velocity(p)`` (its Python
        methods, or its kernels called one chain at a time); auxiliary variables, where it
        has any, at their defaults.
    n_draws : int >= 100
        Draws of the virial test, each from its own generator (the children of
        ``SeedSequence(seed)``).
    n_points : int >= 1
        Draws at which the velocity is checked against finite differences.
    alpha : float in (0, 1)
        Family-wise level of the :math:`d + 1` virial scores.
    check : bool
        Raise ``AssertionError`` naming the failure (default), or return the result.
    """
    from scipy import stats

    from hamiltonia.testing.gradients import check_gradient

    n_draws = check_int(n_draws, "n_draws", minimum=100)
    n_points = check_int(n_points, "n_points", minimum=1)
    alpha = check_probability(alpha, "alpha")
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n_draws)]
    p = np.asarray(hamiltonian.sample_momentum(rngs), dtype=float)
    z = virial_z(hamiltonian, p)
    threshold = float(stats.norm.isf(alpha / (2 * len(z))))
    try:
        velocity_error = check_gradient(_NegativeKinetic(hamiltonian), p[:n_points])
    except AssertionError as err:
        if check:
            raise AssertionError(
                f"{type(hamiltonian).__name__}: the velocity is not dK/dp: {err}"
            ) from None
        velocity_error = np.inf
    result = MomentumResult(z, threshold, float(velocity_error))
    if check and not result.passed:
        worst = int(np.argmax(np.abs(z)))
        which = "the sum" if worst == len(z) - 1 else f"coordinate {worst}"
        raise AssertionError(
            f"{type(hamiltonian).__name__}: its momentum draws do not follow exp(-K): the "
            f"virial identity E[p_i dK/dp_i] = 1 fails for {which} (z = {z[worst]:.2f}, "
            f"|z| < {threshold:.2f} at family-wise level {alpha}, {n_draws} draws)"
        )
    return result
