"""The work after the last draw: what a run's checks and final write cost against its
sampling (``python -m hamiltonia.bench.postrun``, or ``python -m hamiltonia.bench postrun``).

One run of ``hm.sample("gaussian-d10", chains=4, warmup=1000, draws=300_000)`` (the default
sampler, NUTS, on the compiled path: the run the issue timed; ``--sampler hmc`` for HMC
with a fixed step size and number of steps, whose draws cost fewer gradients; ``--draws``
for other sizes), written to a temporary file (``--no-output`` to leave it in memory), with
each part of what :func:`hamiltonia.sample` does after sampling timed where it runs:

``rank diagnostics``
    Rank-normalised split :math:`\\hat R` and bulk and tail ESS of every parameter
    (:meth:`hamiltonia.Result._convergence`), what the ``r_hat`` and ESS warnings read.
``runaway check``
    The ``improper`` check (:func:`hamiltonia.diagnostics.checks.runaways`).
``other checks``
    The rest of :meth:`hamiltonia.Result.diagnose` (divergences, frozen chains, step size,
    E-BFMI).
``netCDF in memory``, ``file write``
    The finished run made into the bytes of its netCDF file
    (:meth:`hamiltonia.Result.to_netcdf_bytes`) and written (:meth:`RunFile.finish
    <hamiltonia.results.runfile.RunFile.finish>`: a temporary file, ``fsync``, a rename).

The ratio is post-run seconds over sampling seconds. ``--arviz`` also times ArviZ's own
estimators (``arviz_stats``: :math:`\\hat R`, bulk and tail ESS, per parameter, over
threads as hamiltonia called them before) on the same draws, for the same numbers by the
former road. A first, small run loads the sampling kernels, and the checks' kernels are run
once at a size that takes their compiled road: the figures are those of a process that has
sampled before, with its imports done (the first run of a process adds them once; the table
ends with the seconds the checks' kernels took to load).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

__all__ = ["DEFAULT_DRAWS", "main", "measure", "render"]

#: Draws per chain of the issue's run.
DEFAULT_DRAWS = 300_000

#: The parts of the post-run work, in the order of the table.
PARTS = (
    ("rank", "rank diagnostics"),
    ("runaway", "runaway check"),
    ("checks", "other checks"),
    ("netcdf", "netCDF in memory"),
    ("write", "file write"),
)


class _Clock:
    """Seconds spent in wrapped functions, by part."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def wrap(self, part: str, function):
        def timed(*args, **kwargs):
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[part] = self.seconds.get(part, 0.0) + time.perf_counter() - began

        return timed


