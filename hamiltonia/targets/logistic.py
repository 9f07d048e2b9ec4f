"""Bayesian logistic regression (Mongwe 2022, thesis, §3.2.5).

The likelihood is the corrected one of the thesis's eq. 3.6 (erratum: the thesis prints
``log(wᵀx)`` without the sigmoid and calls it the negative log-likelihood), the prior is
:math:`w \\sim \\mathcal N(0, \\alpha^2 I)` with :math:`\\alpha = 10` as the standard deviation
(following Girolami & Calderhead), and the model has an intercept, so ``dim = p + 1``.

The registered targets ``blr-pima``, ``blr-heart``, ``blr-australian`` and ``blr-german`` fit
the training split of :func:`hamiltonia.datasets.load` (random 90/10, features standardised
with training statistics) and keep the test split for :meth:`LogisticRegression.predict`.

The density, its gradient and Hessian-vector product compute in the array namespace of their
input (:mod:`hamiltonia.backend`: NumPy, CuPy, array_api_strict), with the data moved to that
backend once (:class:`~hamiltonia.backend.DeviceData`); on NumPy they are the same operations
as ever. Prediction and the pointwise log-likelihood run on NumPy, on host draws.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from hamiltonia._validation import check_design, check_positions, check_positive
from hamiltonia.backend import BACKENDS, DeviceData, namespace_of, to_numpy
from hamiltonia.diagnostics.predictive import ClassifierTarget
from hamiltonia.targets.base import Target, check_setting, with_setting
from hamiltonia.targets.split import RowTarget

__all__ = [
    "LogisticRegression",
    "blr_australian",
    "blr_german",
    "blr_heart",
    "blr_pima",
    "safe_name",
]


# --------------------------------------------------------------------------- array kernels
def design_matrix(X: np.ndarray) -> np.ndarray:
    """:math:`\\tilde X = [\\mathbf 1, X]`: the features with a leading column of ones."""
    X = np.asarray(X, dtype=float)
    return np.concatenate([np.ones((X.shape[0], 1)), X], axis=1)


def softplus_and_sigmoid(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:math:`\\log(1 + e^z)` and :math:`\\sigma(z) = 1/(1 + e^{-z})`, stable for any ``z``.

    .. math::

        \\log(1 + e^z) = \\max(z, 0) + \\log(1 + e^{-|z|}), \\qquad
        \\sigma(z) = \\begin{cases} 1/(1 + e^{-|z|}) & z \\ge 0 \\\\
                     e^{-|z|}/(1 + e^{-|z|}) & z < 0 \\end{cases}

    One ``exp`` and one ``log1p`` per element; :math:`e^{-|z|} \\le 1` never overflows.
    Computes in the array namespace of ``z`` (NumPy for NumPy arrays, lists and scalars).
    """
    xp = namespace_of(z)
    e = xp.exp(-xp.abs(z))
    softplus = xp.maximum(z, 0.0) + xp.log1p(e)
    inv = 1.0 / (1.0 + e)
    sigmoid = xp.where(z >= 0, inv, e * inv)
    return softplus, sigmoid


