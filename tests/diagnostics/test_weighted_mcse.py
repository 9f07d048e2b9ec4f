"""The MCSE of a weighted (self-normalised) mean in the summary: the delta method
(:func:`hamiltonia.diagnostics.summary.summary_table`), checked against a hand computation,
against the exact asymptotic variance of independent weighted draws, and for calibration on
a shadow sampler's runs with uneven weights."""

import warnings

import autograd.numpy as anp
import numpy as np
import pytest
from scipy import stats

import hamiltonia as hm
from hamiltonia.diagnostics import estimators
from hamiltonia.diagnostics.summary import summary_table

#: Probability that a correct MCSE fails a statistical check of this module by chance.
ALPHA = 1e-3


def test_the_mcse_is_that_of_the_linearised_values_by_hand():
    """The linearisation written out here, apart from the package's code: with the
    normalised weights, :math:`z_i = (w_i/\\bar w)(f_i - \\hat\\mu)` and
    :math:`\\text{MCSE} = \\text{sd}(z) / \\sqrt{\\text{ESS}_\\text{mean}(z)}`."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 60, 2))
    # Weights that grow with the first coordinate, as a shadow sampler's may with f.
    log_weights = 0.8 * x[..., 0] + 0.1 * rng.standard_normal((2, 60))
    table = summary_table(x, ["a", "b"], log_weights)
    w = np.exp(log_weights)
    mu = (w[..., None] * x).sum(axis=(0, 1)) / w.sum()
    z = (w / w.mean())[..., None] * (x - mu)
    # The ESS does not see a shift: that of z is that of the linearised values mu + z.
    expected = z.reshape(-1, 2).std(axis=0, ddof=1) / np.sqrt(hm.diagnostics.ess(z, "mean"))
    np.testing.assert_allclose(table["mean"].to_numpy(), mu, rtol=1e-12)
    np.testing.assert_allclose(table["mcse"].to_numpy(), expected, rtol=1e-10)
    # Equal weights: the unweighted MCSE, ArviZ's.
    equal = summary_table(x, ["a", "b"], np.zeros((2, 60)))
    np.testing.assert_allclose(equal["mcse"].to_numpy(), hm.diagnostics.mcse(x, "mean"),
                               rtol=1e-10)  # fmt: skip


def test_the_mcse_matches_the_exact_variance_of_tilted_independent_draws():
    """Independent :math:`x_i \\sim q = N(0, 1)` weighted by :math:`w = e^{ax}` target
    :math:`p = N(a, 1)`. For :math:`f = x` the self-normalised mean has asymptotic variance
    :math:`E_q[w^2 (x - a)^2] / (n E_q[w]^2) = e^{a^2}(1 + a^2)/n` (the moments of
    :math:`w^k` under :math:`q` tilt it to :math:`N(ka, 1)`), whereas the Kish factor gives
    :math:`e^{a^2}/n`, :math:`1 + a^2` times too small.

    ``n MCSE^2`` estimates :math:`\\sigma^2 = E[z^2]`, :math:`z = w(x - a)/E_q[w]`, with
    standard error :math:`\\sqrt{(E[z^4] - \\sigma^4)/n}`, :math:`E[z^4] =
    e^{6a^2}(81a^4 + 54a^2 + 3)` (the fourth central moment about :math:`a` of
    :math:`N(4a, 1)`, times :math:`E_q[w^4]/E_q[w]^4`). The ESS of independent draws adds
    an error well below that one.
    """
    a, chains, draws = 0.5, 4, 25_000
    n = chains * draws
    x = np.random.default_rng(0).standard_normal((chains, draws, 1))
    table = summary_table(x, ["x"], a * x[..., 0])
    sigma2 = np.exp(a**2) * (1 + a**2)
    fourth = np.exp(6 * a**2) * (81 * a**4 + 54 * a**2 + 3)
    se = np.sqrt((fourth - sigma2**2) / n)
    z = (n * table["mcse"].iloc[0] ** 2 - sigma2) / se
    # Under the old formula z is about -10.
    assert abs(z) < stats.norm.ppf(1 - ALPHA / 2), z


# ------------------------------------------------------------------ calibration on a run
#: A 50-d diagonal Gaussian with scales e^-1..e^1: at target_accept=0.6 the shadow samplers'
#: step sizes are large and their weights uneven (Kish factor 0.4-0.55).
SCALES = np.exp(np.linspace(-1.0, 1.0, 50))
SEEDS = (0, 1, 2, 3)


def _gaussian():
    return hm.Target.from_logp(lambda x: -0.5 * anp.sum((x / SCALES) ** 2, axis=-1),
                               dim=SCALES.size)  # fmt: skip


@pytest.mark.parametrize("sampler", ["shmc", "smhmc"])
def test_weighted_means_are_calibrated_on_their_mcse(sampler):
    """:math:`z_j = \\hat\\mu_j / \\text{MCSE}_j` (exact means 0) over the 50 coordinates
    and the seeds are about standard normal when the MCSE is right: their sum of squares is
    then about :math:`\\chi^2_n`, and must lie in its two-sided :math:`1 - \\alpha` interval.

    The coordinates' errors are uncorrelated by symmetry: reflecting one coordinate
    (position and momentum) leaves the target, the shadow Hamiltonian and so the weights and
    the kernel unchanged, and flips that coordinate's error alone. The Kish-factor MCSE
    gave a mean square 1.6-1.9 here (well above the interval); a conservative one that
    fell below the interval would fail too.
    """
    target = _gaussian()
    z = []
    for seed in SEEDS:
        with warnings.catch_warnings():
            # Large steps on purpose: the run's checks may warn of them.
            warnings.simplefilter("ignore")
            run = hm.sample(target, sampler, chains=4, warmup=500, draws=4000, seed=seed,
                            progress=False, target_accept=0.6)  # fmt: skip
        # The case under test: weights uneven enough that how they move with f matters.
        assert estimators.kish_factor(run.log_weights) < 0.75
        table = run.summary()
        z.append(table["mean"].to_numpy() / table["mcse"].to_numpy())
    z = np.concatenate(z)
    low, high = stats.chi2.ppf([ALPHA / 2, 1 - ALPHA / 2], df=z.size)
    assert low < np.sum(z**2) < high, (np.mean(z**2), low / z.size, high / z.size)
