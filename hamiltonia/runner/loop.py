"""The run loop: warm-up then sampling for every chain, written once over the path a run
chose (:mod:`hamiltonia.runner.paths`: the NumPy path, one vectorised iteration at a time, or
the compiled chain kernel, in chunks), recording the draws and statistics
(:class:`~hamiltonia.runner.recording.Recorder`), with the warm-up's checkpoints, the
sampling's (through the recorder) and the progress bar; and the choice of path
(:func:`choose_path`).

:func:`run_chains` is the one entry: :func:`hamiltonia.sample` and the executors' tasks
(:mod:`hamiltonia.runner.executors`) both run their iterations through it, so the two
sides cannot drift apart, nor can the two paths.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import time
import warnings

import numpy as np

from hamiltonia.runner.paths import path_for
from hamiltonia.runner.recording import Recorder

__all__ = [
    "COMPILED_REASON",
    "KEPT_REASON",
    "FallbackWarning",
    # The recorder the loop fills, under the name the documentation and the executors use.
    "Recorder",
    "Spelling",
    "choose_path",
    "choose_plan",
    "run_chains",
    "spelled",
]


class FallbackWarning(UserWarning):
    """A run that could have been compiled runs on the NumPy path: a part (named in the
    message) has no compiled counterpart."""


@contextlib.contextmanager
def publishing(smp):
    """Within: the trajectory of ``smp`` publishes what its warm-up tuners read
    (:attr:`~hamiltonia.tuners.Tuner.reads`) into every iteration's ``info``; after: it
    publishes nothing, and sampling pays nothing for it."""
    trajectory = getattr(smp, "trajectory", None)
    wanted = any(getattr(tuner, "reads", ()) for tuner in smp.tuners)
    if trajectory is None or not wanted:
        yield
        return
    trajectory.publish = True
    try:
        yield
    finally:
        trajectory.publish = False


def _share_step_size(smp, state, rngs) -> None:
    """After warm-up, the secondary chain of each antithetic pair takes its primary's step
    size (the research tunes X and reuses its step size for Y) and generator state."""
    if smp.reducer.pairs and state.step_size is not None:
        step = np.array(np.broadcast_to(state.step_size, (len(rngs),)), dtype=float)
        smp.reducer.rejoin(step, rngs)
        state.step_size = step


def run_chains(plan, smp, target, state, rngs, warmup, draws, rec, bar, start=0, thin=1,
               warm_rec=None, warm_from=0, on_warmup=None, finalize=True):  # fmt: skip
    """Warm-up iterations ``warm_from`` to ``warmup``, then kept draws ``start`` to
    ``draws`` (``thin`` iterations each), on the path the run chose
    (:func:`~hamiltonia.runner.paths.path_for`: compiled with ``plan``, else NumPy).

    Parameters
    ----------
    plan : hamiltonia.compiled.plan.CompiledPlan or None
        The compiled plan (:func:`choose_path`), ``None`` for the NumPy path.
    smp, target, state, rngs
        The sampler, its target, the chains' state and their generators.
    warmup, draws : int
        The warm-up iterations to reach and the kept draws to reach.
    rec : hamiltonia.runner.recording.Recorder
        Receives each block of kept draws (and checkpoints after it).
    bar : tqdm
        The progress bar (iterations; the divergences so far as its postfix).
    start : int
        The kept draws already made (a resumed run).
    thin : int
        Iterations per kept draw.
    warm_rec : hamiltonia.runner.recording.Recorder, optional
        Receives each block of warm-up iterations, unthinned (``save_warmup``).
    warm_from : int
        The warm-up iterations already made (a run resumed in warm-up).
    on_warmup : callable, optional
        ``on_warmup(state, done)`` after each block of warm-up iterations (one iteration on
        the NumPy path, a chunk on the compiled path): the warm-up's checkpoints.
    finalize : bool
        Whether the tuners ``finalize`` at the end of warm-up: not on a run resumed after
        its warm-up, whose tuners never started.

    Returns
    -------
    state : ChainState
        The chains' state after the last draw.
    t1 : float
        When sampling began (``time.perf_counter()``).
    """
    path = path_for(plan, smp, target, state, rec, thin)
    with path:
        with publishing(smp):
            for first, n in path.warmup_blocks(warm_from, warmup):
                state, block = path.warm(state, rngs, first, n, warm_rec is not None)
                if warm_rec is not None:
                    warm_rec.record(block.rows, target.constrain(block.q), block.stats, None)
                path.adapt(state, block, first)
                bar.update(n)
                if on_warmup is not None:
                    on_warmup(state, first + n)
        # Not on a resume after warm-up: its tuners never started, and the parameters they
        # adapted are restored from the file (a plugin's finalize could overwrite them).
        if finalize:
            for tuner in smp.tuners:
                tuner.finalize(smp, state)
        # Not on a resume after warm-up (warmup=0): the file holds the chains' states after it.
        if warmup:
            _share_step_size(smp, state, rngs)
        t1 = time.perf_counter()
        bar.set_description(f"{smp.name} sampling")
        for first, n in path.sampling_blocks(start, draws):
            state, block = path.sample(state, rngs, first, n, bar)
            q = None if block.q is None else target.constrain(block.q)
            rec.record(block.rows, q, block.stats, block.log_weight, state, block.grad)
            if block.unshown:
                bar.update(block.unshown)
            if path.postfix_due(first):
                bar.set_postfix_str(f"divergences={rec.n_divergent}", refresh=False)
    return state, t1


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
    from hamiltonia.state import _DEVICE

    device = _DEVICE.get()
    if device != "cpu":
        return _device_path(smp, compiled, device)
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
    from hamiltonia.compiled import NotCompilable, TargetNotCompiled, plan_for
    from hamiltonia.state import _REJECT_ON

    # A part written only as a kernel, or a compiled path asked for, runs compiled whatever
    # the target: one with no kernel of its own is called back from the compiled chain. So
    # does, by default, a target whose call on one point costs little beyond its own work
    # (Target.compiled_callback: a jitted JAX function), for which the compiled tree wins.
    called_back = compiled is None and bool(getattr(smp.target, "compiled_callback", False))
    python_target = compiled is True or bool(kernel_only) or called_back
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
        if isinstance(err, TargetNotCompiled):
            # Every part compiles: the target is written for the NumPy path (autograd,
            # NumPy), which is its path, not a fallback to warn of at every run.
            return None, f"numpy: {err}"
        warnings.warn(
            f"running on the NumPy path (slower): {err}; pass {spelling.numpy} to silence this",
            FallbackWarning,
            stacklevel=stacklevel,
        )
        return None, f"numpy: {err}"
    if not plan.calls_python:
        return plan, COMPILED_REASON
    if kernel_only:
        why = kernel_only[0] + " is written only as a kernel"
    elif called_back:
        why = "its calls on one point are cheap: Target.compiled_callback"
    else:
        why = spelling.required
    return plan, (
        f"compiled: the target has no compiled kernel and is called back from the compiled "
        f"chain ({why})"
    )


def _device_path(smp, compiled, device: str):
    """The compiled plan on ``device`` (not the CPU) and its reason, or ``ValueError``
    naming why the sampler cannot run there: a device run is asked for, never a fallback."""
    from hamiltonia.compiled import NotCompilable, plan_for
    from hamiltonia.compiled.device_chain import check_available

    if compiled is False:
        raise ValueError(f"device={device!r} runs the compiled chain, but compiled=False was asked")
    check_available(device)
    try:
        plan = plan_for(smp, device=device)
    except NotCompilable as err:
        raise ValueError(f"device={device!r} needs the compiled path, but {err}") from None
    return plan, f"{COMPILED_REASON}, on device {device!r}"


def kernel_only_parts(smp) -> list[str]:
    """The parts of ``smp`` written only as a kernel (no Python form of their maths), as
    ``"refresh OccasionalRefresh (OccasionalRefresh.refresh)"``: they run on the compiled
    path only (:func:`hamiltonia.compiled.parts.python_form_missing`)."""
    from hamiltonia.compiled.parts import python_form_missing

    listed = smp.compiled_parts() if hasattr(smp, "compiled_parts") else None
    parts = [(part, kind, *context) for part, kind, *context in (listed or {}).values()]
    parts += [(tuner, "tuner") for tuner in getattr(smp, "tuners", ())]
    found = []
    for part, kind, *context in parts:
        missing = python_form_missing(part)
        if missing is not None and not _declines_kernel(part, smp, *context):
            found.append(f"{kind} {type(part).__name__} ({missing})")
    return found


def _declines_kernel(part, smp, context=None) -> bool:
    """Whether ``part.compiled`` returns ``None`` (a subclass may opt out of its parent's
    kernel that way): its Python methods are then the only form, not a stale one."""
    dim = getattr(getattr(smp, "target", None), "dim", None)
    if dim is None:
        return False
    try:
        return part.compiled(dim, **(context or {})) is None
    except Exception:  # a kernel that cannot be built here is the compiled path's to report
        return False


def choose_plan(smp, compiled):
    """The compiled plan of :func:`choose_path`, or ``None`` for the NumPy path."""
    return choose_path(smp, compiled, stacklevel=5)[0]
