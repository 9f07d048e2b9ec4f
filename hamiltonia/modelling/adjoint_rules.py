"""The rules of the generated gradients (:mod:`hamiltonia.modelling.adjoint_source`): for
each NumPy or SciPy primitive, how its forward value and the vector-Jacobian product of each
argument are written as numba source (:class:`Rule`): elementwise functions from templates
(:class:`Elementwise`), powers, sums and means, changes of shape, transposes, cumulative sums,
extrema, log-sum-exp, dot products, ``np.where`` and the normal log density.

Each is reverse-mode automatic differentiation of one primitive by source transformation
(Griewank and Walther 2008, ch. 3 and 6), broadcasting undone by summing over the broadcast
axes. The rules of autograd's own array functions (concatenation, arrays of traced values,
indexing) are in :mod:`hamiltonia.modelling.adjoint_array_rules`; the table of rules by
function, :data:`~hamiltonia.modelling.adjoint_source.RULES`, in
:mod:`hamiltonia.modelling.adjoint_source`. Every rule is tested against autograd's own
derivative (``tests/modelling/test_adjoint.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hamiltonia.modelling.adjoint_emitter import (
    _Emitter,
    _shape_code,
    _shape_of,
    broadcast_code,
    reshape_code,
    sum_axis_code,
    unbroadcast_code,
)
from hamiltonia.modelling.trace import Op, TraceError

__all__ = [
    "CumulativeSum",
    "Dot",
    "Elementwise",
    "Extremum",
    "LogAddExp",
    "LogSumExp",
    "NormalLogPdf",
    "Power",
    "Reshape",
    "Rule",
    "Sum",
    "Transpose",
    "Where",
]


class Rule:
    """How one primitive is written: its forward value and the vector-Jacobian product of
    each argument. ``adjoint`` returns the contribution's source (shape of the argument), a
    list of statements ``(…, target)`` writing into the argument's adjoint, or ``None`` when
    the argument has no derivative.

    For the rolling of loops (:mod:`hamiltonia.modelling.loop_rolling`): ``data_arguments``
    says that the number and array arguments are data written into the code as values
    (which may then differ between a loop's passes), not numbers read to decide the code;
    ``indexes``, that the rule is indexing (whose index may differ between passes)."""

    data_arguments = False
    indexes = False
    #: Whether the rule is elementwise with a form for one element
    #: (:meth:`scalar_forward`, :meth:`scalar_adjoint`), which
    #: :mod:`hamiltonia.modelling.adjoint_fusion` writes into a loop over the elements.
    elementwise = False

    def forward(self, e: _Emitter, op: Op, a: list) -> str:
        raise NotImplementedError

    def adjoint(self, e: _Emitter, op: Op, i: int, g: str, a: list, out: str):
        return None

    def scalar_forward(self, e: _Emitter, op: Op, a: list) -> str:
        """The value of one element, the arguments ``a`` being one element each."""
        raise NotImplementedError

    def scalar_adjoint(self, e: _Emitter, op: Op, i: int, g: str, a: list, out: str):
        """Argument ``i``'s contribution from one element (``g``, ``out`` and ``a`` one
        element each), not summed over broadcast axes; ``None`` without a derivative."""
        return None


class Elementwise(Rule):
    """An elementwise function: ``forward`` and each argument's derivative as templates in
    ``{0}``, ``{1}`` (the arguments), ``{g}`` (the adjoint) and ``{out}`` (the value)."""

    data_arguments = True
    elementwise = True

    def __init__(self, forward: str, *adjoints: str | None):
        self.template, self.adjoints = forward, adjoints

    def forward(self, e, op, a):
        return self.template.format(*a)

    def scalar_forward(self, e, op, a):
        return self.template.format(*a)

    def scalar_adjoint(self, e, op, i, g, a, out):
        if i >= len(self.adjoints) or self.adjoints[i] is None:
            return None
        return self.adjoints[i].format(*a, g=g, out=out)

    def adjoint(self, e, op, i, g, a, out):
        code = self.scalar_adjoint(e, op, i, g, a, out)
        if code is None:
            return None
        return unbroadcast_code(code, op.shape, _shape_of(e.graph, op, i))


class LogAddExp(Elementwise):
    """``np.logaddexp(a, b)``; with one side the number 0 and the other a vector (the
    softplus :math:`\\log(1 + e^z)` of a logistic likelihood), the vectorisable
    :func:`~hamiltonia.modelling.special.softplus_vector` and, for the adjoint,
    :math:`\\bar z = \\bar v\\,\\sigma(z)`
    (:func:`~hamiltonia.modelling.special.sigmoid_vector`): NumPy's form costs two scalar
    library calls an element forward and one back."""

    # Not fused into a loop over the elements: the softplus form is a vectorised call.
    elementwise = False

    def __init__(self):
        super().__init__(
            "np.logaddexp({0}, {1})", "{g} * np.exp({0} - {out})", "{g} * np.exp({1} - {out})"
        )

    def _softplus_of(self, e, op) -> int | None:
        """The position of the vector when the other argument is the constant 0."""
        for i in (0, 1):
            other = 1 - i
            if (i in op.parents and other not in op.parents and np.ndim(op.args[other]) == 0
                    and float(op.args[other]) == 0.0
                    and len(_shape_of(e.graph, op, i)) == 1 and op.shape == _shape_of(
                        e.graph, op, i)):  # fmt: skip
                return i
        return None

    def forward(self, e, op, a):
        i = self._softplus_of(e, op)
        return super().forward(e, op, a) if i is None else f"softplus_vector({a[i]})"

    def forward_keeping(self, e, op, a, out) -> str | None:
        """The softplus of a vector the gradient reaches, as a statement that keeps its
        sigmoid for the adjoint (:func:`~hamiltonia.modelling.special.softplus_sigmoid_vector`,
        one exponential an element for both), or None for :meth:`forward`'s form."""
        i = self._softplus_of(e, op)
        if i is None:
            return None
        kept = e.kept[out] = e.temp("k")
        return f"{out}, {kept} = softplus_sigmoid_vector({a[i]})"

    def adjoint(self, e, op, i, g, a, out):
        if self._softplus_of(e, op) == i:
            # The sigmoid the forward pass kept, or (in a loop's body) computed here.
            kept = e.kept.get(out)
            return f"{g} * {kept}" if kept else f"{g} * sigmoid_vector({a[i]})"
        return super().adjoint(e, op, i, g, a, out)


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

    elementwise = True

    def scalar_forward(self, e, op, a):
        return self.forward(e, op, a)

    def scalar_adjoint(self, e, op, i, g, a, out):
        if i == 0:
            if 1 not in op.parents and np.ndim(op.args[1]) == 0 and float(op.args[1]) == 2.0:
                return f"2.0 * {g} * {a[0]}"
            return f"{g} * {a[1]} * {a[0]} ** ({a[1]} - 1.0)"
        return f"{g} * {out} * np.log(np.abs({a[0]}) + ({a[0]} == 0.0))"

    def adjoint(self, e, op, i, g, a, out):
        code = self.scalar_adjoint(e, op, i, g, a, out)
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
        source = _shape_of(e.graph, op, 0)
        if not op.shape and source:
            # A number out of a one-element array (a parameter block of one): added into
            # the element, rather than an array made of it (an allocation).
            return [f"{{target}}[{', '.join('0' * len(source))}] += {g}"]
        return reshape_code(g, op.shape, source)


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


