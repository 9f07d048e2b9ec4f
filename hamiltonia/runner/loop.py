"""The run loop: iterations of every chain on the path a run chose (the NumPy path, one
vectorised step at a time, or the compiled chain kernel, in chunks), and the recording of
their draws and statistics.

:func:`run_chains` is the one entry: :func:`hamiltonia.sample` and the executors' tasks
(:mod:`hamiltonia.runner.executors`) both run their iterations through it, so the two
sides cannot drift apart.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import time
import warnings

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia.results import Result
from hamiltonia.runner.thinning import kept, thin_group, thin_statistics
from hamiltonia.state import ModelError
from hamiltonia.targets.base import Target

__all__ = [
    "COMPILED_REASON",
    "KEPT_REASON",
    "Chunker",
    "FallbackWarning",
    "Recorder",
    "Spelling",
    "choose_path",
    "choose_plan",
    "run_chains",
    "spelled",
]

#: Most numbers (draws and statistics, all chains) one compiled chunk writes: 16 MB.
CHUNK_BUFFER_FLOATS = 2**21


class FallbackWarning(UserWarning):
    """A run that could have been compiled runs on the NumPy path: a part (named in the
    message) has no compiled counterpart."""


class Recorder:
    """Buffers for the retained draws and the declared statistics."""

    def __init__(self, chains: int, draws: int, dim: int, stats, checkpoint=None,
                 gradients: bool = False, sampler_dim: int | None = None,
                 first: int = 0):  # fmt: skip
        # Row 0 holds iteration ``first``: a warm-up resumed from a checkpoint records from
        # the start of its unfinished thinning group on.
        self.first = first
        self.q = np.empty((chains, draws, dim))
        # The gradient of the log density at each draw (in the sampler's coordinates), for
        # a reducer that reads it.
        grad_dim = dim if sampler_dim is None else sampler_dim
        self.grads = np.empty((chains, draws, grad_dim)) if gradients else None
        self.declared = tuple(stats)
        self.stats: dict[str, np.ndarray] = {}
        self.log_weights: np.ndarray | None = None
        self.n_divergent = 0
        self.n_done = 0
        self.shape = (chains, draws)
        self.checkpoint = checkpoint  # called with the chain state after each stored block

    def record(self, it, q, info: dict, log_weight, state=None, grad=None) -> None:
        """Store iteration ``it`` (an index, or a slice for a block of iterations); ``q``
        unless the draws were written in place (``None``), ``grad`` where the gradients are
        kept and were not written in place."""
        if self.first:
            shift = self.first
            it = slice(it.start - shift, it.stop - shift) if isinstance(it, slice) else it - shift
        if q is not None:
            self.q[:, it] = array_backend.to_numpy(q)
        if self.grads is not None and grad is not None:
            self.grads[:, it] = array_backend.to_numpy(grad)
        for name, dtype in self.declared:
            if name not in info:
                raise KeyError(f"the sampler declared the statistic {name!r} but did not report it")
            if name not in self.stats:
                self.stats[name] = np.empty(self.shape, dtype=dtype)
            self.stats[name][:, it] = array_backend.to_numpy(info[name])
        if log_weight is not None:
            if self.log_weights is None:
                self.log_weights = np.empty(self.shape)
            self.log_weights[:, it] = array_backend.to_numpy(log_weight)
        self.n_divergent += int(np.sum(info["diverging"]))
        self.n_done = it.stop if isinstance(it, slice) else it + 1
        if self.checkpoint is not None:
            self.checkpoint(state)

    def prefill(self, previous: Result) -> None:
        """Start from the draws of an earlier, interrupted part of the same run."""
        n = previous.n_draws
        if n == 0:  # a run spread over tasks, stopped before any task finished
            return
        self.q[:, :n] = previous.draws
        for name, values in previous.stats.items():
            self.stats[name] = np.empty(self.shape, dtype=values.dtype)
            self.stats[name][:, :n] = values
        if previous.log_weights is not None:
            self.log_weights = np.empty(self.shape)
            self.log_weights[:, :n] = previous.log_weights
        if self.grads is not None:
            if previous.gradients is None:
                raise ValueError("the interrupted run kept no gradients to continue from")
            self.grads[:, :n] = previous.gradients
        self.n_divergent = int(np.sum(previous.stats["diverging"]))
        self.n_done = n

    def prefill_statistics(self, stats: dict) -> None:
        """Start from the statistics of ``n`` iterations already made (``(chains, n)`` each)
        whose draws are not needed: the unfinished thinning group of a warm-up resumed from
        a checkpoint, of which only the statistics enter the kept draw."""
        n = 0
        for name, dtype in self.declared:
            values = stats[name]
            n = values.shape[1]
            self.stats[name] = np.empty(self.shape, dtype=dtype)
            self.stats[name][:, :n] = values
        # Never kept (the group's last iteration is still to come): NaN would show a bug.
        self.q[:, :n] = np.nan
        self.n_done = n

    def truncated(self):
        """Draws, statistics, weights and gradients of the iterations completed so far."""
        n = self.n_done
        stats = {k: v[:, :n] for k, v in self.stats.items()}
        weights = None if self.log_weights is None else self.log_weights[:, :n]
        grads = None if self.grads is None else self.grads[:, :n]
        return self.q[:, :n], stats, weights, grads


class Chunker:
    """Splits ``[start, stop)`` into chunks for the compiled path: small at first, doubling
    while a chunk takes under ``target_seconds`` (so the progress bar and persisted draws stay
    fresh while calls from Python stay rare), and cut at every tuner boundary."""

    def __init__(self, target_seconds: float = 0.1, first: int = 8, largest: int = 4096):
        self.size, self.target_seconds, self.largest = first, target_seconds, largest

    def split(self, start: int, stop: int, boundaries=()):
        cuts = sorted({b for b in boundaries if start < b < stop} | {stop})
        first = start
        for cut in cuts:
            while first < cut:
                n = min(self.size, cut - first)
                began = time.perf_counter()
                yield first, n
                if time.perf_counter() - began < self.target_seconds and n == self.size:
                    self.size = min(2 * self.size, self.largest)
                first += n


def _share_step_size(smp, state, rngs) -> None:
    """After warm-up, the secondary chain of each antithetic pair takes its primary's step
    size (the research tunes X and reuses its step size for Y) and generator state."""
    if smp.reducer.pairs and state.step_size is not None:
        step = np.array(np.broadcast_to(state.step_size, (len(rngs),)), dtype=float)
        smp.reducer.rejoin(step, rngs)
        state.step_size = step


def _step(smp, state, rngs, it, phase):
    try:
        return smp.step(state, rngs)
    except ModelError as err:
        raise err.during(f"iteration {it} of {phase}") from err.__cause__


def _draw_stats(info: dict, state) -> dict:
    """The statistics of an iteration with the step size it used and the draw's log density."""
    step = None if state.step_size is None else np.array(state.step_size, dtype=float)
    return {**info, "step_size": step, "lp": state.phase.log_prob}


