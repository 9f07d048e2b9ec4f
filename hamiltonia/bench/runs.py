"""One benchmark run = one fresh Python process.

:func:`run_in_subprocess` starts ``python -m hamiltonia.bench._worker SPEC`` and reads back
one JSON line. A fresh process per run gives each run a clean peak resident set size
(``VmHWM`` of ``/proc/self/status``, which also counts the library's own imports, JAX's
included) and a true first call: for hamiltonia, the first ``sample`` call in a new process
includes importing numba and loading the compiled kernels from numba's on-disk cache (or
compiling them when the cache is cold), so ``compile_s`` = first-call wall minus the wall of
an identical second call.

A spec is a dict with ``library`` (``"hamiltonia"`` or a peer name), ``variant`` (for
hamiltonia the metric, ``"identity"`` or ``"diagonal"``), ``target`` (a registered name),
``sampler``, ``n_steps``, ``chains``, ``warmup``, ``draws``, ``seed`` and
``target_accept``. ``mode="memory"`` measures the memory of one long hamiltonia run instead.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

__all__ = ["MARKER", "memory_run", "run_hamiltonia", "run_in_subprocess", "run_one", "summarise"]

#: Prefix of the worker's result line on stdout.
MARKER = "@@hamiltonia-bench@@ "


def _rss_mb() -> float:
    """Current resident set size in MB (Linux ``/proc``; the peak where that is missing)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return _peak_rss_mb()


def _peak_rss_mb() -> float:
    """Peak resident set size of this process in MB.

    Linux: ``VmHWM`` from ``/proc/self/status``, the high-water mark of this program's own
    memory. Not ``getrusage(RUSAGE_SELF).ru_maxrss``: across ``fork`` + ``exec`` Linux
    carries the parent's high-water mark into it, so a child started by a large parent
    reports at least the parent's size. Elsewhere ``ru_maxrss`` (KiB on Linux, bytes on
    macOS)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def run_hamiltonia(
    target,
    *,
    sampler: str = "hmc",
    n_steps: int = 15,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed: int = 0,
    variant: str = "diagonal",
    target_accept: float = 0.8,
) -> dict:
    """Two identical ``hamiltonia.sample`` calls (same seed, same draws); the second is
    reported. The compiled path is used wherever the sampler and target allow it."""
    import hamiltonia as hm

    options = {"metric": variant, "target_accept": target_accept}
    if sampler == "hmc":
        options["n_steps"] = n_steps
        options["n_steps_jitter"] = 0.0  # the fixed length L the report names

    def call():
        began = time.perf_counter()
        result = hm.sample(
            target,
            sampler,
            chains=chains,
            warmup=warmup,
            draws=draws,
            seed=seed,
            progress=False,
            **options,
        )
        return result, time.perf_counter() - began

    _, first = call()
    result, second = call()
    path = "compiled" if result.attrs.get("compiled") else "numpy"
    return {
        "variant": f"{variant}, {path}",
        "draws": result.draws,
        "accept": np.asarray(result.stats["acceptance_rate"], dtype=float),
        "diverging": np.asarray(result.stats["diverging"], dtype=bool),
        "n_grad": result.n_grad,
        "warmup_s": result.warmup_seconds,
        "sampling_s": result.sampling_seconds,
        "first_call_s": first,
        "compile_s": max(first - second, 0.0),
        "step_size": float(np.mean(result.stats["step_size"][:, -1])),
        "note": f"second of two calls; first {first:.3f} s, second {second:.3f} s",
    }


def _runner(library: str):
    if library == "hamiltonia":
        return run_hamiltonia
    if library == "numpyro":
        from hamiltonia.bench.peers import numpyro_runner as module
    elif library == "blackjax":
        from hamiltonia.bench.peers import blackjax_runner as module
    elif library == "mici":
        from hamiltonia.bench.peers import mici_runner as module
    else:
        raise ValueError(f"unknown library {library!r}")
    return module.run


def mess_defined(n_draws: int, dim: int) -> bool:
    """Batch-means mESS needs more batches than dimensions: with ``b = floor(sqrt(n))`` there
    are ``n // b`` batches per chain (32 for n = 1000, so it is undefined for D >= 32)."""
    b = int(np.floor(np.sqrt(n_draws)))
    return b >= 1 and n_draws // b > dim


