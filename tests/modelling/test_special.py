"""The vectorisable exp / log1p / softplus against NumPy, in units of the last place."""

import numpy as np

from hamiltonia.modelling.special import exp_nonpositive, log1p_unit, softplus_sigmoid

ULP = np.finfo(float).eps


def test_exp_nonpositive():
    a = -np.concatenate([np.linspace(0, 707.9, 200_001), np.geomspace(1e-300, 1.0, 10_001)])
    out = np.empty_like(a)
    exp_nonpositive(a, out, np.empty(a.shape, np.int64))
    ref = np.exp(a)
    assert np.max(np.abs(out - ref) / ref) <= 2 * ULP
    assert out[0] == 1.0
    # Below e^-708 (about 3e-308) results are flushed to zero.
    tiny = np.array([-708.5, -745.0, -1e6])
    out = np.empty(3)
    exp_nonpositive(tiny, out, np.empty(3, np.int64))
    assert np.all(out == 0.0)


def test_log1p_unit():
    e = np.concatenate([np.linspace(0, 1, 200_001), np.geomspace(1e-300, 1.0, 10_001)])
    out = np.empty_like(e)
    log1p_unit(e, out)
    ref = np.log1p(e)
    pos = ref > 0
    assert np.max(np.abs(out[pos] - ref[pos]) / ref[pos]) <= 4 * ULP
    assert out[0] == 0.0


def test_softplus_and_sigmoid():
    z = np.linspace(-700, 700, 400_001)
    sp, sg = np.empty_like(z), np.empty_like(z)
    softplus_sigmoid(z, sp, sg, np.empty_like(z), np.empty(z.shape, np.int64))
    ref_sp = np.logaddexp(0.0, z)
    with np.errstate(over="ignore"):
        ref_sg = 1.0 / (1.0 + np.exp(-z))
    assert np.max(np.abs(sp - ref_sp) / ref_sp) <= 8 * ULP
    assert np.max(np.abs(sg - ref_sg) / ref_sg) <= 8 * ULP
    # Far tails: no overflow, no NaN.
    z = np.array([-1e4, 1e4])
    softplus_sigmoid(z, sp[:2], sg[:2], np.empty(2), np.empty(2, np.int64))
    np.testing.assert_array_equal(sp[:2], [0.0, 1e4])
    np.testing.assert_array_equal(sg[:2], [0.0, 1.0])


def test_lgamma_and_digamma_against_scipy():
    from scipy import special as sp

    from hamiltonia.modelling.special import digamma, lgamma

    x = np.concatenate([np.linspace(-4.5, -0.01, 97), np.geomspace(1e-6, 1e6, 200)])
    x = x[np.abs(x - np.round(x)) > 1e-3]  # away from the poles at 0, -1, -2, ...
    np.testing.assert_allclose(lgamma(x), sp.gammaln(x), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(digamma(x), sp.digamma(x), rtol=1e-12, atol=1e-12)
    with np.errstate(invalid="ignore"):
        assert np.isnan(digamma(np.array([0.0, -2.0, np.inf]))).all()


def test_softplus_and_sigmoid_vectors_are_numpys():
    """The generated code of ``np.logaddexp(0, z)`` (a logistic likelihood) and of its
    derivative: NumPy's values to a few units in the last place, over the whole line, with
    ``nan`` kept and the infinities right."""
    from hamiltonia.modelling.special import (
        sigmoid_vector,
        softplus_sigmoid_vector,
        softplus_vector,
    )

    z = np.concatenate([np.linspace(-800, 800, 4001), [np.nan, np.inf, -np.inf, 0.0, -0.0]])
    with np.errstate(invalid="ignore", over="ignore"):
        want_softplus = np.logaddexp(0.0, z)
        # The stable form (autograd's exp(z - softplus) loses up to 17 units at z < 0).
        e = np.exp(-np.abs(z))
        want_sigmoid = np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    eps = np.finfo(float).eps  # a few units in the last place (measured: 1.1 and 1.2)
    np.testing.assert_allclose(softplus_vector(z), want_softplus, rtol=4 * eps, atol=1e-300)
    np.testing.assert_allclose(sigmoid_vector(z), want_sigmoid, rtol=4 * eps, atol=1e-300)
    # The pair the forward pass keeps for the reverse: the same numbers from one exponential.
    softplus, sigmoid = softplus_sigmoid_vector(z)
    np.testing.assert_allclose(softplus, want_softplus, rtol=4 * eps, atol=1e-300)
    np.testing.assert_allclose(sigmoid, want_sigmoid, rtol=4 * eps, atol=1e-300)


def test_a_logistic_likelihood_compiles_to_the_vector_softplus():
    import autograd.numpy as anp

    from hamiltonia.modelling.user_target import compile_log_density

    X = np.random.default_rng(0).normal(size=(50, 3))
    f = lambda w: -anp.sum(anp.logaddexp(0.0, X @ w))  # noqa: E731
    density = compile_log_density(f, 3)
    # One call for the softplus and the sigmoid its adjoint reads, kept from the forward pass.
    assert "softplus_sigmoid_vector(" in density.source
    assert " sigmoid_vector(" not in density.source
