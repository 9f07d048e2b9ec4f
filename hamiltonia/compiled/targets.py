"""Compiled log densities: the signature a target's kernel must have.

A compiled target is a function

.. code-block:: python

    def log_prob_and_grad(q, grad_out, fdata, idata) -> float

with ``q`` and ``grad_out`` of shape ``(dim,)``: it returns :math:`\\log\\pi(q)` and writes
:math:`\\nabla\\log\\pi(q)` into ``grad_out``. ``fdata`` (float64) and ``idata`` (int64) are flat,
contiguous arrays holding the target's data and sizes (a design matrix is passed flattened
with its shape in ``idata``), so that one compiled chain kernel serves every target: the
target is a first-class function argument with a fixed signature, and the kernel is compiled
and cached once, not once per target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["LOG_PROB_SIGNATURE", "NumbaTarget", "compile_log_prob"]


def _signature():
    from numba import types

    vec = types.float64[::1]
    return types.float64(vec, vec, vec, types.int64[::1])


#: ``float64(float64[::1] q, float64[::1] grad_out, float64[::1] fdata, int64[::1] idata)``
LOG_PROB_SIGNATURE = None  # filled lazily: importing numba costs ~0.3 s
_CACHE: dict[Callable, object] = {}


def compile_log_prob(py_func: Callable):
    """Compile ``py_func`` (a plain Python function of the signature above) as a numba
    ``cfunc``, cached on disk, once per process."""
    global LOG_PROB_SIGNATURE
    if py_func not in _CACHE:
        import numba

        from hamiltonia import _numba_cache

        # A built-in target's kernel is a file of the package: its cache goes to the cache
        # folder, not into the package (a user's kernel is cached where numba puts it).
        _numba_cache.install()
        if LOG_PROB_SIGNATURE is None:
            LOG_PROB_SIGNATURE = _signature()
        from hamiltonia.compiled.compose import SAFE_FASTMATH

        options = {"error_model": "numpy", "fastmath": set(SAFE_FASTMATH)}
        try:
            _CACHE[py_func] = numba.cfunc(LOG_PROB_SIGNATURE, cache=True, **options)(py_func)
        except RuntimeError as err:
            # A function with no source file (a REPL, exec, a doctest) cannot be cached on
            # disk; compile it for this process only.
            if "no locator available" not in str(err):
                raise
            _CACHE[py_func] = numba.cfunc(LOG_PROB_SIGNATURE, cache=False, **options)(py_func)
    return _CACHE[py_func]


@dataclass(frozen=True)
class NumbaTarget:
    """A target's compiled kernel and its data.

    Attributes
    ----------
    function : numba cfunc
        ``log_prob_and_grad(q, grad_out, fdata, idata) -> float``.
    fdata : ndarray of float64
        Flat, contiguous float data.
    idata : ndarray of int64
        Flat, contiguous integer data (sizes).
    device_function : function, optional
        The same log density as a plain Python function for the fused device chain
        (:mod:`hamiltonia.compiled.device_chain`), where ``function``'s own source cannot
        run there (it allocates work arrays); by default the device compiles
        ``function``'s source.
    components : int
        0 for a plain density. A target split into components (:mod:`hamiltonia.targets.split`)
        sets the number :math:`M`: its kernel then reads ``idata[0]`` as the component to
        evaluate (:math:`0..M-1`: :math:`-U_m` and its gradient; ``-1``: the whole density,
        which ``idata`` as given selects). A split integrator's kernel calls it with a private
        copy of ``idata`` whose first entry it sets.
    """

    function: object
    fdata: np.ndarray
    idata: np.ndarray
    components: int = 0
    device_function: Callable | None = None

    def evaluate(self, q) -> tuple[float, np.ndarray]:
        """``(log_prob, grad)`` at ``q`` of shape ``(dim,)``, computed by the *compiled*
        function (calling a numba ``cfunc`` from Python runs its Python source instead, so
        checks of a kernel must go through compiled code, as this does)."""
        q = np.ascontiguousarray(q, dtype=np.float64)
        grad = np.empty_like(q)
        from hamiltonia.compiled.calls import at_point

        lp = at_point(self.function, q, grad, self.fdata, self.idata)
        return lp, grad

    @classmethod
    def build(cls, py_func: Callable, fdata, idata=(), components: int = 0,
              device_function: Callable | None = None) -> NumbaTarget:  # fmt: skip
        """Compile ``py_func`` and normalise the data arrays."""
        return cls(
            compile_log_prob(py_func),
            np.ascontiguousarray(np.asarray(fdata, dtype=np.float64).ravel()),
            np.ascontiguousarray(np.asarray(idata, dtype=np.int64).ravel()),
            int(components),
            device_function,
        )

    def device_source(self) -> Callable | None:
        """The Python function the device chain compiles: ``device_function``, else the
        source of ``function`` (``None`` where it has none)."""
        return self.device_function or getattr(self.function, "_pyfunc", None)

    def evaluate_component(self, q, m: int) -> tuple[float, np.ndarray]:
        """``(log_prob, grad)`` of component ``m`` (``-1``: the whole density) of a split
        target's kernel, computed by the compiled function."""
        if not self.components:
            raise ValueError("this kernel has no components")
        q = np.ascontiguousarray(q, dtype=np.float64)
        grad = np.empty_like(q)
        idata = self.idata.copy()
        idata[0] = m
        from hamiltonia.compiled.calls import at_point

        lp = at_point(self.function, q, grad, self.fdata, idata)
        return lp, grad
