"""Elementary functions for maths written once and run on both paths.

A part's numbers live in small functions that numba compiles into the chain kernel (on
scalars) and that the vectorised path calls on the chains' arrays, which may belong to any
array backend (:mod:`hamiltonia.backend`: NumPy, CuPy, array_api_strict). ``np.exp`` serves
the first two but not a CuPy or strict array, and ``xp.exp`` cannot be compiled. The
functions here serve all three: called from Python, each takes the namespace of its
argument (:func:`hamiltonia.backend.namespace_of`); inside a kernel, the composition
(:mod:`hamiltonia.compiled.compose`) writes NumPy's function in its place, which numba
compiles. A part author writes

.. code-block:: python

    from hamiltonia.elementary import exp

    def momentum_rescale(old_log_mass, new_log_mass):
        return exp(0.5 * (new_log_mass - old_log_mass))

and the same line runs in the kernel and on a GPU. On NumPy arrays the result is NumPy's own
to the bit, so the paths keep their draws. Import the functions by name, as above: a kernel
that reaches them through the module (``elementary.exp``) is not rewritten.
"""

from __future__ import annotations

import math

import numpy as np

from hamiltonia import backend

__all__ = ["Elementary", "cos", "exp", "expm1", "log", "log1p", "sin", "sinc", "sqrt", "tanh"]


class Elementary:
    """An elementary function on scalars and arrays of any backend, which a kernel calls
    as ``numpy.NAME`` (the class of the functions of this module).

    Parameters
    ----------
    name : str
        The function's name in NumPy (what a kernel calls) and in the array API (what the
        vectorised path calls on another backend's arrays).
    portable : callable, optional
        ``portable(xp, x)``: the function through the array API, for one the standard does
        not have (NumPy's ``sinc``); it must compute what NumPy computes.
    """

    def __init__(self, name: str, portable=None):
        self.name = name
        self._numpy = getattr(np, name)
        self._portable = portable
        self.__name__ = self.__qualname__ = name
        self.__doc__ = f"``numpy.{name}`` on scalars and arrays of any array backend."

    def __call__(self, x):
        space = backend.namespace_of(x)
        if space is np:
            return self._numpy(x)
        if self._portable is not None:
            return self._portable(space, x)
        return getattr(space, self.name)(x)

    def __repr__(self) -> str:
        return f"<elementary function {self.name}>"


def _portable_sinc(xp, x):
    # NumPy's own formula (numpy.sinc), so that every backend rounds as NumPy does.
    y = math.pi * xp.where(x == 0, 1.0e-20, x)
    return xp.sin(y) / y


exp = Elementary("exp")
expm1 = Elementary("expm1")
log = Elementary("log")
log1p = Elementary("log1p")
sqrt = Elementary("sqrt")
sin = Elementary("sin")
cos = Elementary("cos")
tanh = Elementary("tanh")
#: The normalised :math:`\operatorname{sinc} x = \sin(\pi x) / (\pi x)`, 1 at 0 (NumPy's).
sinc = Elementary("sinc", _portable_sinc)
