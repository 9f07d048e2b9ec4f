"""Deciding whether a sampler can run compiled, composing its kernel, and running it.

:func:`plan_for` asks every part of the sampler for its compiled counterpart
(``part.compiled(dim)``, a :class:`~hamiltonia.compiled.parts.PartKernels`); it checks no
type. A part without one raises :class:`NotCompilable` naming it, and the run falls back to
the NumPy path. The parts' kernels are composed into the generic chain kernel
(:mod:`hamiltonia.compiled.chain`) by :func:`~hamiltonia.compiled.compose.compose`; their
parameters, statistics columns and auxiliary variables are laid out here.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from hamiltonia.compiled.parts import (
    NotCompilable,
    TargetNotCompiled,
    compiled_counterpart,
    inherits_from_base,
    overrides_without_kernel,
)
from hamiltonia.compiled.roles import (
    ADAPTER_SLOTS,
    MAX_KERNEL_ADAPTERS,
    ROLE_SLOTS,
    SLOTS,
    TUNER,
)
from hamiltonia.compiled.targets import NumbaTarget

__all__ = ["CompiledPlan", "Layout", "NotCompilable", "TargetNotCompiled", "plan_for"]


@dataclass
class Layout:
    """The composition of one sampler at one moment: kernels, parameters, columns.

    ``PF`` holds one float64 array per float parameter (a scalar as an array of one) and
    ``PI`` one int64 array of the int parameters and of the offsets of the auxiliary
    variables; ``names`` says where each name a kernel may read lives (see
    :mod:`hamiltonia.compiled.roles`): ``("param", slot, name)``, ``("column", name)`` and
    ``("offset", name)`` to the source text the composer puts in its place.
    """

    functions: dict
    PF: tuple
    PI: np.ndarray
    stats: tuple  # (name, dtype) per column of the statistics row
    aux: tuple  # (name, offset, size, initial value) per auxiliary variable
    n_aux: int
    tuner: object  # the step-size tuner whose state the kernel updates, or None
    scratch_rows: int  # rows of the chain kernel's scratch array
    names: dict  # where each name lives, as source text
    parts: dict  # slot to a description of its part ("refresh PartialRefresh"), for errors
    published: tuple = ()  # (name, offset, size) per workspace entry handed to the tuners

    def param(self, slot: int | str, name: str):
        """The value of parameter ``name`` of the part in ``slot`` (an index or a name of
        :data:`~hamiltonia.compiled.roles.SLOTS`), as its kernels read it."""
        slot = SLOTS.index(slot) if isinstance(slot, str) else slot
        where = self.names[("param", slot, name)]
        return eval(where, {"PF": self.PF, "PI": self.PI})  # text the plan wrote


def _layout(sampler, parts, kernels: dict) -> Layout:
    from hamiltonia.compiled.chain import (
        CHAIN_STATS,
        SCRATCH_ROWS,
        no_op_kernels,
        run_chains,
    )

    functions = dict(no_op_kernels())
    owner = {}
    stats = list(CHAIN_STATS)
    aux, n_aux, published = [], 0, []
    PF, PI, names = [], [], {}
    described = {slot: f"{kind} {type(part).__name__}" for slot, (part, kind) in parts.items()}
    for slot in range(len(SLOTS)):
        k = kernels.get(slot)
        if k is None:
            continue
        stats.extend(k.stats)
        # The workspace follows the part's variables in ``aux`` but is not laid out as
        # state: nothing reads it from, or writes it to, the chains' auxiliary variables.
        variables = {entry[0] for entry in k.aux}
        for name, size, *initial in (*k.aux, *k.workspace):
            if ("offset", name) in names:
                raise NotCompilable(f"two parts lay out the auxiliary variable {name!r}")
            names[("offset", name)] = f"PI[{len(PI)}]"
            PI.append(n_aux)
            if name in variables:
                aux.append((name, n_aux, int(size), initial[0] if initial else 0.0))
            elif name in k.published:
                published.append((name, n_aux, int(size)))
            n_aux += int(size)
        unlaid = [name for name in k.published if name not in {e[0] for e in k.workspace}]
        if unlaid:
            raise NotCompilable(
                f"{described[slot]} publishes {unlaid[0]!r}, which is not in its workspace"
            )
        for name, value in k.params.items():
            if isinstance(value, int):
                names[("param", slot, name)] = f"PI[{len(PI)}]"
                PI.append(value)
            elif isinstance(value, float):
                names[("param", slot, name)] = f"PF[{len(PF)}][0]"
                PF.append(np.array([value]))
            else:
                names[("param", slot, name)] = f"PF[{len(PF)}]"
                PF.append(value)
        for role, fn in k.functions.items():
            if ROLE_SLOTS.get(role) != slot:
                raise NotCompilable(
                    f"{described[slot]} hands out a kernel for the role {role!r}, which is "
                    f"not a {SLOTS[slot]} role"
                )
            if role in owner:
                raise NotCompilable(f"two parts fill the role {role!r}")
            owner[role] = slot
            functions[role] = fn
    columns = {}
    for i, (name, _) in enumerate(stats):
        if name in columns:
            raise NotCompilable(f"two parts record the statistic {name!r}")
        columns[name] = i
        names[("column", name)] = str(i)
    tuner = parts[TUNER][0] if TUNER in kernels and "tune" in kernels[TUNER].functions else None
    functions["run_chains"] = run_chains
    rows = max([SCRATCH_ROWS, *(int(k.scratch_rows) for k in kernels.values())])
    # Numba types a tuple of arrays by its length: never empty.
    PF = tuple(PF) if PF else (np.zeros(1),)
    PI = np.array(PI if PI else [0], dtype=np.int64)
    return Layout(functions, PF, PI, tuple(stats), tuple(aux), n_aux, tuner, rows, names,
                  described, tuple(published))  # fmt: skip


def _counterparts(sampler) -> tuple[dict, dict]:
    listed = sampler.compiled_parts() if hasattr(sampler, "compiled_parts") else None
    if listed is None:
        raise NotCompilable(f"sampler {type(sampler).__name__} has no compiled counterpart")
    dim = sampler.target.dim
    parts, kernels = {}, {}
    for slot, (part, kind, *context) in listed.items():
        parts[slot] = (part, kind)
        kernels[slot] = compiled_counterpart(part, dim, kind, **(context[0] if context else {}))
    step_tuners, adapters = [], []
    for tuner in sampler.tuners:
        k = compiled_counterpart(tuner, dim, "tuner")
        unknown = sorted(set(k.functions) - {"tune", "adapt"})
        if unknown:
            raise NotCompilable(
                f"tuner {type(tuner).__name__} hands out a kernel for the role {unknown[0]!r}; "
                "a tuner's kernels fill 'tune' (the step size) or 'adapt' (per-chain values "
                "in aux)"
            )
        if "tune" in k.functions:
            step_tuners.append((tuner, k))
        if "adapt" in k.functions:
            adapters.append((tuner, k))
        if k.functions:
            continue
        elif _adapts_nowhere(tuner):
            raise NotCompilable(
                f"tuner {type(tuner).__name__} hands out no kernel (its compiled() returns an "
                "empty PartKernels) and has no update_chunk, so on the compiled path its "
                "update() would never run and it would never adapt; give it a 'tune' kernel "
                "that updates inside the chain, or an update_chunk (with its boundaries()) "
                "that acts between chunks, or declare per_iteration = True (the compiled path "
                "then calls update() after every warm-up iteration), or let compiled() return "
                "None"
            )
    if len(step_tuners) > 1:
        names = ", ".join(type(t).__name__ for t, _ in step_tuners)
        raise NotCompilable(f"more than one tuner updates inside the kernel ({names})")
    if len(adapters) > MAX_KERNEL_ADAPTERS:
        names = ", ".join(type(t).__name__ for t, _ in adapters)
        raise NotCompilable(
            f"more than {MAX_KERNEL_ADAPTERS} tuners adapt inside the kernel ({names})"
        )
    if step_tuners:
        tuner, k = step_tuners[0]
        parts[TUNER] = (tuner, "tuner")
        kernels[TUNER] = dataclasses.replace(
            k, functions={r: f for r, f in k.functions.items() if r == "tune"}
        )
    for n, (tuner, k) in enumerate(adapters, start=1):
        # The k-th adapter in a slot of its own, its kernel bound to that slot's role; a
        # tuner with both kernels keeps its parameters in both slots.
        slot = ADAPTER_SLOTS[n - 1]
        parts[slot] = (tuner, "tuner")
        kernels[slot] = dataclasses.replace(
            k, functions={f"adapt_{n}": k.functions["adapt"]},
            aux=k.aux if "tune" not in k.functions else (),
        )  # fmt: skip
        if "tune" in k.functions:
            kernels[slot].workspace, kernels[slot].stats = (), ()
    return parts, kernels


def _adapts_nowhere(tuner) -> bool:
    """Whether ``tuner``, which hands out no kernel, adapts per iteration (an ``update`` of
    its own) but has no ``update_chunk`` of its own to act between chunks: the compiled path
    would call neither, and the tuner would silently never adapt. (One with neither, which
    acts in ``start`` or ``finalize`` alone, loses nothing; nor does one that asks for its
    ``update`` after every iteration, :attr:`~hamiltonia.tuners.Tuner.per_iteration`.)"""
    if getattr(tuner, "per_iteration", False):
        return False
    return not inherits_from_base(tuner, "update") and inherits_from_base(tuner, "update_chunk")


def plan_for(sampler, python_target: bool = False, reject_on=(),
             device: str = "cpu") -> CompiledPlan:  # fmt: skip
    """A :class:`CompiledPlan` for ``sampler``, or :class:`NotCompilable` naming the part
    that prevents it.

    Compiled: a sampler whose ``compiled_parts()`` lists its parts (the
    :class:`~hamiltonia.samplers.HamiltonianSampler` does), each of which hands out a
    compiled counterpart; tuners that either update in the kernel (at most one) or act at
    chunk boundaries (one that adapts per iteration only, its kernels empty and no
    ``update_chunk`` of its own, is refused naming it: it would never adapt); a reducer
    with no importance weights, or one whose ``column`` of log weights a part's ``weigh``
    kernel writes; and a target whose ``numba_kernel()`` returns a
    :class:`~hamiltonia.compiled.NumbaTarget`. A subclass that
    overrides a part's maths without its own ``compiled`` is not compiled (it would not do
    what its Python methods do).

    With ``python_target``, a target with no numba kernel is called back from the compiled
    chain (:mod:`hamiltonia.compiled.callback`), its exceptions of the types ``reject_on``
    being rejections: the way a part written only as a kernel runs with any target.

    ``device`` is where the chains run: ``"cpu"`` or ``"cuda"``, the fused device chain
    (:mod:`hamiltonia.compiled.device_chain`), which also needs the target's kernel as a
    Python function (not a Python target called back) and one composition for all chains.
    """
    from hamiltonia.state import DEVICES

    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    from hamiltonia import backend

    if backend.get_backend() != "numpy":
        raise NotCompilable(f"backend {backend.get_backend()!r} (the compiled path runs on NumPy)")
    _counterparts(sampler)  # raises naming the first part without a compiled counterpart
    weighted = bool(getattr(sampler, "weighted", False))
    column = getattr(sampler.reducer, "column", None)
    if weighted and column is None:
        raise NotCompilable(f"reducer {type(sampler.reducer).__name__} has no compiled counterpart")
    target = sampler.target
    # A subclass that rewrites the density of a target with a kernel inherits a kernel of
    # the parent's density: it is not used.
    stale = next(
        (found for t in target.kernel_targets
         if (found := overrides_without_kernel(t, t.numeric_methods, t.kernel_attributes))),
        None,
    )  # fmt: skip
    kernel = None if stale else target.numba_kernel()
    if kernel is None and python_target:
        from hamiltonia.compiled.callback import python_target as called_back

        kernel = called_back(target, reject_on)
    if kernel is None and stale:
        # As a part's: the run falls back with a warning, since the kernel would not do
        # what the Python density does.
        raise NotCompilable(
            f"target {type(target).__name__}'s inherited kernel is not used ({stale} "
            "overrides the density of the parent's kernel; define numba_kernel() too, or name "
            "what the kernel is built from in kernel_attributes)"
        )
    if kernel is None:
        raise TargetNotCompiled(f"target {type(target).__name__} has no numba kernel")
    if not isinstance(kernel, NumbaTarget):
        raise NotCompilable("numba_kernel() must return a hamiltonia.compiled.NumbaTarget")
    _check_components(sampler, kernel)
    plan = CompiledPlan(sampler, kernel, device)
    # Composes now, so that a kernel that cannot be composed is reported (and a name a kernel
    # reads that no part declares is an error naming the part and the field).
    layout = plan.layout()
    if weighted and column not in {name for name, _ in layout.stats}:
        raise NotCompilable(
            f"reducer {type(sampler.reducer).__name__} reads the column {column!r}, which no "
            f"compiled part writes (hamiltonian {type(sampler.hamiltonian).__name__} has no "
            "'weigh' kernel)"
        )
    return plan


def _check_components(sampler, kernel: NumbaTarget) -> None:
    """Refuse a target kernel with fewer components than a part evaluates (a Python target
    called back evaluates its whole density only)."""
    parts, kernels = _counterparts(sampler)
    for slot, k in kernels.items():
        if k.target_components and k.target_components != kernel.components:
            described = f"{parts[slot][1]} {type(parts[slot][0]).__name__}"
            has = f"{kernel.components} components" if kernel.components else "no components"
            raise NotCompilable(
                f"{described} evaluates {k.target_components} components of the target, whose "
                f"compiled kernel has {has}"
            )


_COMPOSED: dict = {}


def _composed_device(layout: Layout, target: NumbaTarget):
    """The device kernel of ``layout`` with ``target``'s kernel (see :func:`_composed`)."""
    from hamiltonia.compiled.compose import (
        CompositionError,
        KernelSignatureError,
        NameBindingError,
    )
    from hamiltonia.compiled.device_chain import run_chains
    from hamiltonia.compiled.device_compose import compose_device

    roles = {role: fn for role, fn in layout.functions.items() if role != "run_chains"}
    roles["target_logp"] = target.device_source()
    if roles["target_logp"] is None:
        raise NotCompilable("the target's kernel has no Python source to compile for the device")
    key = (
        "device",
        tuple(sorted((role, id(fn)) for role, fn in roles.items())),
        tuple(sorted(layout.names.items(), key=repr)),
    )
    if key not in _COMPOSED:
        try:
            chain = compose_device(roles, run_chains, layout.names, layout.parts)
        except (NameBindingError, KernelSignatureError):
            raise
        except CompositionError as err:
            raise NotCompilable(str(err)) from None
        _COMPOSED[key] = (chain, roles)
    return _COMPOSED[key][0]


