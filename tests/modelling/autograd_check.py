"""The check every compiled-gradient test makes: a compiled log density's value and gradient
equal autograd's at some points, to rounding (the two sum in different orders)."""

import autograd
import numpy as np


def assert_matches_autograd(target, density, points, *, lp_rtol=1e-10, rtol=1e-9, atol=1e-9,
                            atol_per_lp=0.0, finite=False) -> None:  # fmt: skip
    """``target.evaluate`` against ``autograd.value_and_grad(density)`` at each of ``points``:
    the value to ``lp_rtol``, the gradient to ``rtol`` and ``atol`` plus ``atol_per_lp``
    times the value's magnitude (a gradient entry that cancels in a large sum is exact only
    to the sum's rounding); with ``finite``, the value must also be finite."""
    reference = autograd.value_and_grad(density)
    for point in points:
        lp, grad = target.evaluate(point)
        want_lp, want_grad = reference(point)
        if finite:
            assert np.isfinite(lp)
        np.testing.assert_allclose(lp, want_lp, rtol=lp_rtol)
        np.testing.assert_allclose(grad, want_grad, rtol=rtol,
                                   atol=atol + atol_per_lp * np.abs(want_lp))  # fmt: skip
