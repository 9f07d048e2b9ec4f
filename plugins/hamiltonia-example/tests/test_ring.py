"""The ``example-ring`` target, checked with hamiltonia's test kit (``hamiltonia.testing``):
its gradient, its compiled kernel against its NumPy methods, both paths, and the moments.

Run from this folder (``python -m pytest``) with the plugin installed
(``pip install -e .``), as ``.ci/run`` does.
"""

from __future__ import annotations

import numpy as np

import hamiltonia as hm
from hamiltonia.testing import (
    assert_moments_recovered,
    assert_paths_agree,
    check_gradient,
    skip_unless_installed,
)

skip_unless_installed("hamiltonia-example")

from hamiltonia_example.targets import Ring


def test_the_gradient_and_hessian_vector_product_match_finite_differences():
    check_gradient(Ring())
    check_gradient(Ring(radius=0.5, width=1.2), seed=3)


def test_the_compiled_kernel_computes_the_numpy_density():
    """Through compiled code (NumbaTarget.evaluate), at random points and at the origin."""
    target = Ring()
    kernel = target.numba_kernel()
    rng = np.random.default_rng(0)
    for q in [*rng.normal(scale=2.0, size=(6, 2)), np.zeros(2)]:
        lp, grad = kernel.evaluate(q)
        ref_lp, ref_grad = target.log_prob_and_grad(q)
        np.testing.assert_allclose(lp, ref_lp, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-13)


def test_both_paths_give_the_same_draws():
    hm.targets.registry.refresh()
    target = hm.targets.get("example-ring")
    assert_paths_agree(target, "hmc", step_size=0.2, n_steps=8, chains=2, warmup=0, draws=200,
                       seed=4)  # fmt: skip


def test_nuts_recovers_the_exact_moments_on_the_compiled_path():
    target = Ring()
    run = hm.sample(target, "nuts", chains=4, warmup=500, draws=2000, seed=5, progress=False)
    assert run.attrs["compiled"] is True
    assert_moments_recovered(run, target.exact_moments)
