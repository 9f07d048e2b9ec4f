"""Merton jump-diffusion: density, gradient and HVP against autograd (in the constrained
parameters, with the Jacobian written out), the numba kernel, the truncated mixture, the
predictive density; data factories."""

from __future__ import annotations

import math

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from autograd.scipy.special import logsumexp
from scipy.special import gammaln

import hamiltonia as hm
from hamiltonia.targets.jump_diffusion import NAMES, MertonJumpDiffusion, default_priors
from hamiltonia.testing import assert_paths_agree
from tests.data import use_data

RTOL = 1e-8


def _returns(n=80, seed=0):
    """Daily-scale returns: diffusion plus a few jumps."""
    rng = np.random.default_rng(seed)
    r = 0.0005 + 0.01 * rng.normal(size=n)
    jumps = rng.random(n) < 0.05
    return r + jumps * rng.normal(-0.02, 0.04, size=n)


def _autograd_logp(returns, tau=1.0, n_terms=10, priors=None):
    """The model written independently: constrained parameters (b, lambda, b_J > 0) with
    log-normal priors, plus the log-Jacobian of theta -> (a, e^beta, e^eta, a_J, e^gamma)."""
    pri = default_priors(tau) | (priors or {})
    n = np.arange(float(n_terms))

    def log_normal(z, mean, sd):
        return -0.5 * ((z - mean) / sd) ** 2 - anp.log(sd) - 0.5 * np.log(2 * np.pi)

    def log_lognormal(z, mean, sd):
        return log_normal(anp.log(z), mean, sd) - anp.log(z)

    def logp(theta):
        a, b, lam, aj, bj = (
            theta[0],
            anp.exp(theta[1]),
            anp.exp(theta[2]),
            theta[3],
            anp.exp(theta[4]),
        )
        m = a * tau + n * aj
        var = b**2 * tau + n * bj**2
        ell = (
            -lam * tau
            + n * anp.log(lam * tau)
            - gammaln(n + 1)
            - 0.5 * anp.log(2 * np.pi * var)
            - (returns[:, None] - m) ** 2 / (2 * var)
        )
        loglik = anp.sum(logsumexp(ell, axis=1))
        prior = (
            log_normal(a, *pri["a"])
            + log_lognormal(b, *pri["log_b"])
            + log_lognormal(lam, *pri["log_lambda"])
            + log_normal(aj, *pri["a_jump"])
            + log_lognormal(bj, *pri["log_b_jump"])
        )
        jacobian = theta[1] + theta[2] + theta[4]
        return loglik + prior + jacobian

    return logp


def _close(actual, expected, rtol=RTOL):
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def _points(target, count, seed):
    """Points around the prior: means plus prior-sd noise."""
    mean = np.array([target.priors[n][0] for n in NAMES])
    sd = np.array([target.priors[n][1] for n in NAMES])
    return mean + np.random.default_rng(seed).normal(size=(count, 5)) * sd


PLAUSIBLE = np.array([0.0005, math.log(0.008), math.log(0.1), -0.02, math.log(0.04)])


@pytest.fixture
def model():
    r = _returns()
    return MertonJumpDiffusion(r, returns_test=_returns(20, seed=1)), _autograd_logp(r)


def test_log_prob_gradient_and_hvp_match_autograd(model):
    target, logp = model
    grad = autograd.grad(logp)
    hess = autograd.hessian(logp)
    rng = np.random.default_rng(2)
    for theta in [PLAUSIBLE, *_points(target, 4, seed=3)]:
        u = rng.normal(size=5)
        lp, g = target.log_prob_and_grad(theta)
        _close(lp, logp(theta))
        _close(target.log_prob(theta), logp(theta))
        _close(g, grad(theta))
        _close(target.hvp(theta, u), hess(theta) @ u)


