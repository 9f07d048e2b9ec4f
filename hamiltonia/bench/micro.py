"""Micro-benchmarks of hamiltonia alone: the cost of the compiled HMC kernel per leapfrog
step against one compiled gradient, the cost of running more chains, and the memory of a
long run."""

from __future__ import annotations

import time
import warnings

import numpy as np
from numba import njit

from hamiltonia import _numba_cache

# Before the decorators below: their caches go to the cache folder, not into the package.
_numba_cache.install()

__all__ = ["chains_scaling", "gradient_seconds", "overhead_row", "step_seconds"]


@njit(cache=True, nogil=True)
def _gradient_loop(fn, q, grad, fdata, idata, n):  # pragma: no cover - compiled
    total = 0.0
    for _ in range(n):
        total += fn(q, grad, fdata, idata)
    return total


@njit(cache=True, nogil=True)
def _gradient_chain(fn, q, grad, fdata, idata, n):  # pragma: no cover - compiled
    # Each call's input depends on the last call's output (q + 0 * grad is not folded away
    # without fast-math flags), as in a trajectory: the calls cannot overlap in the CPU.
    total = 0.0
    for _ in range(n):
        total += fn(q, grad, fdata, idata)
        for i in range(q.shape[0]):
            q[i] = q[i] + 0.0 * grad[i]
    return total


def _best_of(run, n: int, repeats: int, budget: float) -> float:
    """Seconds per unit of ``run(n)`` (which returns the units it did), after scaling ``n``
    so that one call lasts about ``budget`` seconds; the best of ``repeats`` calls."""
    run(n)  # loads (or compiles) the kernel and warms the caches: not timed
    began = time.perf_counter()
    units = run(n)
    elapsed = time.perf_counter() - began
    if elapsed < budget:
        n = max(n, int(n * budget / max(elapsed, 1e-6)))
    best = np.inf
    for _ in range(repeats):
        began = time.perf_counter()
        units = run(n)
        best = min(best, (time.perf_counter() - began) / max(units, 1))
    return float(best)


def gradient_seconds(
    kernel, q, *, chained: bool = False, repeats: int = 5, budget: float = 0.2
) -> float:
    """Seconds per call of ``kernel.function`` (a compiled log density and gradient) at ``q``,
    called in a numba loop through the same first-class function pointer the chain kernel
    uses. Independent calls (default) measure throughput: the CPU may overlap consecutive
    calls. ``chained=True`` makes each call's input depend on the previous output (plus one
    pass over ``q``), as the calls of a trajectory do: latency."""
    q = np.ascontiguousarray(q, dtype=np.float64).copy()
    grad = np.empty_like(q)
    loop = _gradient_chain if chained else _gradient_loop

    def run(n):
        loop(kernel.function, q, grad, kernel.fdata, kernel.idata, n)
        return n

    return _best_of(run, 1000, repeats, budget)


def step_seconds(
    target, q, step_size, n_steps, *, metric="identity", repeats: int = 5, budget: float = 0.2,
    **options,
):  # fmt: skip
    """Seconds per integration step of one chain of the composed chain kernel of
    ``hmc(target, n_steps=..., step_size=..., metric=..., **options)`` (momentum draw,
    trajectory, accept test and output included, no adaptation), counted as gradient
    evaluations actually made. ``metric="diagonal"`` uses unit entries, so the trajectories
    are those of the identity."""
    from hamiltonia.compiled import plan_for
    from hamiltonia.samplers import build

    dim = target.dim
    fixed = np.ones(dim) if metric == "diagonal" else metric
    sampler = build("hmc", target, n_steps=n_steps, n_steps_jitter=0.0,
                    step_size=float(step_size), metric=fixed, **options)  # fmt: skip
    plan = plan_for(sampler)
    layout = plan.layout()
    kernel = plan.kernel
    n_grad = [name for name, _ in layout.stats].index("n_grad")
    q0 = np.ascontiguousarray(q, dtype=np.float64).copy()
    grad0 = np.empty(dim)
    lp0 = float(_gradient_loop(kernel.function, q0, grad0, kernel.fdata, kernel.idata, 1))

    from hamiltonia.compiled.pcg64_stream import state_of

    def run(n_iter):
        q, grad, p = q0.copy()[None], grad0.copy()[None], np.zeros((1, dim))
        lp, eps = np.array([lp0]), np.array([float(step_size)])
        out_q, out_s = np.empty((1, n_iter, dim)), np.empty((1, n_iter, len(layout.stats)))
        plan.chain_kernel(
            0, 1, q, p, grad, lp, eps, np.zeros((1, layout.n_aux)),
            state_of(np.random.default_rng(0))[None], np.zeros(1, np.bool_), n_iter, False,
            np.zeros((1, 1)), layout.PF, layout.PI, kernel.function, kernel.fdata, kernel.idata,
            out_q, out_s, np.empty((1, 0, dim)), layout.scratch_rows,
        )  # fmt: skip
        return int(np.sum(out_s[0, :, n_grad]))

    return _best_of(run, 20, repeats, budget)


