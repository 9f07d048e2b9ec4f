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
