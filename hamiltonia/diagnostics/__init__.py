"""Diagnostics: estimators of convergence and efficiency (ESS, R-hat, MCSE, Kish), the checks
of a finished run that warn its user, and predictive metrics on held-out data."""

from hamiltonia.diagnostics.multivariate import combined_ess, multivariate_ess
from hamiltonia.diagnostics.univariate import ess, ess_per_gradient, ess_per_second, mcse, rhat
from hamiltonia.diagnostics.weights import kish_ess

__all__ = [
    "combined_ess",
    "ess",
    "ess_per_gradient",
    "ess_per_second",
    "kish_ess",
    "mcse",
    "multivariate_ess",
    "rhat",
]
