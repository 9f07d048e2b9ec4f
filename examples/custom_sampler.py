"""A new sampler by subclassing one part: HMC with a random number of leapfrog steps.

python examples/custom_sampler.py
"""

import hamiltonia as hm
from hamiltonia.trajectories import MetropolisTrajectory


class RandomLength(MetropolisTrajectory):
    """Draw the number of steps uniformly from 1..max_steps every iteration (shared by the
    chains of a batch, drawn from chain 0's generator)."""

    def __init__(self, max_steps: int):
        self.max_steps = max_steps

    def n_steps(self, rngs):
        return int(rngs[0].integers(1, self.max_steps + 1))


def random_length_hmc(target, *, max_steps=30, target_accept=0.8):
    """HMC with a uniformly random number of leapfrog steps."""
    return hm.HamiltonianSampler(
        hamiltonian=hm.EuclideanHamiltonian(target),
        trajectory=RandomLength(max_steps),
        tuners=[hm.DualAveraging(target_accept)],
    )


# Register it for this process (a plugin package would declare an entry point instead).
hm.samplers.register("random-length-hmc", random_length_hmc)
result = hm.sample(
    "gaussian-d10", sampler="random-length-hmc", max_steps=20, seed=0, progress=False
)
print(result.summary().round(3))
print("mean steps per iteration:", result.stats["n_steps"].mean())
