"""BNN with ARD precisions: joint density, Gibbs conditional, composition with HMC."""

import numpy as np
import pytest
from scipy import stats

import hamiltonia as hm
from hamiltonia.samplers.gibbs import GibbsWithin
from hamiltonia.targets.bnn import BayesianNeuralNetwork
from hamiltonia.targets.bnn_ard import ARDBayesianNeuralNetwork


@pytest.fixture
def target():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.tanh(X[:, 0]) - 0.5 * X[:, 1] + 0.1 * rng.normal(size=40)
    net = BayesianNeuralNetwork(X, y, X_test=X[:5], y_test=y[:5])
    return ARDBayesianNeuralNetwork(net, gamma_shape=2.0, gamma_rate=1.5, gibbs_every=5)


def test_layout(target):
    net = target.network
    assert target.dim == net.dim + 3 + 2
    assert target.names[-5:] == (
        "log_alpha_x1",
        "log_alpha_x2",
        "log_alpha_x3",
        "log_alpha_hidden_bias",
        "log_alpha_output",
    )
    np.testing.assert_array_equal(target.group_sizes, [5, 5, 5, 5, 6])
    assert target.gibbs_indices == list(range(net.dim, target.dim))


def test_log_density_by_hand_and_gradient(target):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, target.dim)) * 0.5
    lp, grad = target.log_prob_and_grad(x)
    net = target.network
    w, la = x[:, : net.dim], x[:, net.dim :]
    ll = net.log_prob(w) + 0.5 * net._prior_prec * np.sum(w * w, axis=-1)
    expected = ll.copy()
    for c in range(target.n_groups):
        wc = w[:, target.group_of == c]
        alpha = np.exp(la[:, c])
        expected += stats.norm.logpdf(wc, scale=1 / np.sqrt(alpha[:, None])).sum(-1)
        # Gamma(shape, rate) density of alpha plus the log-Jacobian log(alpha)
        expected += stats.gamma.logpdf(alpha, 2.0, scale=1 / 1.5) + la[:, c]
    # equal up to constants that do not depend on x
    diffs = lp - expected
    np.testing.assert_allclose(diffs, diffs[0], rtol=0, atol=1e-9)
    h = 1e-6
    for i in range(0, target.dim, 7):
        e = np.zeros(target.dim)
        e[i] = h
        fd = (target.log_prob(x + e) - target.log_prob(x - e)) / (2 * h)
        np.testing.assert_allclose(grad[:, i], fd, rtol=1e-5, atol=1e-6)


def test_gibbs_conditional_is_the_exact_gamma(target):
    """Many draws of one group's precision match Gamma(tau + N_c/2, theta + E_Wc)."""
    q = np.tile(np.linspace(-1, 1, target.dim), (4000, 1))
    rngs = [np.random.default_rng(i) for i in range(4000)]
    out = target.gibbs_update(q.copy(), rngs)
    alpha = np.exp(out[:, target.network.dim])  # group of input x1
    w = q[0, : target.network.dim][target.group_of == 0]
    shape, rate = 2.0 + 0.5 * w.size, 1.5 + 0.5 * np.sum(w**2)
    assert stats.kstest(alpha, stats.gamma(shape, scale=1 / rate).cdf).pvalue > 1e-3
    # the network weights are untouched
    np.testing.assert_array_equal(out[:, : target.network.dim], q[:, : target.network.dim])


def test_samples_with_hmc_inside_gibbs(target):
    sampler = hm.samplers.build("hmc", target, n_steps=10)
    assert isinstance(sampler, GibbsWithin) and sampler.every == 5
    run = hm.sample(target, sampler, chains=2, warmup=100, draws=100, seed=0, progress=False)
    assert np.all(np.isfinite(run.draws))
    la = run.draws[..., target.network.dim :]
    # the precisions moved (Gibbs) but only every 5 iterations
    changes = np.sum(np.any(np.diff(la, axis=1) != 0, axis=-1), axis=1)
    assert np.all((changes >= 100 // 5 - 1) & (changes <= 100 // 5 + 1))
    ranking = target.feature_relevance(run.draws)
    assert sorted(n for n, _ in ranking) == ["x1", "x2", "x3"]
    metrics = run.test_metrics()
    assert set(metrics) == {"mse", "rmse", "mae", "r2"}


def test_paper_setting_builds_the_paper_network(monkeypatch):
    from tests.data import use_data

    use_data(monkeypatch, "concrete")
    paper = hm.targets.get("bnn-ard-concrete", setting="paper", gibbs_every=10)
    default = hm.targets.get("bnn-ard-concrete", gibbs_every=10)
    assert paper.setting == "paper" and paper.network.setting == "paper"
    assert paper.description == "ARD " + paper.network.description
    assert paper.description.endswith("[setting: paper]")
    assert default.setting == "default" and "setting" not in default.description
    # The ARD prior replaces the network's own: the same posterior (to rounding).
    x = np.random.default_rng(3).normal(size=(2, paper.dim)) * 0.5
    np.testing.assert_allclose(paper.log_prob(x), default.log_prob(x), rtol=1e-12)
