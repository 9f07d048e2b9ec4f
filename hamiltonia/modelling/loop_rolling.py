"""Finding the loops of a recorded log density again, so that they compile as loops.

A Python loop over the data (an ARMA or GARCH recursion, an HMM's forward algorithm, a
state-space filter) is recorded unrolled (:mod:`hamiltonia.modelling.trace`): one copy of
its body's operations per pass. Written out as straight-line code, its compile time grows
faster than linearly with the data (:mod:`hamiltonia.modelling.compile_budget`). This module
finds such repetition in the recording and describes it as a :class:`Loop`, which
:mod:`hamiltonia.modelling.adjoint_loops` writes as a ``for`` loop over the passes, with its
reverse-mode adjoint as a loop backwards over them: compile time then depends on the body,
not on the number of passes. It is loop *rerolling* (a compiler's inverse of unrolling):
the recording is the same, the code shorter.

A run of operations is rolled as :math:`n` passes of a body of :math:`P` operations when

* the passes have the same operations: the same functions, shapes and dtypes, the same
  arguments traced, the same structure of every other argument (:func:`signatures`);
* each traced argument of body operation :math:`j` reads, in every pass :math:`k`, one of:
  a value computed before the loop (the same one in every pass), an earlier value of the
  same pass, the value of body operation :math:`j'` :math:`d \\ge 1` passes back (a
  *carry*; the first :math:`d` passes read values computed before the loop instead, its
  initial values), or pass :math:`k + c` of an earlier rolled loop;
* each constant argument (data) is the same in every pass, or differs only in value: the
  values of the passes are then stacked into one array read at the pass's index (``y[t]``
  becomes ``y_stack[k]``); an index (``x[t]``, ``x[..., t, :]``, ``x[t - 2:t]``) likewise
  becomes an index read from an array of the passes' integers.

The search is for tandem repeats of the operations' signatures: for each period :math:`P`
up to :data:`MAX_PERIOD`, the longest runs where operation :math:`i` has the signature of
operation :math:`i + P`; runs that save the most operations are tried first and checked as
above, cut short where a pass breaks the pattern. A loop must have at least
:data:`MIN_PASSES` passes and save at least :data:`MIN_SAVED` operations: short loops stay
straight-line code, which numba compiles quickly and runs without the loop's tape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hamiltonia.modelling.adjoint_emitter import _numeric
from hamiltonia.modelling.trace import Graph, Op

__all__ = ["MAX_PERIOD", "MIN_PASSES", "MIN_SAVED", "Loop", "Ref", "RuleOf", "find_loops",
           "signatures"]  # fmt: skip

#: The longest body (operations) searched for.
MAX_PERIOD = 2048
#: The fewest passes rolled into a loop.
MIN_PASSES = 8
#: The fewest operations a loop must save (those of all its passes but one).
MIN_SAVED = 64


@dataclass(frozen=True)
class Ref:
    """Where a traced argument of a body operation reads its value, in pass :math:`k`.

    ``kind`` is ``"fixed"`` (operation ``index``, computed before the loop), ``"body"``
    (body operation ``slot`` of pass :math:`k - \\text{lag}`, this loop; ``lag`` 0 is the
    same pass) or ``"other"`` (body operation ``slot`` of pass
    :math:`\\text{shift} + \\text{step}\\,k` of the earlier loop ``loop``, ``step`` 1 or
    -1: a loop over the values of another, in its order or in reverse).
    """

    kind: str
    index: int = -1
    slot: int = -1
    lag: int = 0
    loop: int = -1
    shift: int = 0
    step: int = 1


@dataclass
class Loop:
    """A rolled run of the recording: passes ``k = 0 .. count - 1`` of the body, operations
    ``start + k * period + j`` for ``j < period``.

    Attributes
    ----------
    number : int
        The loop's number, in the order of the recording.
    start, period, count : int
        Its first operation, the body's size and the number of passes.
    refs : dict of (int, int) to Ref
        By ``(slot, argument position)``: where each traced argument reads.
    initial : dict of (int, int) to int
        By ``(slot, m)`` with ``m < 0``: the operation before the loop whose value a carry
        reads as body operation ``slot`` of pass ``m``.
    stacked : dict of (int, int) to ndarray
        By ``(slot, argument position)``: a constant that differs between passes, the
        passes' values stacked (shape ``(count, ...)``).
    indices : dict of int to list
        By slot, for an indexing operation whose index differs between passes: per part of
        the index, ``None`` when it is the same in every pass, else the passes' integers
        (an array, for an integer) or the passes' ``(start, stop)`` (two arrays, for a slice
        of fixed step and length).
    """

    number: int
    start: int
    period: int
    count: int
    refs: dict = field(default_factory=dict)
    initial: dict = field(default_factory=dict)
    stacked: dict = field(default_factory=dict)
    indices: dict = field(default_factory=dict)

    @property
    def stop(self) -> int:
        """One past its last operation."""
        return self.start + self.period * self.count

    @property
    def depth(self) -> int:
        """The longest carry (passes back): the rows of a tape before pass 0."""
        return max((-m for (_, m) in self.initial), default=0)

    def locate(self, index: int) -> tuple[int, int]:
        """``(slot, pass)`` of operation ``index`` of the loop."""
        k, j = divmod(index - self.start, self.period)
        return j, k

    def body(self, graph: Graph) -> list[Op]:
        """The body's operations as recorded in pass 0."""
        return graph.ops[self.start : self.start + self.period]

    def tape(self, slot: int, adjoint: bool = False) -> str:
        """The name, in the generated code, of the tape of body operation ``slot`` (of its
        adjoint): one row per pass, after :attr:`depth` rows of initial values."""
        return f"{'g' if adjoint else 'v'}_T{self.number}_{slot}"

    def tape_row(self, index: int, adjoint: bool = False) -> str:
        """Source of the value (adjoint) of operation ``index`` of the loop, read after it."""
        slot, k = self.locate(index)
        return f"{self.tape(slot, adjoint)}[{self.depth + k}]"


