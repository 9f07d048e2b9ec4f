"""NumPyro runner: ``HMC(num_steps=L, trajectory_length=None)`` or ``NUTS`` on a
``potential_fn``, Stan-style windowed adaptation of a diagonal mass matrix and dual averaging
of the step size (target acceptance 0.8), per chain.

Pitfalls handled (found while measuring the peers; see ``docs/benchmarks.rst``):

* ``HMC(num_steps=L)`` ignores the adapted step size unless ``trajectory_length=None``.
* NumPyro re-jits its sampling loop on every ``warmup``/``run`` call, so a plain second call
  still compiles. The runner turns on a private persistent XLA cache, runs warm-up and
  sampling twice with the same keys (identical draws), and reports the second pass with the
  JAX compile events that still happen inside it (tracing, lowering, cache loads) subtracted.
  ``compile_s`` is first-pass wall minus reported second-pass seconds.
"""

from __future__ import annotations

import time

import numpy as np

from hamiltonia.bench.peers import initial_points, jax_log_density
from hamiltonia.bench.peers._jax import compile_events, setup_jax

__all__ = ["VARIANTS", "run"]

VARIANTS = ("vectorized", "sequential")


def run(
    target,
    *,
    sampler: str = "hmc",
    n_steps: int = 15,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed: int = 0,
    variant: str = "vectorized",
    target_accept: float = 0.8,
) -> dict:
    """One NumPyro run; see :func:`hamiltonia.bench.runs.run_one` for the returned fields."""
    if variant not in VARIANTS:
        raise ValueError(f"NumPyro variant must be one of {VARIANTS}, got {variant!r}")
    jax = setup_jax()
    import jax.numpy as jnp
    from numpyro.infer import HMC, MCMC, NUTS

    logp = jax_log_density(target)

    def potential(x):
        return -logp(x)

    if sampler not in ("hmc", "nuts"):
        raise ValueError(f"unknown sampler {sampler!r}")

    def make_kernel():
        # A kernel keeps state from its last run: each pass gets a fresh one.
        if sampler == "hmc":
            return HMC(
                potential_fn=potential,
                num_steps=n_steps,
                trajectory_length=None,
                target_accept_prob=target_accept,
                adapt_step_size=True,
                adapt_mass_matrix=True,
                dense_mass=False,
            )
        return NUTS(
            potential_fn=potential,
            target_accept_prob=target_accept,
            max_tree_depth=10,
            adapt_step_size=True,
            adapt_mass_matrix=True,
            dense_mass=False,
        )

    init = jnp.asarray(initial_points(seed, chains, target.dim))
    key_warm, key_run = jax.random.split(jax.random.PRNGKey(seed))
    fields = ("num_steps", "accept_prob", "diverging", "adapt_state.step_size")

    def one_pass():
        mcmc = MCMC(
            make_kernel(),
            num_warmup=warmup,
            num_samples=draws,
            num_chains=chains,
            chain_method=variant,
            progress_bar=False,
        )
        with compile_events() as ev_w:
            t0 = time.perf_counter()
            mcmc.warmup(key_warm, init_params=init, extra_fields=(), collect_warmup=False)
            jax.block_until_ready(mcmc.post_warmup_state)
            t1 = time.perf_counter()
        with compile_events() as ev_s:
            t2 = time.perf_counter()
            mcmc.run(key_run, extra_fields=fields)
            samples = mcmc.get_samples(group_by_chain=True)
            jax.block_until_ready(samples)
            t3 = time.perf_counter()
        return mcmc, (t1 - t0, ev_w["seconds"]), (t3 - t2, ev_s["seconds"])

    t0 = time.perf_counter()
    one_pass()
    first = time.perf_counter() - t0
    mcmc, (warm_wall, warm_ev), (samp_wall, samp_ev) = one_pass()
    warmup_s = max(warm_wall - warm_ev, 0.0)
    sampling_s = max(samp_wall - samp_ev, 0.0)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    draws_arr = np.asarray(mcmc.get_samples(group_by_chain=True), dtype=float)
    return {
        "variant": variant,
        "draws": draws_arr.reshape(chains, draws, target.dim),
        "accept": np.asarray(extra["accept_prob"], dtype=float),
        "diverging": np.asarray(extra["diverging"], dtype=bool),
        "n_grad": int(np.sum(np.asarray(extra["num_steps"]))),
        "warmup_s": warmup_s,
        "sampling_s": sampling_s,
        "first_call_s": first,
        "compile_s": max(first - warmup_s - sampling_s, 0.0),
        "step_size": float(np.mean(np.asarray(extra["adapt_state.step_size"])[:, -1])),
        "note": f"2nd pass walls {warm_wall:.3f}+{samp_wall:.3f} s minus JAX compile events "
        f"{warm_ev:.3f}+{samp_ev:.3f} s",
    }
