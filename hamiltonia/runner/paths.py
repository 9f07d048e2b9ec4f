"""The two paths a run's iterations take: how a block of iterations is made.

The run loop (:func:`hamiltonia.runner.loop.run_chains`) is written once, over a path: it asks
the path for the blocks of warm-up iterations and of kept draws, has it advance every chain
by one block, and records, adapts, checkpoints and reports progress the same way whichever
path made the block.

* :class:`NumpyPath` makes one vectorised iteration at a time with the sampler's ``step``
  (``thin`` of them per kept draw), and its tuners ``update`` after each warm-up iteration.
* :class:`CompiledPath` makes a chunk of iterations in one call of the compiled chain kernel
  (:meth:`hamiltonia.compiled.plan.CompiledPlan.run`): chunk sizes from a :class:`Chunker`,
  cut at every tuner boundary, the step-size tuner running inside the kernel and the other
  tuners ``update_chunk`` between chunks.

Both paths draw from the chains' generators in the same order, so the choice of path (and
of chunk sizes) changes no draw beyond the rounding of the two forms of the maths.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia.runner.thinning import kept, thin_group, thin_statistics
from hamiltonia.state import ModelError

__all__ = ["CHUNK_BUFFER_FLOATS", "Block", "Chunker", "CompiledPath", "NumpyPath", "path_for"]

#: Most numbers (draws and statistics, all chains) one compiled chunk writes: 16 MB.
CHUNK_BUFFER_FLOATS = 2**21


@dataclasses.dataclass(slots=True)
class Block:
    """The iterations a path made in one call, for the run loop to record.

    Attributes
    ----------
    rows : int or slice
        Where the block goes in its recorder: one kept draw (an index, on the NumPy path) or
        several (a slice, on the compiled path); in warm-up, the iterations made.
    q : array or None
        The chains' positions at the block's kept draws (in warm-up: at its iterations), in
        the sampler's coordinates (the loop constrains them); ``None`` where the path wrote
        them into the recorder in place.
    stats : dict or None
        The statistics of the kept draws (thinned), by name; ``None`` for a warm-up block
        whose statistics nobody keeps.
    log_weight : array or None
        The importance log-weights of the kept draws, for a weighted sampler.
    grad : array or None
        The gradients at the kept draws where the recorder keeps them and the path did not
        write them in place.
    info : dict or None
        What the sampler's ``step`` reported for a NumPy warm-up iteration, for its tuners;
        on the compiled path, the same of a chunk's last iteration, where a tuner runs after
        every iteration (:attr:`~hamiltonia.tuners.Tuner.per_iteration`).
    unshown : int
        Iterations of the block not yet counted on the progress bar (the NumPy path counts
        each as it is made).
    """

    rows: int | slice
    q: object = None
    stats: dict | None = None
    log_weight: object = None
    grad: object = None
    info: dict | None = None
    unshown: int = 0


class Chunker:
    """Splits ``[start, stop)`` into chunks for the compiled path: small at first, doubling
    while a chunk takes under ``target_seconds`` (so the progress bar and persisted draws stay
    fresh while calls from Python stay rare), and cut at every tuner boundary."""

    def __init__(self, target_seconds: float = 0.1, first: int = 8, largest: int = 4096):
        self.size, self.target_seconds, self.largest = first, target_seconds, largest

    def split(self, start: int, stop: int, boundaries=()):
        """Yield ``(first, n)``: the chunks of ``[start, stop)`` in order, each ending at or
        before the next of ``boundaries``; a chunk's time is measured until the next is
        asked for."""
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


def _step(smp, state, rngs, it, phase):
    try:
        return smp.step(state, rngs)
    except ModelError as err:
        raise err.during(f"iteration {it} of {phase}") from err.__cause__


def _draw_stats(info: dict, state) -> dict:
    """The statistics of an iteration with the step size it used and the draw's log density."""
    step = None if state.step_size is None else np.array(state.step_size, dtype=float)
    return {**info, "step_size": step, "lp": state.phase.log_prob}