def _run_numpy(smp, target, state, rngs, warmup, draws, rec, bar, start=0, thin=1,
               warm_rec=None, warm_from=0, on_warmup=None):  # fmt: skip
    for it in range(warm_from, warmup):
        state, info = _step(smp, state, rngs, it, "warm-up")
        if warm_rec is not None:
            warm_rec.record(it, target.constrain(state.phase.q), _draw_stats(info, state), None)
        for tuner in smp.tuners:
            tuner.update(smp, state, info, it)
        bar.update(1)
        if on_warmup is not None:
            on_warmup(state, it + 1)
    for tuner in smp.tuners:
        tuner.finalize(smp, state)
    # Not on a resume after warm-up (warmup=0): the file holds the chains' states after it.
    if warmup:
        _share_step_size(smp, state, rngs)
    t1 = time.perf_counter()
    bar.set_description(f"{smp.name} sampling")
    names = list(dict.fromkeys([name for name, _ in rec.declared] + ["diverging"]))
    for k in range(start, draws):
        group = []
        for it in range(k * thin, (k + 1) * thin):
            state, info = _step(smp, state, rngs, it, "sampling")
            group.append(_draw_stats(info, state))
            bar.update(1)
        if thin > 1:
            host = [{k: array_backend.to_numpy(g[k]) for k in names} for g in group]
            info = thin_group(host, names, len(rngs))
        else:
            info = group[0]
        rec.record(
            k, target.constrain(state.phase.q), info, smp.log_weight(state), state,
            state.phase.grad,
        )  # fmt: skip
        if k % 50 == 0:
            bar.set_postfix_str(f"divergences={rec.n_divergent}", refresh=False)
    return state, t1


def _columns(layout, block: np.ndarray) -> dict:
    """The statistics of a block of compiled iterations, by name, in their declared dtypes
    (views of ``block`` where the dtype is the kernel's own: the recorder copies them)."""
    return {
        name: block[..., i] > 0 if dtype == "bool" else block[..., i].astype(dtype, copy=False)
        for i, (name, dtype) in enumerate(layout.stats)
    }


