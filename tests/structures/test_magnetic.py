"""The magnetic structure: its exact drift, its field's sign, its fields and their checks.

The integrator properties (reversibility under (p, G) -> (-p, -G), volume preservation,
order 2) are checked with every other integrator in ``tests/integrators``.
"""

import numpy as np
import pytest
import scipy.linalg

import hamiltonia as hm
from hamiltonia.hamiltonians import EuclideanHamiltonian, RandomMassHamiltonian
from hamiltonia.integrators import Leapfrog
from hamiltonia.structures.magnetic import (
    FIELD_AUX,
    MagneticStructure,
    check_field,
    magnetic_pair_update,
)
from hamiltonia.testing import assert_paths_agree

DIM = 5
FIELDS = {
    "research": hm.research_field(DIM, 0.7),  # rank two: singular
    "random": hm.random_field(DIM, 0.5, seed=3),  # odd dimension: rank four, singular too
    "zero": np.zeros((DIM, DIM)),
}
HAMILTONIANS = {
    "identity": lambda t: EuclideanHamiltonian(t),
    "diagonal": lambda t: EuclideanHamiltonian(t, np.linspace(0.5, 2.0, DIM)),
    "dense": lambda t: EuclideanHamiltonian(t, np.eye(DIM) + 0.3 * np.ones((DIM, DIM)) / DIM),
    "random-mass": lambda t: RandomMassHamiltonian(t, 0.5),
}


