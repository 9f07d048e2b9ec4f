"""A part written once, as a kernel, runs with any target (issue 27): a target without a
compiled kernel is called back from the compiled chain (hamiltonia.compiled.callback), with
the NumPy path's semantics for its errors."""

from __future__ import annotations

import math

import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.compiled.parts import PartKernels, python_form_missing
from hamiltonia.compiled.roles import column, draw_momentum, offset, own
from hamiltonia.runner.loop import kernel_only_parts
from hamiltonia.trajectories.metropolis import metropolis_transition_kernel

SCALES = np.array([1.0, 2.0, 0.5])
RUN = {"chains": 2, "warmup": 0, "draws": 25, "seed": 11, "progress": False}


def python_gaussian():
    """The 'gaussian' family's density at these scales, written with autograd: no kernel."""
    return hm.Target.from_logp(lambda x: -0.5 * anp.sum((x / SCALES) ** 2, axis=-1), dim=3)


def numba_gaussian():
    from hamiltonia.targets.gaussian import DiagonalGaussian

    return DiagonalGaussian(3, scales=SCALES)


def halving_refresh_kernel(ctx, q, p, grad, lp, eps):
    """With probability ``prob`` a fresh momentum, else keep it (one uniform first)."""
    if ctx.rng.random() < own.prob:
        draw_momentum(ctx, q, p)


class OccasionalRefresh(hm.MomentumRefresh):
    """Written once: a kernel and no ``refresh`` method."""

    flip_on_reject = True

    def __init__(self, prob):
        self.prob = float(prob)

    def compiled(self, dim):
        params = {"prob": self.prob, "flip_on_reject": self.flip_on_reject}
        return PartKernels({"refresh": halving_refresh_kernel}, params=params)


def geometric_length_kernel(ctx, eps):
    """1 + a geometric number of steps of mean ``mean_steps`` - 1, capped at max_steps."""
    u = ctx.rng.random()
    n = 1 + math.floor(math.log1p(-u) / math.log1p(-own.stop))
    return min(n, own.max_steps), eps


class GeometricLength(hm.MetropolisTrajectory):
    """Written once: only the length kernel; the Metropolis transition is reused."""

    def __init__(self, mean_steps, max_steps=100):
        super().__init__(1, max_steps)
        self.stop = 1.0 / mean_steps

    def compiled(self, dim):
        kernels = super().compiled(dim)
        kernels.functions["trajectory_length"] = geometric_length_kernel
        kernels.params["stop"] = self.stop
        return kernels


def _sampler(target, refresh=None, trajectory=None, step_size=0.4, integrator=None):
    return hm.HamiltonianSampler(
        hamiltonian=hm.EuclideanHamiltonian(target),
        trajectory=trajectory or hm.StaticLength(4),
        refresh=refresh or hm.FullRefresh(),
        step_size=step_size,
        integrator=integrator,
    )


def test_a_part_with_only_a_kernel_is_known_as_such():
    assert python_form_missing(OccasionalRefresh(0.5)) == "OccasionalRefresh.refresh"
    # The inherited n_steps draws the parent's lengths, not the kernel's: stale (the
    # inherited transition is not: its kernel is the parent's).
    assert python_form_missing(GeometricLength(4)) == "GeometricLength.n_steps"
    for part in (hm.PartialRefresh(0.5), hm.StaticLength(3), hm.Leapfrog()):
        assert python_form_missing(part) is None
    found = kernel_only_parts(_sampler(numba_gaussian(), refresh=OccasionalRefresh(0.5)))
    assert found == ["refresh OccasionalRefresh (OccasionalRefresh.refresh)"]


