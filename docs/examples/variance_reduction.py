"""The variance reduction of antithetic pairs and control variates on blr-heart.

Run ``python docs/examples/variance_reduction.py`` (needs the ``plot`` extra) to print the
table of docs/variance_reduction.rst and redraw docs/_static/variance_reduction.png.
"""

from pathlib import Path

import numpy as np

import hamiltonia as hm

PICTURE = Path(__file__).resolve().parents[1] / "_static" / "variance_reduction.png"


def main(out=PICTURE):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # control_variates=1 keeps the gradients the sampler computed at the draws.
    run = hm.sample("blr-heart", "a-mhmc", chains=4, warmup=1000, draws=1000, seed=2024,
                    progress=False, control_variates=1)  # fmt: skip
    pairs = run.pair_summary()
    both = run.control_variate_summary(order=1)
    # Control variates alone: on the primary chains, as a run without pairs.
    primaries = hm.Result(draws=run.draws[0::2], stats={}, names=run.names,
                          gradients=run.gradients[0::2])  # fmt: skip
    alone = primaries.control_variate_summary(order=1)
    plain_var = pairs["plain_mcse"] ** 2
    factors = {
        "antithetic pairs": plain_var / pairs["mcse"] ** 2,
        "control variates": plain_var / alone["mcse"] ** 2,
        "both": plain_var / both["mcse"] ** 2,
    }
    print("| parameter | antithetic | control variates | both |")
    print("|---|---|---|---|")
    for name in run.names:
        print(f"| {name} | " + " | ".join(f"{f[name]:,.1f}" for f in factors.values()) + " |")
    print(f"eta (max) {pairs['eta'].max():.3f}; medians: "
          + ", ".join(f"{k} {np.median(v):,.1f}" for k, v in factors.items()))  # fmt: skip
    fig, ax = plt.subplots(figsize=(9, 4))
    x = np.arange(len(run.names))
    for k, (label, f) in enumerate(factors.items()):
        ax.bar(x + (k - 1) * 0.27, f.to_numpy(), width=0.27, label=label)
    ax.set_yscale("log")
    ax.set_xticks(x, run.names, rotation=60, ha="right")
    ax.set_ylabel("variance of the plain estimate / reduced")
    ax.set_title("a-mhmc on blr-heart, 2 pairs x 1000 draws: variance reduction of the means")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.legend(loc="lower left", ncols=3, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
