"""What a part hands out for the compiled path: :class:`PartKernels`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["NotCompilable", "PartKernels", "compiled_counterpart", "overrides_without_kernel"]


class NotCompilable(Exception):
    """The sampler has a part with no compiled counterpart; the message names it."""


def _floats(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64).ravel())


def _ints(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64).ravel())


@dataclass
class PartKernels:
    """A part's compiled counterpart.

    Attributes
    ----------
    functions : dict of str to function
        Role name (see :mod:`hamiltonia.compiled.roles`) to a plain Python kernel function.
    fparams : array of float64
        The part's float parameters, read by its kernels as ``PF[slot]``.
    iparams : array of int64
        The part's own integer parameters, read as ``PI[slot][2:]`` (the composer puts the
        part's statistics and auxiliary-variable offsets in front).
    stats : tuple of (name, dtype)
        The per-iteration statistics the part's kernels write, in column order from
        ``PI[slot][0]``.
    reads : tuple of str
        Statistics of other parts the kernels read (a step-size tuner reads the acceptance
        rate): their columns go into ``PI[slot]`` right after the two offsets, before the
        part's own integer parameters.
    aux : tuple of (name, size)
        Per-chain auxiliary variables (``state.aux[name]``, ``size`` values a chain) the
        kernels use, laid out in ``aux`` from ``PI[slot][1]``.
    workspace : tuple of (name, size)
        Per-chain working storage the kernels keep between calls within one compiled run
        (a normal form derived from an auxiliary variable), laid out in ``aux`` right after
        the part's auxiliary variables. It starts at zero in every run and is neither
        returned to the chain state nor saved: kernels recompute it before reading it.
    scratch_rows : int
        Rows of the ``scratch`` array the part's ``transition`` kernel needs (at least
        :data:`~hamiltonia.compiled.chain.SCRATCH_ROWS` are always there).
    """

    functions: dict[str, Callable] = field(default_factory=dict)
    fparams: np.ndarray = field(default_factory=lambda: np.zeros(0))
    iparams: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    stats: tuple[tuple[str, str], ...] = ()
    reads: tuple[str, ...] = ()
    aux: tuple[tuple[str, int], ...] = ()
    workspace: tuple[tuple[str, int], ...] = ()
    scratch_rows: int = 0

    def __post_init__(self):
        self.fparams = _floats(self.fparams)
        self.iparams = _ints(self.iparams)


def overrides_without_kernel(part, numeric: tuple[str, ...]) -> str | None:
    """The first method among ``numeric`` that a subclass of the class providing
    ``compiled`` overrides without providing its own ``compiled`` (the kernel would then
    not do what the Python method does), or ``None``."""
    mro = type(part).__mro__
    owner = next(cls for cls in mro if "compiled" in vars(cls))
    for cls in mro[: mro.index(owner)]:
        for name in numeric:
            if name in vars(cls):
                return f"{cls.__name__}.{name}"
    return None


def compiled_counterpart(part, dim: int, kind: str, **context) -> PartKernels:
    """``part.compiled(dim, **context)``, or :class:`~hamiltonia.compiled.NotCompilable`
    naming the part (``kind`` says which part of the sampler it is; ``context`` is what the
    sampler passes to it, such as the Hamiltonian a structure depends on)."""
    name = type(part).__name__
    method = getattr(part, "compiled", None)
    if method is None:
        raise NotCompilable(f"{kind} {name} has no compiled counterpart")
    # Checked before calling compiled(): a subclass that rewrites the maths may not have
    # the parent's attributes either.
    overridden = overrides_without_kernel(part, getattr(part, "numeric_methods", ()))
    if overridden is not None:
        raise NotCompilable(
            f"{kind} {name} has no compiled counterpart ({overridden} overrides the "
            "maths of the compiled parent; define compiled() too)"
        )
    kernels = method(dim, **context)
    if kernels is None:
        raise NotCompilable(f"{kind} {name} has no compiled counterpart")
    return kernels
