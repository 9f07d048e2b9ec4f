"""Chain states and the guarded evaluation of a target.

A :class:`PhaseState` holds a batch of points in phase space, one row per chain, with the log
density and its gradient cached at the position so that no part evaluates the target twice.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

import numpy as np

from hamiltonia import backend

__all__ = [
    "ChainState",
    "ModelError",
    "PhaseState",
    "check_reject_on",
    "evaluate_target",
    "is_rejection",
    "model_error_text",
    "rejecting",
]


@dataclass
class PhaseState:
    """A batch of phase-space points, with any per-chain variables the parts declare.

    Attributes
    ----------
    q : ndarray, shape ``(chains, dim)``
        Positions.
    p : ndarray, shape ``(chains, dim)``
        Momenta. They are kept between iterations (a partial refresh mixes the old momentum
        into the new one) and saved with a checkpoint.
    log_prob : ndarray, shape ``(chains,)``
        :math:`\\log\\pi(q)`; ``nan`` where the target could not be evaluated.
    grad : ndarray, shape ``(chains, dim)``, or None
        :math:`\\nabla_q \\log\\pi(q)`; ``None`` for gradient-free samplers.
    aux : dict of str to ndarray
        Auxiliary variables, each with the chains on its first axis: the sign of a magnetic
        field, a random mass, a permutation... A part declares the ones its kernels use in
        its :class:`~hamiltonia.compiled.parts.PartKernels` (``aux``; a variable not set
        yet starts at zero) and sets them on the NumPy path; :meth:`select`, :meth:`take`
        and :meth:`copy` treat them
        like ``q``, and checkpoints save them.
    """

    q: np.ndarray
    p: np.ndarray
    log_prob: np.ndarray
    grad: np.ndarray | None
    aux: dict = field(default_factory=dict)

    def _map(self, fn) -> PhaseState:
        def one(a):
            return None if a is None else fn(a)

        return PhaseState(
            one(self.q),
            one(self.p),
            one(self.log_prob),
            one(self.grad),
            {k: fn(v) for k, v in self.aux.items()},
        )

    def copy(self) -> PhaseState:
        """A deep copy of the arrays."""
        xp = backend.xp()
        return self._map(lambda a: xp.asarray(a, copy=True))

    def with_momentum(self, p: np.ndarray) -> PhaseState:
        """The same positions (and auxiliary variables) with momenta ``p``."""
        return replace(self, p=p, aux=dict(self.aux))

    def select(self, mask, other: PhaseState) -> PhaseState:
        """Rows of ``self`` where ``mask`` (shape ``(chains,)``) is true, rows of ``other``
        elsewhere."""
        xp = backend.xp()

        def pick(a, b):
            if a is None:
                return None
            m = xp.reshape(mask, mask.shape + (1,) * (a.ndim - 1))
            return xp.where(m, a, b)

        def pick_aux(name):
            # A variable one side has not set yet is zero there (the parts' convention).
            a, b = self.aux.get(name), other.aux.get(name)
            a = xp.zeros_like(b) if a is None else a
            return pick(a, xp.zeros_like(a) if b is None else b)

        return PhaseState(
            pick(self.q, other.q),
            pick(self.p, other.p),
            pick(self.log_prob, other.log_prob),
            pick(self.grad, other.grad),
            {k: pick_aux(k) for k in {**self.aux, **other.aux}},
        )

    def take(self, rows) -> PhaseState:
        """The chains ``rows`` (an index array or slice), as a new state."""
        if isinstance(rows, slice):
            return self._map(lambda a: a[rows, ...])
        xp = backend.xp()
        index = xp.asarray(np.asarray(rows), dtype=xp.int64)
        return self._map(lambda a: xp.take(a, index, axis=0))

    @property
    def finite(self):
        """Chains whose position, log density and gradient are all finite."""
        xp = backend.xp()
        ok = xp.isfinite(self.log_prob) & xp.all(xp.isfinite(self.q), axis=-1)
        if self.grad is not None:
            ok = ok & xp.all(xp.isfinite(self.grad), axis=-1)
        return ok


@dataclass
class ChainState:
    """Everything a sampler carries from one iteration to the next, for all chains.

    Attributes
    ----------
    phase : PhaseState
        The current points.
    step_size : ndarray, shape ``(chains,)``
        The current step size of each chain (tuners change it during warm-up).
    """

    phase: PhaseState
    step_size: np.ndarray


class ModelError(RuntimeError):
    """The user's log density or gradient raised an exception.

    The message names the chain and the position (and, from :func:`hamiltonia.sample`, the
    iteration); the original exception is chained as ``__cause__``. An exception is a bug to
    show, never a silent rejection: a model that means "outside the support" returns
    ``-inf``, or declares its exception types with ``sample(..., reject_on=(...))``.

    Attributes
    ----------
    chain : int or None
        The chain whose position raised.
    position : ndarray or None
        That position.
    """

    def __init__(self, message: str, chain=None, position=None):
        super().__init__(message)
        self.chain = chain
        self.position = position

    def renumbered(self, chains) -> ModelError:
        """The same error for a batch that held only the chains ``chains`` (row ``i`` of the
        batch is chain ``chains[i]``): the chain named is the run's."""
        if self.chain is None:
            return self
        chain = int(chains[self.chain])
        message = self.args[0].replace(f"(chain {self.chain},", f"(chain {chain},", 1)
        error = ModelError(message, chain, self.position)
        error.__cause__ = self.__cause__
        return error

    def during(self, where: str) -> ModelError:
        """The same error with ``where`` (e.g. "iteration 12 of warm-up") in the message."""
        error = ModelError(f"{self.args[0]}, {where}", self.chain, self.position)
        error.__cause__ = self.__cause__
        return error


