"""A user's own models, side by side with NumPyro (``python -m hamiltonia.bench.models``).

The command prints two tables. First the cost of one gradient of five users' models
(logistic and linear regressions, eight schools, an AR(K) written with a loop, a GP through
``cholesky``) as written, beside a hand-written numba gradient and NumPyro's: the table of
:mod:`hamiltonia.bench.gradients` (issue 53; ``--no-gradients`` leaves it out, and
``python -m hamiltonia.bench.gradients`` prints it alone, with its own options). Then the
whole runs below (``--no-runs`` leaves them out; ``--rst`` writes their table).

Three models, written as a user would:

* **eight schools**, non-centred: :math:`\\mu \\sim N(0, 5)`, :math:`\\tau \\sim
  \\text{half-Cauchy}(0, 5)`, :math:`\\eta_j \\sim N(0, 1)`, :math:`y_j \\sim N(\\mu + \\tau
  \\eta_j, \\sigma_j)`;
* **a hierarchical logistic regression** on German credit (1000 rows, 24 standardised
  features), with a shared scale on the coefficients, non-centred: :math:`\\alpha \\sim
  N(0, 5)`, :math:`\\tau \\sim \\text{half-}N(0, 1)`, :math:`z_k \\sim N(0, 1)`,
  :math:`\\beta = \\tau z`, :math:`y_i \\sim \\text{Bernoulli}(\\operatorname{logit}^{-1}(\\alpha
  + x_i^\\top \\beta))`.
* **a simplex and an interval**: category shares :math:`w \\sim \\text{Dirichlet}(1, 1, 1,
  1)` with counts :math:`y \\sim \\text{Multinomial}(100, w)`, :math:`y = (12, 30, 8, 50)`,
  and a rate :math:`p \\sim U(0, 1)` with :math:`k = 37` successes in :math:`n = 60`
  Bernoulli trials.

For hamiltonia each is one ``logp`` over named, constrained blocks, written once with
``autograd.numpy`` for a batch of chains, and run as a :class:`hamiltonia.Model` with the
``autograd`` backend (NumPy path) and the ``numba`` backend (compiled path, gradient
generated from the same function); and written with ``jax.numpy`` for
:meth:`hamiltonia.Target.from_jax` (whose jitted function the compiled chain calls back
for each gradient: :attr:`hamiltonia.Target.compiled_callback`). For NumPyro, with
``numpyro.sample`` sites. Every row is NUTS with a diagonal metric, 4 chains, 1000 warm-up
iterations and 1000 draws.

Each implementation runs in a fresh process with an empty kernel folder and numba cache, so
that its first run includes every compilation (numba's chain kernel and model, or JAX's:
"cold"); the second run reuses the same model object (compilation excluded). A hamiltonia
implementation then runs again in a new process with the same folders: its first run there
("warm cache") is what a user sees once numba has cached the kernels on disk, in every later
session (the chain kernel serves every model; a model's own code is cached by its
structure). The compiled implementations also run first in new empty folders after
``hamiltonia compile`` has run there ("after hamiltonia compile"): a fresh machine set up
with that step after ``pip install``, the model's own code still to compile. JAX keeps
no compilation across processes by default, so NumPyro's first run is always cold. Per row:
the wall times (the model's construction included in a first run), the smallest bulk ESS
over the parameters, and the time to 1000 bulk ESS, :math:`t \\cdot 1000 / \\min
\\text{ESS}`. Needs the extras ``bench`` (NumPyro, JAX) for their rows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

__all__ = ["IMPLEMENTATIONS", "MODELS", "main", "run_implementation"]

Y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
SIGMA = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])
#: The simplex model's data: counts of four categories, and successes in trials.
COUNTS = np.array([12.0, 30.0, 8.0, 50.0])
SUCCESSES, TRIALS = 37.0, 60.0
MODELS = ("eight-schools", "hier-logistic", "simplex")
IMPLEMENTATIONS = ("numba", "autograd", "jax", "numpyro")
_LABELS = {
    "numba": "hamiltonia Model, numba backend (compiled)",
    "autograd": "hamiltonia Model, autograd backend (batched)",
    "jax": "hamiltonia Target.from_jax (compiled chain, JAX called back)",
    "numpyro": "NumPyro NUTS (sequential chains)",
}
_MARK = "@@models@@"


def _min_ess(draws: np.ndarray) -> float:
    from hamiltonia.diagnostics.univariate import ess

    return float(np.min(ess(draws, "bulk")))


def _credit():
    from hamiltonia import datasets

    data = datasets.load("german", test_fraction=0.0, standardize=True)
    return np.asarray(data.X_train, dtype=float), np.asarray(data.y_train, dtype=float)


# ----------------------------------------------------------------------- hamiltonia models
def _schools_model(backend: str):
    import autograd.numpy as anp

    import hamiltonia as hm

    def logp(p):  # for one point or a batch of chains (leading axes)
        theta = p["mu"][..., None] + p["tau"][..., None] * p["eta"]
        prior = -0.5 * (p["mu"] / 5) ** 2 - anp.log1p((p["tau"] / 5) ** 2)
        return (
            prior - 0.5 * anp.sum(p["eta"] ** 2, -1) - 0.5 * anp.sum(((Y - theta) / SIGMA) ** 2, -1)
        )

    return hm.Model(
        logp, {"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(8)}, backend=backend
    )


def _logistic_model(backend: str):
    import autograd.numpy as anp

    import hamiltonia as hm

    X, y = _credit()

    def logp(p):
        eta = p["alpha"][..., None] + (p["tau"][..., None] * p["z"]) @ X.T
        prior = -0.5 * (p["alpha"] / 5) ** 2 - 0.5 * p["tau"] ** 2 - 0.5 * anp.sum(p["z"] ** 2, -1)
        return prior + anp.sum(y * eta - anp.logaddexp(0.0, eta), -1)

    blocks = {"alpha": hm.real(), "tau": hm.positive(), "z": hm.real(X.shape[1])}
    return hm.Model(logp, blocks, backend=backend)


def _simplex_model(backend: str):
    import autograd.numpy as anp

    import hamiltonia as hm

    def logp(p):  # flat priors: the Dirichlet(1) and U(0, 1) densities are constant
        counts = anp.sum(COUNTS * anp.log(p["w"]), -1)
        return counts + SUCCESSES * anp.log(p["p"]) + (TRIALS - SUCCESSES) * anp.log1p(-p["p"])

    return hm.Model(logp, {"w": hm.simplex(4), "p": hm.interval(0, 1)}, backend=backend)


_HAMILTONIA_MODELS = {
    "eight-schools": _schools_model,
    "hier-logistic": _logistic_model,
    "simplex": _simplex_model,
}


def _jax_model(model: str):
    import jax.numpy as jnp

    import hamiltonia as hm

    if model == "eight-schools":

        def logp(p):
            theta = p["mu"] + p["tau"] * p["eta"]
            prior = -0.5 * (p["mu"] / 5) ** 2 - jnp.log1p((p["tau"] / 5) ** 2)
            return prior - 0.5 * jnp.sum(p["eta"] ** 2) - 0.5 * jnp.sum(((Y - theta) / SIGMA) ** 2)

        return hm.Target.from_jax(
            logp, params={"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(8)}
        )
    if model == "simplex":

        def logp(p):
            counts = jnp.sum(COUNTS * jnp.log(p["w"]))
            return counts + SUCCESSES * jnp.log(p["p"]) + (TRIALS - SUCCESSES) * jnp.log1p(-p["p"])

        return hm.Target.from_jax(logp, params={"w": hm.simplex(4), "p": hm.interval(0, 1)})
    X, y = _credit()

    def logp(p):
        eta = p["alpha"] + X @ (p["tau"] * p["z"])
        prior = -0.5 * (p["alpha"] / 5) ** 2 - 0.5 * p["tau"] ** 2 - 0.5 * jnp.sum(p["z"] ** 2)
        return prior + jnp.sum(y * eta - jnp.logaddexp(0.0, eta))

    blocks = {"alpha": hm.real(), "tau": hm.positive(), "z": hm.real(X.shape[1])}
    return hm.Target.from_jax(logp, params=blocks)


def _hamiltonia_runs(model: str, implementation: str, seed: int) -> list[tuple[float, float]]:
    import hamiltonia as hm

    def run(target):
        began = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # Each implementation's default path: the numba model and JAX's jitted function
            # (called back from the compiled chain) compiled, autograd on the NumPy path.
            result = hm.sample(target, chains=4, warmup=1000, draws=1000, seed=seed,
                               progress=False)  # fmt: skip
        return time.perf_counter() - began, _min_ess(result.draws)

    began = time.perf_counter()
    if implementation == "jax":
        target = _jax_model(model)
    else:
        target = _HAMILTONIA_MODELS[model](implementation)
    built = time.perf_counter() - began
    first_s, first_ess = run(target)
    return [(built + first_s, first_ess), run(target)]


# ----------------------------------------------------------------------- NumPyro
def _numpyro_runs(model: str, seed: int) -> list[tuple[float, float]]:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    jax.config.update("jax_enable_x64", True)
    if model == "eight-schools":
        names, data = ("mu", "tau", "eta"), ()

        def program():
            mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
            tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
            with numpyro.plate("school", 8):
                eta = numpyro.sample("eta", dist.Normal(0.0, 1.0))
                numpyro.sample("y", dist.Normal(mu + tau * eta, SIGMA), obs=Y)

    elif model == "simplex":
        names, data = ("w", "p"), ()

        def program():
            w = numpyro.sample("w", dist.Dirichlet(jnp.ones(4)))
            numpyro.sample("y", dist.Multinomial(total_count=100, probs=w), obs=COUNTS)
            p = numpyro.sample("p", dist.Uniform(0.0, 1.0))
            numpyro.sample("k", dist.Binomial(TRIALS, probs=p), obs=SUCCESSES)

    else:
        names = ("alpha", "tau", "z")
        X, y = _credit()
        data = (jnp.asarray(X), jnp.asarray(y))

        def program(X, y):
            alpha = numpyro.sample("alpha", dist.Normal(0.0, 5.0))
            tau = numpyro.sample("tau", dist.HalfNormal(1.0))
            z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
            numpyro.sample("y", dist.Bernoulli(logits=alpha + X @ (tau * z)), obs=y)

    mcmc = MCMC(NUTS(program), num_warmup=1000, num_samples=1000, num_chains=4,
                chain_method="sequential", progress_bar=False)  # fmt: skip
    out = []
    for key in (seed, seed + 1):
        began = time.perf_counter()
        mcmc.run(jax.random.PRNGKey(key), *data)
        samples = mcmc.get_samples(group_by_chain=True)
        elapsed = time.perf_counter() - began
        draws = np.concatenate(
            [np.asarray(samples[k], dtype=float).reshape(4, 1000, -1) for k in names], axis=-1
        )
        out.append((elapsed, _min_ess(draws)))
    return out


def run_implementation(model: str, implementation: str, seed: int = 0) -> dict:
    """Both runs of one implementation on one model, in this process (module docs)."""
    if implementation == "numpyro":
        runs = _numpyro_runs(model, seed)
    else:
        runs = _hamiltonia_runs(model, implementation, seed)
    (first, ess_first), (second, ess_second) = runs
    return {
        "model": model,
        "implementation": _LABELS[implementation],
        "first_s": first,
        "second_s": second,
        "ess": ess_second,
        "ess_first": ess_first,
        "to_1000_first_s": first * 1000 / ess_first,
        "to_1000_second_s": second * 1000 / ess_second,
    }


def _last_line(done: subprocess.CompletedProcess) -> str:
    """What a failed subprocess said last."""
    return ((done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"])[0]


def _fresh_env(folder: str) -> dict:
    # Empty numba caches, the package's own (under HAMILTONIA_CACHE) included, as on a fresh
    # machine; the data sets come from HAMILTONIA_DATA where it is set.
    return {**os.environ, "HAMILTONIA_KERNEL_DIR": folder,
            "HAMILTONIA_CACHE": os.path.join(folder, "cache")}  # fmt: skip


def _in_fresh_process(model: str, implementation: str, seed: int) -> dict:
    """The record of a fresh process with an empty kernel folder; for hamiltonia, with the
    first run of a second process on the same folder as ``first_warm_s``, and for its
    compiled implementations the first run in a fresh folder after ``hamiltonia compile``
    as ``first_compiled_s``."""
    command = [sys.executable, "-m", "hamiltonia.bench.models", "--one", model,
               implementation, "--seed", str(seed)]  # fmt: skip
    records = []

    def first_run(env) -> str | None:
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith(_MARK)]
        if not lines:
            return _last_line(done)
        records.append(json.loads(lines[0][len(_MARK) :]))
        return None

    with tempfile.TemporaryDirectory(prefix="hamiltonia-kernels-") as folder:
        for _ in range(1 if implementation == "numpyro" else 2):
            error = first_run(_fresh_env(folder))
            if error:
                return {"model": model, "implementation": _LABELS[implementation],
                        "error": error}  # fmt: skip
    record = records[0]
    record["first_warm_s"] = records[1]["first_s"] if len(records) > 1 else None
    record["first_compiled_s"] = None
    if implementation in ("numba", "jax"):
        with tempfile.TemporaryDirectory(prefix="hamiltonia-kernels-") as folder:
            env = _fresh_env(folder)
            done = subprocess.run([sys.executable, "-m", "hamiltonia.cli", "compile"],
                                  env=env, capture_output=True, text=True)  # fmt: skip
            error = f"hamiltonia compile: {_last_line(done)}" if done.returncode else first_run(env)
            if error:
                return {"model": model, "implementation": _LABELS[implementation],
                        "error": error}  # fmt: skip
            record["first_compiled_s"] = records[-1]["first_s"]
    return record


def _write_rst(path: str, header: list[str], rows: list[list[str]]) -> None:
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {row[0]}")
        lines.extend(f"     - {cell}" for cell in row[1:])
    from hamiltonia.results.runfile import atomic_write_bytes

    # A temporary made exclusively (never a file or link someone left at path.tmp).
    atomic_write_bytes(path, ("\n".join(lines) + "\n").encode())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hamiltonia.bench.models")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--implementations", nargs="+", choices=IMPLEMENTATIONS,
                        default=list(IMPLEMENTATIONS))  # fmt: skip
    parser.add_argument("--rst", help="also write the runs' table to this file (reStructuredText)")
    parser.add_argument(
        "--gradients",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="first print the cost of one gradient (hamiltonia.bench.gradients)",
    )
    parser.add_argument("--runs", action=argparse.BooleanOptionalAction, default=True,
                        help="the NUTS runs against NumPyro, first run included")  # fmt: skip
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "IMPLEMENTATION"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args(argv)
    if args.rst and not args.runs:
        parser.error("--rst writes the runs' table: not with --no-runs")
    if args.rst:
        from hamiltonia.results.runfile import RunFileError, checked_file_path

        try:  # before the runs: never a folder, a device or a pipe
            checked_file_path(args.rst, "--rst")
        except RunFileError as err:
            parser.error(str(err))
    if args.one:
        print(_MARK + json.dumps(run_implementation(*args.one, args.seed)), flush=True)
        return 0
    if args.gradients:
        from hamiltonia.bench import gradients

        print("Nanoseconds per gradient (python -m hamiltonia.bench.gradients):\n", flush=True)
        gradients.main([])
        if args.runs:
            print("\nWhole runs: NUTS, 4 chains x (1000 + 1000):\n", flush=True)
    if not args.runs:
        return 0
    header = ["model", "implementation", "first run s, cold",
              "first run s, after hamiltonia compile", "first run s, warm cache",
              "second run s", "min bulk ESS", "s to 1000 ESS, cold",
              "s to 1000 ESS, warm cache", "s to 1000 ESS, second run"]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    table = []
    for model in args.models:
        for implementation in args.implementations:
            r = _in_fresh_process(model, implementation, args.seed)
            if "error" in r:
                print(f"| {model} | {r['implementation']} | failed: {r['error']} |", flush=True)
                continue
            warm, per_ess = r["first_warm_s"], 1000 / r["ess_first"]
            cells = [r["first_s"], r["first_compiled_s"], warm, r["second_s"], r["ess"],
                     r["first_s"] * per_ess, None if warm is None else warm * per_ess,
                     r["to_1000_second_s"]]  # fmt: skip
            row = [model, r["implementation"]] + [
                "–" if v is None else f"{v:.0f}" if k == 4 else f"{v:.2f}"
                for k, v in enumerate(cells)
            ]
            table.append(row)
            print("| " + " | ".join(row) + " |", flush=True)
    if args.rst:
        _write_rst(args.rst, header, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
