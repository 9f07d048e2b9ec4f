"""What the plan refuses (issue 48): a tuner that hands out no kernel and has no chunk update
would never adapt on the compiled path; the plan names it and what to implement, and the run
falls back to the NumPy path, where its ``update`` runs."""

from __future__ import annotations

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.compiled import NotCompilable, plan_for
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.runner.loop import FallbackWarning

RUN = {"chains": 2, "warmup": 12, "draws": 5, "seed": 2, "progress": False}


class ShrinkingStep(hm.Tuner):
    """Adapts per iteration only (``update``), and says it has a compiled counterpart with
    nothing in it."""

    def __init__(self):
        self.calls = 0

    def compiled(self, dim):
        return PartKernels()

    def update(self, sampler, chain, info, iteration):
        self.calls += 1
        chain.step_size = 0.9 * np.asarray(chain.step_size)


class ShrinkingStepByChunks(ShrinkingStep):
    """The same, with a chunk update: it adapts on the compiled path too."""

    def update_chunk(self, sampler, chain, positions, first_iteration):
        for _ in range(positions.shape[1]):
            self.update(sampler, chain, {}, first_iteration)


def _sampler(tuner):
    target = hm.targets.get("gaussian", dim=2)
    return hm.HamiltonianSampler(hm.EuclideanHamiltonian(target), hm.StaticLength(3),
                                 tuners=[tuner], step_size=0.5)  # fmt: skip


def test_a_tuner_with_empty_kernels_and_no_chunk_update_is_refused_by_the_plan():
    with pytest.raises(NotCompilable, match=r"tuner ShrinkingStep hands out no kernel.*"
                       r"never adapt.*update_chunk"):  # fmt: skip
        plan_for(_sampler(ShrinkingStep()))
    plan_for(_sampler(ShrinkingStepByChunks()))  # a chunk update is what such a tuner needs


def test_such_a_tuner_runs_on_the_numpy_path_with_a_warning_and_adapts():
    tuner = ShrinkingStep()
    sampler = _sampler(tuner)
    with pytest.warns(FallbackWarning, match=r"tuner ShrinkingStep hands out no kernel"):
        result = hm.sample(sampler.target, sampler, **RUN)
    assert result.attrs["compiled"] is False
    assert tuner.calls == RUN["warmup"]
    np.testing.assert_allclose(result.stats["step_size"], 0.5 * 0.9 ** RUN["warmup"])
    with pytest.raises(ValueError, match=r"compiled=True but tuner ShrinkingStep"):
        hm.sample(sampler.target, sampler, compiled=True, **RUN)
