"""Deciding whether a sampler can run compiled, and running it."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hamiltonia.compiled.targets import NumbaTarget

__all__ = ["CompiledPlan", "NotCompilable", "plan_for"]


class NotCompilable(Exception):
    """The sampler has a part with no compiled counterpart; the message names it."""


def _metric_arrays(metric, dim):
    """(kind, inverse-mass diagonal, dense inverse mass, its Cholesky factor, momentum scale)
    as the kernel takes them; unused ones are placeholders of the right type."""
    from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric, IdentityMetric

    diag = np.ones(dim)
    dense = np.eye(dim)
    chol = np.eye(dim)
    mass_sqrt = np.ones(dim)
    if type(metric) is IdentityMetric:
        kind = 0
    elif type(metric) is DiagonalMetric:
        kind = 1
        diag = np.ascontiguousarray(metric.inverse_mass, dtype=np.float64)
        mass_sqrt = np.ascontiguousarray(metric._sqrt_mass, dtype=np.float64)
    elif type(metric) is DenseMetric:
        kind = 2
        dense = np.ascontiguousarray(metric.inverse_mass, dtype=np.float64)
        chol = np.ascontiguousarray(np.linalg.cholesky(dense))
    else:
        raise NotCompilable(f"metric {type(metric).__name__} has no compiled counterpart")
    return kind, diag, dense, chol, mass_sqrt


def plan_for(sampler) -> CompiledPlan:
    """A :class:`CompiledPlan` for ``sampler``, or :class:`NotCompilable` naming the part
    that prevents it.

    Compiled today: :class:`~hamiltonia.samplers.HamiltonianSampler` with a
    :class:`~hamiltonia.hamiltonians.EuclideanHamiltonian` (identity, diagonal or dense
    metric), the :class:`~hamiltonia.integrators.Leapfrog`, a
    :class:`~hamiltonia.trajectories.StaticLength` trajectory, a
    :class:`~hamiltonia.momentum.FullRefresh`, tuners among
    :class:`~hamiltonia.tuners.DualAveraging` and :class:`~hamiltonia.tuners.WindowedMetric`,
    no importance weights, and a target whose ``numba_kernel()`` returns a
    :class:`~hamiltonia.compiled.NumbaTarget`. Exact types are required: a subclass may
    override behaviour the kernel does not know about, so it runs on the NumPy path.
    """
    from hamiltonia import backend
    from hamiltonia.hamiltonians.euclidean import EuclideanHamiltonian
    from hamiltonia.integrators.leapfrog import Leapfrog
    from hamiltonia.momentum import FullRefresh
    from hamiltonia.reducers import VarianceReducer
    from hamiltonia.samplers.hamiltonian import HamiltonianSampler
    from hamiltonia.trajectories import StaticLength
    from hamiltonia.tuners import DualAveraging, WindowedMetric

    if backend.get_backend() != "numpy":
        raise NotCompilable(f"backend {backend.get_backend()!r} (the compiled path runs on NumPy)")
    checks = [
        (type(sampler) is HamiltonianSampler, lambda: f"sampler {type(sampler).__name__}"),
        (
            type(getattr(sampler, "hamiltonian", None)) is EuclideanHamiltonian,
            lambda: f"hamiltonian {type(sampler.hamiltonian).__name__}",
        ),
        (
            type(getattr(sampler, "integrator", None)) is Leapfrog,
            lambda: f"integrator {type(sampler.integrator).__name__}",
        ),
        (
            type(getattr(sampler, "trajectory", None)) is StaticLength,
            lambda: f"trajectory {type(sampler.trajectory).__name__}",
        ),
        (
            type(getattr(sampler, "refresh", None)) is FullRefresh,
            lambda: f"refresh {type(sampler.refresh).__name__}",
        ),
        (
            type(sampler.reducer) is VarianceReducer,
            lambda: f"reducer {type(sampler.reducer).__name__}",
        ),
    ]
    for ok, what in checks:
        if not ok:
            raise NotCompilable(f"{what()} has no compiled counterpart")
    for tuner in sampler.tuners:
        if type(tuner) not in (DualAveraging, WindowedMetric):
            raise NotCompilable(f"tuner {type(tuner).__name__} has no compiled counterpart")
    _metric_arrays(sampler.hamiltonian.metric, sampler.target.dim)
    kernel = sampler.target.numba_kernel()
    if kernel is None:
        raise NotCompilable(f"target {type(sampler.target).__name__} has no numba kernel")
    if not isinstance(kernel, NumbaTarget):
        raise NotCompilable("numba_kernel() must return a hamiltonia.compiled.NumbaTarget")
    return CompiledPlan(sampler, kernel)


class CompiledPlan:
    """Runs chunks of iterations of every chain in the compiled kernel, one thread per core."""

    def __init__(self, sampler, kernel: NumbaTarget):
        self.sampler = sampler
        self.kernel = kernel
        self.workers = max(1, os.cpu_count() or 1)
        self._pool: ThreadPoolExecutor | None = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def _dual_averaging(self):
        from hamiltonia.tuners import DualAveraging

        for tuner in self.sampler.tuners:
            if type(tuner) is DualAveraging:
                return tuner
        return None

    def run(self, chain, rngs, n_iter: int, adapt: bool, out_q: np.ndarray, out_stats: np.ndarray):
        """Advance all chains ``n_iter`` iterations, writing ``out_q[c, :n_iter]`` and
        ``out_stats[c, :n_iter]``; with ``adapt``, dual averaging runs inside the kernel."""
        from hamiltonia.compiled.kernels import hmc_chunk

        sampler = self.sampler
        kind, diag, dense, chol, mass_sqrt = _metric_arrays(
            sampler.hamiltonian.metric, sampler.target.dim
        )
        tuner = self._dual_averaging() if adapt else None
        if tuner is not None:
            da_params = np.array([tuner.target_accept, tuner.gamma, tuner.t0, tuner.kappa])
        else:
            da_params = np.zeros(4)
        phase = chain.phase
        n_chains = phase.q.shape[0]
        q = np.ascontiguousarray(phase.q, dtype=np.float64).copy()
        grad = np.ascontiguousarray(phase.grad, dtype=np.float64).copy()
        lp = np.ascontiguousarray(phase.log_prob, dtype=np.float64).copy()
        eps = np.ascontiguousarray(chain.step_size, dtype=np.float64).copy()
        da_state = (
            np.ascontiguousarray(tuner.state, dtype=np.float64).copy()
            if tuner is not None
            else np.zeros((n_chains, 4))
        )
        length = sampler.trajectory.length
        jitter = float(sampler.trajectory.step_size_jitter)
        fn, fdata, idata = self.kernel.function, self.kernel.fdata, self.kernel.idata

        def one(c):
            lp_c = lp[c : c + 1]
            eps_c = eps[c : c + 1]
            hmc_chunk(
                q[c], lp_c, grad[c], eps_c, rngs[c], n_iter, length, jitter,
                kind, diag, dense, chol, mass_sqrt, fn, fdata, idata,
                tuner is not None, da_state[c], da_params,
                out_q[c], out_stats[c],
            )  # fmt: skip

        if n_chains == 1 or self.workers == 1:
            for c in range(n_chains):
                one(c)
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=min(self.workers, n_chains))
            list(self._pool.map(one, range(n_chains)))
        phase.q, phase.grad, phase.log_prob = q, grad, lp
        chain.step_size = eps
        if tuner is not None:
            tuner.state = da_state
