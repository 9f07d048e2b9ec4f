"""Variance reducers: turning draws into lower-variance estimates.

A sampler may produce draws that are not equally weighted (a shadow sampler targets
:math:`e^{-\\tilde H}` and needs importance weights) or that come in coupled pairs (antithetic
chains); a :class:`VarianceReducer` knows how to turn them into estimates of
:math:`\\mathbb E_\\pi[f]`.
"""

from __future__ import annotations

import numpy as np

# linearised_values lives with the estimators (the weighted summary's MCSE uses it too); it
# stays importable from here, where the reducers' tables use it.
from hamiltonia.diagnostics.weights import linearised_values, weighted_mean

__all__ = [
    "ImportanceWeights",
    "ReducerWrapper",
    "VarianceReducer",
    "gives_weights",
    "linearised_values",
    "reduction_table",
    "weighted_mean",
]


def reduction_table(names, plain, series: np.ndarray, *, mcse=None, **extra):
    """A reduced estimate beside the plain one (a pandas DataFrame, one row per parameter):
    ``plain_mean``, ``plain_mcse`` from the table ``plain``; ``mean`` and ``mcse`` of the
    per-draw ``series`` (shape ``(chains, draws, dim)``) whose mean is the reduced estimate;
    the ``extra`` columns; and ``reduction`` :math:`= (\\text{plain\\_mcse} /
    \\text{mcse})^2`, the factor by which the variance of the estimate fell.

    ``mcse`` is the series' standard error where the caller knows it better than
    :func:`hamiltonia.diagnostics.mcse`, which takes the chains of ``series`` as independent
    (a paired series needs :func:`hamiltonia.diagnostics.pair_error.pair_mcse`)."""
    import pandas as pd

    from hamiltonia import diagnostics

    if mcse is None:
        mcse = diagnostics.mcse(series, "mean")
    mcse = np.asarray(mcse, dtype=float)
    plain_mcse = plain["mcse"].to_numpy()
    return pd.DataFrame(
        {
            "plain_mean": plain["mean"].to_numpy(),
            "plain_mcse": plain_mcse,
            "mean": series.mean(axis=(0, 1)),
            "mcse": mcse,
            **extra,
            "reduction": _squared_ratio(plain_mcse, mcse),
        },
        index=pd.Index(names, name="parameter"),
    )


def _squared_ratio(a, b) -> np.ndarray:
    """:math:`(a / b)^2`, ``inf`` for an error reduced to zero (an exact estimate)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.asarray(a, dtype=float) / b) ** 2


def gives_weights(reducer) -> bool:
    """Whether ``reducer`` supplies importance weights: its ``weighted`` attribute where it
    has one (a wrapper such as :class:`~hamiltonia.reducers.antithetic.AntitheticPairs` asks its
    inner
    reducer), else whether its class overrides :meth:`VarianceReducer.log_weights`."""
    flag = getattr(reducer, "weighted", None)
    if flag is not None:
        return bool(flag)
    return type(reducer).log_weights is not VarianceReducer.log_weights


class VarianceReducer:
    """Abstract variance reducer.

    Contract
    --------
    * ``pairs``, ``pairing(chains)``, ``mirrored(chains)`` and ``rejoin(step_size, rngs)``
      describe a coupling of the chains (antithetic pairs); by default there is none.
    * ``log_weights(sampler, state, step_size)`` returns the per-chain log importance weight
      of a retained draw, or ``None`` when draws are equally weighted. The run loop stores
      it with each draw as ``result.log_weights``.
    * ``estimate(values, log_weights)`` returns the estimate of :math:`\\mathbb E[f]` from
      ``values`` :math:`= f(x)` of shape ``(chains, draws, ...)``; the default is the
      (self-normalised) weighted mean.
    """

    def log_weights(self, sampler, state, step_size):
        return None

    def estimate(self, values: np.ndarray, log_weights: np.ndarray | None) -> np.ndarray:
        return weighted_mean(values, log_weights)

    #: Whether the run couples its chains in pairs (:mod:`hamiltonia.reducers.antithetic`).
    pairs = False

    def pairing(self, chains: int) -> list:
        """The coupled pairs of chains, ``[]`` for independent chains."""
        return []

    def mirrored(self, chains: int) -> np.ndarray:
        """The chains that refresh their momentum through the reversal: none here."""
        return np.zeros(chains, dtype=bool)

    def rejoin(self, step_size: np.ndarray, rngs) -> None:
        """Resynchronise coupled chains after their streams may have parted: nothing here."""

    #: Whether the run keeps the gradient of the log density at each draw
    #: (``result.gradients``; :mod:`hamiltonia.reducers.control_variates` reads it).
    records_gradients = False

    def __repr__(self):
        return f"{type(self).__name__}()"


class ReducerWrapper(VarianceReducer):
    """A reducer over an ``inner`` one, to which it defers everything it does not change:
    the weights, the coupling of the chains, the recorded gradients."""

    def __init__(self, inner: VarianceReducer | None = None):
        if inner is not None and not isinstance(inner, VarianceReducer):
            raise TypeError(f"inner must be a VarianceReducer, got {type(inner).__name__}")
        self.inner = VarianceReducer() if inner is None else inner

    @property
    def column(self):
        """The statistics column of the inner reducer's log weights (compiled path)."""
        return getattr(self.inner, "column", None)

    @property
    def weighted(self) -> bool:
        return gives_weights(self.inner)

    @property
    def pairs(self) -> bool:
        return self.inner.pairs

    @property
    def records_gradients(self) -> bool:
        return self.inner.records_gradients

    def log_weights(self, sampler, state, step_size):
        return self.inner.log_weights(sampler, state, step_size)

    def estimate(self, values, log_weights):
        return self.inner.estimate(values, log_weights)

    def pairing(self, chains: int) -> list:
        return self.inner.pairing(chains)

    def mirrored(self, chains: int) -> np.ndarray:
        return self.inner.mirrored(chains)

    def rejoin(self, step_size: np.ndarray, rngs) -> None:
        self.inner.rejoin(step_size, rngs)

    def __repr__(self):
        return f"{type(self).__name__}({self.inner!r})"


class ImportanceWeights(VarianceReducer):
    """The importance weights of a shadow sampler, which targets :math:`e^{-\\tilde H}`:

    .. math::

        \\log w(q, p) = \\tilde H(q, p) - H(q, p),

    the Hamiltonian's :meth:`~hamiltonia.hamiltonians.ShadowHamiltonian.log_weight` of each
    retained state at the chain's step size (Mongwe, Mbuvha and Marwala 2021, PS2HMC,
    Algorithm 1, line 9). Estimates are self-normalised weighted means;
    :meth:`hamiltonia.Result.summary` weighs means and standard deviations and multiplies ESS
    by the Kish factor.

    On the compiled path the Hamiltonian's ``weigh`` kernel writes the weight into the
    statistics column :attr:`column`, which the run moves to ``result.log_weights``.
    """

    #: The statistics column the compiled path writes the log weight into.
    column = "log_weight"
    weighted = True

    def log_weights(self, sampler, state, step_size):
        return sampler.hamiltonian.log_weight(state, step_size)
