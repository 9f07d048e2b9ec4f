"""Reproduce the research: every published experiment rerun, published beside reproduced.

``hamiltonia reproduce --list`` lists the experiments (one per published table, data files in
:mod:`hamiltonia.reproduce.experiments`); ``hamiltonia reproduce NAME --scale small`` reruns
one in minutes on two cores, ``--scale full`` with the publication's protocol (on a Dask
cluster with ``--executor dask --scheduler ADDRESS``). Each run writes, in its output folder,
the report (``NAME.md``: the published figure, the reproduced one with its spread over chains,
their ratio; each published claim with holds / does not hold and the explanation found), the
figures (ESS, acceptance, log-density traces) and every run, so nothing computed is lost.

A plugin reproduces its own published study (a model comparison, a table of predictive
scores) with a :class:`~hamiltonia.reproduce.study.Study` registered under the entry-point
group ``hamiltonia.studies``; ``hamiltonia reproduce NAME`` and ``--list`` take it like a
shipped experiment (:mod:`hamiltonia.reproduce.study`).

>>> from hamiltonia import reproduce
>>> experiment = reproduce.load_experiment("ch5-blr")
>>> result = reproduce.run_experiment(experiment, scale="small")   # doctest: +SKIP
>>> print(reproduce.markdown(result))                              # doctest: +SKIP
"""

from __future__ import annotations

from hamiltonia.reproduce.execute import (
    CellSkippedWarning,
    Reproduction,
    load_reproduction,
    run_experiment,
)
from hamiltonia.reproduce.experiment import (
    Experiment,
    ExperimentError,
    experiment_names,
    load_experiment,
)
from hamiltonia.reproduce.report import (
    check_claims,
    check_docs_page,
    docs_page,
    errata,
    markdown,
    restructured_text,
    write_docs_page,
    write_report,
)
from hamiltonia.reproduce.study import (
    ReproductionInterrupted,
    Study,
    StudyReport,
    check_study_options,
    get_study,
    load_study_report,
    run_study,
    stop_if_interrupted,
    study_names,
)

__all__ = [
    "CellSkippedWarning",
    "Experiment",
    "ExperimentError",
    "Reproduction",
    "ReproductionInterrupted",
    "Study",
    "StudyReport",
    "check_claims",
    "check_docs_page",
    "check_study_options",
    "docs_page",
    "errata",
    "experiment_names",
    "get_study",
    "load_experiment",
    "load_reproduction",
    "load_study_report",
    "markdown",
    "restructured_text",
    "run_experiment",
    "run_study",
    "stop_if_interrupted",
    "study_names",
    "write_docs_page",
    "write_report",
]
