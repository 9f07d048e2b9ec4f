"""Adapted-state check: everything warm-up changes in a sampler's parts comes back on resume.

:func:`hamiltonia.resume` rebuilds a run's sampler from its recipe, then puts back what the
checkpoint holds: the chains (with their step sizes and auxiliary variables), the metric,
the sampler's own state, and each tuner's adapted state, the part parameters it declares in
:attr:`~hamiltonia.tuners.Tuner.adapts`. A tuner that changes a parameter without declaring
it resumes with the recipe's value instead, and the resumed draws differ from the
uninterrupted run's, silently. :func:`check_adapted_state` finds such a parameter by
doing what a resume does: it warms a sampler up, rebuilds another from the same recipe,
restores into it what a checkpoint would hold (:mod:`hamiltonia.runner.resume_state`'s
own functions, through a JSON round trip), and compares every parameter the two samplers'
compiled parts declare (:class:`~hamiltonia.compiled.parts.PartKernels` ``params``, by
part and name): any difference is a parameter the checkpoint does not carry.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from hamiltonia._validation import check_int

__all__ = ["AdaptedStateResult", "check_adapted_state"]


@dataclass
class AdaptedStateResult:
    """``lost``: the parameters (``"trajectory.min_steps"``, part slot and name) whose value
    after warm-up a resumed run would not have, each with the two values; ``compared``: how
    many parameters were compared."""

    lost: dict
    compared: int

    @property
    def passed(self) -> bool:
        return not self.lost


def _parameters(sampler) -> dict:
    """Every parameter of the sampler's compiled parts, by ``"slot.name"``, as arrays."""
    from hamiltonia.compiled.plan import plan_for
    from hamiltonia.compiled.roles import SLOTS

    layout = plan_for(sampler).layout()
    return {
        f"{SLOTS[slot]}.{name}": np.atleast_1d(np.asarray(layout.param(slot, name), dtype=float))
        for kind, slot, name in (k for k in layout.names if k[0] == "param")
    }


def _resumed(build, warmed):
    """A sampler from ``build``, given back what a checkpoint of ``warmed`` holds."""
    from hamiltonia.runner import resume_state

    fresh = build()
    metric = getattr(getattr(warmed, "hamiltonian", None), "metric", None)
    inverse_mass = getattr(metric, "inverse_mass", None)
    if inverse_mass is not None:
        info = {"kind": type(metric).__name__, "inverse_mass": np.asarray(inverse_mass).tolist()}
        resume_state.restore_metric(fresh, json.loads(json.dumps(info)))
    fresh.restore_extra_state(json.loads(json.dumps(warmed.extra_state())))
    adapted = json.loads(json.dumps(resume_state.adapted_state(warmed)))
    checked = resume_state.check_adapted({"adapted": adapted}, fresh, "(the check)")
    resume_state.restore_adapted(fresh, checked["adapted"])
    return fresh


def check_adapted_state(
    target: Any,
    sampler: Any = "hmc",
    *,
    chains: int = 4,
    warmup: int = 150,
    seed: int = 0,
    check: bool = True,
    **options: Any,
) -> AdaptedStateResult:
    """Assert that a resumed run gets back every part parameter warm-up adapted (see the
    module docstring).

    Parameters
    ----------
    target : Target
        The target to warm up on (compiled path).
    sampler : str or callable
        A registered recipe's name, or a recipe ``sampler(target, **options)`` returning a
        fresh sampler (a resume rebuilds the sampler from its recipe, so a built sampler
        cannot stand in for one).
    chains, warmup : int >= 1
        The warm-up run.
    check : bool
        Raise ``AssertionError`` naming the lost parameters (default), or return the result.
    """
    import hamiltonia as hm

    chains = check_int(chains, "chains", minimum=1)
    warmup = check_int(warmup, "warmup", minimum=1)
    if isinstance(sampler, str):
        name = sampler

        def build():
            return hm.samplers.build(name, target, **options)
    elif callable(sampler):

        def build():
            return sampler(target, **options)
    else:
        raise TypeError(
            f"sampler must be a recipe's name or a recipe (target, **options) -> sampler, "
            f"got {type(sampler).__name__}"
        )
    warmed = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hm.sample(target, warmed, chains=chains, warmup=warmup, draws=1, seed=seed,
                  progress=False, compiled=True)  # fmt: skip
    after, back = _parameters(warmed), _parameters(_resumed(build, warmed))
    lost = {
        name: (after[name], back.get(name))
        for name in after
        if name not in back or not np.array_equal(after[name], back[name])
    }
    result = AdaptedStateResult(lost, len(after))
    if check and lost:
        shown = "; ".join(
            f"{name}: {np.array2string(a, threshold=4)} after warm-up, "
            f"{np.array2string(b, threshold=4) if b is not None else 'absent'} resumed"
            for name, (a, b) in list(lost.items())[:3]
        )
        raise AssertionError(
            f"a resumed run would lose {len(lost)} of {len(after)} adapted parameters: "
            f"{shown}; the tuner that sets each must declare it in adapts (its path from the "
            "sampler) or save it with adapted_state()"
        )
    return result
