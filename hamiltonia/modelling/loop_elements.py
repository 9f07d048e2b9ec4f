"""A rolled loop's body values written element by element into their tapes, forward and
back, for :mod:`hamiltonia.modelling.adjoint_loops`.

Written one NumPy operation at a time, a body of small arrays (an HMM's forward algorithm
over two states: ``gamma[:, None] + log_theta``, a log-sum-exp over an axis, ``+
emission[t]``) allocates an array for every value of every pass, and again for every
adjoint in the reverse loop; at 2 to 4 numbers an array, the allocations (20 to 35 ns each)
cost more than the arithmetic. The body's values are stored per pass in tapes anyway
(``v_T{loop}_{slot}``, one row per pass), so the operations below are written as loops
over their elements straight into the tape's row, the way
:mod:`hamiltonia.modelling.adjoint_fusion` writes a chain outside the loops (with the
rules' :meth:`~hamiltonia.modelling.adjoint_rules.Rule.scalar_forward` and
:meth:`~hamiltonia.modelling.adjoint_rules.Rule.scalar_adjoint`):

* an elementwise operation (a rule with ``elementwise``, and ``logaddexp``), its operands
  broadcast by their index (a length-1 axis read at 0, a missing leading one left out);
* a *view*: indexing by integers (the same in every pass, or the pass's), whole or fixed
  slices, ``None`` and ``...``; a reshape that only adds or drops length-1 axes; a
  transpose. Its element is its operand's element at the mapped index, read through
  rather than copied, and its adjoint is added straight into the operand's when nothing
  else adds to its own (:meth:`BodyElements.aliases`);
* a log-sum-exp, a sum or a mean over some axes (the others kept) or over all of them (a
  number): a loop over the kept elements, with one over the summed ones inside (shifted
  by the maximum, as :func:`~hamiltonia.modelling.special.logsumexp_rows`); a
  log-sum-exp's weights :math:`e^{a - v}` are written into a tape of their own
  (``p_T{loop}_{slot}``) for the reverse loop, which would otherwise compute every
  exponential again.

The reverse loop writes each adjoint the same way: for each element of the value, its
adjoint (a number read from the adjoint tape's row, or the pass's number) times the
derivative, added into the operand's element (into a number, summed over the elements,
for a number broadcast). Any other body operation (a product of matrices, a
concatenation, an array indexed by an array; the numbers of the pass, which allocate
nothing) keeps the code of :mod:`hamiltonia.modelling.adjoint_loops`, reading the values
written here from their tapes. ``ENABLED = False`` writes every body value as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from hamiltonia.modelling.adjoint_emitter import _Emitter, _numeric, _shape_code, _shape_of
from hamiltonia.modelling.loop_rolling import Loop, Ref
from hamiltonia.modelling.trace import TraceError

__all__ = ["ENABLED", "BodyElements"]

#: Whether body values are written element by element (off: every body value is computed
#: as an array, as before; for comparisons).
ENABLED = True

#: A row of a tape or an element of a plain array: ``name[index]``.
_ROW = re.compile(r"^(\w+)\[([^\[\]]*)\]$")


def _at(code: str, index: list[str]) -> str:
    """Source of the element ``index`` of the array ``code`` (a name, or a row of a tape,
    whose index the element's extends: ``v_T1_3[i_1 + 0, k_4]`` rather than a view of the
    row indexed again)."""
    if not index:
        return code
    at = ", ".join(index)
    match = _ROW.match(code)
    if match:
        return f"{match[1]}[{match[2]}, {at}]"
    if re.fullmatch(r"\w+", code):
        return f"{code}[{at}]"
    return f"({code})[{at}]"


def _broadcast(names: list[str], shape: tuple) -> list[str]:
    """The index of an operand of ``shape`` broadcast against the element ``names``: a
    length-1 axis read at 0, a missing leading one left out."""
    if not shape:
        return []
    tail = names[len(names) - len(shape) :]
    return ["0" if n == 1 else v for n, v in zip(shape, tail, strict=True)]


@dataclass
class _Form:
    """How one body value is written element by element.

    ``kind`` is ``"map"`` (an elementwise rule), ``"view"`` (``source`` maps the value's
    index to its operand's) or ``"reduce"`` (``axes`` of the operand summed, by
    ``how``: ``"logsumexp"``, ``"sum"`` or ``"mean"``; ``source`` maps the value's index
    and the summed axes' names to the operand's index; ``arg``: the operand's position)."""

    kind: str
    rule: object
    source: object = None
    #: The position of the traced argument of a view or a reduction.
    arg: int = 0
    axes: tuple = ()
    how: str = ""
    count: int = 1


class BodyElements:
    """Which body values of ``loop`` are written element by element, and their code.

    Attributes
    ----------
    forms : dict of int to _Form
        By slot, the body values written element by element.
    views : set of int
        Those of ``forms`` that are views: their elements are read through.
    """

    def __init__(self, e: _Emitter, loop: Loop, rule_of, read):
        self.e, self.loop = e, loop
        #: ``read(e, loop, ref, reverse, adjoint=False, stored=...)``: the source of what a
        #: reference reads in the current pass (``adjoint_loops._read``, passed in so that
        #: this module does not import the one that uses it).
        self.read = read
        self.counter = f"i_{loop.number}"
        self.body = loop.body(e.graph)
        self.forms: dict[int, _Form] = {}
        if ENABLED:
            for slot, op in enumerate(self.body):
                form = self._form(slot, op, rule_of(op))
                if form is not None:
                    self.forms[slot] = form
        self.views = {s for s, f in self.forms.items() if f.kind == "view"}

    @classmethod
    def of(cls, e: _Emitter, loop: Loop, rule_of, read) -> BodyElements:
        """The plan of ``loop``, made once per emitter (the forward and reverse loops share
        it)."""
        key = ("loop_elements", loop.number)
        if key not in e.memo:
            e.memo[key] = cls(e, loop, rule_of, read)
        return e.memo[key]

    # ------------------------------------------------------------------ the plan
    def _form(self, slot: int, op, rule) -> _Form | None:
        if isinstance(op.value, tuple) or rule is None:
            return None
        if np.asarray(op.value).dtype.kind != "f":
            return None
        from hamiltonia.modelling.adjoint_array_rules import ArrayOf, GetItem
        from hamiltonia.modelling.adjoint_rules import LogAddExp, LogSumExp, Reshape, Sum, Transpose

        if not op.shape:
            # A number: written as it is (no array), but for a sum or a log-sum-exp of an
            # array, whose adjoint is spread back over the elements (an array, else).
            if not isinstance(rule, LogSumExp | Sum) or set(op.parents) != {0}:
                return None
            try:
                return _reduction(self.e, op, rule, _shape_of(self.e.graph, op, 0))
            except (TraceError, TypeError, ValueError):
                return None
        # logaddexp too, which is left out of adjoint_fusion's loops for its vectorised
        # softplus: a body's arrays are small, and its element form a library call.
        if getattr(rule, "elementwise", False) or isinstance(rule, LogAddExp):
            return _Form("map", rule)
        if isinstance(rule, ArrayOf) and set(op.parents) == {2}:
            if _shape_of(self.e.graph, op, 2) != op.shape:
                return None
            return _Form("view", rule, source=lambda names: list(names), arg=2)
        if set(op.parents) != {0}:
            return None
        source = _shape_of(self.e.graph, op, 0)
        try:
            if isinstance(rule, GetItem):
                mapping = self._getitem(slot, op, rule, source)
            elif isinstance(rule, Reshape):
                mapping = _unit_axes(source, op.shape)
            elif isinstance(rule, Transpose):
                axes = rule._axes(self.e, op)
                mapping = _transposed(axes, source, op.shape)
            elif isinstance(rule, LogSumExp | Sum):
                return _reduction(self.e, op, rule, source)
            else:
                return None
        except (TraceError, TypeError, ValueError, IndexError):
            return None  # an index or shape this path does not write: the array code
        return None if mapping is None else _Form("view", rule, source=mapping)

    def _getitem(self, slot: int, op, rule, source: tuple):
        """The index map of ``a[idx]`` with integers, slices, ``None`` and ``...`` (an
        integer may be the pass's), else ``None``."""
        parts, _, array_at, _ = rule._parse(op)
        if array_at is not None:
            return None
        plan = self.loop.indices.get(slot) or [None] * len(parts)
        counter = self.counter
        taken = [p for p in parts if p is not None and p is not Ellipsis]
        if len(taken) > len(source) or sum(p is Ellipsis for p in parts) > 1:
            return None
        steps = []  # per part: ("new",) | ("whole",) | ("at", code) | ("slice", start, step)
        for p, part in enumerate(parts):
            axis = sum(1 for s in steps if s[0] != "new")
            if part is None:
                steps.append(("new",))
            elif part is Ellipsis:
                steps.extend([("whole",)] * (len(source) - len(taken)))
            elif isinstance(part, slice):
                if plan[p] is not None:
                    return None  # a slice that moves with the pass
                start, _, step = part.indices(source[axis])
                steps.append(("slice", start, step))
            elif isinstance(part, int | np.integer) and not isinstance(part, bool):
                if plan[p] is not None:
                    values = np.asarray(plan[p])
                    if values.min() < 0:
                        return None
                    steps.append(("at", f"{self.e.constant(plan[p])}[{counter}]"))
                else:
                    steps.append(("at", str(int(part) % source[axis])))
            else:
                return None
        while sum(1 for s in steps if s[0] != "new") < len(source):
            steps.append(("whole",))
        if sum(1 for s in steps if s[0] not in ("at",)) != len(op.shape):
            return None

        def mapping(names: list[str]) -> list[str]:
            out, at = [], 0
            for s in steps:
                if s[0] == "new":
                    at += 1
                elif s[0] == "whole":
                    out.append(names[at])
                    at += 1
                elif s[0] == "slice":
                    start, step = s[1], s[2]
                    k = names[at]
                    at += 1
                    if step < 0:
                        scaled = k if step == -1 else f"{-step} * {k}"
                        out.append(f"{start} - {scaled}")
                    else:
                        scaled = k if step == 1 else f"{step} * {k}"
                        out.append(scaled if start == 0 else f"{start} + {scaled}")
                else:
                    out.append(s[1])
            return out

        return mapping

    def aliases(self, external: set[int]) -> set[int]:
        """The views whose adjoints are added straight into their operands' (no adjoint
        tape): read only by values of the same pass written here, and not by later passes
        or code outside the loop (``external``, slots other code adds adjoints to)."""
        readers: dict[int, list] = {}
        for (slot, _), ref in self.loop.refs.items():
            if ref.kind == "body":
                readers.setdefault(ref.slot, []).append((slot, ref.lag))
        carried = {slot for slot, _ in self.loop.initial}
        found = set()
        for slot in self.views:
            if slot in external or slot in carried:
                continue
            if all(lag == 0 and reader in self.forms for reader, lag in readers.get(slot, [])):
                found.add(slot)
        return found

    # ------------------------------------------------------------------ elements
    def _names(self, shape: tuple) -> list[str]:
        return [self.e.temp("k") for _ in shape]

    @staticmethod
    def _head(names: list[str], shape: tuple, pad: str) -> list[str]:
        return [pad + "    " * d + f"for {v} in range({n}):"
                for d, (v, n) in enumerate(zip(names, shape, strict=True))]  # fmt: skip

    def operand(self, slot: int, i: int, index: list[str], reverse: bool, stored) -> str:
        """Source of the element ``index`` (for argument ``i``'s shape) of argument ``i`` of
        body operation ``slot``; through a view of the same pass to its operand."""
        op = self.body[slot]
        loop = self.loop
        if i in op.parents:
            ref = loop.refs[(slot, i)]
            if ref.kind == "body" and ref.lag == 0 and ref.slot in self.views:
                form = self.forms[ref.slot]
                return self.operand(ref.slot, form.arg, form.source(index), reverse, stored)
            return _at(self.read(self.e, loop, ref, reverse, stored=stored), index)
        arg = op.args[i]
        if (slot, i) in loop.stacked:
            return _at(f"{self.e.constant(loop.stacked[(slot, i)])}[{self.counter}]", index)
        code = self.e.operands_of_constant(arg)
        if code is None or not np.ndim(arg):
            return code
        return _at(code, index)

    def _operands(self, slot: int, names: list[str], reverse: bool, stored) -> list:
        op = self.body[slot]
        codes = []
        for i, arg in enumerate(op.args):
            if i in op.parents:
                shape = self.e.graph.ops[op.parents[i]].shape
            elif (slot, i) in self.loop.stacked or _numeric(arg):
                shape = np.shape(arg)
            else:
                codes.append(self.e.operands_of_constant(arg))
                continue
            codes.append(self.operand(slot, i, _broadcast(names, shape), reverse, stored))
        return codes

    def _row(self, slot: int, names: list[str], adjoint: bool = False) -> str:
        loop = self.loop
        return _at(f"{loop.tape(slot, adjoint)}[{self.counter} + {loop.depth}]", names)

    def forward(self, slot: int, stored) -> list:
        """Statements (inside the pass's loop) writing body value ``slot`` into its tape's
        row, reading the values ``stored`` from their tapes; ``(tape, statements)`` for
        those that write another tape (a log-sum-exp's weights), left out if nothing reads
        it."""
        op, form = self.body[slot], self.forms[slot]
        names = self._names(op.shape)
        lines = self._head(names, op.shape, "    ")
        pad = "    " * (len(names) + 1)
        target = self._row(slot, names)
        if form.kind == "map":
            code = form.rule.scalar_forward(self.e, op, self._operands(slot, names, False, stored))
            lines.append(f"{pad}{target} = {code}")
        elif form.kind == "view":
            code = self.operand(slot, form.arg, form.source(names), False, stored)
            lines.append(f"{pad}{target} = {code}")
        else:
            lines += self._reduce_forward(slot, form, names, pad, target, stored)
        return lines

    def _reduce_forward(self, slot, form, names, pad, target, stored) -> list[str]:
        source = _shape_of(self.e.graph, self.body[slot], 0)
        inner = self._names(form.axes)
        shape = tuple(source[x] for x in form.axes)
        element = self.operand(slot, 0, form.source(names, inner), False, stored)
        head = self._head(inner, shape, pad)
        deep = pad + "    " * len(inner)
        total = self.e.temp("s")
        if form.how != "logsumexp":
            divide = f" / {form.count}.0" if form.how == "mean" else ""
            return [f"{pad}{total} = 0.0", *head, f"{deep}{total} += {element}",
                    f"{pad}{target} = {total}{divide}"]  # fmt: skip
        top, term = self.e.temp("m"), self.e.temp("x")
        weights = self.weights(slot)
        row = f"{weights}[{self.counter} + {self.loop.depth}]"
        at = _at(row, form.source(names, inner))
        inverse = self.e.temp("r")
        if shape == (2,):
            pair = [self.operand(slot, 0, form.source(names, [k]), False, stored)
                    for k in ("0", "1")]  # fmt: skip
            places = [_at(row, form.source(names, [k])) for k in ("0", "1")]
            return self._pair_forward(pair, places, weights, pad, target, top, term, inverse)
        # Shifted by the largest term; a value that is not finite (all terms -inf, an inf,
        # a nan) is the result itself, as logsumexp_rows. The terms' weights
        # exp(a - value), which the adjoint multiplies by, are written into a tape of
        # their own as they are found (the array code computes them again).
        return [f"{pad}{top} = -np.inf", *head, f"{deep}{top} = np.maximum({top}, {element})",
                f"{pad}if np.isfinite({top}):", f"{pad}    {total} = 0.0",
                *self._head(inner, shape, pad + "    "),
                f"{deep}    {term} = {element} - {top}",
                # The largest term's weight is exp(0) = 1 exactly: one exp saved an
                # output (of two, for two states), the same numbers.
                f"{deep}    {term} = 1.0 if {term} == 0.0 else np.exp({term})",
                f"{deep}    {total} += {term}",
                (weights, [f"{deep}    {at} = {term}"]),
                (weights, [f"{pad}    {inverse} = 1.0 / {total}",
                           *self._head(inner, shape, pad + "    "),
                           f"{deep}    {at} *= {inverse}"]),
                f"{pad}    {top} = {top} + np.log({total})",
                (weights, [f"{pad}else:", *self._head(inner, shape, pad + "    "),
                           f"{deep}    {at} = np.exp({element} - {top})"]),
                f"{pad}{target} = {top}"]  # fmt: skip

    @staticmethod
    def _pair_forward(pair, places, weights, pad, target, top, term, inverse) -> list:
        """A log-sum-exp of two terms :math:`a, b` (a two-state HMM's step, a two-component
        mixture), with no branch on which is larger:

        .. math::

            \\log(e^a + e^b) = \\max(a, b) + \\operatorname{log1p}(e^{-|a - b|}),
            \\qquad w_{\\max} = \\frac{1}{1 + e^{-|a-b|}}, \\quad
            w_{\\min} = \\frac{e^{-|a-b|}}{1 + e^{-|a-b|}},

        one ``exp`` and one ``log1p`` on the pass's chain of dependent values, where the
        general form's branch on the largest term mispredicts as the larger state changes
        (bball_drive's HMM gradient, 415 passes, one core, medians of 10 alternating rounds
        in one process: 21.95 to 20.25 µs). A term
        that is not finite takes the general form's path (the value itself; the weights
        :math:`e^{a - v}`)."""
        a, b = pair
        first, second = places
        left, right = f"{term}_a", f"{term}_b"
        return [f"{pad}{left} = {a}", f"{pad}{right} = {b}",
                f"{pad}{top} = np.maximum({left}, {right})",
                f"{pad}if np.isfinite({top}):",
                f"{pad}    {term} = np.exp(-abs({left} - {right}))",
                (weights, [
                    f"{pad}    {inverse} = 1.0 / (1.0 + {term})",
                    f"{pad}    {first} = {inverse} if {left} >= {right} else {term} * {inverse}",
                    f"{pad}    {second} = {term} * {inverse} if {left} >= {right} else {inverse}",
                ]),
                f"{pad}    {top} = {top} + np.log1p({term})",
                (weights, [f"{pad}else:", f"{pad}    {first} = np.exp({left} - {top})",
                           f"{pad}    {second} = np.exp({right} - {top})"]),
                f"{pad}{target} = {top}"]  # fmt: skip

    def weights(self, slot: int) -> str:
        """The name of the tape of a log-sum-exp's weights :math:`e^{a - v}` (the operand's
        shape, a row per pass)."""
        return f"p_T{self.loop.number}_{slot}"

    def tapes(self) -> list[tuple[str, str]]:
        """``(name, statement)``: the allocation of each tape of weights."""
        rows = self.loop.depth + self.loop.count
        return [
            (self.weights(slot), f"{self.weights(slot)} = np.empty("
             f"{_shape_code((rows, *_shape_of(self.e.graph, self.body[slot], 0)))})")
            for slot, form in sorted(self.forms.items()) if form.how == "logsumexp"
        ]  # fmt: skip

    # ------------------------------------------------------------------ adjoints
    def target(self, slot: int, i: int, index: list[str], plan, aliases: set[int]) -> str:
        """Source of the element ``index`` of the adjoint argument ``i`` of body operation
        ``slot`` adds into: through a view whose adjoint is its operand's (``aliases``)."""
        ref = self.loop.refs[(slot, i)]
        if ref.kind == "body" and ref.lag == 0 and ref.slot in aliases:
            form = self.forms[ref.slot]
            return self.target(ref.slot, form.arg, form.source(index), plan, aliases)
        return _at(plan.target(ref), index)

    def reverse(self, slot: int, plan, aliases: set[int]) -> list[str]:
        """Statements (inside the reverse loop) adding body value ``slot``'s adjoint, read
        from its adjoint tape's row element by element, into its operands' adjoints
        (``plan``: the :class:`~hamiltonia.modelling.adjoint_loops.LoopAdjoint`)."""
        op, form = self.body[slot], self.forms[slot]
        if slot in aliases:
            return []  # its readers added into its operand's adjoint already
        graph = self.e.graph
        names = self._names(op.shape)
        lines = self._head(names, op.shape, "    ")
        pad = "    " * (len(names) + 1)
        g = self.e.temp("h")
        # The adjoint of a number may be a number of the pass or a carry's (no tape).
        mine = _at(plan.target(Ref("body", slot=slot)), names)
        lines.append(f"{pad}{g} = {mine}")
        if form.kind == "map":
            a = self._operands(slot, names, True, frozenset())
            out = self._row(slot, names)
            for i in sorted(op.parents):
                if (slot, i) not in plan.codes:
                    continue
                code = form.rule.scalar_adjoint(self.e, op, i, g, a, out)
                if code is None:
                    continue
                index = _broadcast(names, graph.ops[op.parents[i]].shape)
                lines.append(f"{pad}{self.target(slot, i, index, plan, aliases)} += {code}")
        elif form.kind == "view":
            if (slot, form.arg) in plan.codes:
                into = self.target(slot, form.arg, form.source(names), plan, aliases)
                lines.append(f"{pad}{into} += {g}")
        elif (slot, 0) in plan.codes:
            source = _shape_of(graph, op, 0)
            inner = self._names(form.axes)
            index = form.source(names, inner)
            lines += self._head(inner, tuple(source[x] for x in form.axes), pad)
            deep = pad + "    " * len(inner)
            into = self.target(slot, 0, index, plan, aliases)
            if form.how == "logsumexp":
                weights = f"{self.weights(slot)}[{self.counter} + {self.loop.depth}]"
                code = f"{g} * {_at(weights, index)}"
            else:
                code = f"{g} / {form.count}.0" if form.how == "mean" else g
            lines.append(f"{deep}{into} += {code}")
        return lines if len(lines) > len(names) + 1 else []


# ---------------------------------------------------------------------------- index maps
def _unit_axes(source: tuple, shape: tuple):
    """The index map of a reshape that only adds or drops length-1 axes, else ``None``."""
    kept_source = [x for x, n in enumerate(source) if n != 1]
    kept_out = [x for x, n in enumerate(shape) if n != 1]
    if [source[x] for x in kept_source] != [shape[x] for x in kept_out]:
        return None

    def mapping(names: list[str]) -> list[str]:
        out = ["0"] * len(source)
        for s, o in zip(kept_source, kept_out, strict=True):
            out[s] = names[o]
        return out

    return mapping


def _transposed(axes: tuple, source: tuple, shape: tuple):
    """The index map of a permutation of axes: the value's axis ``j`` is the operand's
    ``axes[j]``."""
    if len(axes) != len(source) or tuple(source[a] for a in axes) != tuple(shape):
        return None

    def mapping(names: list[str]) -> list[str]:
        out = [""] * len(source)
        for j, a in enumerate(axes):
            out[a] = names[j]
        return out

    return mapping


def _reduction(e: _Emitter, op, rule, source: tuple) -> _Form | None:
    """The form of a log-sum-exp or a sum over some axes of an array (the others kept,
    with ``keepdims`` or not)."""
    from hamiltonia.modelling.adjoint_rules import LogSumExp

    if isinstance(rule, LogSumExp):
        _, axes, _ = rule._plan(e, op)
        how, count = "logsumexp", 1
    else:
        _, axes, count = rule._plan(e, op)
        how = "mean" if rule.mean else "sum"
    if not source or not axes:
        return None
    kept = [x for x in range(len(source)) if x not in axes]
    keepdims = len(op.shape) == len(source)
    if not keepdims and tuple(source[x] for x in kept) != tuple(op.shape):
        return None
    if keepdims and tuple(1 if x in axes else source[x] for x in range(len(source))) != op.shape:
        return None

    def mapping(names: list[str], inner: list[str]) -> list[str]:
        out = []
        for x in range(len(source)):
            if x in axes:
                out.append(inner[axes.index(x)])
            else:
                out.append(names[x] if keepdims else names[kept.index(x)])
        return out

    return _Form("reduce", rule, source=mapping, axes=tuple(axes), how=how, count=count)
