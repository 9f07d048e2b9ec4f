"""Bayesian neural network classifier (softmax output): density and gradient against finite
differences and autograd, the compiled kernel, split components, prediction and metrics, the
digits factory and its argument checks."""

from __future__ import annotations

import math
import sys

import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.targets.softmax_bnn import (
    DIGITS_CLASSES,
    DIGITS_FEATURES,
    BNNClassifier,
    digits,
    log_softmax,
    max_hidden,
    stratified_split,
)
from hamiltonia.targets.split import SplitTarget
from hamiltonia.testing import check_gradient

H, C = 4, 3


def _data(n=60, d=5, n_classes=C, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.argmax(X[:, :n_classes] + 0.5 * rng.normal(size=(n, n_classes)), axis=1)
    return X, y


def _target(n=60, d=5, **kwargs):
    X, y = _data(n, d)
    kwargs.setdefault("n_hidden", H)
    return BNNClassifier(X, y, **kwargs)


def _autograd_logp(X, y, n_hidden, n_classes, prior_scale):
    """The same model written independently with autograd.numpy (one point)."""
    d = X.shape[1]
    onehot = np.eye(n_classes)[y]

    def logp(theta):
        i = 0
        W = anp.reshape(theta[i : i + d * n_hidden], (d, n_hidden))
        i += d * n_hidden
        a = theta[i : i + n_hidden]
        i += n_hidden
        V = anp.reshape(theta[i : i + n_hidden * n_classes], (n_hidden, n_classes))
        b = theta[i + n_hidden * n_classes :]
        Z = anp.dot(anp.tanh(anp.dot(X, W) + a), V) + b
        lse = anp.log(anp.sum(anp.exp(Z), axis=1))
        return anp.sum(onehot * Z) - anp.sum(lse) - anp.sum(theta**2) / (2 * prior_scale**2)

    return logp


def _points(target, n=3, scale=1.0, seed=1):
    return np.random.default_rng(seed).normal(size=(n, target.dim)) * scale


# ------------------------------------------------------------------ density and gradient
@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_gradient_matches_finite_differences(scale):
    target = _target(prior_scale=1.5)
    check_gradient(target, _points(target, scale=scale))


def test_log_prob_and_gradient_match_autograd():
    import autograd

    X, y = _data()
    target = BNNClassifier(X, y, n_hidden=H, prior_scale=1.5)
    logp = _autograd_logp(X, y, H, C, 1.5)
    for theta in _points(target, scale=2.0):
        lp, grad = target.log_prob_and_grad(theta)
        np.testing.assert_allclose(lp, logp(theta), rtol=1e-12)
        np.testing.assert_allclose(target.log_prob(theta), logp(theta), rtol=1e-12)
        expected = autograd.grad(logp)(theta)
        np.testing.assert_allclose(grad, expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())


def test_log_prob_and_grad_is_all_rows_with_the_whole_prior_bit_for_bit():
    target = _target()
    x = _points(target)
    lp, grad = target.log_prob_and_grad(x)
    lp_rows, grad_rows = target.rows_log_prob_and_grad(x, 0, target.n_obs, 1.0)
    np.testing.assert_array_equal(lp, lp_rows)
    np.testing.assert_array_equal(grad, grad_rows)
    np.testing.assert_array_equal(lp, target.log_prob(x))


def test_rows_are_a_partial_sum_with_a_share_of_the_prior():
    target = _target()
    x = _points(target, n=2)
    lp_a, g_a = target.rows_log_prob_and_grad(x, 0, 25, 0.25)
    lp_b, g_b = target.rows_log_prob_and_grad(x, 25, target.n_obs, 0.75)
    lp, g = target.log_prob_and_grad(x)
    np.testing.assert_allclose(lp_a + lp_b, lp, rtol=1e-13)
    np.testing.assert_allclose(g_a + g_b, g, rtol=1e-12, atol=1e-12)
    # The rows alone: the pointwise log likelihood summed over them.
    ll = target.pointwise_log_likelihood(x)["y"][:, :25].sum(axis=-1)
    np.testing.assert_allclose(lp_a, ll - 0.25 * 0.5 * np.sum(x * x, axis=-1), rtol=1e-13)


def test_batches_match_single_points():
    target = _target()
    x = _points(target, n=6).reshape(2, 3, target.dim)
    lp, grad = target.log_prob_and_grad(x)
    assert lp.shape == (2, 3) and grad.shape == x.shape
    for i in range(2):
        for j in range(3):
            lp1, g1 = target.log_prob_and_grad(x[i, j])
            np.testing.assert_allclose(lp[i, j], lp1, rtol=1e-13)
            np.testing.assert_allclose(grad[i, j], g1, rtol=1e-12, atol=1e-12)
    assert not target.has_hvp


def test_log_softmax_is_stable():
    z = np.array([[1000.0, 0.0, -1000.0], [-1e300, -1e300, 0.0], [1.0, 2.0, 3.0]])
    out = log_softmax(z)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out[0], [0.0, -1000.0, -2000.0])
    np.testing.assert_allclose(out[2], z[2] - np.log(np.exp(z[2]).sum()), rtol=1e-15)
    # A network with huge logits keeps a finite density and gradient.
    target = _target()
    lp, grad = target.log_prob_and_grad(_points(target, n=1, scale=200.0)[0])
    assert np.isfinite(lp) and np.all(np.isfinite(grad))


