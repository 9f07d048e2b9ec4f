"""Recording a log density written with ``autograd.numpy`` as a graph of primitive calls.

autograd records every call of one of its primitives (``np.exp``, ``np.sum``, indexing,
...) on values derived from the input as a node holding the function, its arguments and the
result. :func:`trace_graph` runs the user's function once at a point with a node type of
its own and returns the nodes in the order they were computed, with the shapes of every
value: what :mod:`hamiltonia.compiled.adjoint_source` needs to write the log density and its
reverse-mode gradient as straight-line numba code.

The graph is the computation at that point. A log density whose operations depend on the
parameters' values (``if x > 0:``, a loop of data-dependent length) has no single graph;
with this node type such a branch raises (a comparison of traced values stays traced, and
Python cannot take the truth value of it), and :func:`trace_graph` says so. Comparisons
inside ``np.where`` are traced and compiled.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Graph", "Op", "TraceError", "trace_graph"]


class TraceError(ValueError):
    """A log density cannot be recorded as one fixed graph (the message says why)."""


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


def _recorder():
    from autograd.tracer import Node

    class Recorded(Node):
        __slots__ = ("argnums", "args", "fun", "kwargs", "parents", "value")

        def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
            self.value = value
            self.fun = getattr(fun, "fun", fun)
            self.args = tuple(args)
            self.kwargs = dict(kwargs)
            self.argnums = tuple(parent_argnums)
            self.parents = tuple(parents)

        def initialize_root(self, value):
            self.value, self.fun, self.args, self.kwargs = value, None, (), {}
            self.argnums, self.parents = (), ()

    return Recorded


_RECORDER: list = []


def trace_graph(fn: Callable, x: np.ndarray, label: str = "logp") -> Graph:
    """The graph of ``fn`` (a scalar function of a vector) at ``x``.

    Raises
    ------
    TraceError
        When ``fn`` branches on the value of its input, converts it to a Python number,
        returns something other than one number, or does not depend on its input.
    """
    from autograd.tracer import trace

    if not _RECORDER:
        _RECORDER.append(_recorder())
        # Recording traces comparisons too (autograd's own gradient skips them), and one of
        # a number gives a numpy.bool, which autograd has no box for: box it as an array.
        from autograd.numpy.numpy_boxes import ArrayBox

        if np.bool_ not in ArrayBox.type_mappings:
            ArrayBox.register(np.bool_)
    recorded = _RECORDER[0]
    x = np.ascontiguousarray(x, dtype=np.float64)
    root = recorded.new_root(x)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # autograd's "independent of input": raised below
            value, end = trace(root, fn, x)
    except TypeError as err:
        raise TraceError(
            f"{label} could not be recorded as one fixed computation ({err}). A compiled "
            "gradient needs operations that do not depend on the parameters' values: use "
            "np.where(condition, a, b) in place of 'if', and no float() or int() of a "
            "parameter"
        ) from err
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
