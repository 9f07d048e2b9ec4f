"""The research code's MHMC map (field='research-code'): the matrices it computes, its
reversibility and volume, its two paths, its refusals, and the acceptance rate it gives on
BLR Pima at the thesis's MHMC step size."""

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg

import hamiltonia as hm
from hamiltonia.diagnostics.publication import fraction_accepted
from hamiltonia.hamiltonians import EuclideanHamiltonian, LeapfrogShadowHamiltonian
from hamiltonia.integrators import Leapfrog
from hamiltonia.structures.magnetic import FIELD_AUX, MagneticStructure
from hamiltonia.structures.research_code import (
    ResearchCodeMagneticStructure,
    research_code_coefficients,
    symmetric_from_upper,
)
from hamiltonia.testing import (
    assert_paths_agree,
    check_reversibility,
    check_volume_preservation,
    energy_error_slope,
)

DIM = 5
FIELDS = {
    "research": hm.research_field(DIM, 0.7),  # S of rank two
    "random": hm.random_field(DIM, 0.5, seed=3),  # S of full rank
}


def _states(ham, n, seed=0):
    rng = np.random.default_rng(seed)
    return ham.evaluate(rng.normal(size=(n, DIM)), rng.normal(size=(n, DIM)))


# ---------------------------------------------------------------------------- the map


