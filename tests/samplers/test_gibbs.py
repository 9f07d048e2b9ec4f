"""HMC within Gibbs on a hierarchical model with known marginals."""

import numpy as np
import pytest
from scipy import special

import hamiltonia as hm
from hamiltonia.hamiltonians.conditional import ConditionalHamiltonian
from hamiltonia.samplers.gibbs import GibbsWithin
from hamiltonia.targets.base import ExactMoments
from hamiltonia.testing import assert_moments_recovered


class HierarchicalNormal(hm.Target):
    """w_i ~ N(0, 1/alpha), i = 1..k, alpha ~ Gamma(a, b); position (w, log alpha).

    With no data the marginals are known: alpha ~ Gamma(a, b), so log alpha has mean
    digamma(a) - log(b) and variance trigamma(a); each w_i is Student-t with 2a degrees of
    freedom and variance b / (a - 1). The full conditional of alpha is
    Gamma(a + k/2, b + sum(w^2)/2), used by the Gibbs step."""

    gibbs_every = 5

    def __init__(self, k=3, a=3.0, b=2.0):
        super().__init__(k + 1, [f"w{i + 1}" for i in range(k)] + ["log_alpha"])
        self.k, self.a, self.b = k, a, b
        self.gibbs_indices = [k]

    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        w, la = x[..., : self.k], x[..., self.k]
        alpha = np.exp(la)
        ss = np.sum(w * w, axis=-1)
        lp = 0.5 * self.k * la - 0.5 * alpha * ss + self.a * la - self.b * alpha
        gw = -alpha[..., None] * w
        gla = 0.5 * self.k - 0.5 * alpha * ss + self.a - self.b * alpha
        return lp, np.concatenate([gw, gla[..., None]], axis=-1)

    def gibbs_update(self, q, rngs):
        ss = np.sum(q[:, : self.k] ** 2, axis=-1)
        for c, rng in enumerate(rngs):
            q[c, self.k] = np.log(rng.gamma(self.a + 0.5 * self.k, 1.0 / (self.b + 0.5 * ss[c])))
        return q

    @property
    def exact_moments(self):
        var_w = self.b / (self.a - 1)
        mean = np.r_[np.zeros(self.k), special.digamma(self.a) - np.log(self.b)]
        var = np.r_[np.full(self.k, var_w), special.polygamma(1, self.a)]
        return ExactMoments(mean, var)


def test_build_composes_gibbs_for_a_target_that_asks():
    target = HierarchicalNormal()
    sampler = hm.samplers.build("hmc", target, n_steps=10)
    assert isinstance(sampler, GibbsWithin)
    assert isinstance(sampler.hamiltonian, ConditionalHamiltonian)
    assert sampler.every == 5


@pytest.mark.parametrize(("sampler", "options"), [("hmc", {}), ("mhmc", {"g": 1.0})])
def test_hmc_within_gibbs_recovers_the_marginals(sampler, options):
    # w has variance 1 and heavy tails (t with 6 degrees of freedom); log alpha is moved only
    # by the Gibbs step. A magnetic field over every coordinate, restricted to the free block
    # (it would rotate momentum into log alpha and bias every variance by -10 to -60 %).
    target = HierarchicalNormal()
    run = hm.sample(
        target,
        sampler,
        chains=4,
        warmup=1000,
        draws=20000,
        seed=3,
        progress=False,
        n_steps=10,
        step_size_jitter=0.5,
        **options,
    )
    assert run.attrs["compiled"] is False
    assert_moments_recovered(run, target.exact_moments)


def test_hmc_alone_never_moves_the_fixed_block():
    target = HierarchicalNormal()
    ham = ConditionalHamiltonian(hm.EuclideanHamiltonian(target), target.gibbs_indices)
    sampler = hm.HamiltonianSampler(ham, hm.StaticLength(5), step_size=0.3)
    run = hm.sample(
        target,
        sampler,
        chains=2,
        warmup=0,
        draws=50,
        seed=0,
        progress=False,
        initial=np.array([0.1, 0.2, 0.3, 0.5]),
    )
    np.testing.assert_array_equal(run.draws[..., 3], 0.5)
    assert np.ptp(run.draws[..., 0]) > 0


@pytest.mark.parametrize("sampler", ["mhmc", "qimhmc"])
def test_a_magnetic_sampler_moves_the_gibbs_block_only_at_gibbs_steps(sampler):
    target = HierarchicalNormal()
    built = hm.samplers.build(sampler, target, g=1.0)
    field = built.inner.integrator.structure.field
    assert not field[3].any() and not field[:, 3].any()  # the field leaves log alpha alone
    assert field[0, 1] == 1.0
    run = hm.sample(target, built, chains=2, warmup=50, draws=400, seed=1, progress=False)
    for chain in run.draws[..., 3]:
        changed = np.flatnonzero(np.diff(chain))
        assert len(set(changed % target.gibbs_every)) == 1  # one Gibbs step in five


@pytest.mark.parametrize("sampler", ["s2hmc", "shmc", "smhmc"])
def test_a_weighted_sampler_is_refused_inside_gibbs(sampler):
    with pytest.raises(ValueError, match="importance weights"):
        hm.samplers.build(sampler, HierarchicalNormal())


def test_dense_metric_refused():
    target = HierarchicalNormal()
    with pytest.raises(ValueError, match="identity or diagonal"):
        ConditionalHamiltonian(hm.EuclideanHamiltonian(target, np.eye(4)), [3])
