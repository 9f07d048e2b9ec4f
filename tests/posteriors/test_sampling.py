"""Default NUTS (4 chains of 1,000 + 1,000) on the suite's posteriors agrees with
posteriordb's reference means and sds, by MCSE z-scores within Bonferroni's bound
(:mod:`hamiltonia.posteriors.compare`). The regressions and the HMM over 100 steps run in
seconds, compiled, in every test run; the HMM over 416 steps and the Gaussian processes are
``slow``."""

from __future__ import annotations

import pytest

import hamiltonia as hm
import hamiltonia.posteriors as posteriors

SLOW = [n for n in posteriors.names() if n not in posteriors.FAST]


def _check(name, seed):
    model = posteriors.get(name)
    result = hm.sample(model, seed=seed, progress=False, **posteriors.sample_options(name))
    assert result.n_chains == 4
    check = posteriors.compare(name, result)
    assert check.passed, "\n".join(check.failures())
    return result


@pytest.mark.parametrize("name", posteriors.FAST)
def test_fast_posteriors_agree_with_the_reference(name):
    result = _check(name, seed=20261207)
    assert result.attrs["compiled"]
    assert result.n_divergent == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_slow_posteriors_agree_with_the_reference(name):
    _check(name, seed=20261207)
