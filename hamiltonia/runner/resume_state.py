"""What a run needs to continue exactly where it stopped: captured at each checkpoint, checked
before use.

:func:`capture` records, after the last stored iteration, the chains' whole state (position,
momentum, log density, gradient, auxiliary variables), the step sizes, the generators, the
metric, the sampler's own counters and every tuner's adapted state (:func:`adapted_state`:
the parameters it set in the sampler's parts, which a sampler rebuilt from its recipe does
not have); in warm-up also the iteration reached and the tuners'
state (:func:`warmup_state`: dual averaging's per-chain averages, the metric window's
buffered positions, the statistics of an unfinished thinning group of kept warm-up draws).
:func:`hamiltonia.resume` restores it instead of recomputing it, so the continuation is
bit-exact on any machine; it first checks that the rebuilt target gives the log densities
saved (:func:`check_target`).

A file is data from outside: :func:`validate` checks every field before anything is built
from it (names from the registries only, a metric class from a fixed list, finite arrays of
the shapes the file's own draws imply, generator states the generator accepts) and raises one
:class:`~hamiltonia.results.errors.RunFileError` naming the file and the field.
"""

from __future__ import annotations

import json

import numpy as np

from hamiltonia import backend as array_backend
from hamiltonia._validation import MAX_WARMUP, check_int, finite_array
from hamiltonia.results.runfile import RunFileError
from hamiltonia.state import PhaseState

__all__ = [
    "adapted_state",
    "capture",
    "chain_state",
    "check_adapted",
    "check_target",
    "check_warmup",
    "rebuilds_target",
    "restore",
    "restore_adapted",
    "restore_metric",
    "restore_phase",
    "restore_warmup",
    "resumable",
    "resume_hint",
    "select_chains",
    "validate",
    "warmup_state",
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


def resumable(sampler, options) -> bool:
    """Whether a run can be rebuilt from its file: built from a registered sampler name
    with plain (JSON) options (its target is rebuilt from the file where it is a
    registered one, else given again: :func:`rebuilds_target`). Decided once per run,
    before its iterations."""
    return isinstance(sampler, str) and _json_ready(options)


def rebuilds_target(target) -> bool:
    """Whether a run's file can rebuild ``target`` (a registered target, by name): else
    :func:`hamiltonia.resume` is given the target again (``target=``)."""
    return isinstance(target, str) or hasattr(target, "registered_name")


def resume_hint(path, target, sampler, options) -> str:
    """How the user continues an interrupted run saved to ``path``, for its messages."""
    if not resumable(sampler, options):
        return (
            "it cannot be resumed: a run is rebuilt from a registered sampler name with "
            "plain options"
        )
    if rebuilds_target(target):
        return f"continue with hamiltonia.resume({str(path)!r})"
    return f"continue with hamiltonia.resume({str(path)!r}, target=<the same model>)"


def capture(sampler: str, options, state, rngs, smp, warmup=None) -> dict:
    """The state after the last stored iteration of a :func:`resumable` run (made with the
    registered sampler ``sampler`` and ``options``). ``warmup`` (from :func:`warmup_state`)
    is the tuners' state of a run still in warm-up."""
    info = {"sampler": sampler, "options": options, **chain_state(state, rngs, smp)}
    if warmup is not None:
        info["warmup"] = warmup
    return info


def warmup_state(smp, done: int, n_warmup: int, tail=None) -> dict | None:
    """What a run in warm-up needs beyond its chains' state, after ``done`` of its
    ``n_warmup`` warm-up iterations (0: just after the step-size search): each tuner's
    :meth:`~hamiltonia.tuners.adaptation.Tuner.warmup_state` and, for a run that keeps its warm-up
    draws, ``tail``: the statistics of the iterations after the last kept one (a thinned
    draw sums its group's gradients and ORs its divergences). ``None`` when a tuner cannot
    be checkpointed.

    The tuners' states hold NumPy arrays, taken cheaply after every iteration; they become
    JSON (floats written by ``repr``, so read back exactly) only when a checkpoint is
    written."""
    tuners = []
    for tuner in smp.tuners:
        state = tuner.warmup_state()
        if state is None:
            return None
        tuners.append({"kind": type(tuner).__name__, "state": state})
    return {"done": int(done), "of": int(n_warmup), "tuners": tuners, "tail": tail}


def _numpy_plain(value):
    """A NumPy array or scalar as plain lists and numbers, for ``json.dumps``; anything else
    JSON cannot hold is a ``TypeError``."""
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not plain data")


def adapted_state(smp) -> list[dict]:
    """Each tuner's adapted state (:meth:`~hamiltonia.tuners.Tuner.adapted_state`: the
    parameters it set in the sampler's parts), in the order of ``smp.tuners``, as
    ``{"kind": class name, "state": {...}}``; JSON-ready values, copies of the parts'.

    Every tuner is listed, one that adapts nothing with an empty state, so that a resume
    checks that the rebuilt sampler adapts with the same tuners. ``TypeError`` names a
    tuner whose state is not plain data."""
    out = []
    for tuner in getattr(smp, "tuners", ()):
        kind = type(tuner).__name__
        state = tuner.adapted_state(smp)
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            raise TypeError(
                f"{kind}.adapted_state() must return a mapping by name, got {state!r:.80}"
            )
        try:
            state = json.loads(json.dumps(state, default=_numpy_plain))
        except (TypeError, ValueError):
            raise TypeError(
                f"{kind}.adapted_state() holds values a resume state cannot hold (plain "
                f"numbers, strings, lists and mappings): {state!r:.200}"
            ) from None
        out.append({"kind": kind, "state": state})
    return out


def chain_state(state, rngs, smp) -> dict:
    """The chains' whole state, generators, step sizes, metric, the sampler's counters and
    its tuners' adapted state (:func:`adapted_state`), as JSON-ready values: what
    :func:`restore` needs to continue exactly."""
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
        "adapted": adapted_state(smp),
    }


