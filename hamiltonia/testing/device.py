"""A sampler's fused device kernel compiles for a GPU, checked on a machine without one.

The CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) runs the device chain in Python, which is how
:func:`~hamiltonia.testing.paths.assert_paths_agree` with ``device="cuda"`` checks its draws;
it does not check that numba CUDA compiles it. :func:`check_device_compiles` does: it
composes the sampler's device kernel (:mod:`hamiltonia.compiled.device_chain`) and compiles
it to PTX for a compute capability, which needs numba-cuda and NVVM (``pip install
'hamiltonia[cuda]'``) but no GPU or driver. A part whose kernel uses what the device has not
(an array allocated in the kernel, a NumPy reduction, an exception) fails here, naming it.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

__all__ = ["check_device_compiles", "device_compiler_available"]


def device_compiler_available() -> bool:
    """Whether numba-cuda (the maintained CUDA target; numba's built-in one is deprecated
    and refuses some of the composed kernels) can compile PTX here: NVVM found, GPU or
    not, the simulator off."""
    import importlib.util

    from numba.core import config

    if config.ENABLE_CUDASIM or importlib.util.find_spec("numba_cuda") is None:
        return False
    try:
        from numba.cuda.cudadrv import nvvm

        return bool(nvvm.is_available())
    except Exception:  # numba CUDA cannot load its compiler here
        return False


@contextlib.contextmanager
def _capability(cc: tuple[int, int]):
    """Numba CUDA compiles a device function that a kernel calls for the current GPU's
    compute capability, asking the driver for it; without a driver, answer ``cc``."""
    from numba import cuda
    from numba.cuda import dispatcher

    if cuda.is_available():
        yield
        return
    import types

    asked = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = asked


def check_device_compiles(target, sampler: Any = "nuts", *, chains: int = 2,
                          cc: tuple[int, int] = (8, 0), **options) -> str:  # fmt: skip
    """Compile ``sampler``'s device kernel on ``target`` to PTX for compute capability
    ``cc``, and return the PTX.

    Parameters
    ----------
    target : Target or str
        The target (or its registered name); its numba kernel is compiled for the device
        with the parts'.
    sampler : str or Sampler
        A registered name built with ``options``, or a ready sampler.
    chains : int
        Chains of the launch whose argument types are compiled (the kernel is the same for
        any number).
    cc : tuple of int
        Compute capability, ``(8, 0)`` (A100) by default; ``(9, 0)`` for an H100.

    Raises
    ------
    RuntimeError
        numba CUDA or NVVM is not available here.
    ValueError
        The sampler cannot run on the device (the message names the part or the NumPy
        function), or numba CUDA refuses the kernel (its error chained).
    """
    import hamiltonia as hm
    from hamiltonia import samplers
    from hamiltonia.compiled import NotCompilable, pcg64_stream, plan_for
    from hamiltonia.compiled.device_chain import launch_arguments

    if not device_compiler_available():
        raise RuntimeError(
            "compiling for the device needs numba-cuda with NVVM: pip install 'hamiltonia[cuda]'"
        )
    from numba import cuda, typeof

    target = hm.targets.get(target) if isinstance(target, str) else target
    smp = samplers.build(sampler, target, **options) if isinstance(sampler, str) else sampler
    try:
        plan = plan_for(smp, device="cuda")
        layout = plan.layout()
    except NotCompilable as err:
        raise ValueError(f"the sampler cannot run on the device: {err}") from None
    n, d = int(chains), target.dim
    state = [np.zeros((n, d)) for _ in range(3)]
    arrays = (*state, np.zeros(n), np.ones(n), np.zeros((n, layout.n_aux)), np.zeros((n, 1)))
    outputs = (np.zeros((n, 1, d)), np.zeros((n, 1, len(layout.stats))), np.zeros((n, 0, d)))
    streams = np.zeros((n, pcg64_stream.STATE_SIZE), dtype=np.uint64)
    args = launch_arguments(layout, plan.kernel, streams, arrays, np.zeros(n, bool), 1, True,
                            outputs)  # fmt: skip
    signature = tuple(typeof(a) for a in args)
    try:
        with _capability(cc):
            ptx, _ = cuda.compile_ptx(plan.chain_kernel.py_func, signature, cc=cc)
    except Exception as err:  # numba's typing and lowering errors have no common base
        raise ValueError(f"numba CUDA cannot compile the device kernel: {err}") from err
    return ptx
