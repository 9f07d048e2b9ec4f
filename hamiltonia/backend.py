"""The array backend: NumPy (default) or CuPy for GPUs, through the Python array API.

The numeric code of the NumPy path takes its array namespace from here (:func:`xp`) and
moves arrays with :func:`asarray` / :func:`to_numpy`, so that the same code runs on CuPy
arrays on a GPU. Random numbers always come from the per-chain NumPy generators (so a seed
gives the same streams on every backend) and are moved to the device once per draw.

Backends:

* ``"numpy"`` (default): NumPy itself (NumPy 2 implements the array API).
* ``"cupy"``: CuPy through ``array_api_compat.cupy`` (``pip install 'hamiltonia[gpu]'``).
  Selecting it without CuPy or without a CUDA device raises an error saying which.
* ``"array_api_strict"``: the strict reference implementation, for tests: it refuses any
  NumPy-only call or any mixing of NumPy and backend arrays, which is how the test-suite
  proves the numeric code backend-neutral without a GPU.

The compiled (numba) path runs on the CPU, so it is used only with the NumPy backend.
Targets opt in by computing with ``backend.xp()`` on their inputs (the built-in synthetic
targets do); a target that does not is refused on other backends with a clear error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

__all__ = [
    "BACKENDS",
    "DeviceData",
    "asarray",
    "asmask",
    "einsum",
    "get_backend",
    "namespace_of",
    "set_backend",
    "to_numpy",
    "using",
    "xp",
]

BACKENDS = ("numpy", "cupy", "array_api_strict")
_state = {"name": "numpy", "xp": np}


def _load(name: str):
    if name == "numpy":
        return np
    if name == "cupy":
        try:
            import cupy
        except ImportError:
            raise RuntimeError(
                "backend 'cupy' needs CuPy: pip install 'hamiltonia[gpu]' on a machine with CUDA"
            ) from None
        try:
            n_devices = cupy.cuda.runtime.getDeviceCount()
        except Exception as err:  # CuPy raises its own CUDA error types
            raise RuntimeError(f"backend 'cupy': no usable CUDA device ({err})") from None
        if n_devices < 1:
            raise RuntimeError("backend 'cupy': no CUDA device found")
        import array_api_compat.cupy

        return array_api_compat.cupy
    if name == "array_api_strict":
        try:
            import array_api_strict
        except ImportError:
            raise RuntimeError(
                "backend 'array_api_strict' needs: pip install array-api-strict"
            ) from None
        return array_api_strict
    raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {name!r}")


def set_backend(name: str) -> None:
    """Select the array backend for subsequent runs (see the module documentation)."""
    namespace = _load(name)
    _state["name"], _state["xp"] = name, namespace


def get_backend() -> str:
    """The name of the current backend."""
    return _state["name"]


def xp():
    """The array namespace of the current backend."""
    return _state["xp"]


@contextlib.contextmanager
def using(name: str | None) -> Iterator[None]:
    """Run a block with backend ``name`` (``None`` keeps the current one)."""
    if name is None:
        yield
        return
    saved = (_state["name"], _state["xp"])
    set_backend(name)
    try:
        yield
    finally:
        _state["name"], _state["xp"] = saved


def asarray(x, dtype=None):
    """``x`` as a float64 (or ``dtype``) array of the current backend."""
    space = _state["xp"]
    if space is not np and isinstance(x, np.ndarray | np.generic):
        x = x.tolist() if x.ndim == 0 else x
    return space.asarray(x, dtype=space.float64 if dtype is None else dtype)


def asmask(x):
    """``x`` as a boolean array of the current backend (row masks of chains)."""
    return asarray(x, dtype=_state["xp"].bool)


def to_numpy(x) -> np.ndarray:
    """A NumPy copy (or view) of a backend array."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "get"):  # CuPy
        return x.get()
    return np.asarray(x)


def namespace_of(x):
    """The array namespace of ``x``: NumPy for NumPy arrays, scalars and lists, otherwise
    the array-API namespace of its library (CuPy, array_api_strict, ...)."""
    if isinstance(x, np.ndarray | np.generic | list | tuple | float | int):
        return np
    import array_api_compat

    return array_api_compat.array_namespace(x)


def einsum(subscripts: str, *operands):
    """``einsum`` on the operands' backend: the namespace's own where it has one (NumPy,
    CuPy), which sums each output element on its own; otherwise (the array API has no
    einsum) the broadcast product of the operands summed over the contracted indices.

    Explicit subscripts (``"cd,dr->cr"``), each index at most once per operand."""
    space = namespace_of(operands[0])
    own = getattr(space, "einsum", None)
    if own is not None:
        return own(subscripts, *operands)
    inputs, output = subscripts.replace(" ", "").split("->")
    inputs = inputs.split(",")
    if len(inputs) != len(operands):
        raise ValueError(f"einsum {subscripts!r} names {len(inputs)} operands, got {len(operands)}")
    order = sorted(set("".join(inputs)) - set(output))
    letters = list(output) + order  # the product's axes: the output's, then the summed
    product = None
    for letters_in, operand in zip(inputs, operands, strict=True):
        if len(set(letters_in)) != len(letters_in):
            raise ValueError(f"einsum {subscripts!r}: a repeated index in {letters_in!r}")
        # Put the operand's axes in the product's order, with length-one axes elsewhere.
        mine = sorted(letters_in, key=letters.index)
        term = space.permute_dims(operand, tuple(letters_in.index(c) for c in mine))
        shape = [term.shape[mine.index(c)] if c in mine else 1 for c in letters]
        term = space.reshape(term, tuple(shape))
        product = term if product is None else product * term
    if order:
        product = space.sum(product, axis=tuple(range(len(output), len(letters))))
    return product


class DeviceData:
    """Mixin for targets that keep NumPy data and compute on any backend: ``self.on(xp,
    "name")`` returns the attribute ``name`` as an array of namespace ``xp``, converted once
    and cached."""

    def on(self, space, name: str):
        value = getattr(self, name)
        if space is np:
            return value
        cache = self.__dict__.setdefault("_on_device", {})
        key = (getattr(space, "__name__", repr(space)), name)
        if key not in cache:
            cache[key] = space.asarray(value, dtype=space.float64)
        return cache[key]