def _run_compiled(plan, smp, target, state, rngs, warmup, draws, rec, bar, start=0,
                  chunker=None, thin=1, warm_rec=None, warm_from=0, on_warmup=None):  # fmt: skip
    chains, dim = state.phase.q.shape
    n_stats = len(plan.layout().stats)
    if chunker is None:
        # Chunks grow until one lasts a tenth of a second, within a buffer of bounded size:
        # on a cheap target a fixed cap of 4096 iterations made the calls from Python between
        # chunks 15 % of the sampling time.
        largest = CHUNK_BUFFER_FLOATS // (chains * (dim + n_stats) * thin)
        chunker = Chunker(largest=int(min(max(largest, 64), 2**20)))
    # A sampling chunk of n kept draws runs n * thin iterations; a warm-up chunk, at most
    # chunker.largest iterations.
    rows = chunker.largest * thin
    buf_q = np.empty((chains, rows, dim))
    # Draws go through the target's constrain into the recorder, which may hold another
    # number of reported values than the sampler's dimension.
    buf_s = np.empty((chains, rows, n_stats))
    buf_g = np.empty((chains, rows, dim)) if rec.grads is not None and thin > 1 else None
    boundaries = [b for tuner in smp.tuners for b in tuner.boundaries(warmup)]
    # Chunks from a warm-up checkpoint are cut differently, which changes no draw: the
    # kernel carries every chain's state (and dual averaging's) from one chunk to the next,
    # and the tuners that act between chunks act at their boundaries, which are always cuts.
    for first, n in chunker.split(warm_from, warmup, boundaries):
        layout = plan.run(state, rngs, n, True, buf_q[:, :n], buf_s[:, :n])
        if warm_rec is not None:
            warm_rec.record(
                slice(first, first + n), target.constrain(buf_q[:, :n]),
                _columns(layout, buf_s[:, :n]), None,
            )  # fmt: skip
        for tuner in smp.tuners:
            tuner.update_chunk(smp, state, buf_q[:, :n], first)
        bar.update(n)
        if on_warmup is not None:
            on_warmup(state, first + n)
    for tuner in smp.tuners:
        tuner.finalize(smp, state)
    # Not on a resume after warm-up (warmup=0): the file holds the chains' states after it.
    if warmup:
        _share_step_size(smp, state, rngs)
    t1 = time.perf_counter()
    bar.set_description(f"{smp.name} sampling")
    # Unthinned draws of a target that reports its unconstrained values go straight into the
    # recorder: copying them from the buffer cost 10-20 % of an iteration on a cheap target.
    in_place = thin == 1 and type(target).constrain is Target.constrain and rec.q.shape[-1] == dim
    for first, n in chunker.split(start, draws):
        block, m = slice(first, first + n), n * thin
        grads = None if rec.grads is None else rec.grads[:, block] if thin == 1 else buf_g[:, :m]
        out_q = rec.q[:, block] if in_place else buf_q[:, :m]
        layout = plan.run(state, rngs, m, False, out_q, buf_s[:, :m], grads)
        info = thin_statistics(_columns(layout, buf_s[:, :m]), thin)
        # Importance weights travel in a statistics column of the kernel.
        weights = info.pop(getattr(smp.reducer, "column", None), None)
        if buf_g is not None:
            rec.grads[:, block] = kept(grads, thin)
        draws_q = None if in_place else target.constrain(kept(buf_q[:, :m], thin))
        rec.record(block, draws_q, info, weights, state)
        bar.update(m)
        bar.set_postfix_str(f"divergences={rec.n_divergent}", refresh=False)
    return state, t1


def run_chains(plan, smp, target, state, rngs, warmup, draws, rec, bar, start=0, thin=1,
                warm_rec=None, warm_from=0, on_warmup=None):  # fmt: skip
    """Warm-up iterations ``warm_from`` to ``warmup`` (``on_warmup(state, done)`` after each
    iteration or compiled chunk), then kept draws ``start`` to ``draws``, on the path the
    run chose (compiled with ``plan``, else NumPy). Returns the state and when sampling
    began."""
    if plan is None:
        return _run_numpy(smp, target, state, rngs, warmup, draws, rec, bar, start, thin,
                          warm_rec, warm_from, on_warmup)  # fmt: skip
    with plan:
        return _run_compiled(plan, smp, target, state, rngs, warmup, draws, rec, bar, start,
                             thin=thin, warm_rec=warm_rec, warm_from=warm_from,
                             on_warmup=on_warmup)  # fmt: skip


#: The reason recorded for a run on the compiled path (``result.attrs["path_reason"]``).
COMPILED_REASON = "compiled: every part has a compiled counterpart"
#: The start of the reason of a resumed run that kept the NumPy path of the run it continues.
KEPT_REASON = "numpy: kept from the run it continues"


