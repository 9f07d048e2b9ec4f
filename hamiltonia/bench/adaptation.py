"""Pooled or per-chain metric adaptation, measured (``python -m hamiltonia.bench.adaptation``).

NUTS with a diagonal metric adapted on Stan's windows, 4 chains, 1000 warm-up iterations and
1000 draws, once with the metric pooled over the chains (``adapt_metric="pooled"``, one
metric from every chain's draws of a window) and once per chain (``"per-chain"``, each
chain's own from its own draws, as Stan and NumPyro adapt), on each target and each seed:

* ``gaussian-d100``: a 100-dimensional Gaussian with log-normal scales from 0.07 to 8.3 (the
  metric matters: with the identity NUTS needs trees hundreds of steps long);
* ``blr-german``: Bayesian logistic regression on German credit (25 coefficients, 1000 rows);
* ``eight-schools``: the non-centred eight schools, a hierarchical model
  (:mod:`hamiltonia.bench.models`, written as a user's :class:`hamiltonia.Model`).

Per run, the efficiency is the bulk ESS (rank-normalised, over the 4 chains) per gradient of
the sampling iterations, :math:`\\text{ESS}_\\text{bulk} / \\sum n_\\text{grad}`: its smallest
value over the parameters (the figure that decides how long a run must be) and its mean.
The table gives, over the seeds, their mean and standard deviation, and the ratio per-chain
/ pooled of the means. With NumPyro installed (the ``bench`` extra), NumPyro's NUTS on the
same density (its windowed adaptation is per chain) gives a reference row.

The comparison is the point, not the absolute figures: the two choices share the sampler,
the seeds, the initial points and every random number up to the first window's end.
"""

from __future__ import annotations

import argparse
import re
import time
import warnings

import numpy as np

__all__ = ["MODES", "TARGETS", "efficiency", "main", "measure", "numpyro_measure", "table"]

#: The targets measured, by name (``eight-schools`` is the bench's own model).
TARGETS = ("gaussian-d100", "blr-german", "eight-schools")
#: The two ways of adapting the metric (the recipes' ``adapt_metric``).
MODES = ("pooled", "per-chain")


def _target(name: str):
    import hamiltonia as hm

    if name == "eight-schools":
        from hamiltonia.bench.models import _schools_model

        return _schools_model("numba")
    return hm.targets.get(name)


def efficiency(draws: np.ndarray, n_grad: float) -> tuple[float, float]:
    """The smallest and the mean bulk ESS over the parameters of ``draws`` (chains, draws,
    parameters), each per gradient of the ``n_grad`` the draws cost."""
    from hamiltonia.diagnostics.univariate import ess

    bulk = np.asarray(ess(draws, "bulk"), dtype=float)
    return float(bulk.min() / n_grad), float(bulk.mean() / n_grad)


def measure(target: str, mode: str, seed: int, *, chains: int = 4, warmup: int = 1000,
            draws: int = 1000) -> dict:  # fmt: skip
    """One hamiltonia NUTS run of ``target`` with ``adapt_metric=mode``: the smallest and mean
    bulk ESS per sampling gradient, the gradients per draw, the divergences and the seconds."""
    import hamiltonia as hm

    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short run's diagnostics are not the question here
        result = hm.sample(_target(target), "nuts", chains=chains, warmup=warmup, draws=draws,
                           seed=seed, progress=False, adapt_metric=mode)  # fmt: skip
    n_grad = float(np.sum(result.stats["n_grad"]))
    low, mean = efficiency(result.draws, n_grad)
    return {"target": target, "mode": mode, "seed": seed, "min_ess_per_grad": low,
            "mean_ess_per_grad": mean, "grad_per_draw": n_grad / (chains * draws),
            "divergences": int(np.sum(result.stats["diverging"])),
            "seconds": time.perf_counter() - began}  # fmt: skip


