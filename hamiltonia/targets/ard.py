"""Bayesian logistic regression with automatic relevance determination (BLR-ARD).

The model of the thesis's chapter 9 on South African municipal audit outcomes
(Mongwe 2022, thesis, §9.3, eqs. 9.1-9.2; the logistic regression of its §3.2.5):

.. math::

    y_i \\mid w \\sim \\operatorname{Bernoulli}(\\sigma(\\tilde x_i^\\top w)), \\quad
    w_j \\mid \\alpha_j \\sim \\mathcal N(0, \\alpha_j^2), \\quad
    \\alpha_j \\sim \\operatorname{LogNormal}(0, 1),

with :math:`\\alpha_j` a standard deviation, and :math:`w` and :math:`\\alpha` sampled
**jointly** (not by Gibbs alternation), which doubles the dimension.

Decisions
---------
* **The intercept has its own ARD scale** :math:`\\alpha_0`, as in the public reference code:
  the thesis samples the weights and scales jointly, doubling the dimension (§9.3), 2·14 = 28
  for the 13 ratios with an intercept. Pass ``intercept_prior_scale`` to give the intercept a fixed
  :math:`\\mathcal N(0, s^2)` prior instead (dimension 27 on the audit data).
* **Unconstrained parameters** :math:`a_j = \\log\\alpha_j`. The change of variables adds the
  log-Jacobian :math:`\\log|d\\alpha_j/da_j| = a_j`, which cancels the :math:`-\\log\\alpha_j` of
  the log-normal density, so :math:`a_j \\sim \\mathcal N(0, 1)` exactly (no extra
  Jacobian is needed: it is already in the N(0, 1)).
* **Reported space = sampled space.** :meth:`~hamiltonia.Target.constrain` is the identity:
  draws hold :math:`\\log\\alpha_j` under the names ``log_alpha_<feature>``. (hamiltonia
  reports constrained draws under ``target.names``, which also name the sampled coordinates,
  so mapping to :math:`\\alpha` would make one of the two wrong.) Use :func:`feature_relevance`
  or :meth:`ARDLogisticRegression.alpha` for :math:`\\alpha` itself.
* **Paper setting** (``setting="paper"``, :func:`blr_ard_audit`): the public code's processing
  of this data set, the first 1404 rows (in time order) for training and min-max scaling fitted
  on them, instead of the default random split and standardisation.
* ``jitter`` (default 0) adds a constant to every prior variance, :math:`\\alpha_j^2 + c`, as
  the public code (WilsonMongwe/hybridtorch) does with :math:`c = 0.001`; only for reproducing
  that code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hamiltonia._validation import check_positions, check_positive
from hamiltonia.diagnostics.predictive import ClassifierTarget
from hamiltonia.targets.base import Target, check_setting, with_setting
from hamiltonia.targets.logistic import (
    LogisticRegression,
    _flat_draws,
    design_matrix,
    log_likelihood_and_grad,
    log_likelihood_hvp,
    predictive_probability,
    safe_name,
    softplus_and_sigmoid,
)

__all__ = [
    "PAPER_SCALING",
    "PAPER_SPLIT",
    "ARDLogisticRegression",
    "blr_ard_audit",
    "feature_relevance",
]


class ARDLogisticRegression(ClassifierTarget, Target):
    """Logistic regression with per-coefficient prior scales sampled jointly.

    Parameters are :math:`x = (w_0, w_1, \\dots, w_p, a_0, a_1, \\dots, a_p)` with
    :math:`a_j = \\log\\alpha_j` (``a_0`` is absent when ``intercept_prior_scale`` is given).
    With :math:`v_j = e^{2a_j} + c` (``c`` the jitter, 0 by default):

    .. math::

        \\log\\pi(w, a) = \\sum_i \\bigl[y_i z_i - \\log(1 + e^{z_i})\\bigr]
            - \\sum_j \\Bigl(\\tfrac12\\log v_j + \\frac{w_j^2}{2 v_j}\\Bigr)
            - \\sum_j \\frac{a_j^2}{2} + \\text{const}, \\qquad z = \\tilde X w.

    Gradient (:math:`r_j = e^{2a_j}/v_j`, equal to 1 without jitter):

    .. math::

        \\nabla_w = \\tilde X^\\top(y - \\sigma(z)) - w / v, \\qquad
        \\partial_{a_j} = r_j\\bigl(w_j^2 / v_j - 1\\bigr) - a_j.

    Hessian blocks, used by :meth:`hvp` without forming the matrix:

    .. math::

        H_{ww} = -\\tilde X^\\top \\operatorname{diag}(\\sigma(1-\\sigma))\\tilde X
                 - \\operatorname{diag}(1/v), \\quad
        H_{w_j a_j} = \\frac{2 r_j w_j}{v_j}, \\quad
        H_{a_j a_j} = \\frac{2 r_j}{v_j}
            \\Bigl[w_j^2\\Bigl(\\frac{c}{v_j} - r_j\\Bigr) - c\\Bigr] - 1

    (without jitter: :math:`H_{w_j a_j} = 2 w_j e^{-2a_j}`,
    :math:`H_{a_j a_j} = -2 w_j^2 e^{-2a_j} - 1`). Everything is vectorised over leading
    batch axes of ``x``.

    Parameters
    ----------
    X : array of shape (N, p)
        Features without the intercept column (standardised training features).
    y : array of shape (N,)
        Binary targets.
    feature_names : sequence of str, optional
        Names of the ``p`` features; parameters are named ``w_intercept``, ``w_<feature>``,
        ``log_alpha_intercept``, ``log_alpha_<feature>`` (names made identifier-safe).
    intercept_prior_scale : float, optional
        If given, the intercept is not ARD-scaled but has a fixed N(0, s²) prior.
    jitter : float
        Constant added to each prior variance (default 0).
    X_test, y_test : arrays, optional
        Held-out data for :meth:`predict`.
    """

    description = "BLR with ARD: w_j ~ N(0, alpha_j^2), alpha_j ~ LogNormal(0, 1), sampled jointly"

    relevance_label = "posterior mean of the ARD scale alpha"

    def __init__(
        self,
        X,
        y,
        *,
        feature_names: Sequence[str] | None = None,
        intercept_prior_scale: float | None = None,
        jitter: float = 0.0,
        X_test=None,
        y_test=None,
    ):
        # Reuse the data checks and names of the plain model.
        base = LogisticRegression(X, y, feature_names=feature_names, X_test=X_test, y_test=y_test)
        self.X, self.y = base.X, base.y
        self.X_test, self.y_test = base.X_test, base.y_test
        self.feature_names = base.feature_names
        self._Xt = design_matrix(self.X)
        self.n_weights = base.dim
        self.ard_intercept = intercept_prior_scale is None
        self.intercept_prior_scale = (
            None
            if intercept_prior_scale is None
            else check_positive(intercept_prior_scale, "intercept_prior_scale")
        )
        if isinstance(jitter, bool) or not isinstance(jitter, int | float) or jitter < 0:
            raise ValueError(f"jitter must be a number >= 0, got {jitter!r}")
        self.jitter = float(jitter)
        self._first = 0 if self.ard_intercept else 1  # first ARD-scaled weight
        self.n_scales = self.n_weights - self._first
        labels = ["intercept", *(safe_name(f) for f in self.feature_names)]
        names = [f"w_{n}" for n in labels] + [f"log_alpha_{n}" for n in labels[self._first :]]
        super().__init__(self.n_weights + self.n_scales, names)

    @property
    def scale_names(self) -> tuple[str, ...]:
        """Labels of the ARD scales, in order (``intercept`` first when it has one)."""
        return tuple(n.removeprefix("log_alpha_") for n in self.names[self.n_weights :])

    def _prior_terms(self, a: np.ndarray):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if self.jitter == 0.0:
                inv_var = np.exp(-2.0 * a)
                half_log_var = a
                r = np.ones_like(a)
            else:
                u = np.exp(2.0 * a)
                var = u + self.jitter
                inv_var = 1.0 / var
                half_log_var = 0.5 * np.log(var)
                r = u * inv_var
        return inv_var, half_log_var, r

    def _split(self, x):
        return x[..., : self.n_weights], x[..., self.n_weights :]

    def log_prob(self, x):
        return self.log_prob_and_grad(x)[0]

    def log_prob_and_grad(self, x):
        x = check_positions(x, self.dim)
        w, a = self._split(x)
        ll, grad_w, _ = log_likelihood_and_grad(self._Xt, self.y, w)
        wa = w[..., self._first :]
        inv_var, half_log_var, r = self._prior_terms(a)
        with np.errstate(over="ignore", invalid="ignore"):
            w2 = wa * wa
            lp = ll - np.sum(half_log_var + 0.5 * w2 * inv_var + 0.5 * a * a, axis=-1)
            grad_w[..., self._first :] -= wa * inv_var
            grad_a = r * (w2 * inv_var - 1.0) - a
        if not self.ard_intercept:
            s0 = self.intercept_prior_scale
            lp = lp - 0.5 * w[..., 0] ** 2 / s0**2
            grad_w[..., 0] -= w[..., 0] / s0**2
        return lp, np.concatenate([grad_w, grad_a], axis=-1)

    def hvp(self, x, v):
        x = check_positions(x, self.dim)
        v = check_positions(v, self.dim, "v")
        w, a = self._split(x)
        vw, va = self._split(v)
        _, s = softplus_and_sigmoid(w @ self._Xt.T)
        hw = log_likelihood_hvp(self._Xt, s, vw)
        wa = w[..., self._first :]
        vwa = vw[..., self._first :]
        inv_var, _, r = self._prior_terms(a)
        c = self.jitter
        with np.errstate(over="ignore", invalid="ignore"):
            h_wa = 2.0 * r * wa * inv_var
            h_aa = 2.0 * r * inv_var * (wa * wa * (c * inv_var - r) - c) - 1.0
            hw_ard = hw[..., self._first :] - inv_var * vwa + h_wa * va
            ha = h_wa * vwa + h_aa * va
        if self.ard_intercept:
            hw = hw_ard
        else:
            h0 = hw[..., :1] - vw[..., :1] / self.intercept_prior_scale**2
            hw = np.concatenate([h0, hw_ard], axis=-1)
        return np.concatenate([hw, ha], axis=-1)

    def alpha(self, draws) -> np.ndarray:
        """:math:`\\alpha = e^{a}` from draws of shape ``(..., dim)``: shape ``(..., n_scales)``."""
        draws = np.asarray(draws, dtype=float)
        if draws.ndim == 0 or draws.shape[-1] != self.dim:
            raise ValueError(f"draws must have shape (..., {self.dim}), got {draws.shape}")
        return np.exp(draws[..., self.n_weights :])

    def predict(self, draws, X=None, *, log_weights=None) -> np.ndarray:
        """Posterior predictive probability per row of ``X`` (default ``X_test``); see
        :meth:`LogisticRegression.predict`. Only the weights :math:`w` of each draw matter."""
        W = _flat_draws(draws, self.n_weights, self.dim)
        if X is None:
            if self.X_test is None:
                raise ValueError("X is required: this target was built without X_test")
            X = self.X_test
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.X.shape[1]:
            raise ValueError(f"X must have shape (M, {self.X.shape[1]}), got {X.shape}")
        return predictive_probability(design_matrix(X), W, log_weights)

    def feature_relevance(
        self, draws, *, log_weights=None, include_intercept: bool = False
    ) -> list[tuple[str, float]]:
        """Features ranked by the posterior mean of :math:`\\alpha_j`; see
        :func:`feature_relevance`."""
        return feature_relevance(
            draws,
            self.scale_names,
            log_weights=log_weights,
            include_intercept=include_intercept,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, n_obs={self.X.shape[0]})"


def feature_relevance(
    draws,
    feature_names: Sequence[str] | None = None,
    *,
    log_weights=None,
    include_intercept: bool = False,
) -> list[tuple[str, float]]:
    """Features ranked by the posterior mean of their ARD scale :math:`\\alpha_j`, highest first.

    A larger :math:`\\mathbb E[\\alpha_j \\mid \\text{data}]` means a more relevant feature
    (Mongwe 2022, thesis, §9.3 and Table 9.1, averaged over all chains):

    .. math::

        \\hat\\alpha_j = \\sum_s \\bar w_s\\, e^{a_j^{(s)}}

    with equal weights, or self-normalised importance weights from ``log_weights``.

    Parameters
    ----------
    draws : Result or array of shape (..., K) or (..., dim)
        A :class:`~hamiltonia.Result` of ``blr-ard-audit`` (its names and log weights are
        used), the full draws of an :class:`ARDLogisticRegression` (``log_alpha_*`` columns
        found through ``feature_names`` or the result's names), or an array holding only the
        ``K`` log-scale columns.
    feature_names : sequence of str, optional
        For arrays: the labels of the ``K`` scales (``ARDLogisticRegression.scale_names``);
        an array of full draws needs them to locate the log-scale columns (the last ``K``).
    log_weights : array of shape ``draws.shape[:-1]``, optional
        Log importance weights (defaults to the result's, if any).
    include_intercept : bool
        Also rank the intercept's scale (it is left out by default).

    Returns
    -------
    list of (feature, posterior mean of alpha), sorted descending.
    """
    if hasattr(draws, "draws") and hasattr(draws, "names"):
        names = list(draws.names)
        if log_weights is None:
            log_weights = getattr(draws, "log_weights", None)
        cols = [i for i, n in enumerate(names) if n.startswith("log_alpha_")]
        if not cols:
            raise ValueError("the result has no log_alpha_* parameters; is it an ARD target?")
        labels = [names[i].removeprefix("log_alpha_") for i in cols]
        logs = np.asarray(draws.draws, dtype=float)[..., cols]
    else:
        arr = np.asarray(draws, dtype=float)
        if arr.ndim == 0:
            raise ValueError("draws must be an array of shape (..., K) or a Result")
        if feature_names is None:
            labels = [f"x{j}" for j in range(arr.shape[-1])]
        else:
            labels = [str(f) for f in feature_names]
        if len(labels) > arr.shape[-1]:
            raise ValueError(f"{len(labels)} feature names for draws with {arr.shape[-1]} columns")
        logs = arr[..., arr.shape[-1] - len(labels) :]
    flat = logs.reshape(-1, logs.shape[-1])
    if log_weights is None:
        means = np.exp(flat).mean(axis=0)
    else:
        lw = np.asarray(log_weights, dtype=float).reshape(-1)
        if lw.shape[0] != flat.shape[0]:
            raise ValueError(
                f"log_weights must have one entry per draw ({flat.shape[0]}), got {lw.size}"
            )
        wts = np.exp(lw - np.max(lw))
        means = (wts / wts.sum()) @ np.exp(flat)
    ranked = [
        (label, float(m))
        for label, m in zip(labels, means, strict=True)
        if include_intercept or label != "intercept"
    ]
    return sorted(ranked, key=lambda t: t[1], reverse=True)


#: The paper setting's split of the audit data (the public reference code's, thesis ch. 9):
#: the first 90 % of the rows (1404 of 1560, in time order) train.
PAPER_SPLIT = "ordered"
#: The paper setting's feature scaling: min-max onto [0, 1] with the training rows' range.
PAPER_SCALING = "minmax"


def blr_ard_audit(
    test_fraction: float = 0.1,
    split_seed: int = 0,
    split: str | None = None,
    standardize: bool = True,
    intercept_prior_scale: float | None = None,
    jitter: float = 0.0,
    scaling: str | None = None,
    setting: str = "default",
) -> ARDLogisticRegression:
    """BLR-ARD on the municipal audit outcomes (13 ratios + intercept, D = 28), 90% train split.

    Parameters
    ----------
    test_fraction : float
        Fraction of the rows held out (default 0.1).
    split_seed : int
        Seed of a random split.
    split : {"random", "ordered"}, optional
        ``"random"`` (the default setting's) or ``"ordered"`` (the first rows train; the
        paper setting's); ``None``: the setting's.
    standardize : bool
        Scale the features with training statistics (default ``True``).
    intercept_prior_scale : float, optional
        A fixed :math:`\\mathcal N(0, s^2)` prior on the intercept instead of its own ARD scale.
    jitter : float
        Constant added to every prior variance (default 0; the public code uses 0.001).
    scaling : {"standard", "minmax", "none"}, optional
        How the features are scaled (:func:`hamiltonia.datasets.load`); ``None``: the
        setting's (standardisation for ``"default"``, min-max for ``"paper"``).
    setting : {"default", "paper"}
        ``"default"``: a random 90/10 split and features standardised with the training mean
        and standard deviation. ``"paper"``: the author's processing of this data set (Mongwe
        2022, thesis, ch. 9, which states no split or scaling (GAP); the public reference
        code, WilsonMongwe/hybridtorch, EXTERNAL): the rows in file order, which is time
        order (six yearly blocks, 2012-2018), the first 1404 training and the last 156 testing,
        and every ratio min-max scaled onto [0, 1] with the training rows' minimum and
        maximum (so test rows may fall outside it). The model is the thesis's in both: ARD
        scales :math:`\\alpha_j \\sim \\operatorname{LogNormal}(0, 1)` sampled jointly
        with the weights, the intercept with its own scale, no jitter.
    """
    from hamiltonia import datasets

    check_setting(setting)
    if setting == "paper":
        split = PAPER_SPLIT if split is None else split
        if scaling is None and standardize:
            scaling = PAPER_SCALING
    data = datasets.load(
        "audit", test_fraction=test_fraction, seed=split_seed, standardize=standardize,
        split=split, scaling=scaling,
    )  # fmt: skip
    has_test = len(data.y_test) > 0
    target = ARDLogisticRegression(
        data.X_train,
        data.y_train,
        feature_names=data.feature_names,
        intercept_prior_scale=intercept_prior_scale,
        jitter=jitter,
        X_test=data.X_test if has_test else None,
        y_test=data.y_test if has_test else None,
    )
    target.dataset = data
    return with_setting(target, setting)