def test_options_tau_terms_and_priors_match_autograd():
    r = _returns(40, seed=4)
    priors = {"log_lambda": (math.log(2.0), 0.5), "a": (0.1, 0.3)}
    target = MertonJumpDiffusion(r, tau=1 / 252, n_terms=6, priors=priors)
    logp = _autograd_logp(r, tau=1 / 252, n_terms=6, priors=priors)
    assert target.priors["log_lambda"] == (math.log(2.0), 0.5)
    assert target.priors["log_b"] == default_priors(1 / 252)["log_b"]
    u = np.random.default_rng(5).normal(size=5)
    for theta in _points(target, 3, seed=6):
        lp, g = target.log_prob_and_grad(theta)
        _close(lp, logp(theta))
        _close(g, autograd.grad(logp)(theta))
        _close(target.hvp(theta, u), autograd.hessian(logp)(theta) @ u)


def test_default_priors_say_the_same_about_a_day():
    daily, yearly = default_priors(1.0), default_priors(1 / 252)
    assert daily == {
        "a": (0.0, 0.01),
        "log_b": (math.log(0.01), 1.5),
        "log_lambda": (math.log(0.05), 1.5),
        "a_jump": (0.0, 0.05),
        "log_b_jump": (math.log(0.03), 1.0),
    }
    assert yearly["a"][1] == pytest.approx(252 * 0.01)
    assert math.exp(yearly["log_b"][0]) ** 2 / 252 == pytest.approx(0.01**2)
    assert math.exp(yearly["log_lambda"][0]) / 252 == pytest.approx(0.05)


def test_numba_kernel_matches_numpy(model):
    target, _ = model
    kernel = target.numba_kernel()
    assert isinstance(kernel, hm.compiled.NumbaTarget)
    for theta in [PLAUSIBLE, *_points(target, 5, seed=7)]:
        lp, grad = kernel.evaluate(theta)  # through compiled code
        lp_np, grad_np = target.log_prob_and_grad(theta)
        np.testing.assert_allclose(lp, lp_np, rtol=1e-10)
        np.testing.assert_allclose(grad, grad_np, rtol=1e-10, atol=1e-10 * np.abs(grad_np).max())


def test_compiled_and_numpy_paths_give_the_same_draws(model):
    target, _ = model
    assert_paths_agree(
        target,
        sampler="hmc",
        chains=2,
        warmup=0,
        draws=15,
        seed=3,
        step_size=0.002,
        n_steps=8,
        initial=PLAUSIBLE,
    )


def test_batches_match_single_points(model):
    target, _ = model
    x = _points(target, 6, seed=8).reshape(2, 3, 5)
    u = np.random.default_rng(9).normal(size=(2, 3, 5))
    lp, g = target.log_prob_and_grad(x)
    hv = target.hvp(x, u)
    assert lp.shape == (2, 3) and g.shape == x.shape and hv.shape == x.shape
    np.testing.assert_allclose(target.log_prob(x), lp, rtol=1e-13)
    for i in range(2):
        for j in range(3):
            lp1, g1 = target.log_prob_and_grad(x[i, j])
            np.testing.assert_allclose(lp[i, j], lp1, rtol=1e-13)
            np.testing.assert_allclose(g[i, j], g1, rtol=1e-12, atol=1e-12 * np.abs(g1).max())
            h1 = target.hvp(x[i, j], u[i, j])
            np.testing.assert_allclose(hv[i, j], h1, rtol=1e-12, atol=1e-12 * np.abs(h1).max())
    h0 = np.stack([[target.hvp(x[i, j], u[0, 0]) for j in range(3)] for i in range(2)])
    np.testing.assert_allclose(target.hvp(x, u[0, 0]), h0, rtol=1e-12, atol=1e-9)
    assert target.has_hvp
    assert target.return_log_likelihood(x).shape == (2, 3, target.n_obs)


def test_names_dimension_and_natural_parameters(model):
    target, _ = model
    assert target.dim == 5  # Table 3.2
    assert target.names == ("a", "log_b", "log_lambda", "a_jump", "log_b_jump")
    assert np.array_equal(target.constrain(PLAUSIBLE), PLAUSIBLE)
    nat = target.natural(np.stack([PLAUSIBLE, PLAUSIBLE]))
    assert set(nat) == {"a", "b", "lambda", "a_jump", "b_jump"}
    np.testing.assert_allclose(nat["b"], [0.008, 0.008])
    np.testing.assert_allclose(nat["lambda"], [0.1, 0.1])
    np.testing.assert_allclose(nat["b_jump"], [0.04, 0.04])
    np.testing.assert_allclose(nat["a_jump"], [-0.02, -0.02])


