"""The rules of the generated gradients (:mod:`hamiltonia.modelling.adjoint_source`) for
linear algebra: the Cholesky factor, triangular and general solves, the inverse, the
(log-)determinant, the diagonal and the trace, each with its reverse-mode adjoint, so that a
Gaussian-process or multivariate-normal model stays on the compiled path.

For :math:`L = \\operatorname{chol}(A)` the adjoint is Murray's
(:func:`~hamiltonia.modelling.linalg_special.cholesky_adjoint`), except for a factor read
only by a Gaussian log density's two terms, whose adjoint in :math:`A` has a closed form
(:mod:`hamiltonia.modelling.gaussian_form`); for :math:`x = A^{-1} b`
(triangular or general), :math:`\\bar b = A^{-\\top}\\bar x` and
:math:`\\bar A = -\\bar b\\, x^\\top` (the triangle of :math:`A` only, for a triangular
solve); for :math:`Y = A^{-1}`, :math:`\\bar A = -Y^\\top \\bar Y Y^\\top`; for
:math:`\\log\\lvert\\det A\\rvert`, :math:`\\bar A = \\bar v\\, A^{-\\top}`, and for
:math:`\\det A`, :math:`\\bar A = \\bar v \\det A\\, A^{-\\top}` (Giles 2008, "An extended
collection of matrix derivative results for forward and reverse mode algorithmic
differentiation"). Each is written in the form autograd uses, and tested against it
(``tests/modelling/test_adjoint_linalg.py``).

Where the mathematics is undefined (a matrix that is not positive definite, a singular one)
the compiled value is ``nan`` (:mod:`~hamiltonia.modelling.linalg_special`): the sampler
rejects the proposal as divergent.
"""

from __future__ import annotations

import numpy as np

from hamiltonia.modelling.adjoint_emitter import _shape_of
from hamiltonia.modelling.adjoint_rules import Rule, _bound
from hamiltonia.modelling.trace import TraceError

__all__ = [
    "Cholesky",
    "Determinant",
    "Diagonal",
    "Inverse",
    "LogAbsDeterminant",
    "Solve",
    "SolveTriangular",
    "Trace",
    "TupleTake",
]  # fmt: skip


def _matrix(e, op, i: int = 0) -> tuple:
    shape = _shape_of(e.graph, op, i)
    if len(shape) != 2:
        raise TraceError(f"{op.name} can be compiled for a matrix (2-d), not shape {shape}")
    return shape


def _c(code: str) -> str:
    return f"np.ascontiguousarray({code})"


def _ct(code: str) -> str:
    """The transpose, C-contiguous (numba's ``np.dot`` is slower on a Fortran-ordered one,
    and warns)."""
    return f"np.ascontiguousarray({_c(code)}.T)"


class Cholesky(Rule):
    """``np.linalg.cholesky``: ``nan`` where not positive definite; Murray's adjoint."""

    def forward(self, e, op, a):
        _matrix(e, op)
        return f"cholesky_or_nan({a[0]})"

    def adjoint(self, e, op, i, g, a, out):
        return f"cholesky_adjoint({_c(out)}, {g})"


class SolveTriangular(Rule):
    """``scipy.linalg.solve_triangular(a, b, trans, lower)`` (``unit_diagonal=False``)."""

    def _plan(self, e, op) -> tuple[bool, bool]:
        import scipy.linalg

        args = _bound(scipy.linalg.solve_triangular, op, trans=0, lower=False,
                      unit_diagonal=False)  # fmt: skip
        if args["unit_diagonal"]:
            raise TraceError("solve_triangular can be compiled without unit_diagonal=True")
        trans = args["trans"]
        if trans not in (0, 1, "N", "T"):
            raise TraceError("solve_triangular can be compiled with trans 0/'N' or 1/'T'")
        _matrix(e, op)
        if len(_shape_of(e.graph, op, 1)) not in (1, 2):
            raise TraceError("solve_triangular can be compiled for a vector or a matrix b")
        return bool(args["lower"]), trans in (1, "T")

    def _solve(self, e, op, a, b, trans: bool) -> str:
        lower, _ = self._plan(e, op)
        kind = "vector" if len(_shape_of(e.graph, op, 1)) == 1 else "matrix"
        return f"solve_triangular_{kind}({_c(a)}, {_c(b)}, {lower}, {trans})"

    def forward(self, e, op, a):
        return self._solve(e, op, a[0], a[1], self._plan(e, op)[1])

    def adjoint(self, e, op, i, g, a, out):
        lower, trans = self._plan(e, op)
        v = self._solve(e, op, a[0], g, not trans)
        if i == 1:
            return v
        # autograd: -T(tri(v x^T)), tri the lower triangle when lower != trans.
        outer = f"np.outer({v}, {out})" if len(op.shape) == 1 else f"np.dot({v}, {_ct(out)})"
        tri = "np.tril" if lower != trans else "np.triu"
        code = f"(-{tri}({outer}))"
        return f"np.ascontiguousarray({code}.T)" if trans else code