class NumpyPath:
    """Iterations one at a time, vectorised over the chains, with the sampler's ``step``.

    Parameters
    ----------
    smp : Sampler
        The sampler (its tuners ``update`` after each warm-up iteration).
    declared : sequence of (str, dtype)
        The statistics the recorder keeps (:meth:`~hamiltonia.samplers.Sampler.stats`).
    thin : int
        Iterations per kept draw.
    """

    compiled = False

    def __init__(self, smp, declared, thin: int = 1):
        self.smp, self.thin = smp, thin
        # A thinned draw's statistics: the declared ones, and the divergences of its group.
        self.names = list(dict.fromkeys([name for name, _ in declared] + ["diverging"]))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def warmup_blocks(self, start: int, stop: int):
        """Warm-up iterations ``start`` to ``stop``, one at a time: ``(it, 1)``."""
        return ((it, 1) for it in range(start, stop))

    def warm(self, state, rngs, first: int, n: int, keep: bool):
        """Warm-up iteration ``first`` (``n`` is 1): the new state and its :class:`Block`
        (with the iteration's statistics where ``keep``)."""
        state, info = _step(self.smp, state, rngs, first, "warm-up")
        stats = _draw_stats(info, state) if keep else None
        return state, Block(first, state.phase.q, stats, info=info)

    def adapt(self, state, block: Block, first: int) -> None:
        """Each tuner's ``update`` after warm-up iteration ``first``."""
        for tuner in self.smp.tuners:
            tuner.update(self.smp, state, block.info, first)

    def sampling_blocks(self, start: int, stop: int):
        """Kept draws ``start`` to ``stop``, one at a time: ``(k, 1)``."""
        return ((k, 1) for k in range(start, stop))

    def sample(self, state, rngs, first: int, n: int, bar):
        """Kept draw ``first`` (``n`` is 1): its ``thin`` iterations, each counted on
        ``bar`` as it is made; the new state and the draw's :class:`Block`."""
        smp, thin = self.smp, self.thin
        group = []
        for it in range(first * thin, (first + 1) * thin):
            state, info = _step(smp, state, rngs, it, "sampling")
            group.append(_draw_stats(info, state))
            bar.update(1)
        if thin > 1:
            host = [{k: array_backend.to_numpy(g[k]) for k in self.names} for g in group]
            info = thin_group(host, self.names, len(rngs))
        else:
            info = group[0]
        return state, Block(first, state.phase.q, info, smp.log_weight(state), state.phase.grad)

    @staticmethod
    def postfix_due(first: int) -> bool:
        """Whether the divergences shown are refreshed after kept draw ``first``."""
        return first % 50 == 0


def _columns(layout, block: np.ndarray) -> dict:
    """The statistics of a block of compiled iterations, by name, in their declared dtypes
    (views of ``block`` where the dtype is the kernel's own: the recorder copies them)."""
    return {
        name: block[..., i] > 0 if dtype == "bool" else block[..., i].astype(dtype, copy=False)
        for i, (name, dtype) in enumerate(layout.stats)
    }