_REJECT_ON: ContextVar[tuple] = ContextVar("hamiltonia_reject_on", default=())
#: Where a compiled chain runs: ``"cpu"`` (numba, one thread per core) or ``"cuda"`` (the
#: fused numba-CUDA kernel, one GPU thread per chain: :mod:`hamiltonia.compiled.device_chain`).
DEVICES = ("cpu", "cuda")
#: Where the compiled chains of the runs in this context run (``hamiltonia.sample``'s
#: ``device``).
_DEVICE: ContextVar[str] = ContextVar("hamiltonia_device", default="cpu")


def check_reject_on(reject_on) -> tuple:
    """``reject_on`` as a tuple of exception classes, or ``ValueError`` naming it."""
    if reject_on is None:
        return ()
    # A string is iterable: taken apart, "ValueError" would be refused as its letter 'V'.
    if isinstance(reject_on, type | str):
        reject_on = (reject_on,)
    try:
        types = tuple(reject_on)
    except TypeError:
        types = (reject_on,)
    for t in types:
        if isinstance(t, str):
            dotted = t and all(part.isidentifier() for part in t.split("."))
            example = t if dotted else "(FloatingPointError, ZeroDivisionError)"
            raise ValueError(
                "reject_on must be an Exception subclass or a tuple of them, not the string "
                f"{t!r}: pass the exception class itself, e.g. reject_on={example}"
            )
        if not (isinstance(t, type) and issubclass(t, Exception)):
            raise ValueError(
                "reject_on must be an Exception subclass or a tuple of them (e.g. "
                f"(FloatingPointError, ZeroDivisionError)), got {t!r}"
            )
    return types


#: Words of a linear-algebra error where the mathematics is undefined at the point (NumPy's
#: and SciPy's messages for a factorisation or solve of a matrix that is not positive
#: definite, or singular): a rejected proposal whatever ``reject_on`` says, as Stan rejects a
#: proposal whose ``cholesky_decompose`` fails.
_UNDEFINED_LINEAR_ALGEBRA = ("positive definite", "singular matrix", "is singular")


def is_rejection(err: BaseException, reject_on: tuple) -> bool:
    """Whether the target's exception ``err`` means "outside the support": one of the run's
    ``reject_on`` types, or a ``LinAlgError`` of a matrix that is not positive definite or
    is singular (:data:`_UNDEFINED_LINEAR_ALGEBRA`)."""
    if isinstance(err, reject_on):
        return True
    if isinstance(err, np.linalg.LinAlgError):
        text = str(err).lower()
        return any(words in text for words in _UNDEFINED_LINEAR_ALGEBRA)
    return False


def model_error_text(target, what: str, err: BaseException, where: str) -> str:
    """The message of a :class:`ModelError`: what raised, where, and (the error may mean
    "outside the support" to its author) how to declare it a rejection instead."""
    name = type(err).__name__
    return (
        f"{type(target).__name__}.{what} raised {name}: {err} ({where}). If {name} means "
        f"that this point is outside the model's support, pass reject_on=({name},) to "
        "hamiltonia.sample to reject such proposals as Stan does; otherwise it is a bug in "
        "the model"
    )


