"""Recording a run's iterations: the kept draws and their statistics (:class:`Recorder`),
and the kept warm-up draws of a run that saves them (:class:`WarmupDraws`).

The run loop (:func:`hamiltonia.runner.loop.run_chains`) stores each block of iterations a
path makes (:mod:`hamiltonia.runner.paths`) in a recorder; the recorder calls its
``checkpoint`` after each stored block, which is where a run's output is brought up to date
(:mod:`hamiltonia.runner.checkpoints`).
"""

from __future__ import annotations

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia.results import Result
from hamiltonia.runner.thinning import kept, thin_statistics

__all__ = ["Recorder", "WarmupDraws", "joined"]


class Recorder:
    """Buffers for the retained draws and the declared statistics.

    Parameters
    ----------
    chains, draws, dim : int
        The buffers' shape: ``draws`` rows per chain of ``dim`` reported values.
    stats : sequence of (str, dtype)
        The statistics the sampler declares (:meth:`~hamiltonia.samplers.Sampler.stats`).
    checkpoint : callable, optional
        Called with the chains' state after each stored block (the run's output brought up
        to date); ``None`` for a recorder whose blocks are not checkpointed (the warm-up's,
        an executor's calling process).
    gradients : bool
        Also keep the gradient of the log density at each draw (for a reducer that reads
        it), of ``sampler_dim`` values (default ``dim``).
    first : int
        The iteration row 0 holds (a warm-up resumed from a checkpoint records from the start
        of its unfinished thinning group on).
    """

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


def joined(before, after) -> tuple:
    """Kept warm-up ``(draws, stats)`` of a checkpoint followed by those made since."""
    if before is None or before[0].shape[1] == 0:
        return after
    if after[0].shape[1] == 0:
        return before
    draws = np.concatenate([before[0], after[0]], axis=1)
    return draws, {k: np.concatenate([before[1][k], v], axis=1) for k, v in after[1].items()}


class WarmupDraws:
    """The kept warm-up draws of a run: those recorded as warm-up goes (``save_warmup``),
    those of the checkpoint it resumed from, or those of a run resumed after its warm-up.

    Parameters
    ----------
    thin : int
        Iterations per kept draw.
    rec : Recorder, optional
        The recorder of this call's warm-up iterations (unthinned), or ``None`` where none
        are recorded.
    before : tuple, optional
        The kept ``(draws, stats)`` of the warm-up checkpoint resumed from.
    draws, stats : optional
        The kept warm-up draws and statistics once warm-up is over (a run resumed after it
        starts with its file's).

    Attributes
    ----------
    draws, stats
        ``None`` until :meth:`finish` (where nothing is recorded: those given).
    """

    def __init__(self, thin: int, rec: Recorder | None = None, before=None, draws=None,
                 stats=None):  # fmt: skip
        self.thin, self.rec, self.before = thin, rec, before
        self.draws, self.stats = draws, stats

    @classmethod
    def for_run(cls, *, chains: int, warmup: int, dim: int, declared, thin: int,
                save_warmup: bool, previous: Result | None = None,
                resumed: dict | None = None) -> WarmupDraws:  # fmt: skip
        """Those of a run of ``warmup`` warm-up iterations: a fresh one (``previous`` is
        ``None``), or one resumed from ``previous`` in warm-up (``resumed``: the warm-up
        part of its checkpoint) or after it (``resumed`` is ``None``)."""
        if previous is not None and resumed is None:
            return cls(thin, draws=previous.warmup_draws, stats=previous.warmup_stats)
        if not save_warmup:
            return cls(thin)
        first, before = 0, None
        if resumed is not None:
            # The iterations of the unfinished thinning group are made again from its
            # statistics (its draws are never kept), then the recorder goes on from there.
            n_kept = resumed["kept"]
            first = n_kept * thin
            stats_before = previous.warmup_stats or {}
            before = (
                previous.warmup_draws[:, :n_kept],
                {k: v[:, :n_kept] for k, v in stats_before.items()},
            )
        rec = Recorder(chains, warmup - first, dim, declared, first=first)
        if resumed is not None:
            rec.prefill_statistics(resumed["tail"])
        return cls(thin, rec, before)

    def kept(self) -> tuple:
        """The kept warm-up draws and their statistics so far."""
        q, stats = self.rec.truncated()[:2]
        return joined(self.before, (kept(q, self.thin), thin_statistics(stats, self.thin)))

    def kept_until(self, done: int) -> tuple:
        """:meth:`kept`, of the first ``done`` warm-up iterations only (an interrupted
        iteration or chunk may have recorded more than the state saved has made)."""
        n = done // self.thin
        draws, stats = self.kept()
        return draws[:, :n], {k: v[:, :n] for k, v in stats.items()}

    def tail(self) -> dict | None:
        """The statistics of the warm-up iterations after the last kept one (``None`` where
        none are recorded)."""
        rec = self.rec
        if rec is None:
            return None
        n = rec.n_done
        group = n // self.thin * self.thin
        chains = rec.shape[0]
        return {
            name: rec.stats[name][:, group:n] if name in rec.stats
            else np.empty((chains, 0), dtype=dtype)
            for name, dtype in rec.declared
        }  # fmt: skip

    def finish(self) -> None:
        """Warm-up is over: :attr:`draws` and :attr:`stats` are the kept ones (once)."""
        if self.rec is not None and self.draws is None:
            self.draws, self.stats = self.kept()
