"""Running sums over the passes of a rolled loop, added up inside that loop.

``lp = lp - 0.5 * ((y[t] - mu) / sigma) ** 2`` in a Python loop is recorded as two
interleaved chains, which :mod:`~hamiltonia.modelling.loop_rolling` may find as two loops:
one computing each pass's term, and a second of one operation, ``total = total - term[k]``,
reading the first's tape (in order or backwards, as the recording's order has it). Written
as rolled loops, the terms go through a tape, the total through a second tape, and the
reverse pass has an adjoint tape for each, although the adjoint of every term is the same
number, :math:`\\pm \\bar{s}`, the total's adjoint.

:func:`find_running_sums` recognises such a second loop (:class:`RunningSum`): the first
loop then adds its term into a number in each pass (``s_T{loop}``), the total is the
initial value plus (or minus) that number, and the first loop's reverse pass starts the
term's adjoint at :math:`\\pm \\bar{s}` in every pass, without a tape. The sum is taken in
the first loop's order, which differs from the recording's only in rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RunningSum", "find_running_sums"]


@dataclass
class RunningSum:
    """A loop of one operation adding (``sign`` 1) or subtracting (-1) a term of each pass
    of an earlier loop (``source``, its body operation ``slot``) into a running total.

    Attributes
    ----------
    loop : Loop
        The running sum's own loop, written as :meth:`forward` instead.
    source, slot, sign : int
        The loop of the terms, their body operation, and how they enter the total.
    initial, final : int
        The operations of the total's initial value (before the loop) and of its last pass.
    """

    loop: object
    source: int
    slot: int
    sign: int
    initial: int
    final: int

    @property
    def name(self) -> str:
        """The number the source loop adds its terms into."""
        return f"s_T{self.loop.number}"

    def forward(self, e) -> str:
        return (
            f"v_{self.final} = {e.value(self.initial)} {'+' if self.sign > 0 else '-'} {self.name}"
        )

    def seed(self) -> str:
        """The adjoint of each term: the total's, or minus it."""
        return f"g_{self.final}" if self.sign > 0 else f"-g_{self.final}"


def _term_ref(loop, op):
    """``(sign, ref)`` of the term when ``op`` adds a term to the total of the last pass
    (or subtracts it), else ``None``."""
    refs = [loop.refs.get((0, i)) for i in (0, 1)]
    carry = [r is not None and r.kind == "body" and r.slot == 0 and r.lag == 1 for r in refs]
    if op.fun is np.subtract and carry[0] and not carry[1]:
        return -1, refs[1]
    if op.fun is np.add and carry.count(True) == 1:
        return 1, refs[carry.index(False)]
    return None


def find_running_sums(e) -> dict[int, RunningSum]:
    """The running sums among ``e``'s rolled loops, by loop number (module docs)."""
    graph, ops = e.graph, e.graph.ops
    readers: dict[int, set] = {}  # by operation, the operations reading it
    for k in range(1, len(ops)):
        for p in ops[k].parents.values():
            readers.setdefault(p, set()).add(k)
    found = {}
    for loop in e.loops:
        body = loop.body(graph)
        if loop.period != 1 or set(body[0].parents) != {0, 1} or loop.depth != 1:
            continue
        op = body[0]
        if op.shape != () or np.asarray(op.value).dtype.kind != "f":
            continue
        term = _term_ref(loop, op)
        if term is None or term[1] is None or term[1].kind != "other":
            continue
        sign, ref = term
        source = e.loops[ref.loop]
        whole = (ref.step, ref.shift) in ((1, 0), (-1, loop.count - 1))
        if source.count != loop.count or not whole or source.body(graph)[ref.slot].shape:
            continue
        # The total is read only after its last pass; the terms only by the total, and not
        # carried from pass to pass in their own loop.
        final = loop.stop - 1
        inside = set(range(loop.start, loop.stop))
        if any(readers.get(k, set()) - inside for k in range(loop.start, final)):
            continue
        terms = range(source.start + ref.slot, source.stop, source.period)
        within = inside | set(range(source.start, source.stop))
        if source.number in found or any(readers.get(k, set()) - within for k in terms):
            continue
        if any(r.kind == "body" and r.slot == ref.slot and r.lag >= 1
               for r in source.refs.values()):  # fmt: skip
            continue
        found[loop.number] = RunningSum(loop, source.number, ref.slot, sign,
                                        loop.initial[(0, -1)], final)  # fmt: skip
    return found