@contextmanager
def rejecting(reject_on):
    """Within this block, exceptions of the types ``reject_on`` raised by a target mean
    "outside the support": the point is a rejected proposal (recorded as divergent), as
    Stan treats its domain errors. Any other exception raises :class:`ModelError`."""
    token = _REJECT_ON.set(check_reject_on(reject_on))
    try:
        yield
    finally:
        _REJECT_ON.reset(token)


def _position_text(row, target=None) -> str:
    """The position of an error, as sampled; for a target whose reported values are not its
    coordinates (a :class:`~hamiltonia.Model`'s constrained blocks), those values too, by
    name, so that the user reads their own parameters (``tau=5.88``, not ``1.77``)."""
    text = np.array2string(np.asarray(row, dtype=float), precision=6, threshold=8)
    if target is None or not getattr(target, "constrains", False):
        return text
    try:
        values = np.ravel(np.asarray(target.constrain(np.asarray(row, dtype=float)), float))
    except Exception:  # the user's generated quantities may raise too: the position stands
        return text
    names = list(target.reported_names)
    shown = ", ".join(f"{n}={v:.6g}" for n, v in zip(names[:8], values[:8], strict=False))
    return f"{text}; as reported: {shown}{', ...' if len(names) > 8 else ''}"


def _evaluate_rows(target, q, with_grad: bool):
    flat = backend.to_numpy(q).reshape(-1, q.shape[-1])
    lps = np.full(flat.shape[0], np.nan)
    grads = np.full(flat.shape, np.nan) if with_grad else None
    reject_on = _REJECT_ON.get()
    what = "log_prob_and_grad" if with_grad else "log_prob"
    for i, row in enumerate(flat):
        try:
            if with_grad:
                out = target.log_prob_and_grad(backend.asarray(row))
            else:
                out = target.log_prob(backend.asarray(row)), None
        except Exception as err:
            if is_rejection(err, reject_on):
                continue  # "outside the support": a rejected proposal
            raise ModelError(
                model_error_text(target, what, err,
                                 f"chain {i}, position {_position_text(row, target)}"),
                chain=i,
                position=np.array(row),
            ) from err  # fmt: skip
        lps[i], g = one_point(target, what, out, flat.shape[1], with_grad)
        if with_grad:
            grads[i] = g
    lps = backend.asarray(lps.reshape(q.shape[:-1]))
    return lps, None if grads is None else backend.asarray(grads.reshape(q.shape))


def one_point(target, what: str, out, dim: int, with_grad: bool = True):
    """The log density (a float) and gradient (``(dim,)`` or ``None``) that ``target.what``
    returned as ``out`` for one point, or ``TypeError``/``ValueError`` saying what is wrong
    with them (a pair of numbers of the right shapes is expected)."""
    lp, g = _pair(target, what, out)
    _checked_returns(target, what, lp, g, with_grad)
    lp = np.asarray(backend.to_numpy(lp), dtype=float)
    if lp.size != 1 or lp.ndim > 1:
        raise ValueError(
            f"{type(target).__name__}.{what} returned a log density of shape "
            f"{lp.shape} for one point; expected a scalar"
        )
    return float(lp.reshape(-1)[0]), _one_gradient(target, what, g, dim) if with_grad else None


def _one_gradient(target, what, g, dim):
    g = backend.to_numpy(g)
    if g.size != dim:
        raise ValueError(
            f"{type(target).__name__}.{what} returned a gradient of shape {g.shape} for one "
            f"point; expected ({dim},)"
        )
    return g.reshape(dim)


def _is_numeric(value) -> bool:
    """Whether ``value`` is a real number or an array of them; cheap for device arrays (it
    reads the dtype, never copies)."""
    if value is None or isinstance(value, str | bytes | bool | np.bool_ | complex):
        return False
    if isinstance(value, np.complexfloating):
        return False
    if isinstance(value, int | float | np.number):
        return True
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(value).dtype
        except (TypeError, ValueError):
            return False
    try:
        return np.dtype(dtype).kind in "fiu"
    except TypeError:  # a non-NumPy dtype (array_api_strict): numeric unless it is bool
        return "bool" not in str(dtype)


