"""Named parameter blocks with shapes and constraints, and the flat vector a sampler moves.

A model declares its parameters as named blocks,

>>> import hamiltonia as hm
>>> layout = hm.ParameterLayout({"mu": hm.real(), "tau": hm.positive(),
...                              "eta": hm.real(8, dims="school")})
>>> layout.dim, layout.names[:3]
(10, ('mu', 'tau', 'eta[0]'))

and the layout builds the unconstrained vector :math:`z \\in \\mathbb R^{n}` (blocks in the
order given, each flattened in C order), the map :math:`z \\mapsto` the constrained values
by name with the sum of the blocks' log-Jacobians (:mod:`hamiltonia.modelling.constraints`), and its
inverse for initial values given by name.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from hamiltonia.modelling.constraints import (
    Bound,
    CholeskyCorr,
    Constraint,
    DependentBounds,
    EvaluatedBounds,
    Interval,
    LowerBounded,
    Ordered,
    Real,
    Simplex,
    UpperBounded,
)

__all__ = [
    "SAMPLE_DIMS",
    "Param",
    "ParameterLayout",
    "check_names",
    "cholesky_corr",
    "interval",
    "lower",
    "ordered",
    "positive",
    "real",
    "simplex",
    "split_blocks",
    "upper",
]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
        shape = (int(shape),)
    try:
        shape = tuple(shape)
    except TypeError:
        raise ValueError(
            f"shape must be an integer or a tuple of integers, got {shape!r}"
        ) from None
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"shape must hold positive integers, got {shape!r}")
    return tuple(int(n) for n in shape)


#: The dimensions ArviZ gives every variable of a run's groups, before its own.
SAMPLE_DIMS = ("chain", "draw")


def check_names(variables) -> None:
    """Refuse names that the run's ArviZ groups could not hold apart.

    ``variables`` are ``(kind, name, shape, dims)`` rows (``kind`` says what the name is, for
    the message: ``"parameter"``, ``"generated quantity"``, ``"observed variable"``;
    ``dims`` is ``None`` where ArviZ names the axes ``{name}_dim_{axis}``). A variable may
    not be named ``chain`` or ``draw``, nor share its name with a dimension (xarray would
    make it the dimension's coordinate, and the saved run could not be read back), no
    axis may be named ``chain`` or ``draw``, and no variable may name one dimension for two
    of its axes (xarray would take them for one axis: a ``K x K`` matrix needs two names).

    Raises
    ------
    ValueError
        Naming the variable and the dimension it collides with.
    """
    variables = list(variables)
    dims: dict[str, tuple] = {}
    for kind, name, shape, var_dims in variables:
        repeated = [d for i, d in enumerate(var_dims or ()) if d in var_dims[:i]]
        if repeated:
            axes = [i for i, d in enumerate(var_dims) if d == repeated[0]]
            raise ValueError(
                f"dims of {kind} {name!r} name axes {' and '.join(map(str, axes))} "
                f"{repeated[0]!r} (dims {tuple(var_dims)!r}): each axis needs a dimension of "
                f"its own, e.g. {repeated[0]!r} and {repeated[0] + '_bis'!r}"
            )
        for axis in range(len(shape)):
            dim = var_dims[axis] if var_dims else f"{name}_dim_{axis}"
            if dim in SAMPLE_DIMS:
                raise ValueError(
                    f"dims of {kind} {name!r} name axis {axis} {dim!r}, a name ArviZ keeps "
                    f"for the draws' dimensions {SAMPLE_DIMS}; choose another"
                )
            dims.setdefault(dim, (kind, name, axis, var_dims is not None))
    for kind, name, _shape, _dims in variables:
        if name in SAMPLE_DIMS:
            raise ValueError(
                f"{kind} {name!r}: the names {SAMPLE_DIMS} are kept by ArviZ for the draws' "
                "dimensions; choose another"
            )
        if name in dims:
            other, owner, axis, named = dims[name]
            of = f"axis {axis} of {other} {owner!r}"
            how = (
                f"the dimension of {of}"
                if named
                else f"the name ArviZ gives {of}, which has no dims"
            )
            raise ValueError(
                f"{kind} {name!r} is also {how}: a variable and a dimension cannot share a "
                "name (the variable would become the dimension's labels); rename one"
            )


def axis_names(dims, shape) -> tuple[str, ...] | None:
    """``dims`` (a name or a sequence of names) as one name per axis of ``shape``, or
    ``None``; ``ValueError`` when they do not match."""
    if dims is None:
        return None
    dims = (dims,) if isinstance(dims, str) else tuple(dims)
    if len(dims) != len(shape) or not all(isinstance(d, str) and d for d in dims):
        raise ValueError(
            f"dims must name each of the {len(shape)} axes of shape {shape}, got {dims!r}"
        )
    return dims


@dataclass(frozen=True)
class Param:
    """One named block: its shape, constraint and (optionally) the names of its axes, which
    become the dimensions of its variable in the ArviZ output."""

    constraint: Constraint
    shape: tuple = ()
    dims: tuple | None = None

    def __post_init__(self):
        if not isinstance(self.constraint, Constraint):
            raise TypeError(
                f"constraint must be a Constraint, got {type(self.constraint).__name__}"
            )
        object.__setattr__(self, "shape", _shape(self.shape))
        object.__setattr__(self, "dims", axis_names(self.dims, self.shape))
        self.constraint.check_shape(self.shape)

    @property
    def size(self) -> int:
        """Number of constrained values."""
        return int(np.prod(self.shape, dtype=int))

    @property
    def unconstrained_shape(self) -> tuple:
        return self.constraint.unconstrained_shape(self.shape)

    @property
    def unconstrained_size(self) -> int:
        return int(np.prod(self.unconstrained_shape, dtype=int))


def split_blocks(draws: np.ndarray, blocks) -> dict:
    """Flat draws ``(chains, draws, size)`` as one array per named block, ``(chains, draws)
    + shape``, in the order of ``blocks`` (``[name, shape, dims]`` triples, as
    :attr:`hamiltonia.Target.blocks` lists them): the ArviZ variables of a run's draws."""
    out, start = {}, 0
    for name, shape, _ in blocks:
        size = int(np.prod(shape, dtype=int))
        out[name] = draws[..., start : start + size].reshape(draws.shape[:2] + tuple(shape))
        start += size
    return out


def real(shape=(), *, dims=None) -> Param:
    """An unconstrained block."""
    return Param(Real(), shape, dims)


def positive(shape=(), *, dims=None) -> Param:
    """A block of positive values (:math:`x = e^z`)."""
    return Param(LowerBounded(0.0), shape, dims)


def lower(bound: Bound, shape=(), *, dims=None) -> Param:
    """A block of values above ``bound``: a number, or a function of the other blocks
    (:func:`interval`)."""
    if callable(bound):
        return Param(DependentBounds(lower=bound), shape, dims)
    return Param(LowerBounded(bound), shape, dims)


def upper(bound: Bound, shape=(), *, dims=None) -> Param:
    """A block of values below ``bound``: a number, or a function of the other blocks
    (:func:`interval`)."""
    if callable(bound):
        return Param(DependentBounds(upper=bound), shape, dims)
    return Param(UpperBounded(bound), shape, dims)


def interval(low: Bound, high: Bound, shape=(), *, dims=None) -> Param:
    """A block of values in ``(low, high)`` (a logistic transform).

    A bound may be a function of the other blocks, ``p -> bound``, taking the constrained
    blocks by name and returning a number or an array that broadcasts against the block:
    Stan's ``real<lower=0, upper=1 - alpha1> beta1`` is
    ``"beta1": hm.interval(0, lambda p: 1 - p["alpha1"])``. The blocks it reads are
    constrained first, and the log-Jacobian is that of the transform at the evaluated
    bounds, :math:`\\log(b - a) + \\log\\sigma(z) + \\log(1 - \\sigma(z))`: the
    bounds' dependence on the other blocks adds no term, the map being triangular
    (:class:`~hamiltonia.modelling.constraints.DependentBounds`). A point where the
    bounds leave no room (``high <= low``) has density zero. Such a function is written as
    ``logp`` is (``autograd.numpy`` or ``jax.numpy``, elementwise arithmetic), and runs on
    every backend."""
    if callable(low) or callable(high):
        return Param(DependentBounds(low, high), shape, dims)
    return Param(Interval(low, high), shape, dims)


def simplex(k: int, *, dims=None) -> Param:
    """A probability vector of length ``k`` (stick breaking; ``k - 1`` free values)."""
    return Param(Simplex(), (k,), dims)


def ordered(k: int, *, dims=None) -> Param:
    """An increasing vector of length ``k``."""
    return Param(Ordered(), (k,), dims)


def cholesky_corr(k: int, *, dims=None) -> Param:
    """The Cholesky factor of a ``k x k`` correlation matrix (``k(k-1)/2`` free values)."""
    return Param(CholeskyCorr(), (k, k), dims)


def element_names(name: str, shape: tuple) -> list[str]:
    """``name`` for a scalar, else ``name[i]`` / ``name[i, j]`` in C order (ArviZ's labels)."""
    if not shape:
        return [name]
    return [f"{name}[{', '.join(map(str, idx))}]" for idx in itertools.product(*map(range, shape))]


class ParameterLayout:
    """The blocks of a model and the flat unconstrained vector they occupy.

    Parameters
    ----------
    params : mapping of str to Param
        The blocks, in the order they take in the vector.
    """

    def __init__(self, params: Mapping[str, Param]):
        if not isinstance(params, Mapping) or not params:
            raise ValueError("params must be a non-empty mapping of names to parameter blocks")
        self.params: dict[str, Param] = {}
        for name, param in params.items():
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise ValueError(f"parameter names must be identifiers, got {name!r}")
            if not isinstance(param, Param):
                raise TypeError(
                    f"parameter {name!r} must be a block such as hm.real() or hm.positive(), "
                    f"got {type(param).__name__}"
                )
            self.params[name] = param
        check_names(("parameter", n, p.shape, p.dims) for n, p in self.params.items())
        self._slices: dict[str, slice] = {}
        start = 0
        for name, param in self.params.items():
            self._slices[name] = slice(start, start + param.unconstrained_size)
            start += param.unconstrained_size
        self.dim = start
        self.names = tuple(
            n for name, p in self.params.items() for n in element_names(name, p.shape)
        )
        self.size = len(self.names)
        #: The blocks each block with bounds computed from others reads (by name).
        self.reads: dict[str, tuple[str, ...]] = {}
        # The shape each such bound has at one point, by (block, side).
        self._bound_shapes: dict[tuple[str, str], tuple] = {}
        #: The order :meth:`constrain` takes the blocks in: that of :attr:`params`, but a
        #: block whose bounds read others after those.
        self.order: tuple[str, ...] = self._plan()

    def _plan(self) -> tuple[str, ...]:
        """The order of the blocks for :meth:`constrain`, found by evaluating every bound
        that is a function at the centre of the unconstrained space (:math:`z = 0`),
        recording the blocks it reads (:attr:`reads`) and the shape it returns; a bound that
        reads an unknown block, or a cycle of bounds, is a ``ValueError`` naming them."""
        at_centre: dict[str, Constraint] = {}  # each block's constraint, bounds evaluated
        centre: dict[str, np.ndarray] = {}  # the values read by a bound, when first read
        order: list[str] = []

        def value(name: str, path: tuple) -> np.ndarray:
            if name not in centre:
                visit(name, path)
                param = self.params[name]
                with np.errstate(all="ignore"):
                    x, _ = at_centre[name].forward(np.zeros(param.unconstrained_shape), np)
                centre[name] = np.asarray(x)
            return centre[name]

        def visit(name: str, path: tuple) -> None:
            if name in at_centre:
                return
            if name in path:
                cycle = " -> ".join((*path[path.index(name) :], name))
                raise _BoundError(
                    f"the bounds of {name!r} read {name!r} itself"
                    if len(path) - path.index(name) == 1
                    else f"the bounds of blocks {sorted(set(path[path.index(name) :]))} read "
                    f"each other in a cycle ({cycle}: each arrow reads the next block); a "
                    "bound may read only blocks whose own bounds do not read it back"
                )
            param = self.params[name]
            constraint = param.constraint
            if isinstance(constraint, DependentBounds):
                reads: list[str] = []
                found = {}
                inner = (*path, name)

                def fetch(key: str) -> np.ndarray:
                    return value(key, inner)

                for side, fn in constraint.functions().items():
                    try:
                        with np.errstate(all="ignore"):
                            bound = fn(_Blocks(self.params, fetch, name, side, reads))
                    except _BoundError:
                        raise
                    except Exception as err:
                        err.add_note(
                            f"hamiltonia: raised by the {side} bound of {name!r}, called with "
                            "the blocks it reads at the centre of the unconstrained space"
                        )
                        raise
                    found[side] = self._check_bound(name, side, bound, param.shape)
                self.reads[name] = tuple(dict.fromkeys(reads))
                constraint = constraint.at(**found)
            at_centre[name] = constraint
            order.append(name)

        for name in self.params:
            visit(name, ())
        return tuple(order)

    def _check_bound(self, name: str, side: str, value, shape: tuple) -> np.ndarray:
        """The value of a bound at the centre: finite numbers of a shape that broadcasts
        against the block (recorded, to tell the chains' leading axes later)."""
        try:
            value = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(
                f"the {side} bound of {name!r} must return numbers, got {value!r:.80}"
            ) from None
        fits = value.ndim <= len(shape) and all(
            a in (1, b) for a, b in zip(value.shape[::-1], shape[::-1], strict=False)
        )
        if not fits:
            raise ValueError(
                f"the {side} bound of {name!r} returned shape {value.shape}, which does not "
                f"broadcast against the block's shape {shape}"
            )
        if not np.all(np.isfinite(value)):
            raise ValueError(
                f"the {side} bound of {name!r} is {value.tolist()!r:.80} at the centre of the "
                "unconstrained space; it must be finite"
            )
        self._bound_shapes[name, side] = value.shape
        return value

    def constraint_at(self, name: str, values: Mapping, batch: tuple = (), xp=np) -> Constraint:
        """The constraint of block ``name`` with its bounds evaluated at the constrained
        blocks ``values`` (shapes ``batch + shape``; those it reads are enough): an
        :class:`~hamiltonia.modelling.constraints.EvaluatedBounds` for a block whose bounds
        are functions, else the block's own constraint. With NumPy and a batch, each bound
        is evaluated point by point (a function written for one point is then right too)."""
        constraint = self.params[name].constraint
        if name not in self.reads:
            return constraint
        bounds = {side: self._bound(name, side, fn, values, batch, xp)
                  for side, fn in constraint.functions().items()}  # fmt: skip
        return constraint.at(**bounds)

    def _bound(self, name: str, side: str, fn: Callable, values: Mapping, batch: tuple, xp):
        """One bound of ``name`` at ``values``, shaped to broadcast against ``batch +
        shape``: a bound that carries the batch axes gets axes for the block's own."""
        point = self._bound_shapes[name, side]
        shape = self.params[name].shape
        if batch and xp is np:
            n = int(np.prod(batch, dtype=int))
            flat = {k: np.reshape(v, (n, *np.shape(v)[len(batch) :])) for k, v in values.items()}
            rows = []
            for i in range(n):
                row = {k: v[i] for k, v in flat.items()}
                rows.append(np.asarray(fn(_Blocks(row, row.__getitem__, name, side)), float))
            for row in rows:
                if row.shape != point:
                    raise ValueError(
                        f"the {side} bound of {name!r} returned shape {row.shape} at one "
                        f"point, where it returned {point} at the centre"
                    )
            value = np.reshape(np.stack(rows) if rows else np.zeros((0, *point)), batch + point)
        else:
            value = fn(_Blocks(values, values.__getitem__, name, side))
        got = tuple(np.shape(value))
        if got == point:
            return value
        if batch and got == batch + point:
            return xp.reshape(value, batch + (1,) * (len(shape) - len(point)) + point)
        raise ValueError(
            f"the {side} bound of {name!r} returned shape {got} for blocks with the leading "
            f"axes {batch}; it must return {point} per point, as at the centre (with the "
            "leading axes first: index a block's own axes from the end, p['w'][..., 0])"
        )

    def constrain(self, z, xp=np) -> tuple[dict, object]:
        """The constrained blocks by name (each of shape ``batch + shape``) at ``z`` of shape
        ``batch + (dim,)``, and the sum of their log-Jacobians (shape ``batch``).

        The blocks are taken in :attr:`order`, so that the bounds computed from other
        blocks (:func:`interval`) are evaluated at those blocks' values; the log-Jacobian
        is then that of each transform at its evaluated bounds
        (:class:`~hamiltonia.modelling.constraints.DependentBounds`)."""
        batch = z.shape[:-1]
        values, log_jac = {}, 0.0
        for name in self.order:
            param = self.params[name]
            block = z[..., self._slices[name]]
            block = xp.reshape(block, batch + param.unconstrained_shape)
            constraint = self.constraint_at(name, values, batch, xp)
            if type(constraint) is Real:
                # No Jacobian term: not a sum of zeros, which the compiled code would
                # compute (and differentiate) at every gradient.
                values[name] = block
                continue
            x, jac = constraint.forward(block, xp)
            # Sum over the block's own axes, leaving the batch axes.
            axes = tuple(range(len(batch), len(batch) + jac.ndim - len(batch)))
            values[name] = x
            log_jac = log_jac + (xp.sum(jac, axis=axes) if axes else jac)
        if self.reads:
            values = {name: values[name] for name in self.params}
        return values, log_jac

    def flatten(self, values: Mapping, batch: tuple = ()) -> np.ndarray:
        """The constrained blocks ``values`` (shapes ``batch + shape``) as one flat array of
        shape ``batch + (size,)``, in the order of :attr:`names`."""
        return np.concatenate(
            [np.reshape(np.asarray(values[n], dtype=float), (*batch, p.size))
             for n, p in self.params.items()],
            axis=-1,
        )  # fmt: skip

    def unflatten(self, flat: np.ndarray) -> dict:
        """The inverse of :meth:`flatten`: blocks by name from ``batch + (size,)``."""
        flat = np.asarray(flat)
        batch, out, start = flat.shape[:-1], {}, 0
        for name, param in self.params.items():
            out[name] = flat[..., start : start + param.size].reshape(batch + param.shape)
            start += param.size
        return out

    def unconstrain(self, values: Mapping, batch: tuple = ()) -> np.ndarray:
        """The unconstrained vector of constrained ``values`` given by name (each of shape
        ``shape`` or ``batch + shape``), shape ``batch + (dim,)``; a missing or unknown name, a
        wrong shape or a value outside its support is a ``ValueError`` naming it."""
        if not isinstance(values, Mapping):
            raise ValueError(f"values must be a mapping of parameter names, got {values!r:.80}")
        unknown = set(values) - set(self.params)
        if unknown:
            raise ValueError(
                f"unknown parameters {sorted(unknown)}; the model has {list(self.params)}"
            )
        missing = [n for n in self.params if n not in values]
        if missing:
            raise ValueError(
                f"values for {missing} are missing (the model has {list(self.params)})"
            )
        parts, checked = {}, {}
        for name in self.order:
            param = self.params[name]
            try:
                x = np.asarray(values[name], dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be numbers, got {values[name]!r:.80}") from None
            if x.shape == param.shape:
                x = np.broadcast_to(x, batch + param.shape)
            if x.shape != batch + param.shape:
                raise ValueError(
                    f"{name} must have shape {param.shape}"
                    + (f" or {batch + param.shape}" if batch else "")
                    + f", got {x.shape}"
                )
            constraint = self.constraint_at(name, checked, batch)
            inside = np.asarray(constraint.contains(x))
            if not np.all(inside):
                # The first value (or event: a simplex, a matrix) outside, by its index,
                # rather than the opening of a block whose first values may be valid.
                bad = tuple(int(i) for i in np.argwhere(~inside)[0])
                at = f"{name}[{', '.join(map(str, bad))}] = " if bad else ""
                raise ValueError(
                    f"{name} must be {param.constraint.description}, got "
                    f"{at}{np.asarray(x[bad]).tolist()!r:.80}" + _bounds_there(constraint, x, bad)
                )
            checked[name] = x
            with np.errstate(all="ignore"):
                z = constraint.inverse(x)
            parts[name] = np.reshape(z, (*batch, param.unconstrained_size))
        return np.concatenate([parts[name] for name in self.params], axis=-1)

    def describe(self) -> list:
        """The blocks as ``[name, shape, dims, constraint]`` rows (JSON-ready)."""
        return [
            [name, list(p.shape), None if p.dims is None else list(p.dims), repr(p.constraint)]
            for name, p in self.params.items()
        ]

    def __repr__(self):
        blocks = ", ".join(f"{n}: {p.constraint!r}{list(p.shape)}" for n, p in self.params.items())
        return f"ParameterLayout({blocks})"


class _BoundError(ValueError):
    """A bound that reads an unknown block, or bounds reading each other in a cycle."""


class _Blocks(Mapping):
    """The blocks as a bound of ``owner`` sees them, ``get(name)`` for each of ``names``.
    While :meth:`ParameterLayout._plan` finds what a bound reads (``reads``, a list, given),
    each block read is recorded, and an unknown name is a :class:`_BoundError`; later,
    reading a block not yet constrained is a ``KeyError`` saying why."""

    def __init__(self, names, get: Callable, owner: str, side: str, reads: list | None = None):
        self._names, self._get, self._reads = names, get, reads
        self._bound = f"the {side} bound of {owner!r}"

    def __getitem__(self, key):
        if key in self._names:
            if self._reads is not None:
                self._reads.append(key)
            return self._get(key)
        if self._reads is not None:
            raise _BoundError(
                f"{self._bound} reads p[{key!r}], which is not a block of the model (its "
                f"blocks: {', '.join(self._names)})"
            )
        raise KeyError(
            f"{self._bound} reads {key!r}, which it did not read at the centre of the "
            "unconstrained space, where the blocks' order was found; a bound must read the "
            "same blocks at every point"
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _bounds_there(constraint: Constraint, x: np.ndarray, bad: tuple) -> str:
    """For an error on a value outside its bounds computed from other blocks: what the
    bounds are at that value (``""`` for a constraint of fixed bounds)."""
    if not isinstance(constraint, EvaluatedBounds):
        return ""
    low, high = (
        None if b is None else float(np.broadcast_to(b, x.shape)[bad])
        for b in (constraint.lower, constraint.upper)
    )
    empty = low is not None and high is not None and high <= low
    return f" (its bounds there: lower {low}, upper {high}" + (
        ", an empty interval)" if empty else ")"
    )
