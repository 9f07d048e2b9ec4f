"""ChEES-HMC against BlackJAX's ``chees_adaptation``, side by side in one run.

``python -m hamiltonia.bench.chees [--targets gaussian-d100 blr-german] [--chains 128]
[--warmup 1000] [--draws 1000] [--seeds 0 1 2]`` runs, for each target and seed, the
``chees`` recipe of hamiltonia (:class:`~hamiltonia.tuners.chees.ChEES` with a
:class:`~hamiltonia.trajectories.jittered_length.JitteredLength` trajectory, compiled) and
BlackJAX's ``chees_adaptation`` followed by its dynamic HMC with the adapted step size and
trajectory, from the same initial points, with the same Adam (learning rate 0.025,
:math:`\\beta_1 = 0`, :math:`\\beta_2 = 0.95`) and the same warm-up and draws, and prints a
table: the adapted step size and duration, gradients per draw, the minimum bulk ESS over
the coordinates (the same estimator for both, :func:`hamiltonia.diagnostics.ess`) and ESS
per gradient, with hamiltonia's ratio to BlackJAX's. It needs the ``bench`` extra (JAX,
BlackJAX, optax); times are not compared here (a benchmark of speed is ``python -m
hamiltonia.bench``).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

__all__ = ["main", "run_blackjax", "run_hamiltonia"]

#: BlackJAX's initial step size (its ``run`` asks for one), and hamiltonia's where it runs
#: BlackJAX's iterate.
BLACKJAX_STEP = 1.0
#: Adam of the ChEES paper (and of BlackJAX's tests), given to both.
ADAM = {"learning_rate": 0.025, "b1": 0.0, "b2": 0.95}


def _min_ess(draws: np.ndarray) -> float:
    from hamiltonia import diagnostics

    return float(np.min(diagnostics.ess(draws, "bulk")))


def run_hamiltonia(target, chains: int, warmup: int, draws: int, seed: int, **chees) -> dict:
    """One run of the ``chees`` recipe, its :class:`~hamiltonia.tuners.chees.ChEES` given the
    options ``chees`` where there are any; the fields of a table row."""
    import hamiltonia as hm
    from hamiltonia.tuners.chees import ChEES

    options = {"tuners": ChEES(**chees)} if chees else {}
    sampler = hm.samplers.get("chees")(target, **options)
    # hamiltonia's own initial points for the seed, which BlackJAX is given too.
    result = hm.sample(
        target, sampler, chains=chains, warmup=warmup, draws=draws, seed=seed, progress=False,
        compiled=True,
    )  # fmt: skip
    n_grad = float(np.sum(result.n_grad))
    posterior = np.asarray(result.draws)
    return {
        "step_size": float(np.mean(np.asarray(result.stats["step_size"]))),
        "duration": float(sampler.trajectory.duration),
        "grads_per_draw": n_grad / (chains * draws),
        "ess": _min_ess(posterior),
        "ess_per_grad": _min_ess(posterior) / n_grad,
        "accept": float(np.mean(result.acceptance_rate)),
    }


def run_blackjax(target, chains: int, warmup: int, draws: int, seed: int,
                 step_size: float = 1.0) -> dict:  # fmt: skip
    """One run of BlackJAX's ``chees_adaptation`` then its dynamic HMC; a table row's
    fields."""
    from hamiltonia.bench.peers import initial_points, jax_log_density
    from hamiltonia.bench.peers._jax import setup_jax

    jax = setup_jax()
    import blackjax
    import jax.numpy as jnp
    import optax

    logp = jax_log_density(target)
    init = jnp.asarray(initial_points(seed, chains, target.dim))
    key_warm, key_run = jax.random.split(jax.random.PRNGKey(seed))
    warmup_algo = blackjax.chees_adaptation(logp, chains)
    optim = optax.adam(ADAM["learning_rate"], b1=ADAM["b1"], b2=ADAM["b2"])
    (states, parameters), _ = warmup_algo.run(key_warm, init, step_size, optim, warmup)
    kernel = blackjax.dynamic_hmc(logp, **parameters).step

    def body(carry, key):
        carry, info = jax.vmap(kernel)(jax.random.split(key, chains), carry)
        return carry, (carry.position, info.num_integration_steps, info.acceptance_rate)

    run = jax.jit(lambda s, k: jax.lax.scan(body, s, jax.random.split(k, draws)))
    _, (positions, steps, accept) = run(states, key_run)
    posterior = np.swapaxes(np.asarray(positions, dtype=float), 0, 1)
    n_grad = float(np.sum(np.asarray(steps)))
    eps = float(parameters["step_size"])
    n_leapfrog = float(np.asarray(parameters["integration_steps_params"][0]))
    return {
        "step_size": eps,
        "duration": n_leapfrog * eps,
        "grads_per_draw": n_grad / (chains * draws),
        "ess": _min_ess(posterior),
        "ess_per_grad": _min_ess(posterior) / n_grad,
        "accept": float(np.mean(np.asarray(accept))),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hamiltonia.bench.chees", description=__doc__)
    parser.add_argument("--targets", nargs="+", default=["gaussian-d100", "blr-german"])
    parser.add_argument("--chains", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args(argv)
    import hamiltonia as hm

    header = ("| target | seed | library | step size | duration | grads/draw | min bulk ESS "
              "| ESS/grad | hamiltonia / BlackJAX |")  # fmt: skip
    print(header)
    print("|---" * 9 + "|")
    ratios: dict[str, list[float]] = {}
    for name in args.targets:
        target = hm.targets.get(name)
        for seed in args.seeds:
            run = (target, args.chains, args.warmup, args.draws, seed)
            rows = {
                "hamiltonia": run_hamiltonia(*run),
                "hamiltonia, BlackJAX's iterate": run_hamiltonia(
                    *run, iterate="averaged", initial_step_size=BLACKJAX_STEP
                ),
                "BlackJAX": run_blackjax(*run, step_size=BLACKJAX_STEP),
            }
            for library, row in rows.items():
                ratio = row["ess_per_grad"] / rows["BlackJAX"]["ess_per_grad"]
                ratios.setdefault((name, library), []).append(ratio)
                shown = f"{ratio:.2f}" if library != "BlackJAX" else ""
                print(
                    f"| {name} | {seed} | {library} | {row['step_size']:.4g} | "
                    f"{row['duration']:.4g} | {row['grads_per_draw']:.1f} | {row['ess']:.0f} | "
                    f"{row['ess_per_grad']:.3e} | {shown} |",
                    flush=True,
                )
    for (name, library), values in ratios.items():
        if library == "BlackJAX":
            continue
        geo = float(np.exp(np.mean(np.log(values))))
        each = ", ".join(f"{v:.2f}" for v in values)
        print(
            f"{name}: ESS per gradient, {library} / BlackJAX, geometric mean over "
            f"{len(values)} seeds: {geo:.2f} (each: {each})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
