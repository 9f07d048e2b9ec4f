"""The resonance check of diagnose(): a fixed trajectory length that ends each trajectory
near its start, or near its mirror image, along some combination of the parameters is named
with the cure; random lengths, a jittered step size and NUTS are not judged."""

import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.diagnostics.checks import SamplingWarning, diagnose
from hamiltonia.diagnostics.resonance import find_resonance, fixed_length
from hamiltonia.testing.targets import GaussianTarget

#: x1 of unit scale, x2 three times wider: a step size set for x1's period leaves x2 alone.
TARGET = GaussianTarget(np.zeros(2), np.diag([1.0, 9.0]))
L = 10


def _step_size(turns: float) -> float:
    """The step size whose L leapfrog steps turn x1 by ``turns`` half periods."""
    return float(np.sqrt(2.0 * (1.0 - np.cos(turns * np.pi / L))))


def _run(turns: float, **options) -> hm.Result:
    options.setdefault("n_steps_jitter", 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        return hm.sample(TARGET, "hmc", n_steps=L, step_size=_step_size(turns), chains=2,
                         warmup=0, draws=200, seed=1, progress=False, **options)  # fmt: skip


def _resonance(result):
    return [p for p in diagnose(result) if p.check == "resonance"]


def test_a_trajectory_near_a_half_period_is_named_with_the_cure():
    """x1 flips to the far side of the mean every iteration: its square barely moves."""
    run = _run(0.97)
    (problem,) = _resonance(run)
    assert problem.where == ("x1",) and problem.threshold == 0.9 and problem.value >= 0.9
    assert "fixed trajectory length of 10 steps resonates in chain 0, chain 1" in problem.message
    assert "along x1 the trajectories end near the mirror image of their start" in problem.message
    assert "n_steps_jitter=0.5 or step_size_jitter=0.2" in problem.message
    assert "nuts" in problem.message


def test_a_trajectory_near_a_whole_period_is_named():
    (problem,) = _resonance(_run(1.97))
    assert problem.where == ("x1",) and "end near where they started" in problem.message


@pytest.mark.parametrize("turns", [1.0, 2.0])
def test_an_exact_period_is_named_though_the_draws_barely_vary(turns):
    """Exactly a half period (x1 alternates in sign, its square constant) or a whole one
    (x1 constant in each chain, up to rounding)."""
    (problem,) = _resonance(_run(turns))
    assert problem.where == ("x1",) and problem.value == 1.0


def test_sample_warns_about_it():
    with pytest.warns(SamplingWarning, match="resonates"):
        hm.sample(TARGET, "hmc", n_steps=L, step_size=_step_size(0.97), n_steps_jitter=0.0,
                  chains=2, warmup=0, draws=200, seed=1, progress=False)  # fmt: skip


@pytest.mark.parametrize("jitter", [{"n_steps_jitter": 0.5}, {"step_size_jitter": 0.2}, {}])
def test_a_random_length_or_step_size_is_not_judged(jitter):
    """The same trajectory drawn at random (the recipe's default included) breaks the
    resonance, and such a run is not judged at all."""
    run = _run(0.97, **jitter) if jitter else _run(0.97, n_steps_jitter=None)
    assert fixed_length(run) is None and _resonance(run) == []


def test_nuts_and_a_single_step_are_not_judged():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        nuts = hm.sample(TARGET, chains=2, warmup=100, draws=200, seed=1, progress=False)
        mala = hm.sample(TARGET, "mala", chains=2, warmup=100, draws=200, seed=1, progress=False)
    assert fixed_length(nuts) is None and fixed_length(mala) is None


def test_a_quarter_period_is_healthy():
    run = _run(0.5)
    assert fixed_length(run) == L and _resonance(run) == []


# ---------------------------------------------------------------- draws made to order

CHAINS, N = 4, 1000


def _result(draws, n_steps=15, **attrs) -> hm.Result:
    chains, n, dim = draws.shape
    steps = np.full((chains, n), n_steps) if np.isscalar(n_steps) else n_steps
    return hm.Result(
        draws=draws,
        stats={"n_steps": steps, "step_size": np.full((chains, n), 0.3)},
        names=tuple(f"x{i}" for i in range(dim)),
        attrs=attrs,
    )


def _hidden(rho=0.995, n=N, seed=0) -> np.ndarray:
    """``n`` iid normal draws per chain but for one direction, (x0 + x1 + x2 + x3) / 2, an
    autoregression of coefficient ``rho`` in chain 2: diluted in each coordinate."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(CHAINS, n, 6))
    slow = np.empty(n)
    slow[0] = rng.normal()
    for t in range(1, n):
        slow[t] = rho * slow[t - 1] + np.sqrt(1 - rho**2) * rng.normal()
    z[2, :, 0] = slow
    basis = np.linalg.qr(np.c_[[0.5, 0.5, 0.5, 0.5, 0, 0], rng.normal(size=(6, 5))])[0]
    basis[:, 0] *= np.sign(basis[0, 0])
    return z @ basis.T


def test_a_combination_hidden_in_the_coordinates_is_found_and_named():
    result = _result(_hidden())
    found = find_resonance(result, 100.0)
    assert found is not None and found.chains == (2,) and not found.square
    assert sorted(found.parameters) == [0, 1, 2, 3] and found.rho > 0.98
    (problem,) = _resonance(result)
    assert "along some combination of x" in problem.message and set(problem.where) == {
        "x0", "x1", "x2", "x3"}  # fmt: skip


def test_iid_draws_of_a_fixed_length_run_have_no_problem():
    rng = np.random.default_rng(1)
    assert _resonance(_result(rng.normal(size=(CHAINS, N, 6)))) == []


def test_a_slow_combination_with_enough_draws_is_not_named():
    """An autocorrelation of 0.95 over 1000 draws leaves about 26 effective draws per chain
    (named); over 20,000, about 510 (not)."""
    assert find_resonance(_result(_hidden(0.95)), 100.0) is not None
    assert find_resonance(_result(_hidden(0.95, n=20_000)), 100.0) is None


def test_random_lengths_or_a_jittered_step_size_are_not_judged():
    draws = _hidden()
    steps = np.random.default_rng(0).integers(8, 16, size=(CHAINS, N))
    assert find_resonance(_result(draws, n_steps=steps), 100.0) is None
    assert find_resonance(_result(draws, step_size_jitter=0.1), 100.0) is None
    assert find_resonance(_result(draws, options={"step_size_jitter": 0.2}), 100.0) is None
    assert find_resonance(_result(draws, max_tree_depth=10), 100.0) is None
    assert find_resonance(_result(draws, n_steps=1), 100.0) is None
    assert find_resonance(_result(draws[:, :50]), 100.0) is None  # too few draws to judge
    assert find_resonance(_result(draws, step_size_jitter=0.0), 100.0) is not None