def _data_lines(e, op, a, i) -> tuple[str, bool] | None:
    """Operand ``i`` of a product when it is a float data matrix whose memory lines are at
    least as long as they are many: the code of its C-contiguous lines and whether they are
    its columns (:func:`~hamiltonia.modelling.adjoint_source.tall_matrices`); else None."""
    arg = op.args[i]
    if (i in op.parents or not isinstance(arg, np.ndarray) or arg.ndim != 2
            or arg.dtype.kind != "f" or e.constants.get(id(arg)) != a[i]):  # fmt: skip
        return None
    columns = id(arg) in e.by_columns
    lines, length = (arg.shape[1], arg.shape[0]) if columns else arg.shape
    if length < lines:
        return None
    return (f"{a[i]}.T" if columns else a[i]), columns


def _line_product(e, op, a, matrix: int, vector: str, transposed: bool) -> str | None:
    """The product of the data matrix ``a[matrix]`` with ``vector`` by the loops of
    :mod:`~hamiltonia.modelling.data_lines`, or None: :math:`A x` (``transposed`` False) or
    :math:`A^\\top x`. A matrix stored by lines :math:`M` is :math:`A` (rows) or
    :math:`A^\\top` (columns); :math:`M x` is ``dot_lines`` and :math:`M^\\top x`
    ``combine_lines``."""
    found = _data_lines(e, op, a, matrix)
    if found is None:
        return None
    lines, columns = found
    helper = "combine_lines" if columns != transposed else "dot_lines"
    return f"{helper}({lines}, {_contiguous(vector)})"


