"""Bayesian Merton jump-diffusion on daily log returns (Merton 1976;
Mongwe 2022, thesis, §3.2.4 and §3.2.7-3.2.8).

The model of the thesis's eqs. 3.4-3.5: the log price follows

.. math::

    d\\ln X_t = (a - \\tfrac12 b^2)\\,dt + b\\,dZ_t + d\\Bigl(\\sum_{i=1}^{K_t} J_i\\Bigr),
    \\qquad K_t \\sim \\operatorname{Poisson}(\\lambda t),\\ J_i \\sim \\mathcal N(a_J, b_J^2),

and a return :math:`r` over a time step :math:`\\tau` has the Poisson mixture density of
eq. 3.5, **truncated to its first 10 terms** :math:`n = 0, \\dots, 9` (as in the thesis):

.. math::

    p(r \\mid \\theta) = \\sum_{n=0}^{9} \\frac{e^{-\\lambda\\tau}(\\lambda\\tau)^n}{n!}\\,
        \\mathcal N\\bigl(r;\\ a\\tau + n a_J,\\ b^2\\tau + n b_J^2\\bigr).

Decisions (the thesis, §3.2.4, leaves them open)
------------------------------------------------
* **τ = 1: time is counted in trading days** (``tau``). The data are daily log returns
  :math:`r_i = \\log(S_i/S_{i-1})` of consecutive trading days (weekends and holidays are not
  steps), so :math:`a` is the drift per day, :math:`b` the daily diffusive volatility and
  :math:`\\lambda` the expected number of jumps per day. With :math:`\\lambda\\tau` of order
  0.01-1 the ten terms hold all but :math:`P(K \\ge 10) \\le 1.1\\cdot10^{-7}` of the mixture
  (at :math:`\\lambda\\tau = 1`). The mean is :math:`a\\tau` as printed in eq. 3.5 (the SDE of
  eq. 3.4 has the drift :math:`a - b^2/2`; eq. 3.5 is implemented as written, so :math:`a`
  is the drift of :math:`\\ln X`).
* **Positive parameters on the log scale.** The sampled vector is
  :math:`\\theta = (a, \\log b, \\log\\lambda, a_J, \\log b_J)`, named ``a``, ``log_b``,
  ``log_lambda``, ``a_jump``, ``log_b_jump``. :meth:`~hamiltonia.Target.constrain` is the
  identity (the draws are reported under these names); :meth:`MertonJumpDiffusion.natural`
  gives :math:`b, \\lambda, b_J`.
* **Priors** (weakly informative, in units of one trading day; each an option through
  ``priors``): :math:`a \\sim \\mathcal N(0, 0.01^2)` and :math:`a_J \\sim \\mathcal N(0,
  0.05^2)`, and log-normal priors :math:`b \\sim \\operatorname{LogNormal}(\\log 0.01,
  1.5^2)`, :math:`\\lambda \\sim \\operatorname{LogNormal}(\\log 0.05, 1.5^2)`,
  :math:`b_J \\sim \\operatorname{LogNormal}(\\log 0.03, 1^2)`. Why these scales: a daily drift
  of 1 % (about 250 % a year) is some 20 times the standard error of the sample mean of the
  S&P 500 returns (0.013/√905); a median diffusive volatility of 1 % a day (16 % a year)
  with a 95 % range of 0.05 %-19 % covers the three markets (Table 3.1: daily standard
  deviations 0.85 %-4.4 %); a median of one jump per 20 days with 95 % range 0.003-0.95
  jumps a day keeps :math:`\\lambda\\tau` where the truncation is exact; jumps of mean
  within ±10 % and typical size 3 % (95 % range 0.4 %-21 %) are the scale of the crashes and
  rallies in the data. The log-normal density of :math:`b` times the Jacobian
  :math:`|db/d\\log b| = b` of the change of variables is exactly the normal density of
  :math:`\\log b`, so in the sampled coordinates every prior is normal:
  :math:`\\theta_k \\sim \\mathcal N(\\mu_k, s_k^2)`. For another ``tau`` the default
  location and scale of :math:`a` become :math:`0/\\tau, 0.01/\\tau`, :math:`b`'s median
  :math:`0.01/\\sqrt\\tau` and :math:`\\lambda`'s median :math:`0.05/\\tau`, so the prior
  says the same about a day.
* The log density includes every normalising constant (likelihood and prior), so
  :meth:`MertonJumpDiffusion.log_likelihood` is the truncated log-likelihood itself and
  :meth:`MertonJumpDiffusion.predictive_log_density` is a proper log predictive density.

Sampling: the posterior scales differ by a factor of several hundred (on the S&P 500 returns
the posterior sd of :math:`a` is about 2e-4, that of :math:`\\log\\lambda` about 0.15), so HMC
with the identity mass matrix (the thesis's :math:`M = I`) needs step sizes of a few 1e-4, as
in the thesis's Table 3.8, and mixes slowly in the log-scale parameters. An adapted diagonal
mass matrix (``hm.sample(..., metric="diagonal")``) removes most of that.

Paper setting (``setting="paper"``, :class:`NaturalMertonJumpDiffusion`): the five parameters
of eq. 3.5 sampled as they are, time in years (:math:`\\tau = 1/252`), flat priors on
:math:`a, b, \\lambda` and :math:`\\mathcal N(0, 1)` on :math:`a_J, b_J` (the weakest choice
that keeps the posterior proper; the thesis states no priors, transform or :math:`\\tau`).
There the published step sizes (Table 3.8, :math:`M = I`, :math:`L = 15`) are of the right
size: HMC accepts 92-94 % of proposals on the S&P 500 (thesis, Table 5.1: 92.7 %), 99.8 % on
Bitcoin and 99.5 % on USD/ZAR (99.99 %), but a chain started where :math:`|b|` is tiny (0.04,
a 4 % yearly volatility) meets gradients so steep there that it never moves on the S&P 500
(measured with 4 chains from standard normal starts, 500 warm-up and 1000 draws, seed 1).

The registered targets ``jdp-sp500``, ``jdp-btc`` and ``jdp-usdzar`` fit the training returns
of :func:`hamiltonia.datasets.load` (the earliest 90 %, thesis §3.2.8) and keep the later 10 % for
:meth:`MertonJumpDiffusion.predictive_log_density`.

This module holds the registered targets on the data sets and re-exports the names of the
modules that hold the rest: the model and its default setting
(:mod:`hamiltonia.targets.jump_diffusion_model`), its compiled kernel
(:mod:`hamiltonia.targets.jump_diffusion_kernel`) and the paper setting
(:mod:`hamiltonia.targets.jump_diffusion_paper`).
"""

