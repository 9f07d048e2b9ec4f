"""Recording a log density written with ``autograd.numpy`` as a graph of primitive calls.

autograd records every call of one of its primitives (``np.exp``, ``np.sum``, indexing,
...) on values derived from the input as a node holding the function, its arguments and the
result. :func:`trace_graph` runs the user's function once at a point with a node type of
its own and returns the nodes in the order they were computed, with the shapes of every
value: what :mod:`hamiltonia.modelling.adjoint_source` needs to write the log density and its
reverse-mode gradient as straight-line numba code.

The graph is the computation at that point. A log density whose operations depend on the
parameters' values has no single graph, so while it is recorded every Python decision on a
traced value raises :class:`TraceError`, naming the file and line of the user's code: the
truth value of one (``if``, ``while``, ``and``/``or``/``not``, ``assert``, ``bool()``, the
builtins ``max``/``min``/``sorted`` that compare), its conversion to a Python number
(``float()``, ``int()``, ``range()``, ``.item()``, ``math.*``) or to a plain NumPy array,
and indexing by one. This holds at any point, whichever way the branch goes there, unlike
the comparison with autograd at a few points that follows compilation. What depends only on
shapes (``len(x)``, ``x.shape``, iterating over ``x``) is fixed and keeps working, and a
comparison of traced values stays traced, so ``np.where(x > 0, a, b)`` is recorded and
compiled.

How: autograd chooses the box of a value by the value's type, for every trace. While
:func:`trace_graph` records (one recording at a time, under a lock), the array types map to
a subclass of autograd's ``ArrayBox`` whose conversions raise for a recorded value; the
mapping is put back afterwards. A gradient autograd takes in another thread meanwhile gets
that subclass too, and it behaves as ``ArrayBox`` there. A refusal caught in the user's code
(:class:`TraceError` is a ``ValueError``) is raised again when the recording ends, as the
graph would then be one path's.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Graph", "Op", "TraceError", "UnsupportedOperation", "call_site", "trace_graph"]


class TraceError(ValueError):
    """A log density cannot be recorded as one fixed graph (the message says why)."""


class UnsupportedOperation(TraceError):
    """A recorded function without a compiled derivative (``fun``); the message lists those
    with one."""

    def __init__(self, message: str, fun: Callable):
        super().__init__(message)
        self.fun = fun


@dataclass
class Op:
    """One primitive call: ``value = fun(*args, **kwargs)``.

    Attributes
    ----------
    fun : callable
        The raw NumPy (or SciPy) function autograd wraps, e.g. ``numpy.exp``.
    args : tuple
        The arguments, with the traced ones replaced by their values at the trace point.
    kwargs : dict
        Keyword arguments.
    parents : dict of int to int
        Argument position to the index of the :class:`Op` whose value it is; the other
        arguments are constants.
    value : object
        The result at the trace point.
    """

    fun: Callable
    args: tuple
    kwargs: dict
    parents: dict[int, int]
    value: object

    @property
    def shape(self) -> tuple[int, ...]:
        """The value's shape.

        :meta private:
        """
        return tuple(np.shape(self.value))

    @property
    def name(self) -> str:
        """The function's name.

        :meta private:
        """
        return getattr(self.fun, "__name__", repr(self.fun))


@dataclass
class Graph:
    """A traced log density: ``ops[0]`` is the input, ``ops[-1]`` the scalar output."""

    ops: list[Op] = field(default_factory=list)

    @property
    def dim(self) -> int:
        return int(np.size(self.ops[0].value))


# Why a branch is refused, and the ways out, at the end of every refusal.
_WAY_OUT = (
    "A compiled gradient is recorded once, at one point, and would take the same path at "
    "every point. Write a branch as np.where(condition, a, b) (both sides are computed and "
    "the condition picks, elementwise), keep parameters as autograd.numpy values (no "
    "float(), int() or .item() of one, no indexing by one), or use the autograd backend "
    "(backend='autograd'), which runs any Python"
)

_BRANCH = (
    "takes the truth value of a value computed from the parameters (an if, while, "
    "and/or/not, assert or bool() on it, or a builtin such as max(), min() or sorted() "
    "comparing such values)"
)
_NUMBER = "converts a value computed from the parameters to a Python number ({})"
_INDEX = "indexes with a value computed from the parameters"
_INTEGER = (
    "uses a value computed from the parameters as a Python integer (range(), an index or a size)"
)
_ARRAY = (
    "converts a value computed from the parameters to a plain NumPy array (indexing an "
    "array by it, or giving it to a function of numpy rather than of autograd.numpy)"
)

# One recording at a time: the box mapping it swaps, the label its refusals name and the
# refusals made (kept, as the user's code may catch the error: see trace_graph) are global to
# the process.
_LOCK = threading.RLock()
_RECORDING: dict = {"label": "logp", "refused": []}
_MACHINERY: list = []


def _machinery():
    """``(Recorded, TracedBox)``: the node type of a recording and the box of its values.

    Made on first use, so that importing this module does not import autograd.
    """
    if _MACHINERY:
        return _MACHINERY[0]
    from autograd.numpy.numpy_boxes import ArrayBox
    from autograd.tracer import Box, Node, isbox

    class Recorded(Node):
        __slots__ = ("argnums", "args", "fun", "kwargs", "parents", "value")

        def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
            self.value = value
            self.fun = getattr(fun, "fun", fun)
            # Where a function was first called, when asked (call_site): found on a second
            # recording, so that a first one costs no stack walk per operation.
            if self.fun is _RECORDING.get("site_of") and not _RECORDING.get("site"):
                _RECORDING["site"] = _user_site(traceback.extract_stack())
            self.args = tuple(args)
            self.kwargs = dict(kwargs)
            self.argnums = tuple(parent_argnums)
            self.parents = tuple(parents)

        def initialize_root(self, value):
            self.value, self.fun, self.args, self.kwargs = value, None, (), {}
            self.argnums, self.parents = (), ()

    def refuse(box, doing: str) -> None:
        # The mapping to this box type is global, so a gradient that autograd takes in
        # another thread during a recording gets it too: only a recorded value refuses, and
        # any other keeps ArrayBox's behaviour (the callers' fallbacks).
        if type(box._node) is Recorded:
            message = _refusal(doing, traceback.extract_stack())
            _RECORDING["refused"].append(message)
            raise TraceError(message)

    def number(box, how: str):
        refuse(box, _NUMBER.format(how))
        raise TypeError(f"{how} of an autograd ArrayBox")

    class TracedBox(ArrayBox):
        """An ``ArrayBox`` of a recorded value: the Python conversions that would fix a
        data-dependent decision at the recording point raise :class:`TraceError`."""

        __slots__ = ()

        def __bool__(self):
            refuse(self, _BRANCH)
            return bool(self._value)

        def __float__(self):
            return number(self, "float()")

        def __int__(self):
            return number(self, "int()")

        def __complex__(self):
            return number(self, "complex()")

        def __index__(self):
            refuse(self, _INTEGER)
            raise TypeError("an autograd ArrayBox is not an integer")

        def __round__(self, ndigits=None):
            return number(self, "round()")

        def __trunc__(self):
            return number(self, "math.trunc()")

        def __floor__(self):
            return number(self, "math.floor()")

        def __ceil__(self):
            return number(self, "math.ceil()")

        def __array__(self, dtype=None, copy=None):
            refuse(self, _ARRAY)
            # Another thread's gradient: what numpy makes of an ArrayBox, which has no
            # __array__ (an array of its elements, as objects).
            out = np.empty(self.shape, dtype=object)
            for i in np.ndindex(self.shape):
                out[i] = self[i] if self.shape else self
            return out if dtype is None else out.astype(dtype)

        def __getitem__(self, idx):
            parts = idx if isinstance(idx, tuple) else (idx,)
            if any(isbox(part) for part in parts):
                refuse(self, _INDEX)
            return ArrayBox.__getitem__(self, idx)

        def item(self, *args):
            refuse(self, _NUMBER.format(".item()"))
            raise AttributeError("'ArrayBox' object has no attribute 'item'")

        def tolist(self):
            refuse(self, _NUMBER.format(".tolist()"))
            raise AttributeError("'ArrayBox' object has no attribute 'tolist'")

    # A box type autograd knows (its primitives look boxes up by exact type), mapped to by
    # value type only while recording (_traced_boxes).
    Box.types.add(TracedBox)
    Box.type_mappings[TracedBox] = TracedBox
    # Recording traces comparisons too (autograd's own gradient skips them), and one of a
    # number gives a numpy.bool, which autograd has no box for: box it as an array.
    if np.bool_ not in Box.type_mappings:
        ArrayBox.register(np.bool_)
    _MACHINERY.append((Recorded, TracedBox))
    return _MACHINERY[0]


@contextlib.contextmanager
def _traced_boxes(traced_box):
    """Values of the types autograd boxes as arrays get ``traced_box`` while in the block."""
    from autograd.numpy.numpy_boxes import ArrayBox
    from autograd.tracer import Box

    mapping = Box.type_mappings
    swapped = [t for t, box in mapping.items() if box is ArrayBox and t is not ArrayBox]
    for t in swapped:
        mapping[t] = traced_box
    try:
        yield
    finally:
        for t in swapped:
            mapping[t] = ArrayBox


# The hamiltonia package, whose lines are named only when no user code is below them.
_PACKAGE = str(Path(__file__).resolve().parents[1]) + os.sep
_REAL: dict[str, str] = {}


def _refusal(doing: str, frames: list) -> str:
    site = _user_site(frames)
    where = f" at {site}" if site else ""
    return f"{_RECORDING['label']} {doing}{where}. {_WAY_OUT}"


def _user_site(frames: list) -> str:
    """Where the traced function was, in ``frames`` (outermost first): the innermost line
    of the user's code below autograd's ``trace``, and hamiltonia's line below it if that is
    where the decision was taken."""
    import autograd.tracer

    tracer = _real(autograd.tracer.__file__)
    start = 0
    for i, frame in enumerate(frames):
        if frame.name == "trace" and _real(frame.filename) == tracer:
            start = i + 1
    inside = [f for f in frames[start:] if not _library(f.filename)]
    if not inside:
        return ""
    # The user's own line says what to rewrite; a log density written inside hamiltonia
    # (or one that only calls into it) is named by hamiltonia's line instead.
    users = [f for f in inside if not _real(f.filename).startswith(_PACKAGE)]
    where = users[-1] if users else inside[-1]
    text = f"{where.filename}, line {where.lineno}"
    if where.line:
        text += f" ({where.line.strip()!r})"
    if inside[-1] is not where:
        text += f", in {inside[-1].filename}, line {inside[-1].lineno}"
    return text


def _real(filename: str) -> str:
    if filename not in _REAL:
        _REAL[filename] = str(Path(filename).resolve())
    return _REAL[filename]


def _library(filename: str) -> bool:
    """Whether ``filename`` is autograd's, NumPy's, SciPy's or this module's code."""
    real = _real(filename)
    if real == _real(__file__):
        return True
    for name in ("autograd", "numpy", "scipy"):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path and real.startswith(str(Path(path).resolve().parent) + os.sep):
            return True
    return False


def call_site(fn: Callable, x: np.ndarray, fun: Callable) -> str:
    """Where ``fn``'s recording at ``x`` first calls the primitive ``fun`` (the user's
    file, line and code, as a refusal names them), or ``""``: for a message about that
    operation (one without a compiled derivative)."""
    with _LOCK:  # re-entered by trace_graph
        _RECORDING.update(site_of=fun, site="")
        try:
            trace_graph(fn, x)
        except TraceError:
            pass
        finally:
            site = _RECORDING.pop("site", "")
            _RECORDING.pop("site_of", None)
    return site


def trace_graph(fn: Callable, x: np.ndarray, label: str = "logp") -> Graph:
    """The graph of ``fn`` (a scalar function of a vector) at ``x``.

    Raises
    ------
    TraceError
        When ``fn`` takes a Python decision on a value computed from its input (module
        docs; the message names the line), converts one to a Python number, returns
        something other than one number, or does not depend on its input.
    """
    from autograd.tracer import trace

    recorded, traced_box = _machinery()
    x = np.ascontiguousarray(x, dtype=np.float64)
    root = recorded.new_root(x)
    with _LOCK:
        refused: list[str] = []
        _RECORDING.update(label=label, refused=refused)
        try:
            with (
                _traced_boxes(traced_box),
                np.errstate(all="ignore"),
                warnings.catch_warnings(),
            ):
                warnings.simplefilter("ignore")  # autograd's "independent of input": below
                value, end = trace(root, fn, x)
        except TraceError:
            raise
        except Exception as err:
            # A refusal that the user's code (or a library's fallback) caught led here.
            if refused:
                raise TraceError(refused[0]) from err
            if not isinstance(err, TypeError):
                raise
            site = _user_site(traceback.extract_tb(err.__traceback__))
            where = f" at {site}" if site else ""
            raise TraceError(
                f"{label} could not be recorded as one fixed computation ({err}){where}. {_WAY_OUT}"
            ) from err
    if refused:
        # Caught in the traced function (an except around the branch): the graph is still
        # one path's.
        raise TraceError(refused[0])
    if end is None:
        raise TraceError(f"{label} does not depend on its parameters")
    if np.shape(value) != ():
        raise TraceError(f"{label} must return one number, got shape {np.shape(value)}")
    order = _topological(end)
    index = {id(node): i for i, node in enumerate(order)}
    ops = []
    for node in order:
        parents = {arg: index[id(p)] for arg, p in zip(node.argnums, node.parents, strict=True)}
        ops.append(Op(node.fun, node.args, node.kwargs, parents, node.value))
    if order[0] is not root:
        raise TraceError(f"{label} does not depend on its parameters")
    return Graph(ops)


def _topological(end) -> list:
    """Nodes reaching ``end``, parents before children (iterative depth-first search)."""
    order, done, stack = [], set(), [(end, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if expanded:
            done.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((p, False) for p in node.parents if id(p) not in done)
    return order
