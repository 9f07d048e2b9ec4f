"""Device benchmark (issue 33): static HMC with many chains on a GPU, beside BlackJAX on the
same card and hamiltonia's compiled CPU path (``python -m hamiltonia.bench.device``).

For each target (``--targets``, default gaussian-d100 and blr-german; ``--bnn`` adds
bnn-protein, full batch, at ``--bnn-chains``) and chain count (``--chains``, default 1, 64,
1024 and 8192) it times static HMC (fixed step size and number of leapfrog
steps, no warm-up, every chain from hamiltonia's default initial points) with:

``hm-cupy``
    hamiltonia's vectorised path on CuPy: ``hamiltonia.sample(target, "hmc",
    backend="cupy", compiled=False, ...)``. The built-in targets compute on CuPy themselves
    (logistic regression and the BNN too, since issue 33: their data moved to the GPU once,
    every chain in one batched gradient). A target that computes with NumPy only is refused
    there; its refusal is recorded, and ``hm-cupy-port`` then runs the same path on an
    array-API copy of the target's density written here, where :func:`port` has one
    (``--no-ports`` leaves it out). No built-in target is refused any more, so the row no
    longer appears for them; :func:`port` stays, an independent copy of the logistic and
    network algebra that the tests compare with the targets.
``hm-cpu``
    hamiltonia's compiled (numba) path on the CPU, ``backend="numpy", compiled=True``.
``hm-cuda``
    hamiltonia's fused device chain (issue 51): the same composition as ``hm-cpu`` written
    as one numba-CUDA kernel, a GPU thread per chain, ``compiled=True, device="cuda"``
    (:mod:`hamiltonia.compiled.device_chain`); it needs numba-cuda.
``blackjax``
    ``blackjax.hmc`` with the identity metric and the same step size and steps, its step
    vmapped over chains inside a ``lax.fori_loop`` over a chunk of iterations (the chunk's
    length an argument: one compile per chain count, ahead of the timing), float64, on
    JAX's default device (``device`` says which).
``hm-numpy`` (not run by default)
    hamiltonia's vectorised path on NumPy.

A cell is time-boxed: a short calibration run (after one untimed run per target and
implementation that compiles the kernels) gives the time per iteration, then the timed run
takes about ``--cell-seconds``. Gradient evaluations are ``n_steps`` per chain and iteration
(the leapfrog carries the gradient from one step to the next; hamiltonia counts them in its
``n_grad`` statistic): ``grad/s = chains x iterations x n_steps / seconds``, where the
seconds are hamiltonia's ``sampling_seconds`` (the draws, copied to host memory, without
start-up and result building; the post-run checks are switched off here) and, for BlackJAX,
the timed chunks (draws kept on the device). ``ess`` is the smallest bulk ESS
(:func:`hamiltonia.diagnostics.ess`) over the parameters of the second half of the chains
(at most ``--ess-chains`` of them, and at most 2e6 numbers: fewer chains, then the last
draws of that half), scaled by ``chains / those chains``; ``ess/s`` divides it by the time
of the draws it read. It is left out below ``--ess-min-draws`` draws.

Each row is printed when it is measured, and the JSON file (``--out``) is rewritten after
each row, so a run that is stopped keeps what it measured. What cannot run here (no CuPy, no
GPU, no JAX, no time left) is reported as skipped with the reason; a cell that fails is
reported with its error, and the run goes on.

One cell's measurement is in :mod:`hamiltonia.bench.device_cells`, the array-API ports in
:mod:`hamiltonia.bench.device_ports` (this module re-exports :func:`port`); this module
probes the machine, runs the cells and reports them, and reads the command line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
import traceback
import warnings

import numpy as np

from hamiltonia.bench.device_cells import _cupy_name, _jax, blackjax_cell, hm_cell
from hamiltonia.bench.device_ports import port

__all__ = [
    "BNN_CHAINS",
    "DEFAULT_CHAINS",
    "DEFAULT_TARGETS",
    "IMPLS",
    "SETTINGS",
    "main",
    "port",
    "run",
]

DEFAULT_TARGETS = ("gaussian-d100", "blr-german")
DEFAULT_CHAINS = (1, 64, 1024, 8192)
#: bnn-protein's chain counts: at 8192 chains each array of a batched gradient holds
#: 8192 x 41157 x 5 float64 numbers (13.5 GB), and a CPU iteration takes minutes.
BNN_CHAINS = (1, 64, 1024)
#: Every implementation; the default runs all but ``hm-numpy``.
IMPLS = ("hm-cupy", "hm-cuda", "hm-cpu", "blackjax", "hm-numpy")
DEFAULT_IMPLS = ("hm-cupy", "hm-cuda", "hm-cpu", "blackjax")
#: Static HMC per target: (step size, leapfrog steps). The steps are the targets'
#: ``research_n_steps``; the step sizes are those dual averaging reaches on the CPU (target
#: acceptance 0.8, identity metric; 0.082, 0.050 and about 0.0016), rounded down.
SETTINGS = {
    "gaussian-d100": (0.08, 15),
    "blr-german": (0.05, 50),
    "bnn-protein": (0.0015, 25),
}
_COLUMNS = ("target", "impl", "device", "chains", "draws", "accept", "ms/it", "grad/s", "ess",
            "ess/s", "status")  # fmt: skip
_WIDTHS = (13, 13, 18, 6, 6, 6, 9, 9, 8, 8, 0)
_VERSIONS = ("numpy", "numba", "cupy-cuda13x", "cupy-cuda12x", "jax", "jaxlib", "blackjax",
             "arviz-stats", "xarray")  # fmt: skip
#: Most numbers of draws (chains x draws x dim) the ESS of a cell reads.
_ESS_NUMBERS = 2e6


def _cores(impl: str, chains: int) -> int:
    """The cores ``chains`` chains of ``impl`` keep busy on the CPU (the compiled path runs
    one chain per core at a time)."""
    return min(chains, os.cpu_count() or 1) if impl == "hm-cpu" else 1


def _free_gpu_memory() -> None:
    if "cupy" in sys.modules:
        with contextlib.suppress(Exception):
            sys.modules["cupy"].get_default_memory_pool().free_all_blocks()


# --------------------------------------------------------------------------- probes
def _probe() -> dict:
    """Why each kind of cell cannot run here (``None``: it can), and what the machine is."""
    from importlib import metadata

    from hamiltonia import backend

    info = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count()}  # fmt: skip
    for dist in _VERSIONS:
        with contextlib.suppress(metadata.PackageNotFoundError):
            info[dist] = metadata.version(dist)
    why = {}
    try:
        with backend.using("cupy"):
            pass
        info["cupy_device"] = _cupy_name()
        why["cupy"] = None
    except Exception as err:  # the reason is the report
        why["cupy"] = f"{type(err).__name__}: {err}"
    try:
        jax = _jax()
        info["jax_devices"] = [str(d) for d in jax.devices()]
        info["jax_backend"] = jax.default_backend()
        import blackjax  # noqa: F401

        why["blackjax"] = None
    except Exception as err:
        why["blackjax"] = f"{type(err).__name__}: {err}"
    try:
        from hamiltonia.compiled.device_chain import check_available

        check_available("cuda")
        why["cuda"] = None
    except Exception as err:
        why["cuda"] = f"{type(err).__name__}: {err}"
    info["skip_reasons"] = why
    return info


# --------------------------------------------------------------------------- the run
def _min_ess(positions: np.ndarray, chains: int, seconds: float, draws: int, opts):
    if draws < opts.ess_min_draws:
        return None, None
    from hamiltonia.diagnostics import ess

    # The second half of each chain; at most about 2e6 numbers (a second of arviz-stats):
    # fewer chains first, then the last draws of that half.
    n_chains, dim = positions.shape[0], positions.shape[2]
    n_chains = max(1, min(n_chains, int(_ESS_NUMBERS // ((draws - draws // 2) * dim))))
    n_draws = max(4, min(draws - draws // 2, int(_ESS_NUMBERS // (n_chains * dim))))
    value = float(np.min(ess(positions[:n_chains, draws - n_draws : draws], "bulk")))
    value *= chains / n_chains
    return value, value / (seconds * n_draws / draws)


def _row(target_name, impl, chains, status, reason="", **fields) -> dict:
    row = {"target": target_name, "impl": impl, "chains": chains, "status": status}
    if reason:
        row["reason"] = reason
    row.update(fields)
    return row


def _format(row) -> str:
    def num(value, digits=3):
        if value is None:
            return "-"
        if isinstance(value, int):
            return str(value)
        return f"{value:.{digits}g}" if abs(value) < 1e5 else f"{value:.3e}"

    status = row["status"]
    if status != "ok":
        status += ": " + row.get("reason", "")[:110]
    ms = 1e3 * row["seconds"] / row["draws"] if row.get("draws") else None
    cells = (row["target"], row["impl"], row.get("device", "-"), str(row["chains"]),
             num(row.get("draws")), num(row.get("accept"), 2), num(ms), num(row.get("grad_per_s")),
             num(row.get("ess")), num(row.get("ess_per_s")), status)  # fmt: skip
    return " ".join(c.ljust(w) for c, w in zip(cells, _WIDTHS, strict=True)).rstrip()


def _error(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}".strip()
    return " ".join(text.split())[:600]


def _write(report: dict, path) -> None:
    """``report`` as JSON at ``path``, replaced whole and atomically (a stopped run leaves a
    readable file)."""
    from hamiltonia.results.runfile import atomic_write_bytes

    atomic_write_bytes(path, json.dumps(report, indent=1, default=str).encode())


def _cells(opts, target, ported) -> list[str]:
    """The implementations of one chain count: ``hm-cupy-port`` after a refused ``hm-cupy``."""
    impls = []
    for impl in opts.impls:
        impls.append(impl)
        if impl == "hm-cupy" and ported is not None and "cupy" not in target.backends:
            impls.append("hm-cupy-port")
    return impls


def _skip_reason(impl, chains, elapsed, unit, info, opts) -> str | None:
    """Why the cell is not run: its library is missing, the run's time is spent, or (on the
    CPU) the last chain count's ``unit`` cost predicts an iteration longer than the cell."""
    kind = {"blackjax": "blackjax", "hm-cuda": "cuda"}.get(impl, "cupy" if "cupy" in impl else None)
    if kind and info["skip_reasons"].get(kind):
        return info["skip_reasons"][kind]
    if elapsed > opts.total_seconds:
        return f"out of time: {elapsed:.0f} s > --total-seconds"
    on_cpu = kind is None or (kind == "blackjax" and info.get("jax_backend") == "cpu")
    on_cpu = on_cpu or (kind == "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1")
    predicted = unit * chains / _cores(impl, chains)
    if on_cpu and predicted * (opts.calibration_draws + opts.min_draws) > 3 * opts.cell_seconds:
        return (
            f"predicted {predicted:.2g} s per iteration (from fewer chains): over the cell's time"
        )
    return None