from __future__ import annotations

from collections.abc import Mapping

from hamiltonia._validation import check_int
from hamiltonia.targets.base import check_setting, with_setting
from hamiltonia.targets.jump_diffusion_model import (
    MAX_TERMS,
    NAMES,
    MertonJumpDiffusion,
    default_priors,
)
from hamiltonia.targets.jump_diffusion_paper import (
    PAPER_NAMES,
    PAPER_TAU,
    NaturalMertonJumpDiffusion,
)

__all__ = [
    "MAX_TERMS",
    "NAMES",
    "PAPER_NAMES",
    "PAPER_TAU",
    "MertonJumpDiffusion",
    "NaturalMertonJumpDiffusion",
    "default_priors",
    "jdp_btc",
    "jdp_sp500",
    "jdp_usdzar",
]


# --------------------------------------------------------------------------- factories
def _from_dataset(name: str, tau, n_terms, priors, test_fraction, setting) -> MertonJumpDiffusion:
    from hamiltonia import datasets

    # Checked before the data are loaded (or downloaded).
    check_setting(setting)
    check_int(n_terms, "n_terms", minimum=1, maximum=MAX_TERMS)
    if setting == "paper" and priors is not None:
        raise ValueError(
            "priors sets normal priors on the default setting's log-scale coordinates; the "
            "paper setting has flat priors on a, b, lambda and N(0, 1) on a_jump, b_jump"
        )
    data = datasets.load(name, test_fraction=test_fraction)
    returns_test = data.returns_test if len(data.returns_test) else None
    if setting == "paper":
        target = NaturalMertonJumpDiffusion(
            data.returns_train,
            tau=PAPER_TAU if tau is None else tau,
            n_terms=n_terms,
            returns_test=returns_test,
        )
    else:
        target = MertonJumpDiffusion(
            data.returns_train,
            tau=1.0 if tau is None else tau,
            n_terms=n_terms,
            priors=priors,
            returns_test=returns_test,
        )
    target.dataset = data
    target.description = f"Bayesian Merton jump-diffusion on {datasets.describe()[name]}"
    return with_setting(target, setting)


_FACTORY_DOC = """

    Parameters
    ----------
    tau : float, optional
        Length of one step: default 1 (a trading day) for ``setting="default"``, 1/252 (a
        day in years) for ``setting="paper"``.
    n_terms : int
        Terms of the Poisson mixture (default 10, the thesis's).
    priors : mapping, optional
        Default setting only: ``name -> (mean, sd)`` of the normal priors on the log-scale
        coordinates (:func:`~hamiltonia.targets.jump_diffusion.default_priors`).
    test_fraction : float
        Latest fraction of the returns held out (default 0.1).
    setting : {"default", "paper"}
        ``"default"``: :class:`~hamiltonia.targets.jump_diffusion.MertonJumpDiffusion`
        (log-scale coordinates, weakly informative priors, :math:`\\tau = 1`). ``"paper"``:
        :class:`~hamiltonia.targets.jump_diffusion.NaturalMertonJumpDiffusion`, the
        parameters of eq. 3.5 as printed, :math:`\\tau = 1/252`, flat priors where they
        keep the posterior proper (Mongwe 2022, thesis, §3.2.4; the publication's gaps are
        filled as that class says).
    """


def _factory(name: str, doc: str):
    def factory(
        tau: float | None = None,
        n_terms: int = 10,
        priors: Mapping[str, tuple[float, float]] | None = None,
        test_fraction: float = 0.1,
        setting: str = "default",
    ) -> MertonJumpDiffusion:
        return _from_dataset(name, tau, n_terms, priors, test_fraction, setting)

    factory.__name__ = factory.__qualname__ = f"jdp_{name}"
    factory.__doc__ = doc + _FACTORY_DOC
    return factory


jdp_sp500 = _factory(
    "sp500",
    "Merton JDP on S&P 500 daily log returns 2017-2020 (D = 5), earliest 90% for training.",
)
jdp_btc = _factory(
    "btc", "Merton JDP on Bitcoin (USD) daily log returns 2017-2020 (D = 5), earliest 90% training."
)
jdp_usdzar = _factory(
    "usdzar",
    "Merton JDP on USD/ZAR daily log returns 2017-2020 (D = 5), earliest 90% for training.",
)
