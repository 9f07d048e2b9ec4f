"""posteriordb's reference summaries and the z-score check of a run against them."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.stats import norm

import hamiltonia.posteriors as posteriors
from hamiltonia.posteriors.data_files import resolution


def test_stan_names_are_one_based():
    assert posteriors.stan_name("beta[0]") == "beta[1]"
    assert posteriors.stan_name("L[1, 0]") == "L[2,1]"
    assert posteriors.stan_name("sigma") == "sigma"
    assert posteriors.stan_name("zgp_sigma_1[19]") == "zgp_sigma_1[20]"


def test_the_bound_is_bonferronis():
    assert posteriors.z_bound(1, 0.05) == pytest.approx(1.959964, abs=1e-6)
    assert posteriors.z_bound(8) == pytest.approx(norm.isf(0.01 / 16))


def test_resolution_of_a_printed_number():
    assert resolution("0.3206177") == pytest.approx(1e-7)
    assert resolution("1.333923e-06") == pytest.approx(1e-12)
    assert resolution("412.2988") == pytest.approx(1e-4)
    assert resolution("12") == 1.0


@pytest.mark.parametrize("name", posteriors.names())
def test_the_references_are_read(name):
    ref = posteriors.load_reference(name)
    assert len(ref.names) == len(ref.mean) == len(ref.mean_square)
    assert np.all(ref.sd > 0) and np.all(ref.mean_mcse > 0)
    # The rounding of E[x^2] (at most half its last digit) is small against the variance it
    # is subtracted into (sblri-blr's coefficients come closest: 5 %).
    assert np.all(ref.mean_square_resolution / 2 < 0.1 * ref.sd**2)


class _Run:
    """A stand-in for a Result: independent draws (so ArviZ's MCSE is the iid one)."""

    log_weights = None

    def __init__(self, names, draws):
        self.names, self.draws = tuple(names), draws


def _iid_run(ref, shift_in_mcse=0.0, scale=1.0, n=4000, seed=0, centre_error=None):
    """Independent draws with the reference's moments; ``centre_error`` (per parameter)
    moves each mean by that sd times a standard normal, as the reference's own error moves
    the reference away from the truth."""
    rng = np.random.default_rng(seed)
    centre = ref.mean
    if centre_error is not None:
        centre = centre + centre_error * rng.standard_normal(len(ref.names))
    draws = rng.standard_normal((4, n // 4, len(ref.names))) * ref.sd * scale + centre
    draws += shift_in_mcse * ref.sd / np.sqrt(n) * (np.arange(len(ref.names)) == 0)
    # Stan's 1-based indices to hamiltonia's 0-based names, any index.
    names = [re.sub(r"\[(\d+)\]", lambda m: f"[{int(m[1]) - 1}]", n) for n in ref.names]
    return _Run(names, draws)


def test_exact_draws_pass_and_their_z_scores_are_standard():
    """Independent draws from a normal with the reference's moments: every z-score within
    the bound; and over 40 runs whose means are also moved by the reference's own error (so
    that the denominator's two errors are both realised), the z-scores of the means are
    N(0, 1): their mean within 4 standard errors of 0, :math:`4/\\sqrt m`, and their sd
    within 4 standard errors of 1, :math:`4/\\sqrt{2m}`, for :math:`m` z-scores."""
    name = "kidiq_with_mom_work-kidscore_mom_work"
    ref = posteriors.load_reference(name)
    check = posteriors.compare(name, _iid_run(ref))
    assert check.passed, check.failures()
    error = check.ref_mean_mcse
    zs = np.concatenate(
        [posteriors.compare(name, _iid_run(ref, seed=s, centre_error=error)).z_mean
         for s in range(1, 41)]
    )  # fmt: skip
    m = len(zs)
    assert abs(np.mean(zs)) < 4 / np.sqrt(m) and abs(np.std(zs) - 1) < 4 / np.sqrt(2 * m)
    table = check.table()
    assert list(table.index) == list(ref.names)
    assert np.all(np.abs(table["sd_ratio"] - 1) < table["tolerance"])


def test_a_shifted_mean_or_a_wrong_sd_fails():
    name = "kidiq_with_mom_work-kidscore_mom_work"
    ref = posteriors.load_reference(name)
    shifted = posteriors.compare(name, _iid_run(ref, shift_in_mcse=8.0))
    assert not shifted.passed
    assert shifted.failures()[0].startswith("beta[1]: mean")
    wide = posteriors.compare(name, _iid_run(ref, scale=1.1))
    assert not wide.passed and all(": sd " in f for f in wide.failures())


def test_a_run_without_a_parameter_is_refused():
    name = "sblri-blr"
    ref = posteriors.load_reference(name)
    run = _iid_run(ref)
    run.names = tuple(n.replace("sigma", "tau") for n in run.names)
    with pytest.raises(KeyError, match="sigma"):
        posteriors.compare(name, run)
