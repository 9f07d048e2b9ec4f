"""Bayesian neural network classifier: one hidden tanh layer and a softmax output.

The network maps :math:`x \\in \\mathbb R^d` to class probabilities over :math:`C` classes,

.. math::

    t(x) = \\tanh(a + W^\\top x), \\qquad z(x) = b + V^\\top t(x), \\qquad
    p(y = k \\mid x, \\theta) = \\operatorname{softmax}_k z(x)
        = \\frac{e^{z_k(x)}}{\\sum_{l=1}^{C} e^{z_l(x)}},

with :math:`W` (``d × H``), :math:`a` (``H``), :math:`V` (``H × C``) and :math:`b` (``C``): the
categorical likelihood of Neal (1996, §1.2.1) and Bishop (2006, §4.3.4, §5.2), on the
network of :class:`~hamiltonia.targets.bnn.BayesianNeuralNetwork` with a softmax output
in place of the linear one, so :math:`D = dH + H + HC + C` parameters (760 for the digits,
:math:`d = 64`, :math:`H = 10`, :math:`C = 10`).

Decisions
---------
* **Prior** :math:`\\theta_k \\sim \\mathcal N(0, s^2)` on every weight and bias, :math:`s = 1`
  (``prior_scale``): the :math:`\\mathcal N(0, I)` prior of Cobb and Jalaian (2021, §5.1),
  also hamiltorch's default, as for the regression network. The softmax is invariant to a
  constant added to every logit; the prior makes the posterior proper all the same.
* **Data**: scikit-learn's handwritten digits (:func:`sklearn.datasets.load_digits`: the
  1,797 8×8 images of the test part of the UCI *Optical Recognition of Handwritten Digits*
  data, Alpaydin and Kaynak 1998, pixel counts 0..16), which ships inside scikit-learn, so
  nothing is downloaded. Held out: a seeded random split stratified by class
  (``test_fraction`` of each class, rounded), features standardised with the training
  rows' mean and standard deviation (a pixel constant over the training rows keeps scale 1).
  scikit-learn is an optional dependency (``pip install 'hamiltonia[metrics]'``), imported
  only by the factory :func:`digits`.
* **Split HMC**: the target is a :class:`~hamiltonia.targets.split.RowTarget`, so
  :class:`~hamiltonia.targets.split.SplitTarget` splits its potential over consecutive
  subsets of the training rows, kept in the data set's order, which mixes the digits: with
  the default split, each of 16 subsets still holds at least 5 rows of every class.
* Normalising constants are dropped: with :math:`\\operatorname{LSE}(z) = \\log\\sum_k e^{z_k}`,
  :math:`\\log\\pi(\\theta) = \\sum_i [z_{y_i}(x_i) - \\operatorname{LSE}(z(x_i))] -
  \\lVert\\theta\\rVert^2 / (2s^2)`.

Parameter vector: :math:`\\theta = (W, a, V, b)` with :math:`W` stored feature-major, named
``w_<feature>_<j>``, then ``a_<j>``, ``v_<j>_<class>`` (:math:`V` stored hidden-major) and
``b_<class>`` (:math:`j = 1..H`).

References
----------
Alpaydin, E. and Kaynak, C. (1998), *Optical Recognition of Handwritten Digits*, UCI Machine
Learning Repository. Bishop, C. M. (2006), *Pattern Recognition and Machine Learning*,
§4.3.4 (multiclass logistic regression) and §5.3 (back-propagation). Cobb, A. D. and Jalaian,
B. (2021), *Scaling Hamiltonian Monte Carlo inference for Bayesian neural networks with
symmetric splitting*, UAI. Neal, R. M. (1996), *Bayesian Learning for Neural Networks*,
Springer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hamiltonia._validation import (
    MAX_TARGET_DIM,
    as_float,
    check_design,
    check_flag,
    check_int,
    check_positions,
    check_positive,
)
from hamiltonia.targets.base import Target, check_setting, with_setting
from hamiltonia.targets.bnn import normalised_weights
from hamiltonia.targets.logistic import safe_name
from hamiltonia.targets.split import RowTarget

__all__ = [
    "DEFAULT_HIDDEN",
    "DIGITS_CLASSES",
    "DIGITS_FEATURES",
    "BNNClassifier",
    "digits",
    "log_softmax",
    "max_hidden",
    "stratified_split",
]

#: Hidden units of the default network (:math:`D = 760` on the digits).
DEFAULT_HIDDEN = 10
#: The digits' 8×8 pixels and 10 classes: the factory checks ``n_hidden`` against them
#: before it imports scikit-learn or loads anything.
DIGITS_FEATURES = 64
DIGITS_CLASSES = 10

# Cap on the elements of one (draws, rows, max(hidden, classes)) block in prediction.
_PREDICT_BLOCK = 1 << 22


# --------------------------------------------------------------------------- helpers
def max_hidden(n_features: int, n_classes: int) -> int:
    """The most hidden units a classifier on ``n_features`` inputs and ``n_classes`` classes
    may have: its ``(n_features + 1 + n_classes) * n_hidden + n_classes`` parameters stay
    within :data:`~hamiltonia._validation.MAX_TARGET_DIM`."""
    return max(1, (MAX_TARGET_DIM - n_classes) // (n_features + 1 + n_classes))


def log_softmax(z: np.ndarray) -> np.ndarray:
    """:math:`\\log\\operatorname{softmax}(z)` along the last axis, stable for any ``z``.

    .. math::

        \\log\\operatorname{softmax}_k(z) = z_k - m - \\log\\sum_l e^{z_l - m},
        \\qquad m = \\max_l z_l,

    so every exponent is :math:`\\le 0` (no overflow) and the sum is :math:`\\ge 1` (no
    :math:`\\log 0`)."""
    shifted = z - np.max(z, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def _labels(y, yname: str, n_classes: int | None) -> np.ndarray:
    """``y`` (finite, already checked) as int64 class labels in ``0..n_classes - 1``."""
    if not np.all(y == np.round(y)) or np.any(y < 0):
        raise ValueError(f"{yname} must hold class labels 0, 1, ..., C - 1 (integers)")
    labels = y.astype(np.int64)
    if n_classes is not None and labels.max() >= n_classes:
        raise ValueError(
            f"{yname} must hold class labels in 0..{n_classes - 1}, got {int(labels.max())}"
        )
    return labels


def _check_names(names, count: int, what: str, argname: str) -> tuple[str, ...]:
    names = [str(n) for n in names]
    if len(names) != count:
        raise ValueError(f"{argname} must have one name per {what} ({count}), got {len(names)}")
    return tuple(names)


def stratified_split(
    y: np.ndarray, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Training and test indices, sorted, of a seeded random split stratified by class.

    For each class :math:`k` in turn (``0, 1, ...``), ``round(test_fraction * n_k)`` of its
    :math:`n_k` rows, drawn by ``numpy.random.default_rng(seed)``, are held out; the split
    is NumPy's alone, so it does not change with the version of scikit-learn. Every class
    keeps at least one training row (else :class:`ValueError`)."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    test = []
    for k in np.unique(y):
        rows = np.flatnonzero(y == k)
        n_test = round(test_fraction * rows.size)
        if n_test >= rows.size:
            raise ValueError(
                f"test_fraction={test_fraction} leaves no training row of class {k} "
                f"({rows.size} rows)"
            )
        test.append(rng.permutation(rows)[:n_test])
    test_rows = np.sort(np.concatenate(test))
    train_rows = np.setdiff1d(np.arange(y.size), test_rows)
    return train_rows, test_rows


# --------------------------------------------------------------------------- target
class BNNClassifier(RowTarget, Target):
    """Posterior of a one-hidden-layer tanh network with a softmax output (classification).

    .. math::

        \\log\\pi(\\theta) = \\sum_{i=1}^{N}\\Bigl[z_{i y_i}
            - \\log\\sum_{k=1}^{C} e^{z_{ik}}\\Bigr]
            - \\frac{\\lVert\\theta\\rVert^2}{2 s^2} + \\text{const}, \\qquad
        Z = \\tanh(XW + \\mathbf 1 a^\\top) V + \\mathbf 1 b^\\top.

    With :math:`T = \\tanh(XW + \\mathbf 1 a^\\top)`, :math:`P = \\operatorname{softmax}(Z)`
    row by row and :math:`R = Y - P` (:math:`Y` the one-hot labels), the gradient is
    back-propagation (Bishop 2006, §5.3),

    .. math::

        \\nabla_b = R^\\top\\mathbf 1, \\quad \\nabla_V = T^\\top R, \\quad
        G = (R V^\\top) \\odot (1 - T \\odot T), \\quad \\nabla_a = G^\\top\\mathbf 1, \\quad
        \\nabla_W = X^\\top G,

    minus :math:`\\theta/s^2`. The log-softmax is computed stably (:func:`log_softmax`).
    Every method takes :math:`\\theta` of shape ``(..., D)`` (chains as leading axes); all
    chains go through one matrix product ``X @ W``. :meth:`numba_kernel` gives the compiled
    log density and gradient (rows in blocks of 256, a vectorisable ``exp`` for the tanh and
    the softmax), :meth:`split_numba_kernel` its components for split HMC.

    Parameters
    ----------
    X : array of shape (N, d)
        Features (e.g. standardised training features).
    y : array of shape (N,)
        Class labels :math:`0, \\dots, C - 1` (integers, or floats holding integers).
    n_hidden : int
        Hidden units :math:`H` (default 10).
    prior_scale : float
        Prior standard deviation :math:`s` of every weight and bias (default 1).
    n_classes : int, optional
        :math:`C`; default ``max(y) + 1`` (at least 2).
    feature_names : sequence of str, optional
        Names of the ``d`` features (default ``x1 .. xd``), made identifier-safe.
    class_names : sequence of str, optional
        Names of the ``C`` classes in parameter names (default ``0 .. C-1``).
    X_test, y_test : arrays, optional
        Held-out data (same feature scaling as ``X``) for :meth:`predict_proba` and
        :meth:`metrics`.
    """

    row_kernels = (
        "hamiltonia.targets.softmax_bnn_kernel",
        "softmax_bnn_log_prob",
        "softmax_bnn_split_log_prob",
    )

    description = "Bayesian neural network classifier, d-H-C tanh + softmax, N(0, 1) prior"
    research_n_steps = 25  # the networks' trajectory length (Mongwe 2022, Table 3.8)

    def __init__(
        self,
        X,
        y,
        *,
        n_hidden: int = DEFAULT_HIDDEN,
        prior_scale: float = 1.0,
        n_classes: int | None = None,
        feature_names: Sequence[str] | None = None,
        class_names: Sequence[str] | None = None,
        X_test=None,
        y_test=None,
    ):
        X, yf = check_design(X, y, "X", "y")
        if n_classes is not None:
            n_classes = check_int(n_classes, "n_classes", minimum=2, maximum=MAX_TARGET_DIM)
        y = _labels(yf, "y", n_classes)
        if n_classes is None:
            n_classes = int(y.max()) + 1
            if n_classes < 2:
                raise ValueError("y must hold at least two classes (labels 0 and 1), or give "
                                 "n_classes")  # fmt: skip
        d = X.shape[1]
        self.n_hidden = check_int(n_hidden, "n_hidden", minimum=1,
                                  maximum=max_hidden(d, n_classes))  # fmt: skip
        self.prior_scale = check_positive(prior_scale, "prior_scale")
        self._n_classes = n_classes
        if feature_names is None:
            feature_names = [f"x{i + 1}" for i in range(d)]
        if class_names is None:
            class_names = [str(k) for k in range(n_classes)]
        self.feature_names = _check_names(feature_names, d, "column of X", "feature_names")
        self.class_names = _check_names(class_names, n_classes, "class", "class_names")
        self.X, self.y = X, y
        # One-hot labels: the residuals R = Y - P of the gradient are one subtraction.
        self._onehot = np.zeros((X.shape[0], n_classes))
        self._onehot[np.arange(X.shape[0]), y] = 1.0
        self._prior_prec = 1.0 / self.prior_scale**2
        if (X_test is None) != (y_test is None):
            raise ValueError("X_test and y_test must be given together")
        if X_test is not None:
            X_test, yt = check_design(X_test, y_test, "X_test", "y_test", columns=d)
            y_test = _labels(yt, "y_test", n_classes)
        self.X_test, self.y_test = X_test, y_test
        h = self.n_hidden
        classes = [safe_name(c) for c in self.class_names]
        names = [f"w_{safe_name(f)}_{j + 1}" for f in self.feature_names for j in range(h)]
        names += [f"a_{j + 1}" for j in range(h)]
        names += [f"v_{j + 1}_{c}" for j in range(h) for c in classes]
        names += [f"b_{c}" for c in classes]
        super().__init__(d * h + h + h * n_classes + n_classes, names)

    # ------------------------------------------------------------------ properties
    @property
    def n_obs(self) -> int:
        """Number of training observations :math:`N`."""
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        """Input size :math:`d`."""
        return self.X.shape[1]

    @property
    def n_classes(self) -> int:
        """Number of classes :math:`C`."""
        return self._n_classes

    def unpack(self, x) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Split ``x`` of shape ``(..., D)`` into :math:`W` ``(..., d, H)``, :math:`a`
        ``(..., H)``, :math:`V` ``(..., H, C)`` and :math:`b` ``(..., C)`` (views)."""
        x = check_positions(x, self.dim)
        d, h, c = self.n_features, self.n_hidden, self.n_classes
        lead = x.shape[:-1]
        ia, iv, ib = d * h, d * h + h, d * h + h + h * c
        W = x[..., :ia].reshape(*lead, d, h)
        V = x[..., iv:ib].reshape(*lead, h, c)
        return W, x[..., ia:iv], V, x[..., ib:]

    def _pack(self, gW, ga, gV, gb) -> np.ndarray:
        lead = gb.shape[:-1]
        return np.concatenate([gW.reshape(*lead, -1), ga, gV.reshape(*lead, -1), gb], axis=-1)

    # ------------------------------------------------------------------ network
    @staticmethod
    def _network(X, W, a, V, b) -> tuple[np.ndarray, np.ndarray]:
        """:math:`T = \\tanh(XW + \\mathbf 1 a^\\top)` ``(..., N, H)`` and the log class
        probabilities :math:`\\log\\operatorname{softmax}(TV + \\mathbf 1 b^\\top)`
        ``(..., N, C)``."""
        T = np.tanh(np.matmul(X, W) + a[..., None, :])
        return T, log_softmax(np.matmul(T, V) + b[..., None, :])

    @staticmethod
    def _pick(log_p: np.ndarray, y: np.ndarray) -> np.ndarray:
        """:math:`\\log p_{i y_i}`: the log probability of each row's label, ``(..., N)``."""
        return log_p[..., np.arange(y.size), y]

    def _pointwise(self, x, start: int, stop: int) -> np.ndarray:
        W, a, V, b = self.unpack(x)
        _, log_p = self._network(self.X[start:stop], W, a, V, b)
        return self._pick(log_p, self.y[start:stop])

    def log_likelihood(self, x) -> np.ndarray:
        """:math:`\\sum_i \\log p(y_i \\mid x_i, \\theta)`, shape ``x.shape[:-1]``."""
        x = check_positions(x, self.dim)
        return np.sum(self._pointwise(x, 0, self.n_obs), axis=-1)

    def log_prob(self, x):
        x = check_positions(x, self.dim)
        return self.log_likelihood(x) - 0.5 * self._prior_prec * np.sum(x * x, axis=-1)

    def log_prob_and_grad(self, x):
        return self.rows_log_prob_and_grad(x, 0, self.n_obs, 1.0)

    def rows_log_prob_and_grad(self, x, start, stop, prior_share):
        """The log likelihood of rows ``[start, stop)`` plus ``prior_share`` of the log prior,
        and its gradient (:class:`~hamiltonia.targets.split.RowTarget`): the arrays of the
        network's pass have ``stop - start`` rows."""
        x = check_positions(x, self.dim)
        W, a, V, b = self.unpack(x)
        X = self.X[start:stop]
        T, log_p = self._network(X, W, a, V, b)
        ll = np.sum(self._pick(log_p, self.y[start:stop]), axis=-1)
        R = self._onehot[start:stop] - np.exp(log_p)
        G = np.matmul(R, np.swapaxes(V, -1, -2)) * (1.0 - T * T)
        gV = np.matmul(np.swapaxes(T, -1, -2), R)
        grad = self._pack(np.matmul(X.T, G), G.sum(axis=-2), gV, R.sum(axis=-2))
        prec = self._prior_prec * prior_share
        return ll - 0.5 * prec * np.sum(x * x, axis=-1), grad - prec * x

    def pointwise_log_likelihood(self, draws):
        """:math:`\\log p(y_i \\mid x_i, \\theta)` for each training observation:
        ``{"y": (..., n_obs)}`` (ArviZ's ``log_likelihood`` group), computed over blocks of
        draws so that the network's arrays stay bounded."""
        draws = check_positions(draws, self.dim, "draws")
        flat = draws.reshape(-1, self.dim)
        out = np.empty((flat.shape[0], self.n_obs))
        for start, stop in self._draw_blocks(flat.shape[0], self.n_obs):
            out[start:stop] = self._pointwise(flat[start:stop], 0, self.n_obs)
        return {"y": out.reshape(*draws.shape[:-1], self.n_obs)}

    @property
    def observed_data(self):
        return {"y": self.y}

    # ------------------------------------------------------------------ compiled
    def _kernel_data(self) -> np.ndarray:
        # X by columns: the kernel's inner loops then run along contiguous rows.
        return np.concatenate([[self._prior_prec], self.X.T.ravel(), self.y.astype(float)])

    def _kernel_sizes(self) -> list[int]:
        from hamiltonia.targets.softmax_bnn_kernel import KERNEL_BLOCK

        return [self.n_obs, self.n_features, self.n_hidden, self.n_classes, KERNEL_BLOCK]

    # ------------------------------------------------------------------ prediction
    def _draw_blocks(self, n_draws: int, n_rows: int):
        """``(start, stop)`` of blocks of draws whose network arrays hold at most
        ``_PREDICT_BLOCK`` elements."""
        width = max(self.n_hidden, self.n_classes)
        block = max(1, _PREDICT_BLOCK // (max(1, n_rows) * width))
        for start in range(0, n_draws, block):
            yield start, min(start + block, n_draws)

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

    def _predictive(self, draws, rows, log_weights, labels=None):
        """The model-averaged class probabilities ``(M, C)`` and, given ``labels``, the log
        predictive probability of each row's label ``(M,)``, accumulated over blocks of
        draws (the latter in log space: a label every draw finds unlikely keeps a finite
        log probability)."""
        flat = check_positions(draws, self.dim, "draws").reshape(-1, self.dim)
        n_draws = flat.shape[0]
        weights = normalised_weights(log_weights, n_draws)
        if weights is None:
            log_w = np.full(n_draws, -math.log(n_draws))
        else:
            with np.errstate(divide="ignore"):
                log_w = np.log(weights)
        proba = np.zeros((rows.shape[0], self.n_classes))
        log_label = np.full(rows.shape[0], -np.inf)
        for start, stop in self._draw_blocks(n_draws, rows.shape[0]):
            _, log_p = self._network(rows, *self.unpack(flat[start:stop]))  # (S, M, C)
            p = np.exp(log_p)
            if weights is None:
                proba += p.sum(axis=0) / n_draws
            else:
                proba += np.tensordot(weights[start:stop], p, axes=1)
            if labels is not None:
                terms = log_w[start:stop, None] + self._pick(log_p, labels)  # (S, M)
                top = np.max(terms, axis=0)
                safe = np.where(np.isfinite(top), top, 0.0)
                with np.errstate(divide="ignore"):  # a block of zero weights: log 0
                    block = safe + np.log(np.sum(np.exp(terms - safe), axis=0))
                log_label = np.logaddexp(log_label, block)
        return proba, log_label

    def predict_proba(self, draws, X=None, log_weights=None) -> np.ndarray:
        """Posterior predictive class probabilities (the Bayesian model average).

        .. math::

            \\hat p_k(x) = \\sum_s \\bar w_s\\, \\operatorname{softmax}_k
                \\bigl(z_{\\theta^{(s)}}(x)\\bigr)

        with equal weights, or self-normalised importance weights
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
        ndarray of shape (M, C)
            Each row sums to one.
        """
        return self._predictive(draws, self._rows(X), log_weights)[0]

    def predict(self, draws, X=None, log_weights=None) -> np.ndarray:
        """:meth:`predict_proba`: a classifier's posterior predictive is its class
        probabilities (what ``Result.predict`` returns for classifiers); the predicted class
        is ``predict(...).argmax(axis=1)``."""
        return self.predict_proba(draws, X, log_weights)

    def metrics(self, draws, log_weights=None) -> dict[str, float]:
        """Accuracy and negative log likelihood of the posterior predictive on the test split.

        .. math::

            \\text{accuracy} = \\frac1M \\sum_m [\\arg\\max_k \\hat p_k(x_m) = y_m], \\qquad
            \\text{nll} = -\\frac1M \\sum_m \\log \\hat p_{y_m}(x_m),

        with :math:`\\hat p` the model average of :meth:`predict_proba` (the NLL in nats per
        test row; :math:`\\log C` for a uniform guess, 2.303 for ten classes). The log
        predictive probability is accumulated in log space, so the NLL stays finite where
        every draw gives a label a probability below :math:`10^{-308}`. Computed with NumPy
        alone (no scikit-learn).
        """
        if self.X_test is None:
            raise ValueError("metrics need test data: this target was built without X_test")
        proba, log_label = self._predictive(draws, self.X_test, log_weights, self.y_test)
        return {
            "accuracy": float(np.mean(np.argmax(proba, axis=1) == self.y_test)),
            "nll": float(-np.mean(log_label)),
        }

    def test_metrics(self, draws, log_weights=None) -> dict[str, float]:
        """:meth:`metrics`; used by ``Result.test_metrics`` and the CLI."""
        return self.metrics(draws, log_weights)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dim={self.dim}, n_obs={self.n_obs}, "
            f"n_features={self.n_features}, n_hidden={self.n_hidden}, "
            f"n_classes={self.n_classes}, prior_scale={self.prior_scale})"
        )


