"""Deciding whether a sampler can run compiled, composing its kernel, and running it.

:func:`plan_for` asks every part of the sampler for its compiled counterpart
(``part.compiled(dim)``, a :class:`~hamiltonia.compiled.parts.PartKernels`); it checks no
type. A part without one raises :class:`NotCompilable` naming it, and the run falls back to
the NumPy path. The parts' kernels are composed into the generic chain kernel
(:mod:`hamiltonia.compiled.chain`) by :func:`~hamiltonia.compiled.compose.compose`; their
parameters, statistics columns and auxiliary variables are laid out here.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from hamiltonia.compiled.parts import NotCompilable, compiled_counterpart
from hamiltonia.compiled.roles import ROLE_SLOTS, SLOTS, TUNER
from hamiltonia.compiled.targets import NumbaTarget

__all__ = ["CompiledPlan", "Layout", "NotCompilable", "plan_for"]


@dataclass
class Layout:
    """The composition of one sampler at one moment: kernels, parameters, columns."""

    functions: dict
    PF: tuple
    PI: tuple
    stats: tuple  # (name, dtype) per column of the statistics row
    aux: tuple  # (name, offset, size) per auxiliary variable
    n_aux: int
    tuner: object  # the step-size tuner whose state the kernel updates, or None
    scratch_rows: int  # rows of the chain kernel's scratch array


def _layout(sampler, parts, kernels: dict) -> Layout:
    from hamiltonia.compiled.chain import (
        CHAIN_STATS,
        SCRATCH_ROWS,
        no_op_kernels,
        run_chain,
    )

    functions = dict(no_op_kernels())
    owner = {}
    stats = list(CHAIN_STATS)
    aux, n_aux = [], 0
    offsets = {}
    for slot in range(len(SLOTS)):
        k = kernels.get(slot)
        if k is None:
            offsets[slot] = (0, 0)
            continue
        offsets[slot] = (len(stats), n_aux)
        stats.extend(k.stats)
        for name, size in k.aux:
            aux.append((name, n_aux, int(size)))
            n_aux += int(size)
        # The workspace follows the part's variables in ``aux`` but is not laid out as
        # state: nothing reads it from, or writes it to, the chains' auxiliary variables.
        n_aux += sum(int(size) for _, size in k.workspace)
        for role, fn in k.functions.items():
            if ROLE_SLOTS.get(role) != slot:
                raise NotCompilable(
                    f"{parts[slot][1]} {type(parts[slot][0]).__name__} hands out a kernel "
                    f"for the role {role!r}, which is not a {SLOTS[slot]} role"
                )
            if role in owner:
                raise NotCompilable(f"two parts fill the role {role!r}")
            owner[role] = slot
            functions[role] = fn
    columns = {name: i for i, (name, _) in enumerate(stats)}
    PF, PI = [], []
    for slot in range(len(SLOTS)):
        k = kernels.get(slot)
        if k is None:
            PF.append(np.zeros(0))
            PI.append(np.zeros(2, dtype=np.int64))
            continue
        missing = [name for name in k.reads if name not in columns]
        if missing:
            raise NotCompilable(
                f"{parts[slot][1]} {type(parts[slot][0]).__name__} reads the statistics "
                f"{missing}, which no part of this sampler records"
            )
        reads = [columns[name] for name in k.reads]
        PF.append(k.fparams)
        PI.append(np.array([*offsets[slot], *reads, *k.iparams], dtype=np.int64))
    tuner = parts[TUNER][0] if TUNER in kernels and "tune" in kernels[TUNER].functions else None
    functions["run_chain"] = run_chain
    rows = max([SCRATCH_ROWS, *(int(k.scratch_rows) for k in kernels.values())])
    return Layout(functions, tuple(PF), tuple(PI), tuple(stats), tuple(aux), n_aux, tuner, rows)


def _counterparts(sampler) -> tuple[dict, dict]:
    listed = sampler.compiled_parts() if hasattr(sampler, "compiled_parts") else None
    if listed is None:
        raise NotCompilable(f"sampler {type(sampler).__name__} has no compiled counterpart")
    dim = sampler.target.dim
    parts, kernels = {}, {}
    for slot, (part, kind, *context) in listed.items():
        parts[slot] = (part, kind)
        kernels[slot] = compiled_counterpart(part, dim, kind, **(context[0] if context else {}))
    step_tuners = []
    for tuner in sampler.tuners:
        k = compiled_counterpart(tuner, dim, "tuner")
        if k.functions:
            step_tuners.append((tuner, k))
    if len(step_tuners) > 1:
        names = ", ".join(type(t).__name__ for t, _ in step_tuners)
        raise NotCompilable(f"more than one tuner updates inside the kernel ({names})")
    if step_tuners:
        parts[TUNER] = (step_tuners[0][0], "tuner")
        kernels[TUNER] = step_tuners[0][1]
    return parts, kernels


def plan_for(sampler) -> CompiledPlan:
    """A :class:`CompiledPlan` for ``sampler``, or :class:`NotCompilable` naming the part
    that prevents it.

    Compiled: a sampler whose ``compiled_parts()`` lists its parts (the
    :class:`~hamiltonia.samplers.HamiltonianSampler` does), each of which hands out a
    compiled counterpart; tuners that either update in the kernel (at most one) or act at
    chunk boundaries; a reducer with no importance weights, or one whose ``column`` of log
    weights a part's ``weigh`` kernel writes; and a target whose
    ``numba_kernel()`` returns a :class:`~hamiltonia.compiled.NumbaTarget`. A subclass that
    overrides a part's maths without its own ``compiled`` is not compiled (it would not do
    what its Python methods do).
    """
    from hamiltonia import backend
    from hamiltonia.reducers.base import gives_weights

    if backend.get_backend() != "numpy":
        raise NotCompilable(f"backend {backend.get_backend()!r} (the compiled path runs on NumPy)")
    _counterparts(sampler)  # raises naming the first part without a compiled counterpart
    weighted = gives_weights(sampler.reducer)
    column = getattr(sampler.reducer, "column", None)
    if weighted and column is None:
        raise NotCompilable(f"reducer {type(sampler.reducer).__name__} has no compiled counterpart")
    kernel = sampler.target.numba_kernel()
    if kernel is None:
        raise NotCompilable(f"target {type(sampler.target).__name__} has no numba kernel")
    if not isinstance(kernel, NumbaTarget):
        raise NotCompilable("numba_kernel() must return a hamiltonia.compiled.NumbaTarget")
    plan = CompiledPlan(sampler, kernel)
    layout = plan.layout()  # composes now, so that a kernel that cannot be composed is reported
    if weighted and column not in {name for name, _ in layout.stats}:
        raise NotCompilable(
            f"reducer {type(sampler.reducer).__name__} reads the column {column!r}, which no "
            f"compiled part writes (hamiltonian {type(sampler.hamiltonian).__name__} has no "
            "'weigh' kernel)"
        )
    return plan


_COMPOSED: dict = {}


def _composed(functions: dict):
    from hamiltonia.compiled.compose import CompositionError, compose

    key = tuple(sorted((role, id(fn)) for role, fn in functions.items()))
    if key not in _COMPOSED:
        roles = {role: fn for role, fn in functions.items() if role != "run_chain"}
        try:
            _COMPOSED[key] = (compose(roles, functions["run_chain"]), functions)
        except CompositionError as err:
            raise NotCompilable(str(err)) from None
    return _COMPOSED[key][0]


class CompiledPlan:
    """Runs chunks of iterations of every chain in the composed kernel, one thread per
    core."""

    def __init__(self, sampler, kernel: NumbaTarget):
        self.sampler = sampler
        self.kernel = kernel
        self.workers = max(1, os.cpu_count() or 1)
        self._pool: ThreadPoolExecutor | None = None
        self._frozen: Layout | None = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._pool is not None:
            # On Ctrl-C or an error the chains not yet started are dropped; a running chunk
            # cannot be stopped from outside numba and is waited for.
            self._pool.shutdown(wait=True, cancel_futures=exc_type is not None)
            self._pool = None

    def layout(self) -> Layout:
        """The composition with the parts' current parameters (a tuner may have changed
        them since the last chunk)."""
        parts, kernels = _counterparts(self.sampler)
        layout = _layout(self.sampler, parts, kernels)
        self.chain_kernel = _composed(layout.functions)
        return layout

    def run(self, chain, rngs, n_iter: int, adapt: bool, out_q: np.ndarray, out_stats: np.ndarray,
            out_grad: np.ndarray | None = None):  # fmt: skip
        """Advance all chains ``n_iter`` iterations, writing ``out_q[c, :n_iter]`` and
        ``out_stats[c, :n_iter]`` (columns of :meth:`layout`'s ``stats``) and, when given,
        the gradients of the log density at the draws to ``out_grad[c, :n_iter]``; with
        ``adapt``, the step-size tuner runs inside the kernel. Returns the layout used.

        During warm-up the layout is rebuilt for every chunk (a tuner may have changed a
        part since); after it, the parts are frozen and the first sampling layout is kept.
        """
        if adapt or self._frozen is None:
            layout = self.layout()
            self._frozen = None if adapt else layout
        else:
            layout = self._frozen
        phase = chain.phase
        n_chains = phase.q.shape[0]

        def own(a):
            return np.array(a, dtype=np.float64, order="C", copy=True)

        q, p, grad = own(phase.q), own(phase.p), own(phase.grad)
        lp, eps = own(phase.log_prob), own(chain.step_size)
        aux = np.zeros((n_chains, layout.n_aux))
        for name, offset, size in layout.aux:
            # A variable the NumPy side has not set yet starts at zero.
            value = phase.aux.setdefault(name, np.zeros((n_chains, size)))
            aux[:, offset : offset + size] = np.reshape(value, (n_chains, size))
        tuner = layout.tuner if adapt else None
        state = getattr(tuner, "state", None)
        tune_state = own(state) if state is not None else np.zeros((n_chains, 1))
        fn, fdata, idata = self.kernel.function, self.kernel.fdata, self.kernel.idata
        chain_kernel, PF, PI, rows = self.chain_kernel, layout.PF, layout.PI, layout.scratch_rows
        mirror = self.sampler.reducer.mirrored(n_chains)
        if out_grad is None:
            out_grad = np.empty((n_chains, 0, phase.q.shape[1]))

        def one(c):
            chain_kernel(
                q[c], p[c], grad[c], lp[c : c + 1], eps[c : c + 1], aux[c], rngs[c],
                bool(mirror[c]), n_iter, tuner is not None, tune_state[c], PF, PI, fn, fdata,
                idata, out_q[c], out_stats[c], out_grad[c], rows,
            )  # fmt: skip

        if n_chains == 1 or self.workers == 1:
            for c in range(n_chains):
                one(c)
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=min(self.workers, n_chains))
            list(self._pool.map(one, range(n_chains)))
        phase.q, phase.p, phase.grad, phase.log_prob = q, p, grad, lp
        for name, offset, size in layout.aux:
            shape = np.shape(phase.aux[name])
            phase.aux[name] = aux[:, offset : offset + size].reshape(shape)
        chain.step_size = eps
        if tuner is not None and state is not None:
            tuner.state = tune_state
        return layout
