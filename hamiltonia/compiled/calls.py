"""Calling a compiled log density from Python: at one point, or at every row of an array.

The log density is a numba ``cfunc`` (:func:`hamiltonia.compiled.targets.compile_log_prob`),
passed to these functions as a first-class function; they are compiled once per machine and
cached on disk, for every log density of that signature (compiled inside a function, as they
were, they could not be cached: 0.23 s of every process's first run, a warm-cache first run
of eight schools being 0.8 s).
"""

from __future__ import annotations

from hamiltonia import _numba_cache

# Before the decorators below: their caches go to the cache folder, not into the package.
_numba_cache.install()

from numba import njit  # noqa: E402

__all__ = ["at_point", "at_rows"]


@njit(cache=True, nogil=True)
def at_point(function, q, grad, fdata, idata):
    """``function(q, grad, fdata, idata)``: the log density at ``q``, its gradient written
    into ``grad``."""
    return function(q, grad, fdata, idata)


@njit(cache=True, nogil=True)
def at_rows(function, x, lp, grad, fdata, idata):
    """The log density at each row of ``x`` into ``lp``, its gradient into the rows of
    ``grad``."""
    for i in range(x.shape[0]):
        lp[i] = function(x[i], grad[i], fdata, idata)
