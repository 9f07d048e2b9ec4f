"""A user's own model, side by side with NumPyro (``python -m hamiltonia.bench.models``).

Eight schools, non-centred (:math:`\\mu \\sim N(0, 5)`, :math:`\\tau \\sim
\\text{half-Cauchy}(0, 5)`, :math:`\\eta_j \\sim N(0, 1)`, :math:`y_j \\sim N(\\mu + \\tau
\\eta_j, \\sigma_j)`), written as a user would: for hamiltonia with named, constrained blocks
(:class:`hamiltonia.Model` with autograd, written for a batch, and
:meth:`hamiltonia.Target.from_jax`), for NumPyro with ``numpyro.sample`` sites. Every row is
NUTS with a diagonal metric, 4 chains, 1000 warm-up iterations and 1000 draws.

Per row: the wall time of a first run in a fresh model (JAX compilation included), of a
second run of the same model (compiled code reused where the library reuses it), the
smallest bulk ESS over the parameters, and the time to 1000 bulk ESS,
:math:`t \\cdot 1000 / \\min \\text{ESS}`, for both runs. Needs the extras ``bench``
(NumPyro, JAX).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

__all__ = ["eight_schools_rows", "main"]

Y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
SIGMA = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])


def _min_ess(draws: np.ndarray) -> float:
    from hamiltonia.diagnostics import ess

    return float(np.min(ess(draws, "bulk")))


def _hamiltonia_autograd():
    import autograd.numpy as anp

    import hamiltonia as hm

    def logp(p):
        theta = p["mu"][..., None] + p["tau"][..., None] * p["eta"]
        prior = -0.5 * (p["mu"] / 5) ** 2 - anp.log1p((p["tau"] / 5) ** 2)
        return (
            prior - 0.5 * anp.sum(p["eta"] ** 2, -1) - 0.5 * anp.sum(((Y - theta) / SIGMA) ** 2, -1)
        )

    return hm.Model(logp, {"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(8)})


def _hamiltonia_jax():
    import jax.numpy as jnp

    import hamiltonia as hm

    def logp(p):
        theta = p["mu"] + p["tau"] * p["eta"]
        prior = -0.5 * (p["mu"] / 5) ** 2 - jnp.log1p((p["tau"] / 5) ** 2)
        return prior - 0.5 * jnp.sum(p["eta"] ** 2) - 0.5 * jnp.sum(((Y - theta) / SIGMA) ** 2)

    return hm.Target.from_jax(
        logp, params={"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(8)}
    )


def _hamiltonia_run(make, seed: int) -> tuple[float, float]:
    import hamiltonia as hm

    began = time.perf_counter()
    model = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = hm.sample(model, chains=4, warmup=1000, draws=1000, seed=seed, progress=False,
                           compiled=False)  # fmt: skip
    return time.perf_counter() - began, _min_ess(result.draws)


def _numpyro_run(seed: int) -> tuple[float, float]:
    import jax
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    jax.config.update("jax_enable_x64", True)

    def model():
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        with numpyro.plate("school", 8):
            eta = numpyro.sample("eta", dist.Normal(0.0, 1.0))
            numpyro.sample("y", dist.Normal(mu + tau * eta, SIGMA), obs=Y)

    began = time.perf_counter()
    mcmc = MCMC(NUTS(model), num_warmup=1000, num_samples=1000, num_chains=4,
                chain_method="sequential", progress_bar=False)  # fmt: skip
    mcmc.run(jax.random.PRNGKey(seed))
    samples = mcmc.get_samples(group_by_chain=True)
    draws = np.concatenate(
        [np.asarray(samples[k], dtype=float).reshape(4, 1000, -1) for k in ("mu", "tau", "eta")],
        axis=-1,
    )
    return time.perf_counter() - began, _min_ess(draws)


def eight_schools_rows(seed: int = 0) -> list[dict]:
    """The rows of the table: two runs per implementation (module docs)."""
    runs = {
        "hamiltonia Model (autograd, batched)": lambda: _hamiltonia_run(_hamiltonia_autograd, seed),
        "hamiltonia Target.from_jax": lambda: _hamiltonia_run(_hamiltonia_jax, seed),
        "NumPyro NUTS (sequential chains)": lambda: _numpyro_run(seed),
    }
    rows = []
    for name, run in runs.items():
        first, ess_first = run()
        second, ess_second = run()
        rows.append({"implementation": name, "first_s": first, "second_s": second,
                     "ess": ess_first, "to_1000_first_s": first * 1000 / ess_first,
                     "to_1000_second_s": second * 1000 / ess_second})  # fmt: skip
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hamiltonia.bench.models")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = eight_schools_rows(args.seed)
    print("| eight schools, NUTS, 4 x (1000 + 1000) | first run s | second run s | min bulk ESS "
          "| s to 1000 ESS (first) | s to 1000 ESS (second) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in rows:
        times = f"{r['first_s']:.2f} | {r['second_s']:.2f}"
        to_1000 = f"{r['to_1000_first_s']:.2f} | {r['to_1000_second_s']:.2f}"
        print(f"| {r['implementation']} | {times} | {r['ess']:.0f} | {to_1000} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
