"""The rule of the generated gradients (:mod:`hamiltonia.modelling.adjoint_source`) for
``np.einsum``: written as pairwise contractions, each a matrix product (BLAS's ``dot`` on
the operands transposed and reshaped, as ``opt_einsum`` and NumPy's ``tensordot`` do) or,
where an index is kept on both sides (a batch index), a broadcast product summed over the
contracted axes.

For :math:`v = \\operatorname{einsum}(s_1, \\dots, s_m \\to s_0;\\ a_1, \\dots, a_m)` the
adjoint of operand :math:`k` is itself an einsum, of the output's adjoint with the other
operands, to :math:`s_k`,

.. math::

    \\bar a_k = \\operatorname{einsum}(s_0, s_1, \\dots, \\hat s_k, \\dots, s_m \\to s_k;\\
        \\bar v, a_1, \\dots, \\hat a_k, \\dots, a_m),

spread over the indices of :math:`s_k` that appear nowhere else (summed in the forward
pass, so each element of :math:`a_k` has the same derivative along them). Subscripts with
``...`` or an index repeated within one operand (a diagonal) are refused with the reason.
"""

from __future__ import annotations

import numpy as np

from hamiltonia.modelling.adjoint_emitter import _shape_code, _shape_of
from hamiltonia.modelling.adjoint_rules import Rule
from hamiltonia.modelling.trace import TraceError

__all__ = ["Einsum", "Outer", "contraction_code"]


def _parse(subscripts: str, count: int) -> tuple[list[str], str]:
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise TraceError("np.einsum can be compiled without '...' (name every axis)")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise TraceError(f"np.einsum's subscripts {subscripts!r} name {len(terms)} operands, "
                         f"not {count}")  # fmt: skip
    for term in terms:
        if len(set(term)) != len(term):
            raise TraceError(f"np.einsum can be compiled without an index repeated within one "
                             f"operand ({term!r}: a diagonal)")  # fmt: skip
    if not arrow:  # NumPy's implicit output: the indices seen once, in order
        counts = {c: inputs.count(c) for c in set(inputs.replace(",", ""))}
        output = "".join(sorted(c for c, n in counts.items() if n == 1))
    return terms, output


def _sum_out(code: str, idx: str, drop: set) -> tuple[str, str]:
    """``code`` (indices ``idx``) summed over the indices ``drop``."""
    for axis in sorted((idx.index(c) for c in drop), reverse=True):
        code = f"np.sum({code})" if len(idx) == 1 else f"np.sum({code}, axis={axis})"
        idx = idx[:axis] + idx[axis + 1 :]
    return code, idx


def _permute(code: str, idx: str, order: str) -> str:
    if idx == order:
        return code
    axes = tuple(idx.index(c) for c in order)
    return f"np.transpose({code}, {_shape_code(axes)})"


def _as_matrix(code: str, idx: str, rows: str, cols: str, size: dict) -> str:
    """``code`` with its axes in the order ``rows + cols``, as a C-contiguous matrix."""
    r = int(np.prod([size[c] for c in rows], dtype=int))
    k = int(np.prod([size[c] for c in cols], dtype=int))
    return f"np.ascontiguousarray({_permute(code, idx, rows + cols)}).reshape(({r}, {k}))"


def _pair(a: tuple[str, str], b: tuple[str, str], keep: set, size: dict) -> tuple[str, str]:
    """The contraction of two terms ``(code, indices)``, keeping the indices ``keep``."""
    (ca, ia), (cb, ib) = a, b
    shared = set(ia) & set(ib)
    summed = shared - keep
    batch = [c for c in ia if c in shared and c in keep]
    free_a = "".join(c for c in ia if c not in shared)
    free_b = "".join(c for c in ib if c not in shared)
    contracted = "".join(c for c in ia if c in summed)
    if not batch:
        left = _as_matrix(ca, ia, free_a, contracted, size)
        right = _as_matrix(cb, ib, contracted, free_b, size)
        out = free_a + free_b
        if not out:
            return f"np.dot({left}, {right})[0, 0]", out
        shape = _shape_code(tuple(size[c] for c in out))
        return f"np.dot({left}, {right}).reshape({shape})", out
    # A batch index: broadcast both to (batch, free a, free b, contracted) and sum.
    order = "".join(batch) + free_a + free_b + contracted
    parts = []
    for code, idx in ((ca, ia), (cb, ib)):
        present = "".join(c for c in order if c in idx)
        full = tuple(size[c] if c in idx else 1 for c in order)
        parts.append(f"np.ascontiguousarray({_permute(code, idx, present)})"
                     f".reshape({_shape_code(full)})")  # fmt: skip
    code = f"({parts[0]} * {parts[1]})"
    return _sum_out(code, order, set(contracted))


