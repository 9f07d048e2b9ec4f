"""The published MHMC acceptance, pinned at the published step size on one BLR data set.

Thesis Table 5.3 reports MHMC accepting 82.35 % on Pima at ε = 0.0300, L = 50, g = 0.2
(Table 3.8). The magnetic flow the thesis describes (hamiltonia's MHMC) accepts nearly all
proposals there; the map the author's public code computes (``field="research-code"``)
accepts fewer at the stated g and more at half of it. The published figure lies strictly
between the code's map at g and at g/2, each by many Monte Carlo standard errors, and far
below the flow at either strength: the published figure comes from the code's map with an
effective field in [g/2, g], not from the method the thesis describes. The reproduction page
and the ``mhmc-field`` experiment give the other data sets.
"""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.diagnostics.estimators import mcse

PUBLISHED = 82.35  # %, thesis Table 5.3, Pima, MHMC
Z = 4.0


def _accepted(field: str, g: float) -> tuple[float, float]:
    """Percentage of proposals accepted and its Monte Carlo standard error."""
    target = hm.targets.get("blr-pima", setting="paper")
    result = hm.sample(
        target, "mhmc", chains=4, warmup=200, draws=2000, seed=11, progress=False,
        initial=np.zeros((4, target.dim)), step_size=0.0300, n_steps=50, field=field, g=g,
        metric="identity", adapt_step_size=False,
    )  # fmt: skip
    accepted = np.asarray(result.stats["accepted"], dtype=float)
    return 100 * accepted.mean(), 100 * float(mcse(accepted[..., None])[0])


@pytest.fixture(scope="module")
def rates():
    return {
        "flow g": _accepted("research", 0.2),
        "flow g/2": _accepted("research", 0.1),
        "code g": _accepted("research-code", 0.2),
        "code g/2": _accepted("research-code", 0.1),
    }


def test_the_described_flow_cannot_give_the_published_acceptance(rates):
    for key in ("flow g", "flow g/2"):
        value, se = rates[key]
        assert (value - PUBLISHED) / se > Z, (key, value, se)


def test_the_code_s_map_brackets_the_published_acceptance(rates):
    low, low_se = rates["code g"]
    high, high_se = rates["code g/2"]
    assert (PUBLISHED - low) / low_se > Z, (low, low_se)
    assert (high - PUBLISHED) / high_se > Z, (high, high_se)