def _exact_drift(G, inverse_mass, q, p, h):
    """The flow of the kinetic energy under J_G from scipy's expm: p(h) = e^{hGM^-1} p and
    q(h) = q + M^-1 (top-right block of expm([[h G M^-1, h I], [0, 0]])) p."""
    X = h * G @ inverse_mass
    augmented = scipy.linalg.expm(np.block([[X, h * np.eye(DIM)], [np.zeros((DIM, 2 * DIM))]]))
    return q + inverse_mass @ augmented[:DIM, DIM:] @ p, scipy.linalg.expm(X) @ p


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("kind", sorted(HAMILTONIANS))
def test_drift_is_the_exact_flow_for_either_sign_and_any_time(field, kind):
    """Against expm of the augmented matrix (exact for a singular G, spec seed000_004
    §1.3), for per-chain times of both signs, both signs of G and every kinetic energy."""
    G = FIELDS[field]
    ham = HAMILTONIANS[kind](hm.targets.get("gaussian", dim=DIM))
    rng = np.random.default_rng(0)
    state = ham.evaluate(rng.normal(size=(4, DIM)), rng.normal(size=(4, DIM)))
    state = ham.update_auxiliary(state, [np.random.default_rng(c) for c in range(4)])
    aux = {**state.aux, FIELD_AUX: np.array([[0.0], [1.0], [0.0], [1.0]])}
    h = np.array([[0.3], [-0.7], [1.9], [1e-9]])
    q1, p1 = MagneticStructure(G).drift(ham, state.q, state.p, h, aux)
    per_chain = ham.inverse_mass_diagonal(aux)
    for c in range(4):
        sign = 1.0 - 2.0 * aux[FIELD_AUX][c, 0]
        inverse_mass = (
            np.diag(per_chain[c]) if per_chain is not None else ham.metric.velocity(np.eye(DIM))
        )
        q_ref, p_ref = _exact_drift(sign * G, inverse_mass, state.q[c], state.p[c], h[c, 0])
        np.testing.assert_allclose(q1[c], q_ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(p1[c], p_ref, rtol=0, atol=1e-12)


def test_pair_update_loses_no_digits_at_small_angles():
    """cos(t) - 1 and (1 - cos t)/t are written with sin(t/2), without cancellation: at
    t = 1e-6 they keep their leading terms -t^2/2 and h t/2 to 1e-9 relative. h(sinc t - 1)
    is within rounding of h (it is added to positions of that order)."""
    theta, h = 1e-6, 0.5
    dqa, dqb, dpa, dpb = magnetic_pair_update(1.0, 0.0, theta, h)
    np.testing.assert_allclose([dpa, dpb, dqb], [-(theta**2) / 2, theta, h * theta / 2], rtol=1e-9)
    assert abs(dqa - (-h * theta**2 / 6)) < 1e-15 * h
    assert magnetic_pair_update(1.0, 2.0, 0.0, h) == (0.0, 0.0, 0.0, 0.0)


def test_zero_field_is_the_leapfrog_bit_for_bit_on_both_paths():
    """G = 0: the magnetic leapfrog is the leapfrog, so magnetic HMC is HMC, draw for draw
    (adapted step size, warm-up and all), on each path."""
    target = hm.targets.get("banana")
    for compiled in (False, True):
        runs = [
            hm.sample(target, "hmc", chains=2, warmup=60, draws=40, seed=4, progress=False,
                      compiled=compiled, **options)
            for options in ({}, {"field": np.zeros((2, 2))})
        ]  # fmt: skip
        assert runs[1].attrs["compiled"] == compiled
        np.testing.assert_array_equal(runs[0].draws, runs[1].draws)


@pytest.mark.parametrize(
    ("sampler", "options"),
    [
        ("mhmc", {}),
        ("pmhmc", {}),
        ("qimhmc", {}),
        ("mhmc", {"field": "random", "metric": np.linspace(0.5, 1.5, DIM)}),
        ("mhmc", {"field": "random", "metric": np.eye(DIM) * 0.8 + 0.2 / DIM}),
        ("qimhmc", {"field": "random", "rho": 0.8, "metric": np.linspace(0.5, 1.5, DIM)}),
        ("mhmc", {"integrator": "two-stage", "n_steps_jitter": 1.0}),
        ("nuts", {"field": "research"}),
    ],
    ids=str,
)
def test_both_paths_give_the_same_draws(sampler, options):
    """One implementation on both paths: same streams, same draws to rounding, the same
    accept decisions (so the field's sign follows the same course)."""
    a, _ = assert_paths_agree(
        hm.targets.get("gaussian", dim=DIM), sampler=sampler, chains=3, warmup=0, draws=30,
        seed=3, step_size=0.35, **({} if sampler == "nuts" else {"n_steps": 5}), g=0.5,
        **options,
    )  # fmt: skip
    # Every statistic agrees (accepted, tree_depth...); with a Metropolis test:
    if sampler != "nuts":  # (the tree selects a state; the field stays as it is)
        assert 0.2 < a.stats["accepted"].mean() < 1.0  # rejections happen: signs flip


def _step(sampler, chain, seed):
    return sampler.step(chain, [np.random.default_rng(seed + c) for c in range(2)])


def test_a_rejection_flips_the_sign_and_an_acceptance_keeps_it():
    """Algorithm 3: (q, p, G) -> (q, -p, -G) on rejection, (q', p', G) on acceptance."""
    target = hm.targets.get("gaussian", dim=DIM)
    sampler = hm.samplers.build("pmhmc", target, step_size=0.2, n_steps=5)
    chain = sampler.init(np.zeros((2, DIM)))
    chain.phase.aux[FIELD_AUX] = np.array([[0.0], [1.0]])
    chain, info = _step(sampler, chain, 0)
    assert info["accepted"].all()
    np.testing.assert_array_equal(chain.phase.aux[FIELD_AUX], [[0.0], [1.0]])
    before = chain.phase.copy()
    chain.step_size = np.full(2, 50.0)  # every proposal is rejected
    refreshed = sampler.refresh.refresh(sampler.hamiltonian, before, [
        np.random.default_rng(7 + c) for c in range(2)])  # fmt: skip
    chain, info = _step(sampler, chain, 7)
    assert not info["accepted"].any()
    np.testing.assert_array_equal(chain.phase.aux[FIELD_AUX], [[1.0], [0.0]])
    np.testing.assert_array_equal(chain.phase.p, -refreshed.p)  # -p-bar, the erratum's form
    np.testing.assert_array_equal(chain.phase.q, before.q)


def test_research_field_has_rank_two_and_the_stated_eigenvalues():
    """G_1i = g, G_i1 = -g: eigenvalues +-i g sqrt(D - 1) and D - 2 zeros (spec §4.11)."""
    G = hm.research_field(10, 0.2)
    assert G[0, 1] == 0.2 and G[1, 0] == -0.2 and G[3, 5] == 0.0
    eigenvalues = np.sort(np.linalg.eigvals(G).imag)
    expected = np.sort([0.2 * 3.0, -0.2 * 3.0] + [0.0] * 8)
    np.testing.assert_allclose(eigenvalues, expected, atol=1e-12)
    assert repr(MagneticStructure(G)) == "MagneticStructure(dim=10, rank=2)"


def test_random_field_is_reproducible_and_antisymmetric():
    G = hm.random_field(6, 0.3, seed=5)
    np.testing.assert_array_equal(G, hm.random_field(6, 0.3, seed=5))
    np.testing.assert_array_equal(G, -G.T)
    assert not np.array_equal(G, hm.random_field(6, 0.3, seed=6))


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ([[0.0, 1.0], [0.5, 0.0]], r"antisymmetric.*field\[0, 1\] = 1.0 but field\[1, 0\] = 0.5"),
        ([[0.1, 1.0], [-1.0, 0.0]], r"antisymmetric.*field\[0, 0\] = 0.1 is not 0"),
        (np.ones((2, 3)), "square"),
        ([[0.0, np.nan], [np.nan, 0.0]], "finite"),
        ("strong", "square matrix of numbers"),
    ],
)
def test_bad_fields_are_refused_naming_the_entries(field, message):
    with pytest.raises(ValueError, match=message):
        check_field(field)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"field": "research", "g": -0.1}, "g must be a finite number >= 0"),
        ({"field": "research", "g": np.inf}, "g must be a finite number >= 0"),
        ({"field": "research", "g": "strong"}, "g must be a number >= 0"),
        ({"field": "random", "field_seed": -1}, "field_seed must be an integer >= 0"),
        ({"field": "north"}, "field must be None, 'research', 'random'"),
        ({"field": np.zeros((3, 3))}, r"shape \(2, 2\)"),
        ({"field": [[0.0, 1.0], [1.0, 0.0]]}, "antisymmetric"),
        ({"field": np.zeros((2, 2)), "g": 0.1}, "g applies to field='research' or 'random'"),
        ({"g": 0.1}, "g is the strength of a magnetic field"),
        ({"mass_volatility": -0.3}, "mass_volatility must be a finite number >= 0"),
        ({"mass_volatility": "high"}, "mass_volatility must be a number >= 0"),
        ({"mass_volatility": 0.3, "metric": "dense"}, "identity or diagonal base metric"),
        ({"rho": 1.0}, r"rho must lie in \[0, 1\)"),
        ({"rho": -0.2}, r"rho must lie in \[0, 1\)"),
        ({"field": "research", "integrator": Leapfrog()}, "either through field= or inside"),
    ],
)
def test_bad_options_are_refused_by_name(options, message):
    with pytest.raises(ValueError, match=message):
        hm.samplers.build("hmc", hm.targets.get("banana"), **options)


