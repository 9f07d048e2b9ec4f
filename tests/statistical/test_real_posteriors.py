"""Agreement on a real posterior: HMC against an independent random-walk estimate."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.datasets import DatasetUnavailableError
from hamiltonia.testing import MIN_ESS, Z_THRESHOLD


def _target(name):
    try:
        return hm.targets.get(name)
    except DatasetUnavailableError as err:
        pytest.skip(f"data not available: {err}")


def test_blr_pima_hmc_agrees_with_random_walk():
    """Posterior means of Bayesian logistic regression on Pima: HMC (compiled, adapted
    diagonal metric) and a long random-walk Metropolis run (NumPy path, no gradients) agree
    within their combined Monte Carlo standard errors."""
    target = _target("blr-pima")
    hmc = hm.sample(
        target,
        "hmc",
        chains=4,
        warmup=1000,
        draws=5000,
        seed=0,
        progress=False,
        n_steps=10,
        metric="diagonal",
        step_size_jitter=0.5,
    )
    rw = hm.sample(target, "rwmh", chains=4, warmup=2000, draws=100_000, seed=1, progress=False)
    a, b = hmc.summary(), rw.summary()
    assert min(a["ess_bulk"].min(), b["ess_bulk"].min()) >= MIN_ESS
    z = (a["mean"] - b["mean"]) / np.sqrt(a["mcse"] ** 2 + b["mcse"] ** 2)
    assert np.all(np.abs(z) < Z_THRESHOLD), z.round(2).to_dict()
    # The posterior is far from the prior: the coefficients are informed by the data.
    assert np.all(a["sd"] < 1.0)


def test_blr_pima_test_metrics():
    target = _target("blr-pima")
    run = hm.sample(
        target,
        "hmc",
        chains=2,
        warmup=300,
        draws=300,
        seed=0,
        progress=False,
        n_steps=10,
        metric="diagonal",
    )
    metrics = run.test_metrics()
    assert set(metrics) == {"accuracy", "roc_auc", "precision", "recall", "f1"}
    assert all(0.0 <= value <= 1.0 for value in metrics.values())
    # Glucose alone separates the classes well: the ranking beats chance on 53 test rows.
    assert metrics["roc_auc"] > 0.5
    prob = run.predict()
    assert prob.shape == target.y_test.shape and np.all((prob > 0) & (prob < 1))
