"""z-scores of Monte Carlo estimates against exact moments.

For each parameter, the posterior mean and variance are estimated from the draws, and each
estimate is compared with its exact value in units of its Monte Carlo standard error (MCSE,
from ArviZ's ESS of the mean):

* mean: :math:`z = (\\bar x - \\mu) / \\text{MCSE}(\\bar x)`;
* variance: :math:`z = (\\overline{(x - \\mu)^2} - \\sigma^2)
  / \\text{MCSE}(\\overline{(x-\\mu)^2})`,
  using the exact mean :math:`\\mu`, so the estimate is a plain average of one function.

A correct sampler gives z-scores that are approximately standard normal once the ESS is large
enough for the MCSE itself to be accurate (its relative error is about :math:`1/\\sqrt{2\\,
\\text{ESS}}` for independent draws and larger for autocorrelated ones), so every estimate must
rest on an ESS of at least ``MIN_ESS``; a run too short for that fails, asking for more draws,
rather than passing or failing by luck. The suites compare
about a hundred z-scores in all, so the threshold is 4: under correct sampling the chance
that any one of them exceeds it by accident is below 1%, while a biased sampler fails
(see ``test_the_check_detects_a_biased_sampler``).
"""

import numpy as np

from hamiltonia import diagnostics

Z_THRESHOLD = 4.0
MIN_ESS = 1000


def moment_z_scores(draws, exact, params=None):
    """Return (z_mean, z_var) arrays for the selected parameter indices."""
    idx = np.arange(draws.shape[-1]) if params is None else np.asarray(params)
    x = draws[..., idx]
    mu, var = exact.mean[idx], exact.var[idx]
    z_mean = (x.mean(axis=(0, 1)) - mu) / diagnostics.mcse(x, "mean")
    sq = (x - mu) ** 2
    z_var = (sq.mean(axis=(0, 1)) - var) / diagnostics.mcse(sq, "mean")
    return z_mean, z_var


def min_ess(draws, exact, params=None):
    """The smallest ESS (of the mean) among the parameters and their squared deviations."""
    idx = np.arange(draws.shape[-1]) if params is None else np.asarray(params)
    x = draws[..., idx]
    sq = (x - exact.mean[idx]) ** 2
    return float(min(diagnostics.ess(x, "mean").min(), diagnostics.ess(sq, "mean").min()))


def assert_moments_recovered(result, exact, params=None):
    ess = min_ess(result.draws, exact, params)
    assert ess >= MIN_ESS, f"ESS {ess:.0f} < {MIN_ESS}: too short a run for a z-test; draw more"
    z_mean, z_var = moment_z_scores(result.draws, exact, params)
    bad = {
        "mean": np.round(z_mean[np.abs(z_mean) > Z_THRESHOLD], 2).tolist(),
        "var": np.round(z_var[np.abs(z_var) > Z_THRESHOLD], 2).tolist(),
    }
    assert np.all(np.abs(z_mean) < Z_THRESHOLD) and np.all(np.abs(z_var) < Z_THRESHOLD), (
        f"z-scores beyond {Z_THRESHOLD}: {bad}"
    )


def weighted_moment_z_scores(draws, log_weights, exact):
    """z-scores of self-normalised importance-weighted estimates (shadow samplers).

    With weights :math:`w_i` and :math:`\\bar w` their mean, the error of the weighted
    mean of :math:`f` is :math:`\\hat\\mu_f - \\mu_f = \\overline{y}` with
    :math:`y_i = w_i (f_i - \\mu_f) / \\bar w`, to first order in the error of
    :math:`\\bar w` (the delta method; the term dropped is a product of two errors).
    So :math:`z = \\bar y / \\text{MCSE}(\\bar y)`, with the MCSE from ArviZ's ESS of the
    :math:`y_i` along the chains, for :math:`f = x` and :math:`f = (x - \\mu)^2`.
    Returns ``(z_mean, z_var, min_ess)``.
    """
    w = np.exp(log_weights - np.max(log_weights))
    w = (w / w.mean())[..., None]
    y_mean = w * (draws - exact.mean)
    y_var = w * ((draws - exact.mean) ** 2 - exact.var)
    z = [y.mean(axis=(0, 1)) / diagnostics.mcse(y, "mean") for y in (y_mean, y_var)]
    ess = min(diagnostics.ess(y, "mean").min() for y in (y_mean, y_var))
    return z[0], z[1], float(ess)


def assert_weighted_moments_recovered(result, exact):
    z_mean, z_var, ess = weighted_moment_z_scores(result.draws, result.log_weights, exact)
    assert ess >= MIN_ESS, f"ESS {ess:.0f} < {MIN_ESS}: too short a run for a z-test; draw more"
    assert np.all(np.abs(z_mean) < Z_THRESHOLD) and np.all(np.abs(z_var) < Z_THRESHOLD), (
        f"z-scores beyond {Z_THRESHOLD}: mean {np.round(z_mean, 2)}, var {np.round(z_var, 2)}"
    )
