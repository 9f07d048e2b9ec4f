"""Several tuners adapt inside the chain kernel (issue 48, item 2): each hands out an
``adapt`` kernel that sets a per-chain parameter another part declares in ``aux`` (here a
trajectory's number of steps), in the order of the sampler's tuners, after the step size's
``tune``; what they set is the chains' state, saved with them, so a run resumes exactly.

The parts are written as a plugin writes them, each a kernel of a few lines."""

import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.compiled.parts import NotCompilable, PartKernels
from hamiltonia.compiled.plan import plan_for
from hamiltonia.compiled.roles import offset, own
from hamiltonia.trajectories import MetropolisTrajectory
from hamiltonia.tuners import DualAveraging, Tuner
from tests.interrupting import interrupted


def per_chain_length_kernel(ctx, eps):
    return int(ctx.aux[offset.steps]), eps


class PerChainLength(MetropolisTrajectory):
    """The Metropolis transition over a number of steps held per chain, in ``aux``."""

    def __init__(self, steps: int = 3):
        super().__init__(steps, steps)

    def compiled(self, dim):
        kernels = super().compiled(dim)
        kernels.functions["trajectory_length"] = per_chain_length_kernel
        kernels.aux = (("steps", 1, float(self.min_steps)),)
        return kernels


def fixed_time_kernel(ctx, eps):
    ctx.aux[offset.steps] = max(1.0, np.ceil(own.duration / eps[0]))


class FixedTime(Tuner):
    """Each chain's number of steps makes its trajectory last ``duration`` at its step size."""

    def __init__(self, duration: float = 1.5):
        self.duration = duration

    def compiled(self, dim):
        return PartKernels({"adapt": fixed_time_kernel}, params={"duration": self.duration})


def at_least_kernel(ctx, eps):
    ctx.aux[offset.steps] = max(ctx.aux[offset.steps], own.minimum)


class AtLeast(Tuner):
    """Then no fewer than ``minimum`` steps: a second adapter, after the first."""

    def __init__(self, minimum: int = 12):
        self.minimum = minimum

    def compiled(self, dim):
        return PartKernels({"adapt": at_least_kernel}, params={"minimum": float(self.minimum)})


RUN = dict(chains=3, warmup=60, draws=40, seed=7, progress=False)


def _sampler(*tuners):
    target = hm.targets.get("gaussian")
    return target, hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(target), PerChainLength(3), tuners=[DualAveraging(), *tuners]
    )


def test_two_adapters_set_each_chains_length_in_turn_after_the_step_size():
    target, sampler = _sampler(FixedTime(1.5), AtLeast(12))
    result = hm.sample(target, sampler, save_warmup=True, **RUN)
    assert result.attrs["compiled"] is True
    warm = result.warmup_stats
    eps, steps = np.asarray(warm["step_size"]), np.asarray(warm["n_steps"])
    # Iteration i + 1 runs the length the adapters set after iteration i's step size.
    expected = np.maximum(np.maximum(1.0, np.ceil(1.5 / eps[:, 1:])), 12)
    np.testing.assert_array_equal(steps[:, 1:], expected)
    assert np.all(steps[:, 0] == 3)  # the trajectory's initial value
    # Sampling keeps each chain's last length: the adapters run in warm-up only.
    sampled = np.asarray(result.stats["n_steps"])
    np.testing.assert_array_equal(sampled, np.broadcast_to(sampled[:, :1], sampled.shape))
    assert np.all(sampled >= 12)


def test_the_adapters_order_is_the_tuners():
    """AtLeast before FixedTime: FixedTime's length wins."""
    target, sampler = _sampler(AtLeast(12), FixedTime(0.5))
    result = hm.sample(target, sampler, save_warmup=True, **RUN)
    warm = result.warmup_stats
    eps, steps = np.asarray(warm["step_size"]), np.asarray(warm["n_steps"])
    np.testing.assert_array_equal(steps[:, 1:], np.maximum(1.0, np.ceil(0.5 / eps[:, 1:])))


def adapted_length_hmc(target, **options):
    """A recipe (resume rebuilds the sampler by name): HMC over per-chain lengths that two
    adapters set."""
    return hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(target), PerChainLength(3),
        tuners=[DualAveraging(), FixedTime(1.5), AtLeast(12)],
    )  # fmt: skip


@pytest.fixture
def registered():
    hm.samplers.register("adapted-length-hmc", adapted_length_hmc, overwrite=True)
    yield
    hm.samplers.registry._extra.pop("adapted-length-hmc", None)


def test_a_run_with_adapters_resumes_bit_for_bit(tmp_path, monkeypatch, registered):
    """The lengths the adapters set are the chains' state, saved with them."""
    from hamiltonia.runner import paths

    full = hm.sample("gaussian", "adapted-length-hmc", **RUN)
    path = tmp_path / "run.nc"
    # Chunks of 7 iterations, so that the run stops in sampling (chunking changes no draw).
    chunker = paths.Chunker
    monkeypatch.setattr(paths, "Chunker", lambda **_: chunker(first=7, largest=7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.InterruptedRunWarning)
        run = dict(output=path, checkpoint_seconds=0.0, **RUN)
        interrupted(monkeypatch, 2, lambda: hm.sample("gaussian", "adapted-length-hmc", **run))
    monkeypatch.undo()
    assert hm.load(path).n_draws == 14
    resumed = hm.resume(path, progress=False)
    assert resumed.attrs["complete"] is True
    np.testing.assert_array_equal(resumed.draws, full.draws)
    np.testing.assert_array_equal(resumed.stats["n_steps"], full.stats["n_steps"])


def test_more_adapters_than_slots_are_refused_naming_them():
    _, sampler = _sampler(*(FixedTime(1.0 + k) for k in range(4)))
    with pytest.raises(NotCompilable, match=r"more than 3 tuners adapt inside the kernel"):
        plan_for(sampler)


def test_a_tuner_kernel_for_another_role_is_refused():
    class Stray(Tuner):
        def compiled(self, dim):
            return PartKernels({"refresh": fixed_time_kernel})

    _, sampler = _sampler(Stray())
    with pytest.raises(NotCompilable, match=r"role 'refresh'.*'tune'.*'adapt'"):
        plan_for(sampler)


def test_an_adapter_written_only_as_a_kernel_has_no_numpy_path():
    """Refused before any work, naming the tuner's method that has no Python form."""
    target = hm.targets.get("gaussian")
    sampler = hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(target), hm.trajectories.StaticLength(3),
        tuners=[DualAveraging(), AtLeast(12)],
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"tuner AtLeast \(AtLeast\.update\)"):
        hm.sample(target, sampler, compiled=False, **RUN)
