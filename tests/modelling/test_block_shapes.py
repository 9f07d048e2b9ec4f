"""Every shape of block on both backends that run ``autograd.numpy`` code (issue 50, item 3).

A model's blocks reach ``logp`` as arrays of their own shapes: a scalar as a 0-d array, a
vector, a matrix, a simplex (a vector on :math:`\\Delta^{k-1}`), the Cholesky factor of a
correlation matrix (a lower-triangular :math:`k \\times k` matrix). Each is written here as a
user writes it, for one point or a batch of them (``[..., None]``, ``axis=-1``), and built with
``backend="numba"`` (recorded and compiled with a generated gradient) and
``backend="autograd"``: the two give the same log density and gradient of the unconstrained
position :math:`z`,

.. math::

    \\log p(z) = \\texttt{logp}(T(z)) + \\log\\lvert\\det J_T(z)\\rvert,

which central differences confirm, and a short NUTS run on each gives finite draws of the
block's shape.
"""

import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm

Y = np.array([1.2, -0.3, 0.8, 2.1, 0.4])
COUNTS = np.array([3.0, 7.0, 1.0])
DATA = np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5]])


def _scalars(p):
    # Normal likelihood, N(0, 5) prior on mu, inverse-gamma(1, 1) on tau: each scalar
    # block is indexed for the batch axis ([..., None]) and used twice more, the pattern
    # whose gradient autograd could not sum on one point ("first operand must be array").
    mu, tau = p["mu"], p["tau"]
    lik = anp.sum(-0.5 * ((Y - mu[..., None]) / tau[..., None]) ** 2, axis=-1)
    return lik - Y.size * anp.log(tau) - 0.5 * (mu / 5) ** 2 - 0.1 * mu - 2 * anp.log(tau) - 1 / tau


def _vector(p):
    return -0.5 * anp.sum((p["eta"] - Y) ** 2, axis=-1) - 0.1 * anp.sum(p["eta"] ** 4, axis=-1)


def _matrix(p):
    return -0.5 * anp.sum((p["B"] - DATA) ** 2, axis=(-2, -1)) + anp.sum(p["B"][..., 0, :], axis=-1)


def _simplex(p):
    # Multinomial counts on a Dirichlet(2, 2, 2) prior.
    return anp.sum((COUNTS + 1.0) * anp.log(p["w"]), axis=-1)


def _cholesky(p):
    # LKJ(2) on the correlation matrix: sum_k (K - k - 1 + 2 (eta - 1)) log L_kk, and a pull
    # of the first correlation towards 0.3.
    L = p["L"]
    out = -8.0 * (L[..., 1, 0] - 0.3) ** 2
    for k in range(1, 3):
        out = out + (3 - k - 1 + 2.0) * anp.log(L[..., k, k])
    return out


SHAPES = {
    "scalars": (_scalars, {"mu": hm.real(), "tau": hm.positive()}),
    "vector": (_vector, {"eta": hm.real(5)}),
    "matrix": (_matrix, {"B": hm.real((2, 3))}),
    "simplex": (_simplex, {"w": hm.simplex(3)}),
    "cholesky": (_cholesky, {"L": hm.cholesky_corr(3)}),
}


def _central_differences(model, z, h=1e-6):
    """:math:`(\\log p(z + h e_i) - \\log p(z - h e_i)) / 2h` for each coordinate."""
    out = np.empty_like(z)
    for i in range(z.size):
        step = np.zeros_like(z)
        step[i] = h
        out[i] = (model.log_prob(z + step) - model.log_prob(z - step)) / (2 * h)
    return out


@pytest.mark.parametrize("shape", SHAPES)
def test_each_block_shape_gives_the_same_density_and_gradient_on_both_backends(shape):
    """numba and autograd agree at a batch of random positions (to rounding, 1e-9) and at
    one position, and both agree with central differences (to 1e-5 relative)."""
    logp, blocks = SHAPES[shape]
    compiled = hm.Model(logp, blocks, backend="numba")
    reference = hm.Model(logp, blocks, backend="autograd")
    assert compiled.backend == "numba" and compiled.numba_kernel() is not None
    z = np.random.default_rng(7).normal(scale=0.7, size=(4, compiled.dim))
    lp, grad = compiled.log_prob_and_grad(z)
    want_lp, want_grad = reference.log_prob_and_grad(z)
    np.testing.assert_allclose(lp, want_lp, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-12)
    for model in (compiled, reference):
        one_lp, one_grad = model.log_prob_and_grad(z[0])
        np.testing.assert_allclose(one_lp, want_lp[0], rtol=1e-9)
        np.testing.assert_allclose(one_grad, _central_differences(model, z[0]), rtol=1e-5,
                                   atol=1e-6)  # fmt: skip


@pytest.mark.parametrize("backend", ["numba", "autograd"])
@pytest.mark.parametrize("shape", SHAPES)
def test_each_block_shape_samples_on_both_backends(shape, backend):
    """A short NUTS run: finite draws of each block in its own shape."""
    logp, blocks = SHAPES[shape]
    model = hm.Model(logp, blocks, backend=backend)
    run = hm.sample(model, chains=2, warmup=100, draws=50, seed=1, progress=False)
    for name, param in blocks.items():
        draws = np.asarray(run.posterior[name])
        assert draws.shape == (2, 50, *param.shape)
        assert np.all(np.isfinite(draws))


def test_autograd_sums_the_gradients_of_an_indexed_scalar():
    """The cause, alone: the gradient of :math:`f(x) = \\sum x_{[\\text{None}]} + x^2 + 3x`
    at a 0-d :math:`x = 1` is :math:`1 + 2x + 3 = 6`, its second derivative 2, with
    :mod:`hamiltonia.modelling.autograd_scalars` installed (as every model does)."""
    import autograd

    from hamiltonia.modelling.autograd_scalars import install

    install()

    def f(x):
        return anp.sum(x[None]) + x**2 + 3 * x

    for x in (np.array(1.0), np.float64(1.0)):
        assert float(autograd.grad(f)(x)) == 6.0
        assert float(autograd.hessian(f)(x)) == 2.0
    # Containers' gradients (a tuple's, a dict's) are not numbers and are left alone.
    assert autograd.grad(lambda t: t[0] * t[1] + t[0] ** 2)((1.0, 2.0)) == (4.0, 1.0)


def test_from_logp_with_autograd_sums_the_gradients_of_an_indexed_0d_value():
    """The mend is installed by the autograd backend itself, not only by a Model built
    earlier in the process: a 0-d value indexed and used twice more, d/da = 1 + 2a + 3."""

    def logp(x):
        a = x[0]
        return anp.sum(a[None]) + a**2 + 3 * a - 0.5 * anp.sum(x**2)

    target = hm.Target.from_logp(logp, dim=2, backend="autograd", vectorized=False)
    _, grad = target.log_prob_and_grad(np.ones(2))
    np.testing.assert_allclose(grad, [1 + 2 + 3 - 1, -1])
