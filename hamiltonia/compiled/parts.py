"""What a part hands out for the compiled path: :class:`PartKernels`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hamiltonia.compiled.roles import METHOD_ROLES, ROLE_SLOTS

__all__ = [
    "NotCompilable",
    "PartKernels",
    "compiled_counterpart",
    "inherits_from_base",
    "normalised_params",
    "overrides_without_kernel",
    "python_form_missing",
]


class NotCompilable(Exception):
    """The sampler has a part with no compiled counterpart; the message names it."""


class TargetNotCompiled(NotCompilable):
    """Every part of the sampler compiles but the target has no numba kernel: the NumPy path
    is the one such a target is written for (autograd, NumPy), not a fallback to warn of."""


def normalised_params(params: dict, who: str) -> dict:
    """``params`` with each value in the type its kernels read: an int (from a bool, an int or
    a NumPy integer), a float, or a contiguous float64 array (from an array, list or tuple);
    anything else is a :class:`TypeError` naming ``who`` (the part) and the field."""
    out = {}
    for name, value in params.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"{who} declares a parameter named {name!r}, not an identifier")
        if isinstance(value, bool | np.bool_ | int | np.integer):
            out[name] = int(value)
        elif isinstance(value, float | np.floating):
            out[name] = float(value)
        elif isinstance(value, np.ndarray | list | tuple):
            array = np.asarray(value)
            if array.dtype.kind not in "fiub":
                raise TypeError(
                    f"{who} parameter {name!r} is an array of {array.dtype}, not of numbers"
                )
            out[name] = np.ascontiguousarray(array, dtype=np.float64).ravel()
        else:
            raise TypeError(
                f"{who} parameter {name!r} is a {type(value).__name__}; a kernel parameter is "
                "an int, a float or a float array"
            )
    return out


@dataclass
class PartKernels:
    """A part's compiled counterpart.

    Attributes
    ----------
    functions : dict of str to function
        Role name (see :mod:`hamiltonia.compiled.roles`) to a plain Python kernel function.
    params : dict of str to int, float or array
        The part's parameters by name, which its kernels read as ``own.NAME`` (and other
        parts' kernels as ``part.SLOT.NAME``): ints (bools become 0 or 1), floats, and float
        arrays (flattened). The plan lays them out; a kernel never sees their positions.
    stats : tuple of (name, dtype)
        The per-iteration statistics the part's kernels write, at ``ctx.stats[column.NAME]``.
    aux : tuple of (name, size) or (name, size, initial)
        Per-chain auxiliary variables (``state.aux[name]``, ``size`` values a chain) the
        kernels use, at ``ctx.aux[offset.NAME : offset.NAME + size]``. A chain that does not
        hold the variable yet starts it at ``initial`` (a number, or ``size`` numbers;
        default 0), once: after that it is the chain's state, carried from chunk to chunk
        and saved with checkpoints.
    workspace : tuple of (name, size)
        Per-chain working storage the kernels keep between calls within one compiled run
        (a normal form derived from an auxiliary variable), at ``ctx.aux[offset.NAME:]`` too. It
        starts at zero in every run and is neither returned to the chain state nor saved:
        kernels recompute it before reading it.
    scratch_rows : int
        Rows of ``ctx.scratch`` the part's ``transition`` kernel needs (at least
        :data:`~hamiltonia.compiled.chain.SCRATCH_ROWS` are always there).
    published : tuple of str
        Names of the part's ``workspace`` entries that its kernels fill in every iteration
        for the warm-up tuners to read (a trajectory's proposal, :attr:`~hamiltonia.
        trajectories.TrajectoryPolicy.publishes`): after each chunk the plan hands each
        chain's values of the last iteration to the tuners (:meth:`~hamiltonia.compiled.
        plan.CompiledPlan.run`, ``published``) in the iteration's ``info``.
    target_components : int
        The number of components the part's kernels evaluate through the target's kernel
        (a split integrator's subsets; 0: none, the kernels call the whole density only). The
        plan refuses a target whose kernel does not have as many
        (:attr:`~hamiltonia.compiled.NumbaTarget.components`).
    """

    functions: dict[str, Callable] = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    stats: tuple[tuple[str, str], ...] = ()
    aux: tuple[tuple, ...] = ()
    workspace: tuple[tuple[str, int], ...] = ()
    scratch_rows: int = 0
    target_components: int = 0
    published: tuple[str, ...] = ()


def _owner(mro, *names):
    """The most derived class of ``mro`` that defines any of ``names``, or ``None``."""
    return next((cls for cls in mro if any(name in vars(cls) for name in names)), None)


def _numeric_root(mro):
    """The abstract base: the first class, from the root, that declares the numeric
    methods (its kernel is a stub that returns ``None``)."""
    return next((cls for cls in reversed(mro) if "numeric_methods" in vars(cls)), None)


def overrides_without_kernel(part, numeric: tuple[str, ...], kernel=("compiled",)) -> str | None:
    """The first method among ``numeric`` that a subclass of the class providing the
    kernel overrides without providing its own (the kernel would then not do what the
    Python method does), or ``None``. The kernel is provided by the attributes ``kernel``
    (a part's ``compiled``; a target's :attr:`~hamiltonia.Target.kernel_attributes`, its
    ``numba_kernel`` or what that builds from): the class providing it is the most derived
    one that defines any of them."""
    mro = type(part).__mro__
    owner = _owner(mro, *kernel)
    # The base class that declares the numeric methods gives no kernel (its ``kernel``
    # returns None): a subclass overriding them there has no compiled parent to go stale.
    if owner is None or owner is _numeric_root(mro):
        return None
    for cls in mro[: mro.index(owner)]:
        for name in numeric:
            if name in vars(cls):
                return f"{cls.__name__}.{name}"
    return None


def python_form_missing(part, dim: int | None = None, **context) -> str | None:
    """The first numeric method (of ``part.numeric_methods``) that has no Python form
    matching the part's kernel, as ``"Class.method"``, or ``None``: a part may be written
    once, as a kernel, and then runs on the compiled path only (with a Python target called
    back, :mod:`hamiltonia.compiled.callback`).

    A method is missing when the one the part inherits is abstract (marked with
    :func:`abc.abstractmethod` in the part's base class), and stale when the part's class
    overrides ``compiled`` below a class that paired that method with a kernel of its own
    and **replaces that kernel**: the part hands out another function for one of the
    method's roles (:data:`~hamiltonia.compiled.roles.METHOD_ROLES`) than the pairing
    class's ``compiled`` does for the same part. A length policy that subclasses
    :class:`~hamiltonia.trajectories.MetropolisTrajectory` and replaces the
    ``trajectory_length`` kernel alone inherits a ``n_steps`` that draws the parent's
    lengths; its inherited ``transition``, whose kernel it keeps, is still its own. A
    method the roles table does not know is stale when any kernel was replaced.

    Parameters
    ----------
    part : object
        The part.
    dim : int, optional
        The dimension to build the kernels for, to compare them (default: the part's own
        ``dim``, else 1: the functions a part hands out do not depend on it).
    **context
        What the sampler passes to ``compiled`` (a structure's ``hamiltonian``). Where the
        kernels cannot be built here, an inherited method of a replaced ``compiled`` is
        taken to be stale, as it may be.
    """
    mro = type(part).__mro__
    numeric = getattr(part, "numeric_methods", ())
    kernel_owner = _owner(mro, "compiled")
    if kernel_owner is None:
        return None
    root = _numeric_root(mro)
    replaced: dict[type, set[str] | None] = {}  # per pairing class, the roles replaced
    for name in numeric:
        method = getattr(type(part), name, None)
        if method is None or getattr(method, "__isabstractmethod__", False):
            return f"{type(part).__name__}.{name}"
        owner = _owner(mro, name)
        paired = owner is not root and "compiled" in vars(owner)
        if not (paired and mro.index(owner) > mro.index(kernel_owner)):
            continue
        if owner not in replaced:
            replaced[owner] = _replaced_roles(part, owner, dim, context)
        roles = replaced[owner]
        if roles is None or roles & set(_method_roles(part, name, roles)):
            return f"{type(part).__name__}.{name}"
    return None


def _method_roles(part, name: str, replaced: set[str]) -> tuple[str, ...]:
    """The roles whose kernels carry the maths of ``part``'s method ``name``: the part's
    ``method_roles``, the table's, the role of that name, or (unknown) every replaced one."""
    declared = getattr(part, "method_roles", None) or {}
    if name in declared:
        return tuple(declared[name])
    if name in METHOD_ROLES:
        return METHOD_ROLES[name]
    return (name,) if name in ROLE_SLOTS else tuple(replaced)


def _replaced_roles(part, owner: type, dim: int | None, context: dict) -> set[str] | None:
    """The roles for which ``part.compiled`` hands out another function than ``owner``'s
    ``compiled`` gives the same part, or ``None`` where either cannot be built here or hands
    out no kernels (the caller then takes the inherited methods as stale, as they may be)."""
    if dim is None:
        own = getattr(part, "dim", None)
        dim = own if isinstance(own, int) and own > 0 else 1
    try:
        mine = part.compiled(dim, **context)
        theirs = owner.compiled(part, dim, **context)
    except Exception:  # e.g. a structure's compiled() without the sampler's Hamiltonian
        return None
    if not (isinstance(mine, PartKernels) and isinstance(theirs, PartKernels)):
        return None
    roles = set(mine.functions) | set(theirs.functions)
    return {role for role in roles if mine.functions.get(role) is not theirs.functions.get(role)}


def inherits_from_base(part, name: str) -> bool:
    """Whether ``part``'s method ``name`` is its abstract base class's (the class that
    declares ``numeric_methods``), or missing: no class of the part's writes its own."""
    mro = type(part).__mro__
    owner = _owner(mro, name)
    return owner is None or owner is _numeric_root(mro)


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
    if not isinstance(kernels, PartKernels):
        raise TypeError(
            f"{kind} {name}.compiled() returned {type(kernels).__name__}, not a PartKernels"
        )
    kernels.params = normalised_params(kernels.params, f"{kind} {name}")
    return kernels
