"""hamiltonia-epidemics: SIR and SEIR change-point models of South Africa's 2020 COVID-19
cases (Mongwe 2022, thesis 003, chapter 6; Dehning et al. 2020) as hamiltonia targets, and
the study ``hamiltonia reproduce epidemics-za``."""

from hamiltonia_epidemics.data import CaseDataError, Cases, load_cases, read_cases
from hamiltonia_epidemics.model import (
    EpidemicModel,
    seir_cp0,
    seir_cp1,
    seir_cp2,
    sir_cp0,
    sir_cp1,
    sir_cp2,
)

__version__ = "0.1.0"
__all__ = [
    "CaseDataError",
    "Cases",
    "EpidemicModel",
    "load_cases",
    "read_cases",
    "seir_cp0",
    "seir_cp1",
    "seir_cp2",
    "sir_cp0",
    "sir_cp1",
    "sir_cp2",
]
