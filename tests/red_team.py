"""Red team of a run's output: every hostile tree at every name hamiltonia derives from an
output, against every operation that writes one, through the public API only.

Run it from a clone (``python -m tests.red_team``, about a minute; ``--executors`` adds the
process pool and Dask, a few minutes more). For each case it plants a tree
(:mod:`tests.hostile_trees`) at a derived name, runs the operation, and checks that no byte
outside the output changed and that the operation either completed or refused before any
work. It prints one line per case that went wrong and a count, and exits 1 if any did: an
earlier version (before issue 47) is caught emptying, deleting through a link and truncating
a lock's link target.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import hamiltonia as hm
from tests.hostile_trees import KINDS, changes, plant, snapshot, unfinished_run

#: The operations' own outputs, which they may write.
OUTPUTS = {"out/run.nc", "out/data.nc", "out/run.png", "tiny.toml"}
RUN = {"chains": 2, "warmup": 20, "draws": 20, "seed": 0, "progress": False}


def _operations(executors: bool):
    """(name, derived names, prepare(folder), run(folder)) of each operation."""

    def sample(executor=None):
        def run(folder):
            kwargs = {} if executor is None else {"executor": executor, "workers": 2}
            hm.sample("banana", "hmc", output=folder / "run.nc", **RUN, **kwargs)

        return run

    def save(folder):
        hm.sample("banana", "hmc", **RUN).save(folder / "run.nc")

    def plot(folder):
        from hamiltonia import cli

        hm.sample("banana", "hmc", **RUN).save(folder / "data.nc")
        cli.main(["plot", str(folder / "data.nc"), "--kind", "trace", "-o",
                  str(folder / "run.png")])  # fmt: skip

    def resume(folder):
        hm.resume(folder / "run.nc", progress=False)

    def reproduce(folder):
        from hamiltonia.reproduce import run_experiment
        from hamiltonia.reproduce.experiment import load_experiment
        from tests.reproduce.conftest import TINY

        (folder.parent / "tiny.toml").write_text(TINY)
        experiment = load_experiment(folder.parent / "tiny.toml")
        run_experiment(experiment, output=folder, overwrite=True, only=[("Banana", "HMC")])

    derived = ["run.nc.partial", "run.nc.lock"]
    ops = [
        ("sample", derived, None, sample()),
        ("sample --overwrite", derived, lambda f: (f / "run.nc").write_bytes(b"old"),
         lambda f: hm.sample("banana", "hmc", output=f / "run.nc", overwrite=True, **RUN)),
        ("Result.save", derived, None, save),
        ("plot -o", ["run.png.partial", "run.png.lock", "data.nc.partial"], None, plot),
        ("resume", ["run.nc.lock", "run.nc.partial/extra", "run.nc.tasks"],
         lambda f: unfinished_run(f / "run.nc"), resume),
        ("reproduce", ["runs", "cells"], None, reproduce),
        ("reproduce --overwrite again", ["runs/x.nc.partial", "runs/x.nc.tasks", "cells/notes"],
         reproduce, reproduce),
    ]  # fmt: skip
    if executors:
        tasks = [*derived, "run.nc.tasks"]
        ops += [("sample processes", tasks, None, sample("processes")),
                ("sample dask", tasks, None, sample("dask"))]  # fmt: skip
    return ops


def attack(executors: bool = False, log=print) -> list[str]:
    """Run every case; returns the lines of those that went wrong."""
    bad = []
    for name, derived, prepare, run in _operations(executors):
        for where in derived:
            for kind in KINDS[1:]:
                root = Path(tempfile.mkdtemp(prefix="red-team-"))
                try:
                    folder = root / "out"
                    folder.mkdir()
                    if prepare is not None:
                        prepare(folder)
                    plant(folder / where, kind, root)
                    before = snapshot(root, skip=OUTPUTS)
                    outcome = "completed"
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        try:
                            run(folder)
                        except (OSError, ValueError) as err:
                            outcome = f"refused: {type(err).__name__}"
                    after = snapshot(root, skip=OUTPUTS)

                    # A run that finishes removes the checkpoints it made and read.
                    # A resume that finishes removes the checkpoints it read; a reproduction
                    # writes in its folder, but never at or under the tree planted there.
                    def allowed(line, name=name, where=where, done=outcome == "completed"):
                        if not done:
                            return False
                        if name == "resume":
                            return line.startswith("out/run.nc.partial")
                        return (
                            name.startswith("reproduce")
                            and line.startswith("out/")
                            and not (line.startswith(f"out/{where}"))
                        )

                    diff = [c for c in changes(before, after) if not allowed(c)]
                    if diff:
                        bad.append(f"{name}: {kind} at {where}: {outcome}; " + "; ".join(diff[:3]))
                        log(bad[-1])
                finally:
                    shutil.rmtree(root, ignore_errors=True)
    return bad


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executors", action="store_true", help="also the process pool and Dask")
    args = parser.parse_args(argv)
    bad = attack(args.executors)
    print(f"red team: {len(bad)} cases changed something outside the output")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
