"""Warm-up tuners: dual averaging and windowed metric adaptation."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import DenseMetric, DiagonalMetric
from hamiltonia.runner.run import make_rngs
from hamiltonia.state import ChainState
from hamiltonia.tuners.adaptation import DualAveraging, WindowedMetric, metric_windows


def test_stan_windows():
    assert metric_windows(1000) == [(75, 100), (100, 150), (150, 250), (250, 450), (450, 950)]
    assert metric_windows(500) == [(75, 100), (100, 150), (150, 250), (250, 450)]
    # The first window keeps its base size; the next one takes the rest (Stan's rule).
    assert metric_windows(199) == [(75, 100), (100, 149)]
    assert metric_windows(150) == [(75, 100)]
    # Short warm-up: Stan's 15 % / 75 % / 10 % fallback.
    assert metric_windows(100) == [(15, 90)]
    assert metric_windows(10) == []


def test_dual_averaging_formulas():
    """One update by hand (Hoffman and Gelman 2014, eq. 2.36 of the thesis)."""
    tuner = DualAveraging(0.8, find_initial=False, initial_step_size=0.5)
    chain = ChainState(phase=None, step_size=np.array([1.0, 1.0]))
    tuner.start(None, chain, 100, rngs=None)
    info = {"acceptance_rate": np.array([0.3, 1.0]), "diverging": np.array([False, True])}
    tuner.update(None, chain, info, 0)
    mu = np.log(10 * 0.5)
    h_bar = (1 / 11) * (0.8 - np.array([0.3, 0.0]))  # the divergent chain counts as alpha = 0
    log_eps = mu - 1 / 0.05 * h_bar
    np.testing.assert_allclose(chain.step_size, np.exp(log_eps))
    tuner.finalize(None, chain)
    np.testing.assert_allclose(chain.step_size, np.exp(log_eps))  # m = 1: eta = 1


@pytest.mark.parametrize("goal", [0.6, 0.9])
def test_dual_averaging_drives_the_acceptance_to_its_target(goal):
    """Dual averaging drives the average of (target - acceptance) to zero during warm-up: over
    the second half of warm-up the mean acceptance statistic matches the target within its
    Monte Carlo error."""
    target = hm.targets.get("gaussian-d10")
    sampler = hm.samplers.build("hmc", target, target_accept=goal)
    rngs, _ = make_rngs(0, 4)
    chain = sampler.init(np.zeros((4, target.dim)) + 0.1)
    (tuner,) = sampler.tuners
    n_warmup = 2000
    tuner.start(sampler, chain, n_warmup, rngs)
    rates = []
    for it in range(n_warmup):
        chain, info = sampler.step(chain, rngs)
        tuner.update(sampler, chain, info, it)
        rates.append(info["acceptance_rate"])
    late = np.array(rates[n_warmup // 2 :]).T  # (chains, iterations)
    se = late.std() / np.sqrt(hm.diagnostics.ess(late, "mean"))
    assert abs(late.mean() - goal) < 4 * se


def test_end_window_regularises_like_stan():
    target = hm.targets.get("gaussian", dim=3)
    sampler = hm.samplers.build("hmc", target, metric="diagonal", step_size=0.1)
    tuner = sampler.tuners[-1]
    assert isinstance(tuner, WindowedMetric)
    tuner.start(sampler, None, 1000, rngs=None)
    draws = np.random.default_rng(0).normal(size=(40, 3)) * [1.0, 2.0, 3.0]
    for i, row in enumerate(draws.reshape(10, 4, 3)):
        tuner.observe(row, 80 + i)
    tuner.end_window(sampler, None)
    n = 40
    expected = n / (n + 5) * draws.var(axis=0, ddof=1) + 1e-3 * 5 / (n + 5)
    metric = sampler.hamiltonian.metric
    assert isinstance(metric, DiagonalMetric)
    np.testing.assert_allclose(metric.inverse_mass, expected)


@pytest.mark.parametrize(("kind", "cls"), [("diagonal", DiagonalMetric), ("dense", DenseMetric)])
def test_adapted_metric_matches_the_posterior_covariance(kind, cls):
    target = hm.targets.get("correlated-gaussian", dim=3, rho=0.8)
    sampler = hm.samplers.build("hmc", target, metric=kind, n_steps=10)
    hm.sample(target, sampler, chains=4, warmup=1000, draws=10, seed=3, progress=False)
    metric = sampler.hamiltonian.metric
    assert isinstance(metric, cls)
    estimate = np.atleast_2d(metric.inverse_mass)
    truth = target.covariance if kind == "dense" else np.diag(target.covariance)
    # The last window pools 4 x 500 draws. An entry of a sample covariance has variance
    # (s_ii s_jj + s_ij^2) / ess; with an ess of at least 200 (HMC here gives more), 4 standard
    # errors bound every entry.
    diag = np.diag(target.covariance)
    se = np.sqrt((np.outer(diag, diag) + target.covariance**2) / 200)
    if kind == "diagonal":
        se = np.diag(se)
    assert np.all(np.abs(np.atleast_2d(estimate) - np.atleast_2d(truth)) < 4 * np.atleast_2d(se))


def test_bad_kind():
    with pytest.raises(ValueError, match="kind"):
        WindowedMetric("full")


def _warm_up(sampler, chain, rngs, iterations):
    for it in iterations:
        chain, info = sampler.step(chain, rngs)
        for tuner in sampler.tuners:
            tuner.update(sampler, chain, info, it)
    return chain


@pytest.mark.parametrize("kind", ["diagonal", "dense"])
@pytest.mark.parametrize("stop", [0, 20, 90])
def test_the_tuners_warmup_state_goes_through_json_and_continues_exactly(kind, stop):
    """Stopped after ``stop`` warm-up iterations (right after the step-size search, in the
    initial buffer, inside the window), the tuners' state written as JSON and put into a
    sampler built anew continues to the same step sizes, metric and positions as the tuners
    that never stopped."""
    import json

    from hamiltonia.runner import resume_state
    from hamiltonia.runner.run import _json_safe

    target = hm.targets.get("correlated-gaussian", dim=3, rho=0.8)
    n_warmup, chains = 160, 2  # one window, [24, 144): 75 % of a short warm-up

    def build():
        return hm.samplers.build("hmc", target, metric=kind, n_steps=5)

    sampler, (rngs, _) = build(), make_rngs(1, chains)
    chain = sampler.init(np.full((chains, 3), 0.3))
    for tuner in sampler.tuners:
        tuner.start(sampler, chain, n_warmup, rngs)
    chain = _warm_up(sampler, chain, rngs, range(stop))
    saved = json.loads(json.dumps(_json_safe({
        "chains": resume_state.chain_state(chain, rngs, sampler),
        "warmup": resume_state.warmup_state(sampler, stop, n_warmup),
    })))  # fmt: skip
    again = build()
    twins = [np.random.default_rng() for _ in range(chains)]
    resumed = resume_state.restore(again, saved["chains"], twins)
    for tuner, entry in zip(again.tuners, saved["warmup"]["tuners"], strict=True):
        state = tuner.check_warmup_state(entry["state"], chains=chains, dim=3,
                                         n_warmup=n_warmup, done=stop)  # fmt: skip
        tuner.restore_warmup_state(again, state, n_warmup, twins)
    chain = _warm_up(sampler, chain, rngs, range(stop, n_warmup))
    resumed = _warm_up(again, resumed, twins, range(stop, n_warmup))
    for a, b in ((sampler, chain), (again, resumed)):
        for tuner in a.tuners:
            tuner.finalize(a, b)
    np.testing.assert_array_equal(resumed.step_size, chain.step_size)
    np.testing.assert_array_equal(resumed.phase.q, chain.phase.q)
    np.testing.assert_array_equal(
        again.hamiltonian.metric.inverse_mass, sampler.hamiltonian.metric.inverse_mass
    )


def test_a_tuner_state_from_a_file_is_checked():
    dual = DualAveraging(find_initial=False)
    chain = ChainState(phase=None, step_size=np.array([0.5, 0.5]))
    dual.start(None, chain, 100, rngs=None)
    state = {k: v.tolist() if hasattr(v, "tolist") else v for k, v in dual.warmup_state().items()}
    checked = dual.check_warmup_state(state, chains=2, dim=3, n_warmup=100, done=0)
    np.testing.assert_array_equal(checked["mu"], np.log(10 * chain.step_size))
    for field, value, message in [
        ("mu", [1.0], r"mu has shape \(1,\), expected \(2,\)"),
        ("h_bar", [float("inf"), 0.0], "h_bar holds non-finite"),
        ("m", [1.0, 0.0], r"m must count updates: whole numbers in \[0, 0\]"),
        ("log_eps_bar", "abc", "log_eps_bar is not an array of numbers"),
    ]:
        with pytest.raises(ValueError, match=message):
            dual.check_warmup_state({**state, field: value}, chains=2, dim=3, n_warmup=100,
                                    done=0)  # fmt: skip
    windowed = WindowedMetric()
    windowed.start(hm.samplers.build("hmc", hm.targets.get("banana"), metric="diagonal"),
                   None, 200, rngs=None)  # fmt: skip
    state = {"windows": [list(w) for w in metric_windows(200)], "buffer": [[[0.0] * 3] * 2] * 5}
    assert windowed.check_warmup_state(state, chains=2, dim=3, n_warmup=200,
                                       done=80)["buffer"].shape == (5, 2, 3)  # fmt: skip
    with pytest.raises(ValueError, match=r"buffer holds 5 positions, expected 0"):
        windowed.check_warmup_state(state, chains=2, dim=3, n_warmup=200, done=60)
    with pytest.raises(ValueError, match=r"buffer has shape \(5, 2, 3\), expected \(5, 2, 4\)"):
        windowed.check_warmup_state(state, chains=2, dim=4, n_warmup=200, done=80)
    with pytest.raises(ValueError, match="are not the schedule"):
        windowed.check_warmup_state(state, chains=2, dim=3, n_warmup=300, done=80)