@pytest.mark.parametrize(
    "parts",
    [
        {"refresh": OccasionalRefresh(0.5)},
        {"trajectory": GeometricLength(3.0)},
        {"refresh": OccasionalRefresh(0.3), "trajectory": GeometricLength(2.5)},
    ],
    ids=["refresh", "length", "both"],
)
def test_a_kernel_only_part_gives_the_same_draws_with_a_compiled_or_a_python_target(parts):
    """The same density, compiled and in autograd: the same draws (to rounding), both runs
    on the compiled path whatever ``compiled`` says (None here)."""
    runs = []
    for target in (numba_gaussian(), python_gaussian()):
        sampler = _sampler(target, **parts)
        target = sampler.target
        result = hm.sample(target, sampler, **RUN)
        assert result.attrs["compiled"] is True
        runs.append(result)
    np.testing.assert_allclose(runs[0].draws, runs[1].draws, rtol=0, atol=1e-9)
    # Not the draws of the built-in parts: the kernels ran.
    target = numba_gaussian()
    plain = hm.sample(target, _sampler(target), **RUN)
    assert not np.allclose(plain.draws, runs[0].draws)


class PythonOnlyLeapfrog(hm.Leapfrog):
    """Opts out of its parent's kernel: its inherited Python step is its only form."""

    def compiled(self, dim):
        return None


class PythonOnlyPartialRefresh(hm.PartialRefresh):
    def compiled(self, dim):
        return None


@pytest.mark.parametrize("compiled", [False, None])
def test_a_part_whose_compiled_returns_none_runs_on_the_numpy_path(compiled):
    """compiled() returning None is the documented way to have no kernel: such a part is
    not 'written only as a kernel' (its Python methods are not stale), and it runs."""
    target = numba_gaussian()
    parts = {"integrator": PythonOnlyLeapfrog(), "refresh": PythonOnlyPartialRefresh(0.5)}
    sampler = _sampler(target, **parts)
    assert kernel_only_parts(sampler) == []
    result = hm.sample(target, sampler, compiled=compiled, **RUN)
    assert result.attrs["compiled"] is False
    plain = hm.sample(target, _sampler(target, refresh=hm.PartialRefresh(0.5)), compiled=False,
                      **RUN)  # fmt: skip
    np.testing.assert_array_equal(result.draws, plain.draws)  # the inherited maths ran


def test_a_kernel_only_part_refuses_the_numpy_path():
    target = numba_gaussian()
    sampler = _sampler(target, refresh=OccasionalRefresh(0.5))
    with pytest.raises(ValueError, match=r"compiled=False was asked but refresh OccasionalRefresh"):
        hm.sample(target, sampler, compiled=False, **RUN)


def test_compiled_true_calls_a_python_target_back_with_the_numpy_paths_draws():
    """Built-in parts, a target with no kernel: compiled=True now runs the compiled chain,
    with the draws of the NumPy path (to rounding)."""
    target = python_gaussian()
    numpy_run = hm.sample(target, "hmc", compiled=False, step_size=0.4, n_steps=4, **RUN)
    compiled_run = hm.sample(target, "hmc", compiled=True, step_size=0.4, n_steps=4, **RUN)
    assert compiled_run.attrs["compiled"] is True and numpy_run.attrs["compiled"] is False
    np.testing.assert_allclose(numpy_run.draws, compiled_run.draws, rtol=0, atol=1e-9)


class OutsideSupport(Exception):
    pass


def test_a_python_targets_errors_keep_the_numpy_paths_meaning():
    """A declared exception is a rejection; any other is the user's bug, raised as a
    ModelError naming the chain and the position."""

    def log_prob_and_grad(x):
        x = np.asarray(x, dtype=float)
        if x[0] > 1.0:
            raise OutsideSupport("outside")
        return -0.5 * float(x @ x), -x

    target = hm.Target.from_functions(lambda x: log_prob_and_grad(x)[0], log_prob_and_grad, 2)
    init = np.zeros((2, 2))
    result = hm.sample(target, "hmc", compiled=True, step_size=0.5, n_steps=3, initial=init,
                       reject_on=OutsideSupport, **RUN)  # fmt: skip
    assert result.draws[..., 0].max() <= 1.0
    assert np.all(np.isfinite(result.draws))
    with pytest.raises(
        hm.ModelError, match=r"OutsideSupport: outside \(chain \d, position"
    ) as info:
        hm.sample(target, "hmc", compiled=True, step_size=0.5, n_steps=3, initial=init, **RUN)
    assert isinstance(info.value.__cause__, OutsideSupport)


