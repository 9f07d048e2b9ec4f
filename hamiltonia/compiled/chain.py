"""The generic chain kernel: one template for every composition of parts.

:func:`run_chain` runs ``n_iter`` iterations of one chain: the momentum refresh, the
transition of the trajectory policy, the step-size tuner and the tuners that adapt per-chain
values (roles ``adapt_1`` ...) during warm-up, and the recording
of the draw and of the statistics. It knows no part: it calls the roles ``refresh``,
``transition`` and ``tune`` (:mod:`hamiltonia.compiled.roles`), which
:func:`hamiltonia.compiled.compose.compose` binds to the kernels of the sampler's parts.

The statistics row of an iteration starts with the columns below; the parts' declared
statistics follow, at the offsets the plan gives them.
"""

from __future__ import annotations

import numpy as np

from hamiltonia.compiled.borrow import borrowed, keep_alive
from hamiltonia.compiled.context import chain_context
from hamiltonia.compiled.roles import (
    adapt_1,
    adapt_2,
    adapt_3,
    energy,
    prepare,
    randomise,
    refresh,
    reverse_structure,
    transition,
    tune,
    update_auxiliary,
    weigh,
)

__all__ = [
    "CHAIN_STATS",
    "N_CHAIN_STATS",
    "SCRATCH_ROWS",
    "no_op_kernels",
    "no_tuning_kernel",
    "run_chain",
    "run_chains",
]

#: The chain kernel's own statistics, first in every row.
CHAIN_STATS = (("lp", "float64"), ("step_size", "float64"))
N_CHAIN_STATS = 2
#: Rows of ``ctx.scratch``, the array handed to the ``transition`` role, at least (a part asks for
#: more with :attr:`~hamiltonia.compiled.parts.PartKernels.scratch_rows`).
SCRATCH_ROWS = 4


def no_tuning_kernel(ctx, eps, state):
    """The ``tune`` role of a sampler with no step-size tuner: nothing to do."""


def no_adapting_kernel(ctx, eps):
    """An ``adapt_k`` role no tuner fills: nothing to do."""


def no_auxiliary_update_kernel(ctx, q, p):
    """The ``update_auxiliary`` role of a Hamiltonian with no auxiliary variables."""


def no_prepare_kernel(ctx, q):
    """The ``prepare`` role of a structure that derives nothing from the chain's state."""


def no_randomise_kernel(ctx):
    """The ``randomise`` role of an integrator with no random choices of its own."""


def no_reverse_kernel(ctx):
    """The ``reverse_structure`` role of a structure with no auxiliary variables."""


def no_weight_kernel(ctx, q, p, lp, grad, v, eps):
    """The ``weigh`` role of a Hamiltonian whose draws are equally weighted."""


def energy_without_target_kernel(ctx, q, p, lp, grad, v, eps):
    """The ``target_energy`` role of a Hamiltonian whose energy does not read the target:
    its ``energy``; and the ``hamiltonian_energy`` the composer binds for such a Hamiltonian
    (:data:`~hamiltonia.compiled.roles.COMPOSED_ROLES`)."""
    return energy(ctx, q, p, lp, grad, v, eps)


def no_op_kernels() -> dict:
    """What a composition may leave unfilled: kernels that do nothing (or, for
    ``target_energy``, defer to ``energy``), and the flag ``energy_reads_target`` off."""
    return {
        "energy_reads_target": False,
        "target_energy": energy_without_target_kernel,
        "tune": no_tuning_kernel,
        "adapt_1": no_adapting_kernel,
        "adapt_2": no_adapting_kernel,
        "adapt_3": no_adapting_kernel,
        "update_auxiliary": no_auxiliary_update_kernel,
        "prepare": no_prepare_kernel,
        "randomise": no_randomise_kernel,
        "reverse_structure": no_reverse_kernel,
        "weigh": no_weight_kernel,
    }


def _reverse(ctx, p):
    """The reversal :math:`(p, s) \\mapsto (-p, -s)` of the momentum and the structure."""
    for i in range(p.shape[0]):
        p[i] = -p[i]
    reverse_structure(ctx)


def iteration(ctx, q, p, grad, lp, eps, mirror, adapt, tune_state):
    """One iteration of one chain in place: the Hamiltonian's auxiliary update, the
    structure's preparation, the integrator's random choices, the refresh, the transition,
    the weight of the retained state and, with ``adapt``, the tuners; its statistics go to
    ``ctx.stats``. Shared by the CPU chain kernel (:func:`run_chain`) and the device one
    (:mod:`hamiltonia.compiled.device_chain`), so an iteration is written once."""
    d = q.shape[0]
    row = ctx.stats
    # Zeroed, so that a part that integrates in pieces can add to its columns.
    for j in range(row.shape[0]):
        row[j] = 0.0
    update_auxiliary(ctx, q, p)
    prepare(ctx, q)
    randomise(ctx)
    if mirror:
        _reverse(ctx, p)
    refresh(ctx, q, p, grad, lp[0], eps[0])
    if mirror:
        _reverse(ctx, p)
    lp[0] = transition(ctx, q, p, grad, lp[0], eps[0])
    weigh(ctx, q, p, lp[0], grad, ctx.scratch[0, :d], eps[0])
    row[0] = lp[0]
    # The step size this iteration used, as the NumPy path records it (before the tuner
    # sets the next one).
    row[1] = eps[0]
    if adapt:
        tune(ctx, eps, tune_state)
        adapt_1(ctx, eps)
        adapt_2(ctx, eps)
        adapt_3(ctx, eps)