def _schools_log_density():
    """The eight schools' log density on the unconstrained coordinates
    :math:`(\\mu, \\log\\tau, \\eta)` in JAX, as the hamiltonia model defines it (the
    log-Jacobian :math:`\\log\\tau` of :math:`\\tau = e^u` included)."""
    import jax.numpy as jnp

    from hamiltonia.bench.models import SIGMA, Y

    def logp(x):
        mu, u, eta = x[0], x[1], x[2:]
        tau = jnp.exp(u)
        prior = -0.5 * (mu / 5) ** 2 - jnp.log1p((tau / 5) ** 2) + u
        theta = mu + tau * eta
        return prior - 0.5 * jnp.sum(eta**2) - 0.5 * jnp.sum(((Y - theta) / SIGMA) ** 2)

    return logp, 10


def numpyro_measure(target: str, seed: int, *, chains: int = 4, warmup: int = 1000,
                    draws: int = 1000) -> dict:  # fmt: skip
    """NumPyro's NUTS (diagonal metric, windowed adaptation per chain, target acceptance
    0.8, chains vectorised) on the same density: as :func:`measure`."""
    from hamiltonia.bench.peers import initial_points, jax_log_density
    from hamiltonia.bench.peers._jax import setup_jax

    jax = setup_jax()
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    if target == "eight-schools":
        logp, dim = _schools_log_density()
    else:
        built = _target(target)
        logp, dim = jax_log_density(built), built.dim

    def potential(x):
        return -logp(x)

    kernel = NUTS(potential_fn=potential, target_accept_prob=0.8, max_tree_depth=10,
                  adapt_step_size=True, adapt_mass_matrix=True, dense_mass=False)  # fmt: skip
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains,
                chain_method="vectorized", progress_bar=False)  # fmt: skip
    began = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed), init_params=jnp.asarray(initial_points(seed, chains, dim)),
             extra_fields=("num_steps", "diverging"))  # fmt: skip
    samples = np.asarray(mcmc.get_samples(group_by_chain=True), dtype=float)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    n_grad = float(np.sum(np.asarray(extra["num_steps"])))
    low, mean = efficiency(samples.reshape(chains, draws, dim), n_grad)
    return {"target": target, "mode": "NumPyro", "seed": seed, "min_ess_per_grad": low,
            "mean_ess_per_grad": mean, "grad_per_draw": n_grad / (chains * draws),
            "divergences": int(np.sum(np.asarray(extra["diverging"]))),
            "seconds": time.perf_counter() - began}  # fmt: skip


def _paired_z(runs: list[dict], pooled: list[dict], field: str) -> str:
    """The per-seed difference of ``field`` from the pooled run of the same seed: its mean over
    seeds in units of its standard error (a z-score; empty under 3 common seeds)."""
    base = {r["seed"]: r[field] for r in pooled}
    diff = np.array([r[field] - base[r["seed"]] for r in runs if r["seed"] in base])
    if diff.size < 3 or not np.std(diff) > 0:
        return ""
    return f"{diff.mean() / (diff.std(ddof=1) / np.sqrt(diff.size)):+.1f}"


def _spread(values: np.ndarray) -> str:
    sd = values.std(ddof=1) if values.size > 1 else 0.0
    return f"{values.mean():.1f} ± {sd:.1f}"


