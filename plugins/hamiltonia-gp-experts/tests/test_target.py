"""The ``gp-experts`` target: gradients, the batched path against a per-expert loop, the
compiled kernel, hyperparameter recovery by NUTS and bad input.

Run from this folder (``python -m pytest``) with the plugin installed (``pip install -e .``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.testing import check_gradient, skip_unless_installed

skip_unless_installed("hamiltonia-gp-experts")

from hamiltonia_gp_experts.aggregation import fit_lbfgs
from hamiltonia_gp_experts.targets import GPExperts, gp_experts, make_partition


def _data(n=60, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


def _loop_lml(X, y, partition, theta, ard):
    """The summed log marginal likelihood by a textbook loop over the experts."""
    d = X.shape[1]
    ls = np.exp(theta[:d]) if ard else np.full(d, np.exp(theta[0]))
    s2, n2 = np.exp(theta[-2]), np.exp(theta[-1])
    total = 0.0
    for idx in partition:
        A = X[idx] / ls
        d2 = np.sum((A[:, None] - A[None]) ** 2, axis=-1)
        C = s2 * np.exp(-0.5 * d2) + n2 * np.eye(len(idx))
        _, logdet = np.linalg.slogdet(C)
        total += -0.5 * y[idx] @ np.linalg.solve(C, y[idx]) - 0.5 * logdet
        total -= 0.5 * len(idx) * math.log(2 * math.pi)
    return total


@pytest.mark.parametrize("ard", [False, True])
@pytest.mark.parametrize("partition", ["random", "kmeans"])
def test_the_gradient_matches_finite_differences(ard, partition):
    X, y = _data()
    target = gp_experts(X, y, points_per_expert=9, partition=partition, ard=ard, seed=1)
    check_gradient(target, seed=2)


@pytest.mark.parametrize("ard", [False, True])
def test_the_batched_and_compiled_paths_equal_a_loop_over_the_experts(ard):
    X, y = _data(d=3)
    target = gp_experts(X, y, points_per_expert=8, partition="kmeans", ard=ard, seed=3)
    assert len(set(target.counts.tolist())) > 1  # experts of unequal sizes: padding is used
    kernel = target.numba_kernel()
    rng = np.random.default_rng(4)
    thetas = rng.normal(scale=0.5, size=(3, target.dim)) + target.prior_mean
    ll, _ = target.log_likelihood_and_grad(thetas)
    lp, _ = target.log_prob_and_grad(thetas)
    for i, theta in enumerate(thetas):
        want = _loop_lml(X, y, target.partition, theta, ard)
        assert ll[i] == pytest.approx(want, rel=1e-10)
        klp, kgrad = kernel.evaluate(theta)
        assert klp == pytest.approx(lp[i], rel=1e-11)
        np.testing.assert_allclose(kgrad, target.log_prob_and_grad(theta)[1], rtol=1e-9,
                                   atol=1e-9)  # fmt: skip


def test_the_target_is_registered_and_reports_named_constrained_values():
    hm.targets.registry.refresh()
    target = hm.targets.get("gp-experts", points_per_expert=20)
    assert isinstance(target, GPExperts)
    assert target.reported_names == ("lengthscale", "signal_variance", "noise_variance")
    x = np.array([0.1, -0.2, -3.0])
    np.testing.assert_allclose(target.constrain(x), np.exp(x))
    paper = gp_experts(points_per_expert=7, setting="paper")
    assert paper.setting == "paper" and set(paper.counts.tolist()) == {7}  # 42 x 7 of 300


def test_nuts_recovers_the_hyperparameters_of_simulated_experts():
    """Each expert's data are drawn from the GP prior at known hyperparameters, independently
    across experts, so that eq. 5.4 is the exact likelihood and the NUTS posterior must cover
    the truth: each z-score (posterior mean minus truth, over the posterior sd) is checked
    against the 99.9% normal quantile, and the chain runs compiled."""
    truth = np.log([0.6, 1.2, 0.05])
    rng = np.random.default_rng(11)
    X = rng.uniform(-4, 4, size=(240, 1))
    parts = make_partition(X, points_per_expert=20, seed=11)
    y = np.empty(240)
    for idx in parts:
        d2 = (X[idx] - X[idx].T) ** 2 / 0.6**2
        C = 1.2 * np.exp(-0.5 * d2) + 0.05 * np.eye(len(idx))
        y[idx] = np.linalg.cholesky(C) @ rng.normal(size=len(idx))
    target = GPExperts(X, y, parts, prior_scale=3.0)
    run = hm.sample(target, "nuts", chains=2, warmup=400, draws=500, seed=12, progress=False)
    assert run.attrs["compiled"] is True
    logs = np.log(run.draws.reshape(-1, target.dim))
    z = (logs.mean(0) - truth) / logs.std(0)
    assert np.all(np.abs(z) < 3.29), f"z-scores {z}"
    # the L-BFGS estimate is inside the posterior too
    fit = fit_lbfgs(target)
    assert np.all(np.abs((fit.theta - logs.mean(0)) / logs.std(0)) < 3.29)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"X": np.zeros((5, 1)), "y": np.zeros(4)}, "same number of rows"),
        ({"X": np.zeros((5, 1)), "y": np.zeros(5), "n_experts": 6}, "n_experts=6"),
        ({"X": np.zeros((5, 1)), "y": np.zeros(5), "n_experts": 0}, "n_experts"),
        ({"X": np.zeros((5, 1)), "y": np.zeros(5), "points_per_expert": 0}, "points_per_expert"),
        ({"X": np.full((5, 1), np.nan), "y": np.zeros(5)}, "X must be finite"),
        ({"X": np.zeros((5, 1)), "y": [0, 1, np.inf, 0, 0]}, "y must be finite"),
        ({"X": np.zeros((5, 1)), "y": np.zeros(5), "partition": "cluster"}, "partition"),
        ({"X": np.zeros((5, 1)), "y": None}, "both X and y"),
        ({"X": np.zeros((5, 1)), "y": np.zeros((5, 2))}, "y must have shape"),
        ({"setting": "publication"}, "setting"),
        ({"X": np.zeros((5, 1)), "y": np.zeros(5), "prior_scale": -1.0}, "prior_scale"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gp_experts(**kwargs)


def test_bad_partitions_are_refused():
    X, y = _data(n=10, d=1)
    with pytest.raises(ValueError, match="disjoint"):
        GPExperts(X, y, [[0, 1, 2], [2, 3]])
    with pytest.raises(ValueError, match="no points"):
        GPExperts(X, y, [[0, 1], []])
    with pytest.raises(ValueError, match="outside"):
        GPExperts(X, y, [[0, 10]])
    with pytest.raises(ValueError, match="exactly one"):
        make_partition(X, points_per_expert=2, n_experts=3)