def record(row, q, grad, out_q, out_stats, out_grad, it):
    """Copy iteration ``it``'s statistics ``row``, draw ``q`` and (unless ``out_grad`` has no
    rows) gradient ``grad`` to the chain's outputs."""
    for j in range(row.shape[0]):
        out_stats[it, j] = row[j]
    for i in range(q.shape[0]):
        out_q[it, i] = q[i]
    if out_grad.shape[0] > 0:
        for i in range(q.shape[0]):
            out_grad[it, i] = grad[i]


def run_chain(
    q, p, grad, lp, eps, aux, rng, mirror, n_iter, adapt, tune_state, PF, PI, logp, fdata,
    idata, out_q, out_stats, out_grad, n_scratch,
):  # fmt: skip
    """Run ``n_iter`` iterations of one chain in place (each: the Hamiltonian's auxiliary
    update, the structure's preparation, the integrator's random choices, the refresh, the
    transition, the weight of the retained state, the tuner): ``q``, ``p``, ``grad`` (dim,),
    ``lp`` and ``eps`` (1,) and ``aux`` hold the chain's state and are updated; draw ``i``
    goes to ``out_q[i]``, its statistics to ``out_stats[i]`` and, unless ``out_grad`` has
    no rows, the gradient of the log density there to ``out_grad[i]``; the transition gets
    ``n_scratch`` rows of scratch space (the most any part declared). With ``mirror`` (the
    secondary chain of an antithetic pair) the refresh runs between two reversals, so that
    its momentum normals enter negated (:mod:`hamiltonia.reducers.antithetic`). ``rng`` is
    the chain's generator state (:mod:`hamiltonia.compiled.pcg64_stream`), which the
    composer's kernels draw from in place of a ``numpy.random.Generator``'s methods."""
    d = q.shape[0]
    # Rows padded to whole 64-byte lines, so that scratch[k, :d] is as aligned as a fresh
    # array: the trajectory runs in these rows, and an unaligned position made the BLR
    # gradient 4 % slower.
    owned = np.empty((n_scratch, (d + 7) // 8 * 8))
    # The caller holds every argument for the whole call, and ``owned`` is kept to the end:
    # the parts work on borrowed views, free of numba's reference counting (an atomic
    # increment and decrement per array and per inlined part, every iteration).
    scratch = borrowed(owned)
    q, p, grad, lp, eps, aux, rng, tune_state, PF, PI = borrowed(
        (q, p, grad, lp, eps, aux, rng, tune_state, PF, PI)
    )
    fdata, idata, out_q, out_stats, out_grad = borrowed((fdata, idata, out_q, out_stats, out_grad))
    # The iteration's statistics are written into one row of the chain's own and copied out
    # at the end of the iteration, so that the kernel context (what every part reads besides
    # the state, hamiltonia.compiled.context) is built once, outside the loop. Built anew for
    # each iteration's row of out_stats, it made NUTS on banana 6-9 % slower per gradient
    # (measured against the positional arguments it replaced; HMC unchanged).
    owned_row = np.empty(out_stats.shape[1])
    row = borrowed(owned_row)
    ctx = chain_context(rng, aux, scratch, row, PF, PI, logp, fdata, idata)
    for it in range(n_iter):
        iteration(ctx, q, p, grad, lp, eps, mirror, adapt, tune_state)
        record(ctx.stats, q, grad, out_q, out_stats, out_grad, it)
    keep_alive(owned)
    keep_alive(owned_row)


def run_chains(
    first, stride, q, p, grad, lp, eps, aux, rng, mirror, n_iter, adapt, tune_state, PF, PI,
    logp, fdata, idata, out_q, out_stats, out_grad, n_scratch,
):  # fmt: skip
    """Run ``n_iter`` iterations of the chains ``first, first + stride, ...`` of the block:
    row ``c`` of each array is what :func:`run_chain` takes for chain ``c`` (``lp`` and
    ``eps`` of shape ``(chains,)``, ``rng`` the chains' generator states,
    :mod:`hamiltonia.compiled.pcg64_stream`, ``mirror`` a flag a chain). The composed
    kernel's entry: a thread runs its share of the chains in one call, where a call a chain
    cost 18 µs of dispatch (about 20 arguments, a ``Generator`` among them, typed and
    unboxed), which at 1,024 chains of 80 draws was a third of the sampling."""
    for c in range(first, q.shape[0], stride):
        run_chain(
            q[c], p[c], grad[c], lp[c : c + 1], eps[c : c + 1], aux[c], rng[c], mirror[c],
            n_iter, adapt, tune_state[c], PF, PI, logp, fdata, idata, out_q[c], out_stats[c],
            out_grad[c], n_scratch,
        )  # fmt: skip
