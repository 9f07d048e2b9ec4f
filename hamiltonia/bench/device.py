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
IMPLS = ("hm-cupy", "hm-cpu", "blackjax", "hm-numpy")
DEFAULT_IMPLS = ("hm-cupy", "hm-cpu", "blackjax")
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
#: Longest chunk of BlackJAX iterations between two looks at the clock.
_CHUNK = 256


# --------------------------------------------------------------------------- the ports
def port(target):
    """An array-API copy of ``target``'s density (``backends`` all of
    :data:`hamiltonia.backend.BACKENDS`) for logistic regression and the BNN, else ``None``.
    The same algebra as the target's code, written independently, the data moved to the
    backend once. The targets compute on every backend themselves now (``hm-cupy`` runs
    them), so ``hm-cupy-port`` runs a port only for a target refused on CuPy."""
    from hamiltonia.backend import BACKENDS, DeviceData, namespace_of
    from hamiltonia.targets.base import Target
    from hamiltonia.targets.bnn import BayesianNeuralNetwork
    from hamiltonia.targets.logistic import LogisticRegression

    class _Port(DeviceData, Target):
        backends = BACKENDS

        def __init__(self, base):
            super().__init__(base.dim, base.names)
            self.base = base

    if isinstance(target, LogisticRegression):

        class LogisticPort(_Port):
            def __init__(self, base):
                super().__init__(base)
                self.Xt, self.y, self.prec = base._Xt, np.asarray(base.y, float), base._prec

            def log_prob_and_grad(self, x):
                xp = namespace_of(x)
                x = xp.asarray(x, dtype=xp.float64)
                Xt, y = self.on(xp, "Xt"), self.on(xp, "y")
                z = x @ Xt.T
                e = xp.exp(-xp.abs(z))
                inv = 1.0 / (1.0 + e)
                sigmoid = xp.where(z >= 0, inv, e * inv)
                softplus = xp.sum(xp.maximum(z, 0.0) + xp.log1p(e), axis=-1)
                lp = z @ y - softplus - 0.5 * self.prec * xp.sum(x * x, axis=-1)
                return lp, (y - sigmoid) @ Xt - self.prec * x

        return LogisticPort(target)
    if isinstance(target, BayesianNeuralNetwork):

        class NetworkPort(_Port):
            def __init__(self, base):
                super().__init__(base)
                self.X, self.ys = base.X, base._ys
                self.noise, self.prior = base._noise_prec, base._prior_prec
                self.d, self.h = base.n_features, base.n_hidden

            def log_prob_and_grad(self, x):
                xp = namespace_of(x)
                x = xp.asarray(x, dtype=xp.float64)
                X, ys = self.on(xp, "X"), self.on(xp, "ys")
                d, h = self.d, self.h
                lead = tuple(x.shape[:-1])
                W = xp.reshape(x[..., : d * h], (*lead, d, h))
                a, v, b = x[..., d * h : d * h + h], x[..., d * h + h : -1], x[..., -1]
                T = xp.tanh(xp.matmul(X, W) + a[..., None, :])  # (..., N, H)
                e = ys - (xp.matmul(T, v[..., :, None])[..., 0] + b[..., None])
                r = self.noise * e
                lp = -0.5 * xp.sum(e * r, axis=-1) - 0.5 * self.prior * xp.sum(x * x, axis=-1)
                G = r[..., None] * v[..., None, :] * (1.0 - T * T)
                gW = xp.reshape(xp.matmul(X.T, G), (*lead, d * h))
                gv = xp.matmul(r[..., None, :], T)[..., 0, :]
                grad = xp.concat(
                    [gW, xp.sum(G, axis=-2), gv, xp.sum(r, axis=-1)[..., None]], axis=-1
                )
                return lp, grad - self.prior * x

        return NetworkPort(target)
    return None


