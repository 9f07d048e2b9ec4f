"""A rolled loop (:class:`~hamiltonia.modelling.loop_rolling.Loop`) written as numba source:
its forward pass as a ``for`` loop over the passes, and its reverse-mode adjoint as a loop
backwards over them, for :func:`hamiltonia.modelling.adjoint_source.gradient_source`.

The forward loop writes each body value of pass :math:`k` into a *tape*, an array with one
row per pass (``v_T{loop}_{slot}``, shape ``(depth + count, ...)``, the first ``depth`` rows
holding the carries' initial values), which the code after the loop and the reverse loop
read. The reverse loop runs the same rules
(:data:`~hamiltonia.modelling.adjoint_source.RULES`) on the tape's rows: for pass
:math:`k = n - 1, \\dots, 0` and body operation :math:`j` from last to first,

.. math::

    \\bar v_{j'}^{(k - d)} \\mathrel{+}= \\bar v_j^{(k)}\\,
        \\frac{\\partial f_j}{\\partial v_{j'}^{(k - d)}},

into an adjoint tape of the same shape (``g_T{loop}_{slot}``) for a value of the loop (a
carry :math:`d \\ge 1` passes back, or the same pass), and into the adjoint of a value
computed before the loop otherwise, added over the passes. The rows before pass 0 are then
added into the adjoints of the carries' initial values. This is the reverse mode of a loop
with a stored tape (Griewank and Walther 2008, ch. 12), the tape being every body value.

What one writes by hand instead of the general form: the body values that do not depend on
an earlier pass, when a later pass reads them, are computed by a loop of their own first
(``_first_loop``), so that neither loop carries a value from pass to pass and both run
as vector code; the adjoint of a number carried one pass back is kept in two numbers rather
than a tape (``LoopAdjoint._scalar_carries``); what the reverse loop adds into one
element of an array from before the loop (a coefficient ``phi[k]``) is summed in a number
and added once after it; a running sum's terms get their adjoint as a number
(:mod:`hamiltonia.modelling.running_sums`); the body's elementwise operations, views and
reductions over an axis are written element by element straight into their tapes' rows,
forward and back, rather than as arrays of the pass
(:mod:`hamiltonia.modelling.loop_elements`).
"""

from __future__ import annotations

import re

import numpy as np

from hamiltonia.modelling.adjoint_emitter import _Emitter, _shape_code
from hamiltonia.modelling.loop_elements import BodyElements
from hamiltonia.modelling.loop_rolling import Loop, Ref

__all__ = ["LoopAdjoint", "TapeLines", "accumulate", "body_operands", "forward_loop",
           "keep_read_tapes"]  # fmt: skip


def _counter(loop: Loop) -> str:
    return f"i_{loop.number}"


def _local(loop: Loop, slot: int, adjoint: bool = False) -> str:
    return f"{'g' if adjoint else 'v'}_L{loop.number}_{slot}"


def _read(e: _Emitter, loop: Loop, ref: Ref, reverse: bool, adjoint: bool = False,
          stored=frozenset()) -> str:  # fmt: skip
    """Source of what ``ref`` reads in the current pass (its adjoint, with ``adjoint``); the
    body values ``stored`` are read from their tapes (computed by an earlier loop)."""
    i = _counter(loop)
    if ref.kind == "fixed":
        return e.adjoint_of(ref.index) if adjoint else e.value(ref.index)
    if ref.kind == "body":
        if ref.lag == 0 and not reverse and not adjoint and ref.slot not in stored:
            return _local(loop, ref.slot)
        return f"{loop.tape(ref.slot, adjoint)}[{i} + {loop.depth - ref.lag}]"
    other = e.loops[ref.loop]
    first = other.depth + ref.shift
    row = f"{i} + {first}" if ref.step == 1 else f"{first} - {i}"
    return f"{other.tape(ref.slot, adjoint)}[{row}]"