def run(opts, emit=print) -> dict:
    """Measure every cell of ``opts`` (see :func:`main`); ``emit`` gets each printed line.
    Returns ``{"device": ..., "settings": ..., "rows": [...], "seconds": ...}``."""
    import hamiltonia as hm

    t_start = time.perf_counter()
    info = _probe()
    settings = {k: v for k, v in vars(opts).items() if k != "out"}
    report = {"device": info, "settings": settings, "rows": []}
    emit(f"device: cupy {info.get('cupy_device', '-')}; jax {info.get('jax_devices', '-')}; "
         f"{info['cpus']} CPUs ({info['machine']}), python {info['python']}")  # fmt: skip
    emit("versions: " + ", ".join(f"{k} {info[k]}" for k in _VERSIONS if k in info))
    emit(f"registered: {len(hm.targets.names())} targets, {len(hm.samplers.names())} samplers")
    for kind, reason in info["skip_reasons"].items():
        if reason:
            emit(f"skipping {kind} cells: {reason}")
    compiled_once: set = set()
    #: (target, impl) -> core-seconds per chain and iteration at the last chain count.
    per_chain_it: dict = {}

    def add(row):
        report["rows"].append(row)
        emit(_format(row))
        if row["status"] == "error" and row.get("trace"):
            emit("    " + row["trace"].strip().splitlines()[-1][:300])
        if opts.out:
            _write(report, opts.out)

    for name in opts.targets:
        try:
            target = hm.targets.get(name)
            ported = port(target) if opts.ports else None
        except Exception as err:
            for chains in opts.chains:
                for impl in opts.impls:
                    add(_row(name, impl, chains, "error", f"loading the target: {_error(err)}"))
            continue
        step_size, n_steps = SETTINGS.get(name, (0.1, target.research_n_steps))
        step_size, n_steps = opts.step_size or step_size, opts.n_steps or n_steps
        emit(f"{name}: dim {target.dim}, static HMC, step size {step_size}, {n_steps} steps "
             f"({n_steps} gradients per iteration)")  # fmt: skip
        emit(" ".join(c.ljust(w) for c, w in zip(_COLUMNS, _WIDTHS, strict=True)).rstrip())
        common = dict(step_size=step_size, n_steps=n_steps)
        for chains in opts.bnn_chains if name == "bnn-protein" else opts.chains:
            for impl in _cells(opts, target, ported):
                reason = _skip_reason(impl, chains, time.perf_counter() - t_start,
                                      per_chain_it.get((name, impl), 0.0), info, opts)  # fmt: skip
                if reason:
                    add(_row(name, impl, chains, "skipped", reason, **common))
                    continue
                add(_measure(name, target, ported, impl, chains, opts, compiled_once,
                             per_chain_it, **common))  # fmt: skip
                _free_gpu_memory()
    report["seconds"] = time.perf_counter() - t_start
    emit(f"done in {report['seconds']:.0f} s")
    if opts.out:
        _write(report, opts.out)
    return report


