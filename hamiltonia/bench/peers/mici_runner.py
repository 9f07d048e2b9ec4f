"""mici runner: ``StaticMetropolisHMC(n_step=L)`` (or ``DynamicMultinomialHMC``) with
``DualAveragingStepSizeAdapter(0.8)`` and ``OnlineVarianceMetricAdapter`` (a diagonal metric,
on mici's windowed stager). mici pools its adaptation across chains (one step size, one
metric), as hamiltonia's windowed metric does.

The log density and its gradient are the hamiltonia target's own NumPy
``log_prob_and_grad``; gradient evaluations are counted by wrapping it. Chains run
sequentially in this process; warm-up and sampling are two ``sample_chains`` calls, timed
directly (mici compiles nothing, so ``compile_s`` is 0).
"""

from __future__ import annotations

import time

import numpy as np

from hamiltonia.bench.peers import initial_points

__all__ = ["VARIANTS", "run"]

VARIANTS = ("sequential",)


def run(
    target,
    *,
    sampler: str = "hmc",
    n_steps: int = 15,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed: int = 0,
    variant: str = "sequential",
    target_accept: float = 0.8,
) -> dict:
    """One mici run; see :func:`hamiltonia.bench.runs.run_one` for the returned fields."""
    if variant not in VARIANTS:
        raise ValueError(f"mici variant must be one of {VARIANTS}, got {variant!r}")
    import mici

    calls = [0]

    def neg_log_dens(x):
        return -float(target.log_prob(x))

    def grad_neg_log_dens(x):
        calls[0] += 1
        lp, grad = target.log_prob_and_grad(x)
        return -grad, -float(lp)

    system = mici.systems.EuclideanMetricSystem(
        neg_log_dens=neg_log_dens, grad_neg_log_dens=grad_neg_log_dens
    )
    integrator = mici.integrators.LeapfrogIntegrator(system)
    rng = np.random.default_rng([seed, 12345])
    if sampler == "hmc":
        mcmc = mici.samplers.StaticMetropolisHMC(system, integrator, rng, n_step=n_steps)
    elif sampler == "nuts":
        mcmc = mici.samplers.DynamicMultinomialHMC(system, integrator, rng, max_tree_depth=10)
    else:
        raise ValueError(f"unknown sampler {sampler!r}")
    adapters = [
        mici.adapters.DualAveragingStepSizeAdapter(target_accept),
        mici.adapters.OnlineVarianceMetricAdapter(),
    ]
    init = list(initial_points(seed, chains, target.dim))
    common = {"n_worker": 1, "display_progress": False}
    # mici's initial step-size search tries eps = 1, which overflows on the funnel and BLR.
    with np.errstate(all="ignore"):
        t0 = time.perf_counter()
        warm = mcmc.sample_chains(warmup, 0, init, adapters=adapters, **common)
        t1 = time.perf_counter()
        calls[0] = 0
        out = mcmc.sample_chains(0, draws, warm.final_states, **common)
        t2 = time.perf_counter()
    stats = out.statistics
    positions = np.stack([np.asarray(p, dtype=float) for p in out.traces["pos"]])
    diverging = stats.get("diverging")
    return {
        "variant": variant,
        "draws": positions.reshape(chains, draws, target.dim),
        "accept": np.stack([np.asarray(a, dtype=float) for a in stats["accept_stat"]]),
        "diverging": None
        if diverging is None
        else np.stack([np.asarray(d, dtype=bool) for d in diverging]),
        "n_grad": int(calls[0]),
        "warmup_s": t1 - t0,
        "sampling_s": t2 - t1,
        "first_call_s": t2 - t0,
        "compile_s": 0.0,
        "step_size": float(integrator.step_size),
        "note": "two sample_chains calls, chains sequential (n_worker=1)",
    }
