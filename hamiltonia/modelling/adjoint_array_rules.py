"""The rules of the generated gradients (:mod:`hamiltonia.modelling.adjoint_source`) for the
array functions autograd defines itself: its concatenation (:class:`Concatenate`), arrays
built from traced values (:class:`ArrayFromArgs`, :class:`ArrayOf`) and indexing
(:class:`GetItem`, whose adjoint scatters back, adding over repeated indices).

Rules as :class:`~hamiltonia.modelling.adjoint_rules.Rule` states them; registered in
:data:`~hamiltonia.modelling.adjoint_source.RULES` when autograd's functions are looked up.
Every rule is tested against autograd's own derivative (``tests/modelling/test_adjoint.py``).
"""

from __future__ import annotations

import numpy as np

from hamiltonia.modelling.adjoint_emitter import _shape_of, reshape_code
from hamiltonia.modelling.adjoint_rules import Rule
from hamiltonia.modelling.trace import TraceError

__all__ = ["ArrayFromArgs", "ArrayOf", "Concatenate", "GetItem"]


class Concatenate(Rule):
    """autograd's ``concatenate_args(axis, *arrays)``: each argument's adjoint is its slice
    of the result's."""

    def _axis(self, op):
        return int(op.args[0]) % len(op.shape)

    def forward(self, e, op, a):
        parts = []
        for i in range(1, len(op.args)):
            shape = _shape_of(e.graph, op, i)
            parts.append(f"np.ascontiguousarray({a[i]})" if shape else a[i])
        return f"np.concatenate(({', '.join(parts)},), axis={self._axis(op)})"

    def adjoint(self, e, op, i, g, a, out):
        axis = self._axis(op)
        start = sum(_shape_of(e.graph, op, j)[axis] for j in range(1, i))
        size = _shape_of(e.graph, op, i)[axis]
        index = ":, " * axis + f"{start}:{start + size}"
        return f"{g}[{index}]"


class ArrayFromArgs(Rule):
    """``np.array([a, b, ...])`` of traced numbers: the adjoint of each is its entry.

    Consecutive entries that are the passes of one value of a rolled loop, in order or
    reversed (``np.array(terms)`` of terms appended in the loop), are read as a slice of its
    tape (:meth:`runs`), their adjoint added back into the adjoint tape by a loop
    (:meth:`run_adjoint`): the code does not grow with the passes."""

    #: The fewest consecutive passes read as a slice.
    MIN_RUN = 3

    def forward(self, e, op, a):
        shapes = {_shape_of(e.graph, op, i) for i in range(2, len(op.args))}
        if op.args[0] or op.args[1] or len(shapes) > 1:
            raise TraceError(
                "np.array(...) of traced values can be compiled for numbers, or for arrays "
                "of one shape (rows of a matrix), without dtype= or other options"
            )
        if shapes != {()}:  # rows of one shape (np.array([[1.0, r], [r, 1.0]])): stacked
            rows = ", ".join(f"np.ascontiguousarray({code})" for code in a[2:])
            return f"np.stack(({rows},))"
        pieces, singles = [], []
        for run in self.runs(e, op):
            if run[0] == "single":
                singles.append(a[run[1]])
                continue
            if singles:
                pieces.append(f"np.array([{', '.join(singles)}])")
                singles = []
            _, _, name, first, step, count = run
            if step == 1:
                pieces.append(f"{name}[{first}:{first + count}]")
            else:
                pieces.append(f"{name}[{first - count + 1}:{first + 1}][::-1]")
        if singles:
            pieces.append(f"np.array([{', '.join(singles)}])")
        if len(pieces) == 1:
            return pieces[0] if pieces[0].startswith("np.array(") else f"{pieces[0]}.copy()"
        parts = ", ".join(f"np.ascontiguousarray({p})" for p in pieces)
        return f"np.concatenate(({parts},))"

    def runs(self, e, op) -> list[tuple]:
        """The entries in order, as ``("single", position)`` or ``("run", position, tape,
        first row, step, count)``: ``count`` consecutive entries from ``position`` that are
        the passes of one value of a rolled loop, in order (``step`` 1) or reversed (-1)."""
        out, i, size = [], 2, len(op.args)
        while i < size:
            j = op.parents.get(i)
            loop = None if j is None else e.loop_of(j)
            if loop is None:
                out.append(("single", i))
                i += 1
                continue
            step, count = 0, 1
            while i + count < size:
                nxt = op.parents.get(i + count)
                if nxt is None or e.loop_of(nxt) is not loop:
                    break
                diff = nxt - op.parents[i + count - 1]
                if step == 0 and diff in (loop.period, -loop.period):
                    step = diff // loop.period
                if diff != step * loop.period:
                    break
                count += 1
            if count < self.MIN_RUN:
                out.extend(("single", i + m) for m in range(count))
            else:
                slot, k = loop.locate(j)
                out.append(("run", i, loop.tape(slot), loop.depth + k, step, count))
            i += count
        return out

    def run_adjoint(self, e, op, g: str) -> tuple[list[str], set[int]]:
        """Statements adding the adjoint of every entry read as a slice into its adjoint
        tape, and the positions they cover (the other entries are :meth:`adjoint`'s)."""
        lines, covered = [], set()
        for run in self.runs(e, op):
            if run[0] == "single":
                continue
            _, position, name, first, step, count = run
            m = e.temp("m")
            row = f"{first} + {m}" if step == 1 else f"{first} - {m}"
            lines += [f"for {m} in range({count}):",
                      f"    g{name[1:]}[{row}] += {g}[{position - 2} + {m}]"]  # fmt: skip
            covered.update(range(position, position + count))
        return lines, covered

    def adjoint(self, e, op, i, g, a, out):
        return f"{g}[{i - 2}]"


