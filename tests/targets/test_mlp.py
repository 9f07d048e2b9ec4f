"""Fully connected regression networks (hamiltonia.targets.mlp): the gradient against finite
differences, the compiled kernels against the NumPy form, the split into row subsets, the
predictive, bad inputs, and the generated 1-D data of the paper's example."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.targets.mlp import (
    DATA_INTERVALS,
    PAPER_TAU,
    MLPRegression,
    Prediction,
    regression_1d,
    regression_1d_data,
)
from hamiltonia.targets.split import SplitTarget, split_boundaries
from hamiltonia.testing import check_gradient

HIDDEN = (8, 6)


def _data(n=37, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(2.0 * X[:, 0]) + 0.5 * X[:, -1] + 0.1 * rng.normal(size=n)
    return X, y


def _target(n=37, d=2, activation="tanh", **kw):
    X, y = _data(n, d)
    kw = {"hidden": HIDDEN, "tau": 4.0, "prior_scale": 1.5, **kw}
    return MLPRegression(X, y, activation=activation, **kw)


def _points(target, n=3, scale=0.7, seed=1):
    return scale * np.random.default_rng(seed).normal(size=(n, target.dim))


def _close(actual, expected, rtol=1e-10):
    expected = np.asarray(expected)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * np.abs(expected).max())


@pytest.fixture(scope="module")
def paper():
    return regression_1d()


# --------------------------------------------------------------------------- density
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("hidden", [(5,), HIDDEN, (4, 3, 5)])
def test_gradient_matches_finite_differences(activation, hidden):
    target = _target(activation=activation, hidden=hidden)
    assert check_gradient(target, _points(target)) < 1.0


def test_the_density_is_the_model_written_out():
    target = _target(hidden=(3,))
    theta = _points(target, 1)[0]
    (W1, b1), (W2, b2) = target.unpack(theta)
    f = np.tanh(target.X @ W1 + b1) @ W2[:, 0] + b2[0]
    expected = -0.5 * 4.0 * np.sum((target.y - f) ** 2) - 0.5 * theta @ theta / 1.5**2
    _close(target.log_prob(theta), expected, 1e-12)
    _close(target.log_likelihood(theta), -2.0 * np.sum((target.y - f) ** 2), 1e-12)
    assert target.names[:4] == ("w1_1_1", "w1_1_2", "w1_1_3", "w1_2_1")
    assert target.names[-5:] == ("b1_3", "w2_1_1", "w2_2_1", "w2_3_1", "b2_1")


def test_batches_of_chains_agree_with_single_points():
    target = _target()
    x = _points(target, 6).reshape(2, 3, target.dim)
    lp, grad = target.log_prob_and_grad(x)
    assert lp.shape == (2, 3) and grad.shape == x.shape
    lp_one, grad_one = target.log_prob_and_grad(x[1, 2])
    assert np.ndim(lp_one) == 0
    _close(lp[1, 2], lp_one, 1e-13)
    _close(grad[1, 2], grad_one, 1e-12)
    _close(target.log_prob(x), lp, 1e-13)


def test_chunks_of_chains_give_the_same_numbers(monkeypatch):
    """Large batches are evaluated in chunks of chains (bounded memory): same results."""
    target = _target()
    x = _points(target, 7)
    lp, grad = target.log_prob_and_grad(x)
    monkeypatch.setattr("hamiltonia.targets.mlp._BLOCK", 2 * target.n_obs * max(HIDDEN))
    lp_c, grad_c = target.log_prob_and_grad(x)
    _close(lp_c, lp, 1e-13)
    _close(grad_c, grad, 1e-12)
    _close(target.log_prob(x), lp, 1e-13)


def test_log_prob_and_grad_is_all_rows_with_the_whole_prior():
    target = _target()
    x = _points(target)
    lp, grad = target.log_prob_and_grad(x)
    lp_r, grad_r = target.rows_log_prob_and_grad(x, 0, target.n_obs, 1.0)
    assert np.array_equal(lp, lp_r) and np.array_equal(grad, grad_r)
    assert np.array_equal(target.log_prob(x), lp)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_row_subsets_sum_to_the_whole(activation):
    target = _target(activation=activation)
    x = _points(target)
    lp, grad = target.log_prob_and_grad(x)
    bounds = split_boundaries(target.n_obs, 4)
    parts = [target.rows_log_prob_and_grad(x, a, b, 0.25) for a, b in pairwise(bounds)]
    _close(sum(p[0] for p in parts), lp, 1e-12)
    _close(sum(p[1] for p in parts), grad, 1e-11)
    # An empty range is the prior share alone.
    lp0, grad0 = target.rows_log_prob_and_grad(x, 5, 5, 0.5)
    _close(lp0, -0.25 * np.sum(x * x, axis=-1) / 1.5**2, 1e-14)
    _close(grad0, -0.5 * x / 1.5**2, 1e-14)


# --------------------------------------------------------------------------- compiled
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize(("n", "hidden"), [(37, HIDDEN), (600, HIDDEN), (300, (3, 4, 5))])
def test_compiled_kernel_equals_numpy(activation, n, hidden):
    """n = 600: more rows than a block (256) and a partial last block."""
    target = _target(n=n, activation=activation, hidden=hidden)
    kernel = target.numba_kernel()
    assert isinstance(kernel, hm.compiled.NumbaTarget)
    for theta in _points(target, 3, scale=1.0):
        lp, grad = kernel.evaluate(theta)  # through compiled code
        lp_np, grad_np = target.log_prob_and_grad(theta)
        _close(lp, lp_np, 1e-12)
        _close(grad, grad_np, 1e-10)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_compiled_split_components_equal_numpy_and_sum_to_the_whole(activation):
    target = _target(n=41, activation=activation)
    split = SplitTarget(target, 4)
    kernel = split.numba_kernel()
    assert kernel.components == 4
    theta = _points(target, 1)[0]
    total_lp, total_grad = 0.0, np.zeros(target.dim)
    for m in range(4):
        lp, grad = kernel.evaluate_component(theta, m)
        lp_ref, grad_ref = split.component_log_prob_and_grad(theta, m)
        _close(lp, lp_ref, 1e-12)
        _close(grad, grad_ref, 1e-10)
        total_lp, total_grad = total_lp + lp, total_grad + grad
    whole, whole_grad = kernel.evaluate_component(theta, -1)
    own, own_grad = target.numba_kernel().evaluate(theta)
    assert whole == own and np.array_equal(whole_grad, own_grad)
    _close(total_lp, whole, 1e-12)
    _close(total_grad, whole_grad, 1e-10)


def test_split_target_of_four(paper):
    split = SplitTarget(paper, 4)
    assert split.boundaries.tolist() == [0, 100, 200, 300, 400]
    assert split.research_n_steps == 30
    x = 0.1 * np.random.default_rng(2).normal(size=(2, paper.dim))
    lp, grad = paper.log_prob_and_grad(x)
    lp_s, grad_s = split.log_prob_and_grad(x)
    _close(lp_s, lp, 1e-12)
    _close(grad_s, grad, 1e-10)
    parts = [split.component_log_prob_and_grad(x, m) for m in range(4)]
    _close(sum(p[0] for p in parts), lp, 1e-12)
    assert isinstance(split.predict(x), Prediction)  # the base target's predictive


def test_the_paper_network_compiled_equals_numpy_and_its_gradient_is_right(paper):
    """(100, 100): D = 10401. Full finite differences would be 20,802 evaluations; check the
    compiled kernel against NumPy, and NumPy's gradient along random directions."""
    assert paper.dim == 10401 and paper.layer_sizes == (1, 100, 100, 1)
    rng = np.random.default_rng(3)
    theta = 0.3 * rng.normal(size=paper.dim)
    lp, grad = paper.log_prob_and_grad(theta)
    lp_k, grad_k = paper.numba_kernel().evaluate(theta)
    _close(lp_k, lp, 1e-12)
    _close(grad_k, grad, 1e-10)
    for _ in range(2):
        v = rng.normal(size=paper.dim)
        h = 1e-5
        d = (paper.log_prob(theta + h * v) - paper.log_prob(theta - h * v)) / (2 * h)
        assert abs(d - grad @ v) <= 1e-6 * (abs(d) + np.abs(grad).sum())