def body_operands(e: _Emitter, loop: Loop, slot: int, reverse: bool,
                  stored=frozenset()) -> list:  # fmt: skip
    """Source of each positional argument of body operation ``slot`` in the current pass
    (``_Emitter.operands`` for a body operation)."""
    op = loop.body(e.graph)[slot]
    codes = []
    for i, arg in enumerate(op.args):
        if i in op.parents:
            codes.append(_read(e, loop, loop.refs[(slot, i)], reverse, stored=stored))
        elif (slot, i) in loop.stacked:
            codes.append(f"{e.constant(loop.stacked[(slot, i)])}[{_counter(loop)}]")
        else:
            codes.append(e.operands_of_constant(arg))
    return codes


def _index_codes(e: _Emitter, loop: Loop, slot: int) -> None:
    """Put the index of a body indexing operation whose index differs between passes, read
    from arrays of the passes' integers, where its rule looks for it (``e.memo``)."""
    from hamiltonia.modelling.adjoint_array_rules import GetItem

    plan = loop.indices.get(slot)
    if plan is None:
        return
    op = loop.body(e.graph)[slot]
    parts, codes, array_at, index_array = GetItem()._parse(op)
    codes = list(codes)
    i = _counter(loop)
    for p, varying in enumerate(plan):
        if varying is None:
            continue
        if isinstance(varying, tuple):
            step = parts[p].step
            codes[p] = f"{e.constant(varying[0])}[{i}]:{e.constant(varying[1])}[{i}]"
            codes[p] += "" if step is None else f":{int(step)}"
        else:
            codes[p] = f"{e.constant(varying)}[{i}]"
    e.memo[id(op)] = (parts, codes, array_at, index_array)


def _dtype(op) -> str:
    kind = np.asarray(op.value).dtype.kind
    return {"b": ", dtype=np.bool_", "i": ", dtype=np.int64", "u": ", dtype=np.int64"}.get(kind, "")


def _by_element(e: _Emitter, row: str, value: str, shape: tuple, how: str) -> list[str]:
    """Statements writing (``how`` ``"="``) or adding (``"+="``) the array ``value`` of
    ``shape`` into ``row`` of a tape (``"v_T0_1[i_0 + 1]"``) element by element: numba
    compiles an array assigned to (or added into) a row with the error message it formats
    for a mismatch of shapes, about 1.7 s per kind of row, where the shapes are known to
    agree."""
    tape_name, _, index = row.partition("[")
    ks = [e.temp("k") for _ in shape]
    lines = []
    for depth, (k, n) in enumerate(zip(ks, shape, strict=True)):
        lines.append("    " * depth + f"for {k} in range({n}):")
    at = ", ".join(ks)
    lines.append("    " * len(shape) + f"{tape_name}[{index[:-1]}, {at}] {how} {value}[{at}]")
    return lines


class TapeLines(list):
    """Statements that write the tape ``name`` (its allocation, its initial rows, a pass's
    store), kept in the code only if the tape is read somewhere (:func:`keep_read_tapes`)."""

    def __init__(self, name: str, lines):
        super().__init__(lines)
        self.name = name