def select_chains(info: dict, chains) -> dict:
    """The part of a :func:`chain_state` that holds ``chains`` (their rows, generators and
    step sizes; the metric, the sampler's counters and the parts' adapted parameters are
    shared)."""
    out = dict(info)
    for key in ("q", "p", "log_prob", "grad", "rng_states"):
        if out.get(key) is not None:
            out[key] = [info[key][c] for c in chains]
    out["aux"] = {k: [v[c] for c in chains] for k, v in info.get("aux", {}).items()}
    if isinstance(info["step_size"], list):
        out["step_size"] = [info["step_size"][c] for c in chains]
    return out


def _refusal(path, message: str) -> RunFileError:
    return RunFileError(f"{path} cannot be resumed: {message}")


def _array(path, field: str, value, shape: tuple, *, finite: bool = True) -> np.ndarray:
    try:
        return finite_array(value, field, shape, finite=finite)
    except ValueError as err:
        raise _refusal(path, str(err)) from None


def validate(info, previous, path, dim: int) -> dict:
    """``info`` (a checkpoint's resume state) checked against the run ``previous`` read from
    ``path`` of a target of ``dim`` unconstrained coordinates (not the run's reported
    width: a model's constrained blocks and generated quantities report more, or fewer,
    numbers than the sampler moves): the checked copy, or
    :class:`~hamiltonia.results.errors.RunFileError`."""
    from hamiltonia import samplers

    if not isinstance(info, dict):
        raise RunFileError(f"{path} cannot be resumed: its resume state is not a mapping")
    required = ("sampler", "options", "rng_states", "q", "step_size")
    missing = [k for k in required if k not in info]
    if missing:
        raise RunFileError(f"{path} cannot be resumed: its resume state lacks {', '.join(missing)}")
    chains = previous.n_chains
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
        except (TypeError, ValueError, KeyError, OverflowError) as err:
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
    # A file written before the tuners' adapted state was saved has none: nothing adapted
    # beyond the step sizes and the metric.
    adapted = info.get("adapted")
    if adapted is not None and (
        not isinstance(adapted, list)
        or not all(
            isinstance(a, dict)
            and isinstance(a.get("kind"), str)
            and isinstance(a.get("state"), dict)
            for a in adapted
        )
    ):
        raise RunFileError(
            f"{path} cannot be resumed: adapted is not a list of {{kind, state}} mappings, "
            "one per tuner"
        )
    if info.get("warmup") is not None:
        checked["warmup"] = _check_warmup_fields(path, info["warmup"], previous)
    return checked