def _composed(layout: Layout):
    from hamiltonia.compiled.compose import (
        CompositionError,
        KernelSignatureError,
        NameBindingError,
        compose,
    )

    functions = layout.functions
    key = (
        tuple(sorted((role, id(fn)) for role, fn in functions.items())),
        tuple(sorted(layout.names.items(), key=repr)),
    )
    if key not in _COMPOSED:
        roles = {role: fn for role, fn in functions.items() if role != "run_chains"}
        try:
            chain = compose(
                roles, functions["run_chains"], layout.names, layout.parts, streams=True
            )
        except (NameBindingError, KernelSignatureError):
            raise  # a kernel reads a name no part declares, or takes the old arguments: the
            # part's bug, shown as such
        except CompositionError as err:
            raise NotCompilable(str(err)) from None
        _COMPOSED[key] = (chain, functions)
    return _COMPOSED[key][0]


class CompiledPlan:
    """Runs chunks of iterations of every chain in the composed kernel, one thread per
    core.

    A sampler whose chains move with parts of their own
    (:meth:`~hamiltonia.samplers.Sampler.chain_groups`: a metric adapted per chain) is
    composed once per group of chains, with that group's parts installed
    (:meth:`~hamiltonia.samplers.Sampler.parts_of`): the groups share the composed kernel
    (the same parts' kernels, reading the same names) and differ in their parameters'
    values, which each chain's kernel call is given.
    """

    def __init__(self, sampler, kernel: NumbaTarget, device: str = "cpu"):
        import weakref

        from hamiltonia.compiled import callback

        self.sampler = sampler
        self.kernel = kernel
        self.device = device
        self.calls_python = callback.entry_of(kernel) is not None
        if device != "cpu" and self.calls_python:
            raise NotCompilable(
                f"target {type(sampler.target).__name__} is Python code called back from the "
                f"chain, which cannot run on the device {device!r}: give it a numba kernel"
            )
        weakref.finalize(self, callback.release, kernel)
        self.workers = max(1, os.cpu_count() or 1)
        self._pool: ThreadPoolExecutor | None = None
        # The compositions of the chains (layout and composed kernel), kept after warm-up.
        self._frozen: list | None = None
        #: What the parts published in the last iteration of the last chunk, by name, one row
        #: per chain (:attr:`~hamiltonia.compiled.parts.PartKernels.published`).
        self.published: dict[str, np.ndarray] = {}

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
        if self.device == "cpu":
            self.chain_kernel = _composed(layout)
        else:
            self.chain_kernel = _composed_device(layout, self.kernel)
        return layout

    def _compositions(self, n_chains: int) -> list:
        """``(layout, chain kernel)`` of each chain: one for all, or each group's with its
        parts installed (the same statistics and auxiliary variables in every group, or
        ``NotCompilable`` naming what differs)."""
        groups = getattr(self.sampler, "chain_groups", lambda _: None)(n_chains)
        if groups is not None and self.device != "cpu":
            raise NotCompilable(
                "chains with parts of their own (a metric adapted per chain) run on the CPU "
                f"only, not on the device {self.device!r}"
            )
        if groups is None:
            layout = self.layout()
            return [(layout, self.chain_kernel)] * n_chains
        out: list = [None] * n_chains
        for group in groups:
            with self.sampler.parts_of(group):
                layout = self.layout()
            for c in group:
                out[c] = (layout, self.chain_kernel)

        def shape(layout):  # the columns and the places of the auxiliary variables
            return layout.stats, [entry[:3] for entry in layout.aux], layout.n_aux

        first = shape(out[0][0])
        if any(shape(layout) != first for layout, _ in out):
            raise NotCompilable(
                "the chains' parts lay out different statistics or auxiliary variables"
            )
        return out

    def run(self, chain, rngs, n_iter: int, adapt: bool, out_q: np.ndarray, out_stats: np.ndarray,
            out_grad: np.ndarray | None = None):  # fmt: skip
        """Advance all chains ``n_iter`` iterations, writing ``out_q[c, :n_iter]`` and
        ``out_stats[c, :n_iter]`` (columns of :meth:`layout`'s ``stats``) and, when given,
        the gradients of the log density at the draws to ``out_grad[c, :n_iter]``; with
        ``adapt``, the step-size tuner runs inside the kernel. Returns the layout used.

        During warm-up the layout is rebuilt for every chunk (a tuner may have changed a
        part since); after it, the parts are frozen and the first sampling layout is kept.
        A sampler whose chains move in groups with parts of their own has a layout per group
        (:meth:`_compositions`), whose parameters its chains' kernel calls read.
        """
        phase = chain.phase
        n_chains = phase.q.shape[0]
        if adapt or self._frozen is None or len(self._frozen) != n_chains:
            compositions = self._compositions(n_chains)
            self._frozen = None if adapt else compositions
        else:
            compositions = self._frozen
        layout = compositions[0][0]
        from hamiltonia.compiled import callback

        def own(a):
            return np.array(a, dtype=np.float64, order="C", copy=True)

        q, p, grad = own(phase.q), own(phase.p), own(phase.grad)
        lp, eps = own(phase.log_prob), own(chain.step_size)
        aux = np.zeros((n_chains, layout.n_aux))
        for name, offset, size, initial in layout.aux:
            # A variable the chains do not hold yet starts at the part's initial value.
            if name not in phase.aux:
                start = np.broadcast_to(np.asarray(initial, dtype=np.float64), (size,))
                phase.aux[name] = np.tile(start, (n_chains, 1))
            value = phase.aux[name]
            aux[:, offset : offset + size] = np.reshape(value, (n_chains, size))
        tuner = layout.tuner if adapt else None
        state = getattr(tuner, "state", None)
        tune_state = own(state) if state is not None else np.zeros((n_chains, 1))
        fn, fdata, idata = self.kernel.function, self.kernel.fdata, self.kernel.idata
        rows = layout.scratch_rows
        mirror = self.sampler.reducer.mirrored(n_chains)
        if out_grad is None:
            out_grad = np.empty((n_chains, 0, phase.q.shape[1]))

        if self.device != "cpu":
            from hamiltonia.compiled.device_chain import run_on_device

            state_arrays = (q, p, grad, lp, eps, aux, tune_state)
            run_on_device(
                self.chain_kernel, layout, self.kernel, rngs, state_arrays,
                np.asarray(mirror, dtype=bool), n_iter, tuner is not None,
                (out_q, out_stats, out_grad),
            )  # fmt: skip
            return self._keep(chain, layout, state_arrays, adapt, tuner)

        from hamiltonia.compiled import pcg64_stream

        streams = np.stack([pcg64_stream.state_of(rng) for rng in rngs])
        mirror = np.ascontiguousarray(mirror, dtype=np.bool_)
        adapting = tuner is not None

        def block(first, stride, PF, PI):
            chain_kernel = compositions[first][1]
            chain_kernel(
                first, stride, q, p, grad, lp, eps, aux, streams, mirror, n_iter, adapting,
                tune_state, PF, PI, fn, fdata, idata, out_q, out_stats, out_grad, rows,
            )  # fmt: skip

        if self.calls_python or len({id(layout) for layout, _ in compositions}) > 1:
            # A chain at a time: a Python target is told which chain it serves, and groups
            # of chains have parameters of their own.
            def task(c):
                if self.calls_python:
                    callback.set_chain(c)
                block(c, n_chains, compositions[c][0].PF, compositions[c][0].PI)

            tasks = list(range(n_chains))
        else:
            # A few tasks per thread, each a stride of chains in one call of the kernel: a
            # thread that finishes early takes the next (NUTS chains differ in cost).
            stride = min(n_chains, 4 * min(self.workers, n_chains))

            def task(first):
                block(first, stride, layout.PF, layout.PI)

            tasks = list(range(stride))
        if len(tasks) == 1 or self.workers == 1:
            for t in tasks:
                task(t)
        else:
            if self._pool is None:
                self._threads = min(self.workers, n_chains)
                self._pool = ThreadPoolExecutor(max_workers=self._threads)
            list(self._pool.map(task, tasks))
        for rng, state in zip(rngs, streams, strict=True):
            pcg64_stream.set_state(rng, state)
        # A Python target's error stops the run here, before the chunk's state is kept.
        callback.raise_error(self.kernel)
        return self._keep(chain, layout, (q, p, grad, lp, eps, aux, tune_state), adapt, tuner)

    def _keep(self, chain, layout, arrays, adapt, tuner):
        """Keep a chunk's end state (``arrays``: the state the kernel updated) in ``chain``,
        and what the parts published."""
        phase = chain.phase
        q, p, grad, lp, eps, aux, tune_state = arrays
        state = getattr(tuner, "state", None)
        phase.q, phase.p, phase.grad, phase.log_prob = q, p, grad, lp
        for name, offset, size, _ in layout.aux:
            shape = np.shape(phase.aux[name])
            phase.aux[name] = aux[:, offset : offset + size].reshape(shape)
        chain.step_size = eps
        # What the parts published, for the tuners of warm-up (sampling publishes nothing).
        self.published = {
            name: aux[:, offset : offset + size].copy() for name, offset, size in layout.published
        } if adapt else {}  # fmt: skip
        if tuner is not None and state is not None:
            tuner.state = tune_state
        return layout
