"""The composition helpers live in modules of one job each (issue 48);
``samplers.composition`` still gives every name it gave before, the same objects as their
new homes'."""

from __future__ import annotations

from tests.moved import assert_re_exported

#: Each name ``composition`` exported before the split that moved, by its new home.
HOMES = {
    "per_chain": ["PerChainMetricSampler"],
    "warmup_tuners": ["ADAPTED_METRICS", "METRIC_POOLING", "metric_tuners", "step_size_tuners",
                      "tuners"],
}  # fmt: skip

#: ``composition.__all__`` before the split: unchanged.
PUBLIC = [
    "ADAPTED_METRICS", "MAX_STEPS", "METRIC_POOLING", "PerChainMetricSampler", "compose",
    "hamiltonian", "integrator", "metric_tuners", "metropolis_trajectory", "momentum_refresh",
    "named_refresh", "named_trajectory", "no_u_turn", "reducer", "step_size_tuners",
    "structure", "tuners", "with_shadow",
]  # fmt: skip


def test_every_name_is_where_it_was():
    homes = {f"hamiltonia.samplers.{module}": names for module, names in HOMES.items()}
    assert_re_exported("hamiltonia.samplers.composition", homes, PUBLIC)