# --------------------------------------------------------------------------- predictive
def test_predictive_mean_and_sd():
    target = _target(X_test=_data(11)[0])
    draws = _points(target, 5)
    pred = target.predict(draws)
    f = np.stack([target._forward(d[None], target.X_test)[1][0] for d in draws])
    _close(pred.mean, f.mean(axis=0), 1e-12)
    _close(pred.epistemic_sd, f.std(axis=0), 1e-9)
    _close(pred.sd, np.sqrt(f.var(axis=0) + 1 / 4.0), 1e-12)
    # One draw: no epistemic spread, the noise alone.
    one = target.predict(draws[:1])
    _close(one.mean, f[0], 1e-12)
    _close(one.sd, np.full(11, 0.5), 1e-12)
    # Importance weights concentrated on one draw select it.
    lw = np.array([0.0, -1e3, -1e3, -1e3, -1e3])
    _close(target.predict(draws, log_weights=lw).mean, f[0], 1e-12)
    # Explicit rows, and chains as leading axes.
    again = target.predict(draws.reshape(1, 5, -1), X=target.X_test)
    _close(again.mean, pred.mean, 1e-13)


def test_a_1d_grid_is_taken_as_rows(paper):
    grid = np.linspace(-2.0, 2.0, 7)
    draws = 0.1 * np.random.default_rng(4).normal(size=(3, paper.dim))
    pred = paper.predict(draws, grid)
    assert pred.mean.shape == (7,)
    _close(pred.mean, paper.predict(draws, grid[:, None]).mean, 1e-13)


