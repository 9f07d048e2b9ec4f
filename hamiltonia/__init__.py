"""hamiltonia: a composable framework for Hamiltonian Monte Carlo research.

>>> import hamiltonia as hm
>>> result = hm.sample("banana", sampler="hmc", chains=4, seed=0, progress=False)
>>> result.summary()  # doctest: +SKIP
"""

from hamiltonia import diagnostics, samplers, targets
from hamiltonia.hamiltonians import EuclideanHamiltonian, Hamiltonian, ShadowHamiltonian
from hamiltonia.integrators import Integrator, Leapfrog
from hamiltonia.momentum import FullRefresh, MomentumRefresh
from hamiltonia.poisson import CanonicalStructure, PoissonStructure
from hamiltonia.reducers import VarianceReducer
from hamiltonia.results import Result, load
from hamiltonia.run import resume, sample
from hamiltonia.samplers import HamiltonianSampler, RandomWalkMetropolis, Sampler
from hamiltonia.targets import Target
from hamiltonia.trajectories import StaticLength, TrajectoryPolicy
from hamiltonia.tuners import DualAveraging, Tuner

__version__ = "0.1.0"

__all__ = [
    "CanonicalStructure",
    "DualAveraging",
    "EuclideanHamiltonian",
    "FullRefresh",
    "Hamiltonian",
    "HamiltonianSampler",
    "Integrator",
    "Leapfrog",
    "MomentumRefresh",
    "PoissonStructure",
    "RandomWalkMetropolis",
    "Result",
    "Sampler",
    "ShadowHamiltonian",
    "StaticLength",
    "Target",
    "TrajectoryPolicy",
    "Tuner",
    "VarianceReducer",
    "__version__",
    "diagnostics",
    "load",
    "resume",
    "sample",
    "samplers",
    "targets",
]
