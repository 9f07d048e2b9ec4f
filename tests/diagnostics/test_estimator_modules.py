"""The estimators live in modules of one job each (issue 48); ``diagnostics.estimators`` still
gives every name it gave before, the same objects as their new homes'."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from hamiltonia.diagnostics import estimators

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


def test_the_public_names_are_unchanged():
    assert estimators.__all__ == PUBLIC
    assert {n for names in HOMES.values() for n in names if not n.startswith("_")} >= set(PUBLIC)


@pytest.mark.parametrize("module", sorted(HOMES))
def test_every_name_is_re_exported_from_its_home(module):
    home = importlib.import_module(f"hamiltonia.diagnostics.{module}")
    for name in HOMES[module]:
        assert getattr(estimators, name) is getattr(home, name), name
        if not name.startswith("_"):
            assert name in home.__all__, name


@pytest.mark.parametrize("module", sorted(HOMES))
def test_each_module_is_a_small_room(module):
    home = importlib.import_module(f"hamiltonia.diagnostics.{module}")
    assert home.__doc__ and len(home.__doc__.strip()) > 100
    assert len(Path(home.__file__).read_text().splitlines()) <= 600
