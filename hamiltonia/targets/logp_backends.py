"""The functions a target calls, made from a user's log density of one point: its gradient
and Hessian-vector product by autograd (:func:`autograd_functions`), by numba from
autograd's trace (:func:`numba_functions`, either chosen by :func:`numba_or_autograd`) or by
JAX (:func:`jax_functions`), and the checks such a function gets first: its size
(:func:`check_dim`), one number per point (:func:`check_one_number`), whether it takes a
batch of points (:func:`accepts_batches`).

They build the targets of :meth:`Target.from_logp
<hamiltonia.targets.base.Target.from_logp>`, :meth:`Target.from_jax
<hamiltonia.targets.base.Target.from_jax>` and :class:`hamiltonia.Model`;
:mod:`hamiltonia.targets.base` re-exports them. Their warnings are in
:mod:`hamiltonia.targets.logp_warnings`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from hamiltonia._validation import MAX_TARGET_DIM, check_int
from hamiltonia._warnings import warn_at_user
from hamiltonia.targets.logp_warnings import CompileWarning, RowByRowWarning

__all__ = [
    "AUTOGRAD_NUMPY_BACKENDS",
    "accepts_batches",
    "autograd_functions",
    "check_dim",
    "check_float64",
    "check_one_number",
    "jax_functions",
    "numba_functions",
    "numba_or_autograd",
]


def check_dim(dim) -> int:
    """``dim`` as an int in ``[1, MAX_TARGET_DIM]``, or ``ValueError`` naming it and the
    range: checked before the default names (one per coordinate) are built, so a size of
    ``1e9`` from a file or a command line fails at once instead of hanging."""
    return check_int(dim, "dim", minimum=1, maximum=MAX_TARGET_DIM)


def accepts_batches(f: Callable, dim: int) -> tuple[bool, str]:
    """Whether ``f`` maps a batch ``(n, dim)`` to the ``(n,)`` values it gives row by row,
    checked on three random points; and, if not, why. A function that raises on the single
    points cannot be judged and is taken row by row (the run will show its error)."""
    x = np.random.default_rng(20261123).normal(scale=0.5, size=(3, dim))
    with np.errstate(all="ignore"):
        try:
            rows = np.array([float(np.asarray(f(row))) for row in x])
        except Exception:
            return False, "it could not be evaluated at test points"
        try:
            batch = np.asarray(f(x), dtype=float)
        except Exception as err:
            return False, f"on a batch it raised {type(err).__name__}: {err}"
    if batch.shape != (3,):
        return False, f"on a batch of 3 points it returned shape {batch.shape}, not (3,)"
    if not np.allclose(batch, rows, rtol=1e-9, atol=1e-12, equal_nan=True):
        return False, "on a batch it returned values other than row by row"
    return True, ""


def autograd_functions(f: Callable, dim: int, vectorized: bool | None, label: str = "logp"):
    """``(log_prob, log_prob_and_grad, hvp, vectorized)`` of a log density ``f`` written with
    ``autograd.numpy``: the gradient by reverse mode, the Hessian-vector product by forward
    over reverse; batched when ``f`` accepts batches (``vectorized=None`` finds out, and
    announces the row-by-row fallback with its cost)."""
    import time

    import autograd

    from hamiltonia.modelling.autograd_scalars import install

    # A 0-d value indexed and used twice more (a model's scalar block): autograd's sum of its
    # gradients fails without the mend (hamiltonia.modelling.autograd_scalars).
    install()
    dim = check_dim(dim)
    if vectorized is None:
        vectorized, reason = accepts_batches(f, dim)
        if not vectorized and reason != "it could not be evaluated at test points":
            value_and_grad = autograd.value_and_grad(f)
            x = np.zeros(dim)
            began, n = time.perf_counter(), 0
            while n < 3 or (time.perf_counter() - began < 0.05 and n < 1000):
                value_and_grad(x)
                n += 1
            cost = (time.perf_counter() - began) / n
            warn_at_user(
                f"{label} is evaluated one chain at a time, {cost * 1e3:.3g} ms per gradient "
                f"here, because {reason}. Write it for a batch of positions (leading axes for "
                "the chains) to have one call serve all chains, or compile it as it is with "
                "backend='numba'; vectorized=False silences this",
                RowByRowWarning,
            )
    elif vectorized:
        # Declared, but checked: a density that sums over the batch (one number for all
        # chains) would give every chain the others' log density, a wrong posterior with
        # no error.
        ok, reason = accepts_batches(f, dim)
        if not ok and reason != "it could not be evaluated at test points":
            raise ValueError(
                f"vectorized=True, but {label} does not evaluate a batch of positions point "
                f"by point: {reason}. Return one value per position (shape (n,) for n "
                "positions), or pass vectorized=None to have it evaluated one chain at a time"
            )
    vectorized = bool(vectorized)
    if vectorized:
        make_vjp = autograd.make_vjp(f)

        def lp_grad(x):
            # One reverse pass gives every row's gradient, because rows do not interact.
            vjp, lp = make_vjp(x)
            return lp, vjp(np.ones_like(lp))

        hess_vec = autograd.make_hvp(lambda x: np.sum(f(x)))
    else:
        lp_grad = autograd.value_and_grad(f)
        hess_vec = autograd.make_hvp(f)

    def hvp(x, v):
        return hess_vec(x)[0](v)

    return f, lp_grad, hvp, vectorized


def numba_functions(f: Callable, dim: int, label: str = "logp"):
    """``(log_prob, log_prob_and_grad, hvp, kernel)`` of a log density ``f`` of one point
    written with ``autograd.numpy``, compiled by numba with a gradient generated from
    autograd's trace (:func:`hamiltonia.modelling.user_target.compile_log_density`): the
    NumPy path calls the compiled function on each chain, the compiled path calls ``kernel``
    inside the chain kernel. The Hessian-vector product (for the shadow samplers) comes from
    autograd.

    Raises
    ------
    hamiltonia.modelling.trace.TraceError
        (a ``ValueError``) when ``f`` uses a function without a compiled derivative, or
        its computation depends on the parameters' values.
    """
    from hamiltonia.modelling.user_target import compile_log_density

    dim = check_dim(dim)
    kernel = compile_log_density(f, dim, label)
    if kernel.note:
        warn_at_user(kernel.note, CompileWarning)
    batches = accepts_batches(f, dim)[0]
    _, _, row_hvp, _ = autograd_functions(f, dim, batches, label)
    hvp = row_hvp if batches else _row_by_row(row_hvp, dim)

    def log_prob(x):
        return kernel.rows(x)[0]

    return log_prob, kernel.rows, hvp, kernel


def _row_by_row(hvp: Callable, dim: int) -> Callable:
    """A Hessian-vector product of one point ``hvp(x, v)`` applied to each row of a batch:
    the compiled backends evaluate batches, and a ``logp`` written for one point has its
    autograd Hessian-vector product for one point only."""

    def batched(x, v):
        x, v = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(v, dtype=float))
        if x.ndim == 1:
            return hvp(x, v)
        rows = [hvp(a, b) for a, b in zip(x.reshape(-1, dim), v.reshape(-1, dim), strict=True)]
        return np.reshape(rows, x.shape)

    return batched


def check_one_number(f: Callable, dim: int, label: str = "logp") -> None:
    """Refuse a log density ``f`` of one point ``(dim,)`` that returns anything but one
    number there, checked at the origin and at a random point (the first at which ``f``
    evaluates; one that raises at both is left to the backends, whose errors show it).

    Raises
    ------
    TypeError
        When ``f`` returns ``None``, a string or a container.
    ValueError
        When ``f`` returns an array of another shape than ``()`` (shape ``(1,)``
        included: the log density is one number, not an array of one).
    """
    points = (np.zeros(dim), np.random.default_rng(20261123).normal(scale=0.5, size=dim))
    for x in points:
        try:
            with np.errstate(all="ignore"):
                value = f(x)
        except Exception:
            continue
        if value is None or isinstance(value, str | bytes | dict | list | tuple):
            raise TypeError(
                f"{label} returned {type(value).__name__}; it must return the log density "
                "at the point, one number"
            )
        shape = tuple(np.shape(value))
        if shape != ():
            raise ValueError(
                f"{label} must return one number, the log density at a point of shape "
                f"({dim},); it returned shape {shape} (did a sum miss its axis, or is a term "
                "not summed?)"
            )
        return


#: How a log density written with ``autograd.numpy`` is differentiated: ``None`` (the
#: default) compiles it with numba where it can and falls back to autograd with a
#: :class:`CompileWarning`.
AUTOGRAD_NUMPY_BACKENDS = (None, "numba", "autograd")


def numba_or_autograd(f: Callable, dim: int, vectorized: bool | None, label: str,
                      backend: str | None):  # fmt: skip
    """``(log_prob, log_prob_and_grad, hvp, vectorized, kernel, backend)`` of a log density
    ``f`` written with ``autograd.numpy``: compiled by numba (:func:`numba_functions`) for
    ``backend="numba"``, differentiated by autograd (:func:`autograd_functions`, ``kernel``
    ``None``) for ``"autograd"``, and for ``None`` compiled where it can be, else autograd
    with a :class:`CompileWarning` that gives numba's reason. The returned ``backend`` is
    the one used.

    Only a refusal to compile (:class:`~hamiltonia.modelling.trace.TraceError`) falls back:
    an exception of ``f`` itself is the user's bug and propagates.
    """
    from hamiltonia.modelling.trace import TraceError

    if backend not in AUTOGRAD_NUMPY_BACKENDS:
        raise ValueError(f"backend must be one of {AUTOGRAD_NUMPY_BACKENDS}, got {backend!r}")
    dim = check_dim(dim)
    # Before either backend: numba's recording would refuse a wrong shape as a compile
    # failure (and fall back to autograd, which fails later, while sampling).
    check_one_number(f, dim, label)
    if backend == "autograd":
        log_prob, lp_grad, hvp, vectorized = autograd_functions(f, dim, vectorized, label)
        return log_prob, lp_grad, hvp, vectorized, None, "autograd"
    from hamiltonia.modelling.compile_budget import over_budget

    # Over the compile budget the default backend runs autograd at once; an explicit numba
    # is compiled anyway, after a warning at the user's line (modelling.compile_budget).
    announce = (lambda message: warn_at_user(message, CompileWarning)) if backend else None
    try:
        with over_budget(announce):
            log_prob, lp_grad, hvp, kernel = numba_functions(f, dim, label)
    except TraceError as err:
        if backend == "numba":
            raise
        reason = str(err)
    else:
        return log_prob, lp_grad, hvp, True, kernel, "numba"
    # One warning for the fallback: autograd's own (row by row) joins it.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RowByRowWarning)
        log_prob, lp_grad, hvp, vectorized = autograd_functions(f, dim, vectorized, label)
    also = [str(w.message) for w in caught if issubclass(w.category, RowByRowWarning)]
    for w in caught:
        if not issubclass(w.category, RowByRowWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    warn_at_user(
        f"{label} runs with autograd on the NumPy path (often 10-100x slower per gradient) "
        f"because numba cannot compile it: {reason}."
        # Its way out (compile with numba) is no way out here.
        + (f" Also, {also[0].split('. Write it for a batch')[0]}." if also else "")
        + " backend='autograd' silences this",
        CompileWarning,
    )
    return log_prob, lp_grad, hvp, vectorized, None, "autograd"


_JAX_X64 = False


def _jax_x64() -> None:
    """Switch JAX to 64-bit floats in this process, once (the samplers' accept tests need
    them)."""
    global _JAX_X64
    if not _JAX_X64:
        import jax

        jax.config.update("jax_enable_x64", True)
        _JAX_X64 = True


def jax_functions(f: Callable, dim: int):
    """``(log_prob, log_prob_and_grad, hvp)`` of a log density ``f`` of one point written
    with ``jax.numpy``: vectorised over the chains with ``jax.vmap`` and compiled with
    ``jax.jit``; the gradient by reverse mode, the Hessian-vector product by forward over
    reverse (``jax.jvp`` of ``jax.grad``). JAX is switched to 64-bit floats
    (``jax_enable_x64``), as the samplers' accept tests need them. Each returns NumPy
    arrays."""
    try:
        import jax
    except ImportError:
        raise ImportError("Target.from_jax needs JAX: pip install 'hamiltonia[jax]'") from None
    _jax_x64()
    dim = check_dim(dim)
    check_float64(f, dim)
    batched_lp = jax.jit(jax.vmap(f))
    batched_lp_grad = jax.jit(jax.vmap(jax.value_and_grad(f)))
    batched_hvp = jax.jit(jax.vmap(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1]))

    def rows(x):
        # Also in a worker process that unpickled these functions: JAX there starts in
        # 32-bit floats, and the chains would drift from the in-process run's.
        _jax_x64()
        x = np.asarray(x, dtype=np.float64)
        return x, x.reshape(-1, dim)

    def log_prob(x):
        x, flat = rows(x)
        return np.asarray(batched_lp(flat)).reshape(x.shape[:-1])

    def log_prob_and_grad(x):
        x, flat = rows(x)
        lp, grad = batched_lp_grad(flat)
        return np.asarray(lp).reshape(x.shape[:-1]), np.asarray(grad).reshape(x.shape)

    def hvp(x, v):
        _jax_x64()
        x, v = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(v, dtype=np.float64))
        out = batched_hvp(x.reshape(-1, dim), v.reshape(-1, dim))
        return np.asarray(out).reshape(x.shape)

    return log_prob, log_prob_and_grad, hvp


#: Floating dtypes narrower than float64, which JAX makes without its 64-bit mode.
_NARROW = ("float32", "float16", "bfloat16", "complex64")
#: Modules whose functions :func:`_narrow_captures` does not look into.
_LIBRARIES = ("jax", "jaxlib", "numpy", "scipy", "autograd", "hamiltonia", "numba")


def _narrow_captures(f: Callable, depth: int = 0, seen: set | None = None) -> dict:
    """The arrays of a narrow float dtype (:data:`_NARROW`) that ``f`` reads from its
    closure or its module, by name (``name``, ``name['key']`` in a dict, ``name[0]`` in a
    list): those of the functions it calls too, to a depth of 4, not into the libraries'."""
    import types

    seen = set() if seen is None else seen
    if id(f) in seen or depth > 4 or not isinstance(f, types.FunctionType):
        return {}
    seen.add(id(f))
    module = getattr(f, "__module__", None) or ""
    if depth and module.split(".")[0] in _LIBRARIES:
        return {}
    code, names = f.__code__, set()
    stack = [code]
    while stack:  # the globals read by f and by the functions defined in it
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    cells = zip(code.co_freevars, f.__closure__ or (), strict=True)
    items = [(n, c.cell_contents) for n, c in cells if _filled(c)]
    items += [(n, f.__globals__[n]) for n in sorted(names) if n in f.__globals__]
    found = {}
    for name, value in items:
        inner = value.items() if isinstance(value, dict) else (
            enumerate(value) if isinstance(value, list | tuple) else ()
        )  # fmt: skip
        for label, v in [(name, value), *((f"{name}[{k!r}]", v) for k, v in inner)]:
            if str(getattr(getattr(v, "dtype", None), "name", "")) in _NARROW:
                found[label] = v
            elif isinstance(v, types.FunctionType):
                found.update(_narrow_captures(v, depth + 1, seen))
    return found


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def check_float64(f: Callable, dim: int) -> None:
    """Trace the log density ``f`` of one point once, at float64 zeros (JAX's 64-bit mode
    on), to find arrays of float32 data before the run does: ``jnp`` arrays made before
    that mode was on (hamiltonia switches it on when it builds the target, too late for
    arrays made before) are float32, and a ``lax.scan`` whose carry mixes them with the
    float64 parameters fails with a dtype message that does not say why.

    Raises
    ------
    ValueError
        Naming the float32 arrays ``f`` reads and the fix, when ``f`` cannot be traced in
        float64 while reading such arrays, or returns a float32 log density. Where it traces
        to a float64 value, float32 data only warn (they hold 7 significant digits). A
        trace that fails without such arrays is left for the run to show, as before.
    """
    import jax
    import jax.numpy as jnp

    def fix(narrow: dict) -> str:
        named = ", ".join(f"{k} ({v.dtype}, shape {tuple(v.shape)})" for k, v in narrow.items())
        return (
            f"{named or 'arrays of float32 data'}, float32 as JAX makes the arrays created "
            "before its 64-bit mode is on (hamiltonia switches it on when it builds the "
            "model, too late for arrays made before). Create them as NumPy float64 arrays "
            "(np.asarray(data, dtype=float); JAX reads those as float64), or as "
            "jnp.asarray(data, dtype=jnp.float64) after "
            "jax.config.update('jax_enable_x64', True)"
        )

    try:
        closed = jax.make_jaxpr(f)(jnp.zeros(dim, dtype=jnp.float64))
    except Exception as err:
        narrow = _narrow_captures(f)
        if not narrow:
            return
        # JAX's message, on one line, without its note on the traceback.
        first = " ".join(str(err).split("-----")[0].split())[:400]
        raise ValueError(
            f"logp cannot be traced in float64 (JAX: {type(err).__name__}: {first}); it reads "
            + fix(narrow)
        ) from err
    out = closed.out_avals[0].dtype if closed.out_avals else None
    narrow = _narrow_captures(f)
    if out is not None and out.name in _NARROW:
        raise ValueError(f"logp returns a {out.name} log density; it reads " + fix(narrow))
    consts = [c for c in closed.consts if str(getattr(c, "dtype", "")) in _NARROW]
    if consts:
        ids = {id(c) for c in consts}
        named = {k: v for k, v in narrow.items() if id(v) in ids} or narrow
        warn_at_user(
            "logp reads float32 data, rounded to about 7 significant digits: "
            + fix(named or {f"an array of shape {tuple(c.shape)}": c for c in consts}),
            UserWarning,
        )