def test_the_symmetric_matrix_is_the_upper_triangle_mirrored():
    """A symmetric eigensolver handed G reads its upper triangle: S_1i = S_i1 = g, with
    eigenvalues +-g sqrt(D - 1) and D - 2 zeros."""
    G = hm.research_field(10, 0.2)
    S = symmetric_from_upper(G)
    assert S[0, 4] == S[4, 0] == 0.2 and S[3, 5] == 0.0 and np.all(np.diag(S) == 0)
    np.testing.assert_allclose(
        np.linalg.eigvalsh(S), np.sort([-0.6, 0.6] + [0.0] * 8), rtol=0, atol=1e-15
    )
    structure = ResearchCodeMagneticStructure(G)
    assert repr(structure) == "ResearchCodeMagneticStructure(dim=10, rank=2)"
    # Negating G negates S: the field's sign flips the map as it flips the rotation.
    np.testing.assert_array_equal(symmetric_from_upper(-G), -S)


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_drift_is_expm_of_s_and_its_integral(field):
    """p <- expm(h s S) p and q <- q + (int_0^h expm(sigma s S) d sigma) p, the integral by
    adaptive quadrature and by the augmented matrix exponential, for per-chain times of both
    signs (and a tiny one) and both field signs, to 1e-12 (relative to the entries above
    one)."""
    G = FIELDS[field]
    S = symmetric_from_upper(G)
    ham = EuclideanHamiltonian(hm.targets.get("gaussian", dim=DIM))
    state = _states(ham, 4)
    aux = {FIELD_AUX: np.array([[0.0], [1.0], [0.0], [1.0]])}
    h = np.array([[0.3], [-0.7], [1.9], [1e-9]])
    q1, p1 = ResearchCodeMagneticStructure(G).drift(ham, state.q, state.p, h, aux)
    for c in range(4):
        s, t = 1.0 - 2.0 * aux[FIELD_AUX][c, 0], h[c, 0]
        E = scipy.linalg.expm(t * s * S)
        F_quad = scipy.integrate.quad_vec(
            lambda sigma, s=s: scipy.linalg.expm(sigma * s * S), 0.0, t, epsabs=1e-15, epsrel=1e-14
        )[0]
        augmented = scipy.linalg.expm(
            np.block([[t * s * S, t * np.eye(DIM)], [np.zeros((DIM, 2 * DIM))]])
        )
        F_expm = augmented[:DIM, DIM:]
        np.testing.assert_allclose(F_quad, F_expm, rtol=1e-12, atol=1e-14)
        p_ref, dq_ref = E @ state.p[c], F_quad @ state.p[c]
        scale = max(1.0, float(np.abs(p_ref).max()), float(np.abs(dq_ref).max()))
        np.testing.assert_allclose(p1[c], p_ref, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(q1[c] - state.q[c], dq_ref, rtol=0, atol=1e-12 * scale)


def test_coefficients_lose_no_digits_near_zero_and_match_across_the_series_switch():
    """(e^x - 1, h(phi(x) - 1)): exactly zero at x = 0, the leading terms x and h x/2 for
    tiny x, and the series and the closed form agree where they meet."""
    assert research_code_coefficients(0.0, 0.7) == (0.0, 0.0)
    e1, f1 = research_code_coefficients(1e-9, 2.0)
    np.testing.assert_allclose([e1, f1], [1e-9 + 5e-19, 2.0 * (5e-10 + 1e-18 / 6)], rtol=1e-15)
    for x in (0.05 - 1e-12, -0.05 + 1e-12):
        below, above = (
            research_code_coefficients(x, 1.0),
            research_code_coefficients(x * (1 + 4e-11), 1.0),
        )
        np.testing.assert_allclose(below, above, rtol=1e-9)
    x = 0.3
    np.testing.assert_allclose(
        research_code_coefficients(x, 1.0), (np.expm1(x), (np.expm1(x) - x) / x), rtol=1e-15
    )


# ---------------------------------------------------------------------------- exactness


def _integrator(G):
    return Leapfrog(structure=ResearchCodeMagneticStructure(G))


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("reversed_field", [0.0, 1.0])
def test_one_leapfrog_step_preserves_volume_exactly(field, reversed_field):
    """On a Gaussian the step is linear, z -> A z: its columns are the images of the unit
    vectors, exactly (no finite differences), and det A = det expm(h s S) = e^{h s tr S} = 1
    to 1e-10."""
    integrator = _integrator(FIELDS[field])
    ham = EuclideanHamiltonian(hm.targets.get("gaussian", dim=DIM))
    eye = np.eye(2 * DIM)
    state = ham.evaluate(eye[:, :DIM].copy(), eye[:, DIM:].copy())
    state.aux[FIELD_AUX] = np.full((2 * DIM, 1), reversed_field)
    end, _ = integrator.integrate(ham, state, np.full(2 * DIM, 0.4), 1)
    A = np.hstack([end.q, end.p]).T
    assert abs(np.linalg.det(A) - 1.0) < 1e-10
    assert np.abs(A - eye).max() > 0.1  # not the identity: the check is not vacuous
    # And the map is not the rotation's: its momentum block differs.
    rotation, _ = Leapfrog(structure=MagneticStructure(FIELDS[field])).integrate(
        ham, state, np.full(2 * DIM, 0.4), 1
    )
    assert np.abs(rotation.p - end.p).max() > 1e-3


@pytest.mark.parametrize(
    "field",
    [hm.research_field(8, 0.2), hm.random_field(8, 0.5, seed=1)],
    ids=["research", "random"],
)
def test_one_step_is_reversed_by_negating_the_momentum_and_the_field(field):
    """Step, negate p and the field's sign, step, negate: the start to 1e-12 (BLR Pima, a
    non-linear force; both field signs among the chains)."""
    integrator = _integrator(field)
    ham = EuclideanHamiltonian(hm.targets.get("blr-pima"))
    rng = np.random.default_rng(5)
    state = ham.evaluate(rng.normal(size=(4, 8)) * 0.5, rng.normal(size=(4, 8)))
    state.aux[FIELD_AUX] = np.array([[0.0], [1.0], [0.0], [1.0]])
    eps = np.full(4, 0.03)
    end, _ = integrator.integrate(ham, state, eps, 1)
    back, _ = integrator.integrate(
        ham, integrator.structure.reverse(end.with_momentum(-end.p)), eps, 1
    )
    np.testing.assert_allclose(back.q, state.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(-back.p, state.p, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(integrator.structure.reverse(back).aux[FIELD_AUX], [[0], [1]] * 2)
    assert np.abs(end.q - state.q).max() > 0.01


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_trajectories_are_reversible_and_volume_preserving(field):
    """The test kit's checks over whole trajectories, on a Gaussian and on the banana (a
    non-linear force)."""
    integrator = _integrator(FIELDS[field])
    ham = EuclideanHamiltonian(hm.targets.get("gaussian", dim=DIM))
    check_reversibility(integrator, ham)
    check_volume_preservation(integrator, ham)
    banana = hm.targets.get("banana")
    ham2 = EuclideanHamiltonian(banana)
    check_reversibility(_integrator(hm.research_field(2, 0.7)), ham2)
    check_volume_preservation(_integrator(hm.research_field(2, 0.7)), ham2)


def test_the_map_does_not_keep_the_energy_as_the_step_size_falls():
    """Not the magnetic flow: the kinetic energy is not kept by the drift, so the energy error
    over a fixed time does not fall as step_size**2 (it tends to that of the continuous
    hyperbolic flow), where the rotation's does."""
    ham = EuclideanHamiltonian(hm.targets.get("gaussian", dim=DIM))
    G = FIELDS["research"]
    rotation = energy_error_slope(Leapfrog(structure=MagneticStructure(G)), ham)
    code = energy_error_slope(_integrator(G), ham)
    assert abs(rotation - 2.0) < 0.2
    assert abs(code) < 0.5


# ---------------------------------------------------------------------------- samplers


@pytest.mark.parametrize(
    ("sampler", "options"),
    [
        ("mhmc", {}),
        ("pmhmc", {}),
        ("a-mhmc", {"chains": 4}),
        ("nuts", {"metric": "identity"}),
        ("mhmc", {"integrator": "two-stage", "n_steps_jitter": 1.0, "step_size_jitter": 0.2}),
    ],
    ids=str,
)
def test_both_paths_give_the_same_draws(sampler, options):
    """One map on both paths: the same draws to rounding and the same accept decisions (so
    the field's sign follows the same course), per-chain and per-stage times included."""
    kw = {"chains": 3, **({} if sampler == "nuts" else {"n_steps": 5}), **options}
    a, _ = assert_paths_agree(
        hm.targets.get("gaussian", dim=DIM), sampler=sampler, warmup=0, draws=30, seed=3,
        step_size=0.35, g=0.5, field="research-code", **kw,
    )  # fmt: skip
    if sampler != "nuts":  # (the tree selects a state; the field stays as it is)
        assert 0.2 < a.stats["accepted"].mean() < 1.0  # rejections happen: signs flip


def test_a_general_field_gives_the_same_draws_on_both_paths():
    """A random antisymmetric G (S of full rank), composed by hand."""
    target = hm.targets.get("gaussian", dim=DIM)
    structure = ResearchCodeMagneticStructure(hm.random_field(DIM, 0.15, seed=3))
    sampler = hm.HamiltonianSampler(
        EuclideanHamiltonian(target),
        hm.StaticLength(5),
        integrator=Leapfrog(structure=structure),
        step_size=0.35,
    )
    a, _ = assert_paths_agree(target, sampler=sampler, chains=3, warmup=0, draws=30, seed=3)
    assert 0.2 < a.stats["accepted"].mean() < 1.0


def test_zero_field_is_hmc_bit_for_bit_on_both_paths():
    """g = 0: S = 0 and the map is the leapfrog's drift, so the sampler is HMC, draw for draw
    (adapted step size, warm-up and all), on each path."""
    target = hm.targets.get("banana")
    for compiled in (False, True):
        runs = [
            hm.sample(target, "hmc", chains=2, warmup=60, draws=40, seed=4, progress=False,
                      compiled=compiled, **options)
            for options in ({}, {"field": "research-code", "g": 0.0})
        ]  # fmt: skip
        assert runs[1].attrs["compiled"] == compiled
        np.testing.assert_array_equal(runs[0].draws, runs[1].draws)


def test_the_registry_builds_it_by_name():
    structure = hm.structures.get("research-code", dim=3, g=0.1)
    assert isinstance(structure, ResearchCodeMagneticStructure)
    assert structure.field[0, 2] == 0.1 and structure.symmetric[2, 0] == 0.1
    sampler = hm.samplers.build("mhmc", hm.targets.get("blr-heart"), field="research-code")
    assert sampler.integrator.structure.field[0, 1] == 0.2  # the target's research g
    assert "not the magnetic flow" in hm.structures.describe()["research-code"]


@pytest.mark.parametrize(
    ("sampler", "options", "message"),
    [
        ("mhmc", {"metric": "diagonal"}, r"uses M = I: metric must be 'identity'.*DiagonalMetric"),
        ("mhmc", {"metric": np.eye(2) * 2.0}, r"metric must be 'identity', got DenseMetric"),
        ("mhmc", {"metric": np.array([1.0, 2.0])}, "metric must be 'identity'"),
        ("qimhmc", {}, r"uses M = I: it takes no random mass \(mass_volatility=0\)"),
        ("smhmc", {}, "shadow='leapfrog' has the magnetic term of a constant field only"),
    ],
)
def test_what_the_research_code_does_not_do_is_refused(sampler, options, message):
    with pytest.raises(ValueError, match=message):
        hm.samplers.build(sampler, hm.targets.get("banana"), field="research-code", **options)


def test_a_shadow_hamiltonian_composed_by_hand_is_refused():
    ham = LeapfrogShadowHamiltonian(EuclideanHamiltonian(hm.targets.get("banana")))
    with pytest.raises(ValueError, match="field='research-code' has no shadow Hamiltonian"):
        ResearchCodeMagneticStructure(hm.research_field(2, 0.1)).check(ham)


# ---------------------------------------------------------------------------- statistics

#: The fraction accepted on BLR Pima at eps = 0.03, L = 50, g = 0.2, M = I from an
#: independent NumPy implementation of the map (dense scipy.linalg.expm of eps*S and of the
#: augmented matrix for F, field flipped on rejection): 4 seeds x 1000 iterations from the
#: posterior mode, 2909 of 4000 accepted.
PIMA_REFERENCE, PIMA_REFERENCE_N = 0.72725, 4000


def _binomial_se(f: float, n: int) -> float:
    return float(np.sqrt(max(f * (1.0 - f), 1e-4) / n))


def test_pima_at_the_thesis_step_size_accepts_far_less_than_the_rotation():
    """BLR Pima, the thesis's MHMC eps = 0.030, L = 50, g = 0.2, fixed step size, M = I: the
    textbook rotation accepts nearly every proposal, the research code's map about 73 %.
    Tolerances from the binomial standard error of the fraction accepted, sqrt(f(1-f)/n),
    n = 1200 proposals (the reference's own error included), at 5 standard errors."""
    fractions = {}
    for field in ("research", "research-code"):
        run = hm.sample(
            "blr-pima", "mhmc", field=field, g=0.2, step_size=0.03, n_steps=50,
            adapt_step_size=False, chains=4, warmup=100, draws=300, seed=0, progress=False,
            initial=np.zeros(8),
        )  # fmt: skip
        fractions[field] = fraction_accepted(run.stats["accepted"])
    n = 4 * 300
    code, rotation = fractions["research-code"], fractions["research"]
    se_code, se_rotation = _binomial_se(code, n), _binomial_se(rotation, n)
    se_reference = _binomial_se(PIMA_REFERENCE, PIMA_REFERENCE_N)
    assert rotation > 0.95 - 5 * se_rotation, fractions
    assert abs(code - PIMA_REFERENCE) < 5 * np.hypot(se_code, se_reference), fractions
    assert rotation - code > 10 * np.hypot(se_code, se_rotation), fractions