def test_truncated_mixture_mass_and_terms():
    """The K-term mixture integrates to P(Poisson(lambda tau) < K); more terms change the
    density by the tail mass only."""
    grid = np.linspace(-1.5, 1.5, 300001)
    theta = np.array([0.001, math.log(0.01), math.log(1.5), -0.01, math.log(0.05)])
    target = MertonJumpDiffusion(grid)
    density = np.exp(target.return_log_likelihood(theta))
    mass = np.sum(density) * (grid[1] - grid[0])
    lam = 1.5
    expected = sum(math.exp(-lam) * lam**n / math.factorial(n) for n in range(10))
    np.testing.assert_allclose(mass, expected, rtol=1e-9)
    r = _returns(30, seed=10)
    ten = MertonJumpDiffusion(r).log_likelihood(PLAUSIBLE)  # lambda = 0.1 a day
    forty = MertonJumpDiffusion(r, n_terms=40).log_likelihood(PLAUSIBLE)
    assert abs(ten - forty) < 1e-9


def test_stable_at_extreme_parameters():
    """Terms far apart in size: the log-sum-exp is shifted, nothing overflows."""
    r = np.array([-0.3, 0.0, 1e-4, 0.25])
    target = MertonJumpDiffusion(r)
    theta = np.array([0.0, math.log(1e-6), math.log(1e-3), 0.0, math.log(0.2)])
    lp, g = target.log_prob_and_grad(theta)
    hv = target.hvp(theta, np.ones(5))
    assert np.isfinite(lp) and np.all(np.isfinite(g)) and np.all(np.isfinite(hv))
    logp = _autograd_logp(r)
    _close(lp, logp(theta))
    _close(g, autograd.grad(logp)(theta))


def test_predictive_log_density(model):
    target, _ = model
    draws = _points(target, 6, seed=11).reshape(2, 3, 5)
    flat = draws.reshape(-1, 5)
    test = target.returns_test
    dens = np.exp(target.return_log_likelihood(flat, test))  # (6, T)
    expected = np.mean(np.log(dens.mean(axis=0)))
    np.testing.assert_allclose(target.predictive_log_density(draws), expected, rtol=1e-12)
    np.testing.assert_allclose(target.predictive_log_density(draws, test), expected, rtol=1e-12)
    lw = np.full((2, 3), -np.inf)
    lw[1, 0] = 0.0
    np.testing.assert_allclose(
        target.predictive_log_density(draws, log_weights=lw), np.mean(np.log(dens[3])), rtol=1e-12
    )
    np.testing.assert_allclose(
        target.predictive_log_density(draws, log_weights=np.full((2, 3), 5.0)), expected
    )
    assert target.test_metrics(draws) == {"lpd": target.predictive_log_density(draws)}
    with pytest.raises(ValueError, match="log_weights"):
        target.predictive_log_density(draws, log_weights=np.zeros(2))
    with pytest.raises(ValueError, match="returns is required"):
        MertonJumpDiffusion(_returns()).predictive_log_density(draws)
    with pytest.raises(ValueError, match="no test split"):
        MertonJumpDiffusion(_returns()).test_metrics(draws)


def test_predictive_log_density_in_blocks(model, monkeypatch):
    import hamiltonia.targets.jump_diffusion_model as jd

    target, _ = model
    draws = _points(target, 7, seed=12)
    full = target.predictive_log_density(draws)
    monkeypatch.setattr(jd, "_PREDICT_BLOCK", 2 * 20 * 10)  # 2 draws per block
    np.testing.assert_allclose(target.predictive_log_density(draws), full, rtol=1e-12)