class Solve(Rule):
    """``np.linalg.solve(a, b)``, ``b`` a vector or a matrix: ``nan`` where singular."""

    def forward(self, e, op, a):
        _matrix(e, op)
        return f"solve_or_nan({a[0]}, {a[1]})"

    def adjoint(self, e, op, i, g, a, out):
        bbar = f"solve_or_nan({_ct(a[0])}, {g})"
        if i == 1:
            return bbar
        if len(op.shape) == 1:
            return f"(-np.outer({bbar}, {out}))"
        return f"(-np.dot({bbar}, {_ct(out)}))"


class Inverse(Rule):
    """``np.linalg.inv``: :math:`\\bar A = -Y^\\top \\bar Y Y^\\top`."""

    def forward(self, e, op, a):
        _matrix(e, op)
        return f"inv_or_nan({a[0]})"

    def adjoint(self, e, op, i, g, a, out):
        yt = _ct(out)
        return f"(-np.dot(np.dot({yt}, {_c(g)}), {yt}))"


class LogAbsDeterminant(Rule):
    """``np.linalg.slogdet``: the pair ``(sign, log|det|)``, read by :class:`TupleTake`;
    the adjoint (of the log) is :math:`\\bar v A^{-\\top}`."""

    tuple_value = True

    def forward(self, e, op, a):
        _matrix(e, op)
        return f"np.linalg.slogdet({_c(a[0])})"

    def adjoint(self, e, op, i, g, a, out):
        return f"{g} * inv_or_nan({a[0]}).T"


class Determinant(Rule):
    """``np.linalg.det``: :math:`\\bar A = \\bar v \\det A\\, A^{-\\top}`."""

    def forward(self, e, op, a):
        _matrix(e, op)
        return f"np.linalg.det({_c(a[0])})"

    def adjoint(self, e, op, i, g, a, out):
        return f"{g} * {out} * inv_or_nan({a[0]}).T"


class TupleTake(Rule):
    """autograd's ``container_take`` of a pair (``np.linalg.slogdet(a)[1]``): the sign has
    no derivative, the log-determinant passes its adjoint on."""

    def forward(self, e, op, a):
        index = op.args[1]
        if not isinstance(index, int | np.integer) or 0 not in op.parents:
            raise TraceError("only slogdet(...)[0] and [1] can be compiled from a tuple")
        parent = e.graph.ops[op.parents[0]]
        if parent.fun is not np.linalg.slogdet:
            raise TraceError(f"indexing the result of {parent.name} cannot be compiled")
        return f"{a[0]}[{int(index)}]"

    def adjoint(self, e, op, i, g, a, out):
        return g if int(op.args[1]) == 1 else None


class Diagonal(Rule):
    """``np.diag`` / ``np.diagonal`` of a matrix (the main diagonal), and ``np.diag`` of a
    vector (the diagonal matrix)."""

    def forward(self, e, op, a):
        source = _shape_of(e.graph, op, 0)
        offset = _bound(op.fun, op, **({"k": 0} if op.fun is np.diag else {"offset": 0}))
        if offset.get("k", offset.get("offset", 0)) != 0 or len(source) not in (1, 2):
            raise TraceError(f"np.{op.name} can be compiled for the main diagonal only")
        if op.fun is np.diagonal and len(source) != 2:
            raise TraceError("np.diagonal can be compiled for a matrix")
        return f"np.diag({_c(a[0])})"

    def adjoint(self, e, op, i, g, a, out):
        source = _shape_of(e.graph, op, 0)
        if len(source) == 1:
            return f"np.diag({_c(g)})"
        return f"diagonal_matrix({g}, {source[0]}, {source[1]})"


class Trace(Rule):
    """``np.trace`` of a matrix: :math:`\\bar A = \\bar v I`."""

    def forward(self, e, op, a):
        _matrix(e, op)
        if _bound(np.trace, op, offset=0)["offset"] != 0:
            raise TraceError("np.trace can be compiled for the main diagonal only")
        return f"np.trace({_c(a[0])})"

    def adjoint(self, e, op, i, g, a, out):
        rows, cols = _shape_of(e.graph, op, 0)
        return f"{g} * np.eye({rows}, {cols})"


def register(rules: dict) -> None:
    """Add these rules to ``rules`` (:data:`~hamiltonia.modelling.adjoint_source.RULES`)."""
    import scipy.linalg
    from autograd import builtins

    rules.update({
        np.linalg.cholesky: Cholesky(), scipy.linalg.solve_triangular: SolveTriangular(),
        np.linalg.solve: Solve(), np.linalg.inv: Inverse(), np.linalg.det: Determinant(),
        np.linalg.slogdet: LogAbsDeterminant(), builtins.container_take.fun: TupleTake(),
        np.diag: Diagonal(), np.diagonal: Diagonal(), np.trace: Trace(),
    })  # fmt: skip