def log_likelihood_and_grad(
    Xt: np.ndarray, y: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bernoulli-logit log-likelihood, its gradient, and :math:`\\sigma(\\tilde X w)`.

    .. math::

        \\ell(w) = \\sum_i \\bigl[y_i \\log\\sigma(z_i) + (1 - y_i)\\log(1 - \\sigma(z_i))\\bigr]
                 = \\sum_i \\bigl[y_i z_i - \\log(1 + e^{z_i})\\bigr], \\qquad z = \\tilde X w,

        \\nabla_w \\ell = \\tilde X^\\top (y - \\sigma(z)).

    ``w`` has shape ``(..., D)``; the results have shapes ``(...)``, ``(..., D)``, ``(..., N)``.
    Computes in the array namespace of the arrays (all three of one namespace).
    """
    z = w @ Xt.T
    softplus, s = softplus_and_sigmoid(z)
    ll = z @ y - namespace_of(z).sum(softplus, axis=-1)
    grad = (y - s) @ Xt
    return ll, grad, s


def log_likelihood_hvp(Xt: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Hessian of the log-likelihood times ``v``, given :math:`s = \\sigma(\\tilde X w)`.

    .. math::

        \\nabla^2_w \\ell \\, v = -\\tilde X^\\top \\operatorname{diag}\\bigl(s(1 - s)\\bigr)
                                   \\tilde X v

    computed as two matrix-vector products per batch element (the Hessian is never formed).
    """
    return -((s * (1.0 - s)) * (v @ Xt.T)) @ Xt


def predictive_probability(
    Xt: np.ndarray, W: np.ndarray, log_weights: np.ndarray | None = None
) -> np.ndarray:
    """:math:`\\hat p_m = \\sum_s \\bar w_s\\, \\sigma(\\tilde x_m^\\top w^{(s)})` for draws ``W``
    of shape ``(S, D)``, with self-normalised weights :math:`\\bar w_s \\propto
    e^{\\text{log\\_weights}_s}` (equal weights when ``log_weights`` is ``None``)."""
    _, s = softplus_and_sigmoid(Xt @ W.T)  # (M, S)
    if log_weights is None:
        return s.mean(axis=1)
    lw = np.asarray(log_weights, dtype=float).reshape(-1)
    if lw.shape[0] != W.shape[0]:
        raise ValueError(f"log_weights must have one entry per draw ({W.shape[0]}), got {lw.size}")
    if np.any(np.isnan(lw)) or not np.any(np.isfinite(lw)):
        raise ValueError("log_weights must not be NaN and must have a finite entry")
    weights = np.exp(lw - np.max(lw))
    return s @ (weights / weights.sum())


def safe_name(name: str) -> str:
    """A parameter name usable as an identifier and an xarray variable name.

    Lower-cases, writes ``%`` as ``pct`` and joins the remaining runs of letters and digits
    with ``_``: ``"Net Surplus / Deficit Water %"`` becomes ``"net_surplus_deficit_water_pct"``.
    Names that are already identifiers (``npreg``, ``A12``) are kept as they are.
    """
    if name.isidentifier():
        return name
    slug = re.sub(r"[^0-9a-zA-Z]+", "_", name.replace("%", " pct ")).strip("_").lower()
    return slug or "x"


def as_positions(x, dim: int, name: str = "x"):
    """``(xp, x)``: the array namespace of ``x`` and ``x`` as a float64 array of it, of shape
    ``(..., dim)`` or ``ValueError`` naming ``name``. NumPy arrays, lists and scalars go
    through :func:`~hamiltonia._validation.check_positions` (NumPy, as ever); backend arrays
    (CuPy, array_api_strict) stay on their backend."""
    xp = namespace_of(x)
    if xp is np:
        return np, check_positions(x, dim, name)
    x = xp.asarray(x, dtype=xp.float64)
    if x.ndim == 0 or x.shape[-1] != dim:
        raise ValueError(f"{name} must have shape (..., {dim}), got shape {tuple(x.shape)}")
    return xp, x


def _flat_draws(draws, dim: int, width: int) -> np.ndarray:
    draws = np.asarray(to_numpy(draws), dtype=float)
    if draws.ndim == 0 or draws.shape[-1] != width:
        raise ValueError(f"draws must have shape (..., {width}), got shape {draws.shape}")
    return draws.reshape(-1, width)[:, :dim]


# --------------------------------------------------------------------------- target
class LogisticRegression(DeviceData, ClassifierTarget, RowTarget, Target):
    """Bayesian logistic regression with an intercept and a Gaussian prior.

    .. math::

        \\log\\pi(w) = \\sum_{i=1}^{N}\\bigl[y_i z_i - \\log(1 + e^{z_i})\\bigr]
                      - \\frac{\\lVert w\\rVert^2}{2\\alpha^2} + \\text{const},
        \\qquad z = \\tilde X w,\\ \\tilde X = [\\mathbf 1, X],

    with :math:`w = (w_0, w_1, \\dots, w_p)` (intercept first) and prior standard deviation
    :math:`\\alpha` (``prior_scale``, default 10; Mongwe 2022, thesis, §3.2.5). Gradient:
    :math:`\\tilde X^\\top(y - \\sigma(z)) - w/\\alpha^2`; Hessian-vector product:
    :math:`-\\tilde X^\\top \\operatorname{diag}(s(1-s))\\tilde X v - v/\\alpha^2` with
    :math:`s = \\sigma(z)`.
    All three take ``w`` of shape ``(..., D)`` (chains as leading axes) and are written out by
    hand, with a stable log-sigmoid (:func:`softplus_and_sigmoid`). They compute on any array
    backend (:mod:`hamiltonia.backend`): in the namespace of ``w``, with the design matrix and
    ``y`` moved to that backend once (``backend="cupy"`` runs them on the GPU, every chain in
    one matrix product).

    Parameters
    ----------
    X : array of shape (N, p)
        Features (without the intercept column), e.g. standardised training features.
    y : array of shape (N,)
        Binary targets, 0 or 1.
    prior_scale : float
        Prior standard deviation :math:`\\alpha` of every coefficient, intercept included.
    feature_names : sequence of str, optional
        Names of the ``p`` features (default ``x1 .. xp``); parameter names are
        ``"intercept"`` then these (made identifier-safe by :func:`safe_name`).
    X_test, y_test : arrays, optional
        Held-out data for :meth:`predict` (same feature scaling as ``X``).
    """

    row_kernels = (
        "hamiltonia.targets.logistic_kernel",
        "logistic_log_prob",
        "logistic_split_log_prob",
    )

    description = "Bayesian logistic regression, intercept + N(0, alpha^2) prior (alpha = 10)"
    research_field_strength = 0.2
    research_n_steps = 50
    backends = BACKENDS

    def __init__(
        self,
        X,
        y,
        *,
        prior_scale: float = 10.0,
        feature_names: Sequence[str] | None = None,
        X_test=None,
        y_test=None,
    ):
        X, y = self._check_data(X, y, "X", "y")
        p = X.shape[1]
        if feature_names is None:
            feature_names = [f"x{j + 1}" for j in range(p)]
        feature_names = [str(f) for f in feature_names]
        if len(feature_names) != p:
            raise ValueError(
                f"feature_names must have one name per column of X ({p}), got {len(feature_names)}"
            )
        self.prior_scale = check_positive(prior_scale, "prior_scale")
        self.X, self.y = X, y
        self.feature_names = tuple(feature_names)
        self._Xt = design_matrix(X)
        self._prec = 1.0 / self.prior_scale**2
        if (X_test is None) != (y_test is None):
            raise ValueError("X_test and y_test must be given together")
        if X_test is not None:
            X_test, y_test = self._check_data(X_test, y_test, "X_test", "y_test", p=p)
        self.X_test, self.y_test = X_test, y_test
        super().__init__(p + 1, self._parameter_names())

    def _parameter_names(self) -> list[str]:
        return ["intercept", *(safe_name(f) for f in self.feature_names)]

    @staticmethod
    def _check_data(X, y, xname: str, yname: str, p: int | None = None):
        X, y = check_design(X, y, xname, yname, columns=p)
        if not np.all((y == 0) | (y == 1)):
            raise ValueError(f"{yname} must hold only 0 and 1")
        return X, y

    @property
    def n_obs(self) -> int:
        """Number of training observations."""
        return self.X.shape[0]

    def log_likelihood(self, w) -> np.ndarray:
        """:math:`\\ell(w)` alone, shape ``w.shape[:-1]``."""
        xp, w = as_positions(w, self.dim, "w")
        return log_likelihood_and_grad(self.on(xp, "_Xt"), self.on(xp, "y"), w)[0]

    def pointwise_log_likelihood(self, draws):
        """:math:`\\ell_i(w) = y_i z_i - \\log(1 + e^{z_i})`, :math:`z = \\tilde X w`, for each
        training observation: ``{"y": (..., n_obs)}`` (ArviZ's ``log_likelihood`` group)."""
        w = check_positions(to_numpy(draws), self.dim, "draws")
        z = w @ self._Xt.T
        softplus, _ = softplus_and_sigmoid(z)
        return {"y": z * self.y - softplus}

    @property
    def observed_data(self):
        return {"y": self.y}

    def log_prob(self, x):
        xp, x = as_positions(x, self.dim)
        z = x @ self.on(xp, "_Xt").T
        softplus, _ = softplus_and_sigmoid(z)
        y = self.on(xp, "y")
        return z @ y - xp.sum(softplus, axis=-1) - 0.5 * self._prec * xp.sum(x * x, axis=-1)

    def log_prob_and_grad(self, x):
        return self.rows_log_prob_and_grad(x, 0, self.n_obs, 1.0)

    def rows_log_prob_and_grad(self, x, start, stop, prior_share):
        """The log likelihood of rows ``[start, stop)`` plus ``prior_share`` of the log prior,
        and its gradient (:class:`~hamiltonia.targets.split.RowTarget`)."""
        xp, x = as_positions(x, self.dim)
        Xt, y = self.on(xp, "_Xt")[start:stop, ...], self.on(xp, "y")[start:stop]
        ll, grad, _ = log_likelihood_and_grad(Xt, y, x)
        prec = self._prec * prior_share
        lp = ll - 0.5 * prec * xp.sum(x * x, axis=-1)
        return lp, grad - prec * x

    def hvp(self, x, v):
        xp, x = as_positions(x, self.dim)
        _, v = as_positions(v, self.dim, "v")
        Xt = self.on(xp, "_Xt")
        _, s = softplus_and_sigmoid(x @ Xt.T)
        return log_likelihood_hvp(Xt, s, v) - self._prec * v

    def _kernel_sizes(self) -> list[int]:
        return [self.n_obs, self.dim]

    def _kernel_data(self) -> np.ndarray:
        # By columns: the kernel's products then run along the rows (logistic_kernel).
        return np.concatenate([[self._prec], self.y, self._Xt.T.ravel()])

    def predict(self, draws, X=None, *, log_weights=None) -> np.ndarray:
        """Posterior predictive probability :math:`P(y = 1 \\mid x, \\text{data})` per row.

        .. math::

            \\hat p(x) = \\sum_s \\bar w_s\\, \\sigma(w_0^{(s)} + x^\\top w_{1:p}^{(s)})

        with equal weights, or self-normalised importance weights
        :math:`\\bar w_s \\propto e^{\\text{log\\_weights}_s}` (shadow samplers).

        Parameters
        ----------
        draws : array of shape (..., dim)
            Posterior draws, e.g. ``result.draws`` of shape ``(chains, draws, dim)``.
        X : array of shape (M, p), optional
            Rows to predict, scaled like the training features; default the test rows kept
            by the target (``X_test``).
        log_weights : array of shape ``draws.shape[:-1]``, optional
            Log importance weights (e.g. ``result.log_weights``).

        Returns
        -------
        ndarray of shape (M,)
        """
        W = _flat_draws(draws, self.dim, self.dim)
        return predictive_probability(self._predict_rows(X), W, log_weights)

    def _predict_rows(self, X) -> np.ndarray:
        p = self.X.shape[1]
        if X is None:
            if self.X_test is None:
                raise ValueError("X is required: this target was built without X_test")
            X = self.X_test
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != p:
            raise ValueError(f"X must have shape (M, {p}), got {X.shape}")
        return design_matrix(X)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dim={self.dim}, n_obs={self.n_obs}, "
            f"prior_scale={self.prior_scale})"
        )


