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
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hamiltonia.modelling.constraints import (
    CholeskyCorr,
    Constraint,
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


def lower(bound: float, shape=(), *, dims=None) -> Param:
    """A block of values above ``bound``."""
    return Param(LowerBounded(bound), shape, dims)


def upper(bound: float, shape=(), *, dims=None) -> Param:
    """A block of values below ``bound``."""
    return Param(UpperBounded(bound), shape, dims)


def interval(low: float, high: float, shape=(), *, dims=None) -> Param:
    """A block of values in ``(low, high)`` (a logistic transform)."""
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

    def constrain(self, z, xp=np) -> tuple[dict, object]:
        """The constrained blocks by name (each of shape ``batch + shape``) at ``z`` of shape
        ``batch + (dim,)``, and the sum of their log-Jacobians (shape ``batch``)."""
        batch = z.shape[:-1]
        values, log_jac = {}, 0.0
        for name, param in self.params.items():
            block = z[..., self._slices[name]]
            block = xp.reshape(block, batch + param.unconstrained_shape)
            x, jac = param.constraint.forward(block, xp)
            # Sum over the block's own axes, leaving the batch axes.
            axes = tuple(range(len(batch), len(batch) + jac.ndim - len(batch)))
            values[name] = x
            log_jac = log_jac + (xp.sum(jac, axis=axes) if axes else jac)
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
        parts = []
        for name, param in self.params.items():
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
            inside = np.asarray(param.constraint.contains(x))
            if not np.all(inside):
                # The first value (or event: a simplex, a matrix) outside, by its index,
                # rather than the opening of a block whose first values may be valid.
                bad = tuple(int(i) for i in np.argwhere(~inside)[0])
                at = f"{name}[{', '.join(map(str, bad))}] = " if bad else ""
                raise ValueError(
                    f"{name} must be {param.constraint.description}, got "
                    f"{at}{np.asarray(x[bad]).tolist()!r:.80}"
                )
            z = param.constraint.inverse(x)
            parts.append(np.reshape(z, (*batch, param.unconstrained_size)))
        return np.concatenate(parts, axis=-1)

    def describe(self) -> list:
        """The blocks as ``[name, shape, dims, constraint]`` rows (JSON-ready)."""
        return [
            [name, list(p.shape), None if p.dims is None else list(p.dims), repr(p.constraint)]
            for name, p in self.params.items()
        ]

    def __repr__(self):
        blocks = ", ".join(f"{n}: {p.constraint!r}{list(p.shape)}" for n, p in self.params.items())
        return f"ParameterLayout({blocks})"