def test_pointwise_log_likelihood_and_observed_data():
    target = _target()
    x = _points(target, n=6).reshape(3, 2, target.dim)
    pointwise = target.pointwise_log_likelihood(x)["y"]
    assert pointwise.shape == (3, 2, target.n_obs)
    assert np.all(pointwise <= 0.0)
    np.testing.assert_allclose(pointwise.sum(axis=-1), target.log_likelihood(x), rtol=1e-13)
    np.testing.assert_array_equal(target.observed_data["y"], target.y)


def test_names_follow_the_parameter_layout():
    X = np.random.default_rng(0).normal(size=(12, 2))
    y = np.arange(12) % 3
    target = BNNClassifier(X, y, n_hidden=2, feature_names=["Pixel (0,0)", "age"],
                           class_names=["cat", "dog", "bird"])  # fmt: skip
    assert target.dim == 2 * 2 + 2 + 2 * 3 + 3
    assert target.names == (
        "w_pixel_0_0_1", "w_pixel_0_0_2", "w_age_1", "w_age_2", "a_1", "a_2",
        "v_1_cat", "v_1_dog", "v_1_bird", "v_2_cat", "v_2_dog", "v_2_bird",
        "b_cat", "b_dog", "b_bird",
    )  # fmt: skip
    W, a, V, b = target.unpack(np.arange(target.dim, dtype=float))
    assert W[0, 1] == target.names.index("w_pixel_0_0_2")
    assert a[1] == target.names.index("a_2")
    assert V[1, 0] == target.names.index("v_2_cat")
    assert b[2] == target.names.index("b_bird")
    assert BNNClassifier(X, y).names[-1] == "b_2"


# ------------------------------------------------------------------ compiled kernels
def _assert_kernel_matches(target, points):
    kernel = target.numba_kernel()
    assert isinstance(kernel, hm.compiled.NumbaTarget)
    for theta in points:
        lp, grad = kernel.evaluate(theta)  # through compiled code
        lp_np, grad_np = target.log_prob_and_grad(theta)
        np.testing.assert_allclose(lp, lp_np, rtol=1e-11)
        np.testing.assert_allclose(grad, grad_np, rtol=1e-10, atol=1e-11 * np.abs(grad_np).max())


def test_numba_kernel_matches_numpy():
    # d = 5: one pass of four columns and one left over.
    target = _target(prior_scale=0.7)
    _assert_kernel_matches(target, [_points(target, n=1, scale=s)[0] for s in (0.1, 1.0, 5.0)])


def test_numba_kernel_blocks_rows():
    """More rows than a kernel block (256), a partial last block, d a multiple of four."""
    target = _target(n=600, d=8)
    _assert_kernel_matches(target, _points(target, n=2))


