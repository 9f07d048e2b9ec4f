"""Gradient cost of sampling the shared hyperparameters by NUTS against the L-BFGS fit, on the
1-D study (300 points, random partition), for each number of points per expert.

For NUTS: the gradient evaluations of the sampling phase scaled to an ESS of 400 (the smallest
bulk ESS over the three parameters), alone and with the warm-up's gradients added (warm-up is
paid once, whatever the ESS). For L-BFGS: scipy's L-BFGS-B (maxiter 200) on the summed negative
log marginal likelihood, one gradient per objective evaluation. The goal of issue 32 is a ratio
of at most 3.

Run: ``python bench/bench_gradients.py [--chains 4] [--warmup 500] [--draws 1000]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from hamiltonia_gp_experts.aggregation import fit_lbfgs
from hamiltonia_gp_experts.targets import GPExperts, make_partition, synthetic_1d

import hamiltonia as hm


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--ppe", type=int, nargs="*", default=[3, 5, 10, 20])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    X, y, _ = synthetic_1d(300, seed=0)
    header = (
        f"{'pts/expert':>10} {'experts':>7} {'L-BFGS grads':>12} {'min ESS':>8} "
        f"{'NUTS grads/ESS400':>17} {'+warm-up':>9} {'ratio':>6} {'ratio+wu':>8} "
        f"{'NUTS s':>7} {'compiled':>8}"
    )
    print(header)
    print("-" * len(header))
    for ppe in args.ppe:
        target = GPExperts(X, y, make_partition(X, points_per_expert=ppe, seed=ppe))
        fit = fit_lbfgs(target)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = hm.sample(
                target, "nuts", chains=args.chains, warmup=args.warmup, draws=args.draws,
                seed=args.seed + ppe, progress=False, save_warmup=True,
            )  # fmt: skip
        seconds = time.perf_counter() - t0
        ess = float(run.summary()["ess_bulk"].min())
        per400 = run.n_grad * 400.0 / ess
        warm = float(np.sum(run.warmup_stats["n_grad"])) if run.warmup_stats else float("nan")
        print(
            f"{ppe:>10} {target.n_experts:>7} {fit.n_grad:>12} {ess:>8.0f} {per400:>17.0f} "
            f"{per400 + warm:>9.0f} {per400 / fit.n_grad:>6.1f} "
            f"{(per400 + warm) / fit.n_grad:>8.1f} {seconds:>7.1f} "
            f"{run.attrs['compiled']!s:>8}"
        )


if __name__ == "__main__":
    main()
