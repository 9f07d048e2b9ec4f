"""Statistical recovery of known moments with per-chain metric adaptation (issue 30, item 4).

Fixed seeds; tolerances are z-scores on the Monte Carlo standard error (see
:mod:`hamiltonia.testing.moments`), as in :mod:`tests.statistical.test_recovery`.
"""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.targets.gaussian import DiagonalGaussian
from hamiltonia.testing import assert_moments_recovered

# (target, warmup, draws, compiled): the registered 100-d Gaussian with log-normal scales
# (0.07 to 8.3) on the compiled path; on the NumPy path, which steps one chain at a time, a
# 10-d Gaussian with scales across three orders of magnitude.
CASES = [
    ("gaussian-d100", 1000, 1000, True),
    ("scales-d10", 1000, 1500, False),
]


def _target(name: str):
    if name == "scales-d10":
        return DiagonalGaussian(10, scales=np.logspace(-1.5, 1.5, 10))
    return hm.targets.get(name)


IDS = [f"{name}-{'compiled' if compiled else 'numpy'}" for name, *_, compiled in CASES]


@pytest.mark.parametrize(("name", "warmup", "draws", "compiled"), CASES, ids=IDS)
def test_nuts_with_a_metric_per_chain_recovers_the_moments(name, warmup, draws, compiled):
    """NUTS, each chain adapting its diagonal metric from its own warm-up draws: the means
    and variances within z-scores of their MCSE, and each chain's metric its own estimate of
    the variances (within a factor of 1.5 of them: a window of 500 draws estimates a
    variance to about 10 %, so this bounds every one of the 4 x dim estimates by far more
    than their error while a metric left at the identity, or one chain's mixed up with
    another's scales, is off by far more)."""
    target = _target(name)
    sampler = hm.samplers.build("nuts", target, adapt_metric="per-chain")
    result = hm.sample(target, sampler, chains=4, warmup=warmup, draws=draws, seed=2024,
                       progress=False, compiled=compiled)  # fmt: skip
    assert result.attrs["compiled"] is compiled
    assert_moments_recovered(result, target.exact_moments)
    metrics = sampler.chain_metrics
    assert len(metrics) == 4 and len({id(m) for m in metrics}) == 4
    for metric in metrics:
        ratio = metric.inverse_mass / target.scales**2
        assert np.all((ratio > 1 / 1.5) & (ratio < 1.5)), (ratio.min(), ratio.max())
