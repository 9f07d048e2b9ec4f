"""What a run needs to continue exactly where it stopped: captured at each checkpoint, checked
before use.

:func:`capture` records, after the last stored iteration, the chains' whole state (position,
momentum, log density, gradient, auxiliary variables), the step sizes, the generators, the
metric and the sampler's own counters. :func:`hamiltonia.resume` restores it instead of
recomputing it, so the continuation is bit-exact on any machine.

A file is data from outside: :func:`validate` checks every field before anything is built
from it (names from the registries only, a metric class from a fixed list, finite arrays of
the shapes the file's own draws imply, generator states the generator accepts) and raises one
:class:`~hamiltonia.runfile.RunFileError` naming the file and the field.
"""

from __future__ import annotations

import json

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia.runfile import RunFileError
from hamiltonia.state import PhaseState

__all__ = [
    "capture",
    "chain_state",
    "restore",
    "restore_metric",
    "restore_phase",
    "select_chains",
    "validate",
]


def _json_ready(value) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _metric_classes() -> dict:
    from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric, IdentityMetric

    return {cls.__name__: cls for cls in (IdentityMetric, DiagonalMetric, DenseMetric)}


def capture(target, sampler, options, state, rngs, smp) -> dict | None:
    """The state after the last stored iteration, or ``None`` when the run was not built from
    registered names with plain options (it could not be rebuilt from a file)."""
    names = isinstance(target, str) or hasattr(target, "registered_name")
    if not (names and isinstance(sampler, str) and _json_ready(options)):
        return None
    return {"sampler": sampler, "options": options, **chain_state(state, rngs, smp)}


def chain_state(state, rngs, smp) -> dict:
    """The chains' whole state, generators, step sizes, metric and the sampler's counters, as
    JSON-ready values: what :func:`restore` needs to continue exactly."""
    metric = getattr(getattr(smp, "hamiltonian", None), "metric", None)
    metric_info = None
    if metric is not None:
        inverse_mass = getattr(metric, "inverse_mass", None)
        metric_info = {
            "kind": type(metric).__name__,
            "inverse_mass": None if inverse_mass is None else np.asarray(inverse_mass).tolist(),
        }
    host = array_backend.to_numpy
    phase = state.phase
    return {
        "rng_states": [rng.bit_generator.state for rng in rngs],
        "q": host(phase.q).tolist(),
        "p": host(phase.p).tolist(),
        "log_prob": host(phase.log_prob).tolist(),
        "grad": None if phase.grad is None else host(phase.grad).tolist(),
        "aux": {k: host(v).tolist() for k, v in phase.aux.items()},
        "step_size": np.asarray(state.step_size).tolist(),
        "metric": metric_info,
        "sampler_state": smp.extra_state(),
    }


def select_chains(info: dict, chains) -> dict:
    """The part of a :func:`chain_state` that holds ``chains`` (their rows, generators and
    step sizes; the metric and the sampler's counters are shared)."""
    out = dict(info)
    for key in ("q", "p", "log_prob", "grad", "rng_states"):
        if out.get(key) is not None:
            out[key] = [info[key][c] for c in chains]
    out["aux"] = {k: [v[c] for c in chains] for k, v in info.get("aux", {}).items()}
    if isinstance(info["step_size"], list):
        out["step_size"] = [info["step_size"][c] for c in chains]
    return out


def _array(path, field: str, value, shape: tuple, *, finite: bool = True) -> np.ndarray:
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise RunFileError(
            f"{path} cannot be resumed: {field} is not an array of numbers"
        ) from None
    if a.shape != shape:
        raise RunFileError(
            f"{path} cannot be resumed: {field} has shape {a.shape}, expected {shape} for the "
            "chains and parameters of its draws"
        )
    if finite and not np.all(np.isfinite(a)):
        raise RunFileError(f"{path} cannot be resumed: {field} holds non-finite values")
    return a