class ArrayOf(Rule):
    """autograd's ``np.array(x)`` of one traced value: the value itself."""

    def forward(self, e, op, a):
        return reshape_code(a[2], _shape_of(e.graph, op, 2), op.shape)

    def adjoint(self, e, op, i, g, a, out):
        return reshape_code(g, op.shape, _shape_of(e.graph, op, 2))


class GetItem(Rule):
    """Indexing ``a[idx]`` with integers, slices, ``None``, ``...`` and one integer (or
    boolean) array: the adjoint is scattered back, adding over repeated indices."""

    indexes = True

    def _index(self, e, op):
        memo = e.memo.setdefault(id(op), None)
        if memo is None:
            memo = e.memo[id(op)] = self._parse(op)
        return memo

    def _parse(self, op):
        idx = op.args[1]
        parts = idx if isinstance(idx, tuple) else (idx,)
        codes, array_at, index_array = [], None, None
        for j, part in enumerate(parts):
            if part is None:
                codes.append("None")
            elif part is Ellipsis:
                codes.append("...")
            elif isinstance(part, slice):
                codes.append(":".join("" if v is None else str(int(v))
                                      for v in (part.start, part.stop, part.step)))  # fmt: skip
            elif isinstance(part, int | np.integer):
                codes.append(str(int(part)))
            else:
                array = np.asarray(part)
                if array.dtype.kind == "b":
                    if array.ndim != 1:
                        raise TraceError("only a 1-d boolean mask can be compiled as an index")
                    array = np.flatnonzero(array)
                if array.dtype.kind not in "iu" or array.ndim != 1 or index_array is not None:
                    raise TraceError(
                        "indexing can be compiled with at most one 1-d integer or boolean "
                        "array among integers, slices, None and ..."
                    )
                index_array, array_at = array.astype(np.int64), j
                codes.append(None)
        return parts, codes, array_at, index_array

    def _of_number(self, e, op) -> bool:
        """Whether the indexed value is a number (only new axes and ``...`` apply)."""
        if _shape_of(e.graph, op, 0):
            return False
        if any(p is not None and p is not Ellipsis for p in self._index(e, op)[0]):
            raise TraceError("a number can be indexed only by None and ...")
        return True

    def forward(self, e, op, a):
        if self._of_number(e, op):
            return reshape_code(a[0], (), op.shape)
        _, codes, array_at, index_array = self._index(e, op)
        codes = list(codes)
        if array_at is not None:
            codes[array_at] = e.constant(index_array)
        return f"{a[0]}[{', '.join(codes)}]"

    @staticmethod
    def _scatter(e, codes, array_at, index_array, source, g) -> list[str]:
        """The adjoint of ``a[..., idx, ...]``: an integer array ``idx`` on one axis and
        whole axes (``:`` or ``...``) on the others, added back element by element (a
        repeated index adds)."""
        # "..." as the whole axes it stands for, so that the array's axis is known.
        explicit = sum(c != "..." for c in codes)
        axes = []
        for c in codes:
            axes.extend(["::"] * (len(source) - explicit) if c == "..." else [c])
        axes += ["::"] * (len(source) - len(axes))  # the axes left out are taken whole
        at = [j for j, c in enumerate(axes) if c is None]
        if len(axes) != len(source) or any(c not in ("::", None) for c in axes) or len(at) != 1:
            raise TraceError(
                "the gradient of indexing by an array is compiled when the other axes are "
                "taken whole (a[idx], a[..., idx], a[:, idx])"
            )
        name, k = e.constant(index_array), e.temp("k")
        lines = [f"for {k} in range({len(index_array)}):"]
        into, outof = [], []
        for axis, n in enumerate(source):
            if axis == at[0]:
                into.append(f"{name}[{k}]")
                outof.append(k)
                continue
            j = e.temp("k")
            lines.append("    " * len(lines) + f"for {j} in range({n}):")
            into.append(j)
            outof.append(j)
        lines.append(
            "    " * len(lines) + f"{{target}}[{', '.join(into)}] += {g}[{', '.join(outof)}]"
        )
        return lines

    def adjoint(self, e, op, i, g, a, out):
        if self._of_number(e, op):
            return reshape_code(g, op.shape, ())
        parts, codes, array_at, index_array = self._index(e, op)
        source = _shape_of(e.graph, op, 0)
        if array_at is not None:
            return self._scatter(e, codes, array_at, index_array, source, g)
        if all(c in ("None", "...") for c in codes):
            # Only new axes: the whole operand, whose adjoint is this one reshaped (an
            # expression, as numba cannot write through an index of ``...`` alone).
            return reshape_code(g, op.shape, source)
        # Drop the new axes (None) for the write, reshaping the adjoint to match.
        basic = tuple(p for p in parts if p is not None)
        kept = tuple(np.empty(source)[basic].shape)
        index = ", ".join(c for c in codes if c != "None")
        value = reshape_code(g, op.shape, kept)
        if not kept:
            return [f"{{target}}[{index}] += {value}"]
        # Element by element into the view: numba compiles an array assigned to a slice
        # with the error message it formats for a mismatch of shapes, about 1.7 s once
        # per process on a model's first compilation; the shapes here are known to agree.
        view, src = e.temp("view"), e.temp("src")
        ks = [e.temp("k") for _ in kept]
        lines = [f"{view} = {{target}}[{index}]", f"{src} = {value}"]
        for depth, (k, n) in enumerate(zip(ks, kept, strict=True)):
            lines.append("    " * depth + f"for {k} in range({n}):")
        at = ", ".join(ks)
        lines.append("    " * len(kept) + f"{view}[{at}] += {src}[{at}]")
        return lines
