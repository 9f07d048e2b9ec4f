"""Chains of elementwise operations written as one loop over the elements, forward and back.

Written one NumPy operation at a time, a chain such as ``np.sum(((y - (mu + tau * eta)) /
sigma) ** 2)`` allocates an array for every step, in the forward pass and again for every
adjoint in the reverse pass; on arrays of a few elements (eight schools) the allocations
and the calls cost ten times the arithmetic. This module groups the elementwise operations
(rules with ``elementwise``: :class:`~hamiltonia.modelling.adjoint_rules.Elementwise`,
powers, ``np.where``) and the sums over all elements of their values into *groups*
(:class:`Fused`), each written as

* a forward loop over the elements of one shape, each operation's element a local number
  (``w_k``), each sum a running total, an array written only for a value read outside the
  group (``v_k``);
* a reverse loop over the same elements, after the code that reads the group's values: it
  computes the elements again (or reads the ones written) and runs the chain rule backwards
  on numbers (``h_k``), adding into the adjoints of the values from outside the group
  (a number broadcast over the elements gets the sum of its contributions; an array, its
  element).

This is loop fusion with recomputation in the reverse pass (Griewank and Walther 2008,
ch. 12: rematerialisation instead of a stored tape), as one writes such a gradient by hand.

Which operations share a group: those of the same shape and the same *stage*, where an
operation's stage counts the loops that must have finished before it can run: the sum of a
group's elements, or a value computed outside the groups from one, is known only after the
group's loop. So a group never depends on itself through other code, the groups and the
other statements can be put in an order where each comes after what it reads
(:func:`segments`), and the reverse pass, in the reverse order, visits a group after
everything that reads it.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field

import numpy as np

from hamiltonia.modelling.adjoint_emitter import _Emitter, _numeric, _shape_code
from hamiltonia.modelling.trace import Graph, TraceError

__all__ = ["KEEP_SIZE", "Fused", "find_groups", "segments"]

#: The fewest elements of a group whose library calls are written into arrays in the
#: forward loop and read back by the reverse loop, rather than computed again.
KEEP_SIZE = 32
#: A call (``np.exp(``, ``lgamma(``) or a power in an element's source.
_CALL = re.compile(r"\w\(|\*\*")


@dataclass
class Fused:
    """A group of elementwise operations written as one loop over ``shape``.

    Attributes
    ----------
    number : int
        The group's number (its loop variables are ``u{number}_{axis}``).
    shape : tuple
        The shape of the elements looped over.
    ops : list of int
        Its elementwise operations, in the order of the recording.
    sums : dict of int to (int, int)
        Its sums over all elements of one of ``ops``: by the sum's index, the summed
        operation and the divisor (1, or the count for a mean).
    stored : set of int
        The operations of ``ops`` read outside the group, written into arrays.
    """

    number: int
    shape: tuple
    ops: list = field(default_factory=list)
    sums: dict = field(default_factory=dict)
    stored: set = field(default_factory=set)
    #: The operations also written into arrays for the reverse loop (``_kept``).
    kept: set = field(default_factory=set)
    #: The reverse loop's statements and the values outside the group it adds to, from
    #: :meth:`plan_reverse`.
    reverse_lines: list = field(default_factory=list)
    targets: list = field(default_factory=list)

    @property
    def members(self) -> set[int]:
        return {*self.ops, *self.sums}

    @property
    def first(self) -> int:
        return min(self.members)

    # ------------------------------------------------------------------ source helpers
    def _vars(self) -> list[str]:
        return [f"u{self.number}_{axis}" for axis in range(len(self.shape))]

    def _index(self, shape: tuple) -> str:
        """``[...]`` reading the element of an array of ``shape`` (broadcast to the group's
        shape: a length-1 axis is read at 0, a missing leading one is left out)."""
        if not shape:
            return ""
        names = self._vars()[len(self.shape) - len(shape) :]
        return (
            "[" + ", ".join("0" if n == 1 else v for n, v in zip(shape, names, strict=True)) + "]"
        )

    def _loop_head(self, lines: list[str], lower: bool = False) -> str:
        """Append the nested ``for`` statements (over the lower triangle of a square group,
        with ``lower``); the indentation of the body."""
        names = self._vars()
        for depth, (v, n) in enumerate(zip(names, self.shape, strict=True)):
            stop = f"{names[0]} + 1" if lower and depth == 1 else n
            lines.append("    " * depth + f"for {v} in range({stop}):")
        return "    " * len(self.shape)

    def _symmetric(self, e: _Emitter) -> bool:
        """Whether each element equals its transposed one: a square group whose arrays are
        all data equal to their transposes (a kernel matrix of distances), its numbers the
        same for every element. Its forward loop then runs over the lower triangle."""
        if len(self.shape) != 2 or self.shape[0] != self.shape[1]:
            return False
        for k in self.ops:
            op = e.graph.ops[k]
            for i, arg in enumerate(op.args):
                if i in op.parents:
                    p = op.parents[i]
                    if p not in self.ops and e.graph.ops[p].shape:
                        return False  # an array computed outside: not known symmetric
                elif _numeric(arg) and np.ndim(arg):
                    a = np.asarray(arg)
                    if a.shape != self.shape or not np.array_equal(a, a.T):
                        return False
        return True

    def _operands(self, e: _Emitter, k: int) -> list:
        """Source of one element of each positional argument of operation ``k``."""
        op = e.graph.ops[k]
        codes = []
        for i, arg in enumerate(op.args):
            if i in op.parents:
                p = op.parents[i]
                if p in self.ops:
                    codes.append(f"w_{p}")
                else:
                    codes.append(e.value(p) + self._index(e.graph.ops[p].shape))
            else:
                code = e.operands_of_constant(arg)
                if code is not None and np.ndim(arg):
                    code += self._index(np.shape(arg))
                codes.append(code)
        return codes

    # ------------------------------------------------------------------ the two loops
    def _kept(self, e: _Emitter, rule_of) -> set[int]:
        """The elements worth writing for the reverse loop to read rather than compute
        again: those of a library call (``exp``, ``log``, a power), over at least
        :data:`KEEP_SIZE` elements (below it, the array costs more than the calls)."""
        if int(np.prod(self.shape)) < KEEP_SIZE:
            return set()
        out = set()
        for k in self.ops:
            op = e.graph.ops[k]
            if _CALL.search(rule_of(op).scalar_forward(e, op, self._operands(e, k))):
                out.add(k)
        return out - self.stored

    def forward(self, e: _Emitter, rule_of) -> list:
        """The forward loop (and the arrays and totals it writes); the arrays only the
        reverse loop may read are :class:`~.adjoint_loops.TapeLines`, left out unless it
        does."""
        from hamiltonia.modelling.adjoint_loops import TapeLines

        self.kept = self._kept(e, rule_of)
        lines: list = [f"v_{s} = 0.0" for s in sorted(self.sums)]
        lines += [f"v_{k} = np.empty({_shape_code(self.shape)})" for k in sorted(self.stored)]
        lines += [TapeLines(f"v_{k}", [f"v_{k} = np.empty({_shape_code(self.shape)})"])
                  for k in sorted(self.kept)]  # fmt: skip
        symmetric = self._symmetric(e)
        pad = self._loop_head(lines, lower=symmetric)
        at = self._index(self.shape)
        mirror = at if not symmetric else "[" + ", ".join(reversed(self._vars())) + "]"
        for k in self.ops:
            op = e.graph.ops[k]
            lines.append(f"{pad}w_{k} = {rule_of(op).scalar_forward(e, op, self._operands(e, k))}")
            stores = [f"{pad}v_{k}{at} = w_{k}"] + ([f"{pad}v_{k}{mirror} = w_{k}"] * symmetric)
            if k in self.stored:
                lines += stores
            elif k in self.kept:
                lines.append(TapeLines(f"v_{k}", stores))
        row, col = self._vars()[:2] if symmetric else ("", "")
        for s, (k, _) in sorted(self.sums.items()):
            if symmetric:  # an element off the diagonal stands for its mirror too
                lines.append(f"{pad}v_{s} += w_{k} if {row} == {col} else 2.0 * w_{k}")
            else:
                lines.append(f"{pad}v_{s} += w_{k}")
        lines += [f"v_{s} = v_{s} / {n}.0" for s, (_, n) in sorted(self.sums.items()) if n != 1]
        return lines

    def assign_first(self, adjoint: str) -> None:
        """Make the reverse loop's first addition into the array ``adjoint`` (of the
        group's shape, which nothing else adds to) an assignment: it need not be zeroed."""
        start = f"{adjoint}{self._index(self.shape)} += "
        for n, line in enumerate(self.reverse_lines):
            if line.lstrip().startswith(start):
                self.reverse_lines[n] = line.replace(" += ", " = ", 1)
                return

    def plan_reverse(self, e: _Emitter, rule_of, reached: set[int]) -> None:
        """Write the reverse loop (:attr:`reverse_lines`) given the values outside the group
        that the output depends on (``reached``), and list the values outside the group
        it adds to (:attr:`targets`)."""
        graph = e.graph
        at = self._index(self.shape)
        into: dict[int, list[str]] = {k: [] for k in self.ops}
        for s, (k, n) in sorted(self.sums.items()):
            if s in reached:
                into[k].append(f"g_{s}" if n == 1 else f"g_{s} / {n}.0")
        body, targets = [], []
        for k in reversed(self.ops):
            parts = into[k]
            if k in self.stored and k in reached:
                parts.append(f"g_{k}{at}")
            if not parts:
                continue
            op = graph.ops[k]
            rule, a = rule_of(op), self._operands(e, k)
            body.append(f"h_{k} = {' + '.join(parts)}")
            for i, p in sorted(op.parents.items()):
                code = rule.scalar_adjoint(e, op, i, f"h_{k}", a, f"w_{k}")
                if code is None:
                    continue
                if p in self.ops:
                    into[p].append(f"({code})")
                    continue
                target = e.adjoint_of(p) + self._index(graph.ops[p].shape)
                body.append(f"{target} += {code}")
                if p not in targets:
                    targets.append(p)
        self.targets = targets
        if not body:
            self.reverse_lines = []
            return
        # The elements the reverse statements read: computed again (read back when
        # written), in the forward order.
        text = "\n".join(body)
        needed = {k for k in self.ops if re.search(rf"\bw_{k}\b", text)}
        recompute = {}
        for k in reversed(self.ops):
            if k not in needed:
                continue
            op = graph.ops[k]
            if k in self.stored or k in self.kept:
                recompute[k] = f"w_{k} = v_{k}{at}"
                continue
            code = rule_of(op).scalar_forward(e, op, self._operands(e, k))
            recompute[k] = f"w_{k} = {code}"
            needed.update(p for p in op.parents.values() if p in self.ops)
        lines: list[str] = []
        pad = self._loop_head(lines)
        lines += [pad + recompute[k] for k in self.ops if k in recompute]
        lines += [pad + line for line in body]
        self.reverse_lines = lines


