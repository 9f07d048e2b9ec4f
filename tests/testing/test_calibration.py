"""The calibration kit (hamiltonia.testing.calibration): the MCSE that NUTS reports for the
means of a Gaussian survives replicated runs, and estimators whose error bars are too small
(an MCSE divided by 3; the independent-draws standard error on an autocorrelated chain) are
caught, named in the assertion.

Every verdict here is the kit's own: a ratio interval at the Bonferroni-corrected confidence
of the default level (:data:`~hamiltonia.testing.calibration.CALIBRATION_LEVEL`). The runs
have fixed seeds, so each outcome is reproducible; the level bounds how often a calibrated
estimator would fail on fresh seeds.
"""

import dataclasses

import numpy as np
import pytest
from scipy import stats

import hamiltonia as hm
from hamiltonia.targets.base import ExactMoments
from hamiltonia.testing import correlated_gaussian
from hamiltonia.testing.calibration import (
    CALIBRATION_LEVEL,
    COVERAGE_Z,
    NOMINAL_COVERAGE,
    calibrate,
    check_calibration,
)

TARGET = correlated_gaussian(3)
#: Short runs, many seeds: 24 seeds of NUTS take about two seconds on the compiled path.
RUNS = dict(chains=4, warmup=300, draws=500)
SEEDS = 24


def _runs(sampler, seeds=SEEDS, **options):
    return [
        hm.sample(TARGET, sampler, seed=s, progress=False, **RUNS, **options) for s in range(seeds)
    ]


@pytest.fixture(scope="module")
def nuts_runs():
    return _runs("nuts")


def overconfident(run):
    """A test double: the library's MCSE divided by 3."""
    table = run.summary()
    return table["mean"].to_numpy(), table["mcse"].to_numpy() / 3


def independent_draws_se(run):
    """A test double: :math:`\\text{sd}/\\sqrt N` over all draws, as if they were
    independent (it ignores the autocorrelation)."""
    draws = run.draws
    n = draws.shape[0] * draws.shape[1]
    return draws.mean(axis=(0, 1)), draws.std(axis=(0, 1)) / np.sqrt(n)


def test_nuts_plain_error_bars_are_calibrated(nuts_runs):
    result = calibrate(nuts_runs, TARGET.exact_moments)  # check=True: raises if not
    assert result.passed
    assert [row.name for row in result.rows] == [
        "E[x1]", "E[x2]", "E[x3]", "E[x1^2]", "E[x2^2]", "E[x3^2]"
    ]  # fmt: skip
    assert all(row.ratio_ci[0] <= 1 <= row.ratio_ci[1] for row in result.rows)
    assert result.confidence == pytest.approx(1 - CALIBRATION_LEVEL / 6)
    assert result.estimates.shape == result.mcse.shape == (SEEDS, 6)


def test_check_calibration_runs_the_seeds(nuts_runs):
    result = check_calibration(TARGET, "nuts", seeds=SEEDS, **RUNS)
    again = calibrate(nuts_runs, TARGET.exact_moments, check=False)
    np.testing.assert_array_equal(result.estimates, again.estimates)
    np.testing.assert_array_equal(result.mcse, again.mcse)
    assert "nuts on GaussianTarget, 24 seeds x 4 chains x (300 warm-up, 500 draws)" in str(result)


def test_a_sampler_object_is_copied_for_each_run(nuts_runs):
    # A run adapts the sampler it is given: reused as is, the second seed would start from
    # the first one's adaptation. Copies give the runs of the sampler's name.
    sampler = hm.samplers.build("nuts", TARGET)
    result = check_calibration(TARGET, sampler, seeds=3, check=False, **RUNS)
    named = calibrate(nuts_runs[:3], TARGET.exact_moments, check=False)
    np.testing.assert_array_equal(result.estimates, named.estimates)


def test_an_mcse_divided_by_three_is_caught(nuts_runs):
    with pytest.raises(AssertionError, match=r"the overconfident error bars are not calibrated"):
        calibrate(nuts_runs, TARGET.exact_moments, estimator=overconfident)
    result = calibrate(nuts_runs, TARGET.exact_moments, estimator=overconfident, check=False)
    honest = calibrate(nuts_runs, TARGET.exact_moments, check=False)
    assert not result.passed
    # The same errors over a third of the MCSE: every ratio is three times the honest one.
    np.testing.assert_allclose(
        [row.ratio for row in result.rows], [3 * row.ratio for row in honest.rows], rtol=1e-12
    )
    assert str(result).splitlines()[-1].startswith("FAILED")


