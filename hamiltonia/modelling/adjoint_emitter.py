"""The writing of source text for :mod:`hamiltonia.modelling.adjoint_source`: code helpers
that reshape, broadcast and un-broadcast a value written as source (shapes being known when
the source is written), and the emitter that names the values of a traced
:class:`~hamiltonia.modelling.trace.Graph` and lays the arrays the density closes over out in
``fdata`` (floats) and ``idata`` (integers and booleans), so that one compiled function
serves every data set of the same shapes (:class:`SourceFunction`, the generated function
and its data).

The rules that write each primitive (:mod:`hamiltonia.modelling.adjoint_rules`,
:mod:`hamiltonia.modelling.adjoint_array_rules`) are written with these helpers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hamiltonia.modelling.trace import Graph, Op, TraceError

__all__ = ["SourceFunction", "broadcast_code", "reshape_code", "sum_axis_code", "unbroadcast_code"]


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

    def __init__(self, graph: Graph, loops: list | None = None):
        self.graph = graph
        #: The rolled loops (:class:`~hamiltonia.modelling.loop_rolling.Loop`), in order.
        self.loops = list(loops or [])
        self._starts = [loop.start for loop in self.loops]
        self.fdata: list[np.ndarray] = []
        self.idata: list[np.ndarray] = []
        self.offsets = [0, 0]
        self.constants: dict[int, str] = {}
        self.setup: list[str] = []
        self.counter = 0
        self.memo: dict = {}
        #: Operations of a rolled loop written as plain values (``v_k``, ``g_k``), not rows
        #: of its tapes: the total of a running sum
        #: (:mod:`hamiltonia.modelling.running_sums`).
        self.plain: set[int] = set()
        #: By operation of a rolled loop, its adjoint as a number rather than a row of an
        #: adjoint tape (a carry's last pass: :class:`~.adjoint_loops.LoopAdjoint`).
        self.adjoint_names: dict[int, str] = {}
        #: The ids of the float matrices stored by columns (:meth:`constant`).
        self.by_columns: set[int] = set()
        #: By value name, the name of what its forward statement kept for its adjoint
        #: (``forward_keeping`` of a rule: a softplus's sigmoid).
        self.kept: dict[str, str] = {}

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
        columns = key in self.by_columns and array.ndim == 2 and array.dtype.kind == "f"
        if columns:  # stored transposed, read as the transpose's view
            array = array.T
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
            code = f"{code}.reshape({_shape_code(array.shape)})" + (".T" if columns else "")
        self.setup.append(f"{name} = ({code}{suffix})" if suffix else f"{name} = {code}")
        self.constants[key] = name
        return name

    def loop_of(self, index: int):
        """The rolled loop holding operation ``index``, or ``None``."""
        import bisect

        if index in self.plain:
            return None
        at = bisect.bisect_right(self._starts, index) - 1
        if at >= 0 and index < self.loops[at].stop:
            return self.loops[at]
        return None

    def value(self, index: int) -> str:
        """Source of the value of operation ``index`` outside a loop's body: ``v_index``,
        or its row of a loop's tape."""
        loop = self.loop_of(index)
        return f"v_{index}" if loop is None else loop.tape_row(index)

    def adjoint_of(self, index: int) -> str:
        """Source of the adjoint of operation ``index`` (as :meth:`value`)."""
        if index in self.adjoint_names:
            return self.adjoint_names[index]
        loop = self.loop_of(index)
        return f"g_{index}" if loop is None else loop.tape_row(index, adjoint=True)

    def operands_of_constant(self, arg):
        """Source of a constant argument: a constant's source for a number or an array,
        ``None`` for anything else (shapes, axes, indices)."""
        return self.constant(arg) if _numeric(arg) else None

    def operands(self, k: int, op: Op) -> list:
        """Source of each positional argument: the value's source (:meth:`value`) for a
        traced one, else :meth:`operands_of_constant`."""
        return [
            self.value(op.parents[i]) if i in op.parents else self.operands_of_constant(arg)
            for i, arg in enumerate(op.args)
        ]


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
