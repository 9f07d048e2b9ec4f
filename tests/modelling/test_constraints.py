"""Constraint bijections (hamiltonia.modelling.constraints): inverses, log-Jacobians against finite
differences, gradients through autograd, supports."""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from hamiltonia.modelling.constraints import (
    CholeskyCorr,
    Interval,
    LowerBounded,
    Ordered,
    Real,
    Simplex,
    UpperBounded,
)

#: (constraint, shape of one parameter)
CASES = [
    (Real(), (3,)),
    (LowerBounded(0.0), (3,)),
    (LowerBounded(-2.5), (2,)),
    (UpperBounded(1.5), (2,)),
    (Interval(-1.0, 3.0), (3,)),
    (Ordered(), (4,)),
    (Simplex(), (4,)),
    (Simplex(), (2,)),
    (CholeskyCorr(), (3, 3)),
    (CholeskyCorr(), (4, 4)),
]
IDS = [f"{c!r}-{s}" for c, s in CASES]


def _z(constraint, shape, batch=(), seed=0):
    size = int(np.prod(constraint.unconstrained_shape(shape)))
    return np.random.default_rng(seed).normal(scale=0.8, size=(*batch, size))


def _forward(constraint, z, xp=np):
    """The constrained value and log-Jacobian of an unconstrained vector of one event (or
    of a batch): elementwise constraints get z reshaped to the event shape."""
    x, jac = constraint.forward(z, xp)
    if constraint.event_ndim == 0:
        jac = xp.sum(jac, axis=-1)
    return x, jac


