"""How long numba would take to compile a recorded log density, known before it starts.

The compiled path writes a log density and its gradient as straight-line code, one
statement per recorded operation (:mod:`~hamiltonia.modelling.adjoint_source`), but for the
loops found again in the recording (:mod:`~hamiltonia.modelling.loop_rolling`), written as
loops with their body once. A Python loop whose passes differ (a slice growing with the
pass, a branch on the pass's index) stays written out, one set of operations per pass, and
numba's and LLVM's time grows with the function's size, faster than linearly once it holds
many arrays: a model that takes seconds at 25 passes can take minutes at 200, inside LLVM,
with nothing to say so. The recording itself takes milliseconds, so the size is known
first: :func:`estimated_seconds` predicts the compile time from the counts of scalar and
array operations written (:func:`operation_counts`), and :func:`check_budget` refuses to
start a compile predicted to take more than :data:`COMPILE_BUDGET_SECONDS`, with a
:class:`CompileBudgetError` (a :class:`~hamiltonia.modelling.trace.TraceError`) that names the
size, the prediction and the ways out. The default backend of :class:`hamiltonia.Model`
then runs the model with autograd at once, with a ``CompileWarning`` giving that reason;
an explicit ``backend="numba"`` compiles it anyway, warned first (:func:`over_budget`).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

import numpy as np

from hamiltonia.modelling.trace import Graph, TraceError

__all__ = [
    "COMPILE_BUDGET_SECONDS",
    "CompileBudgetError",
    "check_budget",
    "estimated_seconds",
    "operation_counts",
    "over_budget",
]

#: The longest compile of a user's log density (predicted, :func:`estimated_seconds`) that
#: the default backend starts; over it the model runs with autograd at once, with a warning.
#:
#: Measured on the development machine (two cores shared with other work, load average 3-5;
#: numba 0.68, llvmlite 0.50), each a cold compile (a fresh process, an empty kernel folder)
#: of a model written with a Python loop over ``T`` data points, written out pass by pass (as
#: all loops were before :mod:`~hamiltonia.modelling.loop_rolling`; these loops are now
#: compiled as loops); ``S`` and ``A`` are its recorded operations on scalars and on
#: arrays, "predicted" :func:`estimated_seconds`:
#:
#: ===================================  ======  =====  ===  ============  =========
#: model                                T       S      A    compile (s)   predicted
#: ===================================  ======  =====  ===  ============  =========
#: ARMA(1,1)                            5       75     5    1.4           1.4
#: ARMA(1,1)                            20      210    5    1.8           1.9
#: ARMA(1,1)                            50      480    5    3.0           2.9
#: ARMA(1,1)                            80      750    5    5.4           4.1
#: ARMA(1,1)                            120     1110   5    6.0           6.0
#: ARMA(1,1)                            200     1830   5    8.1           10.7
#: ARMA(1,1)                            300     2730   5    14.3          18.3
#: ARMA(1,1)                            600     5430   5    50.4          52.9
#: GARCH(1,1)                           50      489    5    4.3           3.0
#: GARCH(1,1)                           100     939    5    7.7           5.1
#: GARCH(1,1)                           200     1839   5    15.2          10.8
#: two-state HMM, forward algorithm     25      461    89   12.5          12.7
#: two-state HMM, forward algorithm     50      911    164  43.5          46.6
#: a loop over groups of 5 (vectors)    25      88     106  17.1          16.4
#: a loop over groups of 5 (vectors)    50      163    206  76.3          72.9
#: ===================================  ======  =====  ===  ============  =========
#:
#: The recording and the source of the largest took 0.4 s. Both kinds of operation cost more
#: than linearly in their number: a scalar one about 3 ms at first, and 13 ms each between
#: T = 300 and 600 of the ARMA; the array ones (each an allocation and a loop, with
#: reference counting) as :math:`A^{2.35}` (both the HMM and the groups, doubling ``T``,
#: took 3.5-4.5 times as long), so the HMM over 100 points is predicted at 3 minutes and
#: over 200 at 16. The predictions are within a factor 1.5 of the measurements. The budget
#: bounds the wait at ``hm.Model(...)``: 30 s is the issue's own bar for a cold build
#: (ARMA(1,1) over its data set's 200 points, predicted at 11 s, is compiled; over 600
#: points, 53 s, it is not, nor is the HMM over 50, 47 s). Past it autograd starts at once,
#: slower per gradient (175 ms for the ARMA over 200 points here, 100 ms for the HMM over
#: 50), so for a long run the compile may still pay: ``backend="numba"`` asks for it, and
#: the warning says so.
COMPILE_BUDGET_SECONDS = 30.0

#: The fit of the measurements above: a fixed cost (numba's start on a new function) and the
#: scalar operations' cost, ``_PER_SCALAR * S + _PER_SCALAR_PAIR * S ** 2`` (s).
_FIXED, _PER_SCALAR, _PER_SCALAR_PAIR = 1.2, 0.003, 1.2e-6
#: The array operations' cost, ``_PER_ARRAY * A ** _ARRAY_POWER`` (s).
_PER_ARRAY, _ARRAY_POWER = 2.6e-4, 2.35


class CompileBudgetError(TraceError):
    """A recorded log density whose compile is predicted to take longer than the budget
    (:data:`COMPILE_BUDGET_SECONDS`); the message names its size and the ways out.

    Attributes
    ----------
    scalar_ops, array_ops : int
        The recorded operations on scalars and on arrays.
    seconds : float
        The predicted compile time.
    """

    def __init__(self, message: str, scalar_ops: int, array_ops: int, seconds: float):
        super().__init__(message)
        self.scalar_ops, self.array_ops, self.seconds = scalar_ops, array_ops, seconds


def operation_counts(graph: Graph, loops: list | None = None) -> tuple[int, int]:
    """``(scalar, array)``: the operations of ``graph`` written in the compiled code whose
    value is a number and those whose value is an array (the input excluded): a rolled loop
    (:class:`~hamiltonia.modelling.loop_rolling.Loop`, of ``loops``) counts its body once."""
    written = np.ones(len(graph.ops), dtype=bool)
    written[0] = False
    for loop in loops or ():
        written[loop.start + loop.period : loop.stop] = False
    ops = [op for op, w in zip(graph.ops, written, strict=True) if w]
    arrays = int(sum(np.ndim(op.value) > 0 for op in ops))
    return len(ops) - arrays, arrays


def estimated_seconds(scalar_ops: int, array_ops: int) -> float:
    """The predicted cold compile time (s) of a recorded log density with ``scalar_ops``
    (:math:`S`) and ``array_ops`` (:math:`A`) operations,

    .. math::

        1.2 + 0.003\\,S + 1.2 \\cdot 10^{-6} S^2 + 2.6 \\cdot 10^{-4} A^{2.35},

    fitted to the measurements of :data:`COMPILE_BUDGET_SECONDS`."""
    scalar = _PER_SCALAR * scalar_ops + _PER_SCALAR_PAIR * float(scalar_ops) ** 2
    return _FIXED + scalar + _PER_ARRAY * float(array_ops) ** _ARRAY_POWER


#: What is done with a log density over the budget: ``None`` refuses it
#: (:class:`CompileBudgetError`); a function of the message compiles it anyway after calling
#: it (the explicit ``backend="numba"`` of :class:`hamiltonia.Model` warns so).
_OVER: contextvars.ContextVar = contextvars.ContextVar("hamiltonia_over_budget", default=None)


@contextlib.contextmanager
def over_budget(handler: Callable[[str], None] | None) -> Iterator[None]:
    """Within the block, a log density over the budget is compiled anyway after
    ``handler(message)`` is called (``None``: refused, the default)."""
    token = _OVER.set(handler)
    try:
        yield
    finally:
        _OVER.reset(token)


def check_budget(graph: Graph, label: str = "logp", loops: list | None = None,
                 cached: Callable[[], bool] | None = None) -> None:  # fmt: skip
    """Refuse (or, inside :func:`over_budget`, announce) a recorded log density predicted
    to take longer than :data:`COMPILE_BUDGET_SECONDS` to compile (its rolled loops,
    ``loops``, counted once: :func:`operation_counts`), unless ``cached()`` (asked only
    then) says that numba's disk cache holds its compilation already: loading takes no
    compile, so a model once compiled with ``backend="numba"`` is compiled by default too.

    Raises
    ------
    CompileBudgetError
        Over the budget, outside :func:`over_budget`.
    """
    scalar_ops, array_ops = operation_counts(graph, loops)
    seconds = estimated_seconds(scalar_ops, array_ops)
    if seconds <= COMPILE_BUDGET_SECONDS or (cached is not None and cached()):
        return
    what = (
        f"{label} is written as {scalar_ops + array_ops:,} operations ({array_ops:,} on "
        f"arrays), which numba would take about {seconds:,.0f} s to compile (over the compile "
        f"budget of {COMPILE_BUDGET_SECONDS:g} s; a Python loop compiles as a loop when its "
        "passes repeat the same operations, and is written out pass by pass when they "
        "differ, as when a pass branches on its index or the passes are few)"
    )
    handler = _OVER.get()
    if handler is None:
        raise CompileBudgetError(
            f"{what}. Vectorise the loop (whole-array operations, np.cumsum for a running "
            "sum) to make it compile in seconds, or pass backend='numba' to compile it anyway",
            scalar_ops,
            array_ops,
            seconds,
        )
    handler(f"{what}; compiling it, as backend='numba' asks. Vectorise the loop to make it "
            "compile in seconds, or pass backend='autograd' to start at once")  # fmt: skip
