"""The Gaussian log density's closed-form gradient in the covariance, for the generated
gradients (:mod:`hamiltonia.modelling.adjoint_source`).

A multivariate normal or Gaussian-process log density written through the Cholesky factor
:math:`L = \\operatorname{chol}(A)`,

.. math::

    \\log p = -\\tfrac12\\, \\alpha^\\top\\alpha - \\sum_i \\log L_{ii} + \\text{const}, \\qquad
    \\alpha = L^{-1} r,

reads :math:`L` in two ways only: through :math:`q = \\alpha^\\top\\alpha` (a triangular
solve whose result is read only by its sum of squares) and through
:math:`h = \\sum_i \\log L_{ii}` (the diagonal, read only by its logarithms' sum). Both are
functions of :math:`A` alone, :math:`q = r^\\top A^{-1} r` and
:math:`h = \\tfrac12 \\log\\det A`, with the adjoints (Rasmussen and Williams 2006, "Gaussian
Processes for Machine Learning", eq. 5.9; Giles 2008, "An extended collection of matrix
derivative results for forward and reverse mode algorithmic differentiation")

.. math::

    \\bar A = -\\bar q\\, \\beta\\beta^\\top + \\tfrac12 \\bar h\\, A^{-1}, \\qquad
    \\bar r = 2 \\bar q\\, \\beta, \\qquad
    \\beta = L^{-\\top}\\alpha = A^{-1} r, \\quad A^{-1} = L^{-\\top} L^{-1},

:math:`\\bar q` and :math:`\\bar h` being whatever the rest of the density gives them (so the
scale factors and signs, :math:`-\\tfrac12` and :math:`-1` above, are the reverse pass's, not
assumed). They are the symmetric gradient that the adjoint of the Cholesky factor (Murray
2016, "Differentiation of the Cholesky decomposition", arXiv:1602.07527:
:func:`~hamiltonia.modelling.linalg_special.cholesky_adjoint`) reaches from :math:`\\bar L`,
without its three matrix products: one triangular inverse and one product for
:math:`A^{-1}`, an outer product for :math:`q`.

:func:`closed_forms` finds the factors of a recorded graph read only so, and rewrites each
sum (:math:`q` or :math:`h`) as one operation of :math:`A` (and :math:`r`) with these
adjoints: nothing flows back to :math:`L`, so Murray's adjoint is not written. A factor read
any other way (in a product, transposed, solved with ``trans`` or as the upper triangle, its
solve's result read by anything but its sum of squares) keeps the general rules, which are
correct for any use: the closed form is only ever a faster way to the same numbers. Where
:math:`A` is not positive definite the factor is ``nan``
(:func:`~hamiltonia.modelling.linalg_special.cholesky_or_nan`), and so are :math:`q`,
:math:`h` and their adjoints: the proposal is rejected, as on the general path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hamiltonia.modelling.adjoint_rules import Rule, _bound
from hamiltonia.modelling.trace import Graph, Op

__all__ = ["HELPERS", "ClosedFormOp", "LogDiagonalSum", "SumOfSquares", "closed_forms"]

#: The compiled functions these rules' code calls
#: (:mod:`~hamiltonia.modelling.linalg_special`), which the generated module imports
#: (:mod:`hamiltonia.modelling.user_target` adds them to its helpers).
HELPERS = ("log_determinant_adjoint", "log_diagonal_sum", "quadratic_form_adjoint",
           "quadratic_form_adjoint_matrix", "sum_of_squares")  # fmt: skip


@dataclass
class ClosedFormOp(Op):
    """An operation :func:`closed_forms` wrote, with its own :attr:`rule` (not one of
    :data:`~hamiltonia.modelling.adjoint_source.RULES`, by function)."""

    rule: Rule | None = None


def cholesky_sum_of_squares(alpha, factor, matrix, rhs=None):
    """:math:`q = \\sum \\alpha^2`, :math:`\\alpha = L^{-1} r`, :math:`L = \\operatorname{chol}(A)`
    (the recorded function of a rewritten sum of squares: :class:`SumOfSquares`)."""
    return np.sum(np.square(alpha))


def cholesky_log_diagonal_sum(factor, matrix):
    """:math:`h = \\sum_i \\log L_{ii}`, :math:`L = \\operatorname{chol}(A)` (the recorded function
    of a rewritten sum of logarithms: :class:`LogDiagonalSum`)."""
    return np.sum(np.log(np.diag(factor)))


class SumOfSquares(Rule):
    """:math:`q = \\sum \\alpha^2` of :math:`\\alpha = L^{-1} r` (operands: :math:`\\alpha`,
    :math:`L`, :math:`A`, and :math:`r` when it is traced):
    :math:`\\bar A = -\\bar q\\, \\beta\\beta^\\top`, :math:`\\bar r = 2\\bar q\\, \\beta`."""

    def forward(self, e, op, a):
        return f"sum_of_squares({a[0]})"

    def adjoint(self, e, op, i, g, a, out):
        vector = np.ndim(op.args[0]) == 1
        if i == 2:
            name = "quadratic_form_adjoint" + ("" if vector else "_matrix")
            return f"{name}(np.ascontiguousarray({a[1]}), {a[0]}, {g})"
        if i == 3:
            solve = "solve_triangular_" + ("vector" if vector else "matrix")
            return f"(2.0 * {g}) * {solve}(np.ascontiguousarray({a[1]}), {a[0]}, True, True)"
        return None  # alpha and L: the closed form replaces their adjoints


class LogDiagonalSum(Rule):
    """:math:`h = \\sum_i \\log L_{ii}` (operands: :math:`L`, :math:`A`):
    :math:`\\bar A = \\tfrac12 \\bar h\\, A^{-1}`."""

    def forward(self, e, op, a):
        return f"log_diagonal_sum({a[0]})"

    def adjoint(self, e, op, i, g, a, out):
        return f"log_determinant_adjoint(np.ascontiguousarray({a[0]}), {g})" if i == 1 else None


# ---------------------------------------------------------------------------- matching
def _full_sum(op: Op, source: int) -> bool:
    """Whether ``op`` is ``np.sum`` of all the elements of operation ``source`` into a number."""
    if op.fun is not np.sum or op.parents != {0: source} or op.shape != ():
        return False
    try:
        args = _bound(np.sum, op)
    except TypeError:
        return False
    return set(args) <= {"a", "axis", "keepdims"} and isinstance(op.value, float | np.floating)


def _is_constant(value, number: float) -> bool:
    return np.ndim(value) == 0 and isinstance(value, int | float | np.number) and value == number


def _square_of(op: Op, source: int) -> bool:
    """Whether ``op`` is the elementwise square of operation ``source``: ``x**2``,
    ``np.square(x)``, ``x * x``."""
    if op.kwargs or len(op.args) != (1 if op.fun is np.square else 2):
        return False
    if op.fun is np.power:
        return op.parents == {0: source} and _is_constant(op.args[1], 2)
    if op.fun is np.square:
        return op.parents == {0: source}
    return op.fun is np.multiply and op.parents == {0: source, 1: source}


def _only(readers: dict, k: int) -> int | None:
    users = readers.get(k, [])
    return users[0] if len(users) == 1 else None


def _squares(ops: list, readers: dict, k: int, user: int):
    """``(sum, dead)`` when the reader ``user`` of the solve ``k`` is (the first step of)
    a sum of its squares, else ``None``."""
    read = ops[user]
    if read.fun in (np.dot, np.matmul) and len(ops[k].shape) == 1:
        ok = read.parents == {0: k, 1: k} and len(read.args) == 2 and not read.kwargs
        return (user, []) if ok else None
    total = _only(readers, user)
    if _square_of(read, k) and total is not None and _full_sum(ops[total], user):
        return total, [user]
    return None


def _quadratic(ops: list, readers: dict, factor: int, k: int):
    """For a reader ``k`` of the factor: a list of ``(sum, dead)`` when it is
    ``solve_triangular(L, r, lower=True)`` read only by sums of its squares (``sum``, the
    index of one; ``dead``, the operations between), else ``None``."""
    import scipy.linalg

    op = ops[k]
    if op.fun is not scipy.linalg.solve_triangular or op.parents.get(0) != factor:
        return None
    if op.parents.get(1) == factor or set(op.parents) - {0, 1}:
        return None
    try:
        args = _bound(scipy.linalg.solve_triangular, op, trans=0, lower=False,
                      unit_diagonal=False)  # fmt: skip
    except TypeError:
        return None
    if args["lower"] is not True or args["trans"] not in (0, "N") or args["unit_diagonal"]:
        return None
    if op.shape != np.shape(op.args[1]) or len(op.shape) not in (1, 2):
        return None
    found = [_squares(ops, readers, k, user) for user in readers.get(k, [])]
    return found if found and None not in found else None


def _log_diagonal(ops: list, readers: dict, factor: int, k: int):
    """For a reader ``k`` of the factor: ``[(sum, dead)]`` when it is the main diagonal
    read only by its logarithms' sum, else ``None``."""
    op = ops[k]
    if op.parents != {0: factor}:
        return None
    if op.fun is not np.diag:
        return None
    try:
        if _bound(np.diag, op, k=0)["k"] != 0:
            return None
    except TypeError:
        return None
    log = _only(readers, k)
    if log is None:
        return None
    if ops[log].fun is not np.log or ops[log].parents != {0: k} or len(ops[log].args) != 1:
        return None
    if ops[log].kwargs:
        return None
    total = _only(readers, log)
    if total is None or not _full_sum(ops[total], log):
        return None
    return [(total, [k, log])]