def forward_loop(e: _Emitter, loop: Loop, rule_of, sums=()) -> list:
    """The forward pass of ``loop``: its tapes, their initial rows, and the loop; the
    statements writing a tape are :class:`TapeLines`. ``sums``: ``(name, slot)``, a number
    the loop adds body value ``slot`` of each pass into
    (:mod:`hamiltonia.modelling.running_sums`)."""
    lines: list = [f"{name} = 0.0" for name, _ in sums]
    rows = loop.depth + loop.count
    body = loop.body(e.graph)
    for slot, op in enumerate(body):
        allocate = f"{loop.tape(slot)} = np.empty({_shape_code((rows, *op.shape))}{_dtype(op)})"
        lines.append(TapeLines(loop.tape(slot), [allocate]))
    elements = BodyElements.of(e, loop, rule_of, _read)
    lines += [TapeLines(name, [allocate]) for name, allocate in elements.tapes()]
    for (slot, m), index in sorted(loop.initial.items()):
        row = f"{loop.tape(slot)}[{loop.depth + m}]"
        if body[slot].shape:
            init = _by_element(e, row, e.value(index), body[slot].shape, "=")
        else:
            init = [f"{row} = {e.value(index)}"]
        lines.append(TapeLines(loop.tape(slot), init))
    i = _counter(loop)
    first = _first_loop(loop)
    for part in (first, set(range(loop.period)) - first):
        if not part:
            continue
        lines.append(f"for {i} in range({loop.count}):")
        # The values written element by element are read from their tapes.
        stored = (first if part is not first else frozenset()) | set(elements.forms)
        for slot in sorted(part):
            op = body[slot]
            _index_codes(e, loop, slot)
            if slot in elements.forms:
                lines += [TapeLines(*item) if isinstance(item, tuple)
                          else TapeLines(loop.tape(slot), [item])
                          for item in elements.forward(slot, stored)]  # fmt: skip
                continue
            code = rule_of(op).forward(e, op, body_operands(e, loop, slot, False, stored))
            lines.append(f"    {_local(loop, slot)} = {code}")
            row = f"{loop.tape(slot)}[{i} + {loop.depth}]"
            if op.shape:
                stores = _by_element(e, row, _local(loop, slot), op.shape, "=")
            else:
                stores = [f"{row} = {_local(loop, slot)}"]
            lines.append(TapeLines(loop.tape(slot), ["    " + ln for ln in stores]))
        lines += [f"    {name} += {_read(e, loop, Ref('body', slot=slot), False, stored=stored)}"
                  for name, slot in sums if slot in part]  # fmt: skip
    return lines


def _first_loop(loop: Loop) -> set[int]:
    """The body values to compute in a loop of their own, before the others: those that do
    not depend on an earlier pass, when a later pass reads one of them (its tape then
    holds it; empty otherwise). The recording's order can make a pass compute a value
    the next pass reads (AR's mean, from the data of the step before): a carry through
    which nothing recurs, which would still keep the loop from running as vector code."""
    depends: set[int] = set()
    for (slot, _), ref in sorted(loop.refs.items()):
        if ref.kind == "body" and (ref.lag >= 1 or ref.slot in depends):
            depends.add(slot)
    free = set(range(loop.period)) - depends
    carried = any(r.kind == "body" and r.lag >= 1 and r.slot in free for r in loop.refs.values())
    return free if carried and depends else set()


def keep_read_tapes(lines: list) -> list[str]:
    """``lines`` with the :class:`TapeLines` of the tapes no other statement reads removed
    (the forward pass stores every body value; the code after the loop, the later passes
    and the reverse loop read some), and the others in place."""
    plain = "\n".join(line for line in lines if isinstance(line, str))
    tapes = [line for line in lines if isinstance(line, TapeLines)]
    kept: set[str] = set()
    while True:  # a kept tape's initial rows may read another loop's tape
        read = "\n".join([plain, *("\n".join(t) for t in tapes if t.name in kept)])
        found = {t.name for t in tapes if f"{t.name}[" in read}
        if found == kept:
            break
        kept = found
    out: list[str] = []
    for line in lines:
        if isinstance(line, TapeLines):
            if line.name in kept:
                out.extend(line)
        else:
            out.append(line)
    return out


def accumulate(e: _Emitter, target: str, code, shape: tuple) -> list[str]:
    """Statements adding a contribution ``code`` (source of an expression, or statements
    writing into ``{target}``) into ``target``: a whole adjoint, or a row of an adjoint
    tape (``g_T...[...]``), added into element by element (:func:`_by_element`)."""
    if isinstance(code, list):
        return [line.format(target=target) for line in code]
    if not shape:
        return [f"{target} = {target} + {code}"]
    if target.startswith("g_T"):
        value = e.temp("add")
        return [f"{value} = {code}", *_by_element(e, target, value, shape, "+=")]
    return [f"{target} += {code}"]


