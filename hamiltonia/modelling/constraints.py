"""Constraints of parameters: bijections from the unconstrained space, with log-Jacobians.

A sampler moves in :math:`\\mathbb R^n`; a parameter with a constraint (a positive scale, a
probability, a simplex, a correlation matrix) is reported as :math:`x = T(z)`. The density
of :math:`z` is that of :math:`x` times the Jacobian of :math:`T`,

.. math::

    \\log p_Z(z) = \\log p_X(T(z)) + \\log\\,\\lvert\\det J_T(z)\\rvert ,

where :math:`J_T` is taken with respect to the *free* coordinates of :math:`x`
(:meth:`Constraint.free`: all of them for an elementwise constraint, the first
:math:`K-1` of a simplex, the strictly lower triangle of a Cholesky factor). The transforms
are those of the Stan reference manual (Stan Development Team, *Stan Reference Manual*,
"Constraint transforms"), written once with the array namespace ``xp`` as an argument, so
that the same code runs under NumPy, ``autograd.numpy`` (whose gradient the target then
takes) and ``jax.numpy``.

No library in the core's dependency set provides these bijections (TensorFlow Probability's
and NumPyro's live on their own array libraries), so they are written here, tested against
finite-difference Jacobians (``tests/modelling/test_constraints.py``).

Every function takes arrays with leading batch axes (chains): :math:`z` has shape
``batch + unconstrained_shape(shape)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = [
    "Bound",
    "CholeskyCorr",
    "Constraint",
    "DependentBounds",
    "EvaluatedBounds",
    "Interval",
    "LowerBounded",
    "Ordered",
    "Real",
    "Simplex",
    "UpperBounded",
]


#: A bound of :func:`~hamiltonia.lower`, :func:`~hamiltonia.upper` or
#: :func:`~hamiltonia.interval`: a number, or a function of the other blocks
#: (:class:`DependentBounds`).
Bound = float | Callable


def _softplus(xp, z):
    """:math:`\\log(1 + e^z)`, stable for large :math:`|z|`."""
    return xp.logaddexp(0.0, z)


class Constraint:
    """The support of a parameter, and the bijection :math:`T` onto it from
    :math:`\\mathbb R^n`.

    A subclass sets :attr:`event_ndim` (the trailing axes one transform acts on together:
    0 for an elementwise constraint) and defines :meth:`forward`, :meth:`inverse`,
    :meth:`contains` and, if it changes the size, :meth:`unconstrained_shape` and
    :meth:`free`.
    """

    #: Trailing axes of the parameter one transform acts on together.
    event_ndim = 0
    #: What :meth:`contains` checks, for error messages ("positive", "a simplex", ...).
    description = "real"

    def unconstrained_shape(self, shape: tuple) -> tuple:
        """The shape of :math:`z` for a parameter of shape ``shape``."""
        return tuple(shape)

    def forward(self, z, xp=np):
        """:math:`(T(z), \\log\\lvert\\det J_T(z)\\rvert)`; the log-Jacobian has one value per
        event (the shape of ``x`` without its last :attr:`event_ndim` axes)."""
        raise NotImplementedError

    def inverse(self, x: np.ndarray) -> np.ndarray:
        """:math:`T^{-1}(x)` (NumPy)."""
        raise NotImplementedError

    def contains(self, x: np.ndarray) -> np.ndarray:
        """Whether each event of ``x`` lies in the support (NumPy booleans)."""
        return np.isfinite(x)

    def contains_closure(self, x: np.ndarray) -> np.ndarray:
        """Whether each event of ``x`` lies in the closure of the support (its bounds
        included; finite values only), NumPy booleans as :meth:`contains`.

        A float draw from a distribution on the open support may land on a bound by
        rounding (a Dirichlet draw with a small concentration holds exact zeros, a
        Beta(0.1, 5) draw below :math:`10^{-308}` is 0): such a draw is valid though
        :meth:`contains` refuses it, and has no finite unconstrained value.
        """
        return self.contains(x)

    def free(self, x: np.ndarray) -> np.ndarray:
        """The free coordinates of ``x`` that the log-Jacobian refers to, flattened over the
        event axes: shape ``batch + (n,)`` with ``n`` the unconstrained size of one event."""
        return x[..., None] if self.event_ndim == 0 else x

    def check_shape(self, shape: tuple) -> None:
        """``ValueError`` if a parameter of this constraint cannot have ``shape``."""

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(self.__dict__.items()))))

    def __repr__(self):
        args = ", ".join(f"{v!r}" for v in self.__dict__.values())
        return f"{type(self).__name__}({args})"


class Real(Constraint):
    """No constraint: :math:`T(z) = z`."""

    def forward(self, z, xp=np):
        return z, z * 0.0

    def inverse(self, x):
        return np.asarray(x, dtype=float)


class LowerBounded(Constraint):
    """:math:`x > a`: :math:`x = a + e^z`, :math:`\\log J = z` (``lower=0``: positive)."""

    def __init__(self, lower: float):
        self.lower = float(lower)
        if not math.isfinite(self.lower):
            raise ValueError(f"lower must be a finite number, got {lower!r}")
        self.description = "positive" if self.lower == 0 else f"greater than {self.lower:g}"

    def forward(self, z, xp=np):
        return self.lower + xp.exp(z), z

    def inverse(self, x):
        return np.log(np.asarray(x, dtype=float) - self.lower)

    def contains(self, x):
        return np.asarray(x) > self.lower

    def contains_closure(self, x):
        x = np.asarray(x)
        return (x >= self.lower) & (x < np.inf)


class UpperBounded(Constraint):
    """:math:`x < b`: :math:`x = b - e^z`, :math:`\\log J = z`."""

    def __init__(self, upper: float):
        self.upper = float(upper)
        if not math.isfinite(self.upper):
            raise ValueError(f"upper must be a finite number, got {upper!r}")
        self.description = f"less than {self.upper:g}"

    def forward(self, z, xp=np):
        return self.upper - xp.exp(z), z

    def inverse(self, x):
        return np.log(self.upper - np.asarray(x, dtype=float))

    def contains(self, x):
        return np.asarray(x) < self.upper

    def contains_closure(self, x):
        x = np.asarray(x)
        return (x <= self.upper) & (x > -np.inf)


class Interval(Constraint):
    """:math:`a < x < b`: :math:`x = a + (b - a)\\,\\sigma(z)` with the logistic
    :math:`\\sigma`, and

    .. math::

        \\log J = \\log(b - a) + \\log\\sigma(z) + \\log\\sigma(-z)
                = \\log(b - a) - \\operatorname{softplus}(-z) - \\operatorname{softplus}(z).

    The value is computed from the nearer bound, as Stan's ``inv_logit``,

    .. math::

        x = \\begin{cases} a + (b - a)\\, e^{-\\operatorname{softplus}(-z)}, & z < 0, \\\\
                            b - (b - a)\\, e^{-\\operatorname{softplus}(z)}, & z \\ge 0,
            \\end{cases}

    since :math:`\\sigma(z) = e^{-\\operatorname{softplus}(-z)}` and
    :math:`1 - \\sigma(z) = \\sigma(-z)`: the distance to the nearer bound is computed
    with full relative precision (down to :math:`e^{-745}`), where
    :math:`a + (b - a)\\,\\sigma(z)` would round :math:`x - b` to 0 for :math:`z > 37` and a
    ``tanh`` form :math:`\\tfrac12(1 + \\tanh(z/2))` rounds :math:`x - a` to 0 for
    :math:`z < -38`. ``x`` itself holds that distance exactly only next to a bound at 0; next
    to another bound it cannot come closer than the spacing of floating-point numbers there.
    """

    def __init__(self, lower: float, upper: float):
        self.lower, self.upper = float(lower), float(upper)
        if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
            raise ValueError(f"interval bounds must be finite, got ({lower!r}, {upper!r})")
        if not self.lower < self.upper:
            raise ValueError(f"interval needs lower < upper, got ({lower!r}, {upper!r})")
        self.description = f"in ({self.lower:g}, {self.upper:g})"

    def forward(self, z, xp=np):
        width = self.upper - self.lower
        # softplus(-z) = -log sigma(z) and softplus(z) = -log sigma(-z): both finite for
        # any z, and shared with the log-Jacobian.
        sp_neg, sp_pos = _softplus(xp, -z), _softplus(xp, z)
        # Each side measured from its own bound: a density with mass within 1e-16 of a
        # bound (Beta(0.1, 5) near 0) is then not cut off at x == bound, where its log
        # density is -inf. Both branches are finite, so where() has finite gradients (and
        # is one traced primitive on the compiled path).
        x = xp.where(
            z < 0.0,
            self.lower + width * xp.exp(-sp_neg),
            self.upper - width * xp.exp(-sp_pos),
        )
        return x, math.log(width) - sp_neg - sp_pos

    def inverse(self, x):
        x = np.asarray(x, dtype=float)
        # logit((x - a) / (b - a)) from the distances to both bounds, so a value near the
        # upper bound is not first rounded to 1 - u.
        return np.log(x - self.lower) - np.log(self.upper - x)

    def contains(self, x):
        x = np.asarray(x)
        return (x > self.lower) & (x < self.upper)

    def contains_closure(self, x):
        x = np.asarray(x)
        return (x >= self.lower) & (x <= self.upper)


class EvaluatedBounds(Constraint):
    """Elementwise bounds given as arrays (a side without a bound ``None``): the constraint
    of a block with :class:`DependentBounds` once its bounds are evaluated at the values of
    the blocks they read (:meth:`ParameterLayout.constrain
    <hamiltonia.ParameterLayout.constrain>` does it). The bounds broadcast against the
    block (their leading axes are the chains'); the transforms are those of
    :class:`LowerBounded` (:math:`x = a + e^z`), :class:`UpperBounded` (:math:`x = b - e^z`)
    and :class:`Interval` (computed from the nearer bound), with
    :math:`\\log J = z` and :math:`\\log(b-a) - \\operatorname{softplus}(-z) -
    \\operatorname{softplus}(z)`. Neither bound: the identity.

    Where an interval is empty (:math:`b \\le a`, which bounds computed from other blocks can
    make), there is no value: the transform is evaluated with the width 1 (a placeholder
    in :math:`(a, a + 1)`, finite, so that ``logp`` and the gradients stay finite) and the
    log-Jacobian is :math:`-\\infty`, so that such a point has density zero and a sampler
    never accepts it.
    """

    description = "between its bounds"

    def __init__(self, lower=None, upper=None):
        self.lower, self.upper = lower, upper

    def forward(self, z, xp=np):
        lower, upper = self.lower, self.upper
        if lower is None and upper is None:
            return z, z * 0.0
        if upper is None:
            return lower + xp.exp(z), z
        if lower is None:
            return upper - xp.exp(z), z
        width = upper - lower
        ok = width > 0.0
        width = xp.where(ok, width, 1.0)
        upper = xp.where(ok, upper, lower + 1.0)
        sp_neg, sp_pos = _softplus(xp, -z), _softplus(xp, z)
        x = xp.where(z < 0.0, lower + width * xp.exp(-sp_neg), upper - width * xp.exp(-sp_pos))
        return x, xp.where(ok, xp.log(width), -np.inf) - sp_neg - sp_pos

    def inverse(self, x):
        x = np.asarray(x, dtype=float)
        above = None if self.lower is None else np.log(x - self.lower)
        below = None if self.upper is None else np.log(self.upper - x)
        if above is None:
            return x if below is None else below
        return above if below is None else above - below

    def contains(self, x):
        return self._inside(np.asarray(x), strict=True)

    def contains_closure(self, x):
        return self._inside(np.asarray(x), strict=False)

    def _inside(self, x, strict: bool):
        inside = np.isfinite(x)
        if self.lower is not None:
            inside = inside & ((x > self.lower) if strict else (x >= self.lower))
        if self.upper is not None:
            inside = inside & ((x < self.upper) if strict else (x <= self.upper))
        return inside


class DependentBounds(Constraint):
    """Elementwise bounds of which at least one is a function of other blocks: Stan's
    ``real<lower=0, upper=1 - alpha1> beta1``, declared as ``hm.interval(0, lambda p: 1 -
    p["alpha1"])``.

    Each bound is ``None`` (no bound on that side), a finite number, or a callable taking
    the constrained blocks by name (a mapping) and returning the bound, a number or an
    array that broadcasts against the block. :class:`~hamiltonia.ParameterLayout` finds the
    blocks each bound reads, constrains those first (in an order of the dependencies, not
    necessarily that of the declaration; a cycle is refused) and transforms the block with
    its bounds evaluated there (:class:`EvaluatedBounds`).

    **The Jacobian.** Let :math:`x_a = T_a(z_a)` be the blocks a bound reads and
    :math:`x_b = T(z_b;\\, l(x_a), u(x_a))` the block with dependent bounds (for the
    interval, :math:`x_b = l + (u - l)\\,\\sigma(z_b)`). The map
    :math:`(z_a, z_b) \\mapsto (x_a, x_b)` is block triangular, since :math:`x_a` does not
    depend on :math:`z_b`:

    .. math::

        J = \\begin{pmatrix} \\partial x_a / \\partial z_a & 0 \\\\
                             \\partial x_b / \\partial z_a & \\partial x_b / \\partial z_b
            \\end{pmatrix}, \\qquad
        \\log\\lvert\\det J\\rvert = \\log\\lvert\\det \\partial x_a/\\partial z_a\\rvert
            + \\log\\lvert\\det \\partial x_b/\\partial z_b\\rvert ,

    so the bounds' dependence on :math:`z_a` (the lower-left block) adds no term: the
    log-Jacobian of :math:`x_b` is that of the transform at the evaluated bounds,
    :math:`\\log(u - l) + \\log\\sigma(z_b) + \\log(1 - \\sigma(z_b))` for the interval and
    :math:`z_b` for a lower or an upper bound, summed over the block. With several
    dependent blocks the same holds in the order the layout evaluates them (a permutation
    of the blocks, applied to rows and columns alike, leaves :math:`|\\det J|` unchanged).

    A point where the interval is empty (:math:`u \\le l`) has density zero
    (:class:`EvaluatedBounds`): the support of the blocks read is, in effect, restricted to
    where :math:`l < u`, as Stan rejects such a point.

    Without the blocks the bounds read (:meth:`inverse`, :meth:`contains`), only the numeric
    bounds are known: those methods take the others as absent, and
    :meth:`~hamiltonia.ParameterLayout.constraint_at` gives the constraint with every bound
    evaluated.
    """

    def __init__(self, lower: Bound | None = None, upper: Bound | None = None):
        if not (callable(lower) or callable(upper)):
            raise ValueError("DependentBounds needs a bound that is a function of other blocks")
        sides = []
        for side, bound in (("lower", lower), ("upper", upper)):
            if bound is not None and not callable(bound):
                bound = float(bound)
                if not math.isfinite(bound):
                    raise ValueError(f"{side} must be a finite number or a function, got {bound!r}")
            sides.append(bound)
        self.lower, self.upper = sides
        low, high = (
            _bound_text(b, side) for b, side in zip(sides, ("lower", "upper"), strict=True)
        )
        if lower is None:
            self.description = f"less than {high}"
        elif upper is None:
            self.description = f"greater than {low}"
        else:
            self.description = f"in ({low}, {high})"

    def functions(self) -> dict:
        """The bounds that are functions, by side (``"lower"``, ``"upper"``)."""
        return {
            side: b for side, b in (("lower", self.lower), ("upper", self.upper)) if callable(b)
        }

    def at(self, lower=None, upper=None) -> EvaluatedBounds:
        """The constraint with the function bounds replaced by their values ``lower`` and
        ``upper`` (the numeric bounds are kept; a side without a bound stays without)."""
        return EvaluatedBounds(
            lower if callable(self.lower) else self.lower,
            upper if callable(self.upper) else self.upper,
        )

    def _known(self) -> EvaluatedBounds:
        """Only the numeric bounds (the functions taken as absent)."""
        return EvaluatedBounds(*(None if callable(b) else b for b in (self.lower, self.upper)))

    def forward(self, z, xp=np):
        raise TypeError(
            "a block with bounds computed from other blocks is transformed by "
            "ParameterLayout.constrain, which evaluates them (or by constraint.at(lower, upper))"
        )

    def inverse(self, x):
        """:math:`T^{-1}` relative to the numeric bounds only (the identity where both are
        functions): an approximation for a caller without the other blocks;
        :meth:`~hamiltonia.ParameterLayout.unconstrain` is exact."""
        return self._known().inverse(x)

    def contains(self, x):
        """Inside the numeric bounds only (see the class)."""
        return self._known().contains(x)

    def contains_closure(self, x):
        return self._known().contains_closure(x)

    def __repr__(self):
        sides = ((self.lower, "lower"), (self.upper, "upper"))
        args = ", ".join(_bound_text(b, side, name=True) for b, side in sides)
        return f"DependentBounds({args})"


def _bound_text(bound, side: str, name: bool = False) -> str:
    """A bound for messages: the number, or ``its upper bound`` (with ``name``, the
    function's name, for ``repr``)."""
    if callable(bound):
        named = getattr(bound, "__qualname__", type(bound).__name__).rpartition(".")[2]
        return f"{side}={named}" if name else f"its {side} bound"
    return "None" if bound is None else f"{bound:g}"


class Ordered(Constraint):
    """An increasing vector: :math:`x_1 = z_1`, :math:`x_k = x_{k-1} + e^{z_k}`, and
    :math:`\\log J = \\sum_{k \\ge 2} z_k`."""

    event_ndim = 1
    description = "increasing"

    def check_shape(self, shape):
        if len(shape) != 1 or shape[0] < 1:
            raise ValueError(f"an ordered parameter is a vector of length >= 1, got shape {shape}")

    def forward(self, z, xp=np):
        steps = xp.concatenate([z[..., :1], xp.exp(z[..., 1:])], axis=-1)
        return xp.cumsum(steps, axis=-1), xp.sum(z[..., 1:], axis=-1)

    def inverse(self, x):
        x = np.asarray(x, dtype=float)
        return np.concatenate([x[..., :1], np.log(np.diff(x, axis=-1))], axis=-1)

    def contains(self, x):
        return np.all(np.diff(np.asarray(x), axis=-1) > 0, axis=-1)

    def contains_closure(self, x):
        x = np.asarray(x)
        return np.all(np.diff(x, axis=-1) >= 0, axis=-1) & np.all(np.isfinite(x), axis=-1)


class Simplex(Constraint):
    """A probability vector of length :math:`K` (positive, summing to 1), by Stan's stick
    breaking: for :math:`k = 1..K-1`, with :math:`u_k = z_k - \\log(K - k)`,

    .. math::

        y_k = \\sigma(u_k), \\quad r_1 = 1, \\quad x_k = y_k r_k, \\quad
        r_{k+1} = r_k (1 - y_k), \\quad x_K = r_K,

        \\log J = \\sum_{k<K} \\bigl(\\log y_k + \\log(1 - y_k) + \\log r_k\\bigr),

    with respect to :math:`x_1..x_{K-1}`. The offsets :math:`\\log(K-k)` put :math:`z = 0` at
    the uniform simplex.
    """

    event_ndim = 1
    description = "a simplex (positive, summing to 1)"

    def check_shape(self, shape):
        if len(shape) != 1 or shape[0] < 2:
            raise ValueError(f"a simplex is a vector of length >= 2, got shape {shape}")

    def unconstrained_shape(self, shape):
        return (shape[0] - 1,)

    def _offsets(self, n: int) -> np.ndarray:
        return np.log(np.arange(n, 0, -1, dtype=float))

    def forward(self, z, xp=np):
        u = z - self._offsets(z.shape[-1])
        log_y, log_1my = -_softplus(xp, -u), -_softplus(xp, u)
        cum = xp.cumsum(log_1my, axis=-1)
        log_r = xp.concatenate([cum[..., :1] * 0.0, cum[..., :-1]], axis=-1)
        x = xp.concatenate([xp.exp(log_y + log_r), xp.exp(cum[..., -1:])], axis=-1)
        return x, xp.sum(log_y + log_1my + log_r, axis=-1)

    def inverse(self, x):
        x = np.asarray(x, dtype=float)
        r = 1.0 - np.concatenate([np.zeros_like(x[..., :1]), np.cumsum(x[..., :-2], axis=-1)], -1)
        y = x[..., :-1] / r
        return np.log(y) - np.log1p(-y) + self._offsets(x.shape[-1] - 1)

    def contains(self, x):
        x = np.asarray(x)
        return np.all(x > 0, axis=-1) & (np.abs(np.sum(x, axis=-1) - 1.0) < 1e-8)

    def contains_closure(self, x):
        x = np.asarray(x)
        return np.all(x >= 0, axis=-1) & (np.abs(np.sum(x, axis=-1) - 1.0) < 1e-8)

    def free(self, x):
        return x[..., :-1]


class CholeskyCorr(Constraint):
    """The Cholesky factor :math:`L` of a :math:`K \\times K` correlation matrix (lower
    triangular, positive diagonal, rows of unit length), by Stan's transform: canonical
    partial correlations :math:`y_{ij} = \\tanh z_{ij}` (:math:`i > j`, row by row), then

    .. math::

        L_{ij} = y_{ij}\\sqrt{1 - \\textstyle\\sum_{k<j} L_{ik}^2}, \\qquad
        L_{ii} = \\sqrt{1 - \\textstyle\\sum_{k<i} L_{ik}^2},

        \\log J = \\sum_{i>j} \\Bigl(\\log(1 - y_{ij}^2)
                  + \\tfrac12 \\log\\bigl(1 - \\textstyle\\sum_{k<j} L_{ik}^2\\bigr)\\Bigr),

    with respect to the strictly lower triangle of :math:`L`. :math:`z = 0` is the
    identity. A correlation matrix is :math:`LL^\\top`; an LKJ prior on it is written on
    :math:`L` (the LKJ density in Cholesky form).
    """

    event_ndim = 2
    description = "the Cholesky factor of a correlation matrix"

    def check_shape(self, shape):
        if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 2:
            raise ValueError(f"a Cholesky factor is a K x K matrix with K >= 2, got {shape}")

    def unconstrained_shape(self, shape):
        k = shape[0]
        return (k * (k - 1) // 2,)

    @staticmethod
    def _size(n: int) -> int:
        return round((1 + math.sqrt(1 + 8 * n)) / 2)

    def forward(self, z, xp=np):
        k = self._size(z.shape[-1])
        y = xp.tanh(z)
        # log(1 - tanh(z)^2), stable for large |z|; the remaining squared length of a row
        # shrinks by this factor at each entry, 1 - sum_k L_ik^2 = prod_k (1 - y_ik^2), and
        # is kept in logs so that a saturated tanh gives 0, not log(0).
        log_1my2 = 2.0 * (math.log(2.0) - z - _softplus(xp, -2.0 * z))
        log_jac = xp.sum(log_1my2, axis=-1)
        zero = z[..., 0] * 0.0
        rows, n = [], 0
        for i in range(k):
            entries, log_remaining = [], zero
            for _ in range(i):
                entries.append(y[..., n] * xp.exp(0.5 * log_remaining))
                log_jac = log_jac + 0.5 * log_remaining
                log_remaining = log_remaining + log_1my2[..., n]
                n += 1
            entries.append(xp.exp(0.5 * log_remaining))
            entries.extend([zero] * (k - i - 1))
            rows.append(xp.stack(entries, axis=-1))
        return xp.stack(rows, axis=-2), log_jac

    def inverse(self, x):
        x = np.asarray(x, dtype=float)
        k = x.shape[-1]
        out = []
        for i in range(1, k):
            remaining = 1.0 - np.concatenate(
                [np.zeros_like(x[..., i, :1]), np.cumsum(x[..., i, : i - 1] ** 2, axis=-1)], -1
            )
            out.append(np.arctanh(x[..., i, :i] / np.sqrt(remaining)))
        return np.concatenate(out, axis=-1)

    def contains(self, x):
        return self._factor(x, strict=True)

    def contains_closure(self, x):
        return self._factor(x, strict=False)

    @staticmethod
    def _factor(x, strict: bool):
        """Lower triangular with rows of unit length, and a positive (``strict``) or
        non-negative diagonal (a unit correlation, on the boundary)."""
        x = np.asarray(x)
        lower = np.all(np.triu(x, 1) == 0, axis=(-2, -1))
        diag = np.diagonal(x, axis1=-2, axis2=-1)
        diagonal = np.all(diag > 0 if strict else diag >= 0, axis=-1)
        unit = np.all(np.abs(np.sum(x**2, axis=-1) - 1.0) < 1e-8, axis=-1)
        return lower & diagonal & unit

    def free(self, x):
        i, j = np.tril_indices(x.shape[-1], -1)
        return x[..., i, j]