def _warm_state(target, n_steps: int, compiled, warmup: int):
    import hamiltonia as hm

    result = hm.sample(
        target,
        "hmc",
        chains=1,
        warmup=warmup,
        draws=1,
        seed=0,
        n_steps=n_steps,
        n_steps_jitter=0.0,
        progress=False,
        compiled=compiled,
    )
    return result.draws[0, -1], float(result.stats["step_size"][0, -1])


def overhead_row(name: str, n_steps: int, *, quick: bool = False) -> dict:
    """Per-step cost of one chain of static HMC on target ``name`` against one gradient.

    With a numba kernel: :func:`step_seconds` (identity and diagonal metric) against
    :func:`gradient_seconds` (independent and chained calls). Without one (the NumPy path):
    seconds per gradient evaluation of a one-chain ``sample(compiled=False)`` against one
    ``log_prob_and_grad`` call on a ``(1, dim)`` array. The step size is the one dual
    averaging finds in a short warm-up.
    """
    import hamiltonia as hm

    target = hm.targets.get(name)
    kernel = target.numba_kernel()
    budget = 0.05 if quick else 0.2
    repeats = 3 if quick else 5
    row = {"target": name, "dim": target.dim, "n_steps": n_steps}
    if kernel is not None:
        q, eps = _warm_state(target, n_steps, True, 300)
        grad_s = gradient_seconds(kernel, q, repeats=repeats, budget=budget)
        chain_s = gradient_seconds(kernel, q, chained=True, repeats=repeats, budget=budget)
        timing = {"repeats": repeats, "budget": budget}
        step_id = step_seconds(target, q, eps, n_steps, **timing)
        step_diag = step_seconds(target, q, eps, n_steps, metric="diagonal", **timing)
        row.update(
            path="compiled",
            step_s=step_id,
            step_diag_s=step_diag,
            grad_s=grad_s,
            grad_chained_s=chain_s,
        )
    else:
        q, eps = _warm_state(target, n_steps, False, 100 if quick else 300)
        draws = 50 if quick else 300
        result = hm.sample(
            target,
            "hmc",
            chains=1,
            warmup=0,
            draws=draws,
            seed=0,
            n_steps=n_steps,
            n_steps_jitter=0.0,
            step_size=eps,
            progress=False,
            compiled=False,
        )
        x = np.asarray(q, dtype=float)[None, :]

        def run(n):
            for _ in range(n):
                target.log_prob_and_grad(x)
            return n

        grad_s = _best_of(run, 100, repeats, budget)
        step = result.sampling_seconds / max(result.n_grad, 1)
        row.update(path="numpy", step_s=step, step_diag_s=None, grad_s=grad_s, grad_chained_s=None)
    row["ratio"] = row["step_s"] / row["grad_s"]
    row["ratio_diag"] = None if row["step_diag_s"] is None else row["step_diag_s"] / row["grad_s"]
    chained = row["grad_chained_s"]
    row["ratio_chained"] = None if chained is None else row["step_s"] / chained
    return row


def chains_scaling(
    name: str = "gaussian-d100",
    counts=(1, 4, 16, 64),
    *,
    n_steps: int = 15,
    warmup: int = 1000,
    draws: int = 1000,
) -> list[dict]:
    """Wall time of ``sample(name, "hmc", chains=c)`` (identity metric, dual averaging) for
    each ``c`` in ``counts``, on the compiled and on the NumPy path (a short untimed call
    first loads the kernels). ``compiled`` is ``None`` in a row where the target has no
    numba kernel."""
    import hamiltonia as hm
    from hamiltonia.diagnostics.checks import SamplingWarning

    target = hm.targets.get(name)
    paths = [True, False] if target.numba_kernel() is not None else [False]
    rows = []
    with warnings.catch_warnings():
        # These runs time the machinery; their short chains are meant to be unconverged.
        warnings.simplefilter("ignore", SamplingWarning)
        for compiled in paths:
            hm.sample(
                target, "hmc", chains=2, warmup=20, draws=5, n_steps=n_steps, seed=1,
                n_steps_jitter=0.0, progress=False, compiled=compiled,
            )  # fmt: skip
            for chains in counts:
                began = time.perf_counter()
                result = hm.sample(
                    target, "hmc", chains=chains, warmup=warmup, draws=draws, seed=0,
                    n_steps=n_steps, n_steps_jitter=0.0, progress=False, compiled=compiled,
                )  # fmt: skip
                rows.append(
                    {
                        "path": "compiled" if compiled else "numpy",
                        "chains": chains,
                        "wall_s": time.perf_counter() - began,
                        "sampling_s": result.sampling_seconds,
                    }
                )
    return rows
