"""Benchmark: NUTS on ``sir-cp2`` in hamiltonia (compiled path, hand-written adjoint) against
the same model written in NumPyro (JAX, ``lax.scan``), one run each, side by side.

    HAMILTONIA_DATA=/path/to/data/mirror python bench/bench_numpyro.py [--chains 4]
        [--warmup 1000] [--draws 1000] [--seed 0]

4 chains run one after the other in one process for NumPyro (``chain_method="sequential"``)
and for hamiltonia's first row (``workers=1``); its second row is its default, the compiled
path's chains on threads, one per core. Diagonal mass matrix adapted in warm-up, target
acceptance 0.8, the same start (the priors' medians, jittered by U(-0.5, 0.5) in the
unconstrained space for hamiltonia; NumPyro at the medians). ESS is the rank-normalised bulk ESS of
:func:`hamiltonia.diagnostics.ess` (Vehtari et al. 2021) on the same 11 constrained
parameters for both; the minimum over the parameters is divided by the wall time of warm-up
plus sampling. NumPyro's JIT compilation is excluded: its run is made once to compile and
timed the second time.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np


def numpyro_model(y, t_means, population, lead):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax import lax

    T = y.shape[0]
    n = lead + T
    tau = jnp.arange(n) - lead

    def model():
        lam0 = numpyro.sample("lambda0", dist.LogNormal(math.log(0.4), 0.5))
        lam1 = numpyro.sample("lambda1", dist.LogNormal(math.log(0.4), 0.7))
        lam2 = numpyro.sample("lambda2", dist.LogNormal(math.log(0.4), 0.7))
        mu = numpyro.sample("mu", dist.LogNormal(math.log(1 / 8), 0.2))
        D = numpyro.sample("D", dist.LogNormal(math.log(8.0), 0.2))
        I0 = numpyro.sample("I0", dist.HalfCauchy(20.0))
        t1 = numpyro.sample("t1", dist.Normal(t_means[0], 1.0))
        t2 = numpyro.sample("t2", dist.Normal(t_means[1], 1.0))
        tr1 = numpyro.sample("transient1", dist.LogNormal(math.log(3.0), 0.3))
        tr2 = numpyro.sample("transient2", dist.LogNormal(math.log(3.0), 0.3))
        sobs = numpyro.sample("sigma_obs", dist.HalfCauchy(10.0))

        def daily_ramp(t, d):
            # The mean over day [tau, tau + 1] of the ramp clip((s - t) / d, 0, 1).
            def integral(u):
                return jnp.where(u <= 0.0, 0.0, jnp.where(u >= 1.0, u - 0.5, 0.5 * u * u))

            return d * (integral((tau + 1 - t) / d) - integral((tau - t) / d))

        lam_s = lam0 + (lam1 - lam0) * daily_ramp(t1, tr1) + (lam2 - lam1) * daily_ramp(t2, tr2)

        def step(carry, lam):
            S, I_ = carry
            f = lam * S * I_ / population
            return (S - f, I_ * (1 - mu) + f), f

        _, x = lax.scan(step, (population - I0, I0), lam_s)
        p = lead + jnp.arange(T) - D
        k = jnp.floor(p)
        w = p - k
        k = k.astype(jnp.int32)
        xp = jnp.concatenate([jnp.zeros(1), x])  # index -1 -> 0
        a = jnp.where(k >= 0, xp[jnp.clip(k + 1, 0, n)], 0.0)
        b = jnp.where(k + 1 >= 0, xp[jnp.clip(k + 2, 0, n)], 0.0)
        C = (1 - w) * a + w * b
        numpyro.sample("new_cases", dist.StudentT(4.0, C, sobs * jnp.sqrt(C + 1.0)), obs=y)

    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.environ.setdefault("JAX_ENABLE_X64", "1")

    import hamiltonia as hm
    from hamiltonia.diagnostics import ess, rhat

    target = hm.targets.get("sir-cp2")
    names = ["lambda0", "lambda1", "lambda2", "mu", "D", "I0", "t1", "t2",
             "transient1", "transient2", "sigma_obs"]  # fmt: skip
    rows = []

    # ---- hamiltonia: on one thread (as NumPyro's sequential chains), then its default (the
    # compiled path's chains on threads, one per core)
    for label, workers in (("hamiltonia (numba, adjoint), one thread", 1),
                           ("hamiltonia (numba, adjoint), default threads", None)):  # fmt: skip
        run = hm.sample(
            target, "nuts", chains=args.chains, warmup=args.warmup, draws=args.draws,
            seed=args.seed, progress=False, workers=workers,
        )  # fmt: skip
        post = run.posterior
        h = np.concatenate(
            [np.asarray(post["lambda"].values),
             *[np.asarray(post[v].values)[..., None] for v in ("mu", "D", "I0")],
             np.asarray(post["t"].values), np.asarray(post["transient"].values),
             np.asarray(post["sigma_obs"].values)[..., None]], axis=-1)  # fmt: skip
        st = run.to_datatree(log_likelihood=False)["sample_stats"]
        seconds = run.warmup_seconds + run.sampling_seconds
        rows.append((label, h, seconds, run.sampling_seconds,
                     int(st["diverging"].sum()), float(st["tree_depth"].mean())))  # fmt: skip

    # ---- NumPyro
    import jax
    from numpyro.infer import MCMC, NUTS, init_to_value

    jax.config.update("jax_enable_x64", True)
    med = {"lambda0": 0.4, "lambda1": 0.4, "lambda2": 0.4, "mu": 1 / 8, "D": 8.0, "I0": 20.0,
           "t1": target.t_means[0], "t2": target.t_means[1], "transient1": 3.0,
           "transient2": 3.0, "sigma_obs": 10.0}  # fmt: skip
    model = numpyro_model(np.asarray(target.cases.new), target.t_means, target.population,
                          target.lead_days)  # fmt: skip
    kernel = NUTS(model, target_accept_prob=0.8, init_strategy=init_to_value(values=med))
    mcmc = MCMC(kernel, num_warmup=args.warmup, num_samples=args.draws, num_chains=args.chains,
                chain_method="sequential", progress_bar=False)  # fmt: skip
    mcmc.run(jax.random.PRNGKey(args.seed + 1))  # compiles
    start = time.perf_counter()
    mcmc.warmup(jax.random.PRNGKey(args.seed), extra_fields=())
    mid = time.perf_counter()
    mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("diverging", "num_steps"))
    end = time.perf_counter()
    samples = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    x = np.stack([np.asarray(samples[v]) for v in names], axis=-1)
    depth = float(np.mean(np.log2(np.asarray(extra["num_steps"]) + 1)))
    rows.append(("NumPyro (JAX, lax.scan)", x, end - start, end - mid,
                 int(np.sum(extra["diverging"])), depth))  # fmt: skip

    print(f"sir-cp2, NUTS, {args.chains} chains x {args.warmup} warm-up + {args.draws} draws")
    print(
        "| implementation | wall s (warm-up + draws) | min bulk ESS | min ESS/s | "
        "min ESS/s (sampling only) | max R-hat | divergences | mean tree depth |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, draws, total, sampling, div, dep in rows:
        e = ess(draws, "bulk")
        r = rhat(draws)
        print(
            f"| {label} | {total:.2f} | {e.min():.0f} | {e.min() / total:.0f} | "
            f"{e.min() / sampling:.0f} | {r.max():.4f} | {div} | {dep:.2f} |"
        )
    print()
    print("| parameter | " + " | ".join(r[0] for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for i, name in enumerate(names):
        cells = [f"{r[1][..., i].mean():.4g} ± {r[1][..., i].std():.3g}" for r in rows]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
