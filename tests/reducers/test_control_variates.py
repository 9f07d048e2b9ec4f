"""Zero-variance control variates (hamiltonia.reducers.control_variates)."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.reducers.control_variates import control_variate_features, controlled_values
from hamiltonia.testing import Z_THRESHOLD, assert_paths_agree


def test_first_order_control_variates_make_a_gaussian_mean_exact():
    """For N(mu, Sigma), x = mu + Sigma grad log pi(x) exactly: the regression of x on the
    gradient leaves no residual and the estimate is mu up to floating point, whatever the
    draws (the plain mean of the same run is off by its Monte Carlo error)."""
    target = hm.targets.get("gaussian", dim=5)
    run = hm.sample(target, "hmc", chains=2, warmup=200, draws=300, seed=4, progress=False)
    table = run.control_variate_summary()
    scale = np.sqrt(target.exact_moments.var)
    np.testing.assert_allclose(table["mean"], target.exact_moments.mean, rtol=0,
                               atol=1e-12 * scale.max())  # fmt: skip
    assert np.all(np.abs(table["plain_mean"] - target.exact_moments.mean) > 1e-6)
    assert np.all(table["mcse"] < 1e-12 * scale)


@pytest.mark.parametrize("order", [1, 2])
def test_the_control_variates_have_mean_zero_under_the_target(order):
    """E_pi[h] = 0 (the divergence theorem): with exact independent draws of a correlated
    Gaussian, each feature's mean is within Z_THRESHOLD standard errors of 0."""
    rng = np.random.default_rng(7)
    d = 3
    a = rng.normal(size=(d, d))
    cov = a @ a.T + d * np.eye(d)
    mu = rng.normal(size=d)
    x = rng.multivariate_normal(mu, cov, size=(1, 20000))
    grads = -(x - mu) @ np.linalg.inv(cov)
    h = control_variate_features(x, grads, order)[0]
    z = h.mean(axis=0) / (h.std(axis=0, ddof=1) / np.sqrt(h.shape[0]))
    assert h.shape[1] == (d if order == 1 else d + d * (d + 1) // 2)
    assert np.all(np.abs(z) < Z_THRESHOLD), z


def test_the_controlled_values_keep_the_target_mean_and_lower_the_variance():
    rng = np.random.default_rng(1)
    x = rng.normal(1.0, 2.0, size=(2, 5000, 1))
    grads = -(x - 1.0) / 4.0
    f = np.concatenate([x, x**2], axis=-1)
    second = controlled_values(f, x, grads, order=2)
    # x and x^2 are polynomials of degree <= 2: exact at second order.
    np.testing.assert_allclose(second.mean(axis=(0, 1)), [1.0, 5.0], rtol=0, atol=1e-9)
    first = controlled_values(f, x, grads, order=1)
    assert first[..., 1].var() < f[..., 1].var()


@pytest.mark.parametrize("sampler", ["a-s2hmc", "s2hmc", "a-hmc"])
def test_control_variates_with_pairs_and_weights_recover_banana_means(sampler):
    """Over antithetic pairs and importance weights: the controlled estimate of banana's
    mean within its standard error."""
    target = hm.targets.get("banana")
    run = hm.sample(target, sampler, chains=4, warmup=500, draws=3000, seed=8,
                    progress=False)  # fmt: skip
    table = run.control_variate_summary(order=2)
    z = (table["mean"].to_numpy() - target.exact_moments.mean) / table["mcse"].to_numpy()
    assert np.all(np.abs(z) < Z_THRESHOLD), z
    # With pairs each standard error comes from 16 batch means (diagnostics.pair_error), so
    # their ratio is noisier than with independent chains; order 2 lowers the variance of
    # banana's w2 series by 2-4 % only, and its reduction may read a little below 1.
    assert np.all(table["reduction"] > (0.8 if run.pairs else 1.0)), table["reduction"]


def test_control_variate_inputs_are_checked():
    x = np.zeros((1, 3, 2))
    with pytest.raises(ValueError, match="order must be 1 or 2, got 3"):
        control_variate_features(x, x, 3)
    with pytest.raises(ValueError, match="differ in shape"):
        control_variate_features(x, np.zeros((1, 3, 1)))


@pytest.mark.parametrize("compiled", [False, True])
def test_the_run_keeps_the_gradients_its_sampler_computed(compiled):
    """With control_variates=, each draw's gradient is the target's gradient there, on both
    paths; the summary then needs no gradient evaluation (it gives the table a recomputed
    gradient gives)."""
    target = hm.targets.get("banana")
    run = hm.sample(target, "hmc", chains=2, warmup=100, draws=200, seed=3, progress=False,
                    compiled=compiled, n_steps=5, control_variates=2)  # fmt: skip
    assert run.attrs["compiled"] is compiled
    assert run.gradients.shape == run.draws.shape
    _, expected = target.log_prob_and_grad(run.draws.reshape(-1, 2))
    np.testing.assert_allclose(run.gradients.reshape(-1, 2), expected, rtol=1e-12, atol=1e-12)
    kept = run.control_variate_summary()
    recomputed = run.control_variate_summary(2, grads=expected.reshape(run.draws.shape))
    np.testing.assert_allclose(kept["mean"], recomputed["mean"], rtol=1e-10)
    run.get_target = None  # the summary must not need the target
    run.control_variate_summary()


def test_both_paths_keep_the_same_gradients():
    # A fixed step size: the paths' warm-ups differ (the compiled one tunes in chunks).
    numpy_run, _ = assert_paths_agree("banana", "hmc", chains=2, warmup=0, draws=100, seed=9,
                                      n_steps=5, step_size=0.3, control_variates=1)  # fmt: skip
    assert numpy_run.gradients is not None  # compared on both paths


def test_kept_gradients_survive_the_file_and_a_resume(tmp_path, monkeypatch):
    from tests.interrupting import interrupted

    kwargs = dict(chains=2, warmup=100, draws=2000, seed=6, progress=False, n_steps=5,
                  control_variates=1)  # fmt: skip
    full = hm.sample("banana", "hmc", **kwargs)
    path = tmp_path / "run.nc"
    with pytest.warns(RuntimeWarning, match="interrupted"):
        part = interrupted(monkeypatch, 2, lambda: hm.sample(
            "banana", "hmc", output=path, checkpoint_seconds=0.0, **kwargs))  # fmt: skip
    assert 0 < part.n_draws < 2000
    np.testing.assert_array_equal(hm.load(path).gradients, part.gradients)
    resumed = hm.resume(path, progress=False)
    np.testing.assert_array_equal(resumed.gradients, full.gradients)
    loaded = hm.load(path)
    np.testing.assert_array_equal(loaded.gradients, full.gradients)
    assert loaded.attrs["control_variates"] == 1
    assert set(loaded.stats) == set(full.stats)


def test_control_variates_option_is_checked():
    with pytest.raises(ValueError, match="control_variates must be False, 1 or 2, got 3"):
        hm.sample("banana", "hmc", control_variates=3, progress=False)
    with pytest.raises(ValueError, match="control_variates must be False, 1 or 2, got 'yes'"):
        hm.sample("banana", "nuts", control_variates="yes", progress=False)


def test_the_cli_prints_the_control_variate_estimates(capsys):
    from hamiltonia.cli import main

    code = main(["sample", "gaussian-d10", "--draws", "300", "--warmup", "200", "--seed", "1",
                 "--option", "control_variates=1", "--no-progress"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "control variates (order 1)" in out
    assert "median reduction" in out