# ---------------------------------------------------------------------------- signatures
#: ``rule_of(op)``: the rule that writes ``op``
#: (:class:`~hamiltonia.modelling.adjoint_rules.Rule`), or ``None``. A rule's
#: ``data_arguments`` says that its number and array arguments are data it writes into the
#: code as values (which may then differ between passes), not numbers it reads to decide the
#: code (an exponent, an axis); its ``indexes``, that it is indexing, whose index may differ.
RuleOf = Callable[[Op], object]


def _stackable(op: Op, rule_of: RuleOf) -> bool:
    """Whether the number and array arguments of ``op`` may differ between passes."""
    return bool(getattr(rule_of(op), "data_arguments", False))


def _freeze(value):
    """A hashable stand-in for a value that must be the same in every pass."""
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.dtype.str, hash(value.tobytes()))
    if isinstance(value, tuple | list):
        return (type(value).__name__, *map(_freeze, value))
    if isinstance(value, dict):
        return ("dict", *sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, np.generic):
        return ("number", value.dtype.str, value.item())
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))
    return (type(value).__name__, value)


def _index_shape(part):
    """An index's structure: integers and a slice's bounds may differ between passes."""
    if isinstance(part, tuple):
        return ("tuple", *map(_index_shape, part))
    if isinstance(part, int | np.integer) and not isinstance(part, bool):
        return "int"
    if isinstance(part, slice):
        return ("slice", part.start is None, part.stop is None, part.step)
    return _freeze(part)


def _is_getitem(op: Op, rule_of: RuleOf) -> bool:
    return bool(getattr(rule_of(op), "indexes", False))


def _signature(op: Op, rule_of: RuleOf) -> tuple:
    value = np.asarray(op.value)
    parts: list = [op.fun, value.shape, value.dtype.kind, tuple(sorted(op.parents))]
    getitem = _is_getitem(op, rule_of)
    for i, arg in enumerate(op.args):
        if i in op.parents:
            continue
        if getitem and i == 1:
            parts.append(_index_shape(arg))
        elif _numeric(arg) and _stackable(op, rule_of):
            array = np.asarray(arg)
            parts.append(("data", array.shape, array.dtype.kind))
        else:
            parts.append(_freeze(arg))
    parts.append(_freeze(op.kwargs))
    return tuple(parts)


