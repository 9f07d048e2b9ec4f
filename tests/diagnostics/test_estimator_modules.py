"""The estimators live in modules of one job each (issue 48); ``diagnostics.estimators`` still
gives every name it gave before, the same objects as their new homes'."""

from __future__ import annotations

from tests.moved import assert_re_exported

#: Each name ``estimators`` exported before the split, by its new home.
HOMES = {
    "estimator_kernels": ["COMPILED_MIN_SIZE", "extremes", "_compiled_road", "_kernels"],
    "rank_estimators": ["DIRECT_LAGS", "_Quantity"],
    "univariate": ["convergence", "ess", "ess_per_gradient", "ess_per_second", "mcse", "rhat",
                   "_per_parameter"],
    "screening": ["screened_convergence"],
    "multivariate": ["combined_ess", "multivariate_ess"],
    "weights": ["kish_ess", "kish_factor", "linearised_values", "weighted_mean"],
    "pairs": ["pair_correlation", "pairs_of"],
}  # fmt: skip

#: ``estimators.__all__`` before the split: unchanged.
PUBLIC = [
    "DIRECT_LAGS", "combined_ess", "convergence", "ess", "ess_per_gradient", "ess_per_second",
    "extremes", "kish_ess", "kish_factor", "linearised_values", "mcse", "multivariate_ess",
    "pair_correlation", "pairs_of", "rhat", "screened_convergence", "weighted_mean",
]  # fmt: skip


def test_every_name_is_where_it_was():
    homes = {f"hamiltonia.diagnostics.{module}": names for module, names in HOMES.items()}
    assert_re_exported("hamiltonia.diagnostics.estimators", homes, PUBLIC)
