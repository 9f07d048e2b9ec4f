"""Scalar forms of the NumPy functions the part kernels call, for the device chain.

A kernel computes with scalars and loops (its arrays are the chain's, handed to it), so
``np.exp(x)`` in a kernel is the exponential of one number. Numba compiles that on the CPU;
numba CUDA does not lower most NumPy ufuncs (``exp``, ``isfinite``, ``logaddexp``...), so
the composer writes such a call on the device as a call of the function of the same name
here (:func:`hamiltonia.compiled.device_compose.compose_device`), with NumPy's semantics for
scalars: NaN propagates through :func:`maximum` and :func:`minimum` as in NumPy, and
:func:`logaddexp` is NumPy's

.. math::

    \\operatorname{logaddexp}(a, b) = \\max(a, b) + \\log\\bigl(1 + e^{-|a - b|}\\bigr),

with :math:`\\operatorname{logaddexp}(a, a) = a + \\log 2` (also for :math:`a = \\pm\\infty`).

A kernel that calls a NumPy function not named in :data:`SCALAR_FUNCTIONS` (an array
constructor, a reduction) is refused for the device with a message naming the kernel and
the function: its CPU form is untouched.
"""

from __future__ import annotations

import math

__all__ = ["PASSED_THROUGH", "SCALAR_FUNCTIONS"]

_LOG2 = math.log(2.0)
#: The largest argument whose exponential is finite: above it the result is inf (Python's
#: ``math.exp``, which the CUDA simulator runs, raises there instead).
_LOG_MAX = 709.782712893384


def exp(x):
    return math.exp(x) if x <= _LOG_MAX else math.inf if x == x else math.nan


def log(x):
    return math.log(x) if x > 0.0 else (-math.inf if x == 0.0 else math.nan)


def log1p(x):
    return math.log1p(x) if x > -1.0 else (-math.inf if x == -1.0 else math.nan)


def expm1(x):
    return math.expm1(x) if x <= _LOG_MAX else math.inf if x == x else math.nan


def sqrt(x):
    return math.sqrt(x) if x >= 0.0 else math.nan


def tanh(x):
    return math.tanh(x)


def floor(x):
    return float(math.floor(x)) if math.isfinite(x) else x


def ceil(x):
    return float(math.ceil(x)) if math.isfinite(x) else x


def absolute(x):
    return abs(x)


def isfinite(x):
    return math.isfinite(x)


def isnan(x):
    return math.isnan(x)


def isinf(x):
    return math.isinf(x)


def maximum(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return a if a >= b else b


def minimum(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return a if a <= b else b


def fmax(a, b):
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a >= b else b


def fmin(a, b):
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a <= b else b


def logaddexp(a, b):
    if a == b:
        return a + _LOG2
    gap = a - b
    if gap > 0.0:
        return a + math.log1p(math.exp(-gap))
    if gap < 0.0:
        return b + math.log1p(math.exp(gap))
    return math.nan  # a or b is NaN


def logical_not(x):
    return not x


def logical_and(a, b):
    return bool(a) and bool(b)


def logical_or(a, b):
    return bool(a) or bool(b)


def where(condition, a, b):
    return a if condition else b


#: ``np.NAME`` to the scalar function that stands for it on the device.
SCALAR_FUNCTIONS = {
    "exp": exp,
    "log": log,
    "log1p": log1p,
    "expm1": expm1,
    "sqrt": sqrt,
    "tanh": tanh,
    "floor": floor,
    "ceil": ceil,
    "abs": absolute,
    "absolute": absolute,
    "isfinite": isfinite,
    "isnan": isnan,
    "isinf": isinf,
    "maximum": maximum,
    "minimum": minimum,
    "fmax": fmax,
    "fmin": fmin,
    "logaddexp": logaddexp,
    "logical_not": logical_not,
    "logical_and": logical_and,
    "logical_or": logical_or,
    "where": where,
}
#: NumPy names a device kernel may use as they are: constants and scalar types.
PASSED_THROUGH = frozenset(
    {"inf", "nan", "pi", "e", "float64", "int64", "uint64", "uint32", "int32", "bool_"}
)