def signatures(graph: Graph, rule_of: RuleOf) -> np.ndarray:
    """Each operation's signature as an integer: two operations of one body in different
    passes have the same one (the input, operation 0, has its own)."""
    labels: dict = {}
    out = np.empty(len(graph.ops), dtype=np.int64)
    out[0] = -1
    for k in range(1, len(graph.ops)):
        try:
            key = _signature(graph.ops[k], rule_of)
        except TypeError:  # an unhashable argument: never part of a loop
            key = ("alone", k)
        out[k] = labels.setdefault(key, len(labels))
    return out


# ---------------------------------------------------------------------------- the search
def _runs(labels: np.ndarray, lo: int, hi: int) -> list[tuple[int, int, int, int]]:
    """Candidate loops in ``labels[lo:hi]``: ``(saved, period, start, passes)``, the most
    operations saved first."""
    found = []
    size = hi - lo
    for period in range(1, min(MAX_PERIOD, size // MIN_PASSES) + 1):
        same = labels[lo : hi - period] == labels[lo + period : hi]
        edges = np.diff(np.concatenate(([0], same.view(np.int8), [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        passes = (ends - starts + period) // period
        for s, n in zip(starts[passes >= MIN_PASSES], passes[passes >= MIN_PASSES], strict=True):
            saved = int(n - 1) * period
            if saved >= MIN_SAVED:
                found.append((saved, period, lo + int(s), int(n)))
    found.sort(key=lambda c: (-c[0], c[1]))
    return found


def _same(a, b) -> bool:
    """Whether two constants of two passes are the same (a ``nan`` equal to a ``nan``)."""
    if a is b:
        return True
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


class _Broken(Exception):
    """The pattern breaks at the passes ``bad`` (a boolean array over the passes): the
    longest run of passes between them is ``run`` (first pass, number of passes)."""

    def __init__(self, bad: np.ndarray):
        edges = np.flatnonzero(np.diff(np.concatenate(([1], bad.view(np.int8), [1]))))
        # Between a bad pass and the next: the runs of good ones, (start, stop) pairs.
        starts, stops = edges[0::2], edges[1::2]
        self.run = (0, 0)
        if len(starts):
            longest = int(np.argmax(stops - starts))
            self.run = (int(starts[longest]), int(stops[longest] - starts[longest]))


def _patterns(loop: Loop, loops: list[Loop], r: np.ndarray, k0: int):
    """The reads that pass ``k0``'s argument ``r[k0]`` suggests, each ``(ref, ok)`` with
    ``ok`` the passes that follow it."""
    s, period, n = loop.start, loop.period, loop.count
    ks, r0 = np.arange(n), int(r[k0])
    if r0 < s:
        yield Ref("fixed", index=r0), r == r0
    else:
        p0, slot = divmod(r0 - s, period)
        lag = k0 - p0
        ok = np.where(ks >= lag, r == s + (ks - lag) * period + slot, r < s)
        yield Ref("body", slot=slot, lag=lag), ok
    for other in loops:  # a stride through an earlier loop, forwards or backwards
        if other.start <= r0 < other.stop:
            slot, p0 = other.locate(r0)
            for step in (1, -1):
                p = p0 + step * (ks - k0)
                ok = (r == other.start + p * other.period + slot) & (p >= 0) & (p < other.count)
                yield Ref("other", slot=slot, loop=other.number, shift=p0 - step * k0,
                          step=step), ok  # fmt: skip


def _parent_refs(graph: Graph, loop: Loop, loops: list[Loop], j: int, i: int) -> None:
    """Classify the traced argument ``i`` of body operation ``j`` (into ``loop.refs``):
    the pattern followed by the most passes, of those that the first, middle and last
    passes suggest."""
    s, period, n = loop.start, loop.period, loop.count
    r = np.array([graph.ops[s + k * period + j].parents[i] for k in range(n)])
    best = max((c for k0 in (n - 1, 0, n // 2) for c in _patterns(loop, loops, r, k0)),
               key=lambda c: int(c[1].sum()))  # fmt: skip
    ref, ok = best
    if not ok.all():
        raise _Broken(~ok)
    if ref.kind == "body":
        for k in range(min(ref.lag, n)):
            known = loop.initial.setdefault((ref.slot, k - ref.lag), int(r[k]))
            if known != r[k]:
                raise _Broken(np.arange(n) == k)
    loop.refs[(j, i)] = ref


def _constants(graph: Graph, loop: Loop, j: int, rule_of: RuleOf) -> None:
    """The constants of body operation ``j`` that differ between passes (into
    ``loop.stacked`` and ``loop.indices``)."""
    s, period, n = loop.start, loop.period, loop.count
    ops = [graph.ops[s + k * period + j] for k in range(n)]
    first = ops[0]
    getitem = _is_getitem(first, rule_of)
    for i, arg in enumerate(first.args):
        if i in first.parents:
            continue
        values = [op.args[i] for op in ops]
        if getitem and i == 1:
            _index_constants(loop, j, values)
            continue
        if not _numeric(arg) or not _stackable(first, rule_of):
            continue  # the signature has it the same in every pass
        if all(_same(arg, v) for v in values[1:]):
            continue
        loop.stacked[(j, i)] = np.stack([np.asarray(v) for v in values])


def _index_constants(loop: Loop, j: int, values: list) -> None:
    tuples = [v if isinstance(v, tuple) else (v,) for v in values]
    plan, varies = [], False
    for p, part in enumerate(tuples[0]):
        column = [t[p] for t in tuples]
        if isinstance(part, slice):
            starts = [c.start for c in column]
            stops = [c.stop for c in column]
            if starts.count(starts[0]) == len(starts) and stops.count(stops[0]) == len(stops):
                plan.append(None)
                continue
            plan.append((np.array(starts, dtype=np.int64), np.array(stops, dtype=np.int64)))
        elif isinstance(part, int | np.integer) and not isinstance(part, bool):
            if column.count(column[0]) == len(column):
                plan.append(None)
                continue
            plan.append(np.array(column, dtype=np.int64))
        else:
            bad = np.array([not _same(part, c) for c in column])
            if bad.any():
                raise _Broken(bad)
            plan.append(None)
            continue
        varies = True
    if varies:
        loop.indices[j] = plan


def _build(graph: Graph, loops: list[Loop], rule_of: RuleOf, start: int, period: int,
           count: int, depth: int = 0) -> Loop | None:  # fmt: skip
    """The loop of ``count`` passes from ``start`` if the passes follow one pattern, else
    the loop of the longest run of passes between those that break it (at least
    :data:`MIN_PASSES` passes), else ``None``."""
    if count < MIN_PASSES or (count - 1) * period < MIN_SAVED or depth > 16:
        return None
    loop = Loop(len(loops), start, period, count)
    try:
        for j in range(period):
            for i in sorted(graph.ops[start + j].parents):
                _parent_refs(graph, loop, loops, j, i)
            _constants(graph, loop, j, rule_of)
    except _Broken as broken:
        first, passes = broken.run
        return _build(graph, loops, rule_of, start + first * period, period, passes,
                      depth + 1)  # fmt: skip
    return loop


def find_loops(graph: Graph, rule_of: RuleOf) -> list[Loop]:
    """The loops of ``graph`` (module docs), in the order of the recording, not
    overlapping; ``rule_of`` gives each operation's rule (:data:`RuleOf`;
    :func:`hamiltonia.modelling.adjoint_source.rolled_loops` passes the compiled path's)."""
    labels = signatures(graph, rule_of)
    loops: list[Loop] = []
    taken: list[tuple[int, int]] = []
    pending = _runs(labels, 1, len(labels))
    progress = True
    while pending and progress:
        progress, left = False, []
        for saved, period, start, count in pending:
            stop = start + period * count
            if any(a < stop and start < b for a, b in taken):
                continue
            loop = _build(graph, loops, rule_of, start, period, count)
            if loop is None:
                left.append((saved, period, start, count))
                continue
            loop.number = len(loops)
            loops.append(loop)
            taken.append((loop.start, loop.stop))
            progress = True
        pending = left
    # Numbered in the order of the recording (a later loop reads earlier ones by number).
    order = sorted(range(len(loops)), key=lambda i: loops[i].start)
    renumber = {old: new for new, old in enumerate(order)}
    result = []
    for old in order:
        loop = loops[old]
        loop.number = renumber[old]
        loop.refs = {
            key: Ref(r.kind, r.index, r.slot, r.lag, renumber.get(r.loop, -1), r.shift, r.step)
            for key, r in loop.refs.items()
        }
        result.append(loop)
    return result
