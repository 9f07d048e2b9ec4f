"""Figures of a reproduction: published beside reproduced (ESS, acceptance) and the traces.

Needs matplotlib (the ``plot`` extra). :func:`bars` and :func:`traces` return a figure;
:func:`write_figures` writes them atomically into the reproduction's folder, where they are
redrawn from the cells each time the reproduction runs.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bars", "traces", "write_figures"]


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - the plot extra is missing
        raise ImportError("figures need matplotlib: pip install 'hamiltonia[plot]'") from err
    return plt


def _panels(plt, n: int):
    """A figure with one panel per target, four to a row."""
    cols = min(n, 4)
    rows = -(-n // cols)
    return plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), squeeze=False)


def bars(reproduction, metric: str):
    """One panel per target: for each sampler, the reproduced figure (mean ± sd over chains)
    beside the published one."""
    plt = _pyplot()
    from hamiltonia.reproduce.metrics import LABELS

    experiment = reproduction.experiment
    n = len(experiment.targets)
    fig, axes = _panels(plt, n)
    for ax, target in zip(axes.flat, experiment.targets, strict=False):
        samplers = [s.label for s in experiment.samplers if s.runs_on(target.label)]
        x = np.arange(len(samplers))
        published = experiment.published.get(target.label, {}).get(metric, {})
        values, errors = [], []
        for s in samplers:
            cell = reproduction.cells.get((target.label, s))
            figure = None if cell is None else cell.metrics.get(metric)
            values.append(np.nan if figure is None else figure["value"])
            errors.append(0.0 if figure is None or figure.get("sd") is None else figure["sd"])
        ax.bar(x - 0.2, values, 0.4, yerr=errors, label="reproduced", color="C0")
        ax.bar(
            x + 0.2,
            [published.get(s, np.nan) for s in samplers],
            0.4,
            label="published",
            color="C1",
        )
        ax.set_xticks(x, samplers, rotation=45, ha="right", fontsize=8)
        ax.set_title(target.label, fontsize=9)
        ax.set_ylabel(LABELS[metric], fontsize=8)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"{experiment.name}: {LABELS[metric]}", fontsize=10)
    fig.tight_layout()
    return fig


def traces(reproduction):
    """The log density of each sampler's first chain along its retained draws, one panel per
    target (the thesis's negative log-likelihood traces, Figs. 4.2 and 5.2, with the sign of
    a log density)."""
    plt = _pyplot()
    from hamiltonia.results import load

    experiment = reproduction.experiment
    n = len(experiment.targets)
    fig, axes = _panels(plt, n)
    for ax, target in zip(axes.flat, experiment.targets, strict=False):
        for s in experiment.samplers:
            cell = reproduction.cells.get((target.label, s.label))
            if cell is None or not cell.run_file:
                continue
            lp = np.asarray(load(cell.run_file).stats["lp"])[0]
            ax.plot(lp, lw=0.6, label=s.label)
        ax.set_title(target.label, fontsize=9)
        ax.set_xlabel("draw", fontsize=8)
        ax.set_ylabel("log density", fontsize=8)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=6)
    fig.tight_layout()
    return fig


def write_figures(reproduction, folder) -> list:
    """Write the ESS, acceptance and trace figures of ``reproduction`` into ``folder``; the
    paths written."""
    from pathlib import Path

    from hamiltonia.results.runfile import atomic_write

    plt = _pyplot()
    folder = Path(folder)
    name = reproduction.experiment.name
    written = []
    figures = [
        (metric, lambda m=metric: bars(reproduction, m))
        for metric in ("ess", "acceptance", "step_size")
        if metric in reproduction.experiment.metrics
    ]
    if any(c.run_file for c in reproduction.cells.values()):
        figures.append(("traces", lambda: traces(reproduction)))
    for label, make in figures:
        fig = make()
        path = folder / f"{name}-{label}.png"
        atomic_write(path, lambda tmp, fig=fig: fig.savefig(tmp, format="png", dpi=110))
        plt.close(fig)
        written.append(path)
    return written
