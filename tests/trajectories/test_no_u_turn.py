"""The no-U-turn policy: both paths agree, the tree is reversible, options are checked.

Moment recovery (Gaussians, banana, a 100-d Gaussian whose scales span three orders of
magnitude, the funnel) is in tests/statistical/test_recovery.py.
"""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.testing import assert_paths_agree
from hamiltonia.trajectories.no_u_turn import NoUTurn


class Constant:
    """A stand-in generator whose every uniform is ``u``: with ``u = 0`` each doubling goes
    backward and every merge takes the newer half's sample."""

    def __init__(self, u):
        self.u = u

    def random(self):
        return self.u


FIXED = {"step_size": 0.2, "adapt_step_size": False, "metric": "identity"}


@pytest.mark.parametrize(
    ("name", "options", "draws"),
    [
        ("gaussian-d10", {}, 300),
        ("funnel-d25", {"max_tree_depth": 6}, 300),
        ("banana", {}, 100),
        ("gaussian-d10", {"criterion": "numpyro"}, 300),
    ],
)
def test_both_paths_make_the_same_draws(name, options, draws):
    """Same seed, step size and metric: the same trees, the same draws, up to rounding (the
    compiled kernel sums in another order; on the banana a rounding difference flips a
    U-turn decision after about 120 draws, so it is compared over 100). The tree's
    statistics (depth, steps, gradients, divergences) agree exactly."""
    assert_paths_agree(name, "nuts", chains=2, warmup=0, draws=draws, seed=4, **FIXED, **options)


def test_the_tree_is_the_same_from_its_far_end():
    """Built backward from z0 with every merge taking the newer half, the sample is the far
    end z_e of the trajectory. Built from z_e with the momentum negated (backward from there
    is forward along the trajectory), the tree covers the same states, stops at the same
    depth after the same number of steps, and its sample is z0 with the momentum negated."""
    target = hm.targets.get("correlated-gaussian", dim=3, rho=0.5)
    smp = hm.samplers.build("nuts", target, step_size=0.1, metric="identity")
    q0 = np.array([[0.3, -0.2, 0.5]])
    p0 = np.array([[1.0, 0.4, -0.7]])
    start = smp.hamiltonian.evaluate(q0, p0)
    end, info = smp.trajectory.transition(smp, start, np.array([0.1]), [Constant(0.0)])
    assert not info["diverging"][0] and info["tree_depth"][0] >= 2
    back = smp.hamiltonian.evaluate(end.q, -end.p)
    again, info_back = smp.trajectory.transition(smp, back, np.array([0.1]), [Constant(0.0)])
    for stat in ("tree_depth", "n_steps"):
        assert info_back[stat][0] == info[stat][0]
    np.testing.assert_allclose(again.q, q0, atol=1e-12)
    np.testing.assert_allclose(again.p, -p0, atol=1e-12)


def test_statistics_follow_the_tree():
    result = hm.sample("gaussian-d10", "nuts", chains=2, warmup=200, draws=200, seed=1,
                       progress=False, max_tree_depth=4)  # fmt: skip
    depth, steps = result.stats["tree_depth"], result.stats["n_steps"]
    assert depth.max() <= 4 and depth.min() >= 0
    # A tree of depth j has 2^j - 1 steps, plus those of an abandoned last subtree.
    assert np.all(steps >= 2**depth - 1) and np.all(steps <= 2 ** (depth + 1) - 1)
    np.testing.assert_array_equal(result.stats["n_grad"], steps)  # one gradient a leapfrog step


def test_the_warm_up_windows_are_set_by_name():
    sampler = hm.samplers.build("nuts", hm.targets.get("banana"), adapt_windows=(30, 10, 20))
    (windows,) = [t for t in sampler.tuners if type(t).__name__ == "WindowedMetric"]
    assert (windows.initial_buffer, windows.window, windows.terminal_buffer) == (30, 10, 20)


def test_the_criterion_is_checked():
    with pytest.raises(ValueError, match=r"criterion must be one of 'stan', 'numpyro'"):
        hm.samplers.build("nuts", hm.targets.get("banana"), criterion="pyro")


@pytest.mark.parametrize("depth", [0, 21, 2.5, "10"])
def test_max_tree_depth_is_checked(depth):
    with pytest.raises(ValueError, match=r"max_tree_depth must be an integer"):
        hm.samplers.build("nuts", hm.targets.get("banana"), max_tree_depth=depth)


def test_a_no_u_turn_tree_needs_a_full_refresh():
    target = hm.targets.get("banana")
    with pytest.raises(ValueError, match=r"NoUTurn .* needs FullRefresh, not PartialRefresh"):
        hm.HamiltonianSampler(
            hm.EuclideanHamiltonian(target), NoUTurn(), refresh=hm.PartialRefresh(0.5)
        )


def test_agrees_with_numpyro_nuts():
    """Against NumPyro's NUTS, each with its own warm-up, on a 10-d Gaussian of known moments:
    both recover the moments (z-scores on the MCSE) and their ESS per gradient are within a
    factor 1.5 (the tree is the same algorithm: at a fixed step size and metric both take the
    same number of steps; what differs is the adapted step size and metric)."""
    pytest.importorskip("numpyro")
    from hamiltonia import diagnostics
    from hamiltonia.bench.peers import numpyro_runner
    from hamiltonia.testing import assert_moments_recovered

    target = hm.targets.get("gaussian-d10")
    ours = hm.sample(target, "nuts", chains=4, warmup=1000, draws=1000, seed=0, progress=False)
    theirs = numpyro_runner.run(target, sampler="nuts", chains=4, warmup=1000, draws=1000,
                                seed=0, variant="sequential")  # fmt: skip
    assert_moments_recovered(ours, target.exact_moments)
    peer = hm.Result(draws=theirs["draws"], stats={}, names=target.names)
    assert_moments_recovered(peer, target.exact_moments)
    per_grad = [
        diagnostics.ess(ours.draws).min() / ours.n_grad,
        diagnostics.ess(peer.draws).min() / theirs["n_grad"],
    ]
    assert 1 / 1.5 < per_grad[0] / per_grad[1] < 1.5, per_grad


@pytest.mark.parametrize("step_size", [0.45, 0.3])
def test_the_same_trees_as_numpyro_at_a_fixed_step_size(step_size):
    """A 100-d standard normal, identity metric, fixed step size: the trees of NumPyro's NUTS
    and ours take the same number of steps (their draws differ: other random numbers)."""
    pytest.importorskip("numpyro")
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    from hamiltonia.targets.gaussian import DiagonalGaussian

    dim, draws = 100, 1000
    kernel = NUTS(potential_fn=lambda x: 0.5 * jnp.sum(x**2), step_size=step_size,
                  adapt_step_size=False, adapt_mass_matrix=False)  # fmt: skip
    mcmc = MCMC(kernel, num_warmup=0, num_samples=draws, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), init_params=jnp.zeros(dim), extra_fields=("num_steps",))
    theirs = np.asarray(mcmc.get_extra_fields()["num_steps"])
    ours = hm.sample(DiagonalGaussian(dim, scales=np.ones(dim)), "nuts", chains=1, warmup=0,
                     draws=draws, seed=0, progress=False, step_size=step_size,
                     adapt_step_size=False, metric="identity", initial=np.zeros(dim))  # fmt: skip
    assert np.bincount(ours.stats["n_steps"].ravel()).argmax() == np.bincount(theirs).argmax()
    assert abs(ours.stats["n_steps"].mean() - theirs.mean()) < 0.01 * theirs.mean()
