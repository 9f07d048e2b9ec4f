"""autograd's reverse pass for a 0-d value that is both indexed and used twice elsewhere.

autograd sums the gradients reaching a value as they arrive. Two dense ones are added by
``ArrayVSpace.add``, ``x + y``, which for 0-d arrays is a NumPy *scalar*
(``np.float64``), and the sum is then flagged as mutable. A gradient from indexing the value
(``x[None]``, ``x[..., None]``, ``x[()]``) is sparse: it is added into the running sum in
place by ``np.add.at``, which refuses a scalar (``TypeError: first operand must be array``).
So

.. math::

    f(x) = \\textstyle\\sum x_{[\\text{None}]} + x^2 + 3x, \\qquad x \\text{ of shape } (),

fails in ``autograd.grad`` (autograd 1.7 to 1.9 at least), while the same with ``x`` of shape
``(1,)`` does not. A model's scalar block is such a 0-d value: on one point (the numba
backend's check against autograd, its Hessian-vector product, a density evaluated one chain
at a time) a ``logp`` that indexes a scalar block (``p["mu"][..., None]``, written to
broadcast over the chains) and uses it twice more failed so.

:func:`install` replaces autograd's ``sparse_add`` (looked up by name by the function that
sums the gradients, ``autograd.core.add_outgrads``) by one that copies a NumPy scalar running
sum into a 0-d array first; with the same derivatives (the identity in both places). Only the
case that raised changes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["install"]

_INSTALLED: list = []


def install() -> None:
    """Install the fixed ``sparse_add`` in autograd (module docs), once per process."""
    if _INSTALLED:
        return
    import autograd.core as core
    from autograd.extend import defjvp, defvjp, primitive

    if not all(hasattr(core, name) for name in ("sparse_add", "identity_vjp", "identity_jvp")):
        # Another autograd than the one this replaces a function of: leave it as it is.
        _INSTALLED.append(None)
        return

    @primitive
    def sparse_add(vs, x_prev, x_new):
        x_prev = x_prev if x_prev is not None else vs.zeros()
        if isinstance(x_prev, np.generic | float | int | complex):
            # A sum of two dense 0-d gradients: a scalar, which np.add.at cannot add into.
            x_prev = np.array(x_prev)
        return x_new.mut_add(x_prev)

    defvjp(sparse_add, None, core.identity_vjp, core.identity_vjp)
    defjvp(sparse_add, None, core.identity_jvp, core.identity_jvp)
    core.sparse_add = sparse_add
    _INSTALLED.append(sparse_add)
