"""Bayesian logistic regression on the Pima data, with test-set metrics.

The data come from the local mirror named by HAMILTONIA_DATA, or are downloaded into the
per-user cache on first use.

    HAMILTONIA_DATA=../shared/data python examples/real_data.py
"""

import hamiltonia as hm

result = hm.sample(
    "blr-pima",
    sampler="hmc",
    chains=4,
    warmup=1000,
    draws=1000,
    seed=0,
    n_steps=10,
    metric="diagonal",
    step_size_jitter=0.5,
    progress=False,
)
print(result.summary().round(3))
for name, value in result.test_metrics().items():
    print(f"{name:>10} {value:.3f}")
