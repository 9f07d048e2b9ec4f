"""The models of ``python -m hamiltonia.bench.models``, as hamiltonia runs them: the simplex
model's posterior is conjugate, so its draws are held to the exact means by z-scores."""

import warnings

import numpy as np

import hamiltonia as hm
from hamiltonia.bench import models
from hamiltonia.diagnostics.estimators import mcse


def test_the_simplex_model_recovers_its_conjugate_posterior_means():
    # Dirichlet(1) and U(0, 1) priors: w | y ~ Dirichlet(1 + y), p | k ~ Beta(1 + k, 1 + n - k).
    exact = np.append(
        (1 + models.COUNTS) / (models.COUNTS.size + models.COUNTS.sum()),
        (1 + models.SUCCESSES) / (2 + models.TRIALS),
    )
    model = models._HAMILTONIA_MODELS["simplex"]("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a healthy run: no warning
        result = hm.sample(model, chains=4, warmup=500, draws=1500, seed=11, progress=False)
    assert result.names == ("w[0]", "w[1]", "w[2]", "w[3]", "p")
    z = (result.mean() - exact) / mcse(result.draws)
    assert np.all(np.abs(z) < 4.0), z


def test_every_model_is_offered_for_every_implementation():
    assert set(models.MODELS) == set(models._HAMILTONIA_MODELS)
