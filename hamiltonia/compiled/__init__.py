"""The compiled path: whole chains run inside numba-compiled kernels.

When every part of a sampler has a compiled counterpart (see :func:`plan_for`), the run loop
hands each chain's iterations to a kernel compiled with numba, in chunks, and runs the
chains on threads (the kernels release the GIL). Otherwise the plain NumPy path runs: a
subclass written in Python always works.

Both paths draw from the same per-chain :class:`numpy.random.Generator` in the same order,
so for the same seed they give the same draws up to floating-point rounding (NumPy's
vectorised sums and SIMD transcendental functions round differently from the compiled
loops, so long runs eventually part ways chaotically, as any two HMC implementations do).

Making a part compilable is described in the documentation ("The compiled path").
"""

from hamiltonia.compiled.plan import CompiledPlan, NotCompilable, TargetNotCompiled, plan_for
from hamiltonia.compiled.targets import LOG_PROB_SIGNATURE, NumbaTarget, compile_log_prob

__all__ = [
    "LOG_PROB_SIGNATURE",
    "CompiledPlan",
    "NotCompilable",
    "NumbaTarget",
    "TargetNotCompiled",
    "compile_log_prob",
    "plan_for",
]