def _check_warmup_fields(path, warm, previous) -> dict:
    """The warm-up part of a resume state checked for what the file alone tells: the
    iteration reached, the tuners listed, the kept warm-up draws held. The tuners' own
    fields are checked against the rebuilt sampler by :func:`check_warmup`."""

    def refuse(message: str):
        return _refusal(path, message)

    def whole(value, name: str, low: int, high: int | None) -> int:
        try:
            return check_int(value, name, minimum=low, maximum=high)
        except ValueError:
            valid = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise refuse(f"{name} ({value!r}) is not an integer {valid}") from None

    if not isinstance(warm, dict):
        raise refuse("warmup is not a mapping")
    n_warmup = whole(
        previous.attrs.get("warmup"), "its number of warm-up iterations", 0, MAX_WARMUP
    )
    if warm.get("of") != n_warmup:
        raise refuse(f"warmup.of ({warm.get('of')!r}) is not the run's warm-up ({n_warmup})")
    done = whole(warm.get("done"), "warmup.done", 0, n_warmup)
    if previous.n_draws:
        raise refuse(
            f"it holds {previous.n_draws} draws and a warm-up state: draws come after warm-up"
        )
    tuners = warm.get("tuners")
    if not isinstance(tuners, list) or not all(
        isinstance(t, dict) and isinstance(t.get("kind"), str) and "state" in t for t in tuners
    ):
        raise refuse("warmup.tuners is not a list of {kind, state} mappings")
    checked = {"done": done, "of": n_warmup, "tuners": tuners, "tail": warm.get("tail")}
    if previous.attrs.get("save_warmup"):
        kept = done // whole(previous.attrs.get("thin", 1), "thin", 1, None)
        if previous.warmup_draws is None:
            raise refuse("it keeps its warm-up draws (save_warmup) but holds none")
        held = previous.warmup_draws.shape[1]
        # A checkpoint writes its warm-up draws before its manifest: a kill between the two
        # leaves more than the manifest counts, never fewer.
        if held < kept:
            raise refuse(
                f"it holds {held} kept warm-up draws, fewer than the {kept} of its "
                f"{done} warm-up iterations"
            )
        checked["kept"] = kept
    return checked


def check_adapted(info: dict, smp, path) -> dict:
    """``info`` (checked by :func:`validate`) with its tuners' adapted states checked
    against the rebuilt sampler ``smp``'s tuners (the same kinds in the same order, each
    state by its tuner's :meth:`~hamiltonia.tuners.Tuner.check_adapted_state`);
    :class:`~hamiltonia.results.errors.RunFileError` naming the file and the field
    otherwise. A file with no ``adapted`` field (written before it was saved) passes as
    it is."""
    adapted = info.get("adapted")
    if adapted is None:
        return info
    kinds = [a["kind"] for a in adapted]
    own = [type(t).__name__ for t in smp.tuners]
    if kinds != own:
        raise _refusal(path, f"adapted lists the tuners {kinds}, the sampler adapts with {own}")
    checked = []
    for k, (tuner, entry) in enumerate(zip(smp.tuners, adapted, strict=True)):
        try:
            state = tuner.check_adapted_state(smp, entry["state"])
        except (ValueError, AttributeError) as err:
            raise _refusal(path, f"adapted[{k}] ({entry['kind']}): {err}") from None
        checked.append({"kind": entry["kind"], "state": state})
    return {**info, "adapted": checked}