@contextlib.contextmanager
def _timing(clock: _Clock):
    """Time the post-run parts wherever :func:`hamiltonia.sample` calls them."""
    from hamiltonia.diagnostics import checks
    from hamiltonia.results import Result
    from hamiltonia.results.runfile import RunFile

    patches = [
        (Result, "_convergence", "rank"),
        (checks, "runaways", "runaway"),
        (Result, "diagnose", "diagnose"),
        (Result, "to_netcdf_bytes", "netcdf"),
        (RunFile, "finish", "finish"),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    try:
        for owner, name, part in patches:
            setattr(owner, name, clock.wrap(part, getattr(owner, name)))
        yield clock
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


#: The samplers the benchmark runs: the default, and HMC with a fixed trajectory.
SAMPLERS = ("nuts", "hmc")


def _run(draws: int, chains: int, warmup: int, sampler: str, options: dict, seed: int,
         output) -> object:  # fmt: skip
    import hamiltonia as hm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the run's own warnings are not what is measured
        return hm.sample("gaussian-d10", sampler, chains=chains, warmup=warmup, draws=draws,
                         seed=seed, progress=False, output=output, overwrite=True,
                         **options)  # fmt: skip


def _load_diagnostic_kernels() -> float:
    """Run the checks' kernels once at a size that takes their compiled road (a short run
    does not): compiled, or loaded from numba's cache, before anything is timed; the
    seconds it took (the first large run of a process pays them once)."""
    from hamiltonia.runner.prebuild import diagnostic_kernels

    began = time.perf_counter()
    diagnostic_kernels()
    return time.perf_counter() - began


def _arviz_seconds(draws: np.ndarray) -> float:
    """Seconds of ArviZ's rank :math:`\\hat R`, bulk and tail ESS of ``draws``, per
    parameter over threads (the former road of the checks)."""
    from arviz_base import rcParams
    from arviz_stats.base import array_stats

    from hamiltonia.diagnostics.univariate import _per_parameter

    prob = rcParams["stats.ci_prob"]
    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _per_parameter(lambda x: array_stats.rhat(x, method="rank"), draws)
        _per_parameter(lambda x: array_stats.ess(x, method="bulk"), draws)
        _per_parameter(lambda x: array_stats.ess(x, method="tail", prob=prob), draws)
    return time.perf_counter() - began


def measure(draws: int = DEFAULT_DRAWS, *, sampler: str = "nuts", chains: int = 4,
            warmup: int = 1000, step_size: float = 0.3, n_steps: int = 10,
            output: bool = True, arviz: bool = False, seed: int = 0) -> dict:  # fmt: skip
    """Time one run and its post-run parts (module docstring); ``step_size`` and ``n_steps``
    are HMC's (NUTS adapts its step size and builds its own trajectories).

    Returns ``draws``, ``chains``, ``sampler``, ``trajectory`` (how the draws were made, in
    words), ``sampling_s``, ``parts`` (seconds by the keys of :data:`PARTS`; the write parts
    absent without ``output``), ``post_s`` (their sum), ``ratio`` (``post_s /
    sampling_s``), ``file_mb`` (the file's size, ``None`` without ``output``),
    ``gradients_per_draw``, ``acceptance`` and, with ``arviz``, ``arviz_s``.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    if min(draws, chains, n_steps) < 1 or warmup < 0:
        raise ValueError("draws, chains and n_steps must be >= 1 and warmup >= 0")
    options = (
        {"step_size": step_size, "n_steps": n_steps, "n_steps_jitter": 0.0}
        if sampler == "hmc"
        else {}
    )
    trajectory = f"step size {step_size:g}, {n_steps} steps" if options else "step size adapted"
    with tempfile.TemporaryDirectory(prefix="hamiltonia-postrun-") as folder:
        path = Path(folder) / "run.nc"
        # Loads the kernels and does the imports: those of a process's first run.
        _run(100, chains, 10, sampler, options, seed, path if output else None)
        load_s = _load_diagnostic_kernels()
        clock = _Clock()
        with _timing(clock):
            result = _run(draws, chains, warmup, sampler, options, seed,
                          path if output else None)  # fmt: skip
        size = path.stat().st_size / 1e6 if output else None
    s = clock.seconds
    parts = {
        "rank": s.get("rank", 0.0),
        "runaway": s.get("runaway", 0.0),
        "checks": s.get("diagnose", 0.0) - s.get("rank", 0.0) - s.get("runaway", 0.0),
    }
    if output:
        parts["netcdf"] = s.get("netcdf", 0.0)
        parts["write"] = s.get("finish", 0.0) - s.get("netcdf", 0.0)
    post = sum(parts.values())
    report = {
        "draws": draws,
        "chains": chains,
        "sampler": sampler,
        "trajectory": trajectory,
        "gradients_per_draw": float(np.mean(result.stats["n_grad"])),
        "sampling_s": result.sampling_seconds,
        "parts": parts,
        "post_s": post,
        "ratio": post / result.sampling_seconds,
        "file_mb": size,
        "acceptance": result.acceptance_rate,
        "kernel_load_s": load_s,
    }
    if arviz:
        report["arviz_s"] = _arviz_seconds(result.draws)
    return report


def render(report: dict) -> str:
    """The report of :func:`measure` as a markdown table."""
    sampling = report["sampling_s"]
    rows = [("sampling", sampling)]
    rows += [(label, report["parts"][key]) for key, label in PARTS if key in report["parts"]]
    rows.append(("post-run total", report["post_s"]))
    lines = [
        f"gaussian-d10, {report['sampler']}, {report['chains']} chains x "
        f"{report['draws']:,} draws ({report['trajectory']}, "
        f"{report['gradients_per_draw']:.1f} gradients a draw, acceptance "
        f"{report['acceptance']:.2f})"
        + (f", file {report['file_mb']:.0f} MB" if report["file_mb"] is not None else ""),
        "",
        "| part | seconds | / sampling |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {sec:.3f} | {sec / sampling:.1%} |" for name, sec in rows]
    if "arviz_s" in report:
        arviz = report["arviz_s"]
        lines.append(f"| ArviZ's R-hat, bulk and tail ESS (former road) | {arviz:.3f} | "
                     f"{arviz / sampling:.1%} |")  # fmt: skip
    lines += ["", f"post-run / sampling: {report['ratio']:.1%}"]
    if "kernel_load_s" in report:
        lines.append(f"(before the timed run, once per process: the checks' kernels loaded or "
                     f"compiled in {report['kernel_load_s']:.2f} s)")  # fmt: skip
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hamiltonia.bench.postrun", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--draws", type=int, default=DEFAULT_DRAWS, help="draws per chain")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default="nuts",
        help="nuts (the default sampler) or hmc with a fixed trajectory",
    )
    parser.add_argument("--step-size", type=float, default=0.3, help="hmc's step size")
    parser.add_argument("--n-steps", type=int, default=10,
                        help="hmc's leapfrog steps per iteration")  # fmt: skip
    parser.add_argument("--no-output", action="store_true", help="keep the run in memory")
    parser.add_argument("--arviz", action="store_true", help="also time ArviZ's estimators")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        report = measure(args.draws, sampler=args.sampler, chains=args.chains,
                         warmup=args.warmup, step_size=args.step_size, n_steps=args.n_steps,
                         output=not args.no_output, arviz=args.arviz, seed=args.seed)  # fmt: skip
    except ValueError as err:
        print(f"hamiltonia bench postrun: error: {err}", file=sys.stderr)
        return 2
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