def test_split_components_sum_to_the_whole():
    target = _target(n=70)
    split = SplitTarget(target, 4)
    x = _points(target, n=2)
    lp, grad = target.log_prob_and_grad(x)
    parts = [split.component_log_prob_and_grad(x, m) for m in range(4)]
    np.testing.assert_allclose(sum(p[0] for p in parts), lp, rtol=1e-13)
    np.testing.assert_allclose(sum(p[1] for p in parts), grad, rtol=1e-12, atol=1e-12)
    lp_split, grad_split = split.log_prob_and_grad(x)
    np.testing.assert_allclose(lp_split, lp, rtol=1e-13)
    np.testing.assert_allclose(grad_split, grad, rtol=1e-12, atol=1e-12)
    # The compiled components: each equal to the NumPy one, summing to the whole kernel.
    kernel = split.numba_kernel()
    assert kernel.components == 4
    theta = x[0]
    lp_all, grad_all = kernel.evaluate_component(theta, -1)
    np.testing.assert_allclose(lp_all, lp[0], rtol=1e-11)
    total_lp, total_grad = 0.0, np.zeros(target.dim)
    for m in range(4):
        lp_m, grad_m = kernel.evaluate_component(theta, m)
        np.testing.assert_allclose(lp_m, parts[m][0][0], rtol=1e-11)
        np.testing.assert_allclose(grad_m, parts[m][1][0], rtol=1e-10, atol=1e-11)
        total_lp, total_grad = total_lp + lp_m, total_grad + grad_m
    np.testing.assert_allclose(total_lp, lp_all, rtol=1e-12)
    np.testing.assert_allclose(total_grad, grad_all, rtol=1e-10, atol=1e-11)
    # The whole kernel of a split target is the plain kernel.
    lp_plain, grad_plain = target.numba_kernel().evaluate(theta)
    assert lp_all == lp_plain
    np.testing.assert_array_equal(grad_all, grad_plain)


def test_compiled_and_numpy_paths_give_the_same_draws():
    from hamiltonia.testing import assert_paths_agree

    X, y = _data(n=40, d=3)
    assert_paths_agree(
        BNNClassifier(X, y, n_hidden=3), sampler="hmc", chains=2, warmup=0, draws=10,
        seed=3, step_size=0.05, n_steps=5,
    )  # fmt: skip


# ------------------------------------------------------------------ prediction and metrics
def _with_test(n=80, d=5, **kwargs):
    X, y = _data(n, d)
    return BNNClassifier(X[:60], y[:60], n_hidden=H, X_test=X[60:], y_test=y[60:], **kwargs)


def _good_weights(target, gain=8.0):
    """Hidden unit k copies feature k (k < C) and votes for class k: the label rule of
    :func:`_data` without its noise."""
    theta = np.zeros(target.dim)
    W, _, V, _ = target.unpack(theta)  # views into theta
    for k in range(target.n_classes):
        W[k, k] = 1.0
        V[k, k] = gain
    return theta