# ---------------------------------------------------------------------------- grouping
def _sum_divisor(e: _Emitter, op, rule) -> int | None:
    """For a sum (or mean) of all elements of a traced array into a number: 1 (the count,
    for a mean); else ``None``."""
    from hamiltonia.modelling.adjoint_rules import Sum

    if not isinstance(rule, Sum) or op.shape != () or set(op.parents) != {0}:
        return None
    try:
        source, axes, count = rule._plan(e, op)
    except (TraceError, TypeError):
        return None
    if not source or len(axes) != len(source):
        return None
    return count if rule.mean else 1


def _mappable(graph: Graph, k: int, rule, in_loop) -> bool:
    """Whether operation ``k`` can be an element of a loop over its shape."""
    op = graph.ops[k]
    if not getattr(rule, "elementwise", False) or not op.shape or isinstance(op.value, tuple):
        return False
    if np.asarray(op.value).dtype.kind != "f":
        return False
    # An array from a rolled loop's tape is read whole, not element by element.
    return not any(graph.ops[p].shape and in_loop(p) for p in op.parents.values())


def find_groups(e: _Emitter, rule_of) -> list[Fused]:
    """The groups of ``e``'s graph (module docs), outside its rolled loops."""
    graph, ops = e.graph, e.graph.ops

    def in_loop(k: int) -> bool:
        return e.loop_of(k) is not None

    kind: dict[int, str] = {}  # "map" or "sum"
    divisor: dict[int, int] = {}
    for k in range(1, len(ops)):
        if in_loop(k):
            continue
        rule = rule_of(ops[k])
        if _mappable(graph, k, rule, in_loop):
            kind[k] = "map"
            continue
        n = _sum_divisor(e, ops[k], rule)
        if n is not None and kind.get(ops[k].parents[0]) == "map":
            kind[k], divisor[k] = "sum", n
    if not any(v == "map" for v in kind.values()):
        return []
    # Stages (module docs): a loop of the recording counts as one statement.
    stage = np.zeros(len(ops), dtype=np.int64)
    k = 1
    while k < len(ops):
        loop = e.loop_of(k)
        if loop is not None:
            reads = [p for j in range(loop.start, loop.stop) for p in ops[j].parents.values()
                     if p < loop.start]  # fmt: skip
            stage[loop.start : loop.stop] = max((_after(p, kind, stage) for p in reads),
                                                default=0)  # fmt: skip
            k = loop.stop
            continue
        op = ops[k]
        if kind.get(k) == "sum":
            stage[k] = stage[op.parents[0]]
        elif kind.get(k) == "map":
            stage[k] = max((stage[p] if kind.get(p) == "map" and ops[p].shape == op.shape
                            else _after(p, kind, stage) for p in op.parents.values()),
                           default=0)  # fmt: skip
        else:
            stage[k] = max((_after(p, kind, stage) for p in op.parents.values()), default=0)
        k += 1
    _sink(ops, kind, stage)
    by_key: dict[tuple, Fused] = {}
    for k in sorted(kind):
        shape = ops[k].shape if kind[k] == "map" else ops[ops[k].parents[0]].shape
        group = by_key.setdefault((int(stage[k]), shape), Fused(len(by_key), shape))
        if kind[k] == "map":
            group.ops.append(k)
        else:
            group.sums[k] = (ops[k].parents[0], divisor[k])
    groups = sorted(by_key.values(), key=lambda g: g.first)
    for number, group in enumerate(groups):
        group.number = number
        members = group.members
        for j in range(1, len(ops)):
            if j in members:
                continue
            for p in ops[j].parents.values():
                if p in group.ops:
                    group.stored.add(p)
    return groups


