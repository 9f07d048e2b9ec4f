"""A run checked against posteriordb's reference posterior: MCSE z-scores of means and sds.

For each parameter of the reference (Stan's name; hamiltonia's 0-based ``beta[0]`` is
Stan's ``beta[1]``, :func:`stan_name`), with the run's mean :math:`\\bar x`, sd :math:`s`
and their Monte Carlo standard errors (:func:`mcse_sd`; ArviZ's ``mcse`` of the mean, which
accounts for the chains' autocorrelation), and the reference's
:math:`\\hat m_1, \\hat m_2` with theirs (:class:`~hamiltonia.posteriors.data_files.Reference`):

**Means.** :math:`z = (\\bar x - \\hat m_1) / \\sqrt{\\text{mcse}^2 +
\\text{mcse}_{\\text{ref}}^2}`,
the difference of two independent estimates of the same mean over its standard error:
approximately :math:`N(0, 1)` when the run is right.

**Standard deviations.** The reference sd is :math:`\\hat\\sigma = (\\hat m_2 - \\hat
m_1^2)^{1/2}`. Its error does not follow from the two files' MCSEs alone: the errors of
:math:`\\hat m_1` and :math:`\\hat m_2` are strongly correlated (for :math:`|m_1| \\gg \\sigma`
they nearly cancel in :math:`\\hat m_2 - \\hat m_1^2`) and their covariance is not given. It
is derived instead from the sd's own asymptotics: with :math:`n_{\\text{eff}}` the effective
sample size and :math:`\\kappa = \\mu_4/\\sigma^4` the kurtosis,
:math:`\\operatorname{Var}\\hat\\sigma^2 \\approx \\sigma^4(\\kappa - 1)/n_{\\text{eff}}`, so by
the delta method :math:`\\operatorname{Var}\\hat\\sigma \\approx \\sigma^2(\\kappa-1)/(4
n_{\\text{eff}})`. The reference's mean has :math:`\\text{mcse}_{\\text{ref}}^2 =
\\sigma^2/n_{\\text{eff}}`, hence

.. math::

    \\text{se}(\\hat\\sigma_{\\text{ref}}) \\approx \\text{mcse}_{\\text{ref}}
    \\sqrt{(\\kappa - 1)/4}

(:math:`\\text{mcse}_{\\text{ref}}/\\sqrt 2` for a normal posterior), with :math:`\\kappa` the
run's own estimate and the effective sample size of the squared deviations taken equal to
that of the draws (as for posteriordb's nearly independent thinned reference draws). The sd
check is :math:`z_{\\text{sd}} = (s - \\hat\\sigma) / \\sqrt{\\text{se}(s)^2 +
\\text{se}(\\hat\\sigma)^2}`, and the ratio :math:`s / \\hat\\sigma` is reported with its
tolerance :math:`1 \\pm b\\,\\sqrt{\\text{se}(s)^2 + \\text{se}(\\hat\\sigma)^2}/\\hat\\sigma`
(the same test).

**Rounding.** posteriordb prints :math:`\\hat m_2` to about eight significant digits; a value
rounded to a unit :math:`q`
(:attr:`~hamiltonia.posteriors.data_files.Reference.mean_square_resolution`)
is off by a uniform error of sd :math:`q/\\sqrt{12}`. So :math:`\\hat m_1^2`'s and
:math:`\\hat m_2`'s rounding add :math:`(q_2^2 + 4\\hat m_1^2 q_1^2)/12` to the variance of
:math:`\\hat\\sigma^2`, hence that over :math:`4\\hat\\sigma^2` to
:math:`\\text{se}(\\hat\\sigma)^2`, and :math:`q_1^2/12` to
:math:`\\text{mcse}_{\\text{ref}}^2`. It matters where :math:`|m_1| \\gg \\sigma`: for
``sblri-blr``'s coefficients (:math:`m_1 \\approx 1`, :math:`\\sigma \\approx 10^{-3}`,
:math:`q_2 = 10^{-7}`) it is 1.5 % of the sd, more than its Monte Carlo error.

**The run's sd error.** By the same delta method, :math:`\\text{se}(s)^2 \\approx
\\operatorname{Var}[(x-\\bar x)^2] / (4 s^2\\, n_{\\text{eff}}[(x-\\bar x)^2])`, with the
effective sample size *of the squared deviations* (:func:`mcse_sd`). ArviZ's
``mcse(method="sd")`` (arviz-stats 0.8) divides by the effective sample size of :math:`x`
instead, which for NUTS is often above the number of draws (its chains are antithetic in
:math:`x`, not in :math:`x^2`): on ``mcycle_gp-accel_gp`` it made 14 of 66 sd z-scores
exceed 2 in a run whose means were right.

**The bound.** With :math:`P` parameters, :math:`2P` z-scores are tested; for a family-wise
false-alarm rate :math:`\\alpha` (default 0.01 per posterior: one correct run in a hundred
fails) Bonferroni's bound is :math:`b = \\Phi^{-1}(1 - \\alpha / (2 \\cdot 2P))`, two-sided:
3.23 for two parameters, 3.48 for five, 3.66 for ten.

posteriordb: Magnusson, Torgander, Bürkner, Zhang, Carpenter and Vehtari, "posteriordb:
Testing, Benchmarking and Developing Bayesian Inference Algorithms", 2024
(https://github.com/stan-dev/posteriordb).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from hamiltonia.posteriors.data_files import Reference, load_reference

__all__ = ["Comparison", "compare", "mcse_sd", "stan_name", "z_bound"]

#: The family-wise rate of false alarms of one posterior's check (module docs).
ALPHA = 0.01

_INDEX = re.compile(r"\[([0-9, ]+)\]$")


def stan_name(name: str) -> str:
    """Stan's 1-based name of hamiltonia's element name: ``beta[0]`` is ``beta[1]``,
    ``L[1, 0]`` is ``L[2,1]``; a scalar's name is its own."""
    match = _INDEX.search(name)
    if match is None:
        return name
    indices = [int(i) + 1 for i in match.group(1).split(",")]
    return f"{name[: match.start()]}[{','.join(map(str, indices))}]"


