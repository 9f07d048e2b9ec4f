"""Adjoints of the views of the input written as views of the gradient itself.

A log density reads its parameters as slices of the input vector (``q[2:10]``, the block
``eta``, then ``eta`` reshaped). Left to the rules, each slice's adjoint is a new array of
zeros, added into the gradient's slice at the end; on small blocks the allocation costs
more than the arithmetic (about 35 ns for an array of 8). Since the gradient (``grad_out``,
zeroed first) is itself an array, the adjoint of a view of the input, by basic indexing or
an unchanged shape, is the same view of the gradient: :func:`view_adjoints` names them, and
the generated code adds straight into the gradient (as one writes ``grad[2 + j] += ...`` by
hand).
"""

from __future__ import annotations

__all__ = ["view_adjoints"]


def view_adjoints(e, rule_of) -> dict[int, str]:
    """By operation (outside rolled loops), the source of its adjoint as a view of the
    gradient ``g_0`` (through the adjoint of its operand, itself such a view): for an array
    taken from the input, or from such a view, by integers and slices, or a change of
    shape that keeps the shape. Their rules' own adjoints are then left out."""
    from hamiltonia.modelling.adjoint_array_rules import ArrayOf, GetItem
    from hamiltonia.modelling.adjoint_rules import Reshape

    ops = e.graph.ops
    views: dict[int, str] = {}
    for k in range(1, len(ops)):
        op = ops[k]
        if e.loop_of(k) is not None or not op.shape or isinstance(op.value, tuple):
            continue
        if set(op.parents) != ({2} if isinstance(rule_of(op), ArrayOf) else {0}):
            continue
        p = next(iter(op.parents.values()))
        if p != 0 and p not in views:
            continue
        rule, source = rule_of(op), ops[p].shape
        if isinstance(rule, Reshape | ArrayOf) and op.shape == source:
            views[k] = f"g_{p}"
        elif isinstance(rule, GetItem) and source:
            _, codes, array_at, _ = rule._parse(op)
            if array_at is None and "None" not in codes:
                views[k] = f"g_{p}[{', '.join(codes)}]"
    return views
