"""hamiltonia: a composable framework for Hamiltonian Monte Carlo research.

>>> import hamiltonia as hm
>>> result = hm.sample("banana", sampler="hmc", chains=4, seed=0, progress=False)
>>> result.summary()  # doctest: +SKIP
"""

from hamiltonia import constraints, diagnostics, integrators, plots, samplers, targets
from hamiltonia.hamiltonians import (
    EuclideanHamiltonian,
    Hamiltonian,
    RandomMassHamiltonian,
    SeparableShadowHamiltonian,
    ShadowHamiltonian,
)
from hamiltonia.integrators import (
    Integrator,
    Leapfrog,
    ProcessedLeapfrog,
    Splitting,
    ThreeStage,
    TwoStage,
)
from hamiltonia.magnetic import MagneticStructure, random_field, research_field
from hamiltonia.momentum import FullRefresh, MomentumRefresh, PartialRefresh
from hamiltonia.parameters import (
    Param,
    ParameterLayout,
    cholesky_corr,
    interval,
    lower,
    ordered,
    positive,
    real,
    simplex,
    upper,
)
from hamiltonia.poisson import CanonicalStructure, PoissonStructure
from hamiltonia.reducers import ImportanceWeights, VarianceReducer
from hamiltonia.results import Result, load
from hamiltonia.run import (
    FallbackWarning,
    InterruptedRunWarning,
    WarmupInterrupted,
    resume,
    sample,
)
from hamiltonia.runfile import RunFileError
from hamiltonia.samplers import HamiltonianSampler, RandomWalkMetropolis, Sampler
from hamiltonia.state import ModelError
from hamiltonia.targets import Target
from hamiltonia.targets.model import Model
from hamiltonia.trajectories import (
    MetropolisTrajectory,
    RandomLength,
    StaticLength,
    TrajectoryPolicy,
)
from hamiltonia.tuners import DualAveraging, Tuner

__version__ = "0.1.0"

__all__ = [
    "CanonicalStructure",
    "DualAveraging",
    "EuclideanHamiltonian",
    "FallbackWarning",
    "FullRefresh",
    "Hamiltonian",
    "HamiltonianSampler",
    "ImportanceWeights",
    "Integrator",
    "InterruptedRunWarning",
    "Leapfrog",
    "MagneticStructure",
    "MetropolisTrajectory",
    "Model",
    "ModelError",
    "MomentumRefresh",
    "Param",
    "ParameterLayout",
    "PartialRefresh",
    "PoissonStructure",
    "ProcessedLeapfrog",
    "RandomLength",
    "RandomMassHamiltonian",
    "RandomWalkMetropolis",
    "Result",
    "RunFileError",
    "Sampler",
    "SeparableShadowHamiltonian",
    "ShadowHamiltonian",
    "Splitting",
    "StaticLength",
    "Target",
    "ThreeStage",
    "TrajectoryPolicy",
    "Tuner",
    "TwoStage",
    "VarianceReducer",
    "WarmupInterrupted",
    "__version__",
    "cholesky_corr",
    "constraints",
    "diagnostics",
    "integrators",
    "interval",
    "load",
    "lower",
    "ordered",
    "plots",
    "positive",
    "random_field",
    "real",
    "research_field",
    "resume",
    "sample",
    "samplers",
    "simplex",
    "targets",
    "upper",
]
