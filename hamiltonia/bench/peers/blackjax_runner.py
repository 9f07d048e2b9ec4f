"""BlackJAX runner: ``blackjax.hmc(num_integration_steps=L)`` (or ``blackjax.nuts``) after
``window_adaptation(is_mass_matrix_diagonal=True, target_acceptance_rate=0.8)``, both
``jax.vmap``-ed over chains (each chain adapts alone), draws in ``jax.lax.scan``.

Both phases are compiled ahead of time (``jit(...).lower(...).compile()``) and then timed, so
the timed calls contain no compilation; ``compile_s`` is the two AOT compiles.
"""

from __future__ import annotations

import time

import numpy as np

from hamiltonia.bench.peers import initial_points, jax_log_density
from hamiltonia.bench.peers._jax import setup_jax

__all__ = ["VARIANTS", "run"]

VARIANTS = ("vmap+scan",)


def run(
    target,
    *,
    sampler: str = "hmc",
    n_steps: int = 15,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed: int = 0,
    variant: str = "vmap+scan",
    target_accept: float = 0.8,
) -> dict:
    """One BlackJAX run; see :func:`hamiltonia.bench.runs.run_one` for the returned fields."""
    if variant not in VARIANTS:
        raise ValueError(f"BlackJAX variant must be one of {VARIANTS}, got {variant!r}")
    jax = setup_jax()
    import blackjax
    import jax.numpy as jnp
    from blackjax.adaptation.base import get_filter_adapt_info_fn

    logp = jax_log_density(target)
    if sampler == "hmc":
        algorithm, extra = blackjax.hmc, {"num_integration_steps": n_steps}
    elif sampler == "nuts":
        algorithm, extra = blackjax.nuts, {}
    else:
        raise ValueError(f"unknown sampler {sampler!r}")
    adaptation = blackjax.window_adaptation(
        algorithm,
        logp,
        is_mass_matrix_diagonal=True,
        target_acceptance_rate=target_accept,
        adaptation_info_fn=get_filter_adapt_info_fn(),
        **extra,
    )

    def warm_all(keys, positions):
        def one(key, x):
            (state, params), _ = adaptation.run(key, x, num_steps=warmup)
            return state, params["step_size"], params["inverse_mass_matrix"]

        return jax.vmap(one)(keys, positions)

    def sample_all(keys, states, step_sizes, inv_mass):
        def one(key, state, eps, imm):
            kernel = algorithm(logp, step_size=eps, inverse_mass_matrix=imm, **extra)

            def body(s, k):
                s, info = kernel.step(k, s)
                n = getattr(info, "num_integration_steps", n_steps)
                return s, (s.position, info.acceptance_rate, info.is_divergent, n)

            _, out = jax.lax.scan(body, state, jax.random.split(key, draws))
            return out

        return jax.vmap(one)(keys, states, step_sizes, inv_mass)

    init = jnp.asarray(initial_points(seed, chains, target.dim))
    key_warm, key_run = jax.random.split(jax.random.PRNGKey(seed))
    keys_warm = jax.random.split(key_warm, chains)
    keys_run = jax.random.split(key_run, chains)

    t0 = time.perf_counter()
    warm_c = jax.jit(warm_all).lower(keys_warm, init).compile()
    t1 = time.perf_counter()
    states, eps, imm = warm_c(keys_warm, init)
    jax.block_until_ready((states, eps, imm))
    t2 = time.perf_counter()
    sample_c = jax.jit(sample_all).lower(keys_run, states, eps, imm).compile()
    t3 = time.perf_counter()
    out = sample_c(keys_run, states, eps, imm)
    jax.block_until_ready(out)
    t4 = time.perf_counter()
    positions, accept, divergent, n_int = (np.asarray(a) for a in out)
    return {
        "variant": variant,
        "draws": positions.astype(float).reshape(chains, draws, target.dim),
        "accept": accept.astype(float),
        "diverging": divergent.astype(bool),
        "n_grad": int(np.sum(n_int)),
        "warmup_s": t2 - t1,
        "sampling_s": t4 - t3,
        "first_call_s": t4 - t0,
        "compile_s": (t1 - t0) + (t3 - t2),
        "step_size": float(np.mean(np.asarray(eps))),
        "note": "ahead-of-time compiled, then timed",
    }
