"""A public suite of reference posteriors: ten posteriordb models as hamiltonia Models.

posteriordb (Magnusson, Torgander, Bürkner, Zhang, Carpenter and Vehtari, "posteriordb:
Testing, Benchmarking and Developing Bayesian Inference Algorithms", 2024;
https://github.com/stan-dev/posteriordb, BSD 3-Clause) pairs Stan programs and data with
reference posteriors drawn by long, checked Stan runs. Ten of them (:func:`names`) are
translated here as a NumPyro or PyMC user translates a Stan program, with named constrained
blocks and a log density in ``autograd.numpy`` (:mod:`~hamiltonia.posteriors.regression`:
six linear regressions; :mod:`~hamiltonia.posteriors.latent`: two hidden Markov models with
the forward algorithm's loop over time, an exact and an approximate Gaussian process). Their
data and reference summaries are vendored (:mod:`~hamiltonia.posteriors.data_files`), and a
run is checked against the reference by MCSE z-scores of its means and sds
(:mod:`~hamiltonia.posteriors.compare`):

.. code-block:: python

    import hamiltonia as hm
    import hamiltonia.posteriors as posteriors

    model = posteriors.get("kidiq-kidscore_momhsiq")
    result = hm.sample(model, seed=1, progress=False)
    check = posteriors.compare("kidiq-kidscore_momhsiq", result)
    check.passed, check.max_abs_z, check.table()

Each element's name is hamiltonia's, 0-based (``beta[0]``); the reference's are Stan's,
1-based (``beta[1]``), and :func:`~hamiltonia.posteriors.compare.stan_name` maps one to the
other. A constrained type that hamiltonia has no block for (``positive_ordered``) is built as
Stan builds it and reported under Stan's name as a generated quantity.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hamiltonia.modelling.parameters import element_names
from hamiltonia.posteriors import latent, regression
from hamiltonia.posteriors.compare import Comparison, compare, stan_name, z_bound
from hamiltonia.posteriors.data_files import NAMES, Reference, load_data, load_reference

__all__ = [
    "FAST",
    "Comparison",
    "Reference",
    "compare",
    "get",
    "load_data",
    "load_reference",
    "names",
    "reference_point",
    "sample_options",
    "stan_name",
    "z_bound",
]

_BUILDERS: dict[str, Callable] = {
    "bball_drive_event_0-hmm_drive_0": latent.bball_drive_event_0_hmm_drive_0,
    "hmm_example-hmm_example": latent.hmm_example_hmm_example,
    "gp_pois_regr-gp_regr": latent.gp_pois_regr_gp_regr,
    "mcycle_gp-accel_gp": latent.mcycle_gp_accel_gp,
    "kilpisjarvi_mod-kilpisjarvi": regression.kilpisjarvi_mod_kilpisjarvi,
    "kidiq-kidscore_momhsiq": regression.kidiq_kidscore_momhsiq,
    "kidiq_with_mom_work-kidscore_mom_work": regression.kidiq_with_mom_work_kidscore_mom_work,
    "mesquite-logmesquite_logvolume": regression.mesquite_logmesquite_logvolume,
    "nes1980-nes": regression.nes1980_nes,
    "sblri-blr": regression.sblri_blr,
}

#: The posteriors whose default run takes seconds (the regressions, the shorter HMM, the
#: exact GP), checked in every test run; the others (the HMM over 416 steps, the approximate
#: GPs) are the slow part of the suite.
FAST = (
    "kidiq-kidscore_momhsiq",
    "kidiq_with_mom_work-kidscore_mom_work",
    "mesquite-logmesquite_logvolume",
    "nes1980-nes",
    "sblri-blr",
    "kilpisjarvi_mod-kilpisjarvi",
    "hmm_example-hmm_example",
    "gp_pois_regr-gp_regr",
)


#: Options of :func:`hamiltonia.sample` a posterior needs as its Stan program has them: the
#: exact GP's Cholesky factorisation fails (``LinAlgError``) far out in a diverging
#: trajectory, which Stan's ``cholesky_decompose`` signals and Stan rejects.
#: None needs one now: a covariance that is not positive definite (the exact GP far out in
#: warm-up) is a rejected proposal on both paths (``nan`` from the compiled Cholesky factor,
#: :func:`hamiltonia.state.is_rejection` on autograd), as Stan rejects it.
_SAMPLE_OPTIONS: dict[str, dict] = {}


def sample_options(name: str) -> dict:
    """The options of :func:`hamiltonia.sample` posterior ``name`` needs (``reject_on``,
    Stan's rejection of a proposal where the model raises); empty for most."""
    if name not in _BUILDERS:
        raise KeyError(f"no posterior {name!r} in the suite; it has {', '.join(NAMES)}")
    return dict(_SAMPLE_OPTIONS.get(name, {}))


def names() -> list[str]:
    """The suite's posteriors, posteriordb's names (``<data>-<model>``)."""
    return list(NAMES)


def get(name: str, **model_options):
    """The :class:`hamiltonia.Model` of posterior ``name``, with its vendored data;
    ``KeyError`` naming the suite's posteriors for another name."""
    if name not in _BUILDERS:
        raise KeyError(f"no posterior {name!r} in the suite; it has {', '.join(NAMES)}")
    return _BUILDERS[name](load_data(name), **model_options)


def reference_point(name: str, model=None) -> dict:
    """The blocks of posterior ``name``'s model (``model``, default :func:`get`'s) at the
    reference means, constrained, by block name: a point where the log density must be
    finite. A block ``<x>_steps`` (a ``positive_ordered`` vector :math:`x` built as
    :math:`\\operatorname{cumsum}` of positive steps) takes the steps of :math:`x`'s means."""
    model = get(name) if model is None else model
    ref = load_reference(name)
    by_name = dict(zip(ref.names, ref.mean, strict=True))
    point = {}
    for block, param in model.layout.params.items():
        base = block.removesuffix("_steps")
        shape = param.shape
        elements = [stan_name(n) for n in element_names(base, shape)]
        values = np.array([by_name[e] for e in elements]).reshape(shape)
        point[block] = np.diff(values, prepend=0.0) if block.endswith("_steps") else values
    return point
