"""The six SIR / SEIR change-point targets, checked with hamiltonia's test kit
(``hamiltonia.testing``): exact gradients, the prior, the pointwise log likelihood, a
compiled run with LOO, and recovery of known parameters from simulated data.

Run from this folder (``python -m pytest``) with the plugin installed
(``pip install -e plugins/hamiltonia-epidemics``) and ``HAMILTONIA_DATA`` pointing at the data.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.testing import check_gradient, skip_unless_installed

skip_unless_installed("hamiltonia-epidemics")

from hamiltonia_epidemics.data import Cases, load_cases
from hamiltonia_epidemics.kernel import PRIORS
from hamiltonia_epidemics.model import EpidemicModel

MODELS = [(kind, k) for kind in ("sir", "seir") for k in (0, 1, 2)]
#: |z| above this fails a z-score check (a 1-in-15 000 event per score for a normal z).
Z = 4.0


@pytest.fixture(scope="module")
def cases():
    return load_cases()


def _points(model, n, seed, jitter=1.0):
    rng = np.random.default_rng(seed)
    base = model.initial_point(rng)
    return base + rng.uniform(-jitter, jitter, size=(n, model.dim))


@pytest.mark.parametrize(("kind", "k"), MODELS)
def test_the_gradient_matches_finite_differences_and_the_autograd_reference(cases, kind, k):
    model = EpidemicModel(kind, k, cases)
    x = _points(model, 4, seed=k)
    check_gradient(model, x, hvp=False)
    lp, grad = model.log_prob_and_grad(x)
    ref_lp, ref_grad = model.reference_log_prob_and_grad(x)
    np.testing.assert_allclose(lp, ref_lp, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-9 * np.abs(ref_grad).max())
    # the compiled path's kernel computes the same numbers
    kernel = model.numba_kernel()
    lp0, g0 = kernel.evaluate(x[0])
    np.testing.assert_allclose(lp0, lp[0], rtol=1e-13)
    np.testing.assert_allclose(g0, grad[0], rtol=1e-12, atol=1e-12 * np.abs(g0).max())


def test_the_targets_are_registered_with_a_setting():
    hm.targets.registry.refresh()
    for kind, k in MODELS:
        assert f"{kind}-cp{k}" in hm.targets.names()
    model = hm.targets.get("sir-cp1", setting="paper", end="2020-04-10")
    assert model.setting == "paper" and model.cases.dates[-1] == "2020-04-10"
    with pytest.raises(ValueError, match="setting must be one of"):
        hm.targets.get("sir-cp0", setting="nonsense")


def test_prior_draws_have_the_priors_moments(cases):
    model = EpidemicModel("seir", 2, cases)
    n = 4000
    rngs = [np.random.default_rng(s) for s in (1, 2)]
    draws = model.prior_draws(n // 2, rngs).reshape(n, -1)
    col = {name: i for i, name in enumerate(model.reported_names)}

    def normal_z(values, mean, sd):
        m = values.mean()
        v = ((values - mean) ** 2).mean()
        return (m - mean) / (sd / math.sqrt(n)), (v - sd**2) / (math.sqrt(2) * sd**2 / math.sqrt(n))

    checks = [
        (np.log(draws[:, col["lambda[0]"]]), math.log(0.4), PRIORS["lambda_sigma"][0]),
        (np.log(draws[:, col["lambda[2]"]]), math.log(0.4), PRIORS["lambda_sigma"][2]),
        (np.log(draws[:, col["sigma"]]), math.log(0.2), PRIORS["sigma_sigma"]),
        (np.log(draws[:, col["mu"]]), math.log(1 / 8), PRIORS["mu_sigma"]),
        (np.log(draws[:, col["D"]]), math.log(8), PRIORS["D_sigma"]),
        (draws[:, col["t[0]"]], model.t_means[0], 1.0),
        (draws[:, col["t[1]"]], model.t_means[1], 1.0),
        (np.log(draws[:, col["transient[1]"]]), math.log(3), PRIORS["transient_sigma"]),
    ]
    for values, mean, sd in checks:
        assert max(abs(z) for z in normal_z(values, mean, sd)) < Z
    # half-Cauchy(beta): half the mass below beta, binomial z-score
    for name, beta in (("I0", 20.0), ("E0", 20.0), ("sigma_obs", 10.0)):
        frac = np.mean(draws[:, col[name]] < beta)
        assert abs(frac - 0.5) / math.sqrt(0.25 / n) < Z
    # R0 = lambda / mu per period
    np.testing.assert_allclose(draws[:, col["R0[1]"]],
                               draws[:, col["lambda[1]"]] / draws[:, col["mu"]])  # fmt: skip


def test_the_pointwise_log_likelihood_sums_to_the_likelihood_part(cases):
    model = EpidemicModel("sir", 2, cases)
    rng = np.random.default_rng(3)
    for _ in range(3):
        p = model.layout.constrain(model.initial_point(rng))[0]
        pointwise = model.log_likelihood_fn(p)
        assert pointwise.shape == (len(cases.dates),)
        logp = model._user_logp(p)
        np.testing.assert_allclose(pointwise.sum(), logp - model.log_prior(p), rtol=1e-12)


def test_a_compiled_nuts_run_gives_the_arviz_groups_and_loo(cases):
    from arviz_stats import loo

    model = EpidemicModel("sir", 2, cases)
    run = hm.sample(model, "nuts", chains=2, warmup=300, draws=200, seed=2, progress=False)
    assert run.attrs["compiled"] is True
    tree = run.to_datatree()
    assert tree["log_likelihood"]["new_cases"].shape == (2, 200, len(cases.dates))
    assert tree["log_likelihood"]["new_cases"].dims == ("chain", "draw", "date")
    assert list(tree["observed_data"]["date"].values) == cases.dates
    assert list(tree["posterior"]["lambda_t"].coords["date"].values) == cases.dates
    assert tree["posterior"]["R0"].dims[-1] == "period"
    result = loo(tree)
    assert np.isfinite(result.elpd) and result.p > 0
    pred = run.sample_posterior_predictive(seed=1)
    assert pred["new_cases"].shape == (2, 200, len(cases.dates))


def test_nuts_recovers_known_parameters_from_simulated_data(cases):
    """Data simulated from SIR-1 at known parameters; each posterior mean within Z of the truth
    in units of its posterior sd and Monte Carlo standard error together."""
    template = EpidemicModel("sir", 1, cases)
    truth = {"lambda": np.array([0.45, 0.12]), "mu": np.array(0.13), "D": np.array(7.0),
             "I0": np.array(3.0), "t": np.array([14.0]), "transient": np.array([3.0]),
             "sigma_obs": np.array(1.5)}  # fmt: skip
    rng = np.random.default_rng(11)
    y = template.expected(truth)[0]
    y = y + truth["sigma_obs"] * np.sqrt(y + 1) * rng.standard_t(4, size=y.shape)
    fake = Cases(cases.dates, y, np.cumsum(y), np.ones(len(y), dtype=bool))
    model = EpidemicModel("sir", 1, fake)
    run = hm.sample(model, "nuts", chains=4, warmup=1000, draws=1000, seed=5, progress=False)
    post = run.posterior
    from hamiltonia import diagnostics

    for name, value in truth.items():
        draws = np.asarray(post[name].values).reshape(4, 1000, -1)
        mean = draws.mean(axis=(0, 1))
        sd = draws.std(axis=(0, 1))
        mcse = diagnostics.mcse(draws, "mean")
        z = (mean - np.ravel(value)) / np.sqrt(sd**2 + mcse**2)
        assert np.all(np.abs(z) < Z), (name, mean, value, z)