def mcse_sd(x: np.ndarray) -> np.ndarray:
    """The Monte Carlo standard error of the sd of draws ``x`` ``(P, chains, draws)``, by
    the delta method with the effective sample size of the squared deviations (module
    docs): :math:`\\sqrt{\\operatorname{Var}[d] / (4\\bar d\\, n_{\\text{eff}}(d))}`,
    :math:`d = (x - \\bar x)^2`."""
    from hamiltonia.diagnostics.univariate import ess as effective_size

    d = (x - x.mean(axis=(1, 2), keepdims=True)) ** 2
    # hamiltonia's estimators (ArviZ's values) take (chains, draws, quantities).
    ess = np.asarray(effective_size(np.moveaxis(d, 0, -1), "mean"))
    mean_d = d.mean(axis=(1, 2))
    return np.sqrt(d.var(axis=(1, 2)) / ess / (4.0 * np.maximum(mean_d, 1e-300)))


def z_bound(n_tests: int, alpha: float = ALPHA) -> float:
    """Bonferroni's two-sided bound on ``n_tests`` standard normal z-scores at family-wise
    level ``alpha``: :math:`\\Phi^{-1}(1 - \\alpha / (2 n))`."""
    return float(norm.isf(alpha / (2.0 * n_tests)))


@dataclass(frozen=True)
class Comparison:
    """A run against the reference, per parameter (arrays in the order of ``names``).

    Attributes
    ----------
    posterior : str
    names : tuple of str
        Stan's names.
    mean, mean_mcse, ref_mean, ref_mean_mcse, z_mean : numpy.ndarray
        The run's mean and MCSE, the reference's and its error (MCSE and rounding), and
        :math:`z`.
    sd, sd_mcse, ref_sd, ref_sd_se, z_sd : numpy.ndarray
        The same for the sds.
    bound : float
        Bonferroni's bound on every :math:`|z|` (:func:`z_bound` of ``2 * len(names)``).
    """

    posterior: str
    names: tuple
    mean: np.ndarray
    mean_mcse: np.ndarray
    ref_mean: np.ndarray
    ref_mean_mcse: np.ndarray
    z_mean: np.ndarray
    sd: np.ndarray
    sd_mcse: np.ndarray
    ref_sd: np.ndarray
    ref_sd_se: np.ndarray
    z_sd: np.ndarray
    bound: float

    @property
    def sd_ratio(self) -> np.ndarray:
        """:math:`s / \\hat\\sigma_{\\text{ref}}`."""
        return self.sd / self.ref_sd

    @property
    def sd_ratio_tolerance(self) -> np.ndarray:
        """The half-width of the accepted ratios around 1, :math:`b\\,\\sqrt{\\text{se}(s)^2 +
        \\text{se}(\\hat\\sigma)^2} / \\hat\\sigma` (the sd's z-test as a ratio)."""
        return self.bound * np.hypot(self.sd_mcse, self.ref_sd_se) / self.ref_sd

    @property
    def max_abs_z(self) -> float:
        """The largest :math:`|z|`, of means and sds."""
        return float(np.max(np.abs(np.concatenate([self.z_mean, self.z_sd]))))

    @property
    def passed(self) -> bool:
        """Whether every :math:`|z|` is within the bound."""
        return self.max_abs_z <= self.bound

    def failures(self) -> list[str]:
        """One line per z-score past the bound (or not a number), naming the parameter."""
        out = []
        for i, name in enumerate(self.names):
            if not abs(self.z_mean[i]) <= self.bound:
                out.append(
                    f"{name}: mean {self.mean[i]:.6g} against {self.ref_mean[i]:.6g} "
                    f"(z = {self.z_mean[i]:.2f}, bound {self.bound:.2f})"
                )
            if not abs(self.z_sd[i]) <= self.bound:
                out.append(
                    f"{name}: sd {self.sd[i]:.6g} against {self.ref_sd[i]:.6g} (ratio "
                    f"{self.sd_ratio[i]:.4f}, z = {self.z_sd[i]:.2f}, bound {self.bound:.2f})"
                )
        return out

    def table(self):
        """A pandas DataFrame, one row per parameter (Stan's names)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "mean": self.mean,
                "ref_mean": self.ref_mean,
                "z_mean": self.z_mean,
                "sd": self.sd,
                "ref_sd": self.ref_sd,
                "sd_ratio": self.sd_ratio,
                "tolerance": self.sd_ratio_tolerance,
                "z_sd": self.z_sd,
            },
            index=pd.Index(self.names, name="parameter"),
        )


def _columns(result, names: tuple) -> np.ndarray:
    """The run's draws ``(chains, draws, len(names))`` of Stan's ``names``."""
    by_stan = {stan_name(n): i for i, n in enumerate(result.names)}
    missing = [n for n in names if n not in by_stan]
    if missing:
        raise KeyError(f"the run has no parameter for the reference's {missing}")
    if getattr(result, "log_weights", None) is not None:
        raise ValueError("compare takes an unweighted run (its MCSEs are ArviZ's)")
    return np.asarray(result.draws)[..., [by_stan[n] for n in names]]


def compare(posterior: str, result, alpha: float = ALPHA,
            reference: Reference | None = None) -> Comparison:  # fmt: skip
    """The :class:`Comparison` of ``result`` (a :class:`hamiltonia.Result` of the model
    :func:`hamiltonia.posteriors.get` gives for ``posterior``) with posteriordb's
    reference; ``alpha`` the family-wise false-alarm rate of the bound (module docs)."""
    ref = load_reference(posterior) if reference is None else reference
    draws = _columns(result, ref.names)
    x = np.moveaxis(draws, -1, 0)  # (P, chains, draws)
    mean = x.mean(axis=(1, 2))
    sd = x.std(axis=(1, 2))
    from hamiltonia.diagnostics.univariate import mcse

    mean_mcse = np.asarray(mcse(np.moveaxis(x, 0, -1), "mean"))
    sd_mcse = mcse_sd(x)
    centred = x - mean[:, None, None]
    kurtosis = np.mean(centred**4, axis=(1, 2)) / np.maximum(sd, 1e-300) ** 4
    # The reference's errors: Monte Carlo (module docs) and the rounding of the files.
    ref_mean_se = np.sqrt(ref.mean_mcse**2 + ref.mean_resolution**2 / 12.0)
    q1, q2 = ref.mean_resolution, ref.mean_square_resolution
    rounding_var = (q2**2 + 4.0 * (ref.mean * q1) ** 2) / 12.0
    ref_sd_se = np.sqrt(
        ref.mean_mcse**2 * np.maximum(kurtosis - 1.0, 0.0) / 4.0
        + rounding_var / (4.0 * np.maximum(ref.sd, 1e-300) ** 2)
    )
    z_mean = (mean - ref.mean) / np.hypot(mean_mcse, ref_mean_se)
    z_sd = (sd - ref.sd) / np.hypot(sd_mcse, ref_sd_se)
    return Comparison(
        posterior=posterior,
        names=ref.names,
        mean=mean,
        mean_mcse=mean_mcse,
        ref_mean=ref.mean,
        ref_mean_mcse=ref_mean_se,
        z_mean=z_mean,
        sd=sd,
        sd_mcse=sd_mcse,
        ref_sd=ref.sd,
        ref_sd_se=ref_sd_se,
        z_sd=z_sd,
        bound=z_bound(2 * len(ref.names), alpha),
    )
