"""The fused device chain: every chain of a run in one numba-CUDA kernel, one thread a chain,
written from the same part kernels as the CPU chain.

The composer (:func:`hamiltonia.compiled.device_compose.compose_device`) writes :func:`run_chains`
with every role bound to the kernel of the part that fills it, exactly as it writes the CPU
chain kernel (:func:`hamiltonia.compiled.chain.run_chain`); both call the one
:func:`~hamiltonia.compiled.chain.iteration`, so a part written once runs on the GPU too.
Two things differ on the device, and the composer rewrites them:

* ``ctx.logp(q, grad, fdata, idata)`` becomes a call of the target's kernel compiled as a
  device function (numba CUDA has no first-class functions);
* ``ctx.rng.METHOD(...)`` becomes ``METHOD(ctx.rng, ...)`` of
  :mod:`hamiltonia.compiled.pcg64_stream`, whose functions reproduce NumPy's ``PCG64``
  generator and its methods on a chain's state array. Each chain's generator is copied to
  the device before a chunk and back after it, so the device draws the same random numbers
  as the CPU path, call for call, and a run can move between the two.

The draws therefore equal the CPU path's up to floating-point rounding: the CPU kernels are
compiled with reassociation and contraction (:data:`~hamiltonia.compiled.compose.SAFE_FASTMATH`),
so their sums round differently, and a long run parts ways as any two implementations of
the same chain do (``docs/compiled.rst``, "The device").

Without a GPU the kernel runs under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``),
which is how the tests check it against the CPU path.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import cuda

from hamiltonia.compiled import pcg64_stream
from hamiltonia.compiled.chain import iteration, record
from hamiltonia.compiled.roles import CONTEXT_FIELDS
from hamiltonia.state import DEVICES

__all__ = [
    "DeviceContext",
    "check_available",
    "launch_arguments",
    "run_chains",
    "run_on_device",
]

#: Threads per block of the device kernel.
THREADS_PER_BLOCK = 64

#: The kernel context on the device: a named tuple of the same fields as the CPU's struct
#: (:mod:`hamiltonia.compiled.context`), which needs no borrowed views there (device code
#: counts no references). ``logp`` is a placeholder: the composer calls the target's kernel
#: by name.
DeviceContext = namedtuple("DeviceContext", CONTEXT_FIELDS)


def check_available(device: str) -> None:
    """``ValueError`` naming ``device`` and the valid ones, or saying why it cannot be used
    here (no GPU that numba can use)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    from numba.core import config

    if device == "cuda" and not config.ENABLE_CUDASIM:
        import importlib.util

        if importlib.util.find_spec("numba_cuda") is None:
            raise ValueError(
                "device='cuda' needs numba-cuda, the maintained CUDA target of numba (the "
                "built-in one is deprecated and refuses some composed kernels): pip install "
                "'hamiltonia[cuda]'"
            )
    if device == "cuda" and not cuda.is_available():
        raise ValueError(
            "device='cuda' needs a CUDA GPU that numba can use, and numba.cuda.is_available() "
            "is False here (no GPU or no driver; install the 'cuda' extra on a GPU machine). "
            "To test without a GPU, set NUMBA_ENABLE_CUDASIM=1 before numba is imported: "
            "numba's CUDA simulator runs the kernel in Python, slowly"
        )


def run_chains(q, p, grad, lp, eps, aux, rng, mirror, n_iter, adapt, tune_state, PF, PI, fdata,
               idata, out_q, out_stats, out_grad, scratch, rows):  # fmt: skip
    """Run ``n_iter`` iterations of chain ``cuda.grid(1)`` in place: row ``c`` of each
    argument is what :func:`~hamiltonia.compiled.chain.run_chain` takes for one chain
    (``lp`` and ``eps`` of shape ``(chains, 1)``, ``rng`` the chains' generator states),
    ``scratch[c]`` its scratch rows and ``rows[c]`` its statistics row."""
    c = cuda.grid(1)
    if c < q.shape[0]:
        ctx = DeviceContext(rng[c], aux[c], scratch[c], rows[c], PF, PI, 0, fdata, idata)
        for it in range(n_iter):
            iteration(ctx, q[c], p[c], grad[c], lp[c], eps[c], mirror[c], adapt, tune_state[c])
            record(rows[c], q[c], grad[c], out_q[c], out_stats[c], out_grad[c], it)