def contraction_code(terms: list[tuple[str, str]], output: str, size: dict) -> str:
    """Source of the einsum of ``terms`` (``(code, indices)`` pairs) to ``output``: indices
    of one term alone summed first, then pairwise contractions from the left, then the
    output's order."""
    terms = list(terms)
    for n, (code, idx) in enumerate(terms):
        elsewhere = set(output).union(*(set(t[1]) for m, t in enumerate(terms) if m != n))
        terms[n] = _sum_out(code, idx, set(idx) - elsewhere)
    while len(terms) > 1:
        keep = set(output).union(*(set(t[1]) for t in terms[2:]))
        terms = [_pair(terms[0], terms[1], keep, size), *terms[2:]]
    code, idx = terms[0]
    code, idx = _sum_out(code, idx, set(idx) - set(output))
    if not output:
        return code if not idx else f"np.sum({code})"
    return _permute(code, idx, output)


class Outer(Rule):
    """``np.outer(a, b)`` of vectors, :math:`v = a b^\\top`: :math:`\\bar a = \\bar v b`,
    :math:`\\bar b = \\bar v^\\top a`."""

    data_arguments = True

    def forward(self, e, op, a):
        if any(len(_shape_of(e.graph, op, i)) != 1 for i in (0, 1)):
            raise TraceError("np.outer can be compiled for two vectors")
        return f"np.outer({a[0]}, {a[1]})"

    def adjoint(self, e, op, i, g, a, out):
        c = [f"np.ascontiguousarray({x})" for x in (g, a[0], a[1])]
        return f"np.dot({c[0]}, {c[2]})" if i == 0 else f"np.dot({c[1]}, {c[0]})"


class Einsum(Rule):
    """``np.einsum(subscripts, *operands)`` (module docs)."""

    data_arguments = True

    def _plan(self, e, op):
        if not isinstance(op.args[0], str):
            raise TraceError("np.einsum can be compiled with its subscripts as a string")
        if op.kwargs:
            raise TraceError(f"np.einsum with {sorted(op.kwargs)} cannot be compiled")
        terms, output = _parse(op.args[0], len(op.args) - 1)
        size: dict = {}
        for i, term in enumerate(terms, start=1):
            shape = _shape_of(e.graph, op, i)
            if len(shape) != len(term):
                raise TraceError(f"np.einsum's operand {i} has shape {shape}, not {len(term)} "
                                 f"axes ({term!r})")  # fmt: skip
            for c, n in zip(term, shape, strict=True):
                size.setdefault(c, n)
        return terms, output, size

    def forward(self, e, op, a):
        terms, output, size = self._plan(e, op)
        return contraction_code(list(zip(a[1:], terms, strict=True)), output, size)

    def adjoint(self, e, op, i, g, a, out):
        terms, output, size = self._plan(e, op)
        target = terms[i - 1]
        others = [(a[m + 1], t) for m, t in enumerate(terms) if m != i - 1]
        available = set(output).union(*(set(t) for _, t in others))
        reached = "".join(c for c in target if c in available)
        if output:
            code = contraction_code([(g, output), *others], reached, size)
        else:  # a number: it scales the contraction of the others
            code = f"{g} * {contraction_code(others, reached, size)}" if others else g
        if reached == target:
            return code
        # Spread over the target's indices summed in the forward pass.
        kept = tuple(size[c] if c in reached else 1 for c in target)
        full = _shape_code(tuple(size[c] for c in target))
        if not reached:
            return f"np.full({full}, {code})"
        return f"np.broadcast_to(np.ascontiguousarray({code}).reshape({_shape_code(kept)}), " \
               f"{full}).copy()"  # fmt: skip
