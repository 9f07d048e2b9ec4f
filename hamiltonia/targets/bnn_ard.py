"""Bayesian neural networks with ARD priors whose precisions are Gibbs-sampled.

The model (Mbuvha 2021, thesis, §4.2, eqs. 4.1-4.3 and Algorithm 4.1): the network weights fall in
groups :math:`c` with precisions :math:`\\alpha_c`,

.. math::

    \\log\\pi(w, \\alpha) = \\log p(y \\mid w)
        + \\sum_c \\Bigl(\\tfrac{N_c}{2}\\log\\alpha_c - \\alpha_c E_{W_c}\\Bigr)
        + \\sum_c \\bigl((\\tau - 1)\\log\\alpha_c - \\theta\\alpha_c\\bigr),
    \\qquad E_{W_c} = \\tfrac12 \\sum_{i \\in c} w_i^2,

with the Gamma(:math:`\\tau`, :math:`\\theta`) hyperprior (shape, rate). The precisions are
drawn from their full conditional between HMC trajectories on :math:`w`,

.. math::

    \\alpha_c \\mid w \\sim \\operatorname{Gamma}\\bigl(\\tau + N_c/2,\\ \\theta + E_{W_c}\\bigr),

every ``gibbs_every`` iterations (50 in the thesis). The printed shape :math:`\\tau + N_c`
is an erratum (the exact conjugate shape has :math:`N_c/2`); ``thesis_shape=True`` reproduces
it. Groups: the weights leaving each input (ARD proper), the hidden biases, and the output
layer (weights and bias); the research leaves the last two open.

Positions are :math:`(w, \\log\\alpha)` (the log-scale density includes the Jacobian
:math:`\\alpha`), so the draws report ``log_alpha_<group>``. Sampling a registered
``bnn-ard-*`` target with any Hamiltonian sampler composes the Gibbs step automatically
(:func:`hamiltonia.samplers.with_gibbs_blocks`).
"""

from __future__ import annotations

import numpy as np

from hamiltonia._validation import check_int, check_positions, check_positive
from hamiltonia.diagnostics.predictive import RegressorTarget
from hamiltonia.targets.base import Target
from hamiltonia.targets.bnn import BayesianNeuralNetwork

__all__ = ["ARDBayesianNeuralNetwork"]

#: Hyperprior Gamma(shape, rate) of each precision: shape 1, rate 1 puts the prior mean of
#: alpha at 1, the precision of the plain network's N(0, 1) prior (the research gives none).
DEFAULT_GAMMA_SHAPE = 1.0
DEFAULT_GAMMA_RATE = 1.0


class ARDBayesianNeuralNetwork(RegressorTarget, Target):
    """A :class:`~hamiltonia.targets.bnn.BayesianNeuralNetwork` with ARD precisions.

    Parameters
    ----------
    network : BayesianNeuralNetwork
        The network and its data; its own Gaussian prior is replaced by the ARD prior.
    gamma_shape, gamma_rate : float
        :math:`\\tau` and :math:`\\theta` of the Gamma hyperprior (default 1 and 1).
    gibbs_every : int
        Iterations between Gibbs draws of the precisions (default 50, the thesis's value).
    thesis_shape : bool
        Use the printed shape :math:`\\tau + N_c` instead of the exact :math:`\\tau + N_c/2`.
    """

    relevance_label = "posterior mean of the weight variance 1/alpha"

    def __init__(
        self,
        network: BayesianNeuralNetwork,
        *,
        gamma_shape: float = DEFAULT_GAMMA_SHAPE,
        gamma_rate: float = DEFAULT_GAMMA_RATE,
        gibbs_every: int = 50,
        thesis_shape: bool = False,
    ):
        if not isinstance(network, BayesianNeuralNetwork):
            raise TypeError(
                f"network must be a BayesianNeuralNetwork, got {type(network).__name__}"
            )
        self.network = network
        self.gamma_shape = check_positive(gamma_shape, "gamma_shape")
        self.gamma_rate = check_positive(gamma_rate, "gamma_rate")
        self.gibbs_every = check_int(gibbs_every, "gibbs_every", minimum=1)
        self.thesis_shape = bool(thesis_shape)
        d, h = network.n_features, network.n_hidden
        # group index of every network weight: inputs 0..d-1, hidden biases d, output d+1
        group = np.concatenate([np.repeat(np.arange(d), h), np.full(h, d), np.full(h + 1, d + 1)])
        self.group_of = group
        self.group_names = (*network.feature_names, "hidden_bias", "output")
        self.group_sizes = np.bincount(group, minlength=d + 2).astype(float)
        self.n_weights = network.dim
        self.n_groups = d + 2
        names = [*network.names, *(f"log_alpha_{g}" for g in self.group_names)]
        super().__init__(self.n_weights + self.n_groups, names)
        self.gibbs_indices = list(range(self.n_weights, self.dim))
        self._onehot = np.eye(self.n_groups)[group]  # (n_weights, n_groups)
        self.X_test, self.y_test = network.X_test, network.y_test

    # ------------------------------------------------------------------ density
    def _parts(self, x):
        x = check_positions(x, self.dim)
        w, log_alpha = x[..., : self.n_weights], x[..., self.n_weights :]
        return w, log_alpha, np.exp(log_alpha)

    def _likelihood_and_grad(self, w):
        # The network's log density minus its own Gaussian prior is its log-likelihood.
        lp, grad = self.network.log_prob_and_grad(w)
        prec = self.network._prior_prec
        return lp + 0.5 * prec * np.sum(w * w, axis=-1), grad + prec * w

    def log_prob_and_grad(self, x):
        w, log_alpha, alpha = self._parts(x)
        ll, gll = self._likelihood_and_grad(w)
        half_sq = 0.5 * (w * w) @ self._onehot  # E_Wc, shape (..., G)
        alpha_w = alpha @ self._onehot.T  # the precision of each weight
        prior = np.sum(0.5 * self.group_sizes * log_alpha - alpha * half_sq, axis=-1)
        hyper = np.sum(self.gamma_shape * log_alpha - self.gamma_rate * alpha, axis=-1)
        grad_w = gll - alpha_w * w
        grad_la = (
            0.5 * self.group_sizes - alpha * half_sq + self.gamma_shape - self.gamma_rate * alpha
        )
        return ll + prior + hyper, np.concatenate([grad_w, grad_la], axis=-1)

    # ------------------------------------------------------------------ Gibbs block
    def gibbs_update(self, q: np.ndarray, rngs) -> np.ndarray:
        """Draw every chain's precisions from their Gamma full conditional (in place)."""
        w = q[:, : self.n_weights]
        half_sq = 0.5 * (w * w) @ self._onehot
        count = self.group_sizes if self.thesis_shape else 0.5 * self.group_sizes
        shape = self.gamma_shape + count
        for c, rng in enumerate(rngs):
            rate = self.gamma_rate + half_sq[c]
            q[c, self.n_weights :] = np.log(rng.gamma(shape, 1.0 / rate))
        return q

    # ------------------------------------------------------------------ reporting
    def predict(self, draws, X=None, log_weights=None) -> np.ndarray:
        """Posterior predictive mean (original scale); see the network's ``predict``."""
        draws = np.asarray(draws, dtype=float)
        return self.network.predict(draws[..., : self.n_weights], X, log_weights=log_weights)

    def test_metrics(self, draws, log_weights=None) -> dict[str, float]:
        draws = np.asarray(draws, dtype=float)
        return self.network.test_metrics(draws[..., : self.n_weights], log_weights=log_weights)

    def feature_relevance(self, draws, log_weights=None) -> list[tuple[str, float]]:
        """Inputs ranked by the posterior mean of their weights' variance :math:`1/\\alpha_c`
        (large: relevant), the thesis's relevance measure."""
        draws = np.asarray(draws, dtype=float)
        la = draws[..., self.n_weights : self.n_weights + self.network.n_features]
        var = np.exp(-la).reshape(-1, la.shape[-1])
        if log_weights is None:
            mean = var.mean(axis=0)
        else:
            lw = np.asarray(log_weights, dtype=float).reshape(-1)
            wts = np.exp(lw - lw.max())
            mean = wts @ var / wts.sum()
        order = np.argsort(-mean)
        return [(self.network.feature_names[i], float(mean[i])) for i in order]

    def __repr__(self):
        return f"ARDBayesianNeuralNetwork({self.network!r}, groups={self.n_groups})"


