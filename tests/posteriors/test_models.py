"""The ten posteriordb models build, with the backend expected of each, and their log
densities are right: finite at the reference means, and equal (up to a constant) to the
same density written independently with SciPy or by brute force."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy import stats

import hamiltonia.posteriors as posteriors
from hamiltonia.posteriors.latent import forward_algorithm
from hamiltonia.targets.base import CompileWarning

#: The models that run with autograd: none. numba compiles every one, the HMMs' loops over
#: time as loops and the exact GP's Cholesky factor with its adjoint.
AUTOGRAD: set[str] = set()
COMPILED = set(posteriors.names()) - AUTOGRAD


def _build(name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = posteriors.get(name)
    return model, [w for w in caught if issubclass(w.category, CompileWarning)]


def _log_density(model, point):
    """The model's log density (unconstrained, Jacobian included) and its gradient at a
    constrained point."""
    z = model.unconstrain(point, chains=1)
    lp, grad = model.log_prob_and_grad(z)
    return float(np.ravel(lp)[0]), np.asarray(grad)


def test_the_suite_is_the_issues_ten():
    assert len(posteriors.names()) == 10
    assert set(posteriors.FAST) < set(posteriors.names())
    data = posteriors.data_files.DATA
    assert (data / "LICENCE.md").read_text().count("BSD 3-Clause") == 1
    for name in posteriors.names():
        assert sorted(p.name for p in (data / name).iterdir()) == [
            "data.json", "reference_mean_squared_value.json", "reference_mean_value.json"
        ]  # fmt: skip
    with pytest.raises(KeyError, match="no posterior 'eight-schools'"):
        posteriors.get("eight-schools")


@pytest.mark.parametrize("name", posteriors.names())
def test_model_builds_and_is_finite_at_the_reference_means(name):
    model, compile_warnings = _build(name)
    assert model.backend == ("numba" if name in COMPILED else "autograd")
    assert bool(compile_warnings) == (name not in COMPILED)
    if "hmm" in name:  # the forward algorithm's loop over time, compiled as a loop
        assert "for i_0 in range(" in model.numba_kernel().source
    lp, grad = _log_density(model, posteriors.reference_point(name, model))
    assert np.isfinite(lp) and np.all(np.isfinite(grad))
    reported = {posteriors.stan_name(n) for n in model.reported_names}
    assert set(posteriors.load_reference(name).names) <= reported


def _lp_difference(model, a, b):
    return _log_density(model, a)[0] - _log_density(model, b)[0]


def test_a_regression_is_the_stan_program():
    """kidiq-kidscore_momhsiq against SciPy's densities (the Jacobian of log sigma added):
    the difference of the log density between two points, where constants cancel."""
    data = posteriors.load_data("kidiq-kidscore_momhsiq")
    model = posteriors.get("kidiq-kidscore_momhsiq")

    def scipy_lp(beta, sigma):
        mu = beta[0] + beta[1] * data["mom_hs"] + beta[2] * data["mom_iq"]
        return (stats.norm.logpdf(data["kid_score"], mu, sigma).sum()
                + stats.cauchy.logpdf(sigma, 0, 2.5) + np.log(sigma))  # fmt: skip

    a = {"beta": np.array([26.0, 6.0, 0.56]), "sigma": 18.0}
    b = {"beta": np.array([20.0, 4.0, 0.6]), "sigma": 20.0}
    expected = scipy_lp(a["beta"], a["sigma"]) - scipy_lp(b["beta"], b["sigma"])
    assert _lp_difference(model, a, b) == pytest.approx(expected, rel=1e-10)


def test_the_exact_gp_is_the_stan_program():
    data = posteriors.load_data("gp_pois_regr-gp_regr")
    x, y = data["x"], data["y"]
    model, compile_warnings = _build("gp_pois_regr-gp_regr")
    assert model.backend == "numba" and not compile_warnings
    assert "cholesky_or_nan(" in model.numba_kernel().source

    def scipy_lp(rho, alpha, sigma):
        cov = alpha**2 * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / rho**2)
        cov += sigma * np.eye(len(x))
        prior = (stats.gamma.logpdf(rho, 25, scale=1 / 4) + stats.norm.logpdf(alpha, 0, 2)
                 + stats.norm.logpdf(sigma, 0, 1))  # fmt: skip
        jacobian = np.log(rho * alpha * sigma)
        return stats.multivariate_normal.logpdf(y, np.zeros(len(x)), cov) + prior + jacobian

    a, b = (6.9, 2.4, 1.8), (5.0, 3.0, 1.0)
    expected = scipy_lp(*a) - scipy_lp(*b)
    names = ("rho", "alpha", "sigma")
    got = _lp_difference(model, dict(zip(names, a, strict=True)), dict(zip(names, b, strict=True)))
    assert got == pytest.approx(expected, rel=1e-10)


def test_the_forward_algorithm_sums_over_every_path():
    """The loop over time against the sum over all K^T state paths (T = 5, K = 2), every
    path starting with weight 1 as in the Stan programs; batched over two points."""
    rng = np.random.default_rng(0)
    theta = rng.dirichlet([1.0, 1.0], size=(2, 2))  # two points, rows of each
    emission = rng.normal(size=(2, 5, 2))
    got = forward_algorithm(np.log(theta), emission)
    for i in range(2):
        total = 0.0
        for path in itertools.product(range(2), repeat=5):
            weight = np.exp(sum(emission[i, t, k] for t, k in enumerate(path)))
            total += weight * np.prod([theta[i, a, b] for a, b in itertools.pairwise(path)])
        assert got[i] == pytest.approx(np.log(total), rel=1e-12)


def test_positive_ordered_is_built_as_stan_builds_it():
    """``phi`` is reported increasing and positive, the cumulative sum of the steps."""
    model = posteriors.get("hmm_example-hmm_example", backend="autograd")
    point = posteriors.reference_point("hmm_example-hmm_example", model)
    steps = point["mu_steps"]
    assert np.all(steps > 0)
    names = model.reported_names
    assert names[-2:] == ("mu[0]", "mu[1]")
    z = model.unconstrain(point, chains=1)
    assert np.allclose(model.constrain(z)[0, -2:], np.cumsum(steps))
