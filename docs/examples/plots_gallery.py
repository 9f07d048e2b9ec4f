"""The plot gallery of docs/plots.rst: ``python docs/examples/plots_gallery.py``.

Funnel-d25 with NUTS (4 chains x 1000 draws after 1000 warm-up, seed 3), and banana with
NUTS, HMC and MALA for the ESS comparison.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

import hamiltonia as hm

STATIC = Path(__file__).resolve().parents[1] / "_static"


def main(folder=STATIC):
    funnel = hm.sample("funnel-d25", chains=4, seed=3, progress=False)
    figures = {
        "trace": hm.plots.plot_trace(funnel, ["v", "x1", "x2"]),
        "rank": hm.plots.plot_rank(funnel, ["v", "x1"]),
        "pair": hm.plots.plot_pair(funnel, ["v", "x1", "x2"]),
        "energy": hm.plots.plot_energy(funnel),
    }
    runs = {name: hm.sample("banana", name, chains=4, seed=3, progress=False)
            for name in ("nuts", "hmc", "mala")}  # fmt: skip
    figures["ess"] = hm.plots.plot_ess(runs, per="gradient")
    for name, fig in figures.items():
        path = Path(folder) / f"gallery_{name}.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
