"""A target without a compiled kernel, called back from the compiled chain.

The compiled chain calls its target through a function of the fixed signature of
:mod:`hamiltonia.compiled.targets`. :func:`python_target` gives one for *any* target: a
numba ``cfunc`` that, for each gradient, enters Python (numba's object mode, which takes the
GIL) and calls the target's ``log_prob_and_grad`` on the one point. So a part written only
as a kernel runs with a target written in NumPy, autograd or JAX, and the parts of a sampler
need one form each, not two (``docs/design.rst``, "A part is written once").

The price is the call into Python for every gradient (about 10 µs beyond the target's own
cost, measured in ``tests/compiled/test_callback.py``'s benchmark note) and no vectorisation
across chains, so a sampler whose parts all have their NumPy form keeps the vectorised NumPy
path for such targets unless ``compiled=True`` asks for this one.

The target's semantics are those of the NumPy path: an exception of the run's ``reject_on``
types is a rejected proposal (NaN); any other exception, or a return of the wrong shape, is
the user's bug: the chain goes on with NaN (rejections) to the end of the compiled chunk,
which cannot be stopped from inside, and the run then raises it as a
:class:`~hamiltonia.state.ModelError` naming the chain and the position.
"""

from __future__ import annotations

import itertools
import threading
import warnings
from dataclasses import dataclass, field

import numpy as np

from hamiltonia.compiled.targets import NumbaTarget
from hamiltonia.state import ModelError, _position_text, is_rejection, model_error_text, one_point

__all__ = ["CallbackEntry", "python_target", "registered"]


@dataclass
class CallbackEntry:
    """The target behind one handle, the run's ``reject_on`` types, and the first error."""

    target: object
    reject_on: tuple = ()
    error: BaseException | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


_ENTRIES: dict[int, CallbackEntry] = {}
_HANDLES = itertools.count(1)
#: The chain each worker thread is running, for the message of a model error.
_CHAIN = threading.local()


def set_chain(chain: int) -> None:
    """Record that this thread now runs chain ``chain`` (read by error messages)."""
    _CHAIN.index = chain


def call_target(handle: int, q: np.ndarray, grad: np.ndarray) -> float:
    """The log density of the target behind ``handle`` at ``q``, its gradient written into
    ``grad``; NaN for a rejected point or after an error (kept in the entry)."""
    entry = _ENTRIES[handle]
    if entry.error is not None:
        grad[:] = np.nan
        return np.nan
    target = entry.target
    point = np.array(q, dtype=np.float64)
    chain = getattr(_CHAIN, "index", None)
    try:
        out = target.log_prob_and_grad(point)
    except BaseException as err:
        if is_rejection(err, entry.reject_on):
            grad[:] = np.nan
            return np.nan
        where = f"chain {chain}, " if chain is not None else ""
        error = ModelError(
            model_error_text(target, "log_prob_and_grad", err,
                             f"{where}position {_position_text(point, target)}"),
            chain=chain,
            position=point,
        )  # fmt: skip
        error.__cause__ = err
        if not isinstance(err, Exception):  # KeyboardInterrupt, SystemExit: as they are
            error = err
        with entry.lock:
            entry.error = entry.error or error
        grad[:] = np.nan
        return np.nan
    try:
        lp, g = one_point(target, "log_prob_and_grad", out, point.shape[0])
    except (TypeError, ValueError) as err:
        with entry.lock:
            entry.error = entry.error or err
        grad[:] = np.nan
        return np.nan
    grad[:] = g
    return lp


def _enter_python(handle, q, grad):
    """Call :func:`call_target` from compiled code (numba's object mode, which takes the
    GIL): compiled by :func:`_callback` as ``enter_python``."""
    with numba.objmode(lp="float64"):
        lp = call_target(handle, q, grad)
    return lp


def _python_log_prob(q, grad, fdata, idata):
    """The log density of the target whose handle is ``idata[0]``: compiled as a ``cfunc``
    by :func:`_callback` (object mode cannot be entered from a cfunc itself, only from a
    function it calls)."""
    return enter_python(idata[0], q, grad)


numba = None  # imported by _callback: numba costs ~0.3 s to import
enter_python = None
_CALLBACK = []


def _callback():
    """The ``cfunc`` that calls :func:`call_target` with the handle in ``idata[0]``,
    compiled once per process (about a second)."""
    global numba, enter_python
    if not _CALLBACK:
        import numba as numba_module

        from hamiltonia import _numba_cache
        from hamiltonia.compiled.targets import LOG_PROB_SIGNATURE, _signature

        numba = numba_module
        _numba_cache.install()
        with warnings.catch_warnings():
            # Object mode takes the GIL, which numba says about nogil=True: that is the point.
            warnings.simplefilter("ignore", numba.NumbaWarning)
            # Not cached: numba reloads an object-mode block from its cache wrongly
            # ("_enter_python expected 3 arguments, got 0", numba 0.6x).
            enter_python = numba.njit(nogil=True)(_enter_python)
            signature = LOG_PROB_SIGNATURE or _signature()
            _CALLBACK.append(numba.cfunc(signature)(_python_log_prob))
    return _CALLBACK[0]


def python_target(target, reject_on=()) -> NumbaTarget:
    """A :class:`~hamiltonia.compiled.NumbaTarget` that calls ``target.log_prob_and_grad``
    from compiled code, one point at a time, under a fresh handle; release it with
    :func:`registered`'s context or ``release``."""
    handle = next(_HANDLES)
    _ENTRIES[handle] = CallbackEntry(target, tuple(reject_on))
    return NumbaTarget(_callback(), np.zeros(1), np.array([handle], dtype=np.int64))


def entry_of(kernel: NumbaTarget) -> CallbackEntry | None:
    """The entry behind a kernel from :func:`python_target`, else ``None``."""
    if kernel.function is not (_CALLBACK[0] if _CALLBACK else None):
        return None
    return _ENTRIES.get(int(kernel.idata[0]))


def release(kernel: NumbaTarget) -> None:
    """Forget the target behind a kernel from :func:`python_target`."""
    if entry_of(kernel) is not None:
        _ENTRIES.pop(int(kernel.idata[0]), None)


def raise_error(kernel: NumbaTarget) -> None:
    """Raise the error the target behind ``kernel`` met during the last chunk, if any."""
    entry = entry_of(kernel)
    if entry is not None and entry.error is not None:
        error, entry.error = entry.error, None
        raise error


class registered:
    """``with registered(target, reject_on) as kernel:`` a :func:`python_target` released at
    the end."""

    def __init__(self, target, reject_on=()):
        self.kernel = python_target(target, reject_on)

    def __enter__(self) -> NumbaTarget:
        return self.kernel

    def __exit__(self, *exc):
        release(self.kernel)