class LoopAdjoint:
    """The reverse pass of one loop: which body values need an adjoint (those the output
    depends on), each argument's contribution, and the statements."""

    def __init__(self, e: _Emitter, loop: Loop, rule_of, reached: set[int], seeds=None):
        self.e, self.loop = e, loop
        #: By slot, the adjoint a body value gets in every pass from outside the loop (a
        #: running sum's term: :mod:`hamiltonia.modelling.running_sums`), without a tape.
        self.seeds: dict[int, str] = dict(seeds or {})
        body = loop.body(e.graph)
        self.codes: dict[tuple[int, int], object] = {}
        for slot, op in enumerate(body):
            rule = rule_of(op)
            operands = body_operands(e, loop, slot, reverse=True)
            out = f"{loop.tape(slot)}[{_counter(loop)} + {loop.depth}]"
            for i in sorted(op.parents):
                code = rule.adjoint(e, op, i, _local(loop, slot, adjoint=True), operands, out)
                if code is not None:
                    self.codes[(slot, i)] = code
        # The body values reached from after the loop, then through the body's own reads.
        slots = {loop.locate(r)[0] for r in reached if loop.start <= r < loop.stop}
        slots |= set(self.seeds)
        changed = True
        while changed:
            changed = False
            for slot, i in self.codes:
                ref = loop.refs[(slot, i)]
                if slot in slots and ref.kind == "body" and ref.slot not in slots:
                    slots.add(ref.slot)
                    changed = True
        self.slots = slots
        self.local: set[int] = set()
        #: The body values written element by element (:mod:`.loop_elements`), and the
        #: views among them whose adjoints go straight into their operands'.
        self.elements = BodyElements.of(e, loop, rule_of, _read)
        self.aliases: set[int] = set()
        self.carries = self._scalar_carries()
        for slot in self.carries:  # its last pass's adjoint, added to after the loop
            e.adjoint_names[loop.stop - loop.period + slot] = _carry(loop, slot, "n")

    def _scalar_carries(self) -> set[int]:
        """The body values, numbers, that later passes read one pass back only and that
        nothing outside the loop reads but in the last pass: their adjoints are kept in two
        numbers (this pass's, the previous pass's) instead of a tape."""
        loop, graph = self.loop, self.e.graph
        body = loop.body(graph)
        lags: dict[int, set] = {}
        for ref in loop.refs.values():
            if ref.kind == "body":
                lags.setdefault(ref.slot, set()).add(ref.lag)
        last = loop.stop - loop.period
        found = set()
        for slot in self.slots:
            if body[slot].shape or lags.get(slot, set()) - {0} != {1}:
                continue
            rows = set(range(loop.start + slot, last, loop.period))
            # Read only inside the loop, but in the last pass (the later operations'
            # parents are after the loop; the search stops at the first reader).
            if not any(p in rows for op in graph.ops[loop.stop :] for p in op.parents.values()):
                found.add(slot)
        return found

    def add_only_within(self, external: set[int]) -> None:
        """Keep as a number of the pass (no adjoint tape) the adjoint of each body value
        that is a number and that only later values of the same pass add to: not a carry
        read by a later pass, nor a value read after the loop or by another loop
        (``external``, its slots); such an adjoint starts at zero in each pass."""
        body = self.loop.body(self.e.graph)
        carried = {ref.slot for ref in self.loop.refs.values()
                   if ref.kind == "body" and ref.lag >= 1}  # fmt: skip
        self.local = {s for s in self.slots
                      if not body[s].shape and s not in carried and s not in external}  # fmt: skip
        self.local |= set(self.seeds)  # read by nothing else (running_sums checks)
        self.aliases = self.elements.aliases(external)

    def outside(self) -> list[tuple[int, str | None]]:
        """The operations outside the loop whose adjoints it adds to: ``(index, None)`` for
        one added to in every pass, ``(index, row)`` for a carry's initial value, added
        once the loop is done from the adjoint tape's row ``row``."""
        found = []
        for (slot, i), _ in self.codes.items():
            ref = self.loop.refs[(slot, i)]
            if slot not in self.slots:
                continue
            if ref.kind == "fixed":
                found.append((ref.index, None))
            elif ref.kind == "other":
                other = self.e.loops[ref.loop]
                for k in range(self.loop.count):
                    p = ref.shift + ref.step * k
                    found.append((other.start + p * other.period + ref.slot, None))
        for (slot, m), index in sorted(self.loop.initial.items()):
            if slot in self.carries:
                found.append((index, _carry(self.loop, slot, "n")))
            elif slot in self.slots:
                found.append((index, f"{self.loop.tape(slot, True)}[{self.loop.depth + m}]"))
        return found

    def tapes(self) -> list[str]:
        """The adjoint tapes, zero, declared before any contribution to them."""
        rows = self.loop.depth + self.loop.count
        body = self.loop.body(self.e.graph)
        return [
            f"{_carry(self.loop, slot, 'n')} = 0.0" if slot in self.carries else
            f"{self.loop.tape(slot, True)} = np.zeros({_shape_code((rows, *body[slot].shape))})"
            for slot in sorted(self.slots - self.local - self.aliases)
        ]  # fmt: skip

    def target(self, ref: Ref) -> str:
        """Source of the adjoint a body operation's argument reading ``ref`` adds into, in
        the reverse loop: a number of the pass, a carry's number, or a tape's row (or the
        adjoint of a value from before the loop)."""
        if ref.kind == "body" and ref.lag == 0 and ref.slot in self.local:
            return _local(self.loop, ref.slot, True)
        if ref.kind == "body" and ref.slot in self.carries:
            return _carry(self.loop, ref.slot, "r" if ref.lag == 0 else "n")
        return _read(self.e, self.loop, ref, reverse=True, adjoint=True)

    def statements(self) -> list[str]:
        """The reverse loop."""
        loop, e = self.loop, self.e
        i = _counter(loop)
        lines = [f"for {i} in range({loop.count - 1}, -1, -1):"]
        lines += [f"    {_local(loop, slot, True)} = {self.seeds.get(slot, '0.0')}"
                  for slot in sorted(self.local)]  # fmt: skip
        for slot in sorted(self.carries):  # this pass's row is what the next one added
            r, n = _carry(loop, slot, "r"), _carry(loop, slot, "n")
            lines += [f"    {r} = {n}", f"    {n} = 0.0"]
        body = loop.body(e.graph)
        before, after, sums = [], [], {}
        for slot in sorted(self.slots, reverse=True):
            if slot in self.elements.forms:
                lines.extend(self.elements.reverse(slot, self, self.aliases))
                continue
            if slot in self.carries:
                lines.append(f"    {_local(loop, slot, True)} = {_carry(loop, slot, 'r')}")
            elif slot not in self.local:
                lines.append(f"    {_local(loop, slot, True)} = "
                             f"{loop.tape(slot, True)}[{i} + {loop.depth}]")  # fmt: skip
            for i_arg in sorted(body[slot].parents):
                code = self.codes.get((slot, i_arg))
                if code is None:
                    continue
                ref = loop.refs[(slot, i_arg)]
                target = self.target(ref)
                shape = e.graph.ops[body[slot].parents[i_arg]].shape
                added = accumulate(e, target, code, shape)
                fixed = _FIXED.match(added[0]) if len(added) == 1 else None
                if ref.kind == "fixed" and fixed and "[" in fixed[1]:
                    # Into one element of an array from before the loop (a coefficient
                    # read as phi[k]): summed in a number, added once after the loop.
                    name = sums.get(fixed[1])
                    if name is None:
                        name = sums[fixed[1]] = f"a{loop.number}_{len(sums)}"
                        before.append(f"{name} = 0.0")
                        after.append(f"{fixed[1]} += {name}")
                    added = [f"{name} = {name} + {fixed[2]}"]
                lines.extend("    " + ln for ln in added)
        return before + lines + after


def _carry(loop: Loop, slot: int, which: str) -> str:
    """The number holding a scalar carry's adjoint: ``r`` this pass's, ``n`` the previous
    pass's (``LoopAdjoint._scalar_carries``)."""
    return f"{which}_T{loop.number}_{slot}"


#: An addition into one element of an adjoint at indices known when written (no name).
_FIXED = re.compile(r"^(g_\d+\[[0-9, ]+\]) \+= (.*)$")