def _sink(ops, kind: dict, stage) -> None:
    """Move an elementwise operation whose readers are all in one later loop of its shape
    into that loop, when the values it reads from its own loop are written into arrays
    anyway (read outside it): it is computed where it is read, rather than written into an
    array of its own and read back (its adjoint likewise). ``y * z - softplus(z)``:
    ``y * z`` joins the loop after the call."""
    readers: dict[int, list] = {}
    for k in range(1, len(ops)):
        for p in ops[k].parents.values():
            readers.setdefault(p, []).append(k)
    for k in sorted((k for k, v in kind.items() if v == "map"), reverse=True):
        shape, mine = ops[k].shape, int(stage[k])
        users = readers.get(k, [])
        later = {int(stage[u]) for u in users}
        if not users or len(later) != 1 or min(later) <= mine:
            continue
        if any(kind.get(u) != "map" or ops[u].shape != shape for u in users):
            continue
        ok = True
        for p in set(ops[k].parents.values()):
            if kind.get(p) == "map" and ops[p].shape == shape and int(stage[p]) == mine:
                # p stays in this loop: written anyway only if read outside it.
                ok &= any(u != k and (kind.get(u) is None or int(stage[u]) != mine)
                          for u in readers.get(p, []))  # fmt: skip
        if ok:
            stage[k] = min(later)


