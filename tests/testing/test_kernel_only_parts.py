"""The test kit with parts written only as kernels (issue 48): :func:`check_invariance` starts
the chains through the Hamiltonian's Python methods (its auxiliary variables, then the
momentum), which call the kernels of a Hamiltonian that has no Python form."""

from __future__ import annotations

import pytest

import hamiltonia as hm
from hamiltonia.runner.loop import kernel_only_parts
from hamiltonia.testing import check_invariance
from tests.hamiltonians.kernel_only import (
    KernelOnlyHamiltonian,
    RandomScaleHamiltonian,
    gaussian_target,
)


@pytest.mark.parametrize(
    ("hamiltonian", "refresh"),
    [
        (KernelOnlyHamiltonian, hm.FullRefresh()),
        (RandomScaleHamiltonian, hm.FullRefresh()),
        (RandomScaleHamiltonian, hm.PartialRefresh(0.7)),
    ],
    ids=["fixed-mass", "random-scale", "random-scale-partial-refresh"],
)
def test_check_invariance_runs_a_hamiltonian_written_only_as_a_kernel(hamiltonian, refresh):
    """The chains start at exact draws with the momentum (and the random scale) drawn by the
    kernels from their stationary distribution, run in the compiled chain, and stay exact
    draws (with a partial refresh, the momentum carried over is the kernels' too)."""
    target = gaussian_target()
    sampler = hm.HamiltonianSampler(hamiltonian(target), hm.StaticLength(4), refresh=refresh,
                                    step_size=0.3)  # fmt: skip
    assert kernel_only_parts(sampler) == [
        f"hamiltonian {hamiltonian.__name__} ({hamiltonian.__name__}.kinetic)"
    ]
    report = check_invariance(target, sampler, n_chains=1000)
    assert report.passed
    assert 0.5 < report.acceptance_rate < 1.0