def table(rows: list[dict]) -> list[list[str]]:
    """The runs ``rows`` (from :func:`measure` and :func:`numpyro_measure`) as table rows: per
    target and mode, the mean and standard deviation over seeds of the smallest and of the
    mean bulk ESS per gradient (in units of 10^-3); the ratio of each mean to the pooled one,
    and the z-score of the per-seed differences from the pooled run of the same seed (the
    two share their seed's initial points and random numbers up to the first window's end:
    paired, the comparison is sharper than the spreads suggest); the gradients per draw and
    the divergences of all seeds."""
    out = []
    targets = list(dict.fromkeys(r["target"] for r in rows))
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    for target in targets:
        pooled = [r for r in rows if r["target"] == target and r["mode"] == "pooled"]
        for mode in modes:
            runs = [r for r in rows if r["target"] == target and r["mode"] == mode]
            if not runs:
                continue
            low = np.array([r["min_ess_per_grad"] for r in runs]) * 1e3
            mean = np.array([r["mean_ess_per_grad"] for r in runs]) * 1e3
            ratio = z = ""
            if pooled and mode != "pooled":
                base_low = np.mean([r["min_ess_per_grad"] for r in pooled]) * 1e3
                base_mean = np.mean([r["mean_ess_per_grad"] for r in pooled]) * 1e3
                ratio = f"{low.mean() / base_low:.2f} / {mean.mean() / base_mean:.2f}"
                z = " / ".join(
                    _paired_z(runs, pooled, f) for f in ("min_ess_per_grad", "mean_ess_per_grad")
                )
            out.append([
                target, mode, str(len(runs)), _spread(low), _spread(mean), ratio, z,
                f"{np.mean([r['grad_per_draw'] for r in runs]):.1f}",
                str(sum(r["divergences"] for r in runs)),
            ])  # fmt: skip
    return out


HEADER = ["target", "adaptation", "seeds", "min ESS/grad (1e-3)", "mean ESS/grad (1e-3)",
          "ratio to pooled (min / mean)", "paired z (min / mean)", "grad/draw",
          "divergences"]  # fmt: skip


_LINE = re.compile(
    r"# (?P<target>\S+) (?P<mode>\S+) seed (?P<seed>\d+): min ESS/grad (?P<low>\S+), mean "
    r"(?P<mean>\S+), (?P<grad>\S+) grad/draw, (?P<div>\d+) divergences, (?P<s>\S+) s"
)


def _parse(line: str) -> dict | None:
    """A run as :func:`main` prints it (``# target mode seed ...``), or ``None``."""
    m = _LINE.match(line)
    if m is None:
        return None
    return {"target": m["target"], "mode": m["mode"], "seed": int(m["seed"]),
            "min_ess_per_grad": float(m["low"]), "mean_ess_per_grad": float(m["mean"]),
            "grad_per_draw": float(m["grad"]), "divergences": int(m["div"]),
            "seconds": float(m["s"])}  # fmt: skip


def _print(rows: list[list[str]]) -> None:
    if not rows:
        print("no runs to tabulate")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADER)]
    for line in (HEADER, ["-" * w for w in widths], *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)), flush=True)


def main(argv=None) -> int:
    """Run every target, mode and seed, print the table (and each run as it ends)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=TARGETS)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--numpyro", action=argparse.BooleanOptionalAction, default=True,
                        help="NumPyro's reference rows (when NumPyro is installed)")  # fmt: skip
    parser.add_argument("--from-log", metavar="FILE",
                        help="tabulate the runs an earlier call printed; run nothing")  # fmt: skip
    args = parser.parse_args(argv)
    if args.from_log:
        with open(args.from_log, encoding="utf-8") as log:
            _print(table([row for line in log if (row := _parse(line)) is not None]))
        return 0
    from hamiltonia.bench.peers import detect_peers

    with_numpyro = args.numpyro and detect_peers()["numpyro"]["available"]
    size = dict(chains=args.chains, warmup=args.warmup, draws=args.draws)
    rows = []
    for target in args.targets:
        for seed in range(args.seeds):
            runs = [measure(target, mode, seed, **size) for mode in MODES]
            if with_numpyro:
                runs.append(numpyro_measure(target, seed, **size))
            for r in runs:
                print(f"# {r['target']} {r['mode']} seed {r['seed']}: min ESS/grad "
                      f"{r['min_ess_per_grad']:.2e}, mean {r['mean_ess_per_grad']:.2e}, "
                      f"{r['grad_per_draw']:.1f} grad/draw, {r['divergences']} divergences, "
                      f"{r['seconds']:.1f} s", flush=True)  # fmt: skip
            rows.extend(runs)
    _print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