def check_warmup(info: dict, smp, previous, path) -> dict:
    """``info`` (checked by :func:`validate`) checked where it needs the rebuilt sampler
    ``smp``: its tuners' adapted states (:func:`check_adapted`) and, for a run stopped in
    warm-up, the tuners' warm-up states (the same kinds in the same order as ``smp``'s
    tuners, each field of the right shape and finite) and the statistics of the kept
    warm-up draws' unfinished group against its declared statistics;
    :class:`~hamiltonia.results.errors.RunFileError` naming the file and the field
    otherwise."""
    info = check_adapted(info, smp, path)
    warm = info.get("warmup")
    if warm is None:
        return info

    def refuse(message: str):
        return _refusal(path, message)

    kinds = [t["kind"] for t in warm["tuners"]]
    own = [type(t).__name__ for t in smp.tuners]
    if kinds != own:
        raise refuse(f"warmup.tuners lists {kinds}, the sampler adapts with {own}")
    chains, dim = previous.n_chains, smp.target.dim
    tuners = []
    for k, (tuner, entry) in enumerate(zip(smp.tuners, warm["tuners"], strict=True)):
        if not isinstance(entry["state"], dict):
            raise refuse(f"warmup.tuners[{k}] ({entry['kind']}): state is not a mapping")
        try:
            state = tuner.check_warmup_state(
                entry["state"], chains=chains, dim=dim, n_warmup=warm["of"], done=warm["done"]
            )
        except ValueError as err:
            raise refuse(f"warmup.tuners[{k}] ({entry['kind']}): {err}") from None
        tuners.append({"kind": entry["kind"], "state": state})
    checked = {**warm, "tuners": tuners}
    if "kept" in warm:
        checked["tail"] = _check_tail(warm, smp, chains, previous, refuse)
    return {**info, "warmup": checked}


def _check_tail(warm, smp, chains, previous, refuse) -> dict:
    """The statistics of the warm-up iterations after the last kept draw, as arrays of the
    declared dtypes."""
    thin = previous.attrs.get("thin", 1)
    n = warm["done"] - warm["kept"] * thin
    tail = warm.get("tail")
    declared = dict(smp.stats())
    held = previous.warmup_stats or {}
    if warm["kept"] and not set(declared) <= set(held):
        missing = sorted(set(declared) - set(held))
        raise refuse(f"its kept warm-up draws lack the statistics {missing}")
    if not isinstance(tail, dict) or set(tail) != set(declared):
        raise refuse(f"warmup.tail does not hold the statistics {sorted(declared)}")
    out = {}
    for name, dtype in declared.items():
        try:
            values = finite_array(tail[name], f"warmup.tail.{name}", (chains, n), finite=False)
        except ValueError:
            raise refuse(f"warmup.tail.{name} is not an array of shape {(chains, n)}") from None
        out[name] = values.astype(dtype)
    return out


def restore_warmup(smp, warm: dict, rngs) -> None:
    """Put the tuners' states of a run stopped in warm-up (checked by :func:`check_warmup`)
    back into ``smp``'s tuners, in place of their ``start``."""
    for tuner, entry in zip(smp.tuners, warm["tuners"], strict=True):
        tuner.restore_warmup_state(smp, entry["state"], warm["of"], rngs)


#: Relative tolerance of :func:`check_target`, on the scale ``1 + |value|``.
TARGET_TOLERANCE = 1e-6


