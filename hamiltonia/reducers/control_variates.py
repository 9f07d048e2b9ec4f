"""Zero-variance control variates built from the gradient of the log density.

Mira, Solgi and Imparato (2013), *Zero variance Markov chain Monte Carlo for Bayesian
estimators*, Statistics and Computing 23; Papamarkou, Mira and Girolami (2014), *Zero variance
differential geometric Markov chain Monte Carlo algorithms*, Bayesian Analysis 9; the
research's future work (Mongwe 2022, thesis, §10.2).

For a polynomial :math:`P` and a density :math:`\\pi` that vanishes fast enough at the
boundary,

.. math::

    h_P(x) = \\Delta P(x) + \\nabla P(x) \\cdot \\nabla \\log \\pi(x), \\qquad
    \\mathbb E_\\pi[h_P] = \\int \\nabla \\cdot (\\pi \\nabla P)\\,dx = 0,

so :math:`\\tilde f = f - \\beta^\\top h` has the mean of :math:`f` for any
:math:`\\beta`. First order (:math:`P = x_i`): :math:`h_i = \\partial_i \\log\\pi`. Second
order adds :math:`P = x_i^2`: :math:`h = 2 + 2 x_i \\partial_i\\log\\pi`, and
:math:`P = x_i x_j` (:math:`i < j`): :math:`h = x_j \\partial_i \\log\\pi + x_i
\\partial_j\\log\\pi`. The coefficients :math:`\\beta` are fitted by least squares of
:math:`f` on :math:`h` over the draws (weighted by the importance weights when there are
some), and the estimate is the mean of :math:`\\tilde f`. For a Gaussian target and
:math:`f = x_k`, :math:`x = \\mu + \\Sigma \\nabla\\log\\pi(x)` exactly, so the first-order
estimate of the mean is exact up to floating point.
"""

from __future__ import annotations

import numpy as np

from hamiltonia.reducers.base import ReducerWrapper, VarianceReducer

__all__ = [
    "ORDERS",
    "ControlVariates",
    "control_variate_features",
    "control_variate_summary",
    "controlled_values",
]

#: Polynomial degrees of the trial functions.
ORDERS = (1, 2)


def control_variate_features(draws: np.ndarray, grads: np.ndarray, order: int = 1) -> np.ndarray:
    """The control variates :math:`h(x)` of the module docs, shape ``draws.shape[:-1] +
    (k,)`` with :math:`k = d` (first order) or :math:`d + d(d+1)/2` (second order)."""
    if order not in ORDERS:
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    draws, grads = np.asarray(draws, dtype=float), np.asarray(grads, dtype=float)
    if draws.shape != grads.shape:
        raise ValueError(f"draws {draws.shape} and gradients {grads.shape} differ in shape")
    columns = [grads]
    if order == 2:
        i, j = np.triu_indices(draws.shape[-1])
        quadratic = draws[..., j] * grads[..., i] + draws[..., i] * grads[..., j]
        quadratic = quadratic + 2.0 * (i == j)
        columns.append(quadratic)
    return np.concatenate(columns, axis=-1)


def controlled_values(values, draws, grads, order: int = 1, log_weights=None) -> np.ndarray:
    """:math:`\\tilde f = f - h^\\top \\hat\\beta` for each column of ``values`` (shape
    ``(chains, draws, m)``), with :math:`\\hat\\beta` the (weighted) least-squares slope of
    :math:`f` on :math:`h` (with an intercept). :math:`h` is not centred on its sample mean:
    its mean is zero under :math:`\\pi`, and the sample mean's deviation from zero is what
    corrects the estimate."""
    values = np.asarray(values, dtype=float)
    h = control_variate_features(draws, grads, order)
    n = values.shape[0] * values.shape[1]
    H = h.reshape(n, -1)
    F = values.reshape(n, -1)
    if log_weights is None:
        w = np.full(n, 1.0 / n)
    else:
        lw = np.asarray(log_weights, dtype=float).reshape(n)
        w = np.exp(lw - lw.max())
        w /= w.sum()
    h_bar = w @ H
    f_bar = w @ F
    root = np.sqrt(w)[:, None]
    beta, *_ = np.linalg.lstsq(root * (H - h_bar), root * (F - f_bar), rcond=None)
    return (F - H @ beta).reshape(values.shape)


def control_variate_summary(result, order: int | None = None, grads=None):
    """Plain and control-variate estimates of each parameter's mean (a pandas DataFrame):
    ``plain_mean``, ``plain_mcse`` (the run's own summary), ``mean``, ``mcse`` (of the
    controlled values :math:`\\tilde f`, weighted and paired as the run is) and
    ``reduction`` :math:`= (\\text{plain\\_mcse}/\\text{mcse})^2`.

    ``order`` is that of the run's :class:`ControlVariates` reducer by default, else 1.
    ``grads`` are the gradients of the log density at the draws, shape of
    ``result.draws``; by default those the run kept (``result.gradients``, a run with
    :class:`ControlVariates`), else they are computed from the run's target, one gradient
    per draw. The draws must be the target's own coordinates (a target that reports
    constrained draws is refused).
    """
    from hamiltonia.reducers.antithetic import pair_means
    from hamiltonia.reducers.base import linearised_values, reduction_table

    draws = result.draws
    if order is None:
        order = int(result.attrs.get("control_variates", 1))
    if grads is None:
        grads = result.gradients
    if grads is None:
        target = result.get_target()
        if target.constrains:
            raise ValueError(
                f"target {type(target).__name__} reports constrained draws; control variates "
                "need the gradient in the coordinates of the draws: pass grads="
            )
        flat = draws.reshape(-1, draws.shape[-1])
        _, g = target.log_prob_and_grad(flat)
        grads = np.asarray(g, dtype=float).reshape(draws.shape)
    controlled = controlled_values(draws, draws, grads, order, result.log_weights)
    if result.pairs:
        from hamiltonia.diagnostics.pair_error import pair_mcse

        series = pair_means(controlled, result.log_weights)
        return reduction_table(
            result.names, result.pair_summary(), series, mcse=pair_mcse(series).mcse
        )
    series = linearised_values(controlled, result.log_weights)
    return reduction_table(result.names, result.summary(), series)


class ControlVariates(ReducerWrapper):
    """Zero-variance control variates (module docs) over an ``inner`` reducer (the weights of
    a shadow sampler, antithetic pairs).

    The run keeps the gradient of the log density at each retained draw, which the sampler
    computed anyway (``result.gradients``);
    :meth:`hamiltonia.Result.control_variate_summary` gives the controlled estimates at this
    ``order`` from them, without a gradient evaluation more.
    """

    records_gradients = True

    def __init__(self, order: int = 1, inner: VarianceReducer | None = None):
        if isinstance(order, bool) or order not in ORDERS:
            raise ValueError(f"control variates: order must be 1 or 2, got {order!r}")
        super().__init__(inner)
        self.order = int(order)

    def estimate(self, values, log_weights, draws=None, grads=None):
        """The inner reducer's estimate of the controlled values :math:`\\tilde f` (weighted,
        paired as the inner reducer does); ``draws`` and ``grads`` are the positions and
        gradients of the log density the values were taken at."""
        if draws is None or grads is None:
            raise ValueError("control variates need the draws and their gradients (grads=)")
        controlled = controlled_values(values, draws, grads, self.order, log_weights)
        return self.inner.estimate(controlled, log_weights)

    def __repr__(self):
        return f"ControlVariates(order={self.order}, inner={self.inner!r})"