def _pair(target, what, out):
    """The (log density, gradient) pair a target returned, or ``TypeError`` saying what came
    back instead (checked outside the call: a bad return is not the model raising)."""
    if isinstance(out, tuple | list) and len(out) == 2:
        return out
    size = f" of length {len(out)}" if isinstance(out, tuple | list) else ""
    raise TypeError(
        f"{type(target).__name__}.{what} returned {type(out).__name__}{size}; expected a pair "
        "(log density, gradient)"
    )


def _checked_returns(target, what, lp, g, with_grad: bool = False) -> None:
    """``TypeError`` naming what the target returned where it should have returned numbers
    (``None``, a string, an object)."""
    if not _is_numeric(lp):
        raise TypeError(
            f"{type(target).__name__}.{what} returned {type(lp).__name__} for the log density; "
            "expected a float (one point) or a float array of shape (...,) (a batch)"
        )
    if (with_grad or g is not None) and not _is_numeric(g):
        raise TypeError(
            f"{type(target).__name__}.{what} returned {type(g).__name__} for the gradient; "
            "expected a float array of the position's shape"
        )


def _shape_of(value):
    return None if value is None else tuple(getattr(value, "shape", np.shape(value)))


def _shapes_fit(xp, lp, g, q) -> bool:
    try:
        lp_shape = xp.asarray(lp).shape
    except (TypeError, ValueError):
        return False
    if lp_shape != q.shape[:-1]:
        return False
    return g is None or tuple(getattr(g, "shape", np.shape(g))) == q.shape


def evaluate_target(target, q, with_grad: bool = True):
    """Evaluate ``target`` at ``q``, telling a bad point from a bug.

    A log density or gradient that is not finite is returned as ``nan`` for that row only,
    so that the sampler can reject the proposal and record it as divergent; ``-inf`` log
    densities (outside the support) are kept as they are. An exception raised by the target
    is a bug in the user's model and raises :class:`ModelError` naming the chain and the
    position (the batch is retried row by row to find it), unless its type was declared
    with :func:`rejecting` (``sample(..., reject_on=...)``): that row is then rejected. A
    return value that is not numbers raises ``TypeError`` and one of the wrong shape
    ``ValueError``, each naming what was returned. Arrays are of the current
    :mod:`~hamiltonia.backend`.

    Returns
    -------
    log_prob : array (...)
    grad : array (..., dim) or None
    """
    xp = backend.xp()
    what = "log_prob_and_grad" if with_grad else "log_prob"
    with np.errstate(all="ignore"):
        if getattr(target, "_row_by_row", False) and q.ndim > 1:
            lp, g = _evaluate_rows(target, q, with_grad)
        else:
            try:
                if with_grad:
                    out = target.log_prob_and_grad(q)
                else:
                    out = target.log_prob(q), None
            except Exception:
                # Row by row: rows raising a declared type are rejected, the first other
                # exception raises ModelError naming its chain and position.
                out = _evaluate_rows(target, q, with_grad)
            lp, g = _pair(target, what, out)
            _checked_returns(target, what, lp, g, with_grad)
            if not _shapes_fit(xp, lp, g, q) and q.ndim > 1:
                # A target written for one point at a time: evaluate rows from now on.
                warnings.warn(
                    f"{type(target).__name__}.{what} returned shapes "
                    f"{_shape_of(lp)} and {_shape_of(g)} for a batch of shape {q.shape}, "
                    f"not {q.shape[:-1]} and {q.shape if with_grad else None}: it does not "
                    "evaluate a batch (..., dim) as the Target contract asks; evaluating "
                    "chains one at a time (slower)",
                    RuntimeWarning,
                    stacklevel=2,
                )
                target._row_by_row = True
                lp, g = _evaluate_rows(target, q, with_grad)
        lp = xp.asarray(lp, dtype=xp.float64)
        if lp.shape != q.shape[:-1]:
            raise ValueError(
                f"{type(target).__name__}.{what} returned a log density of shape {lp.shape}; "
                f"expected {q.shape[:-1]}"
            )
        if g is not None:
            g = xp.asarray(g, dtype=xp.float64)
            if g.shape != q.shape:
                raise ValueError(
                    f"{type(target).__name__}.{what} returned a gradient of shape {g.shape}; "
                    f"expected {q.shape}"
                )
        bad = xp.isnan(lp) | (lp == xp.inf)
        if g is not None:
            bad = bad | ~xp.all(xp.isfinite(g), axis=-1)
        lp = xp.where(bad, xp.nan, lp)
    return lp, g
