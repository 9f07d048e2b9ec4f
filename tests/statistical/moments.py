"""z-scores of Monte Carlo estimates against exact moments.

For each parameter, the posterior mean and variance are estimated from the draws, and each
estimate is compared with its exact value in units of its Monte Carlo standard error (MCSE,
from ArviZ's ESS of the mean):

* mean: :math:`z = (\\bar x - \\mu) / \\text{MCSE}(\\bar x)`;
* variance: :math:`z = (\\overline{(x - \\mu)^2} - \\sigma^2)
  / \\text{MCSE}(\\overline{(x-\\mu)^2})`,
  using the exact mean :math:`\\mu`, so the estimate is a plain average of one function.

A correct sampler gives z-scores that are approximately standard normal. The suites compare
about a hundred z-scores in all, so the threshold is 4: under correct sampling the chance
that any one of them exceeds it by accident is below 1%, while a biased sampler fails
(see ``test_the_check_detects_a_biased_sampler``).
"""

import numpy as np

from hamiltonia import diagnostics

Z_THRESHOLD = 4.0


def moment_z_scores(draws, exact, params=None):
    """Return (z_mean, z_var) arrays for the selected parameter indices."""
    idx = np.arange(draws.shape[-1]) if params is None else np.asarray(params)
    x = draws[..., idx]
    mu, var = exact.mean[idx], exact.var[idx]
    z_mean = (x.mean(axis=(0, 1)) - mu) / diagnostics.mcse(x, "mean")
    sq = (x - mu) ** 2
    z_var = (sq.mean(axis=(0, 1)) - var) / diagnostics.mcse(sq, "mean")
    return z_mean, z_var


def assert_moments_recovered(result, exact, params=None):
    z_mean, z_var = moment_z_scores(result.draws, exact, params)
    bad = {
        "mean": np.round(z_mean[np.abs(z_mean) > Z_THRESHOLD], 2).tolist(),
        "var": np.round(z_var[np.abs(z_var) > Z_THRESHOLD], 2).tolist(),
    }
    assert np.all(np.abs(z_mean) < Z_THRESHOLD) and np.all(np.abs(z_var) < Z_THRESHOLD), (
        f"z-scores beyond {Z_THRESHOLD}: {bad}"
    )
