"""Sample the banana target with HMC and compare with its exact moments.

python examples/sample_banana.py
"""

import hamiltonia as hm

target = hm.targets.get("banana")
result = hm.sample(
    target, sampler="hmc", chains=4, warmup=1000, draws=1000, seed=0, n_steps=15, progress=False
)
summary = result.summary()
summary["exact"] = target.exact_moments.mean
summary["z"] = (summary["mean"] - summary["exact"]) / summary["mcse"]
print(summary.round(3))
print(
    f"acceptance {result.acceptance_rate:.2f}, divergences {result.n_divergent}, "
    f"multivariate ESS {result.multivariate_ess():.0f}"
)