def summarise(out: dict) -> dict:
    """The diagnostics of a run's output (see :func:`run_one`)."""
    from hamiltonia import diagnostics

    draws = np.asarray(out["draws"], dtype=float)
    chains, n, dim = draws.shape
    ess_bulk = float(np.min(diagnostics.ess(draws, "bulk")))
    ess_tail = float(np.min(diagnostics.ess(draws, "tail")))
    mess = None
    if mess_defined(n, dim):
        value = diagnostics.multivariate_ess(draws)
        mess = float(value) if np.isfinite(value) else None
    n_grad = int(out["n_grad"])
    sampling_s = float(out["sampling_s"])
    diverging = out.get("diverging")
    return {
        "ess_bulk": ess_bulk,
        "ess_tail": ess_tail,
        "mess": mess,
        "ess_per_s": ess_bulk / sampling_s if sampling_s > 0 else float("inf"),
        "ess_per_grad": ess_bulk / n_grad if n_grad else None,
        "grads_per_draw": n_grad / (chains * n),
        "us_per_grad": 1e6 * sampling_s / n_grad if n_grad else None,
        "accept": float(np.mean(out["accept"])),
        "rhat": float(np.max(diagnostics.rhat(draws))),
        "divergences": None if diverging is None else int(np.sum(diverging)),
    }


def run_one(spec: dict) -> dict:
    """Run ``spec`` in this process and return a JSON-ready record.

    The library runner returns ``variant``, ``draws`` (chains, draws, dim), ``accept`` and
    ``diverging`` (chains, draws; ``diverging`` may be ``None``), ``n_grad`` (gradient
    evaluations of the sampling phase, all chains), ``warmup_s``, ``sampling_s``,
    ``first_call_s``, ``compile_s``, ``step_size`` and a ``note``; the record adds
    :func:`summarise`'s diagnostics and ``peak_rss_mb``.
    """
    import hamiltonia as hm

    target = hm.targets.get(spec["target"])
    runner = _runner(spec["library"])
    out = runner(
        target,
        sampler=spec.get("sampler", "hmc"),
        n_steps=int(spec.get("n_steps", 15)),
        chains=int(spec.get("chains", 4)),
        warmup=int(spec.get("warmup", 1000)),
        draws=int(spec.get("draws", 1000)),
        seed=int(spec.get("seed", 0)),
        variant=spec["variant"],
        target_accept=float(spec.get("target_accept", 0.8)),
    )
    record = {k: spec[k] for k in ("library", "target", "sampler", "n_steps", "cpus") if k in spec}
    record.update(
        {
            k: out[k]
            for k in (
                "variant",
                "n_grad",
                "warmup_s",
                "sampling_s",
                "first_call_s",
                "compile_s",
                "step_size",
                "note",
            )
        }
    )
    record.update(summarise(out))
    record["peak_rss_mb"] = _peak_rss_mb()
    return record


def memory_run(spec: dict) -> dict:
    """Peak memory of one long hamiltonia run: a short call first (numba and the kernels
    loaded), then the resident set size is read, then the long run; reports both and the
    size of the draws array."""
    import hamiltonia as hm

    target = hm.targets.get(spec["target"])
    options = {"n_steps": int(spec.get("n_steps", 15)), "n_steps_jitter": 0.0,
               "metric": spec.get("variant", "identity")}  # fmt: skip
    chains, draws = int(spec.get("chains", 4)), int(spec.get("draws", 10_000))
    hm.sample(target, "hmc", chains=chains, warmup=20, draws=5, seed=1, progress=False, **options)
    before = _rss_mb()
    began = time.perf_counter()
    result = hm.sample(
        target,
        "hmc",
        chains=chains,
        warmup=int(spec.get("warmup", 1000)),
        draws=draws,
        seed=int(spec.get("seed", 0)),
        progress=False,
        **options,
    )
    wall = time.perf_counter() - began
    return {
        "target": spec["target"],
        "chains": chains,
        "draws": draws,
        "path": "compiled" if result.attrs.get("compiled") else "numpy",
        "draws_mb": result.draws.nbytes / 2**20,
        "rss_before_mb": before,
        "peak_rss_mb": _peak_rss_mb(),
        "wall_s": wall,
    }


def run_in_subprocess(spec: dict, *, timeout: float = 3600, env: dict | None = None) -> dict:
    """Run ``spec`` in a fresh interpreter; returns its record, or ``{"error": ...}``."""
    environ = dict(os.environ)
    environ.setdefault("JAX_PLATFORMS", "cpu")
    environ.update(env or {})
    command = [sys.executable, "-m", "hamiltonia.bench._worker", json.dumps(spec)]
    began = time.perf_counter()
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=environ, check=False
        )
    except subprocess.TimeoutExpired:
        return {**spec, "error": f"timed out after {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            record = json.loads(line[len(MARKER) :])
            record["process_s"] = time.perf_counter() - began
            return record
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return {**spec, "error": lines[-1] if lines else f"worker exited with code {proc.returncode}"}
