"""A run's output while it runs: the :class:`~hamiltonia.Result` of the iterations made so far,
and the checkpoints that append them to the unfinished run file.

:class:`RunOutput` is what :func:`hamiltonia.sample` keeps of a run between its iterations:
when it began and when its sampling began, the state from which :func:`hamiltonia.resume`
continues exactly (:mod:`hamiltonia.runner.resume_state`), and when the file was last brought
up to date. The run loop calls it after each block of warm-up iterations
(:meth:`RunOutput.warmup_checkpoint`) and, through the recorder, after each stored block of
draws (:meth:`RunOutput.checkpoint`); both write the run file every ``checkpoint_seconds``
(:class:`~hamiltonia.results.runfile.RunFile`: each block and manifest written atomically).
At the end it writes the finished run (:meth:`RunOutput.write_final`). The run's attributes
(:func:`new_run_attrs`, :func:`continued_attrs`) say how to rebuild and read it.
"""

from __future__ import annotations

import json
import time
import warnings

import numpy as np

from hamiltonia.results import Result
from hamiltonia.runner import resume_state

__all__ = ["RunOutput", "continued_attrs", "json_safe", "new_run_attrs"]


def json_safe(value):
    """``value`` with NumPy arrays and scalars as lists and numbers (floats written by
    ``repr``, so read back exactly) and everything else JSON cannot hold as its ``str``."""

    def plain(obj):
        if isinstance(obj, np.ndarray | np.generic):
            return obj.tolist()
        return str(obj)

    return json.loads(json.dumps(value, default=plain))


def new_run_attrs(target, smp, path_reason, compiled, seq, options, *, chains, warmup, draws,
                  thin, save_warmup) -> dict:  # fmt: skip
    """The attributes of a new run (:attr:`Result.attrs`): how to rebuild and read it.

    ``seq`` is the run's ``SeedSequence``, ``compiled`` and ``path_reason`` its path and why
    (:func:`~hamiltonia.runner.loop.choose_path`), ``options`` the sampler's options by name,
    ``draws`` the kept draws per chain (``draws * thin`` iterations)."""
    attrs = {
        "seed_entropy": str(seq.entropy),
        **({"seed_spawn_key": str(list(seq.spawn_key))} if seq.spawn_key else {}),
        "chains": chains,
        "warmup": warmup,
        # Sampling iterations; draws // thin of them are kept.
        "draws": draws * thin,
        "thin": thin,
        "save_warmup": save_warmup,
        "compiled": compiled,
        "path_reason": path_reason,
        "options": {k: (v if np.isscalar(v) or v is None else repr(v)) for k, v in options.items()},
        "target_params": getattr(target, "registered_params", {}),
        # The refresh's memory rho (0: a fresh momentum each iteration), which the E-BFMI
        # check reads.
        "momentum_memory": float(getattr(getattr(smp, "refresh", None), "rho", 0.0)),
        # Chains 2k and 2k+1 are an antithetic pair (reducers.antithetic); [] if none.
        "antithetic_pairs": smp.reducer.pairing(chains),
    }
    # A no-U-turn trajectory's depth limit, which the tree-depth check reads.
    trajectory = getattr(smp, "trajectory", None) or getattr(
        getattr(smp, "inner", None), "trajectory", None
    )
    if getattr(trajectory, "max_tree_depth", None) is not None:
        attrs["max_tree_depth"] = int(trajectory.max_tree_depth)
    # A jittered step size, which tells the resonance check a fixed length does not resonate.
    if getattr(trajectory, "step_size_jitter", 0.0):
        attrs["step_size_jitter"] = float(trajectory.step_size_jitter)
    if target.blocks is not None:
        # Named blocks with shapes and dims: the ArviZ variables of the draws.
        attrs["blocks"] = target.blocks
        attrs["coords"] = target.coords
    if target.observed_dims:
        attrs["observed_dims"] = target.observed_dims
    order = getattr(smp.reducer, "order", None)
    if smp.reducer.records_gradients and order is not None:
        attrs["control_variates"] = order
    return attrs


def continued_attrs(previous: Result, compiled: bool, path_reason: str) -> dict:
    """The attributes of a run that continues ``previous`` (an interrupted run): its own,
    less those of its progress, with this part's own path and why (a resume may be told to
    take the other one)."""
    dropped = ("complete", "draws_done", "warmup_done")
    attrs = {k: v for k, v in previous.attrs.items() if k not in dropped}
    attrs["compiled"] = compiled
    attrs["path_reason"] = path_reason
    return attrs