def test_predict_proba_is_the_model_average():
    target = _with_test()
    draws = _points(target, n=6).reshape(2, 3, target.dim)
    flat = draws.reshape(-1, target.dim)
    per_draw = []
    for theta in flat:
        W, a, V, b = target.unpack(theta)
        z = np.tanh(target.X_test @ W + a) @ V + b
        p = np.exp(z - z.max(axis=1, keepdims=True))
        per_draw.append(p / p.sum(axis=1, keepdims=True))
    per_draw = np.array(per_draw)
    proba = target.predict_proba(draws)
    assert proba.shape == (20, C)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(proba, per_draw.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(target.predict(draws), proba, rtol=0)
    np.testing.assert_allclose(target.predict_proba(draws, target.X_test[0]), proba[:1])
    # Importance weights: equal ones change nothing, a single finite one picks its draw.
    np.testing.assert_allclose(
        target.predict_proba(draws, log_weights=np.full((2, 3), -4.0)), proba, rtol=1e-12
    )
    lw = np.full((2, 3), -np.inf)
    lw[1, 0] = 0.0
    np.testing.assert_allclose(target.predict_proba(draws, log_weights=lw), per_draw[3])
    m = target.metrics(draws, log_weights=lw)
    p3 = per_draw[3][np.arange(20), target.y_test]
    np.testing.assert_allclose(m["nll"], -np.mean(np.log(p3)), rtol=1e-12)


def test_metrics_of_good_zero_and_random_weights():
    target = _with_test(n=400)
    y_test = target.y_test
    good = target.metrics(_good_weights(target))
    # The logits 8 tanh(x_k) rank the classes as the noiseless rule argmax_k x_k does.
    rule = np.mean(np.argmax(target.X_test[:, :C], axis=1) == y_test)
    assert good["accuracy"] == rule > 0.7 and good["nll"] < math.log(C)
    # Zero weights: every class 1/C, the prediction class 0 (argmax's first tie).
    zero = target.metrics(np.zeros((3, target.dim)))
    assert zero == pytest.approx({"accuracy": np.mean(y_test == 0), "nll": math.log(C)})
    rand = target.metrics(_points(target, n=20).reshape(4, 5, target.dim))
    assert 0.0 <= rand["accuracy"] <= 1.0 and np.isfinite(rand["nll"]) and rand["nll"] > 0
    assert target.test_metrics(_good_weights(target)) == good
    # The NLL is the model average's, not the average of each draw's NLL.
    draws = _points(target, n=4)
    proba = target.predict_proba(draws)
    nll = -np.mean(np.log(proba[np.arange(y_test.size), y_test]))
    np.testing.assert_allclose(target.metrics(draws)["nll"], nll, rtol=1e-12)


def test_nll_stays_finite_when_every_draw_rules_the_label_out():
    target = _with_test()
    draws = -np.stack([_good_weights(target, gain=1e4), _good_weights(target, gain=2e4)])
    proba = target.predict_proba(draws)
    assert np.any(proba[np.arange(20), target.y_test] == 0.0)  # underflows: log 0 = -inf
    m = target.metrics(draws)
    assert np.isfinite(m["nll"]) and m["nll"] > 100


def test_split_target_reports_the_base_metrics():
    target = _with_test()
    split = SplitTarget(target, 3)
    theta = _good_weights(target)
    assert split.metrics(theta) == target.metrics(theta)
    np.testing.assert_array_equal(split.predict_proba(theta), target.predict_proba(theta))


# ------------------------------------------------------------------ argument checks
def test_bad_inputs_are_refused_naming_the_argument():
    X, y = _data()
    with pytest.raises(ValueError, match="class labels"):
        BNNClassifier(X, y + 0.5)
    with pytest.raises(ValueError, match="class labels"):
        BNNClassifier(X, y - 1)
    with pytest.raises(ValueError, match="at least two classes"):
        BNNClassifier(X, np.zeros_like(y))
    with pytest.raises(ValueError, match=r"y must hold class labels in 0\.\.1"):
        BNNClassifier(X, y, n_classes=2)
    with pytest.raises(ValueError, match="n_classes"):
        BNNClassifier(X, y, n_classes=1)
    with pytest.raises(ValueError, match="n_hidden must be an integer"):
        BNNClassifier(X, y, n_hidden=0)
    with pytest.raises(ValueError, match="n_hidden must be an integer"):
        BNNClassifier(X, y, n_hidden=2.0)
    with pytest.raises(ValueError, match="prior_scale"):
        BNNClassifier(X, y, prior_scale=0.0)
    with pytest.raises(ValueError, match="feature_names"):
        BNNClassifier(X, y, feature_names=["a"])
    with pytest.raises(ValueError, match="class_names"):
        BNNClassifier(X, y, class_names=["a", "b"])
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        BNNClassifier(X[:, 0], y)
    with pytest.raises(ValueError, match="y must have shape"):
        BNNClassifier(X, y[:-1])
    with pytest.raises(ValueError, match="given together"):
        BNNClassifier(X, y, X_test=X)
    with pytest.raises(ValueError, match="X_test must have 5 columns"):
        BNNClassifier(X, y, X_test=X[:, :2], y_test=y)
    with pytest.raises(ValueError, match=r"y_test must hold class labels in 0\.\.2"):
        BNNClassifier(X, y, X_test=X, y_test=np.full_like(y, 3))
    target = BNNClassifier(X, y, n_hidden=H)
    with pytest.raises(ValueError, match=rf"x must have shape \(\.\.\., {target.dim}\)"):
        target.log_prob(np.zeros(3))
    with pytest.raises(ValueError, match="draws must have shape"):
        target.pointwise_log_likelihood(np.zeros(3))
    with pytest.raises(ValueError, match="X is required"):
        target.predict_proba(np.zeros(target.dim))
    with pytest.raises(ValueError, match="metrics need test data"):
        target.metrics(np.zeros(target.dim))
    target = _with_test()
    with pytest.raises(ValueError, match="X must have shape"):
        target.predict_proba(np.zeros(target.dim), X[:, :2])
    with pytest.raises(ValueError, match="log_weights"):
        target.metrics(np.zeros((2, target.dim)), log_weights=np.zeros(3))
    with pytest.raises(ValueError, match="n_splits"):
        SplitTarget(target, 61)


def test_max_hidden_keeps_the_dimension_within_the_limit():
    from hamiltonia._validation import MAX_TARGET_DIM

    for d, c in ((1, 2), (64, 10), (500, 3)):
        h = max_hidden(d, c)
        assert (d + 1 + c) * h + c <= MAX_TARGET_DIM < (d + 1 + c) * (h + 1) + c


# ------------------------------------------------------------------ the digits factory
@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"setting": "bogus"}, r"setting must be one of 'default', 'paper'"),
        ({"n_hidden": 0}, r"n_hidden must be an integer in \[1, "),
        ({"n_hidden": max_hidden(DIGITS_FEATURES, DIGITS_CLASSES) + 1}, "n_hidden"),
        ({"prior_scale": -1.0}, "prior_scale"),
        ({"test_fraction": 1.0}, r"test_fraction must lie in \[0, 1\)"),
        ({"test_fraction": "0.2"}, "test_fraction"),
        ({"split_seed": -1}, "split_seed"),
        ({"standardize": "yes"}, "standardize"),
    ],
)
def test_digits_refuses_bad_options_before_loading(monkeypatch, options, match):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)  # loading would fail
    with pytest.raises(ValueError, match=match):
        digits(**options)


