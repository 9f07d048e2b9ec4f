"""The device benchmark's array-API ports (:mod:`hamiltonia.bench.device`): copies of the
logistic regression's and the Bayesian neural network's densities, written independently
of the targets' code, that compute on every backend (the ``hm-cupy-port`` rows, and the
tests that compare them with the targets).
"""

from __future__ import annotations

import numpy as np

__all__ = ["port"]


def port(target):
    """An array-API copy of ``target``'s density (``backends`` all of
    :data:`hamiltonia.backend.BACKENDS`) for logistic regression and the BNN, else ``None``.
    The same algebra as the target's code, written independently, the data moved to the
    backend once. The targets compute on every backend themselves now (``hm-cupy`` runs
    them), so ``hm-cupy-port`` runs a port only for a target refused on CuPy."""
    from hamiltonia.backend import BACKENDS, DeviceData, namespace_of
    from hamiltonia.targets.base import Target
    from hamiltonia.targets.bnn import BayesianNeuralNetwork
    from hamiltonia.targets.logistic import LogisticRegression

    class _Port(DeviceData, Target):
        backends = BACKENDS

        def __init__(self, base):
            super().__init__(base.dim, base.names)
            self.base = base

    if isinstance(target, LogisticRegression):

        class LogisticPort(_Port):
            def __init__(self, base):
                super().__init__(base)
                self.Xt, self.y, self.prec = base._Xt, np.asarray(base.y, float), base._prec

            def log_prob_and_grad(self, x):
                xp = namespace_of(x)
                x = xp.asarray(x, dtype=xp.float64)
                Xt, y = self.on(xp, "Xt"), self.on(xp, "y")
                z = x @ Xt.T
                e = xp.exp(-xp.abs(z))
                inv = 1.0 / (1.0 + e)
                sigmoid = xp.where(z >= 0, inv, e * inv)
                softplus = xp.sum(xp.maximum(z, 0.0) + xp.log1p(e), axis=-1)
                lp = z @ y - softplus - 0.5 * self.prec * xp.sum(x * x, axis=-1)
                return lp, (y - sigmoid) @ Xt - self.prec * x

        return LogisticPort(target)
    if isinstance(target, BayesianNeuralNetwork):

        class NetworkPort(_Port):
            def __init__(self, base):
                super().__init__(base)
                self.X, self.ys = base.X, base._ys
                self.noise, self.prior = base._noise_prec, base._prior_prec
                self.d, self.h = base.n_features, base.n_hidden

            def log_prob_and_grad(self, x):
                xp = namespace_of(x)
                x = xp.asarray(x, dtype=xp.float64)
                X, ys = self.on(xp, "X"), self.on(xp, "ys")
                d, h = self.d, self.h
                lead = tuple(x.shape[:-1])
                W = xp.reshape(x[..., : d * h], (*lead, d, h))
                a, v, b = x[..., d * h : d * h + h], x[..., d * h + h : -1], x[..., -1]
                T = xp.tanh(xp.matmul(X, W) + a[..., None, :])  # (..., N, H)
                e = ys - (xp.matmul(T, v[..., :, None])[..., 0] + b[..., None])
                r = self.noise * e
                lp = -0.5 * xp.sum(e * r, axis=-1) - 0.5 * self.prior * xp.sum(x * x, axis=-1)
                G = r[..., None] * v[..., None, :] * (1.0 - T * T)
                gW = xp.reshape(xp.matmul(X.T, G), (*lead, d * h))
                gv = xp.matmul(r[..., None, :], T)[..., 0, :]
                grad = xp.concat(
                    [gW, xp.sum(G, axis=-2), gv, xp.sum(r, axis=-1)[..., None]], axis=-1
                )
                return lp, grad - self.prior * x

        return NetworkPort(target)
    return None