class RunOutput:
    """The output of a run in progress, and its checkpoints.

    Parameters
    ----------
    target, smp, rngs
        The run's target, sampler and the chains' generators.
    attrs : dict
        The run's attributes (:attr:`Result.attrs`), shared with the caller, which may add
        to them while the run goes on.
    rec : hamiltonia.runner.recording.Recorder
        The recorder of the kept draws.
    warm : hamiltonia.runner.recording.WarmupDraws
        The kept warm-up draws.
    run_file : hamiltonia.results.runfile.RunFile, optional
        The unfinished run's file (``None``: no ``output``).
    checkpoint_seconds : float
        Seconds between two writes of the file.
    rebuild : tuple, optional
        ``(sampler, options)``, the registered sampler name and plain options from which
        :func:`hamiltonia.resume` rebuilds the run; ``None`` for a run it cannot rebuild (or
        one with no file), whose checkpoints hold no state to continue from.
    previous : Result, optional
        The interrupted run this one continues (its times add to this one's).
    resumed_in_warmup : bool
        Whether ``previous`` stopped in warm-up.
    warmup : int
        The run's warm-up iterations.
    warm_from : int
        The warm-up iterations made before this call (a run resumed in warm-up).

    Attributes
    ----------
    t0, t1 : float
        When this call began and when its sampling began (``None`` until then).
    saved : float
        When the file was last written.
    resume : dict or None
        The state from which :func:`hamiltonia.resume` continues exactly, as of the last
        checkpoint (:func:`~hamiltonia.runner.resume_state.capture`).
    warmup_done : int
        The warm-up iterations the state of the last warm-up checkpoint has made.
    """

    def __init__(self, *, target, smp, rngs, attrs: dict, rec, warm, run_file=None,
                 checkpoint_seconds: float, rebuild=None, previous: Result | None = None,
                 resumed_in_warmup: bool = False, warmup: int = 0,
                 warm_from: int = 0):  # fmt: skip
        self.target, self.smp, self.rngs, self.attrs = target, smp, rngs, attrs
        self.rec, self.warm, self.run_file = rec, warm, run_file
        self.checkpoint_seconds = checkpoint_seconds
        # Whether the run can be rebuilt from its file (registered names, plain options):
        # decided once, not at each of the iterations whose state is captured.
        self.rebuild = rebuild if run_file is not None else None
        self.previous, self.resumed_in_warmup = previous, resumed_in_warmup
        self.warmup = warmup
        self.t0 = time.perf_counter()
        self.t1: float | None = None
        self.saved = time.perf_counter()
        self.resume: dict | None = None
        self.warmup_done = warm_from

    @property
    def in_warmup(self) -> bool:
        """Whether the run is still in warm-up (no draw recorded, sampling not begun)."""
        return self.t1 is None and self.rec.n_done == 0

    def result(self, complete: bool) -> Result:
        """The run so far (``complete``: the finished run) as a :class:`~hamiltonia.Result`;
        one still in warm-up says in ``attrs["warmup_done"]`` how far it went."""
        in_warmup = self.in_warmup
        if not in_warmup:
            self.warm.finish()
        q, stats, weights, grads = self.rec.truncated()
        now = time.perf_counter()
        t1 = self.t1 if self.t1 is not None else now
        warmup_seconds, sampling_seconds = t1 - self.t0, now - t1
        if self.previous is not None:
            if self.resumed_in_warmup:
                warmup_seconds += self.previous.warmup_seconds
            else:
                warmup_seconds = self.previous.warmup_seconds
            sampling_seconds += self.previous.sampling_seconds
        target = self.target
        return Result(
            draws=q,
            stats=stats,
            names=target.reported_names,
            log_weights=weights,
            gradients=grads,
            warmup_draws=self.warm.draws,
            warmup_stats=self.warm.stats,
            sampler=self.smp.name,
            target=getattr(target, "registered_name", type(target).__name__),
            warmup_seconds=warmup_seconds,
            sampling_seconds=sampling_seconds,
            attrs={
                **self.attrs,
                "complete": complete,
                "draws_done": self.rec.n_done,
                # A run stopped in warm-up says how far it went (hamiltonia.load reads it).
                **({"warmup_done": self.warmup_done} if in_warmup else {}),
                "resume": None if complete else self.resume,
            },
            _target=target,
        )

    def persist(self) -> None:
        """Append the draws made since the last checkpoint to the unfinished run (in
        warm-up: the state reached and the kept warm-up draws so far)."""
        partial = self.result(complete=False)
        meta = {
            "names": list(partial.names),
            "sampler": partial.sampler,
            "target": partial.target,
            "warmup_seconds": partial.warmup_seconds,
            "sampling_seconds": partial.sampling_seconds,
            # Arrays (the tuners' states) become lists here, floats by repr: exact.
            "attrs": json_safe(partial.attrs),
        }
        warm_part = None
        if "warmup_done" in partial.attrs and self.warm.rec is not None:
            # Those of the iterations the saved state has made (an interrupted iteration or
            # chunk may have recorded more).
            warm_part = self.warm.kept_until(self.warmup_done)
        elif partial.warmup_draws is not None:
            warm_part = (partial.warmup_draws, partial.warmup_stats)
        self.run_file.append(
            partial.draws, partial.stats, partial.log_weights, meta, partial.gradients,
            warmup=warm_part,
        )  # fmt: skip
        self.saved = time.perf_counter()

    def capture(self, current, warm_state=None) -> dict | None:
        """The state from which resume() continues exactly, or None for a run it cannot
        rebuild."""
        if self.rebuild is None:
            return None
        sampler, options = self.rebuild
        return resume_state.capture(sampler, options, current, self.rngs, self.smp, warm_state)

    def warmup_checkpoint(self, current, done: int) -> None:
        """After ``done`` warm-up iterations (0: after the step-size search), the state from
        which resume() continues exactly: written at once for the first, then every
        ``checkpoint_seconds`` as in sampling."""
        if self.rebuild is None:  # no output, or a run resume() cannot rebuild
            return
        warm_state = resume_state.warmup_state(self.smp, done, self.warmup, self.warm.tail())
        if warm_state is None:  # a tuner that cannot be checkpointed
            return
        self.resume = self.capture(current, warm_state)
        self.warmup_done = done
        if done == 0 or time.perf_counter() - self.saved >= self.checkpoint_seconds:
            self.persist()

    def checkpoint(self, current) -> None:
        """After a stored block of draws (the recorder's ``checkpoint``): the state from
        which resume() continues, written every ``checkpoint_seconds``."""
        if self.t1 is None:
            self.t1 = time.perf_counter()
            self.warm.finish()
        if self.run_file is None:
            return
        # The state after the last stored iteration, from which resume() continues exactly.
        self.resume = self.capture(current)
        if time.perf_counter() - self.saved >= self.checkpoint_seconds:
            self.persist()

    def warmup_over(self, state) -> None:
        """Warm-up is over and the draws are made elsewhere (an executor's tasks): the kept
        warm-up draws are final, and the file holds the state after warm-up, from which a
        run whose calling process dies resumes."""
        self.warm.finish()
        if self.run_file is not None:
            self.resume = self.capture(state)
            self.persist()

    def save_stopped_warmup(self) -> bool:
        """On Ctrl-C with no draw recorded (in warm-up, or while an executor's tasks ran):
        write the state reached, where there is one; whether it was written."""
        if self.run_file is None or self.resume is None:
            return False
        self.persist()
        return True

    def warmup_reached(self) -> int:
        """The warm-up iterations of the state written by :meth:`save_stopped_warmup` (all of
        them once sampling began)."""
        return self.warmup_done if self.t1 is None else self.warmup

    def stopped(self) -> Result:
        """On Ctrl-C after some draws: the run so far, written to the file where there is
        one."""
        result = self.result(complete=False)
        if self.run_file is not None:
            self.persist()
        return result

    def save_on_error(self) -> None:
        """Whatever stopped the run, the draws (or the warm-up) made so far stay on disk."""
        run_file, rec = self.run_file, self.rec
        if run_file is not None and (
            rec.n_done > run_file.written
            or (self.t1 is None and self.resume is not None and rec.n_done == 0)
        ):
            self.persist()

    def write_final(self, result: Result) -> None:
        """Write the finished run to its output; a failed write (a full disk, a file-size
        limit) raises :class:`~hamiltonia.results.errors.OutputWriteError` holding the run,
        after bringing the checkpoints up to date where space allows, so that
        :func:`hamiltonia.resume` can finish it later."""
        from hamiltonia.results.runfile import CheckpointWarning, OutputWriteError

        run_file = self.run_file
        try:
            # Made in memory first: HDF5 never holds the file, and a full disk is an OSError.
            run_file.finish(result.to_netcdf_bytes)
        except OutputWriteError as err:
            err.result = result  # first: nothing below may lose it
            with warnings.catch_warnings():
                # Where the disk is full this fails too; the error below says so already, and
                # a user who turns warnings into errors must still get the run.
                warnings.simplefilter("ignore", CheckpointWarning)
                self.persist()
            where = ""
            if run_file.written == result.n_draws:  # persist() reached the disk
                err.partial = run_file.folder
                where = (
                    f"; the draws are also in {err.partial} (hamiltonia.resume("
                    f"{str(run_file.path)!r}) writes the file once there is space)"
                )
            err.args = (
                f"{err.args[0]}. The run is not lost: it is err.result (save it elsewhere with "
                f"err.result.save(path)){where}",
            )
            raise
