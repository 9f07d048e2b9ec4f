r"""Error bars a user can trust: the MCSE every registered sampler reports, calibrated with
:mod:`hamiltonia.testing.calibration` against replicated runs on two targets with exact
moments, one correlated (``correlated-gaussian``, AR(1) correlation 0.9) and one with heavy
tails (``student-t``, 10 degrees of freedom: a Gaussian with a random scale).

Each sampler is calibrated with the estimator hamiltonia reports for it: the pair estimate
of an antithetic sampler, the self-normalised estimate of one with importance weights (a
shadow Hamiltonian's), the plain one otherwise. For each estimate the ratio of the RMS error
made to the RMS MCSE reported has a confidence interval (family-wise level :data:`LEVEL`
over the estimates, Bonferroni), and the checks are asymmetric, as the harm is:

* an MCSE too **small** breaks the promise: no interval may lie above 1;
* an MCSE too **large** is safe but wasteful: no interval may lie below :data:`TOLERANCE`
  (the antithetic pair estimate errs up to 18 % on that side by design, when its F test
  takes the spread of two pairs over the batch means: ``hamiltonia.diagnostics.pair_error``);
* the coverage of :math:`\pm 2` MCSE, averaged over the estimates of a seed, is the nominal
  0.954 within its Monte Carlo error (the seeds are independent; the estimates of a seed
  are taken as fully dependent, the widest null spread).

The whole matrix is ``slow`` (200 seeds, a few minutes a sampler). CI runs the guard: the
estimators hamiltonia writes itself, antithetic pairs and the batched MCSE of importance
weights on a chain that keeps its momentum (``ps2hmc``, whose means' MCSE was 1.9 times the
error before), on both targets.
"""

import math

import numpy as np
import pytest
from scipy import stats

import hamiltonia as hm
from hamiltonia.testing.calibration import COVERAGE_Z, NOMINAL_COVERAGE, check_calibration

TARGETS = ("correlated-gaussian", "student-t")
#: Family-wise level of each sampler's checks.
LEVEL = 0.01
#: The lowest ratio of error made to error reported that is tolerated (a reported MCSE at
#: most 1.25 times the error).
TOLERANCE = 0.8
RUN = {"chains": 4, "warmup": 500, "draws": 1000}
#: A sampler that needs a data target (its integrator splits the rows) runs on the linear
#: regression's Gaussian posterior in place of the correlated target; no data target has
#: heavy tails.
DATA_TARGET = {"split-hmc": {"correlated-gaussian": "linear-regression", "student-t": None}}
#: The settings under which a sampler's runs mix, as a user would choose them once the
#: diagnostics warned. A MALA step along the narrowest of the correlated Gaussian's
#: directions (standard deviation 0.23 against 4.4) moves a few hundredths of the widest, so
#: every run of 1,000 draws has R-hat above 1.01 and an ESS near ten, and the reported MCSE,
#: estimated from so few effective draws, covers the truth 91 % of the time; with the dense
#: metric warm-up adapts it mixes. A random walk has no metric to adapt: it runs on the 3-d
#: target of the same family, 5,000 draws (1,000 cover 92 %).
SETTINGS = {"mala": {"metric": "dense"}, "rwmh": {"dim": 3, "draws": 5000}}


def _estimator(sampler: str, target: str) -> str:
    """The estimate hamiltonia reports for ``sampler``: pairs, weighted or plain."""
    built = hm.samplers.build(sampler, hm.targets.get(target))
    if built.reducer.pairs:
        return "pairs"
    return "weighted" if built.weighted else "plain"


def assert_calibrated(sampler: str, target: str, seeds: int) -> None:
    target = DATA_TARGET.get(sampler, {}).get(target, target)
    if target is None:
        pytest.skip(f"{sampler} needs a data target; none has heavy tails")
    estimator = _estimator(sampler, target)
    result = check_calibration(target, sampler, seeds=seeds, estimator=estimator, level=LEVEL,
                               check=False, **{**RUN, **SETTINGS.get(sampler, {})})  # fmt: skip
    small = [row for row in result.rows if not row.exact and row.ratio_ci[0] > 1.0]
    large = [row for row in result.rows if not row.exact and row.ratio_ci[1] < TOLERANCE]
    for rows, what in ((small, "too small"), (large, f"above 1/{TOLERANCE:g} of the error")):
        assert not rows, f"{sampler} on {target}: MCSE {what}: " + "; ".join(
            f"{row.name} ratio {row.ratio:.3g} [{row.ratio_ci[0]:.3g}, {row.ratio_ci[1]:.3g}]"
            for row in rows
        )
    # Per seed, the share of estimates whose +-2 MCSE interval covers the truth; the seeds
    # are independent, so its mean has a binomial spread of at most p(1-p)/n.
    covered = np.abs(result.estimates - result.truth) <= COVERAGE_Z * result.mcse
    exact = np.array([row.exact for row in result.rows])
    share = covered[:, ~exact].mean(axis=1)
    p = NOMINAL_COVERAGE
    z = (share.mean() - p) / math.sqrt(p * (1 - p) / share.size)
    limit = stats.norm.isf(LEVEL / 2)
    assert abs(z) < limit, (
        f"{sampler} on {target}: +-2 MCSE covers {share.mean():.3f} of the truths "
        f"(nominal {p:.3f}, z = {z:.2f}); " + str(result)
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("sampler", ["a-hmc", "ps2hmc"])
def test_the_error_bars_hamiltonia_computes_itself_are_calibrated(sampler, target):
    """The guard in CI: the antithetic pair estimate (an MCSE 1.2-4.7 times too small
    before) and the weighted estimate of a chain that keeps its momentum, on both targets."""
    assert_calibrated(sampler, target, seeds=100)


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("sampler", hm.samplers.names())
def test_every_samplers_error_bars_are_calibrated(sampler, target):
    assert_calibrated(sampler, target, seeds=200)
