"""A log density and its reverse-mode gradient, written as numba source from a traced graph.

:func:`gradient_source` turns a :class:`~hamiltonia.modelling.trace.Graph` into the text of a
function of the compiled-target signature (:mod:`hamiltonia.compiled.targets`)

.. code-block:: python

    def log_prob_and_grad(q, grad_out, fdata, idata) -> float

made of two straight-line passes. The forward pass computes every recorded value
:math:`v_k = f_k(v_{\\pi(k)})` in the recorded order; the reverse pass accumulates the
adjoints :math:`\\bar v_k = \\partial \\log\\pi / \\partial v_k` from
:math:`\\bar v_{\\text{out}} = 1` back to the input by the chain rule

.. math::

    \\bar v_j \\mathrel{+}= \\sum_{k : j \\in \\pi(k)} \\bar v_k \\,
        \\frac{\\partial f_k}{\\partial v_j},

each term written by the rule of :math:`f_k` (:data:`RULES`) as a vector-Jacobian product
in NumPy operations numba compiles; broadcasting is undone by summing over the broadcast
axes, shapes being known when the source is written. This is reverse-mode automatic
differentiation by source transformation (Griewank and Walther 2008, ch. 3 and 6) with the
tape of autograd (Maclaurin et al. 2015) as the source.

The arrays the density closes over (data) are not written into the source: they go into
``fdata`` (floats) and ``idata`` (integers and booleans), so one compiled function serves
every data set of the same shapes, and the numba cache keeps it across processes.

Every rule is tested against autograd's own derivative (``tests/modelling/test_adjoint.py``),
and a model built on this path is checked against autograd at test points when it is built.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hamiltonia.modelling.trace import Graph, Op, TraceError

__all__ = ["RULES", "SourceFunction", "gradient_source", "supported_functions"]


# ---------------------------------------------------------------------------- code helpers
def _shape_code(shape) -> str:
    shape = tuple(int(s) for s in shape)
    return "(" + "".join(f"{s}, " for s in shape).rstrip(" ") + ")" if shape else "()"


def _literal(value) -> str:
    """Source of a scalar constant (negative numbers parenthesised, as they may be the base
    of a power)."""
    value = np.asarray(value).item()
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(value) if value >= 0 else f"({value})"
    value = float(value)
    if np.isnan(value):
        return "np.nan"
    if np.isinf(value):
        return "np.inf" if value > 0 else "(-np.inf)"
    return repr(value) if value >= 0 else f"({value!r})"


def reshape_code(code: str, source: tuple, target: tuple) -> str:
    """``code`` (a value of shape ``source``) as shape ``target`` (same size)."""
    source, target = tuple(source), tuple(target)
    if source == target:
        return code
    if not target:
        return f"{code}[{', '.join('0' * len(source))}]" if source else code
    if not source:
        return f"np.full({_shape_code(target)}, {code})"
    return f"np.ascontiguousarray({code}).reshape({_shape_code(target)})"


def sum_axis_code(code: str, axis: int, ndim: int) -> str:
    """``code`` (``ndim`` dimensions) summed over ``axis``; a 1-d value by the plain sum, the
    same number: numba compiles a sum over an axis, with its bounds check and the error
    message it formats, in about 2.5 s, once per process, on a model's first compilation."""
    return f"np.sum({code})" if ndim == 1 else f"np.sum({code}, axis={axis})"


def unbroadcast_code(code: str, source: tuple, target: tuple) -> str:
    """Sum ``code`` (shape ``source``) over the axes that broadcasting added to ``target``."""
    source, target = tuple(source), tuple(target)
    if source == target:
        return code
    if not target:
        return f"np.sum({code})" if source else code
    if not source:  # a scalar adjoint spread over an array operand
        return f"np.full({_shape_code(target)}, {code})"
    lead = len(source) - len(target)
    for k in range(lead):
        code = sum_axis_code(code, 0, len(source) - k)
    kept = source[lead:]
    for axis in reversed(range(len(target))):
        if target[axis] == 1 and kept[axis] != 1:
            code = sum_axis_code(code, axis, len(kept))
            kept = kept[:axis] + kept[axis + 1 :]
    return reshape_code(code, kept, target)


def broadcast_code(code: str, source: tuple, target: tuple) -> str:
    """``code`` (shape ``source``) broadcast to ``target`` as a new array."""
    source, target = tuple(source), tuple(target)
    if source == target:
        return code
    if not source:
        return f"np.full({_shape_code(target)}, {code})"
    return f"np.broadcast_to({code}, {_shape_code(target)}).copy()"