def closed_forms(graph: Graph, loops: list = ()) -> Graph:
    """``graph`` with the sums :math:`q` and :math:`h` of each Cholesky factor read only
    through them (module docs) written as :class:`ClosedFormOp` of the factorised matrix;
    ``graph`` itself where there is none. The operations keep their indices (the
    operations between the factor and the sums are left unread), and none in a rolled loop
    (``loops``) is rewritten."""
    ops = graph.ops
    readers: dict[int, list[int]] = {}
    for k, op in enumerate(ops):
        for p in sorted(set(op.parents.values())):
            readers.setdefault(p, []).append(k)
    looped = {k for loop in loops for k in range(loop.start, loop.stop)}
    last = len(ops) - 1
    out, changed = list(ops), False
    for c, op in enumerate(ops):
        if op.fun is not np.linalg.cholesky or op.parents.keys() != {0} or c in looped:
            continue
        matrix = op.parents[0]
        if matrix in looped or len(op.shape) != 2 or op.shape[0] != op.shape[1]:
            continue
        plans = []
        for k in readers.get(c, []):
            found = _quadratic(ops, readers, c, k)
            kind = "q"
            if found is None:
                found, kind = _log_diagonal(ops, readers, c, k), "h"
            if found is None:
                break
            rhs = ops[k].parents.get(1) if kind == "q" else None
            touched = {k, *(j for total, dead in found for j in (total, *dead))}
            if (touched | {rhs}) & looped or last in touched - {total for total, _ in found}:
                break
            plans += [(kind, k, total, rhs) for total, _ in found]
        else:
            for kind, k, total, rhs in plans:
                old, changed = ops[total], True
                if kind == "q":
                    parents = {0: k, 1: c, 2: matrix} | ({3: rhs} if rhs is not None else {})
                    args = tuple(ops[j].value for j in parents.values())
                    out[total] = ClosedFormOp(cholesky_sum_of_squares, args, {}, parents,
                                              old.value, SumOfSquares())  # fmt: skip
                else:
                    parents = {0: c, 1: matrix}
                    out[total] = ClosedFormOp(cholesky_log_diagonal_sum,
                                              (op.value, ops[matrix].value), {}, parents,
                                              old.value, LogDiagonalSum())  # fmt: skip
    return Graph(out) if changed else graph