def _measure(name, target, ported, impl, chains, opts, compiled_once, per_chain_it,
             step_size, n_steps) -> dict:  # fmt: skip
    common = dict(step_size=step_size, n_steps=n_steps)
    began = time.perf_counter()
    try:
        if impl == "blackjax":
            cell = blackjax_cell(target, chains, step_size, n_steps, opts)
        else:
            use = ported if impl == "hm-cupy-port" else target
            cell = hm_cell(use, impl, chains, step_size, n_steps, opts, compiled_once)
    except Exception as err:  # recorded, and the run goes on
        return _row(name, impl, chains, "error", _error(err),
                    trace=traceback.format_exc()[-3000:], cell_s=time.perf_counter() - began,
                    **common)  # fmt: skip
    positions = cell.pop("positions")
    per_chain_it[(name, impl)] = cell["seconds"] / cell["draws"] * _cores(impl, chains) / chains
    ess_value, ess_rate = None, None
    with contextlib.suppress(Exception), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ess_value, ess_rate = _min_ess(positions, chains, cell["seconds"], cell["draws"], opts)
    return _row(name, impl, chains, "ok", grad_per_s=cell["grads"] / cell["seconds"],
                ess=ess_value, ess_per_s=ess_rate, cell_s=time.perf_counter() - began,
                gradients_per_iteration=n_steps, **common, **cell)  # fmt: skip


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(t) for t in text.split(",") if t.strip())


