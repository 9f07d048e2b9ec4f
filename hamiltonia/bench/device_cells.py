"""The device benchmark's cells (:mod:`hamiltonia.bench.device`): one time-boxed
measurement of static HMC at one chain count, with BlackJAX on JAX's default device
(:func:`blackjax_cell`) or with hamiltonia on one of its paths (:func:`hm_cell`: CuPy,
NumPy, or compiled on the CPU), each returning its draws, seconds, gradients and
acceptance.
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings

import numpy as np

__all__ = ["blackjax_cell", "hm_cell"]

#: Longest chunk of BlackJAX iterations between two looks at the clock.
_CHUNK = 256


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


def blackjax_cell(target, chains, step_size, n_steps, opts) -> dict:
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


def hm_cell(target, impl, chains, step_size, n_steps, opts, compiled_once: set) -> dict:
    import hamiltonia as hm

    backend, compiled, device = {
        "hm-cupy": ("cupy", False, "cpu"),
        "hm-cupy-port": ("cupy", False, "cpu"),
        "hm-numpy": ("numpy", False, "cpu"),
        "hm-cpu": ("numpy", True, "cpu"),
        "hm-cuda": ("numpy", True, "cuda"),
    }[impl]
    options = dict(backend=backend, compiled=compiled, device=device, warmup=0, seed=opts.seed,
                   progress=False, step_size=step_size, n_steps=n_steps,
                   n_steps_jitter=0.0)  # fmt: skip
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
        "device": _cupy_name() if backend == "cupy" or device == "cuda" else "cpu",
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