def _after(p: int, kind: dict, stage) -> int:
    """The stage from which code outside a group may read operation ``p``'s value."""
    return int(stage[p]) + (1 if p in kind else 0)


# ---------------------------------------------------------------------------- the order
def segments(e: _Emitter, groups: list[Fused]) -> list[tuple[str, object]]:
    """The recording as the generated code runs it: ``("op", index)`` for an operation
    written on its own, ``("loop", loop)`` for a rolled loop, ``("fused", group)`` for a
    group, each after every value it reads (in the recording's order where there is a
    choice)."""
    ops = e.graph.ops
    node_of: dict[int, tuple] = {}
    for group in groups:
        for k in group.members:
            node_of[k] = ("fused", group.number)
    for loop in e.loops:
        for k in range(loop.start, loop.stop):
            node_of[k] = ("loop", loop.number)
    nodes: dict[tuple, list[int]] = {}
    for k in range(1, len(ops)):
        nodes.setdefault(node_of.setdefault(k, ("op", k)), []).append(k)
    needs: dict[tuple, set] = {node: set() for node in nodes}
    users: dict[tuple, set] = {node: set() for node in nodes}
    for node, members in nodes.items():
        for k in members:
            for p in ops[k].parents.values():
                other = node_of.get(p)
                if other is not None and other != node:
                    needs[node].add(other)
                    users[other].add(node)
    ready = [(min(members), node) for node, members in nodes.items() if not needs[node]]
    heapq.heapify(ready)
    out = []
    while ready:
        _, node = heapq.heappop(ready)
        kind, key = node
        out.append((kind, groups[key] if kind == "fused" else e.loops[key] if kind == "loop"
                    else key))  # fmt: skip
        for user in users[node]:
            needs[user].discard(node)
            if not needs[user]:
                heapq.heappush(ready, (min(nodes[user]), user))
    if len(out) != len(nodes):  # the stages rule this out
        raise TraceError("the fused loops could not be ordered")
    return out