# --------------------------------------------------------------------------- JAX
def _jax():
    """JAX in float64, with its GPU memory taken as needed (CuPy shares the card)."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def _jax_log_density(target):
    """The peers' ``jax.numpy`` density of ``target``, and the BNN's written here."""
    from hamiltonia.bench.peers import jax_log_density
    from hamiltonia.targets.bnn import BayesianNeuralNetwork

    if not isinstance(target, BayesianNeuralNetwork):
        return jax_log_density(target)
    import jax.numpy as jnp

    X, ys = jnp.asarray(target.X), jnp.asarray(target._ys)
    noise, prior = target._noise_prec, target._prior_prec
    d, h = target.n_features, target.n_hidden

    def network(theta):
        W = theta[: d * h].reshape(d, h)
        a, v, b = theta[d * h : d * h + h], theta[d * h + h : -1], theta[-1]
        e = ys - (jnp.tanh(X @ W + a) @ v + b)
        return -0.5 * noise * jnp.sum(e * e) - 0.5 * prior * jnp.sum(theta * theta)

    return network


def _blackjax_cell(target, chains, step_size, n_steps, opts) -> dict:
    jax = _jax()
    import blackjax
    import jax.numpy as jnp

    from hamiltonia.bench.peers import initial_points

    algorithm = blackjax.hmc(_jax_log_density(target), step_size, jnp.ones(target.dim), n_steps)
    keep, longest, dim = min(chains, opts.ess_chains), _CHUNK, target.dim

    def advance(keys, states, n):
        """``n`` (<= _CHUNK, traced: one compile) iterations of every chain; the positions
        of the first ``keep`` chains and the number of accepted proposals."""

        def body(i, carry):
            keys, states, kept, accepted = carry
            pairs = jax.vmap(jax.random.split)(keys)
            states, info = jax.vmap(algorithm.step)(pairs[:, 1], states)
            kept = jax.lax.dynamic_update_index_in_dim(kept, states.position[:keep], i, 0)
            return pairs[:, 0], states, kept, accepted + jnp.sum(info.is_accepted, dtype=float)

        kept = jnp.zeros((longest, keep, dim))
        return jax.lax.fori_loop(0, n, body, (keys, states, kept, jnp.zeros(())))

    start = jnp.asarray(initial_points(opts.seed, chains, dim))
    states = jax.jit(jax.vmap(algorithm.init))(start)
    keys = jax.random.split(jax.random.PRNGKey(opts.seed), chains)
    began = time.perf_counter()
    step = jax.jit(advance).lower(keys, states, jnp.int32(1)).compile()
    compile_s = time.perf_counter() - began
    keys, states, _, _ = jax.block_until_ready(step(keys, states, jnp.int32(1)))  # untimed
    began = time.perf_counter()
    keys, states, _, _ = jax.block_until_ready(step(keys, states, jnp.int32(1)))
    per_it = time.perf_counter() - began
    length = int(min(max(1, round(min(0.25, opts.cell_seconds / 8) / per_it)), longest))
    cap = _max_draws(chains, dim, opts)
    kept, accepted, draws, seconds = [], 0.0, 0, 0.0
    while draws == 0 or (seconds < opts.cell_seconds and draws + length <= cap):
        began = time.perf_counter()
        keys, states, positions, acc = jax.block_until_ready(step(keys, states, jnp.int32(length)))
        seconds += time.perf_counter() - began
        kept.append(np.asarray(positions[:length]))
        accepted += float(acc)
        draws += length
    return {
        "device": str(jax.devices()[0]).replace(" ", ""),
        "draws": draws,
        "seconds": seconds,
        "grads": chains * draws * n_steps,
        "accept": accepted / (chains * draws),
        "compile_s": compile_s,
        "chunk": length,
        "positions": np.concatenate(kept, axis=0).transpose(1, 0, 2),
    }


# --------------------------------------------------------------------------- hamiltonia
@contextlib.contextmanager
def _unchecked():
    """No post-run checks (R-hat, ESS and the rest over every chain: seconds at 8192 chains,
    not part of sampling) and no warnings."""
    from unittest import mock

    from hamiltonia.results import Result

    with warnings.catch_warnings(), mock.patch.object(Result, "diagnose", lambda self: []):
        warnings.simplefilter("ignore")
        yield


def _max_draws(chains, dim, opts) -> int:
    # At most about 5e7 numbers of draws and statistics in memory (400 MB).
    return max(opts.min_draws, min(opts.max_draws, int(5e7 // (chains * (dim + 10)))))


def _hm_cell(target, impl, chains, step_size, n_steps, opts, compiled_once: set) -> dict:
    import hamiltonia as hm

    backend, compiled = {
        "hm-cupy": ("cupy", False),
        "hm-cupy-port": ("cupy", False),
        "hm-numpy": ("numpy", False),
        "hm-cpu": ("numpy", True),
    }[impl]
    options = dict(backend=backend, compiled=compiled, warmup=0, seed=opts.seed,
                   progress=False, step_size=step_size, n_steps=n_steps)  # fmt: skip
    compile_s = 0.0
    with _unchecked():
        if (target, impl) not in compiled_once:
            began = time.perf_counter()
            hm.sample(target, "hmc", chains=min(chains, 2), draws=2, **options)
            compile_s = time.perf_counter() - began
            compiled_once.add((target, impl))
        calibrate = opts.calibration_draws
        first = hm.sample(target, "hmc", chains=chains, draws=calibrate, **options)
        per_it = first.sampling_seconds / calibrate
        cap = _max_draws(chains, target.dim, opts)
        draws = int(min(max(opts.min_draws, opts.cell_seconds / max(per_it, 1e-9)), cap))
        for _ in range(3):
            # A call has fixed costs (threads, moving data), so a short calibration
            # overestimates the time per iteration: lengthen a run that ended early.
            began = time.perf_counter()
            result = hm.sample(target, "hmc", chains=chains, draws=draws, **options)
            wall = time.perf_counter() - began
            seconds = result.sampling_seconds
            if seconds >= 0.4 * opts.cell_seconds or draws >= cap:
                break
            draws = int(min(cap, draws * min(30.0, 0.9 * opts.cell_seconds / max(seconds, 1e-6))))
    return {
        "device": _cupy_name() if backend == "cupy" else "cpu",
        "draws": draws,
        "seconds": result.sampling_seconds,
        "call_s": wall,
        "grads": int(np.sum(result.stats["n_grad"])),
        "accept": float(np.mean(result.stats["accepted"])),
        "compile_s": compile_s,
        "positions": result.draws[: opts.ess_chains].copy(),
    }


def _cupy_name() -> str:
    try:
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        return name.removeprefix("NVIDIA ").replace(" ", "-")
    except Exception:  # reported as unknown
        return "cupy"


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
    kind = "blackjax" if impl == "blackjax" else "cupy" if "cupy" in impl else None
    if kind and info["skip_reasons"].get(kind):
        return info["skip_reasons"][kind]
    if elapsed > opts.total_seconds:
        return f"out of time: {elapsed:.0f} s > --total-seconds"
    on_cpu = kind is None or (kind == "blackjax" and info.get("jax_backend") == "cpu")
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
            cell = _blackjax_cell(target, chains, step_size, n_steps, opts)
        else:
            use = ported if impl == "hm-cupy-port" else target
            cell = _hm_cell(use, impl, chains, step_size, n_steps, opts, compiled_once)
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