def counting_refresh_kernel(ctx, q, p, grad, lp, eps):
    """A full refresh that counts the refreshes of its chain in its own per-chain state."""
    draw_momentum(ctx, q, p)
    ctx.aux[offset.refreshes_done] += 1.0
    ctx.stats[column.refreshes_done] = ctx.aux[offset.refreshes_done]


class CountingRefresh(hm.FullRefresh):
    """Per-chain state with an initial value: the count starts at ``start``."""

    def __init__(self, start):
        self.start = float(start)

    def stats(self):
        return (("refreshes_done", "float64"),)

    def compiled(self, dim):
        return PartKernels(
            {"refresh": counting_refresh_kernel},
            params={"flip_on_reject": False},
            stats=self.stats(),
            aux=(("refreshes_done", 1, self.start),),
        )


def test_per_chain_state_starts_at_its_initial_value_and_is_carried_on():
    """Not "zero means unset": the state starts at the part's value, once, and goes on from
    chunk to chunk (warm-up then sampling)."""
    target = numba_gaussian()
    sampler = _sampler(target, refresh=CountingRefresh(10))
    run = hm.sample(target, sampler, chains=2, warmup=3, draws=5, seed=1, progress=False)
    np.testing.assert_array_equal(run.stats["refreshes_done"], [[14, 15, 16, 17, 18]] * 2)


def jump_transition_kernel(ctx, q, p, grad, lp, eps):
    """The Metropolis transition, recording the squared distance the chain jumped."""
    start = ctx.scratch[4, : q.shape[0]]
    for i in range(q.shape[0]):
        start[i] = q[i]
    lp = metropolis_transition_kernel(ctx, q, p, grad, lp, eps)
    jump = 0.0
    for i in range(q.shape[0]):
        jump += (q[i] - start[i]) ** 2
    ctx.stats[column.squared_jump] = jump
    return lp


class JumpRecording(hm.RandomLength):
    """Both forms of a new transition, which records the squared jump of each iteration;
    the length policy (n_steps, jittered, and their trajectory_length kernel) is inherited
    unchanged, so its Python form is still the kernel's."""

    def transition(self, sampler, state, step_size, rngs):
        nxt, info = super().transition(sampler, state, step_size, rngs)
        info["squared_jump"] = np.sum((nxt.q - state.q) ** 2, axis=-1)
        return nxt, info

    def stats(self):
        return (*super().stats(), ("squared_jump", "float64"))

    def compiled(self, dim):
        kernels = super().compiled(dim)
        kernels.functions["transition"] = jump_transition_kernel
        kernels.stats = self.stats()
        kernels.scratch_rows = 5
        return kernels


def test_an_inherited_method_whose_kernel_is_not_replaced_has_its_python_form():
    """Issue 48: only a method whose kernel the part replaced is stale; n_steps and jittered
    pair with the trajectory_length kernel, which JumpRecording keeps, so compiled=False
    runs its Python form without do-nothing overrides."""
    trajectory = JumpRecording(5, step_size_jitter=0.2)
    assert python_form_missing(trajectory) is None
    target = numba_gaussian()
    sampler = _sampler(target, trajectory=trajectory)
    assert kernel_only_parts(sampler) == []
    result = hm.sample(target, sampler, compiled=False, **RUN)
    assert result.attrs["compiled"] is False
    jumps = np.sum(np.diff(result.draws, axis=1) ** 2, axis=-1)
    np.testing.assert_allclose(result.stats["squared_jump"][:, 1:], jumps, rtol=1e-12)
    assert len(np.unique(result.stats["n_steps"])) > 1  # the inherited random lengths ran
    compiled = hm.sample(target, sampler, compiled=True, **RUN)
    np.testing.assert_allclose(compiled.draws, result.draws, rtol=0, atol=1e-9)
    np.testing.assert_allclose(compiled.stats["squared_jump"], result.stats["squared_jump"],
                               rtol=1e-9)  # fmt: skip
