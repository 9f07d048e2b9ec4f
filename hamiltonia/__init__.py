"""hamiltonia: a composable framework for Hamiltonian Monte Carlo research.

>>> import hamiltonia as hm
>>> result = hm.sample("banana", sampler="hmc", chains=4, seed=0, progress=False)
>>> result.summary()  # doctest: +SKIP
"""

from hamiltonia import datasets, diagnostics, integrators, plots, samplers, targets
from hamiltonia._version import __version__
from hamiltonia.diagnostics.checks import SamplingWarning
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
from hamiltonia.modelling import constraints
from hamiltonia.modelling.parameters import (
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
from hamiltonia.modelling.predictive import sample_prior_predictive
from hamiltonia.reducers.base import ImportanceWeights, VarianceReducer
from hamiltonia.refresh.momentum import FullRefresh, MomentumRefresh, PartialRefresh
from hamiltonia.results import Result, load
from hamiltonia.results.runfile import RunFileError
from hamiltonia.runner.run import (
    FallbackWarning,
    InterruptedRunWarning,
    WarmupInterrupted,
    resume,
    sample,
)
from hamiltonia.samplers import HamiltonianSampler, RandomWalkMetropolis, Sampler
from hamiltonia.state import ModelError
from hamiltonia.structures.base import CanonicalStructure, PoissonStructure
from hamiltonia.structures.magnetic import MagneticStructure, random_field, research_field
from hamiltonia.targets import Target
from hamiltonia.targets.base import CompileWarning, RowByRowWarning
from hamiltonia.targets.model import Model
from hamiltonia.trajectories.metropolis import (
    MetropolisTrajectory,
    RandomLength,
    StaticLength,
    TrajectoryPolicy,
)
from hamiltonia.tuners.adaptation import DualAveraging
from hamiltonia.tuners.base import Tuner

__all__ = [
    "CanonicalStructure",
    "CompileWarning",
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
    "RowByRowWarning",
    "RunFileError",
    "Sampler",
    "SamplingWarning",
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
    "datasets",
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
    "sample_prior_predictive",
    "samplers",
    "simplex",
    "targets",
    "upper",
]
