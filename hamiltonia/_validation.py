"""Argument checks shared by the public entry points.

Every error names the offending parameter and the valid range, so a user sees at once what
to change.
"""

from __future__ import annotations

import numbers

import numpy as np

#: Most parameters of a built-in target whose size is an option (``dim``, ``n_x``,
#: ``n_hidden``), checked before anything is built, since a run manifest or a command line
#: may ask for any size. At 10**6 building takes about a second (the parameter names alone,
#: about 70 MB), and a run of 1000 draws already keeps 8 GB per chain; at 10**8 building
#: never finishes.
MAX_TARGET_DIM = 1_000_000


def check_positions(x, dim: int, name: str = "x") -> np.ndarray:
    """Return ``x`` as a float array of shape ``(..., dim)`` or raise naming ``name``."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0 or arr.shape[-1] != dim:
        raise ValueError(f"{name} must have shape (..., {dim}), got shape {arr.shape}")
    return arr


def check_int(value, name: str, minimum: int = 0, maximum: int | None = None) -> int:
    """An integer ``>= minimum`` (and ``<= maximum`` when given)."""
    valid = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        raise ValueError(f"{name} must be an integer {valid}, got {value!r}")
    return int(value)


def check_flag(value, name: str, *, allow_none: bool = False) -> bool | None:
    """``True`` or ``False`` (or ``None`` when allowed): never a truthy string such as
    ``"no"``."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    allowed = "True, False or None" if allow_none else "True or False"
    raise ValueError(f"{name} must be {allowed}, got {value!r}")


def as_float(value, name: str, expected: str) -> float:
    """``float(value)``, or ``ValueError`` naming ``name`` and what was ``expected`` (also
    for an integer too large for a float, which Python reports as ``OverflowError``)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be {expected}, got {value!r:.80}")
    try:
        return float(value)
    except (OverflowError, TypeError, ValueError):
        raise ValueError(f"{name} must be {expected}, got {value!r:.80}") from None


def check_positive(value, name: str) -> float:
    """A finite real number ``> 0``."""
    value = as_float(value, name, "a positive number")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def check_probability(value, name: str, *, open_interval: bool = True) -> float:
    """A number in (0, 1) (or [0, 1] when ``open_interval`` is false)."""
    value = as_float(value, name, "a number in (0, 1)" if open_interval else "a number in [0, 1]")
    ok = 0 < value < 1 if open_interval else 0 <= value <= 1
    if not ok:
        interval = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return value


def check_design(X, y, xname: str = "X", yname: str = "y", columns: int | None = None):
    """A finite 2-D design matrix ``X`` (N, p) and a finite response ``y`` (N,), as float
    arrays; ``columns`` fixes p (a test set must match its training set)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{xname} must be a 2-D array (N, p) with N, p >= 1, got {X.shape}")
    if columns is not None and X.shape[1] != columns:
        raise ValueError(f"{xname} must have {columns} columns like the training X, got {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"{yname} must have shape ({X.shape[0]},), got {y.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{xname} must be finite (no NaN or inf)")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{yname} must be finite (no NaN or inf)")
    return X, y


#: Most warm-up iterations a run accepts: far beyond any adaptation schedule, a guard against
#: a typo (``warmup=10**12``) that would run for ever. Draws are bounded by memory instead.
MAX_WARMUP = 10**9


def finite_array(value, field: str, shape: tuple, *, finite: bool = True) -> np.ndarray:
    """``value`` as a float64 array of ``shape`` (finite unless ``finite=False``), or
    ``ValueError`` whose message starts with ``field`` (a field read back from a file)."""
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{field} is not an array of numbers") from None
    if a.shape != shape:
        raise ValueError(f"{field} has shape {a.shape}, expected {shape}")
    if finite and not np.all(np.isfinite(a)):
        raise ValueError(f"{field} holds non-finite values")
    return a
