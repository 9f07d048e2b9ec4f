"""Diagnostic plots of a run (extra ``plot``: matplotlib).

Each function takes a :class:`hamiltonia.Result` (or, for :func:`plot_ess`, several) and
returns a :class:`matplotlib.figure.Figure`; ``hamiltonia plot run.nc --kind trace -o
trace.png`` draws them from a run file. Importance weights are not drawn (the draws are
shown as sampled); divergent transitions are marked where a plot shows draws. Parameters are
labelled as ArviZ labels them: the element of a block whose dimension has coordinates is
``eta[Choate]`` (``hamiltonia.Model(..., coords={"school": [...]})``), other elements keep
their index (``eta[0]``).

arviz-plots would be the natural library here, but its release 0.8.0 does not import with
matplotlib 3.11 (it reaches for ``matplotlib.style.core``, which matplotlib removed), so the
plots are drawn with matplotlib directly.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["KINDS", "plot", "plot_energy", "plot_ess", "plot_pair", "plot_rank", "plot_trace"]

#: Most parameters a plot shows when none are named (the first ones of the run).
MAX_SHOWN = 8


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'hamiltonia[plot]'") from None
    return plt


def _element_names(name: str, shape, axes) -> list[str]:
    """``name[i, j]`` for every element of a block of ``shape``, in the draws' (C) order, the
    index of axis ``k`` spelt by ``axes[k]``."""
    if not shape:
        return [name]
    return [f"{name}[{', '.join(index)}]" for index in itertools.product(*axes)]


def _labels(result) -> list[str]:
    """The label of each parameter of ``result``: its name, with the index of a dimension
    that the run's ``coords`` label replaced by the label (``eta[0]`` -> ``eta[Choate]``).

    The labels come from the run's blocks (``attrs["blocks"]``: name, shape and dims) and
    ``attrs["coords"]``, which a run of a :class:`hamiltonia.Model` and a loaded file carry.
    Where the blocks do not spell the run's names (a target without blocks, a constrained
    block reported in another shape), the names are the labels.
    """
    names = [str(n) for n in result.names]
    blocks = result.attrs.get("blocks") or []
    coords = result.attrs.get("coords") or {}
    indexed, labelled = [], []
    for name, shape, dims in blocks:
        shape = [int(n) for n in shape]
        numbers = [[str(k) for k in range(n)] for n in shape]
        axes = list(numbers)
        for k, dim in enumerate(list(dims or [])[: len(shape)]):
            values = coords.get(dim)
            # Labels of another length would misname elements: keep the index then.
            if values is not None and len(values) == shape[k]:
                axes[k] = [str(v) for v in values]
        indexed += _element_names(str(name), shape, numbers)
        labelled += _element_names(str(name), shape, axes)
    return labelled if indexed == names else names


def _select(result, var_names) -> list[int]:
    names = list(result.names)
    if var_names is None:
        return list(range(min(len(names), MAX_SHOWN)))
    var_names = [var_names] if isinstance(var_names, str) else list(var_names)
    labels = _labels(result)
    chosen = []
    for name in var_names:
        # A block's name selects all its elements (eta -> eta[0], eta[1], ...); an element is
        # named by its index or by its label (eta[0] or eta[Choate]).
        hits = [
            i
            for i, (n, label) in enumerate(zip(names, labels, strict=True))
            if name in (n, label) or n.startswith(f"{name}[")
        ]
        if not hits:
            raise ValueError(f"no parameter {name!r} in this run; it has {labels[:10]}...")
        chosen.extend(hits)
    return chosen


def _divergent(result) -> np.ndarray:
    d = result.stats.get("diverging")
    return np.zeros(result.draws.shape[:2], dtype=bool) if d is None else np.asarray(d, bool)


def plot_trace(result, var_names=None):
    """Per parameter: the density of each chain's draws (left) and the chains' traces
    (right), divergent transitions marked below the traces."""
    plt = _pyplot()
    idx = _select(result, var_names)
    labels = _labels(result)
    fig, axes = plt.subplots(len(idx), 2, figsize=(10, 1.9 * len(idx)), squeeze=False)
    divergent = _divergent(result)
    for row, i in enumerate(idx):
        left, right = axes[row]
        for c in range(result.n_chains):
            x = result.draws[c, :, i]
            left.hist(x, bins=40, density=True, histtype="step", label=f"chain {c}")
            right.plot(x, lw=0.5)
        steps = np.flatnonzero(divergent.any(axis=0))
        if steps.size:
            low = np.min(result.draws[..., i])
            right.plot(steps, np.full(steps.size, low), "|", color="red", ms=8,
                       label="divergent")  # fmt: skip
        left.set_ylabel(labels[i])
        right.set_xlabel("draw" if row == len(idx) - 1 else "")
    axes[0, 0].set_title("density per chain")
    axes[0, 1].set_title("trace")
    fig.tight_layout()
    return fig


def plot_rank(result, var_names=None, bins: int = 20):
    """Rank plots (Vehtari et al. 2021): per parameter, the histogram of each chain's ranks
    among all draws; uniform for chains that sample the same distribution."""
    from scipy.stats import rankdata

    plt = _pyplot()
    idx = _select(result, var_names)
    labels = _labels(result)
    chains = result.n_chains
    fig, axes = plt.subplots(len(idx), 1, figsize=(7, 1.6 * len(idx)), squeeze=False)
    edges = np.linspace(0, result.draws.shape[0] * result.draws.shape[1], bins + 1)
    for row, i in enumerate(idx):
        ax = axes[row, 0]
        ranks = rankdata(result.draws[..., i].ravel()).reshape(result.draws.shape[:2])
        for c in range(chains):
            counts, _ = np.histogram(ranks[c], bins=edges)
            ax.bar(np.arange(bins) + c / (chains + 1), counts, width=1 / (chains + 1),
                   label=f"chain {c}")  # fmt: skip
        ax.axhline(result.n_draws / bins, color="k", lw=0.8, ls="--")
        ax.set_ylabel(labels[i])
        ax.set_xticks([])
    axes[0, 0].set_title("rank histograms per chain (dashed: uniform)")
    fig.tight_layout()
    return fig


def plot_pair(result, var_names=None):
    """Pairwise scatter plots of the draws (lower triangle), histograms on the diagonal,
    divergent transitions in red."""
    plt = _pyplot()
    idx = _select(result, var_names)
    if len(idx) < 2:
        raise ValueError("a pair plot needs at least two parameters")
    k = len(idx)
    labels = _labels(result)
    fig, axes = plt.subplots(k, k, figsize=(2.2 * k, 2.2 * k), squeeze=False)
    flat = result.draws.reshape(-1, result.dim)
    divergent = _divergent(result).ravel()
    for r, i in enumerate(idx):
        for c, j in enumerate(idx):
            ax = axes[r, c]
            if c > r:
                ax.axis("off")
                continue
            if r == c:
                ax.hist(flat[:, i], bins=40, color="C0")
            else:
                ax.plot(flat[~divergent, j], flat[~divergent, i], ".", ms=1, alpha=0.3, color="C0")
                ax.plot(flat[divergent, j], flat[divergent, i], ".", ms=3, color="red")
            if c == 0:
                ax.set_ylabel(labels[i])
            if r == k - 1:
                ax.set_xlabel(labels[j])
    fig.suptitle(f"{int(divergent.sum())} divergent transitions (red)")
    fig.tight_layout()
    return fig


def plot_energy(result):
    """The marginal energy distribution against that of the energy changes between
    iterations (Betancourt 2017): when the second is much narrower, the momentum
    refreshment explores the energy slowly; E-BFMI of each chain in the title."""
    from hamiltonia.diagnostics.checks import e_bfmi

    plt = _pyplot()
    if "energy" not in result.stats:
        raise ValueError("this run records no energy (sample_stats has no 'energy')")
    energy = np.asarray(result.stats["energy"], dtype=float)
    fig, ax = plt.subplots(figsize=(6, 4))
    centred = (energy - energy.mean(axis=1, keepdims=True)).ravel()
    ax.hist(centred, bins=50, density=True, alpha=0.5, label="marginal energy")
    ax.hist(np.diff(energy, axis=1).ravel(), bins=50, density=True, alpha=0.5,
            label="energy transition")  # fmt: skip
    bfmi = ", ".join(f"{b:.2f}" for b in e_bfmi(energy))
    ax.set_title(f"E-BFMI per chain: {bfmi}")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_ess(results: dict, per: str = "second"):
    """Bulk ESS of each parameter per second of sampling (``per="second"``) or per gradient
    (``per="gradient"``), one group of bars per run: ``results`` maps labels (e.g. sampler
    names) to results of the same target."""
    from hamiltonia.diagnostics.univariate import ess_per_gradient, ess_per_second

    if per not in ("second", "gradient"):
        raise ValueError(f"per must be 'second' or 'gradient', got {per!r}")
    plt = _pyplot()
    measure = ess_per_second if per == "second" else ess_per_gradient
    labels = list(results)
    names = _labels(results[labels[0]])
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(names) * len(labels)), 4))
    width = 0.8 / len(labels)
    for k, label in enumerate(labels):
        values = np.asarray(measure(results[label]), dtype=float)
        ax.bar(np.arange(len(names)) + k * width, values, width=width, label=label)
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, rotation=45, ha="right")
    ax.set_ylabel(f"bulk ESS per {per}")
    ax.legend()
    fig.tight_layout()
    return fig


#: The plots ``hamiltonia plot --kind`` draws from one run.
KINDS = {"trace": plot_trace, "rank": plot_rank, "pair": plot_pair, "energy": plot_energy}


def plot(result, kind: str = "trace", var_names=None):
    """The plot ``kind`` (one of :data:`KINDS`) of ``result``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    if kind == "energy":
        return plot_energy(result)
    return KINDS[kind](result, var_names)
