"""Your own model: write the log density with autograd.numpy, get gradients for free.

A logistic regression on simulated data, sampled with HMC and an adapted diagonal metric.

    python examples/custom_target.py
"""

import autograd.numpy as anp
import numpy as np

import hamiltonia as hm

rng = np.random.default_rng(1)
X = rng.normal(size=(200, 3))
true_w = np.array([1.5, -2.0, 0.5])
y = (rng.random(200) < 1 / (1 + np.exp(-X @ true_w))).astype(float)


def log_posterior(w):
    # w has shape (..., 3): written for a batch, so one call serves all chains.
    z = w @ X.T
    log_lik = anp.sum(y * z - anp.logaddexp(0.0, z), axis=-1)
    return log_lik - 0.5 * anp.sum(w**2, axis=-1) / 10.0**2


target = hm.Target.from_logp(log_posterior, dim=3, names=["w1", "w2", "w3"], vectorized=True)
result = hm.sample(
    target,
    sampler="hmc",
    chains=4,
    warmup=500,
    draws=1000,
    seed=2,
    n_steps=10,
    metric="diagonal",
    step_size_jitter=0.5,
    progress=False,
)
print(result.summary().round(3))
print("true weights:", true_w)