def test_invalid_arguments_name_the_parameter():
    r = _returns()
    with pytest.raises(ValueError, match="tau"):
        MertonJumpDiffusion(r, tau=0)
    with pytest.raises(ValueError, match="n_terms"):
        MertonJumpDiffusion(r, n_terms=0)
    with pytest.raises(ValueError, match="returns must be a 1-D array"):
        MertonJumpDiffusion(r[:, None])
    with pytest.raises(ValueError, match="returns must be finite"):
        MertonJumpDiffusion(np.array([0.1, np.nan]))
    with pytest.raises(ValueError, match="returns_test must be finite"):
        MertonJumpDiffusion(r, returns_test=[np.inf])
    with pytest.raises(ValueError, match="unknown parameter 'b'"):
        MertonJumpDiffusion(r, priors={"b": (0.0, 1.0)})
    with pytest.raises(ValueError, match=r"priors\['a'\] sd"):
        MertonJumpDiffusion(r, priors={"a": (0.0, -1.0)})
    with pytest.raises(ValueError, match=r"priors\['a'\] must be a pair"):
        MertonJumpDiffusion(r, priors={"a": 0.1})
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 5\)"):
        MertonJumpDiffusion(r).log_prob(np.zeros(4))


# ----------------------------------------------------------------------------- real data
@pytest.fixture
def with_data(monkeypatch):
    """Point HAMILTONIA_DATA at the canonical files, or skip."""
    use_data(monkeypatch, "sp500", "btc", "usdzar")


@pytest.mark.parametrize(
    ("name", "dataset", "n_train", "n_test"),
    [
        ("jdp-sp500", "sp500", 905, 101),
        ("jdp-btc", "btc", 1314, 146),
        ("jdp-usdzar", "usdzar", 936, 104),
    ],
)
def test_registered_data_targets(with_data, name, dataset, n_train, n_test):
    from hamiltonia import datasets

    target = hm.targets.get(name)
    data = datasets.load(dataset)
    assert isinstance(target, MertonJumpDiffusion)
    assert target.dim == 5 and target.n_obs == n_train and target.tau == 1.0
    assert target.n_terms == 10 and len(target.returns_test) == n_test
    np.testing.assert_array_equal(target.returns, data.returns_train)
    np.testing.assert_array_equal(target.returns_test, data.returns_test)
    logp = _autograd_logp(data.returns_train)
    lp, g = target.log_prob_and_grad(PLAUSIBLE)
    _close(lp, logp(PLAUSIBLE))
    _close(g, autograd.grad(logp)(PLAUSIBLE))
    assert hm.targets.describe()[name]
    other = hm.targets.get(name, priors={"a": (0.0, 0.1)}, test_fraction=0.2)
    assert other.priors["a"] == (0.0, 0.1) and other.n_obs < n_train


def test_jdp_sp500_samples(with_data):
    result = hm.sample("jdp-sp500", "hmc", chains=2, warmup=100, draws=30, seed=0,
                       metric="diagonal", initial=PLAUSIBLE, progress=False)  # fmt: skip
    assert result.attrs["compiled"]
    assert result.draws.shape == (2, 30, 5) and np.all(np.isfinite(result.draws))
    lpd = result.test_metrics()["lpd"]
    assert lpd == hm.targets.get("jdp-sp500").predictive_log_density(result.draws)
    assert 2.0 < lpd < 4.0  # daily returns of about 1 %: log density near log(1/0.01)


# ----------------------------------------------------------------------------- paper setting
#: A point of the paper setting's coordinates (a, b, lambda, a_J, b_J), yearly units.
PAPER_POINT = np.array([0.12, 0.15, 9.0, -0.03, 0.05])


def _eq_3_5_densities(returns, theta, tau, n_terms=10):
    """Eq. 3.5 truncated to ``n_terms`` terms at each return, with scipy's Poisson and
    normal densities."""
    from scipy.stats import norm, poisson

    a, b, lam, aj, bj = theta
    n = np.arange(n_terms)
    weights = poisson.pmf(n, lam * tau)
    sd = np.sqrt(b**2 * tau + n * bj**2)
    return norm.pdf(np.asarray(returns)[:, None], loc=a * tau + n * aj, scale=sd) @ weights


