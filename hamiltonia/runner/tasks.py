"""The sampling iterations of a run spread over an executor's tasks
(:mod:`hamiltonia.runner.executors`): one task per chain (per antithetic pair), each
checkpointing its own chains, their draws joined in the calling process's recorder.

Warm-up runs in the calling process, all chains together (:func:`hamiltonia.sample` with
``executor=``); :func:`sample_on` then hands each task its chains' state after warm-up.
"""

from __future__ import annotations

import shutil

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia.runner import executors, resume_state
from hamiltonia.state import _REJECT_ON

__all__ = ["sample_on"]


def sample_on(executor, smp, target, state, rngs, rec, bar, compiled, thin, run_file,
               checkpoint_seconds, warmup, fresh=True):  # fmt: skip
    """The sampling iterations as tasks of one chain (one antithetic pair) on ``executor``,
    from the state after warm-up; their draws go to ``rec``. Returns the tasks continued
    from a checkpoint (a worker died), by index, with the draw they continued from, the
    number of checkpoints the tasks wrote, and the folder of those checkpoints (to remove
    once the run's own file is safe)."""
    chains = rec.shape[0]
    units = smp.reducer.pairing(chains) or [[c] for c in range(chains)]
    info = resume_state.chain_state(state, rngs, smp)
    output = None if run_file is None else run_file.path
    folder = executors.task_folder(output, fresh)
    try:
        return _sample_in_folder(executor, smp, target, rec, bar, compiled, thin,
                                 checkpoint_seconds, warmup, units, info, folder)  # fmt: skip
    except BaseException:
        if output is None:
            # No run file names this temporary folder: nothing can resume from it.
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _sample_in_folder(executor, smp, target, rec, bar, compiled, thin, checkpoint_seconds,
                      warmup, units, info, folder):  # fmt: skip
    """:func:`sample_on`'s tasks (the chains ``units``, from their state ``info`` after
    warm-up), checkpointing in ``folder``; returns as it does."""
    chains, draws = rec.shape
    common = dict(target=target, sampler=smp, draws=draws, thin=thin, compiled=compiled,
                  folder=folder, checkpoint_seconds=checkpoint_seconds,
                  reject_on=_REJECT_ON.get(), backend=array_backend.get_backend())  # fmt: skip
    tasks = [
        executors.ChainTask(
            index=k, chains=tuple(unit), state=resume_state.select_chains(info, unit), **common
        )
        for k, unit in enumerate(units)
    ]
    bar.set_description(f"{smp.name} sampling ({executor.name})")

    def progress(done: list) -> None:
        per_chain = sum(d * len(t.chains) for d, t in zip(done, tasks, strict=True)) / chains
        bar.n = warmup + int(per_chain * thin)
        bar.refresh()

    results = executor.map(tasks, progress)
    order = [c for unit in units for c in unit]
    if order != list(range(chains)):
        raise RuntimeError(f"tasks hold chains {order}, not 0..{chains - 1} in order")
    joined = {key: [r[key] for r in results] for key in results[0]}
    weights, grads = joined["log_weights"], joined["gradients"]
    rec.record(
        slice(0, draws),
        np.concatenate(joined["draws"]),
        {k: np.concatenate([s[k] for s in joined["stats"]]) for k in joined["stats"][0]},
        None if weights[0] is None else np.concatenate(weights),
        None,
        None if grads[0] is None else np.concatenate(grads),
    )
    continued = {
        t.index: r["continued_from"]
        for t, r in zip(tasks, results, strict=True)
        if r["continued_from"]
    }
    return continued, sum(r["checkpoints"] for r in results), folder