def test_the_independent_draws_error_is_caught_on_an_autocorrelated_chain():
    runs = _runs("mala")  # one leapfrog step: strongly autocorrelated draws
    with pytest.raises(AssertionError, match=r"independent_draws_se .* E\[x\d(\^2)?\]: ratio"):
        calibrate(runs, TARGET.exact_moments, estimator=independent_draws_se)
    # The library's MCSE, from the ESS, on the same runs passes: the double is what fails.
    assert calibrate(runs, TARGET.exact_moments).passed


def test_the_assertion_names_the_worst_estimate_first(nuts_runs):
    result = calibrate(nuts_runs, TARGET.exact_moments, estimator=overconfident, check=False)
    worst = max(result.rows, key=lambda row: abs(np.log(row.ratio)))
    assert result.failures()[0].startswith(f"{worst.name}: ratio")
    with pytest.raises(AssertionError) as caught:
        calibrate(nuts_runs, TARGET.exact_moments, estimator=overconfident)
    assert f"{worst.name}: ratio {worst.ratio:.3g}" in str(caught.value)


# --------------------------------------------------------------------------- the statistics


class _Given:
    """An estimator that returns given estimates and MCSEs, one row per call."""

    __name__ = "given"

    def __init__(self, estimates, mcse):
        self.rows = iter(zip(estimates, mcse, strict=True))

    def __call__(self, run):
        return next(self.rows)


@pytest.fixture(scope="module")
def small_run():
    return hm.sample(TARGET, "hmc", chains=2, warmup=50, draws=50, seed=0, progress=False)


def test_the_ratio_interval_and_the_coverage_follow_their_formulas(small_run):
    rng = np.random.default_rng(0)
    n, truth = 30, np.asarray(TARGET.exact_moments.mean)
    mcse = rng.uniform(0.5, 1.5, size=(n, 3))
    errors = rng.normal(size=(n, 3)) * mcse
    result = calibrate([small_run] * n, TARGET.exact_moments, estimator=_Given(truth + errors,
                       mcse), functions=("mean",), check=False)  # fmt: skip
    gamma = CALIBRATION_LEVEL / 3
    for k, row in enumerate(result.rows):
        ratio = np.sqrt(np.mean(errors[:, k] ** 2) / np.mean(mcse[:, k] ** 2))
        assert row.ratio == pytest.approx(ratio)
        assert row.ratio_ci == pytest.approx(
            (ratio * np.sqrt(n / stats.chi2.ppf(1 - gamma / 2, n)),
             ratio * np.sqrt(n / stats.chi2.ppf(gamma / 2, n)))
        )  # fmt: skip
        covered = np.sum(np.abs(errors[:, k]) <= COVERAGE_Z * mcse[:, k])
        assert row.coverage == covered / n
        exact = stats.binomtest(int(covered), n).proportion_ci(1 - gamma, method="exact")
        assert row.coverage_ci == pytest.approx((exact.low, exact.high))
        rms_mcse = np.sqrt(np.mean(mcse[:, k] ** 2))
        assert row.bias_z == pytest.approx(np.sqrt(n) * errors[:, k].mean() / rms_mcse)
    assert NOMINAL_COVERAGE == pytest.approx(stats.norm.cdf(2) - stats.norm.cdf(-2))


def test_calibrated_errors_pass_and_errors_three_times_larger_fail(small_run):
    rng = np.random.default_rng(1)
    n, truth = 40, np.asarray(TARGET.exact_moments.mean)
    errors = rng.normal(size=(n, 3))
    ones = np.ones((n, 3))
    good = calibrate([small_run] * n, TARGET.exact_moments, estimator=_Given(truth + errors,
                     ones), functions=("mean",))  # fmt: skip
    assert good.passed
    bad = calibrate([small_run] * n, TARGET.exact_moments, estimator=_Given(truth + 3 * errors,
                    ones), functions=("mean",), check=False)  # fmt: skip
    assert not bad.passed and not any(row.passed for row in bad.rows)
    assert all(row.ratio_ci[0] > 1 for row in bad.rows)


# -------------------------------------------------------------------------- the estimators