def validate(info, previous, path) -> dict:
    """``info`` (a checkpoint's resume state) checked against the run ``previous`` read from
    ``path``: the checked copy, or :class:`~hamiltonia.runfile.RunFileError`."""
    from hamiltonia import samplers

    if not isinstance(info, dict):
        raise RunFileError(f"{path} cannot be resumed: its resume state is not a mapping")
    required = ("sampler", "options", "rng_states", "q", "step_size")
    missing = [k for k in required if k not in info]
    if missing:
        raise RunFileError(f"{path} cannot be resumed: its resume state lacks {', '.join(missing)}")
    chains, dim = previous.n_chains, previous.dim
    draws = previous.attrs.get("draws")
    if isinstance(draws, bool) or not isinstance(draws, int) or not previous.n_draws <= draws:
        raise RunFileError(
            f"{path} cannot be resumed: its number of draws ({draws!r}) is not an integer of at "
            f"least the {previous.n_draws} draws it holds"
        )
    if not isinstance(info["sampler"], str) or info["sampler"] not in samplers.names():
        raise RunFileError(
            f"{path} cannot be resumed: sampler {info['sampler']!r} is not registered "
            f"(registered: {', '.join(samplers.names())})"
        )
    if not isinstance(info["options"], dict) or not _json_ready(info["options"]):
        raise RunFileError(f"{path} cannot be resumed: its options are not plain values")
    checked = dict(info)
    checked["q"] = _array(path, "q", info["q"], (chains, dim))
    if "log_prob" in info:
        checked["p"] = _array(path, "p", info.get("p"), (chains, dim))
        checked["log_prob"] = _array(path, "log_prob", info["log_prob"], (chains,))
        if info.get("grad") is not None:
            checked["grad"] = _array(path, "grad", info["grad"], (chains, dim))
        aux = info.get("aux", {})
        if not isinstance(aux, dict):
            raise RunFileError(f"{path} cannot be resumed: aux is not a mapping")
        checked["aux"] = {}
        for name, value in aux.items():
            a = np.asarray(value, dtype=np.float64) if _numeric(value) else None
            if a is None or a.ndim < 1 or a.shape[0] != chains or not np.all(np.isfinite(a)):
                raise RunFileError(
                    f"{path} cannot be resumed: auxiliary variable {name!r} is not a finite "
                    f"array with one row per chain ({chains})"
                )
            checked["aux"][name] = a
    step = np.asarray(info["step_size"], dtype=np.float64) if _numeric(info["step_size"]) else None
    if step is None or step.shape not in ((), (chains,)) or not np.all(np.isfinite(step)):
        raise RunFileError(
            f"{path} cannot be resumed: step_size must be finite, one per chain ({chains})"
        )
    if np.any(step <= 0):
        raise RunFileError(f"{path} cannot be resumed: step_size must be > 0")
    checked["step_size"] = step
    states = info["rng_states"]
    if not isinstance(states, list) or len(states) != chains:
        raise RunFileError(
            f"{path} cannot be resumed: it holds {len(states) if isinstance(states, list) else 0}"
            f" generator states for {chains} chains"
        )
    for k, rng_state in enumerate(states):
        try:
            np.random.Generator(np.random.PCG64()).bit_generator.state = rng_state
        except (TypeError, ValueError, KeyError) as err:
            raise RunFileError(
                f"{path} cannot be resumed: the generator state of chain {k} is invalid ({err})"
            ) from None
    metric = info.get("metric")
    if metric is not None:
        kinds = _metric_classes()
        if not isinstance(metric, dict) or metric.get("kind") not in kinds:
            kind = metric.get("kind") if isinstance(metric, dict) else metric
            raise RunFileError(
                f"{path} cannot be resumed: metric kind {kind!r} is not one of {', '.join(kinds)}"
            )
        if metric.get("inverse_mass") is not None:
            try:
                kinds[metric["kind"]](np.asarray(metric["inverse_mass"], dtype=np.float64))
            except (TypeError, ValueError) as err:
                raise RunFileError(
                    f"{path} cannot be resumed: its metric is invalid: {err}"
                ) from None
    if not isinstance(info.get("sampler_state", {}), dict):
        raise RunFileError(f"{path} cannot be resumed: sampler_state is not a mapping")
    return checked


def _numeric(value) -> bool:
    try:
        np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def restore_phase(info) -> PhaseState:
    """The chain state saved by :func:`capture`, exactly."""
    asarray = array_backend.asarray

    def floats(values):
        return asarray(np.asarray(values, dtype=np.float64))

    return PhaseState(
        floats(info["q"]),
        floats(info["p"]),
        floats(info["log_prob"]),
        None if info.get("grad") is None else floats(info["grad"]),
        {k: floats(v) for k, v in info.get("aux", {}).items()},
    )


def restore(smp, info, rngs):
    """Put a checked :func:`chain_state` back: the generators ``rngs`` take their saved
    states, ``smp`` its metric and counters; returns the chain state."""
    for rng, rng_state in zip(rngs, info["rng_states"], strict=True):
        rng.bit_generator.state = rng_state
    restore_metric(smp, info.get("metric"))
    state = smp.init(np.asarray(info["q"]))
    if "log_prob" in info:
        state.phase = restore_phase(info)
    state.step_size = np.asarray(info["step_size"], dtype=float)
    smp.restore_extra_state(info.get("sampler_state", {}))
    return state


def restore_metric(smp, info) -> None:
    """Put the metric of a checkpoint (checked by :func:`validate`) back into ``smp``."""
    if info is None or info.get("inverse_mass") is None:
        return
    cls = _metric_classes()[info["kind"]]
    smp.hamiltonian.metric = cls(np.asarray(info["inverse_mass"], dtype=np.float64))