def _names(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m hamiltonia.bench.device",
                                description=__doc__.split("\n\n")[0])  # fmt: skip
    p.add_argument("--targets", type=_names, default=DEFAULT_TARGETS)
    p.add_argument("--bnn", action="store_true", help="also bnn-protein (full batch)")
    p.add_argument("--bnn-chains", type=_ints, default=BNN_CHAINS,
                   help="the chain counts of bnn-protein")  # fmt: skip
    p.add_argument("--chains", type=_ints, default=DEFAULT_CHAINS)
    p.add_argument("--impls", type=_names, default=DEFAULT_IMPLS, help=f"of {', '.join(IMPLS)}")
    p.add_argument("--no-ports", dest="ports", action="store_false",
                   help="no hm-cupy-port rows for targets refused on CuPy")  # fmt: skip
    p.add_argument("--cell-seconds", type=float, default=3.0, help="timed seconds per cell")
    p.add_argument("--total-seconds", type=float, default=290.0,
                   help="start no cell after this many seconds")  # fmt: skip
    p.add_argument("--max-draws", type=int, default=200_000)
    p.add_argument("--min-draws", type=int, default=3)
    p.add_argument("--calibration-draws", type=int, default=2)
    p.add_argument("--ess-min-draws", type=int, default=100)
    p.add_argument("--ess-chains", type=int, default=64)
    p.add_argument("--step-size", type=float, default=None, help="override every target's")
    p.add_argument("--n-steps", type=int, default=None, help="override every target's")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the JSON report here")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    opts = p.parse_args(argv)
    if opts.out is not None:
        from hamiltonia.results.runfile import RunFileError, checked_file_path

        try:
            opts.out = checked_file_path(opts.out, "--out")
        except RunFileError as err:
            p.error(str(err))
        if opts.out.exists() and not opts.overwrite:
            p.error(f"--out {opts.out} exists; pass --overwrite to replace it")
    if opts.bnn and "bnn-protein" not in opts.targets:
        opts.targets = (*opts.targets, "bnn-protein")
    unknown = set(opts.impls) - set(IMPLS)
    if unknown:
        p.error(f"unknown --impls {sorted(unknown)}; choose from {', '.join(IMPLS)}")
    if opts.min_draws < 1 or opts.calibration_draws < 1 or opts.max_draws < opts.min_draws:
        p.error("--min-draws and --calibration-draws must be >= 1, --max-draws >= --min-draws")
    return opts


def main(argv=None) -> int:
    def emit(line):
        print(line, flush=True)

    run(parse(argv), emit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