def test_a_field_of_the_wrong_size_for_the_target_is_refused():
    integrator = Leapfrog(structure=MagneticStructure(hm.research_field(3, 0.1)))
    with pytest.raises(ValueError, match=r"field has shape \(3, 3\), the target has dim 2"):
        hm.HamiltonianSampler(
            EuclideanHamiltonian(hm.targets.get("banana")),
            hm.StaticLength(5),
            integrator=integrator,
        )


def test_recipes_take_the_research_defaults_from_the_target():
    """g = 0.2 for logistic regressions and 0.1 otherwise; beta = 0.1 for banana and
    Australian credit and 0.3 otherwise; L from Table 3.8; rho = 0.7 (thesis ch. 5)."""
    banana = hm.targets.get("banana")
    heart = hm.targets.get("blr-heart")
    mhmc = hm.samplers.build("mhmc", heart)
    assert mhmc.integrator.structure.field[0, 1] == 0.2
    assert mhmc.trajectory.max_steps == 50
    assert hm.samplers.build("mhmc", banana).integrator.structure.field[0, 1] == 0.1
    assert hm.samplers.build("qihmc", banana).hamiltonian.mass_volatility == 0.1
    assert hm.samplers.build("qimhmc", heart).hamiltonian.mass_volatility == 0.3
    assert (
        hm.samplers.build("qihmc", hm.targets.get("blr-australian")).hamiltonian.mass_volatility
        == 0.1
    )
    assert hm.samplers.build("pmhmc", banana).refresh.rho == 0.7
    assert hm.samplers.build("phmc", banana).trajectory.max_steps == 15
    # Every option of hmc is there, by name, with the recipe's defaults.
    assert hm.samplers.options("qimhmc") == hm.samplers.options("hmc")
    quantum = hm.samplers.build("qimhmc", banana, mass_volatility=0.0, g=0.3, n_steps=7)
    assert type(quantum.hamiltonian) is EuclideanHamiltonian  # beta = 0 is MHMC
    assert quantum.integrator.structure.field[0, 1] == 0.3
    assert quantum.trajectory.max_steps == 7


def test_a_magnetic_chain_does_not_depend_on_the_others_on_the_numpy_path():
    # Row by row sums: a matrix product over the chains rounded differently for one chain
    # than for three, and step-size adaptation grew the difference into other draws.
    runs = [
        hm.sample("gaussian-d10", "mhmc", chains=chains, warmup=100, draws=50, seed=2,
                  progress=False, compiled=False)
        for chains in (1, 3)
    ]  # fmt: skip
    np.testing.assert_array_equal(runs[0].draws[0], runs[1].draws[0])
