"""Writing a composition for the device: what :mod:`hamiltonia.compiled.compose` changes in
a kernel's source when it writes the fused numba-CUDA chain
(:mod:`hamiltonia.compiled.device_chain`).

A kernel is written once, for numba on the CPU. Numba CUDA has no first-class functions, no
NumPy generators and few NumPy ufuncs, so on the way to the device the composer rewrites
three kinds of call (:class:`DeviceCalls`), and nothing else:

* ``ctx.logp(q, grad, fdata, idata)``: the target's kernel, written into the module as the
  device function of the role ``target_logp``;
* ``ctx.rng.METHOD(...)``: ``METHOD(ctx.rng, ...)`` of
  :data:`~hamiltonia.compiled.pcg64_stream.GENERATOR_METHODS`, NumPy's ``PCG64`` methods on
  the chain's generator state, as in the CPU chain
  (:class:`~hamiltonia.compiled.compose.GeneratorCalls`);
* ``np.NAME(...)``: the scalar function of the same name in
  :mod:`hamiltonia.compiled.device_math`, or an error naming the kernel and the function
  where there is none (an array allocated in a kernel, a reduction).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

import numpy as np

from hamiltonia.compiled.compose import CompositionError, import_generated, module_text
from hamiltonia.compiled.device_math import PASSED_THROUGH, SCALAR_FUNCTIONS

__all__ = ["DeviceCalls", "compose_device", "device_module_text"]


def compose_device(roles: dict[str, Callable], entry: Callable, names: dict | None = None,
                   parts: dict | None = None) -> Callable:  # fmt: skip
    """The numba-CUDA kernel ``entry`` of the composition ``roles`` (see
    :func:`device_module_text`), written to a module
    of its own as :func:`~hamiltonia.compiled.compose.compose` writes the CPU's."""
    text, files = device_module_text(roles, entry, names, parts)
    return import_generated(text, files, "hd_").chain


def device_module_text(roles: dict[str, Callable], entry: Callable, names: dict | None = None,
                       parts: dict | None = None) -> tuple[str, set[str]]:  # fmt: skip
    """:func:`~hamiltonia.compiled.compose.module_text` for the device; ``roles`` fills
    ``target_logp`` with the target's kernel, which stands for ``ctx.logp``."""
    return module_text(roles, entry, names, parts, device_calls=DeviceCalls)


class DeviceCalls(ast.NodeTransformer):
    """Rewrites kernel ``fn``'s calls for the device, binding what they call through the
    composer's ``writer``; ``emitted`` collects the module names it wrote in their place."""

    def __init__(self, writer, fn):
        self.writer = writer
        self.fn = fn
        self.emitted: set[str] = set()

    def _who(self) -> str:
        return f"kernel {self.fn.__module__}.{self.fn.__qualname__}"

    def numpy_call(self, name: str) -> str:
        """The device function that stands for ``np.NAME(...)`` (a scalar's), or
        :class:`~hamiltonia.compiled.compose.CompositionError` naming the kernel and the
        function."""
        if name in PASSED_THROUGH:
            return self.writer.bind(np, "numpy", self.fn) + "." + name
        if name not in SCALAR_FUNCTIONS:
            raise CompositionError(
                f"{self._who()} calls numpy.{name}, which has no form on the device: device "
                "kernels compute with scalars and the chain's own arrays (write the loop, or "
                f"use math); the functions that do: {sorted(SCALAR_FUNCTIONS)}"
            )
        scalar = SCALAR_FUNCTIONS[name]
        return self.writer.bind(scalar, scalar.__name__, scalar)

    def _is_numpy(self, node) -> bool:
        return isinstance(node, ast.Name) and self.fn.__globals__.get(node.id) is np

    def visit_Attribute(self, node):
        self.generic_visit(node)
        # numpy.NAME read, not called (a call is visit_Call's): a constant or a type only.
        if self._is_numpy(node.value) and node.attr not in PASSED_THROUGH:
            raise CompositionError(
                f"{self._who()} uses numpy.{node.attr}, which has no form on the device"
            )
        return node

    def visit_Call(self, node):
        func = node.func
        base = func.value if isinstance(func, ast.Attribute) else None
        name = None
        if self._is_numpy(base):
            name = self.numpy_call(func.attr)
        elif isinstance(base, ast.Name) and base.id == "ctx" and func.attr == "logp":
            name = self.writer.role("target_logp")
        if name is not None:
            node.func = ast.Name(name, ast.Load())
            self.emitted.add(name)
        self.generic_visit(node)
        return node