def _eq_3_5_log_density(returns, theta, tau):
    """The paper setting's log density written independently: eq. 3.5 summed over the
    returns, plus N(0, 1) priors on a_J and b_J (flat on the rest)."""
    from scipy.stats import norm

    prior = norm.logpdf(theta[3]) + norm.logpdf(theta[4])
    return float(np.sum(np.log(_eq_3_5_densities(returns, theta, tau))) + prior)


@pytest.fixture
def paper_model():
    from hamiltonia.targets.jump_diffusion import PAPER_TAU, NaturalMertonJumpDiffusion

    r = 0.0005 + 0.01 * np.random.default_rng(20).standard_t(4, size=60)
    return NaturalMertonJumpDiffusion(r, returns_test=r[:10]), r, PAPER_TAU


def test_paper_log_density_is_eq_3_5_with_annual_time(paper_model):
    target, r, tau = paper_model
    assert tau == 1 / 252 and target.tau == tau and target.n_terms == 10
    assert target.names == ("a", "b", "lambda", "a_jump", "b_jump")
    for theta in (PAPER_POINT, np.array([-0.3, 0.4, 0.5, 0.02, 0.2])):
        np.testing.assert_allclose(target.log_prob(theta), _eq_3_5_log_density(r, theta, tau),
                                   rtol=1e-11)  # fmt: skip
    # b and b_J enter as squares; lambda <= 0 is outside the support.
    mirrored = PAPER_POINT * np.array([1, -1, 1, 1, -1])
    np.testing.assert_allclose(target.log_prob(mirrored), target.log_prob(PAPER_POINT), rtol=1e-13)
    assert target.log_prob(PAPER_POINT * np.array([1, 1, -1, 1, 1])) == -np.inf
    lp, grad = target.log_prob_and_grad(np.array([0.1, 0.2, 0.0, 0.0, 0.1]))
    assert lp == -np.inf and np.all(grad == 0)


def test_paper_priors_flat_on_a_b_lambda(paper_model):
    target, _, _ = paper_model
    assert target.priors["a"] is None and target.priors["lambda"] is None
    assert target.priors["a_jump"] == (0.0, 1.0) == target.priors["b_jump"]
    # The log density moves with a, b, lambda by the likelihood alone.
    for k, step in ((0, 0.2), (1, 0.05), (2, 3.0)):
        moved = PAPER_POINT.copy()
        moved[k] += step
        np.testing.assert_allclose(
            target.log_prob(moved) - target.log_prob(PAPER_POINT),
            target.log_likelihood(moved) - target.log_likelihood(PAPER_POINT),
            rtol=1e-12,
        )


def test_paper_gradient_and_hvp_match_finite_differences(paper_model):
    target, _, _ = paper_model
    rng = np.random.default_rng(21)
    x = np.stack([PAPER_POINT, PAPER_POINT * np.array([1, -1.3, 0.4, 2, -0.8])])
    lp, g = target.log_prob_and_grad(x)
    np.testing.assert_allclose(lp, target.log_prob(x), rtol=1e-14)
    h = 1e-6 * np.maximum(np.abs(x), 1e-2)
    fd = np.stack(
        [(target.log_prob(x + h * e) - target.log_prob(x - h * e)) / (2 * h[:, k])
         for k, e in enumerate(np.eye(5))], axis=-1,
    )  # fmt: skip
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6 * np.abs(g).max())
    u = rng.normal(size=x.shape)
    eps = 1e-7
    fd_h = (target.grad_log_prob(x + eps * u) - target.grad_log_prob(x - eps * u)) / (2 * eps)
    hv = target.hvp(x, u)
    np.testing.assert_allclose(hv, fd_h, rtol=1e-5, atol=1e-5 * np.abs(hv).max())
    assert target.numba_kernel() is None


