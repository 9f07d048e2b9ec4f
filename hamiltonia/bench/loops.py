"""A loop over the data, compiled as a loop, cold (``python -m hamiltonia.bench loops``).

An ARMA(1,1) likelihood written as a user writes it, with a Python loop over :math:`T`
observations simulated from known parameters (:func:`arma11_model`),

.. math::

    \\epsilon_0 = y_0 - \\mu, \\qquad
    \\epsilon_t = y_t - \\mu - \\phi\\,(y_{t-1} - \\mu) - \\theta\\,\\epsilon_{t-1}, \\qquad
    \\epsilon_t \\sim N(0, \\sigma^2),

with :math:`\\mu \\sim N(0, 10)`, :math:`\\phi, \\theta \\sim U(-1, 1)` (``hm.interval``) and
:math:`\\sigma \\sim \\text{half-Cauchy}(0, 5)`. For each :math:`T`, a fresh process with an
empty kernel folder and numba cache (as on a fresh machine) builds the model with the
default backend (:class:`hamiltonia.Model`: recorded, its loop found again and compiled as a
loop, :mod:`hamiltonia.modelling.loop_rolling`) and runs default NUTS (4 chains, 1,000 +
1,000), the chain kernel's own first compile included. Printed per :math:`T`: the backend,
the build's seconds, the sampling call's, the whole process's, and the largest
:math:`|z|` of the simulating parameters in the posterior,
:math:`z = (\\bar x - x_{\\text{true}}) / \\text{sd}`.

Issue 50 asks a cold build and sampling at :math:`T = 200` under 30 s, and a build at
:math:`T = 1{,}000` under 60 s, on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

import numpy as np

__all__ = ["TRUE", "arma11_logp", "arma11_model", "main", "simulate_arma11"]

#: The simulating parameters.
TRUE = {"mu": 0.5, "phi": 0.6, "theta": 0.3, "sigma": 0.8}
_MARK = "hamiltonia-bench-loops: "


def simulate_arma11(T: int, seed: int = 0) -> np.ndarray:
    """``T`` observations of ARMA(1,1) with the parameters :data:`TRUE`, started at
    :math:`y_{-1} = \\mu`, :math:`\\epsilon_{-1} = 0` (the likelihood's conditioning)."""
    mu, phi, theta, sigma = (TRUE[k] for k in ("mu", "phi", "theta", "sigma"))
    e = np.random.default_rng(seed).normal(0.0, sigma, T)
    y = np.empty(T)
    prev_y, prev_e = mu, 0.0
    for t in range(T):
        y[t] = mu + phi * (prev_y - mu) + theta * prev_e + e[t]
        prev_y, prev_e = y[t], e[t]
    return y


def arma11_logp(y: np.ndarray):
    """The log density of ARMA(1,1) over ``y``, with a Python loop over time."""
    import autograd.numpy as anp

    def logp(p):
        mu, phi, theta, sigma = p["mu"], p["phi"], p["theta"], p["sigma"]
        err = y[0] - mu
        lp = -0.5 * (err / sigma) ** 2
        for t in range(1, len(y)):
            err = y[t] - (mu + phi * (y[t - 1] - mu) + theta * err)
            lp = lp - 0.5 * (err / sigma) ** 2
        prior = -0.5 * (mu / 10) ** 2 - anp.log1p((sigma / 5) ** 2)
        return lp - len(y) * anp.log(sigma) + prior

    return logp


def arma11_model(T: int, seed: int = 0, **options):
    """The :class:`hamiltonia.Model` of ARMA(1,1) over ``T`` simulated observations."""
    import hamiltonia as hm

    params = {"mu": hm.real(), "phi": hm.interval(-1, 1), "theta": hm.interval(-1, 1),
              "sigma": hm.positive()}  # fmt: skip
    return hm.Model(arma11_logp(simulate_arma11(T, seed)), params, **options)


def _one(T: int, sample: bool, seed: int) -> dict:
    """Build (and sample) in this process: the record the parent prints."""
    import hamiltonia as hm

    began = time.perf_counter()
    model = arma11_model(T, seed)
    built = time.perf_counter()
    record = {"T": T, "backend": model.backend, "build_s": built - began}
    if sample:
        result = hm.sample(model, seed=seed, progress=False)
        record["sample_s"] = time.perf_counter() - built
        summary = result.summary()
        z = [(summary.loc[k, "mean"] - v) / summary.loc[k, "sd"] for k, v in TRUE.items()]
        record["max_abs_z"] = float(np.max(np.abs(z)))
    return record


def run(T: int, sample: bool, seed: int) -> dict:
    """One cold process (empty kernel folder and numba cache): its record and wall time."""
    from hamiltonia.bench.models import _fresh_env

    command = [sys.executable, "-m", "hamiltonia.bench.loops", "--one", str(T), "--seed",
               str(seed)] + ([] if sample else ["--no-sample"])  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="hamiltonia-kernels-") as folder:
        began = time.perf_counter()
        done = subprocess.run(command, env=_fresh_env(folder), capture_output=True, text=True)
        wall = time.perf_counter() - began
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(_MARK)]
    if not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"T": T, "error": tail[0]}
    return {**json.loads(lines[0][len(_MARK) :]), "process_s": wall}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="hamiltonia bench loops", description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--sample-up-to", type=int, default=1000,
                        help="sample only for T up to this (default 1000)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=50)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-sample", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(_MARK + json.dumps(_one(args.one, not args.no_sample, args.seed)), flush=True)
        return 0
    print("| T | backend | build (s) | sampling (s) | whole process (s) | max abs z |")
    print("|---|---|---|---|---|---|")
    for T in args.sizes:
        r = run(T, T <= args.sample_up_to, args.seed)
        if "error" in r:
            print(f"| {T} | error: {r['error']} | | | | |")
            continue
        sampled = "sample_s" in r
        print(f"| {T} | {r['backend']} | {r['build_s']:.1f} | "
              f"{r['sample_s']:.1f} | {r['process_s']:.1f} | {r['max_abs_z']:.2f} |"
              if sampled else
              f"| {T} | {r['backend']} | {r['build_s']:.1f} | not run | "
              f"{r['process_s']:.1f} | |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
