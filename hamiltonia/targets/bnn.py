"""Bayesian neural network regression (Mongwe 2022, thesis, §3.2.6-3.2.8).

The network of the thesis's eq. 3.8: one hidden layer of ``H = 5`` tanh units and a linear
output,

.. math::

    f(x) = b + \\sum_{j=1}^{H} v_j \\tanh\\Bigl(a_j + \\sum_{i=1}^{d} w_{ij} x_i\\Bigr),

so :math:`D = dH + 2H + 1 = 5d + 11` parameters (Table 3.2: d = 4, 5, 8, 9 give 31, 36, 51,
56 for power, airfoil, concrete, protein).

Decisions (the thesis, §3.2.6, leaves them open)
------------------------------------------------
* **Likelihood** :math:`y_i \\sim \\mathcal N(f(x_i), \\sigma^2)` with a fixed noise scale
  :math:`\\sigma` (``noise_scale``). The thesis says "the negative log-likelihood is the sum of
  squared errors", i.e. :math:`U_{\\text{lik}} = \\sum_i (y_i - f(x_i))^2`, which is the
  Gaussian likelihood with :math:`\\sigma^2 = 1/2`. The default
  :math:`\\sigma = 1/\\sqrt 2 \\approx 0.707` reproduces that statement exactly.
* **Targets standardised** with the training mean and standard deviation
  (``standardize_y=True``), so :math:`\\sigma` is in units of the target's spread and one
  default fits every data set: :math:`\\sigma = 0.707` treats half of the target's variance
  as noise, a deliberately conservative (wide) likelihood. The predictive mean still follows
  the signal (on concrete the test residual sd is about 0.3 in these units); pass a smaller
  ``noise_scale`` for a sharper posterior. The features are standardised by
  :func:`hamiltonia.datasets.load` (thesis §3.2.8: the features "were normalised").
  :meth:`BayesianNeuralNetwork.predict` maps back to the original scale of ``y``.
* **Prior** :math:`\\theta_k \\sim \\mathcal N(0, s^2)` on every weight and bias, with
  :math:`s = 1` (``prior_scale``): the regression prior of Cobb and Jalaian
  (2021, §5.1, :math:`p(\\omega) = \\mathcal N(0, I)`, also hamiltorch's
  default). With standardised inputs and outputs, unit-scale weights keep the tanh units in
  their responsive range and allow outputs of the target's own scale. The thesis uses the
  BLR prior :math:`\\alpha = 10` only for BLR; on a tanh network such a wide prior mostly
  adds saturated, non-identifiable directions.
* Normalising constants are dropped: :math:`\\log\\pi` is
  :math:`-\\tfrac{1}{2\\sigma^2}\\sum_i(y_i - f(x_i))^2 - \\tfrac{1}{2s^2}\\lVert\\theta\\rVert^2`,
  which with the defaults is :math:`-\\text{SSE} - \\tfrac12\\lVert\\theta\\rVert^2`.

Paper setting (``setting="paper"``): the thesis's network, likelihood (:math:`\\sigma^2 = 1/2`),
normalised features and random 90/10 split, as above, with the prior :math:`s = 10` (the
thesis states no network prior, GAP; 10 is its BLR prior, §3.2.5). The published HMC step
sizes (Table 3.8: 0.0281, 0.0547, 0.0761, 0.0793 for power, airfoil, concrete, protein at
:math:`L = 25`, :math:`M = I`) cannot be stable on such a posterior, whatever the prior: the
output bias enters linearly, so the Hessian of the sum of squared errors has
:math:`\\partial^2/\\partial b^2 = 2N` and its largest eigenvalue is at least :math:`2N`;
the leapfrog with :math:`M = I` is unstable near a mode once :math:`\\varepsilon\\sqrt{2N} > 2`.
With the training sizes here, :math:`\\varepsilon\\sqrt{2N}` is 3.7, 2.9, 3.3 and 22.8:
measured, HMC accepts nothing on power, airfoil and concrete (4 chains, 200 warm-up and 300
draws from standard normal starts, every proposal divergent). The published step sizes fit a
likelihood whose curvature does not grow with :math:`N`, such as the mean rather than the sum
of the squared errors (with it, the same runs accept 99.6-100 %), which the thesis does not
state; the paper setting keeps what it states.

Parameter vector: :math:`\\theta = (W, a, v, b)` with :math:`W` (``d × H``) stored
feature-major, named ``w_<feature>_<j>``, then ``a_<j>``, ``v_<j>`` and ``b``
(:math:`j = 1..H`).

The registered targets ``bnn-power``, ``bnn-airfoil``, ``bnn-concrete`` and ``bnn-protein`` fit
the training split of :func:`hamiltonia.datasets.load` (random 90/10) and keep the test split
for :meth:`BayesianNeuralNetwork.predict` and :meth:`BayesianNeuralNetwork.metrics`
(MSE, RMSE, MAE, :math:`R^2`; thesis §3.4.3).

The density, its gradient and Hessian-vector product compute in the array namespace of their
input (:mod:`hamiltonia.backend`: NumPy, CuPy, array_api_strict), with the training data moved
to that backend once (:class:`~hamiltonia.backend.DeviceData`); on NumPy they are the same
operations as ever. Prediction and the metrics run on NumPy, on host draws.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hamiltonia._validation import (
    MAX_TARGET_DIM,
    check_design,
    check_int,
    check_positions,
    check_positive,
)
from hamiltonia.backend import BACKENDS, DeviceData, to_numpy
from hamiltonia.diagnostics.predictive import RegressorTarget
from hamiltonia.targets.base import Target, check_setting, with_setting
from hamiltonia.targets.logistic import as_positions, safe_name
from hamiltonia.targets.split import RowTarget

__all__ = [
    "DEFAULT_NOISE_SCALE",
    "DEFAULT_PRIOR_SCALE",
    "PAPER_PRIOR_SCALE",
    "BayesianNeuralNetwork",
    "bnn_airfoil",
    "bnn_concrete",
    "bnn_power",
    "bnn_protein",
    "max_hidden",
    "normalised_weights",
]

#: :math:`\sigma = 1/\sqrt2`: the thesis's "negative log-likelihood = sum of squared errors".
DEFAULT_NOISE_SCALE = 1.0 / math.sqrt(2.0)
#: :math:`s = 1`: N(0, I) prior on all weights (Cobb and Jalaian 2021, §5.1).
DEFAULT_PRIOR_SCALE = 1.0

# Cap on the elements of one (draws, rows, hidden) block in predict.
_PREDICT_BLOCK = 1 << 22


# --------------------------------------------------------------------------- helpers
def max_hidden(n_features: int) -> int:
    """The most hidden units a network on ``n_features`` inputs may have: its
    ``(n_features + 2) * n_hidden + 1`` parameters stay within
    :data:`~hamiltonia._validation.MAX_TARGET_DIM`."""
    return max(1, (MAX_TARGET_DIM - 1) // (n_features + 2))


def normalised_weights(log_weights, n_draws: int) -> np.ndarray | None:
    """Self-normalised importance weights :math:`\\bar w_s \\propto e^{\\ell_s}` for ``n_draws``
    draws (``None`` stays ``None``: equal weights)."""
    if log_weights is None:
        return None
    lw = np.asarray(log_weights, dtype=float).reshape(-1)
    if lw.shape[0] != n_draws:
        raise ValueError(f"log_weights must have one entry per draw ({n_draws}), got {lw.size}")
    if np.any(np.isnan(lw)) or not np.any(np.isfinite(lw)):
        raise ValueError("log_weights must not be NaN and must have a finite entry")
    weights = np.exp(lw - np.max(lw))
    return weights / weights.sum()


def _check_names(names, count: int, what: str, argname: str) -> tuple[str, ...]:
    names = [str(n) for n in names]
    if len(names) != count:
        raise ValueError(f"{argname} must have one name per {what} ({count}), got {len(names)}")
    return tuple(names)


# --------------------------------------------------------------------------- target
class BayesianNeuralNetwork(DeviceData, RegressorTarget, RowTarget, Target):
    """Posterior of a one-hidden-layer tanh network for regression.

    .. math::

        \\log\\pi(\\theta) = -\\frac{1}{2\\sigma^2}\\sum_{i=1}^{N}\\bigl(y_i - f(x_i)\\bigr)^2
            - \\frac{\\lVert\\theta\\rVert^2}{2 s^2} + \\text{const}, \\qquad
        f(x) = b + v^\\top \\tanh(a + W^\\top x),

    with :math:`y` standardised by the training mean and standard deviation (see the module
    docs for the defaults :math:`\\sigma = 1/\\sqrt2`, :math:`s = 1` and why;
    Mongwe 2022, thesis, §3.2.6). With :math:`Z = XW + \\mathbf 1 a^\\top`,
    :math:`T = \\tanh Z`, :math:`r = (y - f)/\\sigma^2` and :math:`S = 1 - T^2`, the gradient
    is back-propagation,

    .. math::

        \\nabla_b = \\textstyle\\sum_i r_i, \\quad \\nabla_v = T^\\top r, \\quad
        G = (r v^\\top) \\odot S, \\quad \\nabla_a = G^\\top\\mathbf 1, \\quad
        \\nabla_W = X^\\top G,

    minus :math:`\\theta/s^2`. The Hessian-vector product is exact: forward-mode
    differentiation of that backward pass along :math:`u = (U, \\alpha, \\nu, \\beta)`,

    .. math::

        \\dot Z = XU + \\mathbf 1\\alpha^\\top, \\quad \\dot T = S \\odot \\dot Z, \\quad
        \\dot r = -(\\dot T v + T\\nu + \\beta)/\\sigma^2, \\quad \\dot S = -2 T\\odot\\dot T,

        \\dot G = (\\dot r v^\\top + r\\nu^\\top)\\odot S + (r v^\\top)\\odot\\dot S,

    giving :math:`H u = (X^\\top\\dot G, \\dot G^\\top\\mathbf 1, \\dot T^\\top r + T^\\top\\dot r,
    \\sum_i\\dot r_i) - u/s^2`. Every method takes :math:`\\theta` of shape ``(..., D)``; all
    chains go through one matrix product ``X @ W``, in the array namespace of :math:`\\theta`
    (any backend of :mod:`hamiltonia.backend`; ``backend="cupy"`` runs it on the GPU with the
    training data moved there once). :meth:`numba_kernel` gives the compiled log density and
    gradient for the compiled path (rows in blocks of 256, a vectorisable ``exp`` for the
    tanh).

    Parameters
    ----------
    X : array of shape (N, d)
        Features (e.g. standardised training features).
    y : array of shape (N,)
        Regression targets on their original scale.
    n_hidden : int
        Hidden units :math:`H` (default 5, the thesis's network).
    noise_scale : float
        Noise standard deviation :math:`\\sigma`, in units of the standardised target
        (default :math:`1/\\sqrt2`).
    prior_scale : float
        Prior standard deviation :math:`s` of every weight and bias (default 1).
    standardize_y : bool
        Standardise ``y`` with its mean and standard deviation (default ``True``); otherwise
        the model fits ``y`` as given and ``noise_scale`` is in units of ``y``.
    feature_names : sequence of str, optional
        Names of the ``d`` features (default ``x1 .. xd``), made identifier-safe.
    X_test, y_test : arrays, optional
        Held-out data (same feature scaling as ``X``, ``y_test`` on the original scale) for
        :meth:`predict` and :meth:`metrics`.
    """

    row_kernels = ("hamiltonia.targets.bnn_kernel", "bnn_log_prob", "bnn_split_log_prob")

    description = "Bayesian neural network regression, d-5-1 tanh, N(0, 1) prior, sigma = 1/sqrt(2)"
    research_n_steps = 25
    backends = BACKENDS

    def __init__(
        self,
        X,
        y,
        *,
        n_hidden: int = 5,
        noise_scale: float = DEFAULT_NOISE_SCALE,
        prior_scale: float = DEFAULT_PRIOR_SCALE,
        standardize_y: bool = True,
        feature_names: Sequence[str] | None = None,
        X_test=None,
        y_test=None,
    ):
        X, y = self._check_data(X, y, "X", "y")
        d = X.shape[1]
        self.n_hidden = check_int(n_hidden, "n_hidden", minimum=1, maximum=max_hidden(d))
        self.noise_scale = check_positive(noise_scale, "noise_scale")
        self.prior_scale = check_positive(prior_scale, "prior_scale")
        if feature_names is None:
            feature_names = [f"x{i + 1}" for i in range(d)]
        self.feature_names = _check_names(feature_names, d, "column of X", "feature_names")
        self.X, self.y = X, y
        self.standardize_y = bool(standardize_y)
        if self.standardize_y:
            scale = float(np.std(y))
            self.y_mean_ = float(np.mean(y))
            self.y_scale_ = scale if scale > 0 else 1.0
        else:
            self.y_mean_, self.y_scale_ = 0.0, 1.0
        self._ys = (y - self.y_mean_) / self.y_scale_
        self._noise_prec = 1.0 / self.noise_scale**2
        self._prior_prec = 1.0 / self.prior_scale**2
        if (X_test is None) != (y_test is None):
            raise ValueError("X_test and y_test must be given together")
        if X_test is not None:
            X_test, y_test = self._check_data(X_test, y_test, "X_test", "y_test", d=d)
        self.X_test, self.y_test = X_test, y_test
        h = self.n_hidden
        names = [f"w_{safe_name(f)}_{j + 1}" for f in self.feature_names for j in range(h)]
        names += [f"a_{j + 1}" for j in range(h)]
        names += [f"v_{j + 1}" for j in range(h)]
        names.append("b")
        super().__init__(d * h + 2 * h + 1, names)

    @staticmethod
    def _check_data(X, y, xname: str, yname: str, d: int | None = None):
        return check_design(X, y, xname, yname, columns=d)

    # ------------------------------------------------------------------ properties
    @property
    def n_obs(self) -> int:
        """Number of training observations."""
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        """Input size :math:`d`."""
        return self.X.shape[1]

    def unpack(self, x) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Split ``x`` of shape ``(..., D)`` into :math:`W` ``(..., d, H)``, :math:`a`
        ``(..., H)``, :math:`v` ``(..., H)`` and :math:`b` ``(...)`` (views, in the array
        namespace of ``x``)."""
        xp, x = as_positions(x, self.dim)
        d, h = self.n_features, self.n_hidden
        ia = d * h
        W = xp.reshape(x[..., :ia], (*x.shape[:-1], d, h))
        return W, x[..., ia : ia + h], x[..., ia + h : ia + 2 * h], x[..., -1]

    @staticmethod
    def _pack(xp, gW, ga, gv, gb) -> np.ndarray:
        lead = tuple(gb.shape)
        gb = xp.asarray(gb)[..., None]
        return xp.concat([xp.reshape(gW, (*lead, -1)), ga, gv, gb], axis=-1)

    # ------------------------------------------------------------------ network
    @staticmethod
    def _hidden(xp, X, W, a) -> np.ndarray:
        """:math:`T = \\tanh(XW + \\mathbf 1 a^\\top)`, shape ``(..., N, H)``."""
        return xp.tanh(xp.matmul(X, W) + a[..., None, :])

    @staticmethod
    def _output(xp, T, v, b) -> np.ndarray:
        """:math:`f = Tv + b`, shape ``(..., N)``."""
        return xp.matmul(T, v[..., :, None])[..., 0] + b[..., None]

    def _forward(self, x):
        xp, x = as_positions(x, self.dim)
        W, a, v, b = self.unpack(x)
        T = self._hidden(xp, self.on(xp, "X"), W, a)
        return xp, W, a, v, b, T, self._output(xp, T, v, b)

    def log_likelihood(self, x) -> np.ndarray:
        """:math:`-\\tfrac{1}{2\\sigma^2}\\sum_i (y_i - f(x_i))^2` (standardised ``y``, no
        constant), shape ``x.shape[:-1]``."""
        xp, *_, f = self._forward(x)
        e = self.on(xp, "_ys") - f
        return -0.5 * self._noise_prec * xp.sum(e * e, axis=-1)

    def log_prob(self, x):
        xp, x = as_positions(x, self.dim)
        return self.log_likelihood(x) - 0.5 * self._prior_prec * xp.sum(x * x, axis=-1)

    def log_prob_and_grad(self, x):
        return self.rows_log_prob_and_grad(x, 0, self.n_obs, 1.0)

    def rows_log_prob_and_grad(self, x, start, stop, prior_share):
        """The log likelihood of rows ``[start, stop)`` plus ``prior_share`` of the log prior,
        and its gradient (:class:`~hamiltonia.targets.split.RowTarget`): the arrays of the
        network's pass have ``stop - start`` rows."""
        xp, x = as_positions(x, self.dim)
        W, a, v, b = self.unpack(x)
        X = self.on(xp, "X")[start:stop, ...]
        T = self._hidden(xp, X, W, a)
        e = self.on(xp, "_ys")[start:stop] - self._output(xp, T, v, b)
        r = self._noise_prec * e
        prec = self._prior_prec * prior_share
        lp = -0.5 * xp.sum(e * r, axis=-1) - 0.5 * prec * xp.sum(x * x, axis=-1)
        gv = xp.matmul(r[..., None, :], T)[..., 0, :]
        G = r[..., None] * v[..., None, :] * (1.0 - T * T)
        grad = self._pack(xp, xp.matmul(X.T, G), xp.sum(G, axis=-2), gv, xp.sum(r, axis=-1))
        return lp, grad - prec * x

    def hvp(self, x, v):
        xp, x = as_positions(x, self.dim)
        _, u = as_positions(v, self.dim, "v")
        x, u = xp.broadcast_arrays(x, u)
        _, _, _, vv, _, T, f = self._forward(x)
        U, al, nu, be = self.unpack(u)
        X = self.on(xp, "X")
        r = self._noise_prec * (self.on(xp, "_ys") - f)
        S = 1.0 - T * T
        Td = S * (xp.matmul(X, U) + al[..., None, :])
        rd = -self._noise_prec * (
            xp.matmul(Td, vv[..., :, None])[..., 0]
            + xp.matmul(T, nu[..., :, None])[..., 0]
            + be[..., None]
        )
        rv = r[..., None] * vv[..., None, :]
        Gd = (rd[..., None] * vv[..., None, :] + r[..., None] * nu[..., None, :]) * S
        Gd = Gd - 2.0 * rv * T * Td
        gvd = xp.matmul(r[..., None, :], Td)[..., 0, :] + xp.matmul(rd[..., None, :], T)[..., 0, :]
        out = self._pack(xp, xp.matmul(X.T, Gd), xp.sum(Gd, axis=-2), gvd, xp.sum(rd, axis=-1))
        return out - self._prior_prec * u

    def _kernel_data(self) -> np.ndarray:
        return np.concatenate([[self._noise_prec, self._prior_prec], self.X.T.ravel(), self._ys])

    def _kernel_sizes(self) -> list[int]:
        from hamiltonia.targets.bnn_kernel import KERNEL_BLOCK

        return [self.n_obs, self.n_features, self.n_hidden, KERNEL_BLOCK]

    # ------------------------------------------------------------------ prediction
    def _rows(self, X) -> np.ndarray:
        if X is None:
            if self.X_test is None:
                raise ValueError("X is required: this target was built without X_test")
            return self.X_test
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (M, {self.n_features}), got {X.shape}")
        return X

    def predict(self, draws, X=None, log_weights=None) -> np.ndarray:
        """Posterior predictive mean of :math:`y` per row, on the original scale of ``y``.

        .. math::

            \\hat y(x) = \\bar y + s_y \\sum_s \\bar w_s\\, f_{\\theta^{(s)}}(x)

        with the training mean :math:`\\bar y` and standard deviation :math:`s_y` used to
        standardise ``y``, and equal weights or self-normalised importance weights
        :math:`\\bar w_s \\propto e^{\\text{log\\_weights}_s}` (shadow samplers).

        Parameters
        ----------
        draws : array of shape (..., D)
            Posterior draws, e.g. ``result.draws`` of shape ``(chains, draws, D)``.
        X : array of shape (M, d), optional
            Rows to predict, scaled like the training features; default ``X_test``.
        log_weights : array of shape ``draws.shape[:-1]``, optional
            Log importance weights (e.g. ``result.log_weights``).

        Returns
        -------
        ndarray of shape (M,)
        """
        draws = check_positions(to_numpy(draws), self.dim, "draws").reshape(-1, self.dim)
        rows = self._rows(X)
        weights = normalised_weights(log_weights, draws.shape[0])
        n_draws = draws.shape[0]
        block = max(1, _PREDICT_BLOCK // (rows.shape[0] * self.n_hidden))
        total = np.zeros(rows.shape[0])
        for start in range(0, n_draws, block):
            W, a, v, b = self.unpack(draws[start : start + block])
            f = self._output(np, self._hidden(np, rows, W, a), v, b)  # (block, M)
            if weights is None:
                total += f.sum(axis=0) / n_draws
            else:
                total += weights[start : start + block] @ f
        return self.y_mean_ + self.y_scale_ * total

    def metrics(self, draws, log_weights=None) -> dict[str, float]:
        """Test-split regression metrics of the posterior predictive mean (thesis §3.4.3).

        .. math::

            \\text{MSE} = \\frac1M\\sum_m (y_m - \\hat y_m)^2, \\quad
            \\text{MAE} = \\frac1M\\sum_m |y_m - \\hat y_m|, \\quad
            R^2 = 1 - \\frac{\\sum_m (y_m - \\hat y_m)^2}{\\sum_m (y_m - \\bar y_{\\text{test}})^2}

        on the original scale of ``y``; also ``rmse`` :math:`= \\sqrt{\\text{MSE}}`.
        """
        if self.X_test is None:
            raise ValueError("metrics need test data: this target was built without X_test")
        pred = self.predict(draws, log_weights=log_weights)
        err = self.y_test - pred
        mse = float(np.mean(err**2))
        ss_tot = float(np.sum((self.y_test - self.y_test.mean()) ** 2))
        r2 = 1.0 - float(np.sum(err**2)) / ss_tot if ss_tot > 0 else float("nan")
        return {
            "mse": mse,
            "rmse": math.sqrt(mse),
            "mae": float(np.mean(np.abs(err))),
            "r2": r2,
        }

    def test_metrics(self, draws, log_weights=None) -> dict[str, float]:
        """:meth:`metrics` (the same numbers as
        :class:`~hamiltonia.diagnostics.predictive.RegressorTarget`
        gives, computed without scikit-learn); used by ``Result.test_metrics`` and the CLI."""
        return self.metrics(draws, log_weights)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dim={self.dim}, n_obs={self.n_obs}, "
            f"n_hidden={self.n_hidden}, noise_scale={self.noise_scale:.4g}, "
            f"prior_scale={self.prior_scale})"
        )


# --------------------------------------------------------------------------- factories
#: The paper setting's prior scale: :math:`\alpha = 10`, the thesis's only stated prior
#: standard deviation (its BLR prior, §3.2.5); the thesis states none for the networks (GAP).
PAPER_PRIOR_SCALE = 10.0


def _from_dataset(
    name: str, noise_scale, prior_scale, n_hidden, test_fraction, split_seed, standardize,
    setting,
) -> BayesianNeuralNetwork:  # fmt: skip
    from hamiltonia import datasets

    # Checked before the data are loaded (or downloaded); the size of X is in the registry.
    check_setting(setting)
    if prior_scale is None:
        prior_scale = PAPER_PRIOR_SCALE if setting == "paper" else DEFAULT_PRIOR_SCALE
    n_features = len(datasets.info(name).feature_columns)
    check_int(n_hidden, "n_hidden", minimum=1, maximum=max_hidden(n_features))
    data = datasets.load(
        name, test_fraction=test_fraction, seed=split_seed, standardize=standardize
    )
    has_test = len(data.y_test) > 0
    target = BayesianNeuralNetwork(
        data.X_train,
        data.y_train,
        n_hidden=n_hidden,
        noise_scale=noise_scale,
        prior_scale=prior_scale,
        feature_names=data.feature_names,
        X_test=data.X_test if has_test else None,
        y_test=data.y_test if has_test else None,
    )
    target.dataset = data
    target.description = f"Bayesian neural network (d-5-1 tanh) on {datasets.describe()[name]}"
    return with_setting(target, setting)


_FACTORY_DOC = """

    Parameters
    ----------
    noise_scale : float
        Noise standard deviation :math:`\\sigma` in units of the standardised target
        (default :math:`1/\\sqrt 2`: the thesis's "negative log-likelihood is the sum of
        squared errors", in both settings).
    prior_scale : float, optional
        Prior standard deviation :math:`s` of every weight and bias; ``None``: the setting's
        (1 for ``"default"``, 10 for ``"paper"``).
    n_hidden : int
        Hidden tanh units (default 5, the thesis's).
    test_fraction : float
        Fraction of the rows held out at random (default 0.1: the thesis's 90/10 split).
    split_seed : int
        Seed of the random split.
    standardize : bool
        Standardise the features with the training mean and standard deviation (default
        ``True``).
    setting : {"default", "paper"}
        ``"default"``: the :math:`\\mathcal N(0, 1)` prior of Cobb and Jalaian (2021).
        ``"paper"``: Mongwe 2022 (thesis, §3.2.6 and §3.2.8) as far as it goes: the d-5-1 tanh
        network, the sum-of-squared-errors likelihood (:math:`\\sigma^2 = 1/2`), features
        normalised (standardised, as for BLR) and a random 90/10 split, as in the default; the
        thesis states no prior for the networks (GAP), so the paper setting takes its only
        stated one, the BLR prior :math:`\\mathcal N(0, 10^2)`. It does not state how the
        target is scaled either (GAP): standardised, as in the default.
    """


def _factory(name: str, doc: str):
    def factory(
        noise_scale: float = DEFAULT_NOISE_SCALE,
        prior_scale: float | None = None,
        n_hidden: int = 5,
        test_fraction: float = 0.1,
        split_seed: int = 0,
        standardize: bool = True,
        setting: str = "default",
    ) -> BayesianNeuralNetwork:
        return _from_dataset(
            name, noise_scale, prior_scale, n_hidden, test_fraction, split_seed, standardize,
            setting,
        )  # fmt: skip

    factory.__name__ = factory.__qualname__ = f"bnn_{name}"
    factory.__doc__ = doc + _FACTORY_DOC
    return factory


bnn_power = _factory(
    "power", "BNN on Combined Cycle Power Plant (9568 rows, 4 features; D = 31), 90% train split."
)
bnn_airfoil = _factory(
    "airfoil", "BNN on Airfoil self-noise (1503 rows, 5 features; D = 36), 90% train split."
)
bnn_concrete = _factory(
    "concrete",
    "BNN on Concrete compressive strength (1030 rows, 8 features; D = 51), 90% train split.",
)
bnn_protein = _factory(
    "protein",
    "BNN on Protein tertiary structure (45730 rows, 9 features; D = 56), 90% train split.",
)