def test_calibration_fractions():
    target = _target()
    draws = _points(target, 4, scale=0.3)
    cal = target.calibration(draws)
    pred = target.predict(draws, target.X)
    z = np.abs(target.y - pred.mean) / pred.sd
    assert cal == {"outside_1sd": np.mean(z > 1), "outside_2sd": np.mean(z > 2)}
    with pytest.raises(ValueError, match="together"):
        target.calibration(draws, X=target.X)


def test_test_metrics_only_with_test_targets(paper):
    assert not hasattr(paper, "test_metrics")  # the grid has no targets
    assert not hasattr(SplitTarget(paper, 4), "test_metrics")
    X_test, y_test = _data(9, seed=5)
    target = _target(X_test=X_test, y_test=y_test)
    metrics = target.test_metrics(_points(target, 2))
    assert set(metrics) == {"mse", "rmse", "mae", "r2"}
    assert math.isclose(metrics["rmse"] ** 2, metrics["mse"])


# --------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"hidden": ()}, "at least one hidden layer"),
        ({"hidden": (4, 0)}, r"hidden\[1\] must be an integer"),
        ({"hidden": (4, 2.5)}, r"hidden\[1\] must be an integer"),
        ({"hidden": "100"}, "sequence of hidden-layer widths"),
        ({"activation": "sigmoid"}, "activation must be one of"),
        ({"tau": 0.0}, "tau"),
        ({"tau": float("nan")}, "tau"),
        ({"prior_scale": -1.0}, "prior_scale"),
        ({"y_test": np.zeros(3)}, "y_test needs X_test"),
        ({"X_test": np.zeros((3, 5))}, r"X_test must have shape \(M, 2\)"),
        ({"X_test": np.zeros((3, 2)), "y_test": np.zeros(4)}, r"y_test must have shape \(3,\)"),
        ({"hidden": (2000, 2000)}, "more than the"),
    ],
)
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _target(**kwargs)


def test_bad_data_and_positions_are_refused():
    X, y = _data()
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        MLPRegression(X[:, 0], y)
    with pytest.raises(ValueError, match=r"y must have shape \(37,\)"):
        MLPRegression(X, y[:-1])
    bad = y.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="y must be finite"):
        MLPRegression(X, bad)
    target = _target()
    with pytest.raises(ValueError, match=rf"x must have shape \(\.\.\., {target.dim}\)"):
        target.log_prob_and_grad(np.zeros(target.dim + 1))
    with pytest.raises(ValueError, match="stop must be an integer"):
        target.rows_log_prob_and_grad(np.zeros(target.dim), 10, 5, 1.0)
    with pytest.raises(ValueError, match="X is required"):
        target.predict(np.zeros(target.dim))
    with pytest.raises(ValueError, match=r"X must have shape \(M, 2\)"):
        target.predict(np.zeros(target.dim), X=np.zeros((4, 3)))


# --------------------------------------------------------------------------- 1-D data
def test_generated_data_shape_and_standardisation():
    data = regression_1d_data()
    assert data.X.shape == (400, 1) and data.Y.shape == (400,)
    np.testing.assert_allclose([data.X.mean(), data.Y.mean()], 0.0, atol=1e-12)
    np.testing.assert_allclose([data.X.std(), data.Y.std()], 1.0, rtol=1e-12)
    np.testing.assert_allclose(data.X[:, 0], (data.x - data.x_mean) / data.x_scale)
    np.testing.assert_array_equal(data.X_test[:, 0], np.linspace(-2.0, 2.0, 500))
    assert data.F_test.shape == (500,)
    # Two clusters of 200, a gap between them, rows in random order.
    for lo, hi in DATA_INTERVALS:
        assert np.sum((data.x >= lo) & (data.x <= hi)) == 200
    assert not np.all(np.diff(data.x) > 0)
    # The standardised noise has about the paper's precision.
    noise = (data.y - data.f) / data.y_scale
    assert 0.8 * PAPER_TAU < 1.0 / np.var(noise) < 1.25 * PAPER_TAU


def test_generated_data_is_reproducible():
    a, b, c = regression_1d_data(), regression_1d_data(), regression_1d_data(seed=7)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.y, c.y)
    assert regression_1d_data(n_obs=101).X.shape == (101, 1)


def test_the_factory(paper):
    assert paper.n_obs == 400 and paper.tau == PAPER_TAU and paper.prior_scale == 1.0
    assert paper.activation == "tanh" and paper.research_n_steps == 30
    assert paper.X_test.shape == (500, 1) and paper.y_test is None
    np.testing.assert_array_equal(paper.y, paper.dataset.Y)
    assert "\n" not in regression_1d.__doc__.splitlines()[0]
    small = regression_1d(hidden=(5,), activation="relu", setting="paper")
    assert small.dim == 3 * 5 + 1 and small.setting == "paper"
    assert "[setting: paper]" in small.description
    with pytest.raises(ValueError, match="setting"):
        regression_1d(setting="exact")