def test_each_estimator_reports_what_the_library_reports():
    weighted = hm.sample(TARGET, "s2hmc", seed=1, progress=False, **RUNS)
    paired = hm.sample(TARGET, "a-hmc", seed=1, progress=False, **RUNS)
    cases = [
        ("weighted", weighted, weighted.summary()),
        ("pairs", paired, paired.pair_summary()),
        ("control-variates", paired, paired.control_variate_summary()),
    ]
    for estimator, run, table in cases:
        result = calibrate([run, run], TARGET.exact_moments, estimator=estimator, check=False)
        np.testing.assert_allclose(result.estimates[0, :3], table["mean"], rtol=1e-14)
        np.testing.assert_allclose(result.mcse[0, :3], table["mcse"], rtol=1e-14)
    # The second moment: the library's estimator of the mean of the draws x^2.
    squares = dataclasses.replace(weighted, draws=weighted.draws**2, _summary=None)
    result = calibrate([weighted, weighted], TARGET.exact_moments, estimator="weighted",
                       check=False)  # fmt: skip
    np.testing.assert_allclose(result.estimates[0, 3:], squares.summary()["mean"], rtol=1e-14)
    np.testing.assert_allclose(result.mcse[0, 3:], squares.summary()["mcse"], rtol=1e-14)


def test_exact_control_variate_estimates_are_set_aside():
    # First-order control variates give a Gaussian's means to rounding (module docstring).
    result = check_calibration(TARGET, "hmc", seeds=4, estimator="control-variates",
                               control_variates=True, **RUNS)  # fmt: skip
    assert [row.exact for row in result.rows] == [True] * 3 + [False] * 3
    assert "exact" in str(result)
    assert result.pooled_ratio == pytest.approx(
        np.sqrt(np.mean([row.ratio**2 for row in result.rows[3:]]))
    )


# -------------------------------------------------------------------------- bad input


class _NoMoments(hm.Target):
    def __init__(self):
        super().__init__(1)

    def log_prob_and_grad(self, x):
        return -0.5 * np.sum(x**2, axis=-1), -x


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seeds": 1}, "seeds must be an integer >= 2"),
        ({"seeds": [3, 3]}, "at least 2 distinct integers >= 0"),
        ({"seeds": [0, -1]}, "at least 2 distinct integers >= 0"),
        ({"seeds": 2.5}, "seeds must be"),
        ({"seeds": True}, "seeds must be"),
        ({"level": 0}, r"level must be a number in \(0, 1\)"),
        ({"level": 1.0}, r"level must be a number in \(0, 1\)"),
        ({"level": "0.01"}, r"level must be a number in \(0, 1\)"),
        ({"estimator": "bogus"}, "estimator must be one of 'plain', 'weighted', 'pairs'"),
        ({"estimator": 3}, "estimator must be one of"),
        ({"functions": ()}, "functions must be a non-empty sequence of distinct names"),
        ({"functions": ("mean", "mean")}, "functions must be"),
        ({"functions": ("variance",)}, r"from \('mean', 'second moment'\)"),
        ({"functions": 2}, "functions must be"),
    ],
)
def test_bad_arguments_are_refused_before_any_run(kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_calibration(TARGET, "nuts", **kwargs)


def test_a_target_without_exact_moments_is_refused():
    with pytest.raises(ValueError, match="the target has no exact moments: give exact="):
        check_calibration(_NoMoments(), "hmc")


def test_an_estimator_that_does_not_apply_is_refused(small_run):
    weighted = hm.sample(TARGET, "s2hmc", chains=2, warmup=50, draws=50, seed=0, progress=False)
    exact = TARGET.exact_moments
    cases = [
        (small_run, "weighted", "has no importance weights"),
        (weighted, "plain", "carries importance weights .* use estimator='weighted'"),
        (small_run, "pairs", "has no antithetic pairs"),
    ]
    for run, estimator, message in cases:
        with pytest.raises(ValueError, match=f"estimator='{estimator}': .*{message}"):
            calibrate([run, run], exact, estimator=estimator)


def test_runs_and_results_are_checked(small_run):
    exact = TARGET.exact_moments
    with pytest.raises(ValueError, match="runs must hold at least 2 independent runs, got 1"):
        calibrate([small_run], exact)
    with pytest.raises(ValueError, match="a run has 3 parameters, the exact moments 2"):
        calibrate([small_run] * 2, ExactMoments(np.zeros(2), np.ones(2)))
    with pytest.raises(ValueError, match=r"must return \(estimates, mcse\) of shape \(3,\)"):
        calibrate([small_run] * 2, exact, estimator=lambda run: (np.zeros(2), np.ones(2)))
    with pytest.raises(ValueError, match="no coordinate has a finite exact mean"):
        calibrate([small_run] * 2, ExactMoments(np.full(3, np.nan), np.ones(3)))