@pytest.mark.parametrize(("constraint", "shape"), CASES, ids=IDS)
def test_inverse_undoes_forward(constraint, shape):
    z = _z(constraint, shape, batch=(5,))
    x, _ = _forward(constraint, z)
    assert np.all(constraint.contains(x))
    np.testing.assert_allclose(constraint.inverse(x), z, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(("constraint", "shape"), CASES, ids=IDS)
def test_log_jacobian_matches_finite_differences(constraint, shape):
    """log |det dfree(x)/dz| by central differences (step 1e-6: error ~1e-9 relative)."""
    for seed in range(3):
        z = _z(constraint, shape, seed=seed)
        _, jac = _forward(constraint, z)
        h, n = 1e-6, z.size
        J = np.empty((n, n))
        for k in range(n):
            dz = np.zeros(n)
            dz[k] = h
            hi = constraint.free(_forward(constraint, z + dz)[0]).ravel()
            lo = constraint.free(_forward(constraint, z - dz)[0]).ravel()
            J[:, k] = (hi - lo) / (2 * h)
        np.testing.assert_allclose(jac, np.linalg.slogdet(J)[1], rtol=0, atol=1e-6)


@pytest.mark.parametrize(("constraint", "shape"), CASES, ids=IDS)
def test_autograd_differentiates_the_transform(constraint, shape):
    """The same code under autograd.numpy gives the finite-difference gradient of
    sum(x) + log J."""

    def f(z):
        x, jac = _forward(constraint, z, anp)
        return anp.sum(x) + jac

    z = _z(constraint, shape, seed=4)
    grad = autograd.grad(f)(z)
    h = 1e-6
    fd = np.array([(f(z + h * e) - f(z - h * e)) / (2 * h) for e in np.eye(z.size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


def test_the_transforms_stay_finite_far_out():
    z = np.array([-800.0, -40.0, 40.0, 800.0])
    for constraint in (Interval(0.0, 1.0), Simplex()):
        x, jac = constraint.forward(z)
        assert np.all(np.isfinite(jac))
        assert np.all((x >= 0) & (x <= 1))
    L, jac = CholeskyCorr().forward(np.array([30.0, -30.0, 30.0]))
    assert np.all(np.isfinite(L)) and np.isfinite(jac)


def test_supports_and_bad_settings():
    assert not LowerBounded(0.0).contains(-1.0)
    assert not Interval(0, 1).contains(1.0)
    assert not Simplex().contains(np.array([0.5, 0.6]))
    assert not Ordered().contains(np.array([1.0, 1.0]))
    assert not CholeskyCorr().contains(np.array([[1.0, 0.0], [0.5, 0.5]]))
    with pytest.raises(ValueError, match=r"interval needs lower < upper, got \(1, 0\)"):
        Interval(1, 0)
    with pytest.raises(ValueError, match="lower must be a finite number"):
        LowerBounded(np.inf)
    with pytest.raises(ValueError, match="a simplex is a vector of length >= 2"):
        Simplex().check_shape((1,))
    with pytest.raises(ValueError, match="K x K matrix"):
        CholeskyCorr().check_shape((2, 3))


#: Far-out unconstrained values: past z = -38 a tanh form rounds x - a to 0, and past
#: z = 37 the form a + (b - a) sigma(z) rounds b - x to 0.
FAR = np.array([-700.0, -300.0, -60.0, -39.0, -5.0, 0.0, 5.0, 39.0, 60.0, 300.0, 700.0])


def _sigmoid(z):
    """sigma(z) = e^z / (1 + e^z) for z < 0 and 1 / (1 + e^-z) otherwise: each a few
    rounding errors from the exact value (no cancellation)."""
    z = np.asarray(z, dtype=float)
    e = np.exp(-np.abs(z))
    return np.where(z < 0, e / (1.0 + e), 1.0 / (1.0 + e))


@pytest.mark.parametrize("xp", [np, anp], ids=["numpy", "autograd"])
def test_an_interval_keeps_the_distance_to_either_bound_to_full_precision(xp):
    """x - a = (b - a) sigma(z) and b - x = (b - a) sigma(-z), to a few rounding errors
    (tolerance 8 ulps) even where they are far below the spacing of floats near the
    other bound: (0, 1) is measured near 0 (z < 0), (-1, 0) near 0 from below (z > 0)."""
    ulps = 8 * np.finfo(float).eps
    x, jac = Interval(0.0, 1.0).forward(FAR, xp)
    low = FAR < 0
    np.testing.assert_allclose(np.asarray(x)[low], _sigmoid(FAR[low]), rtol=ulps, atol=0)
    y, _ = Interval(-1.0, 0.0).forward(FAR, xp)
    high = FAR > 0
    np.testing.assert_allclose(-np.asarray(y)[high], _sigmoid(-FAR[high]), rtol=ulps, atol=0)
    # log J = log sigma(z) + log sigma(-z) = -|z| - 2 log(1 + e^-|z|): finite everywhere.
    want = -np.abs(FAR) - 2.0 * np.log1p(np.exp(-np.abs(FAR)))
    np.testing.assert_allclose(np.asarray(jac), want, rtol=ulps, atol=ulps)
    assert np.all(Interval(0.0, 1.0).contains(np.asarray(x)[low]))


def test_an_interval_inverse_is_exact_near_either_bound():
    """z = logit((x - a)/(b - a)) taken from both distances, each kept exact where its bound
    is 0: a value 1e-20 below 0 in (-1, 0) maps back to its z (46), not to the z of a
    rounded 1 - u (infinite here), to a few rounding errors (8 ulps)."""
    ulps = 8 * np.finfo(float).eps
    for constraint, z in ((Interval(0.0, 1.0), np.array([-46.0, -30.0])),
                          (Interval(-1.0, 0.0), np.array([30.0, 46.0]))):  # fmt: skip
        x, _ = constraint.forward(z)
        assert np.all(constraint.contains(x))
        np.testing.assert_allclose(constraint.inverse(x), z, rtol=ulps, atol=0)


def test_the_closure_of_a_support_takes_its_bounds_and_nothing_beyond():
    """A draw rounded onto a bound (a sparse Dirichlet's exact zeros) is in the closure,
    not in the support; a value beyond a bound, or not finite, is in neither."""
    cases = [
        (LowerBounded(0.0), [0.0, 1.0], [-1e-300, np.inf, np.nan]),
        (UpperBounded(1.0), [1.0, -3.0], [1.0 + 1e-15, -np.inf]),
        (Interval(0.0, 1.0), [0.0, 1.0, 0.5], [-1e-300, 1.5, np.nan]),
        (Simplex(), [[0.0, 1.0, 0.0]], [[-0.1, 0.6, 0.5], [0.0, 0.5, 0.6]]),
        (Ordered(), [[1.0, 1.0]], [[1.0, 0.5], [0.0, np.inf]]),
        (CholeskyCorr(), [[[1.0, 0.0], [1.0, 0.0]]], [[[1.0, 0.0], [1.0, -0.0001]]]),
    ]
    for constraint, on_bound, outside in cases:
        assert np.all(constraint.contains_closure(np.array(on_bound))), constraint
        assert not np.all(constraint.contains(np.array(on_bound))), constraint
        assert not np.any(constraint.contains_closure(np.array(outside))), constraint