# ---------------------------------------------------------------------------- the emitter
@dataclass
class SourceFunction:
    """A generated log density: its source, and the data it reads."""

    text: str
    fdata: np.ndarray
    idata: np.ndarray


class _Emitter:
    """Names the values of a graph and lays the data out in ``fdata``/``idata``."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.fdata: list[np.ndarray] = []
        self.idata: list[np.ndarray] = []
        self.offsets = [0, 0]
        self.constants: dict[int, str] = {}
        self.setup: list[str] = []
        self.counter = 0
        self.memo: dict = {}

    def temp(self, stem: str = "t") -> str:
        self.counter += 1
        return f"{stem}_{self.counter}"

    def constant(self, value) -> str:
        """Source of a constant argument: a literal for a number, a slice of ``fdata`` or
        ``idata`` for an array."""
        key = id(value)  # the graph holds every argument, so the id stays its own
        if key in self.constants:
            return self.constants[key]
        if isinstance(value, list):
            value = np.asarray(value)
        if not isinstance(value, np.ndarray | np.generic | int | float | bool):
            raise TraceError(f"a constant of type {type(value).__name__} cannot be compiled")
        array = np.asarray(value)
        if array.ndim == 0:
            return _literal(array)
        name = f"c_{len(self.constants)}"
        shape = _shape_code(array.shape)
        if array.dtype.kind == "f":
            store, flat, which = self.fdata, "fdata", 0
            data = np.ascontiguousarray(array, dtype=np.float64).ravel()
            suffix = ""
        elif array.dtype.kind in "iub":
            store, flat, which = self.idata, "idata", 1
            data = np.ascontiguousarray(array, dtype=np.int64).ravel()
            suffix = " != 0" if array.dtype.kind == "b" else ""
        else:
            raise TraceError(f"a constant array of dtype {array.dtype} cannot be compiled")
        start = self.offsets[which]
        self.offsets[which] += data.size
        store.append(data)
        code = f"{flat}[{start}:{start + data.size}]"
        if array.ndim > 1:
            # Not for a 1-d constant, which the slice is: numba compiles a reshape with the
            # error message it formats (this, the axis sums of sum_axis_code and an array
            # added into a slice took 2.7 s of eight schools' first compilation).
            code = f"{code}.reshape({shape})"
        self.setup.append(f"{name} = ({code}{suffix})" if suffix else f"{name} = {code}")
        self.constants[key] = name
        return name

    def operands(self, k: int, op: Op) -> list:
        """Source of each positional argument: ``v_j`` for a traced one, a constant's source
        for a number or an array, ``None`` for anything else (shapes, axes, indices)."""
        codes = []
        for i, arg in enumerate(op.args):
            if i in op.parents:
                codes.append(f"v_{op.parents[i]}")
            elif _numeric(arg):
                codes.append(self.constant(arg))
            else:
                codes.append(None)
        return codes


def _numeric(arg) -> bool:
    """Whether an argument is a number or an array (or list) of numbers: data, not a
    shape, an axis or an index."""
    if isinstance(arg, np.ndarray | np.generic | int | float | bool):
        return np.asarray(arg).dtype.kind in "fiub"
    if isinstance(arg, list):
        try:
            return np.asarray(arg).dtype.kind in "fiub"
        except ValueError:
            return False
    return False


def _shape_of(graph: Graph, op: Op, i: int) -> tuple:
    if i in op.parents:
        return graph.ops[op.parents[i]].shape
    return tuple(np.shape(op.args[i]))


# ---------------------------------------------------------------------------- rules
class Rule:
    """How one primitive is written: its forward value and the vector-Jacobian product of
    each argument. ``adjoint`` returns the contribution's source (shape of the argument), a
    list of statements ``(…, target)`` writing into the argument's adjoint, or ``None`` when
    the argument has no derivative."""

    def forward(self, e: _Emitter, op: Op, a: list) -> str:
        raise NotImplementedError

    def adjoint(self, e: _Emitter, op: Op, i: int, g: str, a: list, out: str):
        return None


class Elementwise(Rule):
    """An elementwise function: ``forward`` and each argument's derivative as templates in
    ``{0}``, ``{1}`` (the arguments), ``{g}`` (the adjoint) and ``{out}`` (the value)."""

    def __init__(self, forward: str, *adjoints: str | None):
        self.template, self.adjoints = forward, adjoints

    def forward(self, e, op, a):
        return self.template.format(*a)

    def adjoint(self, e, op, i, g, a, out):
        if i >= len(self.adjoints) or self.adjoints[i] is None:
            return None
        code = self.adjoints[i].format(*a, g=g, out=out)
        return unbroadcast_code(code, op.shape, _shape_of(e.graph, op, i))


class Power(Rule):
    """:math:`a^b`: :math:`\\bar a = \\bar v\\, b\\, a^{b-1}`,
    :math:`\\bar b = \\bar v\\, v \\log a` (with :math:`\\log 1` where :math:`a = 0`, as
    autograd)."""

    def forward(self, e, op, a):
        if 1 not in op.parents and np.ndim(op.args[1]) == 0:
            b = float(op.args[1])
            if b == 2.0:
                return f"{a[0]} * {a[0]}"
            if b == 0.5:
                return f"np.sqrt({a[0]})"
        return f"{a[0]} ** {a[1]}"

    def adjoint(self, e, op, i, g, a, out):
        if i == 0:
            if 1 not in op.parents and np.ndim(op.args[1]) == 0 and float(op.args[1]) == 2.0:
                code = f"2.0 * {g} * {a[0]}"
            else:
                code = f"{g} * {a[1]} * {a[0]} ** ({a[1]} - 1.0)"
        else:
            code = f"{g} * {out} * np.log(np.abs({a[0]}) + ({a[0]} == 0.0))"
        return unbroadcast_code(code, op.shape, _shape_of(e.graph, op, i))


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return tuple(sorted(int(x) % ndim for x in axes)) if ndim else ()


def _bound(fun: Callable, op: Op, **defaults) -> dict:
    """The arguments of ``op`` by name (``fun``'s signature)."""
    import inspect

    values = inspect.signature(fun).bind(*op.args, **op.kwargs).arguments
    return {**defaults, **values}


class Sum(Rule):
    """:math:`v = \\sum_{\\text{axes}} a`: :math:`\\bar a` is :math:`\\bar v` spread back over the
    summed axes; ``mean`` divides by their size."""

    def __init__(self, mean: bool = False):
        self.mean = mean

    def _plan(self, e, op):
        args = _bound(np.sum, op, axis=None, keepdims=False)
        source = _shape_of(e.graph, op, 0)
        if args.get("dtype") is not None or args.get("out") is not None:
            raise TraceError(f"np.{op.name} with dtype= or out= cannot be compiled")
        axes = _axes(args["axis"], len(source))
        count = int(np.prod([source[x] for x in axes], dtype=int))
        return source, axes, count

    def forward(self, e, op, a):
        source, axes, count = self._plan(e, op)
        if not source:
            code = a[0]
        elif len(axes) == len(source):
            code = f"np.sum({a[0]})"
        else:
            code, kept = a[0], list(source)
            for axis in reversed(axes):
                code = sum_axis_code(code, axis, len(kept))
                del kept[axis]
            code = reshape_code(code, tuple(kept), op.shape)
        if len(axes) == len(source) and op.shape != ():
            code = reshape_code(code, (), op.shape)
        return f"{code} / {count}.0" if self.mean else code

    def adjoint(self, e, op, i, g, a, out):
        source, axes, count = self._plan(e, op)
        keep = tuple(1 if x in axes else s for x, s in enumerate(source))
        if op.shape == ():
            code = broadcast_code(g, (), source)
        else:
            code = broadcast_code(reshape_code(g, op.shape, keep), keep, source)
        return f"{code} / {count}.0" if self.mean else code


class Reshape(Rule):
    """Any change of shape that keeps the order of the elements (``reshape``, ``ravel``,
    ``squeeze``, ``expand_dims``): the adjoint is reshaped back."""

    def forward(self, e, op, a):
        return reshape_code(a[0], _shape_of(e.graph, op, 0), op.shape)

    def adjoint(self, e, op, i, g, a, out):
        return reshape_code(g, op.shape, _shape_of(e.graph, op, 0))


class Transpose(Rule):
    """:math:`v = a^{\\top}` (any permutation of axes): the adjoint is permuted back."""

    def _axes(self, e, op):
        axes = _bound(np.transpose, op, axes=None)["axes"]
        n = len(_shape_of(e.graph, op, 0))
        return tuple(reversed(range(n))) if axes is None else tuple(int(x) % n for x in axes)

    def forward(self, e, op, a):
        axes = self._axes(e, op)
        if axes == (1, 0):  # a Fortran-ordered view, which BLAS takes without a copy
            return f"{a[0]}.T"
        return f"np.transpose({a[0]}, {_shape_code(axes)})"

    def adjoint(self, e, op, i, g, a, out):
        inverse = tuple(int(x) for x in np.argsort(self._axes(e, op)))
        if inverse == (1, 0):
            return f"{g}.T"
        return f"np.transpose({g}, {_shape_code(inverse)})"


class CumulativeSum(Rule):
    """:math:`v_i = \\sum_{j \\le i} a_j` of a vector: :math:`\\bar a_j = \\sum_{i \\ge j} \\bar
    v_i`."""

    def forward(self, e, op, a):
        axis = _bound(np.cumsum, op, axis=None)["axis"]
        source = _shape_of(e.graph, op, 0)
        if len(source) != 1 or axis not in (None, 0, -1):
            raise TraceError("np.cumsum can be compiled only for a vector")
        return f"np.cumsum({a[0]})"

    def adjoint(self, e, op, i, g, a, out):
        return f"np.cumsum({g}[::-1])[::-1]"


class Extremum(Rule):
    """:math:`v = \\max a` (or min) over all elements: the adjoint goes to the maxima,
    shared equally between ties (as autograd)."""

    def __init__(self, name: str):
        self.name = name

    def forward(self, e, op, a):
        if _bound(getattr(np, self.name), op, axis=None)["axis"] is not None:
            raise TraceError(f"np.{self.name} can be compiled only over all elements (no axis)")
        return f"np.{self.name}({a[0]})"

    def adjoint(self, e, op, i, g, a, out):
        return f"{g} * ({a[0]} == {out}) / np.sum({a[0]} == {out})"


class LogSumExp(Rule):
    """:math:`v = \\log \\sum_i e^{a_i}` over all elements or over some axes (the others
    kept, as a mixture's components): :math:`\\bar a = \\bar v\\, e^{a - v}`, with
    :math:`\\bar v` and :math:`v` spread back over the summed axes."""

    def _plan(self, e, op):
        from scipy.special import logsumexp

        args = _bound(logsumexp, op, axis=None, b=None, keepdims=False, return_sign=False)
        if args["b"] is not None or args["return_sign"]:
            raise TraceError(
                "logsumexp can be compiled without b= and return_sign= (add log b to the "
                "terms instead)"
            )
        source = _shape_of(e.graph, op, 0)
        axes = _axes(args["axis"], len(source))
        keep = tuple(1 if x in axes else n for x, n in enumerate(source))
        return source, axes, keep

    def forward(self, e, op, a):
        source, axes, _ = self._plan(e, op)
        if len(axes) == len(source):
            return reshape_code(f"logsumexp_all({a[0]})", (), op.shape)
        kept = [x for x in range(len(source)) if x not in axes]
        order = (*kept, *axes)
        code = a[0]
        if order != tuple(range(len(source))):
            code = f"np.transpose({code}, {_shape_code(order)})"
        rows = int(np.prod([source[x] for x in kept], dtype=int))
        size = int(np.prod([source[x] for x in axes], dtype=int))
        code = f"logsumexp_rows(np.ascontiguousarray({code}).reshape(({rows}, {size})))"
        return reshape_code(code, (rows,), op.shape)

    def adjoint(self, e, op, i, g, a, out):
        source, _, keep = self._plan(e, op)
        if op.shape == ():
            return f"{g} * np.exp({a[0]} - {out})"
        spread = [broadcast_code(reshape_code(x, op.shape, keep), keep, source) for x in (g, out)]
        return f"{spread[0]} * np.exp({a[0]} - {spread[1]})"


def _contiguous(code: str) -> str:
    """A traced value or an adjoint as a C-contiguous array for BLAS (no copy when it is
    one already); constants are contiguous slices of ``fdata``."""
    return f"np.ascontiguousarray({code})" if code.startswith(("v_", "g_")) else code


class Dot(Rule):
    """``np.dot`` and ``@`` of vectors and matrices: for :math:`v = A b`,
    :math:`\\bar A = \\bar v\\, b^{\\top}` and :math:`\\bar b = A^{\\top} \\bar v`."""

    def forward(self, e, op, a):
        left, right = _shape_of(e.graph, op, 0), _shape_of(e.graph, op, 1)
        if not left or not right:
            return f"{a[0]} * {a[1]}"
        if len(left) > 2 or len(right) > 2:
            raise TraceError("np.dot / @ can be compiled for vectors and matrices only")
        return f"np.dot({_contiguous(a[0])}, {_contiguous(a[1])})"

    def adjoint(self, e, op, i, g, a, out):
        left, right = _shape_of(e.graph, op, 0), _shape_of(e.graph, op, 1)
        if not left or not right:
            code = f"{g} * {a[1 - i]}"
            return unbroadcast_code(code, op.shape, (left, right)[i])
        x, y, g = _contiguous(a[0]), _contiguous(a[1]), _contiguous(g)
        kind = (len(left), len(right))
        if kind == (1, 1):
            return f"{g} * {a[1 - i]}"
        if kind == (2, 1):
            return f"np.outer({g}, {y})" if i == 0 else f"np.dot({x}.T, {g})"
        if kind == (1, 2):
            return f"np.dot({y}, {g})" if i == 0 else f"np.outer({x}, {g})"
        return f"np.dot({g}, {y}.T)" if i == 0 else f"np.dot({x}.T, {g})"


class Where(Rule):
    """``np.where(c, x, y)``: the adjoint goes to ``x`` where ``c`` holds, to ``y``
    elsewhere."""

    def forward(self, e, op, a):
        if op.shape == ():
            return f"({a[1]} if {a[0]} else {a[2]})"
        parts = [broadcast_code(a[i], _shape_of(e.graph, op, i), op.shape) for i in range(3)]
        return f"np.where({parts[0]}, {parts[1]}, {parts[2]})"

    def adjoint(self, e, op, i, g, a, out):
        if i == 0:
            return None
        keep = a[0] if i == 1 else f"~({a[0]})" if op.shape else f"not {a[0]}"
        code = f"({g} * ({keep}))"
        return unbroadcast_code(code, op.shape, _shape_of(e.graph, op, i))


class NormalLogPdf(Rule):
    """``scipy.stats.norm.logpdf(x, loc, scale)``:
    :math:`-\\tfrac12 z^2 - \\log s - \\tfrac12\\log 2\\pi`, :math:`z = (x - m)/s`."""

    _HALF_LOG_2PI = 0.9189385332046727

    def _codes(self, e, op, a):
        names = ("x", "loc", "scale")
        defaults = {"loc": "0.0", "scale": "1.0"}
        codes = {}
        for i, name in enumerate(names):
            if i < len(a):
                codes[name] = a[i]
            elif name in op.kwargs:
                codes[name] = e.constant(op.kwargs[name])
            else:
                codes[name] = defaults.get(name)
        if set(op.kwargs) - {"loc", "scale"}:
            raise TraceError(f"norm.logpdf with {sorted(op.kwargs)} cannot be compiled")
        if len(a) > 3:
            raise TraceError("norm.logpdf takes x, loc, scale")
        return codes

    def forward(self, e, op, a):
        c = self._codes(e, op, a)
        return (f"-0.5 * (({c['x']} - {c['loc']}) / {c['scale']}) ** 2 - np.log({c['scale']})"
                f" - {self._HALF_LOG_2PI}")  # fmt: skip

    def adjoint(self, e, op, i, g, a, out):
        c = self._codes(e, op, a)
        z = f"(({c['x']} - {c['loc']}) / {c['scale']})"
        code = {
            0: f"-{g} * {z} / {c['scale']}",
            1: f"{g} * {z} / {c['scale']}",
            2: f"{g} * ({z} * {z} - 1.0) / {c['scale']}",
        }[i]
        return unbroadcast_code(code, op.shape, _shape_of(e.graph, op, i))


class Concatenate(Rule):
    """autograd's ``concatenate_args(axis, *arrays)``: each argument's adjoint is its slice
    of the result's."""

    def _axis(self, op):
        return int(op.args[0]) % len(op.shape)

    def forward(self, e, op, a):
        parts = []
        for i in range(1, len(op.args)):
            shape = _shape_of(e.graph, op, i)
            parts.append(f"np.ascontiguousarray({a[i]})" if shape else a[i])
        return f"np.concatenate(({', '.join(parts)},), axis={self._axis(op)})"

    def adjoint(self, e, op, i, g, a, out):
        axis = self._axis(op)
        start = sum(_shape_of(e.graph, op, j)[axis] for j in range(1, i))
        size = _shape_of(e.graph, op, i)[axis]
        index = ":, " * axis + f"{start}:{start + size}"
        return f"{g}[{index}]"


class ArrayFromArgs(Rule):
    """``np.array([a, b, ...])`` of traced numbers: the adjoint of each is its entry."""

    def forward(self, e, op, a):
        if (
            any(_shape_of(e.graph, op, i) for i in range(2, len(op.args)))
            or op.args[0]
            or (op.args[1])
        ):
            raise TraceError("np.array(...) of traced values can be compiled for numbers only")
        return f"np.array([{', '.join(a[2:])}])"

    def adjoint(self, e, op, i, g, a, out):
        return f"{g}[{i - 2}]"


class ArrayOf(Rule):
    """autograd's ``np.array(x)`` of one traced value: the value itself."""

    def forward(self, e, op, a):
        return reshape_code(a[2], _shape_of(e.graph, op, 2), op.shape)

    def adjoint(self, e, op, i, g, a, out):
        return reshape_code(g, op.shape, _shape_of(e.graph, op, 2))


class GetItem(Rule):
    """Indexing ``a[idx]`` with integers, slices, ``None``, ``...`` and one integer (or
    boolean) array: the adjoint is scattered back, adding over repeated indices."""

    def _index(self, e, op):
        memo = e.memo.setdefault(id(op), None)
        if memo is None:
            memo = e.memo[id(op)] = self._parse(op)
        return memo

    def _parse(self, op):
        idx = op.args[1]
        parts = idx if isinstance(idx, tuple) else (idx,)
        codes, array_at, index_array = [], None, None
        for j, part in enumerate(parts):
            if part is None:
                codes.append("None")
            elif part is Ellipsis:
                codes.append("...")
            elif isinstance(part, slice):
                codes.append(":".join("" if v is None else str(int(v))
                                      for v in (part.start, part.stop, part.step)))  # fmt: skip
            elif isinstance(part, int | np.integer):
                codes.append(str(int(part)))
            else:
                array = np.asarray(part)
                if array.dtype.kind == "b":
                    if array.ndim != 1:
                        raise TraceError("only a 1-d boolean mask can be compiled as an index")
                    array = np.flatnonzero(array)
                if array.dtype.kind not in "iu" or array.ndim != 1 or index_array is not None:
                    raise TraceError(
                        "indexing can be compiled with at most one 1-d integer or boolean "
                        "array among integers, slices, None and ..."
                    )
                index_array, array_at = array.astype(np.int64), j
                codes.append(None)
        return parts, codes, array_at, index_array

    def _of_number(self, e, op) -> bool:
        """Whether the indexed value is a number (only new axes and ``...`` apply)."""
        if _shape_of(e.graph, op, 0):
            return False
        if any(p is not None and p is not Ellipsis for p in self._index(e, op)[0]):
            raise TraceError("a number can be indexed only by None and ...")
        return True

    def forward(self, e, op, a):
        if self._of_number(e, op):
            return reshape_code(a[0], (), op.shape)
        _, codes, array_at, index_array = self._index(e, op)
        codes = list(codes)
        if array_at is not None:
            codes[array_at] = e.constant(index_array)
        return f"{a[0]}[{', '.join(codes)}]"

    @staticmethod
    def _scatter(e, codes, array_at, index_array, source, g) -> list[str]:
        """The adjoint of ``a[..., idx, ...]``: an integer array ``idx`` on one axis and
        whole axes (``:`` or ``...``) on the others, added back element by element (a
        repeated index adds)."""
        # "..." as the whole axes it stands for, so that the array's axis is known.
        explicit = sum(c != "..." for c in codes)
        axes = []
        for c in codes:
            axes.extend(["::"] * (len(source) - explicit) if c == "..." else [c])
        axes += ["::"] * (len(source) - len(axes))  # the axes left out are taken whole
        at = [j for j, c in enumerate(axes) if c is None]
        if len(axes) != len(source) or any(c not in ("::", None) for c in axes) or len(at) != 1:
            raise TraceError(
                "the gradient of indexing by an array is compiled when the other axes are "
                "taken whole (a[idx], a[..., idx], a[:, idx])"
            )
        name, k = e.constant(index_array), e.temp("k")
        lines = [f"for {k} in range({len(index_array)}):"]
        into, outof = [], []
        for axis, n in enumerate(source):
            if axis == at[0]:
                into.append(f"{name}[{k}]")
                outof.append(k)
                continue
            j = e.temp("k")
            lines.append("    " * len(lines) + f"for {j} in range({n}):")
            into.append(j)
            outof.append(j)
        lines.append(
            "    " * len(lines) + f"{{target}}[{', '.join(into)}] += {g}[{', '.join(outof)}]"
        )
        return lines

    def adjoint(self, e, op, i, g, a, out):
        if self._of_number(e, op):
            return reshape_code(g, op.shape, ())
        parts, codes, array_at, index_array = self._index(e, op)
        source = _shape_of(e.graph, op, 0)
        if array_at is not None:
            return self._scatter(e, codes, array_at, index_array, source, g)
        if all(c in ("None", "...") for c in codes):
            # Only new axes: the whole operand, whose adjoint is this one reshaped (an
            # expression, as numba cannot write through an index of ``...`` alone).
            return reshape_code(g, op.shape, source)
        # Drop the new axes (None) for the write, reshaping the adjoint to match.
        basic = tuple(p for p in parts if p is not None)
        kept = tuple(np.empty(source)[basic].shape)
        index = ", ".join(c for c in codes if c != "None")
        value = reshape_code(g, op.shape, kept)
        if not kept:
            return [f"{{target}}[{index}] += {value}"]
        # Element by element into the view: numba compiles an array assigned to a slice
        # with the error message it formats for a mismatch of shapes, about 1.7 s once
        # per process on a model's first compilation; the shapes here are known to agree.
        view, src = e.temp("view"), e.temp("src")
        ks = [e.temp("k") for _ in kept]
        lines = [f"{view} = {{target}}[{index}]", f"{src} = {value}"]
        for depth, (k, n) in enumerate(zip(ks, kept, strict=True)):
            lines.append("    " * depth + f"for {k} in range({n}):")
        at = ", ".join(ks)
        lines.append("    " * len(kept) + f"{view}[{at}] += {src}[{at}]")
        return lines


# One template per elementwise function: forward, then the derivative of each argument.
_G = "{g}"
RULES: dict[Callable, Rule] = {
    np.add: Elementwise("{0} + {1}", _G, _G),
    np.subtract: Elementwise("{0} - {1}", _G, f"-{_G}"),
    np.multiply: Elementwise("{0} * {1}", "{g} * {1}", "{g} * {0}"),
    np.true_divide: Elementwise("{0} / {1}", "{g} / {1}", "-{g} * {out} / {1}"),
    np.negative: Elementwise("-{0}", f"-{_G}"),
    np.power: Power(),
    np.square: Elementwise("{0} * {0}", "2.0 * {g} * {0}"),
    np.sqrt: Elementwise("np.sqrt({0})", "0.5 * {g} / {out}"),
    np.reciprocal: Elementwise("1.0 / {0}", "-{g} * {out} * {out}"),
    np.exp: Elementwise("np.exp({0})", "{g} * {out}"),
    np.expm1: Elementwise("np.expm1({0})", "{g} * ({out} + 1.0)"),
    np.log: Elementwise("np.log({0})", "{g} / {0}"),
    np.log1p: Elementwise("np.log1p({0})", "{g} / (1.0 + {0})"),
    np.logaddexp: Elementwise(
        "np.logaddexp({0}, {1})", "{g} * np.exp({0} - {out})", "{g} * np.exp({1} - {out})"
    ),
    np.tanh: Elementwise("np.tanh({0})", "{g} * (1.0 - {out} * {out})"),
    np.sinh: Elementwise("np.sinh({0})", "{g} * np.cosh({0})"),
    np.cosh: Elementwise("np.cosh({0})", "{g} * np.sinh({0})"),
    np.sin: Elementwise("np.sin({0})", "{g} * np.cos({0})"),
    np.cos: Elementwise("np.cos({0})", "-{g} * np.sin({0})"),
    np.arctan: Elementwise("np.arctan({0})", "{g} / (1.0 + {0} * {0})"),
    np.absolute: Elementwise("np.abs({0})", "{g} * np.sign({0})"),
    np.maximum: Elementwise("np.maximum({0}, {1})", "{g} * ({0} >= {1})", "{g} * ({0} < {1})"),
    np.minimum: Elementwise("np.minimum({0}, {1})", "{g} * ({0} <= {1})", "{g} * ({0} > {1})"),
    np.sum: Sum(),
    np.mean: Sum(mean=True),
    np.reshape: Reshape(),
    np.ravel: Reshape(),
    np.squeeze: Reshape(),
    np.expand_dims: Reshape(),
    np.transpose: Transpose(),
    np.cumsum: CumulativeSum(),
    np.max: Extremum("max"),
    np.min: Extremum("min"),
    np.amax: Extremum("max"),
    np.amin: Extremum("min"),
    np.dot: Dot(),
    np.matmul: Dot(),
    np.where: Where(),
}
# Functions without a derivative (comparisons, rounding): their values are compiled, and
# nothing flows back through them.
for _fun, _template in {
    np.greater: "{0} > {1}", np.greater_equal: "{0} >= {1}", np.less: "{0} < {1}",
    np.less_equal: "{0} <= {1}", np.equal: "{0} == {1}", np.not_equal: "{0} != {1}",
    np.sign: "np.sign({0})", np.floor: "np.floor({0})", np.ceil: "np.ceil({0})",
    np.isfinite: "np.isfinite({0})", np.logical_and: "np.logical_and({0}, {1})",
    np.logical_or: "np.logical_or({0}, {1})", np.logical_not: "np.logical_not({0})",
}.items():  # fmt: skip
    RULES[_fun] = Elementwise(_template)


def _register_wrapped() -> None:
    """Rules for functions autograd defines itself or takes from SciPy (scipy.stats's on
    first need: :func:`_register_stats`)."""
    import scipy.special as special
    from autograd.numpy import numpy_wrapper
    from autograd.numpy.numpy_boxes import ArrayBox

    RULES[numpy_wrapper.concatenate_args.fun] = Concatenate()
    RULES[numpy_wrapper.array_from_args.fun] = ArrayFromArgs()
    RULES[numpy_wrapper._array_from_scalar_or_array.fun] = ArrayOf()
    RULES[ArrayBox.__getitem__.fun] = GetItem()
    RULES[special.expit] = Elementwise("1.0 / (1.0 + np.exp(-{0}))", "{g} * {out} * (1.0 - {out})")
    RULES[special.gammaln] = Elementwise("lgamma({0})", "{g} * digamma({0})")
    RULES[special.logsumexp] = LogSumExp()


def _register_stats() -> None:
    """The rule for ``scipy.stats.norm.logpdf``, registered when first needed: importing
    scipy.stats takes 0.4 s of a model's first compilation that does not use it (a model
    that calls it through ``autograd.scipy.stats`` has imported it already)."""
    import scipy.stats

    RULES.setdefault(scipy.stats.norm.logpdf, NormalLogPdf())


_register_wrapped()


def _rule(op: Op) -> Rule:
    rule = RULES.get(op.fun)
    if rule is None and "scipy.stats" in sys.modules:
        _register_stats()
        rule = RULES.get(op.fun)
    if rule is None:
        raise TraceError(
            f"{op.name} has no compiled derivative; the functions that have one are: "
            f"{', '.join(supported_functions())}"
        )
    return rule


def supported_functions() -> list[str]:
    """Names of the functions a compiled gradient can be generated for."""
    _register_stats()
    names = set()
    for fun in RULES:
        name = getattr(fun, "__name__", "")
        names.add("indexing" if name == "__getitem__" else name or repr(fun))
    return sorted(names)


# ---------------------------------------------------------------------------- generation
def gradient_source(graph: Graph, name: str = "log_prob_and_grad") -> SourceFunction:
    """The source of ``name(q, grad_out, fdata, idata) -> float`` computing the traced log
    density at ``q`` and writing its gradient into ``grad_out``."""
    e = _Emitter(graph)
    ops = graph.ops
    out = len(ops) - 1
    forward = ["v_0 = q"]
    for k in range(1, len(ops)):
        op = ops[k]
        kind = np.asarray(op.value).dtype.kind
        if kind not in "fbiu":
            raise TraceError(f"{op.name} gives values of dtype {np.asarray(op.value).dtype}")
        forward.append(f"v_{k} = {_rule(op).forward(e, op, e.operands(k, op))}")
    # Contributions to each adjoint, from the output back to the input.
    contributions: dict[int, list] = {}
    reached = {out}
    for k in range(out, 0, -1):
        if k not in reached:
            continue
        op = ops[k]
        rule, a = _rule(op), e.operands(k, op)
        for i, j in sorted(op.parents.items()):
            code = rule.adjoint(e, op, i, f"g_{k}", a, f"v_{k}")
            if code is None:
                continue
            contributions.setdefault(k, []).append((j, code))
            reached.add(j)
    counts: dict[int, int] = {}
    scatters = set()
    for items in contributions.values():
        for j, code in items:
            counts[j] = counts.get(j, 0) + 1
            if isinstance(code, list):
                scatters.add(j)
    backward = [f"g_{out} = 1.0", "g_0 = grad_out", "g_0[:] = 0.0"]
    declared = {0, out}
    for k in range(out, 0, -1):
        for j, code in contributions.get(k, []):
            shape = ops[j].shape
            accumulate = j == 0 or counts[j] > 1 or j in scatters
            if j not in declared:
                declared.add(j)
                if accumulate:
                    backward.append(f"g_{j} = np.zeros({_shape_code(shape)})" if shape
                                    else f"g_{j} = 0.0")  # fmt: skip
                else:
                    backward.append(f"g_{j} = {code}")
                    continue
            if isinstance(code, list):
                backward.extend(line.format(target=f"g_{j}") for line in code)
            elif shape:
                backward.append(f"g_{j} += {code}")
            else:
                backward.append(f"g_{j} = g_{j} + {code}")
    if 0 not in reached:
        raise TraceError("the log density does not depend on its parameters")
    body = [*e.setup, *forward, *backward, f"return v_{out}"]
    text = f"def {name}(q, grad_out, fdata, idata):\n" + "\n".join("    " + ln for ln in body)
    fdata = np.concatenate(e.fdata) if e.fdata else np.zeros(0)
    idata = np.concatenate(e.idata) if e.idata else np.zeros(0, dtype=np.int64)
    return SourceFunction(text + "\n", fdata, idata)