@dataclasses.dataclass(frozen=True)
class Spelling:
    """How the caller spells the choice of path, for the messages that give advice: from
    Python ``compiled=True`` / ``compiled=False``, from the command line ``--compiled`` /
    ``--no-compiled`` (:func:`spelled`)."""

    #: Starts the ``ValueError`` of a compiled path that was required and is not possible.
    required: str = "compiled=True"
    #: The option that asks for the NumPy path.
    numpy: str = "compiled=False"


#: The spelling in force (None: Python's).
_SPELLING: contextvars.ContextVar[Spelling | None] = contextvars.ContextVar(
    "hamiltonia_compiled_spelling", default=None
)


@contextlib.contextmanager
def spelled(spelling: Spelling):
    """Within the block, the messages of :func:`choose_path` name the options as
    ``spelling`` does (the command line's ``--compiled`` / ``--no-compiled``)."""
    token = _SPELLING.set(spelling)
    try:
        yield
    finally:
        _SPELLING.reset(token)


def choose_path(smp, compiled, *, kept=None, stacklevel=4):
    """The path a run takes and why: ``(plan, reason)``, ``plan`` the compiled plan or
    ``None`` for the NumPy path, ``reason`` a line for ``result.attrs["path_reason"]``
    (``"compiled: ..."`` or ``"numpy: ..."``).

    ``compiled`` is as in :func:`hamiltonia.sample`: ``None`` compiles where every part
    allows it and warns :class:`FallbackWarning` naming the part where not; ``True``
    requires it (``ValueError`` naming the part); ``False`` asks for the NumPy path. For a
    resume that keeps the path of the run it continues, ``compiled`` is that run's path and
    ``kept`` its ``path_reason`` (``""`` for a file that recorded none). The messages name
    the options as the caller spells them (:func:`spelled`)."""
    spelling = _SPELLING.get() or Spelling()
    kernel_only = kernel_only_parts(smp)
    if compiled is False and kernel_only:
        raise ValueError(
            f"{spelling.numpy} was asked but {kernel_only[0]} is written only as a kernel, "
            "with no Python form: it runs on the compiled path only"
        )
    if compiled is False:
        if kept is None:
            return None, f"numpy: {spelling.numpy} was asked"
        if kept.startswith(KEPT_REASON):
            return None, kept
        why = kept.removeprefix("numpy: ")
        return None, f"{KEPT_REASON}: {why}" if why else KEPT_REASON
    from hamiltonia.compiled import NotCompilable, plan_for
    from hamiltonia.state import _REJECT_ON

    # A part written only as a kernel, or a compiled path asked for, runs compiled whatever
    # the target: one with no kernel of its own is called back from the compiled chain.
    python_target = compiled is True or bool(kernel_only)
    try:
        plan = plan_for(smp, python_target=python_target, reject_on=_REJECT_ON.get())
    except NotCompilable as err:
        if kept is not None:
            raise ValueError(
                f"the run ran on the compiled path but {err}; pass {spelling.numpy} to "
                "continue it on the NumPy path"
            ) from None
        if compiled is True:
            raise ValueError(f"{spelling.required} but {err}") from None
        if kernel_only:
            raise ValueError(
                f"{kernel_only[0]} is written only as a kernel, but the sampler cannot run "
                f"compiled: {err}"
            ) from None
        warnings.warn(
            f"running on the NumPy path (slower): {err}; pass {spelling.numpy} to silence this",
            FallbackWarning,
            stacklevel=stacklevel,
        )
        return None, f"numpy: {err}"
    if not plan.calls_python:
        return plan, COMPILED_REASON
    why = kernel_only[0] + " is written only as a kernel" if kernel_only else spelling.required
    return plan, (
        f"compiled: the target has no compiled kernel and is called back from the compiled "
        f"chain ({why})"
    )


def kernel_only_parts(smp) -> list[str]:
    """The parts of ``smp`` written only as a kernel (no Python form of their maths), as
    ``"refresh OccasionalRefresh (OccasionalRefresh.refresh)"``: they run on the compiled
    path only (:func:`hamiltonia.compiled.parts.python_form_missing`)."""
    from hamiltonia.compiled.parts import python_form_missing

    listed = smp.compiled_parts() if hasattr(smp, "compiled_parts") else None
    parts = [(part, kind) for part, kind, *_ in (listed or {}).values()]
    parts += [(tuner, "tuner") for tuner in getattr(smp, "tuners", ())]
    found = []
    for part, kind in parts:
        missing = python_form_missing(part)
        if missing is not None:
            found.append(f"{kind} {type(part).__name__} ({missing})")
    return found


def choose_plan(smp, compiled):
    """The compiled plan of :func:`choose_path`, or ``None`` for the NumPy path."""
    return choose_path(smp, compiled, stacklevel=5)[0]
