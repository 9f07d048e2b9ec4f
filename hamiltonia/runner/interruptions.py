"""How an interrupted run (Ctrl-C) tells its caller (:func:`hamiltonia.runner.run.sample` and
:func:`~hamiltonia.runner.run.resume`, which export them): a warning beside the draws made so
far, or, in warm-up, an exception pointing to the saved state."""

from __future__ import annotations

__all__ = ["InterruptedRunWarning", "WarmupInterrupted"]


class InterruptedRunWarning(RuntimeWarning):
    """The run was interrupted (Ctrl-C): the result holds the draws made so far."""


class WarmupInterrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C) during warm-up, or while an executor's tasks ran
    (their draws come back only at the end), and its output holds the state reached: no
    draws to return, but :func:`~hamiltonia.runner.run.resume` continues it from there.

    Attributes
    ----------
    path : pathlib.Path
        The run's output, whose ``.partial`` folder holds the warm-up's checkpoint.
    done, warmup : int
        The warm-up iterations made (those of the checkpoint) and planned.
    """

    def __init__(self, path, done: int, warmup: int, hint: str | None = None):
        hint = hint or f"continue with hamiltonia.resume({str(path)!r})"
        super().__init__(
            f"interrupted after {done} of {warmup} warm-up iterations; saved to {path} ({hint})"
        )
        self.path, self.done, self.warmup = path, done, warmup