def test_paper_reports_positive_scales_and_reads_starts(paper_model):
    target, r, _ = paper_model
    draws = np.array([[0.1, -0.2, 3.0, 0.01, -0.05]])
    np.testing.assert_array_equal(target.constrain(draws), [[0.1, 0.2, 3.0, 0.01, 0.05]])
    nat = target.natural(draws)
    assert nat["b"][0] == 0.2 and nat["b_jump"][0] == 0.05 and nat["lambda"][0] == 3.0
    q = target.unconstrain(np.array([[0.3, -0.5, -1.2, 0.1, 0.4], [0.0, 1.0, 2.0, 0.0, 1.0]]), 2)
    np.testing.assert_array_equal(q[:, 2], [1.2, 2.0])  # a negative lambda start is mirrored
    np.testing.assert_array_equal(q[0, [0, 1, 3, 4]], [0.3, -0.5, 0.1, 0.4])
    # One draw: the mean log density of the test returns, in the paper's coordinates.
    expected = np.mean(np.log(_eq_3_5_densities(r[:10], [0.1, 0.2, 3.0, 0.01, 0.05], 1 / 252)))
    np.testing.assert_allclose(target.predictive_log_density(draws), expected, rtol=1e-11)


@pytest.mark.parametrize("name", ["jdp-sp500", "jdp-btc", "jdp-usdzar"])
def test_registered_paper_targets(with_data, name):
    from hamiltonia.targets.jump_diffusion import NaturalMertonJumpDiffusion

    default = hm.targets.get(name)
    paper = hm.targets.get(name, setting="paper")
    assert isinstance(paper, NaturalMertonJumpDiffusion)
    assert paper.setting == "paper" and default.setting == "default"
    assert paper.description.endswith("[setting: paper]")
    assert "setting" not in default.description
    assert paper.tau == 1 / 252 and default.tau == 1.0
    np.testing.assert_array_equal(paper.returns, default.returns)
    np.testing.assert_allclose(
        paper.log_prob(PAPER_POINT), _eq_3_5_log_density(paper.returns, PAPER_POINT, 1 / 252),
        rtol=1e-11,
    )  # fmt: skip
    assert hm.targets.get(name, setting="paper", tau=1 / 365).tau == 1 / 365
    with pytest.raises(ValueError, match="priors"):
        hm.targets.get(name, setting="paper", priors={"a": (0.0, 1.0)})
    with pytest.raises(ValueError, match=r"setting must be one of 'default', 'paper'"):
        hm.targets.get(name, setting="bogus")


def test_paper_setting_accepts_at_the_published_step_size(with_data):
    """HMC at Table 3.8's S&P 500 step size (0.0028, L = 15, M = I) from standard normal
    starts accepts most proposals (the thesis's Table 5.1: 92.7 %; the default setting's
    log-scale coordinates accept none at this step). The acceptances are taken as
    Bernoulli trials: the estimate less four binomial standard errors must exceed 1/2."""
    target = hm.targets.get("jdp-sp500", setting="paper")
    start = np.random.default_rng(1).standard_normal((2, 5))
    result = hm.sample(target, "hmc", step_size=0.0028, n_steps=15, adapt_step_size=False,
                       metric="identity", chains=2, warmup=0, draws=100, initial=start, seed=1,
                       compiled=False, progress=False)  # fmt: skip
    accepted = np.asarray(result.stats["accepted"], dtype=float)
    rate, n = accepted.mean(), accepted.size
    se = math.sqrt(rate * (1 - rate) / n)
    assert rate - 4 * se > 0.5, (rate, se)


@pytest.mark.parametrize("setting", ["default", "paper"])
def test_a_run_with_an_output_file_keeps_the_pointwise_log_likelihood(tmp_path, setting):
    # The run file's log_likelihood group is by observed variable, as for every target (a
    # per-return array here once made the final write of every JDP run fail).
    target = hm.targets.get("jdp-sp500", setting=setting)
    result = hm.sample(
        target, "hmc", chains=2, warmup=5, draws=5, seed=1, progress=False, compiled=False,
        step_size=1e-4, n_steps=2, output=tmp_path / "run.nc",
    )  # fmt: skip
    loaded = hm.load(tmp_path / "run.nc")
    ll = loaded.log_likelihood()
    assert set(ll) == {"returns"} and ll["returns"].shape == (2, 5, target.n_obs)
    np.testing.assert_allclose(
        ll["returns"], target.return_log_likelihood(result.draws), rtol=1e-12
    )
