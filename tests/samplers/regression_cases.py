"""The regression table's cases: every registered sampler (and the options that route to
other kernels) on three targets, on both paths.

``python -m tests.samplers.regression_cases`` rewrites ``regression_table.npz`` from the
current code. Do that only when a change of the draws is intended and explained in the
commit: the table exists to show that a refactoring leaves every draw as it was.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from pathlib import Path

import numpy as np

import hamiltonia as hm

TABLE = Path(__file__).with_name("regression_table.npz")
TARGETS = ("gaussian", "banana", "blr-heart")
#: Option sets beyond each sampler's defaults that reach other kernels (metrics, integrators,
#: jitter, control variates, criteria), on the sampler named first.
VARIANTS = {
    "hmc+dense": ("hmc", {"metric": "dense"}),
    "hmc+diagonal": ("hmc", {"metric": "diagonal"}),
    "hmc+two-stage": ("hmc", {"integrator": "two-stage"}),
    "hmc+three-stage": ("hmc", {"integrator": "three-stage"}),
    "hmc+jitter": ("hmc", {"step_size_jitter": 0.2, "n_steps_jitter": 0.5}),
    "hmc+cv": ("hmc", {"control_variates": True}),
    "nuts+dense": ("nuts", {"metric": "dense"}),
    "nuts+identity": ("nuts", {"metric": "identity"}),
    "mhmc+diagonal": ("mhmc", {"metric": "diagonal"}),
    "s2hmc+diagonal": ("s2hmc", {"metric": "diagonal"}),
    "split-hmc+naive": ("split-hmc", {"scheme": "naive", "n_splits": 3}),
    "split-hmc+randomised": ("split-hmc", {"scheme": "randomised", "n_splits": 3}),
    "split-hmc+nuts": ("split-hmc", {"trajectory": "no-u-turn", "n_splits": 3}),
}
#: Samplers that run on some of the targets only: split HMC needs data rows to split.
ONLY_ON = {"split-hmc": ("blr-heart",)}
RUN = {"chains": 2, "warmup": 30, "draws": 12, "seed": 20261127, "progress": False}


def cases() -> list[tuple[str, str, dict]]:
    """(row name, sampler, options) for every row of the table."""
    rows = []
    for name in hm.samplers.names():
        rows.append((name, name, {}))
    rows.extend((row, sampler, dict(options)) for row, (sampler, options) in VARIANTS.items())
    out = []
    for row, sampler, options in rows:
        if "n_steps" in inspect.signature(hm.samplers.get(sampler)).parameters:
            options.setdefault("n_steps", 4)
        out.append((row, sampler, options))
    return out


def targets_of(sampler: str) -> tuple[str, ...]:
    """The targets of the table a sampler runs on."""
    return ONLY_ON.get(sampler, TARGETS)


def key(row: str, target: str, compiled: bool) -> str:
    return f"{row}|{target}|{'compiled' if compiled else 'numpy'}"


def run(sampler: str, options: dict, target: str, compiled: bool) -> np.ndarray | None:
    """The draws (and, beside them, the per-draw log densities) of one cell; ``None`` for the
    compiled path of a sampler that has none, and for the NumPy path of one written only as
    kernels (ChEES's trajectory)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = hm.sample(target, sampler, compiled=compiled, **RUN, **options)
        except ValueError as err:
            if compiled and str(err).startswith("compiled=True but"):
                return None
            if not compiled and str(err).startswith("compiled=False was asked but"):
                return None
            raise
    assert result.attrs["compiled"] == compiled
    lp = result.stats["lp"] if "lp" in result.stats else np.zeros(result.draws.shape[:2])
    return np.concatenate([result.draws, np.asarray(lp, dtype=float)[..., None]], axis=-1)


def write(missing_only: bool = False) -> None:
    """Write the table; with ``missing_only``, compute only the cells of rows it lacks (a
    sampler added), keeping every other cell as it is."""
    table = {}
    if missing_only:
        with np.load(TABLE) as data:
            table = dict(data)
    present = {k.split("|")[0] for k in table}
    for row, sampler, options in cases():
        if row in present:
            continue
        for target in targets_of(sampler):
            for compiled in (False, True):
                draws = run(sampler, options, target, compiled)
                if draws is not None:
                    table[key(row, target, compiled)] = draws
                print(key(row, target, compiled), draws is not None, file=sys.stderr)
    np.savez_compressed(TABLE, **table)


if __name__ == "__main__":
    import argparse

    # An argument parser, so that --help (or a mistyped flag) prints and exits instead of
    # rewriting the whole table.
    parser = argparse.ArgumentParser(
        prog="python -m tests.samplers.regression_cases",
        description="Rewrite the regression table (every cell), or add the rows it lacks.",
    )
    parser.add_argument(
        "--missing", action="store_true", help="compute only the rows of samplers added since"
    )
    write(missing_only=parser.parse_args().missing)