class Dot(Rule):
    """``np.dot`` and ``@`` of vectors and matrices: for :math:`v = A b`,
    :math:`\\bar A = \\bar v\\, b^{\\top}` and :math:`\\bar b = A^{\\top} \\bar v`.

    A data matrix times a traced vector, either way round, is written as loops along the
    matrix's long lines (:mod:`~hamiltonia.modelling.data_lines`, measured faster than
    ``dgemv`` there), forward and back; everything else is ``np.dot``."""

    data_arguments = True

    def forward(self, e, op, a):
        left, right = _shape_of(e.graph, op, 0), _shape_of(e.graph, op, 1)
        if not left or not right:
            return f"{a[0]} * {a[1]}"
        if len(left) > 2 or len(right) > 2:
            raise TraceError("np.dot / @ can be compiled for vectors and matrices only")
        kind = (len(left), len(right))
        code = None
        if kind == (2, 1) and 1 in op.parents:  # A x
            code = _line_product(e, op, a, 0, a[1], transposed=False)
        elif kind == (1, 2) and 0 in op.parents:  # x A = A^T x
            code = _line_product(e, op, a, 1, a[0], transposed=True)
        return code or f"np.dot({_contiguous(a[0])}, {_contiguous(a[1])})"

    def adjoint(self, e, op, i, g, a, out):
        left, right = _shape_of(e.graph, op, 0), _shape_of(e.graph, op, 1)
        if not left or not right:
            code = f"{g} * {a[1 - i]}"
            return unbroadcast_code(code, op.shape, (left, right)[i])
        kind = (len(left), len(right))
        if kind == (2, 1) and i == 1:  # v = A x: x-bar = A^T v-bar
            code = _line_product(e, op, a, 0, g, transposed=True)
            if code:
                return code
        if kind == (1, 2) and i == 0:  # v = x A: x-bar = A v-bar
            code = _line_product(e, op, a, 1, g, transposed=False)
            if code:
                return code
        x, y, g = _contiguous(a[0]), _contiguous(a[1]), _contiguous(g)
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

    data_arguments = True

    def forward(self, e, op, a):
        if op.shape == ():
            return f"({a[1]} if {a[0]} else {a[2]})"
        parts = [broadcast_code(a[i], _shape_of(e.graph, op, i), op.shape) for i in range(3)]
        return f"np.where({parts[0]}, {parts[1]}, {parts[2]})"

    elementwise = True

    def scalar_forward(self, e, op, a):
        return f"({a[1]} if {a[0]} else {a[2]})"

    def scalar_adjoint(self, e, op, i, g, a, out):
        if i == 0:
            return None
        return f"({g} if {a[0]} else 0.0)" if i == 1 else f"(0.0 if {a[0]} else {g})"

    def adjoint(self, e, op, i, g, a, out):
        if i == 0:
            return None
        keep = a[0] if i == 1 else f"~({a[0]})" if op.shape else f"not {a[0]}"
        code = f"({g} * ({keep}))"
        return unbroadcast_code(code, op.shape, _shape_of(e.graph, op, i))


class NormalLogPdf(Rule):
    """``scipy.stats.norm.logpdf(x, loc, scale)``:
    :math:`-\\tfrac12 z^2 - \\log s - \\tfrac12\\log 2\\pi`, :math:`z = (x - m)/s`."""

    data_arguments = True

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