# --------------------------------------------------------------------------- factories
def _from_dataset(name: str, prior_scale, test_fraction, split_seed, standardize, scaling,
                  setting):  # fmt: skip
    from hamiltonia import datasets

    check_setting(setting)
    data = datasets.load(
        name,
        test_fraction=test_fraction,
        seed=split_seed,
        standardize=standardize,
        scaling=scaling,
    )
    target = LogisticRegression(
        data.X_train,
        data.y_train,
        prior_scale=prior_scale,
        feature_names=data.feature_names,
        X_test=data.X_test if len(data.y_test) else None,
        y_test=data.y_test if len(data.y_test) else None,
    )
    target.dataset = data
    target.description = f"Bayesian logistic regression on {datasets.describe()[name]}"
    if name == "australian":
        target.research_mass_volatility = 0.1  # thesis ch. 4: 0.1 for Banana and Australian
    return with_setting(target, setting)


_FACTORY_DOC = """

    Parameters
    ----------
    prior_scale : float
        Prior standard deviation :math:`\\alpha` of every coefficient (default 10, the
        thesis's, §3.2.5).
    test_fraction : float
        Fraction of the rows held out at random (default 0.1: the thesis's 90/10 split).
    split_seed : int
        Seed of the random split.
    standardize : bool
        Scale the features with training statistics (default ``True``); ``False`` keeps them
        raw.
    scaling : {"standard", "minmax", "none"}, optional
        How the features are scaled (:func:`hamiltonia.datasets.load`); default ``None``:
        ``standardize`` decides.
    setting : {"default", "paper"}
        ``"paper"`` is the thesis's model and processing (Mongwe 2022, §3.2.5 and §3.2.8), which
        is also the default: an intercept, the :math:`\\mathcal N(0, 10^2)` prior, a random
        90/10 split and the features "normalised". The thesis does not say how (GAP); it
        takes these four data sets and the prior from Girolami and Calderhead (2011), whose
        code standardises the features to zero mean and unit variance (EXTERNAL), as the
        default does (with the training rows' statistics).
    """


def _factory(name: str, doc: str):
    def factory(
        prior_scale: float = 10.0,
        test_fraction: float = 0.1,
        split_seed: int = 0,
        standardize: bool = True,
        scaling: str | None = None,
        setting: str = "default",
    ) -> LogisticRegression:
        return _from_dataset(name, prior_scale, test_fraction, split_seed, standardize,
                             scaling, setting)  # fmt: skip

    factory.__name__ = factory.__qualname__ = f"blr_{name}"
    factory.__doc__ = doc.rstrip(".") + ", 90% train split." + _FACTORY_DOC
    return factory


blr_pima = _factory("pima", "BLR on Pima (532 rows, 7 features; D = 8), N(0, 10^2) prior.")
blr_heart = _factory(
    "heart", "BLR on Statlog heart (270 rows, 13 features; D = 14), N(0, 10^2) prior."
)
blr_australian = _factory(
    "australian", "BLR on Australian credit (690 rows, 14 features; D = 15), N(0, 10^2) prior."
)
blr_german = _factory(
    "german", "BLR on German credit (1000 rows, 24 features; D = 25), N(0, 10^2) prior."
)
