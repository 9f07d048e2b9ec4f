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

The parts: the code helpers and the emitter that lays out the data
(:mod:`hamiltonia.modelling.adjoint_emitter`), the rules
(:mod:`hamiltonia.modelling.adjoint_rules`, and :mod:`hamiltonia.modelling.adjoint_array_rules`
for autograd's own array functions); the writing of what a careful person writes by hand
(:mod:`hamiltonia.modelling.adjoint_fusion`: chains of elementwise operations as one loop
over the elements, forward and back; :mod:`hamiltonia.modelling.adjoint_views`: the
adjoints of the input's views as views of the gradient;
:mod:`hamiltonia.modelling.running_sums`: a running sum over a rolled loop's passes added up
in that loop; :func:`tall_matrices`: data matrices stored by columns for their products);
this module holds the table of rules by function and the generation of the whole function,
and re-exports the names of the others.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from hamiltonia.modelling import adjoint_linalg
from hamiltonia.modelling.adjoint_array_rules import ArrayFromArgs, ArrayOf, Concatenate, GetItem
from hamiltonia.modelling.adjoint_einsum import Einsum, Outer
from hamiltonia.modelling.adjoint_emitter import (
    SourceFunction,
    _Emitter,
    _shape_code,
    broadcast_code,  # noqa: F401 (moved to adjoint_emitter)
    reshape_code,  # noqa: F401 (moved to adjoint_emitter)
    sum_axis_code,  # noqa: F401 (moved to adjoint_emitter)
    unbroadcast_code,  # noqa: F401 (moved to adjoint_emitter)
)
from hamiltonia.modelling.adjoint_rules import (
    CumulativeSum,
    Dot,
    Elementwise,
    Extremum,
    LogAddExp,
    LogSumExp,
    NormalLogPdf,
    Power,
    Reshape,
    Rule,
    Sum,
    Transpose,
    Where,
)
from hamiltonia.modelling.trace import Graph, Op, TraceError, UnsupportedOperation

__all__ = ["RULES", "SourceFunction", "gradient_source", "rolled_loops", "supported_functions",
           "tall_matrices"]  # fmt: skip


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
    np.logaddexp: LogAddExp(),
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
    adjoint_linalg.register(RULES)
    RULES[np.einsum] = Einsum()
    RULES[np.outer] = Outer()


def _register_stats() -> None:
    """The rule for ``scipy.stats.norm.logpdf``, registered when first needed: importing
    scipy.stats takes 0.4 s of a model's first compilation that does not use it (a model
    that calls it through ``autograd.scipy.stats`` has imported it already)."""
    import scipy.stats

    RULES.setdefault(scipy.stats.norm.logpdf, NormalLogPdf())


_register_wrapped()


def _rule(op: Op) -> Rule:
    # An operation of a rewritten graph (gaussian_form.ClosedFormOp) carries its own.
    rule = getattr(op, "rule", None) or RULES.get(op.fun)
    if rule is None and "scipy.stats" in sys.modules:
        _register_stats()
        rule = RULES.get(op.fun)
    if rule is None:
        raise UnsupportedOperation(
            f"{op.name} has no compiled derivative; the functions that have one are: "
            f"{', '.join(supported_functions())}",
            op.fun,
        )
    return rule


def _rule_or_none(op: Op) -> Rule | None:
    try:
        return _rule(op)
    except TraceError:
        return None


def rolled_loops(graph: Graph) -> list:
    """The loops of ``graph`` the compiled path writes as loops
    (:func:`hamiltonia.modelling.loop_rolling.find_loops` with this module's rules)."""
    from hamiltonia.modelling.loop_rolling import find_loops

    return find_loops(graph, _rule_or_none)


def tall_matrices(graph: Graph) -> set[int]:
    """The ids of the data matrices with more rows than columns that the log density uses
    only in products with vectors (``X @ w``, ``w @ X.T``), to be stored by columns: each
    product then runs along the long axis, in memory order, forward (BLAS adding each
    column times its coefficient) and back (a dot product per column, for the adjoint
    ``X.T @ g``); stored by rows, both would run along rows of a few numbers."""
    products, others = set(), set()
    for op in graph.ops[1:]:
        dot = isinstance(RULES.get(op.fun), Dot)
        for i, arg in enumerate(op.args):
            if i in op.parents or not isinstance(arg, np.ndarray):
                continue
            other = graph.ops[op.parents[1 - i]].shape if dot and (1 - i) in op.parents else ()
            if dot and arg.ndim == 2 and len(other) == 1 and arg.shape[0] > arg.shape[1]:
                products.add(id(arg))
            else:
                others.add(id(arg))
    return products - others


def supported_functions() -> list[str]:
    """Names of the functions a compiled gradient can be generated for."""
    _register_stats()
    names = set()
    for fun in RULES:
        name = getattr(fun, "__name__", "")
        names.add("indexing" if name == "__getitem__" else name or repr(fun))
    return sorted(names)


# ---------------------------------------------------------------------------- generation
def _adjoint_shape(op: Op) -> tuple:
    """The shape of an operation's adjoint: its value's, but a number for a pair whose
    first element has no derivative (``slogdet``'s sign and log-determinant)."""
    return () if isinstance(op.value, tuple) else op.shape


def _segments(size: int, loops: list) -> list[tuple[str, object]]:
    """The recording in order: ``("op", index)`` for an operation written on its own,
    ``("loop", loop)`` for a rolled loop (the input, operation 0, left out)."""
    out, k, at = [], 1, 0
    while k < size:
        if at < len(loops) and loops[at].start == k:
            out.append(("loop", loops[at]))
            k = loops[at].stop
            at += 1
        else:
            out.append(("op", k))
            k += 1
    return out


def gradient_source(graph: Graph, name: str = "log_prob_and_grad",
                    loops: list | None = None, fuse: bool = True) -> SourceFunction:  # fmt: skip
    """The source of ``name(q, grad_out, fdata, idata) -> float`` computing the traced log
    density at ``q`` and writing its gradient into ``grad_out``.

    The loops of the recording (``loops``, by default :func:`rolled_loops`; ``[]`` for
    none) are written as
    loops (:mod:`hamiltonia.modelling.adjoint_loops`), the chains of elementwise operations
    as one loop over their elements (:mod:`hamiltonia.modelling.adjoint_fusion`; not with
    ``fuse=False``), the rest as straight-line code; the adjoints of the input's views
    are views of the gradient (:mod:`hamiltonia.modelling.adjoint_views`)."""
    from hamiltonia.modelling.adjoint_fusion import find_groups
    from hamiltonia.modelling.adjoint_fusion import segments as ordered
    from hamiltonia.modelling.adjoint_loops import (
        LoopAdjoint,
        accumulate,
        forward_loop,
        keep_read_tapes,
    )
    from hamiltonia.modelling.adjoint_views import view_adjoints
    from hamiltonia.modelling.gaussian_form import closed_forms
    from hamiltonia.modelling.running_sums import find_running_sums

    loops = rolled_loops(graph) if loops is None else loops
    graph = closed_forms(graph, loops)
    e = _Emitter(graph, loops)
    ops = graph.ops
    out = len(ops) - 1
    sums = find_running_sums(e) if fuse else {}
    e.plain.update(s.final for s in sums.values())
    groups = find_groups(e, _rule) if fuse else []
    segments = ordered(e, groups) if groups else _segments(len(ops), loops)
    # A running sum's loop is written as its total (its terms added up in their loop).
    segments = [("sum", sums[item.number]) if kind == "loop" and item.number in sums
                else (kind, item) for kind, item in segments]  # fmt: skip
    into: dict[int, list] = {}  # by loop, the running sums of its terms
    for s in sums.values():
        into.setdefault(s.source, []).append((s.name, s.slot))
    seeds: dict[int, dict] = {}  # by loop, the adjoints its terms get from running sums
    views = view_adjoints(e, _rule)
    e.by_columns = tall_matrices(graph)
    for op in ops[1:]:
        if isinstance(op.value, tuple) and getattr(RULES.get(op.fun), "tuple_value", False):
            continue  # a pair of numbers (slogdet), read by indexing
        kind = np.asarray(op.value).dtype.kind
        if kind not in "fbiu":
            raise TraceError(f"{op.name} gives values of dtype {np.asarray(op.value).dtype}")
    forward = ["v_0 = q"]
    for kind, item in segments:
        if kind == "op":
            op = ops[item]
            rule, a = _rule(op), e.operands(item, op)
            keeping = getattr(rule, "forward_keeping", None)
            code = keeping(e, op, a, f"v_{item}") if keeping else None
            forward.append(code or f"v_{item} = {rule.forward(e, op, a)}")
        elif kind == "fused":
            forward.extend(item.forward(e, _rule))
        elif kind == "sum":
            forward.append(item.forward(e))
        else:
            forward.extend(forward_loop(e, item, _rule, into.get(item.number, ())))
    # Contributions to each adjoint, from the output back to the input; a loop's, to the
    # values before it, are added in every pass.
    contributions: dict[int, list] = {}
    adjoints: dict[int, LoopAdjoint] = {}
    reached = {out}
    counts: dict[int, int] = {}
    scatters = set()
    for kind, item in reversed(segments):
        if kind == "sum":
            if item.final in reached:
                reached.add(item.initial)
                counts[item.initial] = counts.get(item.initial, 0) + 2
                seeds.setdefault(item.source, {})[item.slot] = item.seed()
            continue
        if kind == "loop":
            plan = adjoints[item.number] = LoopAdjoint(e, item, _rule, reached,
                                                       seeds.get(item.number))  # fmt: skip
            for j, _ in plan.outside():
                reached.add(j)
                counts[j] = counts.get(j, 0) + 2  # added to, never assigned
            continue
        if kind == "fused":
            item.plan_reverse(e, _rule, reached)
            for j in item.targets:
                reached.add(j)
                counts[j] = counts.get(j, 0) + 2
            continue
        k = item
        if k not in reached:
            continue
        op = ops[k]
        if k in views:  # its adjoint is a view of its operand's
            reached.update(op.parents.values())
            continue
        rule, a = _rule(op), e.operands(k, op)
        covered: set[int] = set()
        if hasattr(rule, "run_adjoint"):  # entries at once, into a loop's adjoint tape
            lines, covered = rule.run_adjoint(e, op, f"g_{k}")
            if lines:
                contributions.setdefault(k, []).append((None, lines))
                reached.update(op.parents[i] for i in covered)
        for i, j in sorted(op.parents.items()):
            if i in covered:
                continue
            code = rule.adjoint(e, op, i, f"g_{k}", a, f"v_{k}")
            if code is None:
                continue
            contributions.setdefault(k, []).append((j, code))
            reached.add(j)
            counts[j] = counts.get(j, 0) + 1
            if isinstance(code, list) or e.loop_of(j) is not None:
                scatters.add(j)
    # The loop values other code adds adjoints to (after the loop, another loop, the
    # output): their adjoints need a tape; the others are numbers of the pass.
    external: dict[int, set] = {n: set() for n in adjoints}

    def mark(j) -> None:
        loop = e.loop_of(j)
        if loop is not None:
            external[loop.number].add(loop.locate(j)[0])

    for k, items in contributions.items():
        for j, _ in items:
            if j is None:
                for parent in ops[k].parents.values():
                    mark(parent)
            else:
                mark(j)
    for plan in adjoints.values():
        for j, _ in plan.outside():
            mark(j)
    for group in groups:
        for j in group.targets:
            mark(j)
    for s in sums.values():
        mark(s.initial)
    mark(out)
    for number, plan in adjoints.items():
        plan.add_only_within(external[number])
    backward = ["g_0 = grad_out", "g_0[:] = 0.0"]
    backward += [f"g_{k} = {code}" for k, code in sorted(views.items())]
    for plan in adjoints.values():
        backward.extend(plan.tapes())
    declared = {0, *views}
    if e.loop_of(out) is None:
        backward.append(f"g_{out} = 1.0")
        declared.add(out)
    else:
        backward.append(f"{e.adjoint_of(out)} = 1.0")

    def declare(j: int) -> None:
        if j not in declared and e.loop_of(j) is None:
            declared.add(j)
            shape = _adjoint_shape(ops[j])
            backward.append(f"g_{j} = np.zeros({_shape_code(shape)})" if shape else f"g_{j} = 0.0")

    for kind, item in reversed(segments):
        if kind == "loop":
            plan = adjoints[item.number]
            found = plan.outside()
            for j, _ in found:
                declare(j)
            backward.extend(plan.statements())
            for j, row in found:
                if row is not None:
                    backward.extend(accumulate(e, e.adjoint_of(j), row, _adjoint_shape(ops[j])))
            continue
        if kind == "fused":
            for j in item.targets:
                if (counts[j] == 2 and j not in declared and e.loop_of(j) is None
                        and ops[j].shape == item.shape):  # fmt: skip
                    # Only this loop adds to it, once an element: written, not zeroed first.
                    declared.add(j)
                    backward.append(f"g_{j} = np.empty({_shape_code(ops[j].shape)})")
                    item.assign_first(f"g_{j}")
                declare(j)
            backward.extend(item.reverse_lines)
            continue
        if kind == "sum":
            if item.final in reached:
                declare(item.initial)
                backward.extend(accumulate(e, e.adjoint_of(item.initial), f"g_{item.final}", ()))
            continue
        for j, code in contributions.get(item, []):
            if j is None:
                backward.extend(code)
                continue
            accumulating = j == 0 or counts[j] > 1 or j in scatters
            if j not in declared and e.loop_of(j) is None and not accumulating:
                declared.add(j)
                backward.append(f"g_{j} = {code}")
                continue
            declare(j)
            backward.extend(accumulate(e, e.adjoint_of(j), code, _adjoint_shape(ops[j])))
    if 0 not in reached:
        raise TraceError("the log density does not depend on its parameters")
    body = keep_read_tapes([*e.setup, *forward, *backward, f"return {e.value(out)}"])
    text = f"def {name}(q, grad_out, fdata, idata):\n" + "\n".join("    " + ln for ln in body)
    fdata = np.concatenate(e.fdata) if e.fdata else np.zeros(0)
    idata = np.concatenate(e.idata) if e.idata else np.zeros(0, dtype=np.int64)
    return SourceFunction(text + "\n", fdata, idata)
