"""The jump-diffusion posterior of the paper setting (:class:`NaturalMertonJumpDiffusion`):
the five parameters of eq. 3.5 of Mongwe 2022 (thesis, §3.2.4 and §3.2.8; Table 3.8)
sampled as printed, time in years (:data:`PAPER_TAU`), flat priors on :math:`a, b,
\\lambda` and :math:`\\mathcal N(0, s^2)` on :math:`a_J, b_J`, with the truncated likelihood
of :class:`~hamiltonia.targets.jump_diffusion_model.MertonJumpDiffusion` carried over to
these coordinates by the chain rule.

Re-exported by :mod:`hamiltonia.targets.jump_diffusion`, whose docs set out the model and
this setting ("Paper setting").
"""

from __future__ import annotations

import math

import numpy as np

from hamiltonia._validation import check_positions, check_positive
from hamiltonia.targets.jump_diffusion_model import _HALF_LOG_2PI, MertonJumpDiffusion

__all__ = ["PAPER_NAMES", "PAPER_TAU", "NaturalMertonJumpDiffusion"]

#: Names of the sampled coordinates of the paper setting (:class:`NaturalMertonJumpDiffusion`).
PAPER_NAMES = ("a", "b", "lambda", "a_jump", "b_jump")
#: The paper setting's time step: one trading day in years.
PAPER_TAU = 1.0 / 252.0