# --------------------------------------------------------------------------- factory
def _check_test_fraction(value) -> float:
    value = as_float(value, "test_fraction", "a number in [0, 1)")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"test_fraction must lie in [0, 1), got {value!r}")
    return value


def _load_digits():
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError(
            "the digits target needs scikit-learn, which ships the data set: "
            "pip install 'hamiltonia[metrics]'"
        ) from None
    return load_digits()


def digits(
    *,
    n_hidden: int = DEFAULT_HIDDEN,
    prior_scale: float = 1.0,
    test_fraction: float = 0.2,
    split_seed: int = 0,
    standardize: bool = True,
    setting: str = "default",
) -> BNNClassifier:
    """BNN classifier on scikit-learn's handwritten digits (1797 rows, 64 pixels, 10
    classes; D = 760 with 10 hidden units), 80% train split stratified by class.

    Parameters
    ----------
    n_hidden : int
        Hidden tanh units :math:`H` (default 10): :math:`D = 75H + 10`.
    prior_scale : float
        Prior standard deviation :math:`s` of every weight and bias (default 1).
    test_fraction : float
        Fraction of each class held out at random (default 0.2: 1438 training and 359
        test rows); 0 keeps every row for training (no metrics then).
    split_seed : int
        Seed of the random split (:func:`stratified_split`).
    standardize : bool
        Standardise the pixels with the training rows' mean and standard deviation (default
        ``True``; a pixel constant over them keeps scale 1); ``False`` keeps the counts
        0..16.
    setting : {"default", "paper"}
        No publication of the research defines this target (GAP): ``"paper"`` is accepted,
        as by every built-in factory, and builds the default target, recorded as the paper
        setting.

    Raises
    ------
    ImportError
        Without scikit-learn (``pip install 'hamiltonia[metrics]'``).
    """
    # Every option is checked before scikit-learn is imported or the data are loaded.
    check_setting(setting)
    n_hidden = check_int(n_hidden, "n_hidden", minimum=1,
                         maximum=max_hidden(DIGITS_FEATURES, DIGITS_CLASSES))  # fmt: skip
    prior_scale = check_positive(prior_scale, "prior_scale")
    test_fraction = _check_test_fraction(test_fraction)
    split_seed = check_int(split_seed, "split_seed")
    standardize = check_flag(standardize, "standardize")
    bunch = _load_digits()
    X_all = np.asarray(bunch.data, dtype=float)
    y_all = np.asarray(bunch.target, dtype=np.int64)
    train, test = stratified_split(y_all, test_fraction, split_seed)
    X, X_test = X_all[train], X_all[test]
    if standardize:
        mean = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale == 0] = 1.0  # a pixel blank in every training image stays 0
        X, X_test = (X - mean) / scale, (X_test - mean) / scale
    else:
        mean, scale = np.zeros(X.shape[1]), np.ones(X.shape[1])
    feature_names = getattr(bunch, "feature_names", None)
    has_test = test.size > 0
    target = BNNClassifier(
        X,
        y_all[train],
        n_hidden=n_hidden,
        prior_scale=prior_scale,
        n_classes=DIGITS_CLASSES,
        feature_names=feature_names,
        X_test=X_test if has_test else None,
        y_test=y_all[test] if has_test else None,
    )
    target.train_index, target.test_index = train, test
    target.feature_mean, target.feature_scale = mean, scale
    target.description = (
        f"Bayesian neural network classifier (64-{n_hidden}-10 tanh, softmax) on "
        "scikit-learn's handwritten digits (1797 rows, 64 pixels, 10 classes)"
    )
    return with_setting(target, setting)
