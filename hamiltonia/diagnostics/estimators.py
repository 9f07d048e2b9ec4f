"""Convergence and efficiency diagnostics, by name: every estimator, importable from here.

Univariate diagnostics follow ArviZ (:mod:`arviz_stats`): rank-normalised split
:math:`\\hat R`, bulk and tail effective sample sizes, and Monte Carlo standard errors
(Vehtari et al. 2021, *Rank-normalization, folding, and localization: an improved R-hat*).
The research's own metrics are added: the multivariate ESS of Vats, Flegal and Jones (2019)
by batch means, the Kish effective sample size of importance weights, their product for
weighted draws (Mongwe 2022, thesis, §3.4.1, eq. 3.12), and ESS per second and per gradient.

Arrays of draws have shape ``(chains, draws, dim)`` (or ``(chains, draws)`` for one
quantity).

Where they live
---------------
This module re-exports the names of modules of one job each:

* :mod:`hamiltonia.diagnostics.univariate`: :func:`rhat`, :func:`ess`, :func:`mcse` and
  :func:`convergence` per parameter, :func:`ess_per_second`, :func:`ess_per_gradient`;
* :mod:`hamiltonia.diagnostics.rank_estimators`: how those are computed for one quantity
  (ArviZ's numbers by a faster road), and :data:`DIRECT_LAGS`;
* :mod:`hamiltonia.diagnostics.screening`: :func:`screened_convergence`, the bounds of the
  checks of a finished run;
* :mod:`hamiltonia.diagnostics.estimator_kernels`: the kernels compiled by numba,
  :data:`~hamiltonia.diagnostics.estimator_kernels.COMPILED_MIN_SIZE` and :func:`extremes`;
* :mod:`hamiltonia.diagnostics.multivariate`: :func:`multivariate_ess`,
  :func:`combined_ess`;
* :mod:`hamiltonia.diagnostics.weights`: :func:`kish_ess`, :func:`kish_factor`,
  :func:`weighted_mean`, :func:`linearised_values`;
* :mod:`hamiltonia.diagnostics.pairs`: :func:`pairs_of`, :func:`pair_correlation`.

The sizes that choose a road are read where they are defined: to force the compiled road,
set ``COMPILED_MIN_SIZE`` of :mod:`~hamiltonia.diagnostics.estimator_kernels`, not the copy
here.
"""

from __future__ import annotations

# Besides __all__, the names marked F401 are re-exported: modules imported them from here
# before the estimators were split (issue 48).
from hamiltonia.diagnostics.estimator_kernels import (
    COMPILED_MIN_SIZE,  # noqa: F401
    _compiled_road,  # noqa: F401
    _kernels,  # noqa: F401
    extremes,
)
from hamiltonia.diagnostics.multivariate import combined_ess, multivariate_ess
from hamiltonia.diagnostics.pairs import pair_correlation, pairs_of
from hamiltonia.diagnostics.rank_estimators import DIRECT_LAGS, _Quantity  # noqa: F401
from hamiltonia.diagnostics.screening import screened_convergence
from hamiltonia.diagnostics.univariate import (
    _per_parameter,  # noqa: F401
    convergence,
    ess,
    ess_per_gradient,
    ess_per_second,
    mcse,
    rhat,
)
from hamiltonia.diagnostics.weights import (
    kish_ess,
    kish_factor,
    linearised_values,
    weighted_mean,
)

__all__ = [
    "DIRECT_LAGS",
    "combined_ess",
    "convergence",
    "ess",
    "ess_per_gradient",
    "ess_per_second",
    "extremes",
    "kish_ess",
    "kish_factor",
    "linearised_values",
    "mcse",
    "multivariate_ess",
    "pair_correlation",
    "pairs_of",
    "rhat",
    "screened_convergence",
    "weighted_mean",
]