class NaturalMertonJumpDiffusion(MertonJumpDiffusion):
    """The jump-diffusion posterior of the paper setting: the five parameters of eq. 3.5
    sampled as they are, annualised time, flat priors where they keep the posterior proper.

    The sampled vector is :math:`\\theta = (a, b, \\lambda, a_J, b_J)` (names ``a``, ``b``,
    ``lambda``, ``a_jump``, ``b_jump``), with the truncated likelihood of
    :class:`MertonJumpDiffusion` (eq. 3.5, terms :math:`n = 0, \\dots, K-1`) and the prior

    .. math::

        \\log\\pi(\\theta) = \\sum_i \\log\\sum_{n=0}^{K-1}
            \\frac{e^{-\\lambda\\tau}(\\lambda\\tau)^n}{n!}\\,
            \\mathcal N\\bigl(r_i;\\ a\\tau + n a_J,\\ b^2\\tau + n b_J^2\\bigr)
            - \\frac{a_J^2 + b_J^2}{2 s^2} - 2\\log s - \\log 2\\pi,
        \\qquad \\lambda > 0,

    and :math:`-\\infty` for :math:`\\lambda \\le 0`: flat (improper) priors on :math:`a`,
    :math:`b` and :math:`\\lambda`, and :math:`a_J, b_J \\sim \\mathcal N(0, s^2)` with
    :math:`s = 1` (``jump_prior_scale``). Mongwe 2022 (thesis, §3.2.4 and §3.2.8; Table 3.8)
    states neither priors, nor a transform of the positive parameters, nor :math:`\\tau`
    (GAP); the choices, and why:

    * **Coordinates as printed.** The thesis names the five parameters of eq. 3.5 as the
      model's :math:`D = 5` and samples with :math:`M = I`, so the published step sizes
      (Table 3.8) are steps in these coordinates. :math:`b` and :math:`b_J` enter only as
      :math:`b^2` and :math:`b_J^2`: they are sampled on the whole line, where the density is
      even in each, and reported as :math:`|b|`, :math:`|b_J|` (:meth:`constrain`), whose
      posterior is the one on :math:`b, b_J > 0`. :math:`\\lambda` is a rate: its support is
      :math:`\\lambda > 0`, and a trajectory that crosses 0 is rejected.
    * **The weakest priors that keep the posterior proper.** A flat prior on all five makes
      it improper: the likelihood is bounded below by the term in which every return comes
      from the diffusion alone (:math:`n = 0`), which does not depend on :math:`a_J, b_J`, so
      the integral over :math:`(a_J, b_J)` diverges (and likewise along the lines on which
      every return comes from the same :math:`n \\ge 1`, where :math:`a\\tau + n a_J` is
      fixed). A proper prior on :math:`a_J` and :math:`b_J` removes both. Flat priors on the
      rest are then enough: in :math:`a` the likelihood decays like a Gaussian, in
      :math:`|b| \\to \\infty` like :math:`|b|^{-N}`, in :math:`\\lambda \\to \\infty` like
      :math:`e^{-N\\lambda\\tau}(\\lambda\\tau)^{N(K-1)}` (the truncated weights), and its
      :math:`1/|b|` peak as :math:`b \\to 0` with :math:`a\\tau` on one return has
      :math:`a`-width :math:`\\propto |b|`, so it integrates (no two returns coincide in
      these data). :math:`s = 1` (jumps of 100 % in log price) is far wider than any jump
      in the data (the largest daily log return of the three series is 0.46, Bitcoin's).
    * **Annualised time**, :math:`\\tau = 1/252` (``tau``): :math:`a` and :math:`b` are the
      yearly drift and volatility and :math:`\\lambda` the expected jumps per year, the
      usual convention in finance for daily data (252 trading days a year; the thesis does
      not state it). Bitcoin trades every calendar day, so there a "year" is 252 daily
      steps.
    * **Starts.** The research starts chains at standard normal draws (thesis §5 gives none;
      the author's code uses ``torch.randn``); :meth:`unconstrain` reads a negative
      :math:`\\lambda` in initial values as :math:`|\\lambda|`, so such starts are valid.

    The gradient and the Hessian-vector product are those of :class:`MertonJumpDiffusion` in
    its coordinates :math:`x = (a, \\log|b|, \\log\\lambda, a_J, \\log|b_J|)` carried over by
    the chain rule: with :math:`J = \\operatorname{diag}(1, 1/b, 1/\\lambda, 1, 1/b_J)` and
    :math:`c = (0, -1/b^2, -1/\\lambda^2, 0, -1/b_J^2)`,

    .. math::

        \\nabla_\\theta \\ell = J\\,\\nabla_x \\ell, \\qquad
        \\nabla^2_\\theta \\ell\\, u = J\\,\\nabla^2_x \\ell\\,(J u)
            + (\\nabla_x \\ell \\odot c) \\odot u,

    plus the prior's :math:`-(0, 0, 0, a_J, b_J)/s^2` and :math:`-(0, 0, 0, u_{a_J},
    u_{b_J})/s^2`. There is no compiled kernel: the compiled path calls this target back.

    Parameters
    ----------
    returns : array of shape (N,)
        Log returns of consecutive steps.
    tau : float
        Length of one step in years (default 1/252).
    n_terms : int
        Terms of the Poisson mixture (default 10, the thesis's).
    jump_prior_scale : float
        :math:`s`, the prior standard deviation of :math:`a_J` and :math:`b_J` (default 1).
    returns_test : array, optional
        Held-out returns for :meth:`predictive_log_density`.
    """

    description = (
        "Bayesian Merton jump-diffusion, (a, b, lambda, a_J, b_J) as in eq. 3.5, tau = 1/252, "
        "flat priors on a, b, lambda"
    )
    parameter_names = PAPER_NAMES

    def __init__(
        self,
        returns,
        *,
        tau: float = PAPER_TAU,
        n_terms: int = 10,
        jump_prior_scale: float = 1.0,
        returns_test=None,
    ):
        super().__init__(returns, tau=tau, n_terms=n_terms, returns_test=returns_test)
        self.jump_prior_scale = check_positive(jump_prior_scale, "jump_prior_scale")
        s = self.jump_prior_scale
        #: ``name -> (mean, sd)`` of the proper priors; the others are flat (``None``).
        self.priors = {"a": None, "b": None, "lambda": None, "a_jump": (0.0, s),
                       "b_jump": (0.0, s)}  # fmt: skip
        self._jump_prec = 1.0 / s**2
        self._jump_const = -2.0 * math.log(s) - 2.0 * _HALF_LOG_2PI

    # ------------------------------------------------------------------ coordinates
    @staticmethod
    def _to_log(theta):
        """``(x, inverse Jacobian factors, valid)``: the coordinates of
        :class:`MertonJumpDiffusion`, :math:`1/\\theta_k` for the positive ones (1 for
        :math:`a, a_J`), and where :math:`\\lambda > 0`."""
        valid = theta[..., 2] > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            x = theta.copy()
            for k in (1, 2, 4):
                x[..., k] = np.log(np.abs(theta[..., k]))
            inv = np.ones_like(theta)
            for k in (1, 2, 4):
                inv[..., k] = 1.0 / theta[..., k]
        return x, inv, valid

    def _jump_prior(self, theta):
        z = theta[..., 3:]
        lp = self._jump_const - 0.5 * self._jump_prec * np.sum(z * z, axis=-1)
        grad = np.zeros_like(theta)
        grad[..., 3:] = -self._jump_prec * z
        return lp, grad

    def return_log_likelihood(self, x, returns=None) -> np.ndarray:
        """:math:`\\log p(r_i \\mid \\theta)` for every return, shape ``(..., N)``
        (:math:`-\\infty` where :math:`\\lambda \\le 0`)."""
        theta = check_positions(x, self.dim)
        r = self.returns if returns is None else self._check_returns(returns, "returns")
        lx, _, valid = self._to_log(theta)
        mean, var, const, *_ = self._terms(lx)
        ll = self._mixture(r, mean, var, const)[2]
        return np.where(valid[..., None], ll, -np.inf)

    def log_prob(self, x):
        theta = check_positions(x, self.dim)
        return self.log_likelihood(theta) + self._jump_prior(theta)[0]

    def log_prob_and_grad(self, x):
        theta = check_positions(x, self.dim)
        lx, inv, valid = self._to_log(theta)
        ll, g = self._likelihood_and_grad(lx)
        lp_prior, g_prior = self._jump_prior(theta)
        with np.errstate(invalid="ignore"):
            lp = np.where(valid, ll + lp_prior, -np.inf)
            grad = np.where(valid[..., None], g * inv + g_prior, 0.0)
        return lp, grad

    def hvp(self, x, v):
        """Exact Hessian-vector product by the chain rule (see the class docs)."""
        theta = check_positions(x, self.dim)
        u = check_positions(v, self.dim, "v")
        theta, u = np.broadcast_arrays(theta, u)
        lx, inv, _ = self._to_log(theta)
        _, g = self._likelihood_and_grad(lx)
        curv = inv * inv  # -c: the second derivative of log|theta_k| is -1/theta_k^2
        curv[..., [0, 3]] = 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            out = inv * self._likelihood_hvp(lx, inv * u) - g * curv * u
        out[..., 3:] -= self._jump_prec * u[..., 3:]
        return out

    def numba_kernel(self):
        return None

    # ------------------------------------------------------------------ reporting
    def constrain(self, x):
        """The draws as reported: :math:`(a, |b|, \\lambda, a_J, |b_J|)`."""
        out = np.array(x, dtype=float, copy=True)
        out[..., 1] = np.abs(out[..., 1])
        out[..., 4] = np.abs(out[..., 4])
        return out

    def unconstrain(self, values, chains: int = 1) -> np.ndarray:
        """Initial positions from ``values`` (shape ``(5,)`` or ``(chains, 5)``), with a
        negative :math:`\\lambda` read as :math:`|\\lambda|` (see the class docs); a zero
        :math:`\\lambda` stays outside the support."""
        q = super().unconstrain(values, chains)
        q[..., 2] = np.abs(q[..., 2])
        return q

    def natural(self, draws) -> dict[str, np.ndarray]:
        """The model parameters :math:`a, b, \\lambda, a_J, b_J` (with :math:`|b|, |b_J|`)."""
        x = self.constrain(check_positions(draws, self.dim, "draws"))
        return {name: x[..., k].copy() for k, name in enumerate(("a", "b", "lambda", "a_jump",
                                                                   "b_jump"))}  # fmt: skip

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_obs={self.n_obs}, tau={self.tau:.6g}, "
            f"n_terms={self.n_terms}, jump_prior_scale={self.jump_prior_scale})"
        )
