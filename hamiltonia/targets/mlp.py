"""Fully connected regression networks, and the 1-D regression example of Cobb and Jalaian
(2021, §5.1, Fig. 1, Table 1).

The model
---------
A network with :math:`L` hidden layers of widths :math:`n_1, \\dots, n_L`, activation
:math:`\\phi` (tanh, or ReLU) and a linear output,

.. math::

    H_0 = X, \\qquad H_l = \\phi(H_{l-1} W_l + \\mathbf 1 b_l^\\top)\\ (l = 1..L), \\qquad
    f = H_L w_{L+1} + b_{L+1},

a Gaussian likelihood with noise precision :math:`\\tau` and an isotropic Gaussian prior,

.. math::

    \\log\\pi(\\theta) = -\\frac{\\tau}{2}\\sum_{i=1}^{N}\\bigl(y_i - f(x_i; \\theta)\\bigr)^2
        - \\frac{\\lVert\\theta\\rVert^2}{2 s^2} + \\text{const}

(Cobb and Jalaian 2021, §5.1: :math:`p(Y \\mid X, \\omega) = \\mathcal N(f(X; \\omega),
\\tau^{-1} I)`, :math:`p(\\omega) = \\mathcal N(0, I)`). :class:`MLPRegression` is a
:class:`~hamiltonia.targets.split.RowTarget`, so split HMC can divide its potential over
subsets of the rows (:class:`~hamiltonia.targets.split.SplitTarget`).

The paper's example (:func:`regression_1d`)
-------------------------------------------
* **Network**: 1 → 100 → 100 → 1, :math:`D = 200 + 10100 + 101 = 10401` parameters
  (Table 1). The text's "3 hidden layers of 100 units" is an erratum: three would give
  20,501. **Activation**: the paper does not state it (GAP). tanh here; the hamiltorch
  notebook that goes with the paper uses ReLU (EXTERNAL), which ``activation="relu"`` gives.
* **Likelihood**: :math:`\\tau = 110.4439498986428` (:data:`PAPER_TAU`), the value of the
  hamiltorch notebook (EXTERNAL); the paper fits it with a Matérn-3/2 GP in GPyTorch.
  **Prior** :math:`\\mathcal N(0, I)`. The research trajectory length is the paper's
  :math:`L = 30` (``research_n_steps``); its step size is :math:`\\varepsilon = 5 \\times
  10^{-4}` with :math:`M = I`, 1000 samples of which 200 are burn-in, 10 chains.
* **Splits**: 400 training rows in 4 consecutive subsets of 100
  (``SplitTarget(target, 4)``).
* **Test inputs**: 500 points evenly spaced on :math:`[-2, 2]` (standardised :math:`x`), the
  notebook's grid (EXTERNAL); they have no targets, so the target has no ``test_metrics``
  (:meth:`MLPRegression.predict` and :meth:`MLPRegression.calibration` give what the paper
  reports: the predictive bands of Fig. 1 and the calibration of footnote 5).

The data (GAP: generated here, not the original file)
-----------------------------------------------------
The paper uses "the simple 1D data set from Izmailov et al. (2019)", a file that is not
available here and whose generating code is not published: :func:`regression_1d_data`
generates a data set of the same kind, with the assumptions listed in
:mod:`hamiltonia.targets.mlp_data`, which holds it (this module re-exports its names).

References
----------
Cobb, A. D. and Jalaian, B. (2021), *Scaling Hamiltonian Monte Carlo inference for Bayesian
neural networks with symmetric splitting*, UAI, §5.1. Izmailov, P., Maddox, W. J.,
Kirichenko, P., Garipov, T., Vetrov, D. and Wilson, A. G. (2019), *Subspace inference for
Bayesian deep learning*, UAI.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from numbers import Integral
from typing import NamedTuple

import numpy as np

from hamiltonia._validation import (
    MAX_TARGET_DIM,
    check_design,
    check_int,
    check_positions,
    check_positive,
)
from hamiltonia.diagnostics.predictive import RegressorTarget
from hamiltonia.modelling.parameters import element_names
from hamiltonia.targets.base import Target, check_setting, with_setting
from hamiltonia.targets.bnn import normalised_weights
from hamiltonia.targets.mlp_data import (
    DATA_INTERVALS,
    DATA_SEED,
    GENERATOR_WIDTHS,
    PAPER_N_OBS,
    PAPER_TAU,
    Regression1DData,
    regression_1d_data,
)
from hamiltonia.targets.split import RowTarget

__all__ = [
    "ACTIVATIONS",
    "DATA_INTERVALS",
    "DATA_SEED",
    "GENERATOR_WIDTHS",
    "PAPER_HIDDEN",
    "PAPER_N_OBS",
    "PAPER_TAU",
    "MLPRegression",
    "Prediction",
    "Regression1DData",
    "regression_1d",
    "regression_1d_data",
]

#: Hidden widths of the paper's network (Table 1: :math:`\omega \in \mathbb R^{10401}`).
PAPER_HIDDEN = (100, 100)
#: The activations :class:`MLPRegression` supports.
ACTIVATIONS = ("tanh", "relu")

# Cap on the elements of one (chains, rows, width) array: larger batches are done in chunks
# of chains, so the memory of a call stays bounded (finite differences of a 10,401-parameter
# network would otherwise ask for gigabytes).
_BLOCK = 1 << 22


class Prediction(NamedTuple):
    """Posterior predictive of a regression network at ``M`` inputs (arrays of shape
    ``(M,)``): the mean, the total standard deviation
    :math:`\\sqrt{\\operatorname{Var}_\\theta f + 1/\\tau}` and its epistemic part
    :math:`\\sqrt{\\operatorname{Var}_\\theta f}`."""

    mean: np.ndarray
    sd: np.ndarray
    epistemic_sd: np.ndarray


def _check_hidden(hidden) -> tuple[int, ...]:
    if isinstance(hidden, Integral) and not isinstance(hidden, bool):
        hidden = (hidden,)
    if isinstance(hidden, str | bytes) or not isinstance(hidden, Sequence):
        raise ValueError(
            f"hidden must be a sequence of hidden-layer widths, e.g. (100, 100), got {hidden!r}"
        )
    if len(hidden) == 0:
        raise ValueError("hidden must name at least one hidden layer, got ()")
    return tuple(check_int(h, f"hidden[{k}]", minimum=1) for k, h in enumerate(hidden))


# --------------------------------------------------------------------------- target
class MLPRegression(RegressorTarget, RowTarget, Target):
    """Posterior of a fully connected regression network with a Gaussian likelihood.

    .. math::

        \\log\\pi(\\theta) = -\\frac{\\tau}{2}\\sum_{i=1}^{N}\\bigl(y_i - f(x_i)\\bigr)^2
            - \\frac{\\lVert\\theta\\rVert^2}{2 s^2} + \\text{const}, \\qquad
        f = H_L w_{L+1} + b_{L+1},\\ H_l = \\phi(H_{l-1} W_l + \\mathbf 1 b_l^\\top),
        \\ H_0 = X.

    The gradient is back-propagation: with :math:`r = \\tau (y - f)`,

    .. math::

        \\nabla_{w_{L+1}} = H_L^\\top r, \\quad \\nabla_{b_{L+1}} = \\textstyle\\sum_i r_i,
        \\quad \\Delta_L = (r\\, w_{L+1}^\\top) \\odot \\phi'(Z_L),

        \\nabla_{W_l} = H_{l-1}^\\top \\Delta_l, \\quad \\nabla_{b_l} = \\Delta_l^\\top
        \\mathbf 1, \\quad \\Delta_{l-1} = (\\Delta_l W_l^\\top) \\odot \\phi'(Z_{l-1}),

    minus :math:`\\theta / s^2`, where :math:`\\phi'` is written with the activation itself:
    :math:`1 - H^2` for tanh, :math:`[H > 0]` for ReLU. Every method takes :math:`\\theta` of
    shape ``(..., D)``; the chains go through batched matrix products (in chunks of chains,
    so that memory stays bounded). :meth:`numba_kernel` gives the compiled density
    (:mod:`hamiltonia.targets.mlp_kernel`: rows in blocks, loops that vectorise).

    Parameter vector: :math:`\\theta = (W_1, b_1, \\dots, W_{L+1}, b_{L+1})`, each
    :math:`W_l` of shape ``(n_{l-1}, n_l)`` stored input-major and named
    ``w<l>_<i>_<j>`` (input ``i``, unit ``j``), each bias ``b<l>_<j>``, all from 1; the output
    layer is ``l = L + 1`` with one unit.

    Parameters
    ----------
    X : array of shape (N, d)
        Inputs (e.g. standardised).
    y : array of shape (N,)
        Targets, modelled as given (standardise them beforehand if :math:`\\tau` is meant in
        standardised units, as in the paper).
    hidden : int or sequence of int
        Widths of the hidden layers (default (100, 100), the paper's).
    activation : {"tanh", "relu"}
        Hidden activation :math:`\\phi` (default tanh).
    tau : float
        Noise precision :math:`\\tau` (default 1).
    prior_scale : float
        Prior standard deviation :math:`s` of every weight and bias (default 1).
    X_test : array of shape (M, d), optional
        Inputs for :meth:`predict` (the default rows).
    y_test : array of shape (M,), optional
        Their targets (needs ``X_test``); with them the target has :meth:`test_metrics`.
    """

    row_kernels = ("hamiltonia.targets.mlp_kernel", "mlp_log_prob", "mlp_split_log_prob")

    description = "Fully connected regression network, Gaussian likelihood, N(0, s^2) prior"
    #: Cobb and Jalaian (2021, §5.1): :math:`L = 30` leapfrog steps.
    research_n_steps = 30

    def __init__(
        self,
        X,
        y,
        *,
        hidden: int | Sequence[int] = PAPER_HIDDEN,
        activation: str = "tanh",
        tau: float = 1.0,
        prior_scale: float = 1.0,
        X_test=None,
        y_test=None,
    ):
        X, y = check_design(X, y, "X", "y")
        self.hidden = _check_hidden(hidden)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        self.activation = activation
        self.tau = check_positive(tau, "tau")
        self.prior_scale = check_positive(prior_scale, "prior_scale")
        self.X, self.y = X, y
        self._prior_prec = 1.0 / self.prior_scale**2
        if y_test is not None and X_test is None:
            raise ValueError("y_test needs X_test (the inputs it belongs to)")
        if X_test is not None:
            X_test = self._check_rows(X_test, "X_test")
            if y_test is not None:
                X_test, y_test = check_design(X_test, y_test, "X_test", "y_test")
        self.X_test, self.y_test = X_test, y_test
        # (n_in, n_out, offset of W, offset of b) per layer, the output layer last.
        widths = (X.shape[1], *self.hidden, 1)
        self._layers = []
        offset = 0
        for n_in, n_out in pairwise(widths):
            self._layers.append((n_in, n_out, offset, offset + n_in * n_out))
            offset += n_in * n_out + n_out
        if offset > MAX_TARGET_DIM:
            raise ValueError(
                f"the network has {offset} parameters, more than the {MAX_TARGET_DIM} a "
                f"target may have (input size {X.shape[1]}, hidden {self.hidden})"
            )
        self._width = max(widths)
        names = []
        for layer, (n_in, n_out, _, _) in enumerate(self._layers, start=1):
            names += [f"w{layer}_{i}_{j}" for i in range(1, n_in + 1) for j in range(1, n_out + 1)]
            names += [f"b{layer}_{j}" for j in range(1, n_out + 1)]
        super().__init__(offset, names)

    @property
    def blocks(self) -> list:
        """Each layer's weights and biases as one variable, ``w<l>`` ``(n_{l-1}, n_l)`` and
        ``b<l>`` ``(n_l,)`` (dims ``units<l>``, ``units0`` the inputs): a result then holds a
        few arrays rather than one variable per parameter, which a netCDF file of ten
        thousand variables makes slow to write and ArviZ to read."""
        out = []
        for layer, (n_in, n_out, _, _) in enumerate(self._layers, start=1):
            out.append([f"w{layer}", [n_in, n_out], [f"units{layer - 1}", f"units{layer}"]])
            out.append([f"b{layer}", [n_out], [f"units{layer}"]])
        return out

    @property
    def reported_names(self) -> tuple[str, ...]:
        return tuple(n for name, shape, _ in self.blocks for n in element_names(name, shape))

    def _check_rows(self, X, name: str) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.n_features or X.shape[0] < 1:
            raise ValueError(f"{name} must have shape (M, {self.n_features}), got {X.shape}")
        if not np.all(np.isfinite(X)):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        return X

    # ------------------------------------------------------------------ properties
    @property
    def n_obs(self) -> int:
        """Number of training rows :math:`N`."""
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        """Input size :math:`d`."""
        return self.X.shape[1]

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        """:math:`(d, n_1, \\dots, n_L, 1)`."""
        return (self.n_features, *self.hidden, 1)

    def initial_point(self, rng: np.random.Generator) -> np.ndarray:
        """A start drawn as PyTorch initialises ``nn.Linear`` (the hamiltorch notebook's
        chains start from a freshly initialised network): every weight and bias of a layer
        with :math:`n_{in}` inputs uniform on :math:`\\pm 1/\\sqrt{n_{in}}`. The default
        uniform(-2, 2) start would saturate every unit of a wide layer."""
        x = np.empty(self.dim)
        for n_in, n_out, w0, b0 in self._layers:
            bound = 1.0 / math.sqrt(n_in)
            x[w0 : b0 + n_out] = rng.uniform(-bound, bound, size=b0 + n_out - w0)
        return x

    def unpack(self, x) -> list[tuple[np.ndarray, np.ndarray]]:
        """``[(W_1, b_1), ..., (W_{L+1}, b_{L+1})]`` of ``x`` ``(..., D)``: views of shapes
        ``(..., n_{l-1}, n_l)`` and ``(..., n_l)``."""
        x = check_positions(x, self.dim)
        lead = x.shape[:-1]
        return [
            (x[..., w0:b0].reshape(*lead, n_in, n_out), x[..., b0 : b0 + n_out])
            for n_in, n_out, w0, b0 in self._layers
        ]

    # ------------------------------------------------------------------ network (NumPy)
    def _phi(self, z: np.ndarray) -> np.ndarray:
        return np.tanh(z) if self.activation == "tanh" else np.maximum(z, 0.0)

    def _dphi(self, h: np.ndarray) -> np.ndarray:
        # phi'(z) from h = phi(z), so the pre-activations need not be kept.
        return 1.0 - h * h if self.activation == "tanh" else (h > 0.0).astype(float)

    def _forward(self, P: np.ndarray, X: np.ndarray):
        """Activations ``[X, H_1, ..., H_L]`` (``H_l`` of shape ``(B, M, n_l)``) and outputs
        ``f`` ``(B, M)`` of the networks ``P`` ``(B, D)`` at the rows ``X`` ``(M, d)``."""
        layers = self.unpack(P)
        hs = [X]
        h = X
        for W, b in layers[:-1]:
            h = self._phi(np.matmul(h, W) + b[:, None, :])
            hs.append(h)
        W, b = layers[-1]
        return hs, np.matmul(h, W)[..., 0] + b

    def _chain_step(self, rows: int) -> int:
        return max(1, _BLOCK // (max(rows, 1) * self._width))

    def _by_chunks(self, x, rows: int, fn):
        """``fn`` over chunks of the chains of ``x`` ``(..., D)`` (see ``_BLOCK``): returns
        its one or two outputs with the leading shape of ``x`` restored."""
        x = check_positions(x, self.dim)
        lead = x.shape[:-1]
        P = x.reshape(-1, self.dim)
        step = self._chain_step(rows)
        if P.shape[0] <= step:
            out = fn(P)
        else:
            parts = [fn(P[s : s + step]) for s in range(0, P.shape[0], step)]
            out = tuple(np.concatenate(p, axis=0) for p in zip(*parts, strict=True))
        lp = out[0].reshape(lead)[()]
        return lp if len(out) == 1 else (lp, out[1].reshape(x.shape))

    def log_likelihood(self, x) -> np.ndarray:
        """:math:`-\\tfrac\\tau2\\sum_i (y_i - f(x_i))^2` (no constant), shape
        ``x.shape[:-1]``."""

        def fn(P):
            _, f = self._forward(P, self.X)
            e = self.y - f
            return (-0.5 * self.tau * np.sum(e * e, axis=-1),)

        return self._by_chunks(x, self.n_obs, fn)

    def log_prob(self, x):
        # The operations of rows_log_prob_and_grad(x, 0, N, 1.0), so both give the same bits.
        def fn(P):
            _, f = self._forward(P, self.X)
            e = self.y - f
            lp = -0.5 * np.sum(e * (self.tau * e), axis=-1)
            return (lp - 0.5 * self._prior_prec * np.sum(P * P, axis=-1),)

        return self._by_chunks(x, self.n_obs, fn)

    def log_prob_and_grad(self, x):
        return self.rows_log_prob_and_grad(x, 0, self.n_obs, 1.0)

    def rows_log_prob_and_grad(self, x, start, stop, prior_share):
        """The log likelihood of rows ``[start, stop)`` plus ``prior_share`` of the log prior,
        and its gradient (:class:`~hamiltonia.targets.split.RowTarget`), by the
        back-propagation of the class docs on those rows only."""
        start = check_int(start, "start", minimum=0, maximum=self.n_obs)
        stop = check_int(stop, "stop", minimum=start, maximum=self.n_obs)
        X, y = self.X[start:stop], self.y[start:stop]
        prec = self._prior_prec * float(prior_share)

        def fn(P):
            layers = self.unpack(P)
            hs, f = self._forward(P, X)
            e = y - f
            r = self.tau * e
            lp = -0.5 * np.sum(e * r, axis=-1) - 0.5 * prec * np.sum(P * P, axis=-1)
            W_out = layers[-1][0]
            grads = [np.matmul(hs[-1].swapaxes(-1, -2), r[..., None]), r.sum(axis=-1)[:, None]]
            delta = r[..., None] * W_out[:, None, :, 0]
            for layer in range(len(self.hidden) - 1, -1, -1):
                delta = delta * self._dphi(hs[layer + 1])
                grads[:0] = [np.matmul(hs[layer].swapaxes(-1, -2), delta), delta.sum(axis=-2)]
                if layer > 0:
                    delta = np.matmul(delta, layers[layer][0].swapaxes(-1, -2))
            packed = np.concatenate([g.reshape(P.shape[0], -1) for g in grads], axis=-1)
            return lp, packed - prec * P

        return self._by_chunks(x, stop - start, fn)

    def pointwise_log_likelihood(self, draws):
        """:math:`\\log\\mathcal N(y_i; f(x_i), \\tau^{-1})` of each training row (with its
        constant): ``{"y": (..., n_obs)}`` (ArviZ's ``log_likelihood`` group)."""
        draws = check_positions(draws, self.dim, "draws")
        const = 0.5 * math.log(self.tau / (2.0 * math.pi))
        P = draws.reshape(-1, self.dim)
        step = self._chain_step(self.n_obs)
        f = np.concatenate([self._forward(P[s : s + step], self.X)[1]
                            for s in range(0, P.shape[0], step)])  # fmt: skip
        ll = const - 0.5 * self.tau * (self.y - f) ** 2
        return {"y": ll.reshape(*draws.shape[:-1], self.n_obs)}

    @property
    def observed_data(self):
        return {"y": self.y}

    # ------------------------------------------------------------------ compiled kernels
    def _kernel_data(self) -> np.ndarray:
        # X row by row: a block of rows is then one contiguous (rows, d) matrix.
        return np.concatenate([[self.tau, self._prior_prec], self.X.ravel(), self.y])

    def _kernel_sizes(self) -> list[int]:
        from hamiltonia.targets.mlp_kernel import ACTIVATION_CODES, KERNEL_BLOCK

        block = min(KERNEL_BLOCK, self.n_obs)
        head = [self.n_obs, self.n_features, len(self.hidden), block]
        return [*head, ACTIVATION_CODES[self.activation], *self.hidden]

    # ------------------------------------------------------------------ prediction
    def predict(self, draws, X=None, log_weights=None) -> Prediction:
        """Posterior predictive mean and standard deviation per input row.

        .. math::

            \\hat y(x) = \\sum_s \\bar w_s f_{\\theta^{(s)}}(x), \\qquad
            \\operatorname{sd}(x) = \\sqrt{\\textstyle\\sum_s \\bar w_s
                \\bigl(f_{\\theta^{(s)}}(x) - \\hat y(x)\\bigr)^2 + 1/\\tau},

        epistemic (the spread of the networks over the draws) plus aleatoric (the noise
        :math:`1/\\tau`) variance, as in the bands of Cobb and Jalaian (2021, Fig. 1); equal
        weights :math:`\\bar w_s = 1/S` (so the variance over draws divides by :math:`S`), or
        self-normalised importance weights :math:`\\bar w_s \\propto e^{\\text{log\\_weights}_s}`.

        Parameters
        ----------
        draws : array of shape (..., D)
            Posterior draws, e.g. ``result.draws`` ``(chains, draws, D)``.
        X : array of shape (M, d), optional
            Inputs; default ``X_test``.
        log_weights : array of shape ``draws.shape[:-1]``, optional
            Log importance weights (e.g. ``result.log_weights``).

        Returns
        -------
        Prediction
            ``(mean, sd, epistemic_sd)``, each of shape ``(M,)``.
        """
        draws = check_positions(draws, self.dim, "draws").reshape(-1, self.dim)
        if X is None:
            if self.X_test is None:
                raise ValueError("X is required: this target was built without X_test")
            rows = self.X_test
        else:
            rows = np.asarray(X, dtype=float)
            if rows.ndim == 1:
                # One input per entry for a 1-D network (a grid), else one row of features.
                rows = rows[:, None] if self.n_features == 1 else rows[None, :]
            rows = self._check_rows(rows, "X")
        n_draws = draws.shape[0]
        weights = normalised_weights(log_weights, n_draws)
        if weights is None:
            weights = np.full(n_draws, 1.0 / n_draws)
        # Moments about the first draw's outputs, accumulated block by block: the shift keeps
        # the second moment free of cancellation without keeping every draw's outputs.
        step = self._chain_step(rows.shape[0])
        shift = self._forward(draws[:1], rows)[1][0]
        m1 = np.zeros(rows.shape[0])
        m2 = np.zeros(rows.shape[0])
        for s in range(0, n_draws, step):
            dev = self._forward(draws[s : s + step], rows)[1] - shift
            m1 += weights[s : s + step] @ dev
            m2 += weights[s : s + step] @ (dev * dev)
        var = np.maximum(m2 - m1 * m1, 0.0)
        return Prediction(shift + m1, np.sqrt(var + 1.0 / self.tau), np.sqrt(var))

    def calibration(self, draws, X=None, y=None, log_weights=None) -> dict[str, float]:
        """Fractions of the rows outside the :math:`\\pm 1` and :math:`\\pm 2` predictive
        standard deviations of :meth:`predict` (the training rows by default), to compare
        with a Gaussian's 31.7 % and 4.6 % (Cobb and Jalaian 2021, footnote 5: 30.5 % and
        3.5 % for full HMC)."""
        if (X is None) != (y is None):
            raise ValueError("X and y must be given together (default: the training rows)")
        if X is None:
            X, y = self.X, self.y
        else:
            X, y = check_design(X, y, "X", "y", columns=self.n_features)
        pred = self.predict(draws, X, log_weights=log_weights)
        z = np.abs(y - pred.mean) / pred.sd
        return {"outside_1sd": float(np.mean(z > 1.0)), "outside_2sd": float(np.mean(z > 2.0))}

    def _test_metrics(self, draws, log_weights=None) -> dict[str, float]:
        """MSE, RMSE, MAE and :math:`R^2` of the predictive mean on ``(X_test, y_test)``
        (computed without scikit-learn)."""
        err = self.y_test - self.predict(draws, log_weights=log_weights).mean
        mse = float(np.mean(err**2))
        ss_tot = float(np.sum((self.y_test - self.y_test.mean()) ** 2))
        r2 = 1.0 - float(np.sum(err**2)) / ss_tot if ss_tot > 0 else float("nan")
        return {"mse": mse, "rmse": math.sqrt(mse), "mae": float(np.mean(np.abs(err))), "r2": r2}

    @property
    def test_metrics(self):
        """Test-set metrics (:meth:`_test_metrics`) when the target has ``y_test``. Without
        it the attribute does not exist, so ``hasattr(target, "test_metrics")`` is false and
        the CLI and ``Result.test_metrics`` skip it (a test grid without targets, as in the
        paper's example, has nothing to score)."""
        if self.y_test is None:
            raise AttributeError(
                "test_metrics: this target has no test targets (y_test is None); use "
                "predict() for the predictive at X_test"
            )
        return self._test_metrics

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dim={self.dim}, n_obs={self.n_obs}, "
            f"layers={self.layer_sizes}, activation={self.activation!r}, "
            f"tau={self.tau:.6g}, prior_scale={self.prior_scale:.6g})"
        )


# --------------------------------------------------------------------------- factory
def regression_1d(
    *,
    hidden: int | Sequence[int] = PAPER_HIDDEN,
    activation: str = "tanh",
    tau: float = PAPER_TAU,
    prior_scale: float = 1.0,
    n_obs: int = PAPER_N_OBS,
    seed: int = DATA_SEED,
    setting: str = "default",
) -> MLPRegression:
    """1-D regression, 1-100-100-1 tanh network (D = 10401) on 400 generated points (Cobb 2021).

    The network of Cobb and Jalaian (2021, §5.1, Table 1) on the generated stand-in for the
    data of Izmailov et al. (2019) (:func:`regression_1d_data`; GAP, see the module docs),
    standardised, with the notebook's test grid of 500 points on :math:`[-2, 2]` as
    ``X_test``. Split it as the paper does with ``SplitTarget(target, 4)``.

    Parameters
    ----------
    hidden : int or sequence of int
        Hidden widths (default (100, 100)).
    activation : {"tanh", "relu"}
        Hidden activation (default tanh; the hamiltorch notebook's is ReLU).
    tau : float
        Noise precision (default the notebook's 110.4439498986428).
    prior_scale : float
        Prior standard deviation (default 1: :math:`\\mathcal N(0, I)`).
    n_obs : int
        Generated training rows (default 400).
    seed : int
        Seed of the data (default :data:`DATA_SEED`).
    setting : {"default", "paper"}
        Both are the paper's model: it states all of it but the activation and the data,
        which neither setting can supply (GAP), so there is nothing for them to differ in;
        ``"paper"`` is recorded on the target and in its description.
    """
    check_setting(setting)
    data = regression_1d_data(seed=seed, n_obs=n_obs)
    target = MLPRegression(
        data.X,
        data.Y,
        hidden=hidden,
        activation=activation,
        tau=tau,
        prior_scale=prior_scale,
        X_test=data.X_test,
    )
    target.dataset = data
    widths = "-".join(str(w) for w in target.layer_sizes)
    target.description = (
        f"1-D regression (Cobb & Jalaian 2021, §5.1), {widths} {activation} network, "
        f"{target.n_obs} generated points (stand-in for Izmailov et al. 2019)"
    )
    return with_setting(target, setting)