def check_target(smp, info: dict, path) -> None:
    """Refuse a file whose target is not the one its chains ran on.

    The log density :math:`\\log\\pi(q_c)` (and its gradient where the sampler keeps one)
    is evaluated anew at each chain's saved position :math:`q_c` and compared with the value
    saved there, within

    .. math::

        |\\log\\pi_\\text{new}(q_c) - \\log\\pi_\\text{saved}(q_c)|
        \\le 10^{-6}\\,(1 + |\\log\\pi_\\text{saved}(q_c)|)

    (per component for the gradient, on the scale of the chain's largest saved component).
    The run may have been made on another machine, or by the compiled kernel where this
    check evaluates the NumPy code: the same sums in another order, another BLAS or
    ``libm``, round differently, by a few units of the last place that a long sum can grow
    to far more than machine precision, never to a millionth. A target built from other
    parameters or data (a hand-edited or mixed-up manifest) differs by far more, and would
    otherwise continue chains on a density they were never drawn from.
    """
    if "log_prob" not in info:
        return  # a file of an earlier version holds the positions only: nothing to compare
    from hamiltonia.state import ModelError

    q = np.asarray(info["q"], dtype=np.float64)
    try:
        fresh = smp.init(q).phase
    except ModelError as err:
        # The model's own exception is a bug to show, never a mismatch to guess at.
        raise err.during("at the saved positions, checking the target before resuming") from (
            err.__cause__
        )
    saved_lp = np.asarray(info["log_prob"], dtype=np.float64)
    lp = np.asarray(array_backend.to_numpy(fresh.log_prob), dtype=np.float64)
    bad = ~(np.abs(lp - saved_lp) <= TARGET_TOLERANCE * (1.0 + np.abs(saved_lp)))
    if info.get("grad") is not None and fresh.grad is not None:
        saved = np.asarray(info["grad"], dtype=np.float64)
        grad = np.asarray(array_backend.to_numpy(fresh.grad), dtype=np.float64)
        scale = 1.0 + np.max(np.abs(saved), axis=-1, keepdims=True)
        bad |= ~np.all(np.abs(grad - saved) <= TARGET_TOLERANCE * scale, axis=-1)
    if np.any(bad):
        c = int(np.flatnonzero(bad)[0])
        raise RunFileError(
            f"{path} cannot be resumed: its target (name, parameters or data) does not match "
            f"its draws: the log density (or its gradient) at chain {c}'s saved position is "
            f"{float(lp[c])!r} where the run saved {float(saved_lp[c])!r} (a hand-edited or "
            "mixed-up manifest?)"
        )


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
    states, ``smp`` its metric, its parts' adapted parameters and its counters; returns the
    chain state."""
    for rng, rng_state in zip(rngs, info["rng_states"], strict=True):
        rng.bit_generator.state = rng_state
    restore_metric(smp, info.get("metric"))
    # Before the chains are evaluated: an adapted part may take part in that.
    restore_adapted(smp, info.get("adapted"))
    state = smp.init(np.asarray(info["q"]))
    if "log_prob" in info:
        state.phase = restore_phase(info)
    state.step_size = np.asarray(info["step_size"], dtype=float)
    smp.restore_extra_state(info.get("sampler_state", {}))
    return state


def restore_adapted(smp, adapted) -> None:
    """Put each tuner's adapted state (:func:`adapted_state`, checked by
    :func:`check_adapted` when read from a file) back into ``smp``'s parts, through its
    :meth:`~hamiltonia.tuners.Tuner.restore_adapted_state`.

    Nothing to do for a file written before the adapted state was saved (``None``), or for
    a sampler whose tuners were dropped after warm-up (an executor's task, whose sampler
    came from the calling process with its parts adapted)."""
    tuners = list(getattr(smp, "tuners", ()))
    if not adapted or not tuners:
        return
    kinds = [entry["kind"] for entry in adapted]
    if kinds != [type(t).__name__ for t in tuners]:
        raise ValueError(
            f"the adapted state lists the tuners {kinds}, the sampler adapts with "
            f"{[type(t).__name__ for t in tuners]}"
        )
    for tuner, entry in zip(tuners, adapted, strict=True):
        tuner.restore_adapted_state(smp, entry["state"])


def restore_metric(smp, info) -> None:
    """Put the metric of a checkpoint (checked by :func:`validate`) back into ``smp``."""
    if info is None or info.get("inverse_mass") is None:
        return
    cls = _metric_classes()[info["kind"]]
    smp.hamiltonian.metric = cls(np.asarray(info["inverse_mass"], dtype=np.float64))
