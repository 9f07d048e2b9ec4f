"""Bayesian linear regression with a known noise scale: a data target whose posterior is
Gaussian and known exactly.

.. math::

    \\log\\pi(w) = -\\frac{1}{2\\sigma^2}\\lVert y - Xw\\rVert^2
        - \\frac{1}{2s^2}\\lVert w\\rVert^2 + \\text{const},
    \\qquad
    w \\mid y \\sim \\mathcal N\\bigl(A^{-1} X^\\top y / \\sigma^2,\\ A^{-1}\\bigr),
    \\quad A = X^\\top X/\\sigma^2 + I/s^2.

Its rows make it a :class:`~hamiltonia.targets.split.RowTarget`, so split HMC
(:mod:`hamiltonia.integrators.data_split`) can be checked against the exact posterior
moments, as the moment-recovery layer of the tests does.
"""

from __future__ import annotations

import numpy as np

from hamiltonia._validation import check_design, check_int, check_positions, check_positive
from hamiltonia.targets.base import ExactMoments, Target, check_setting, with_setting
from hamiltonia.targets.split import RowTarget

__all__ = ["LinearRegression", "linear_regression"]


class LinearRegression(RowTarget, Target):
    """Bayesian linear regression, Gaussian noise of known scale and a Gaussian prior (no
    intercept: add a column of ones to ``X`` for one).

    Parameters
    ----------
    X : array (N, p)
    y : array (N,)
    noise_scale : float > 0
        :math:`\\sigma`.
    prior_scale : float > 0
        :math:`s`, of every coefficient.
    """

    row_kernels = ("hamiltonia.targets.linear_kernel", "linear_log_prob", "linear_split_log_prob")

    description = "Bayesian linear regression with a Gaussian posterior (exact moments)"
    research_n_steps = 15

    def __init__(self, X, y, *, noise_scale: float = 1.0, prior_scale: float = 10.0):
        self.X, self.y = check_design(X, y)
        self.noise_scale = check_positive(noise_scale, "noise_scale")
        self.prior_scale = check_positive(prior_scale, "prior_scale")
        self._noise_prec = 1.0 / self.noise_scale**2
        self._prior_prec = 1.0 / self.prior_scale**2
        super().__init__(self.X.shape[1], [f"w{j + 1}" for j in range(self.X.shape[1])])

    @property
    def n_obs(self) -> int:
        return self.X.shape[0]

    @property
    def posterior_covariance(self) -> np.ndarray:
        """:math:`A^{-1}`."""
        precision = self._noise_prec * self.X.T @ self.X + self._prior_prec * np.eye(self.dim)
        return np.linalg.inv(precision)

    @property
    def posterior_mean(self) -> np.ndarray:
        """:math:`A^{-1} X^\\top y / \\sigma^2`."""
        return self.posterior_covariance @ (self._noise_prec * self.X.T @ self.y)

    @property
    def exact_moments(self) -> ExactMoments:
        return ExactMoments(self.posterior_mean, np.diag(self.posterior_covariance).copy())

    def log_prob(self, x):
        return self.log_prob_and_grad(x)[0]

    def log_prob_and_grad(self, x):
        return self.rows_log_prob_and_grad(x, 0, self.n_obs, 1.0)

    def rows_log_prob_and_grad(self, x, start, stop, prior_share):
        """:math:`-\\tfrac{1}{2\\sigma^2}\\sum_{i\\in[a,b)}(y_i - x_i^\\top w)^2 -
        \\tfrac{s'}{2 s^2}\\lVert w\\rVert^2` and its gradient, :math:`s'` the prior share."""
        x = check_positions(x, self.dim)
        X = self.X[start:stop]
        r = self._noise_prec * (self.y[start:stop] - x @ X.T)
        prec = self._prior_prec * prior_share
        lp = -0.5 / self._noise_prec * np.sum(r * r, axis=-1) - 0.5 * prec * np.sum(x * x, axis=-1)
        return lp, r @ X - prec * x

    def hvp(self, x, v):
        v = check_positions(v, self.dim, "v")
        return -self._noise_prec * (v @ self.X.T) @ self.X - self._prior_prec * v

    def _kernel_sizes(self) -> list[int]:
        return [self.n_obs, self.dim]

    def _kernel_data(self) -> np.ndarray:
        return np.concatenate([[self._noise_prec, self._prior_prec], self.y, self.X.ravel()])

    def __repr__(self) -> str:
        return f"LinearRegression(n_obs={self.n_obs}, dim={self.dim})"


def linear_regression(
    *, n_obs: int = 200, dim: int = 5, noise_scale: float = 1.0, prior_scale: float = 10.0,
    seed: int = 0, setting: str = "default",
) -> LinearRegression:  # fmt: skip
    """A linear regression on synthetic data: standard normal features, coefficients drawn
    from :math:`\\mathcal N(0, 1)`, noise :math:`\\mathcal N(0, \\sigma^2)`, from
    ``default_rng(seed)``. No publication defines it: ``setting="paper"`` builds the same
    target."""
    check_setting(setting)
    n_obs = check_int(n_obs, "n_obs", minimum=1)
    dim = check_int(dim, "dim", minimum=1)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_obs, dim))
    w = rng.normal(size=dim)
    y = X @ w + noise_scale * rng.normal(size=n_obs)
    target = LinearRegression(X, y, noise_scale=noise_scale, prior_scale=prior_scale)
    return with_setting(target, setting)
