"""A new sampler by subclassing one part: HMC whose number of leapfrog steps is drawn per
chain from a shifted Poisson distribution.

python examples/custom_sampler.py

Each chain draws its own length from its own generator (``rngs[c]``), so a chain's draws do
not depend on the other chains. The subclass overrides ``n_steps`` in plain Python and has no
compiled counterpart, so the run uses the NumPy path (and says so); the built-in
``RandomLength`` or ``hmc(n_steps_jitter=...)`` give uniform random lengths compiled.
"""

import numpy as np

import hamiltonia as hm
from hamiltonia.trajectories.metropolis import MetropolisTrajectory


class PoissonLength(MetropolisTrajectory):
    """L = 1 + Poisson(mean - 1) steps, drawn per chain and iteration."""

    def __init__(self, mean_steps: float):
        super().__init__(1, 1)
        self.mean_steps = mean_steps

    def n_steps(self, rngs):
        return np.array([1 + rng.poisson(self.mean_steps - 1) for rng in rngs])


def poisson_length_hmc(target, *, mean_steps=10.0, target_accept=0.8):
    """HMC with a Poisson-distributed number of leapfrog steps."""
    return hm.HamiltonianSampler(
        hamiltonian=hm.EuclideanHamiltonian(target),
        trajectory=PoissonLength(mean_steps),
        tuners=[hm.DualAveraging(target_accept)],
    )


# Register it for this process (a plugin package would declare an entry point instead).
hm.samplers.register("poisson-length-hmc", poisson_length_hmc)
result = hm.sample(
    "gaussian-d10", sampler="poisson-length-hmc", mean_steps=10, seed=0, progress=False,
    compiled=False,
)  # fmt: skip
print(result.summary().round(3))
print("mean steps per iteration:", result.stats["n_steps"].mean())