def test_digits_without_scikit_learn_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)  # import raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'hamiltonia\[metrics\]'"):
        digits()


def test_stratified_split_keeps_the_class_proportions():
    y = np.repeat(np.arange(3), [10, 20, 31])
    train, test = stratified_split(y, 0.2, seed=5)
    assert np.bincount(y[test]).tolist() == [2, 4, 6]
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(y.size))
    assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
    again, _ = stratified_split(y, 0.2, seed=5)
    np.testing.assert_array_equal(train, again)
    assert not np.array_equal(stratified_split(y, 0.2, seed=6)[1], test)
    assert stratified_split(y, 0.0, seed=0)[1].size == 0
    with pytest.raises(ValueError, match="no training row of class 0"):
        stratified_split(np.array([0, 1, 1, 1]), 0.6, seed=0)


def test_digits_target():
    pytest.importorskip("sklearn")
    target = digits(n_hidden=3)
    assert target.dim == 64 * 3 + 3 + 3 * 10 + 10 == 75 * 3 + 10
    assert digits().dim == 760
    assert (target.n_obs, len(target.y_test), target.n_classes) == (1438, 359, 10)
    assert np.bincount(target.y_test).min() >= 34  # stratified: about 36 per digit
    np.testing.assert_allclose(target.X.mean(axis=0), 0.0, atol=1e-12)
    sd = target.X.std(axis=0)
    assert np.all((np.abs(sd - 1.0) < 1e-12) | (sd == 0.0))
    assert target.names[0] == "w_pixel_0_0_1" and target.names[-1] == "b_9"
    assert "digits" in target.description and target.setting == "default"
    assert digits(setting="paper").description.endswith("[setting: paper]")
    raw = digits(n_hidden=3, standardize=False, test_fraction=0.0)
    assert raw.n_obs == 1797 and raw.X_test is None and raw.X.max() == 16.0
    other = digits(n_hidden=3, split_seed=1)
    assert not np.array_equal(other.test_index, target.test_index)
    # The test rows get the training rows' scaling.
    np.testing.assert_allclose(
        target.X_test * target.feature_scale + target.feature_mean,
        raw.X[target.test_index],
        atol=1e-12,
    )
    # Zero weights predict uniformly: NLL = log 10.
    assert target.metrics(np.zeros(target.dim))["nll"] == pytest.approx(math.log(10))
    check_gradient(target, _points(target, n=1, scale=0.5))
