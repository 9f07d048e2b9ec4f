"""``python -m hamiltonia.bench loops``: its model is the ARMA(1,1) it simulates from, and a
build in this process reports the compiled backend."""

import numpy as np

from hamiltonia.bench import core, loops


def test_the_simulation_is_the_likelihoods_model():
    """The likelihood's errors at the simulating parameters are the simulation's shocks:
    their sd is sigma's (0.8) within its sampling error."""
    y = loops.simulate_arma11(4000, seed=3)
    mu, phi, theta = loops.TRUE["mu"], loops.TRUE["phi"], loops.TRUE["theta"]
    err, errors = y[0] - mu, [y[0] - mu]
    for t in range(1, len(y)):
        err = y[t] - (mu + phi * (y[t - 1] - mu) + theta * err)
        errors.append(err)
    sd = np.std(errors)
    assert abs(sd - loops.TRUE["sigma"]) < 4 * loops.TRUE["sigma"] / np.sqrt(2 * len(y))


def test_one_build_reports_the_compiled_backend():
    record = loops._one(40, sample=False, seed=1)
    assert record["backend"] == "numba" and record["build_s"] > 0
    assert "loops" in core.SUBCOMMANDS