class CompiledPath:
    """Chunks of iterations in the compiled chain kernel of ``plan``.

    Parameters
    ----------
    plan : hamiltonia.compiled.plan.CompiledPlan
        The compiled plan of the sampler.
    smp : Sampler
        The sampler (its tuners' boundaries cut the warm-up chunks; those that act between
        chunks ``update_chunk``).
    target : Target
        The target (whose own ``constrain`` rules out writing draws in place).
    state : ChainState
        The chains' state (for their number and dimension).
    rec : hamiltonia.runner.recording.Recorder
        The recorder of the kept draws, into which unthinned draws and gradients are
        written in place.
    thin : int
        Iterations per kept draw.
    chunker : Chunker, optional
        The chunk sizes; by default chunks grow until one lasts a tenth of a second, within
        a buffer of :data:`CHUNK_BUFFER_FLOATS` numbers.
    """

    compiled = True

    def __init__(self, plan, smp, target, state, rec, thin: int = 1, chunker=None):
        chains, dim = state.phase.q.shape
        n_stats = len(plan.layout().stats)
        if chunker is None:
            # Chunks grow until one lasts a tenth of a second, within a buffer of bounded
            # size: on a cheap target a fixed cap of 4096 iterations made the calls from
            # Python between chunks 15 % of the sampling time.
            largest = int(min(max(CHUNK_BUFFER_FLOATS // (chains * (dim + n_stats) * thin), 64),
                              2**20))  # fmt: skip
            # Each chunk calls the kernel once per chain (25-30 us each, measured): with many
            # chains the first chunks of 8 iterations were mostly calls (1,024 chains x 80
            # draws sampled in 0.29 s from chunks of 8, 0.18 s from a first chunk of 64).
            first = int(min(largest, max(8, chains // 16)))
            chunker = Chunker(first=first, largest=largest)
        self.plan, self.smp, self.rec, self.thin, self.chunker = plan, smp, rec, thin, chunker
        # A sampling chunk of n kept draws runs n * thin iterations; a warm-up chunk, at most
        # chunker.largest iterations.
        rows = chunker.largest * thin
        self.buf_q = np.empty((chains, rows, dim))
        # Draws go through the target's constrain into the recorder, which may hold another
        # number of reported values than the sampler's dimension.
        self.buf_s = np.empty((chains, rows, n_stats))
        self.buf_g = np.empty((chains, rows, dim)) if rec.grads is not None and thin > 1 else None
        # Unthinned draws of a target that reports its unconstrained values go straight into
        # the recorder: copying them from the buffer cost 10-20 % of an iteration on a cheap
        # target.
        self.in_place = thin == 1 and not target.constrains and rec.q.shape[-1] == dim

    def __enter__(self):
        self.plan.__enter__()
        return self

    def __exit__(self, *exc):
        return self.plan.__exit__(*exc)

    def warmup_blocks(self, start: int, stop: int):
        """Chunks of warm-up iterations ``start`` to ``stop``, cut at every tuner boundary.

        Chunks from a warm-up checkpoint are cut differently, which changes no draw: the
        kernel carries every chain's state (and dual averaging's) from one chunk to the
        next, and the tuners that act between chunks act at their boundaries, which are
        always cuts."""
        boundaries = [b for tuner in self.smp.tuners for b in tuner.boundaries(stop)]
        if self.per_iteration:
            boundaries = range(start + 1, stop)  # each iteration a chunk of its own
        return self.chunker.split(start, stop, boundaries)

    @property
    def per_iteration(self) -> list:
        """The tuners whose ``update`` runs after every warm-up iteration
        (:attr:`~hamiltonia.tuners.Tuner.per_iteration`)."""
        return [tuner for tuner in self.smp.tuners if getattr(tuner, "per_iteration", False)]

    def warm(self, state, rngs, first: int, n: int, keep: bool):
        """Warm-up iterations ``first`` to ``first + n`` (the step-size tuner adapting
        inside the kernel): the state, advanced in place, and the chunk's :class:`Block`
        (with its statistics where ``keep``)."""
        q, s = self.buf_q[:, :n], self.buf_s[:, :n]
        layout = self.plan.run(state, rngs, n, True, q, s)
        info = None
        if self.per_iteration:
            # The last iteration's statistics and what the parts published in it: the info
            # the NumPy path hands to update() (copies: the buffer is the next chunk's).
            columns = _columns(layout, s[:, n - 1 : n])
            info = {name: np.array(value[:, 0]) for name, value in columns.items()}
            info.update(self.plan.published)
        stats = _columns(layout, s) if keep else None
        return state, Block(slice(first, first + n), q, stats, info=info)

    def adapt(self, state, block: Block, first: int) -> None:
        """Each tuner's ``update_chunk`` with the chunk's positions, and the ``update`` of
        those that run after every iteration with its ``info``."""
        n = block.q.shape[1]
        for tuner in self.smp.tuners:
            if getattr(tuner, "per_iteration", False):
                tuner.update(self.smp, state, block.info, first + n - 1)
            else:
                tuner.update_chunk(self.smp, state, block.q, first)

    def sampling_blocks(self, start: int, stop: int):
        """Chunks of kept draws ``start`` to ``stop``."""
        return self.chunker.split(start, stop)

    def sample(self, state, rngs, first: int, n: int, bar):
        """Kept draws ``first`` to ``first + n`` (``n * thin`` iterations): the state,
        advanced in place, and the chunk's :class:`Block`, its draws (and gradients)
        written into the recorder in place where they need no thinning or constraining."""
        rec, thin = self.rec, self.thin
        block, m = slice(first, first + n), n * thin
        grads = self.buf_g[:, :m] if self.buf_g is not None else None
        if rec.grads is not None and thin == 1:
            grads = rec.grads[:, block]
        out_q = rec.q[:, block] if self.in_place else self.buf_q[:, :m]
        layout = self.plan.run(state, rngs, m, False, out_q, self.buf_s[:, :m], grads)
        info = thin_statistics(_columns(layout, self.buf_s[:, :m]), thin)
        # Importance weights travel in a statistics column of the kernel.
        weights = info.pop(getattr(self.smp.reducer, "column", None), None)
        if self.buf_g is not None:
            rec.grads[:, block] = kept(grads, thin)
        q = None if self.in_place else kept(self.buf_q[:, :m], thin)
        return state, Block(block, q, info, weights, unshown=m)

    @staticmethod
    def postfix_due(first: int) -> bool:
        """Whether the divergences shown are refreshed after a chunk: always."""
        return True


def path_for(plan, smp, target, state, rec, thin: int = 1):
    """The path of a run: :class:`CompiledPath` over ``plan``, or :class:`NumpyPath` where
    ``plan`` is ``None``."""
    if plan is None:
        return NumpyPath(smp, rec.declared, thin)
    return CompiledPath(plan, smp, target, state, rec, thin)