def _ard_from_dataset(name, gibbs_every, gamma_shape, gamma_rate, thesis_shape, setting,
                      **network):  # fmt: skip
    from hamiltonia.targets import bnn

    net = getattr(bnn, f"bnn_{name}")(setting=setting, **network)  # checks setting first
    target = ARDBayesianNeuralNetwork(
        net,
        gamma_shape=gamma_shape,
        gamma_rate=gamma_rate,
        gibbs_every=gibbs_every,
        thesis_shape=thesis_shape,
    )
    # The network's description already names a setting other than the default.
    target.description = "ARD " + net.description
    target.setting = net.setting
    return target


_SETTING_DOC = """

    ``setting="paper"`` builds the network in its paper setting
    (:func:`hamiltonia.targets.bnn.bnn_power` and the others); the ARD prior replaces the
    network's own prior either way, so the posterior is the default's. The ARD research
    (Mbuvha 2021, thesis, §4.2) gives no values of the Gamma hyperprior (GAP: shape 1, rate 1
    in both settings) and prints the conjugate shape :math:`\\tau + N_c` (an erratum for
    :math:`\\tau + N_c/2`; ``thesis_shape=True`` reproduces it).
    """


def _factory(name: str, what: str):
    def factory(
        gibbs_every: int = 50,
        gamma_shape: float = DEFAULT_GAMMA_SHAPE,
        gamma_rate: float = DEFAULT_GAMMA_RATE,
        thesis_shape: bool = False,
        noise_scale: float | None = None,
        prior_scale: float | None = None,
        test_fraction: float = 0.1,
        split_seed: int = 0,
        setting: str = "default",
    ) -> ARDBayesianNeuralNetwork:
        network = {"test_fraction": test_fraction, "split_seed": split_seed}
        if noise_scale is not None:
            network["noise_scale"] = noise_scale
        if prior_scale is not None:
            network["prior_scale"] = prior_scale
        return _ard_from_dataset(name, gibbs_every, gamma_shape, gamma_rate, thesis_shape,
                                 setting, **network)  # fmt: skip

    factory.__name__ = f"bnn_ard_{name}"
    factory.__doc__ = (
        f"BNN with ARD precisions Gibbs-sampled every gibbs_every iterations, on {what}."
        + _SETTING_DOC
    )
    return factory


bnn_ard_power = _factory("power", "Combined Cycle Power Plant")
bnn_ard_airfoil = _factory("airfoil", "Airfoil Self-Noise")
bnn_ard_concrete = _factory("concrete", "Concrete Compressive Strength")
bnn_ard_protein = _factory("protein", "Protein Tertiary Structure")