def launch_arguments(layout, target_kernel, streams, arrays, mirror, n_iter: int,
                     adapt: bool, outputs) -> list:  # fmt: skip
    """The arguments of :func:`run_chains`, on the host, in its order: ``arrays`` (``q``,
    ``p``, ``grad``, ``lp``, ``eps``, ``aux``, ``tune_state``), ``streams`` (the chains'
    generator states, :func:`~hamiltonia.compiled.pcg64_stream.state_of`) and ``outputs``
    (``out_q``, ``out_stats``, ``out_grad``, of which the first ``n_iter`` iterations are
    written) as :meth:`~hamiltonia.compiled.plan.CompiledPlan.run` holds them."""
    q, p, grad, lp, eps, aux, tune_state = arrays
    out_q, out_stats, out_grad = outputs
    n, d = q.shape

    def own(a):
        return np.ascontiguousarray(a)

    return [
        own(q), own(p), own(grad), own(lp.reshape(n, 1)), own(eps.reshape(n, 1)), own(aux),
        own(streams), own(mirror.astype(np.bool_)), int(n_iter), bool(adapt), own(tune_state),
        layout.PF, layout.PI, target_kernel.fdata, target_kernel.idata,
        own(out_q[:, :n_iter]), own(out_stats[:, :n_iter]), own(out_grad[:, :n_iter]),
        # Scratch rows padded to whole 64-byte lines, as the CPU chain's.
        np.zeros((n, layout.scratch_rows, (d + 7) // 8 * 8)), np.zeros((n, out_stats.shape[2])),
    ]  # fmt: skip


def run_on_device(kernel, layout, target_kernel, rngs, arrays, mirror, n_iter: int,
                  adapt: bool, outputs) -> None:  # fmt: skip
    """Run the composed device ``kernel`` on every chain (the arguments as
    :func:`launch_arguments` takes them, ``rngs`` the chains' generators), updating
    ``arrays``, ``outputs`` and ``rngs`` in place: the state and the generators go to the
    device, the kernel runs ``n_iter`` iterations of every chain, and the state, the
    generators and the outputs come back."""
    streams = np.stack([pcg64_stream.state_of(rng) for rng in rngs])
    host = launch_arguments(layout, target_kernel, streams, arrays, mirror, n_iter, adapt, outputs)

    def to_device(a):
        if isinstance(a, tuple):
            return tuple(cuda.to_device(x) for x in a)
        return cuda.to_device(a) if isinstance(a, np.ndarray) else a

    on = [to_device(a) for a in host]
    n = arrays[0].shape[0]
    blocks = (n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    kernel[blocks, THREADS_PER_BLOCK](*on)
    # Back: the state (q, p, grad, lp, eps, aux), the generators, the tuner's state and the
    # outputs (argument positions of run_chains).
    q, p, grad, lp, eps, aux, tune_state = arrays
    out_q, out_stats, out_grad = outputs
    back = {i: on[i].copy_to_host() for i in (0, 1, 2, 3, 4, 5, 6, 10, 15, 16, 17)}
    q[:], p[:], grad[:], aux[:] = back[0], back[1], back[2], back[5]
    lp[:], eps[:] = back[3].reshape(lp.shape), back[4].reshape(eps.shape)
    tune_state[:] = back[10]
    out_q[:, :n_iter], out_stats[:, :n_iter], out_grad[:, :n_iter] = back[15], back[16], back[17]
    for rng, state in zip(rngs, back[6], strict=True):
        pcg64_stream.set_state(rng, state)
