"""A Hamiltonian written only as a kernel (issue 48): the Python entries into it (the
step-size search, dual averaging, a test kit's start, momentum draws) call its kernels one
chain at a time, with the draws of the compiled chain; where they cannot, the error names
the part and the method, before any sampling."""

from __future__ import annotations

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import Metric
from hamiltonia.hamiltonians.base import position_flow_kernel, separable_energy_kernel
from tests.hamiltonians.kernel_only import (
    INVERSE_MASS,
    KernelOnlyHamiltonian,
    KernelOnlyMetric,
    RandomScaleHamiltonian,
    diagonal_mass_kernels,
    gaussian_target,
    generators,
)


@pytest.fixture(scope="module")
def target():
    return gaussian_target()


def _reference(target):
    """The same kinetic energy, built in with both forms."""
    return hm.EuclideanHamiltonian(target, metric=INVERSE_MASS)


@pytest.mark.parametrize("kind", ["hamiltonian", "metric"])
def test_the_python_methods_call_the_kernels(target, kind):
    """Momentum draws are the compiled chain's, from each chain's own generator (which
    they advance); velocity, kinetic energy and energy are the kernels' values."""
    if kind == "hamiltonian":
        ham = KernelOnlyHamiltonian(target)
    else:
        ham = hm.EuclideanHamiltonian(target, metric=KernelOnlyMetric())
    ref = _reference(target)
    mine, theirs = generators(5, 3), generators(5, 3)
    for _ in range(2):  # the second draws show that the generators moved on alike
        np.testing.assert_array_equal(ham.sample_momentum(mine), ref.sample_momentum(theirs))
    rng = np.random.default_rng(0)
    state = ham.evaluate(rng.normal(size=(5, 3)), rng.normal(size=(5, 3)))
    np.testing.assert_allclose(ham.velocity(state.p), ref.velocity(state.p), rtol=1e-15)
    np.testing.assert_allclose(ham.kinetic(state.p), ref.kinetic(state.p), rtol=1e-14)
    np.testing.assert_allclose(ham.energy(state, 0.1), ref.energy(state, 0.1), rtol=1e-14)


def test_update_auxiliary_calls_the_kernel(target):
    """The auxiliary variable starts at its declared value (0) and is redrawn by the kernel,
    which rescales the momentum; the momenta then follow the new scale."""
    ham = RandomScaleHamiltonian(target, volatility=0.5)
    state = ham.evaluate(np.zeros((4, 3)), np.ones((4, 3)))
    new = ham.update_auxiliary(state, generators(4, 7))
    log_scale = 0.5 * np.array([rng.standard_normal() for rng in generators(4, 7)])
    np.testing.assert_allclose(new.aux["log_scale"].ravel(), log_scale, rtol=1e-15)
    np.testing.assert_allclose(new.p, np.exp(0.5 * log_scale)[:, None] * state.p, rtol=1e-15)
    assert "log_scale" not in state.aux  # the state given is left alone
    drawn = ham.sample_momentum(generators(4, 9), new.aux)
    z = np.stack([rng.standard_normal(3) for rng in generators(4, 9)])
    np.testing.assert_allclose(drawn, z * np.exp(0.5 * log_scale)[:, None], rtol=1e-15)


@pytest.mark.parametrize("kind", ["hamiltonian", "metric"])
def test_dual_averaging_tunes_a_part_written_only_as_a_kernel(target, kind):
    """The step-size search of dual averaging calls the Python methods: they run the kernels,
    and the run gives the draws of the built-in part (to rounding)."""
    run = {"chains": 2, "warmup": 40, "draws": 20, "seed": 5, "progress": False}

    def sampler(ham):
        return hm.HamiltonianSampler(ham, hm.StaticLength(4), tuners=[hm.DualAveraging(0.8)])

    if kind == "hamiltonian":
        ham = KernelOnlyHamiltonian(target)
    else:
        ham = hm.EuclideanHamiltonian(target, metric=KernelOnlyMetric())
    result = hm.sample(target, sampler(ham), **run)
    assert result.attrs["compiled"] is True
    reference = hm.sample(target, sampler(_reference(target)), **run)
    np.testing.assert_allclose(result.stats["step_size"], reference.stats["step_size"],
                               rtol=1e-12)  # fmt: skip
    np.testing.assert_allclose(result.draws, reference.draws, rtol=0, atol=1e-9)


class NoForm(hm.Hamiltonian):
    """Neither Python methods nor kernels."""


def test_a_hamiltonian_with_neither_form_is_refused_when_the_sampler_is_built(target):
    with pytest.raises(NotImplementedError, match=r"hamiltonian NoForm has neither a Python "
                       r"kinetic nor a kernel.*NoForm\.kinetic"):  # fmt: skip
        hm.HamiltonianSampler(NoForm(target), hm.StaticLength(3), step_size=0.5)
    with pytest.raises(NotImplementedError, match=r"NoForm\.sample_momentum"):
        NoForm(target).sample_momentum(generators(2))
    # A metric with neither form: named at its first draw (a metric is no part of a plan).
    ham = hm.EuclideanHamiltonian(target, metric=NoFormMetric())
    with pytest.raises(NotImplementedError, match=r"metric NoFormMetric has neither a Python "
                       r"from_standard nor a kernel.*NoFormMetric\.from_standard"):  # fmt: skip
        ham.sample_momentum(generators(2))


class NoFormMetric(Metric):
    """Neither Python methods nor kernels."""


class WithWorkspace(KernelOnlyHamiltonian):
    """Kernels that keep a workspace, which only the compiled chain derives."""

    def compiled(self, dim):
        kernels = super().compiled(dim)
        kernels.workspace = (("square_root", dim),)
        return kernels


class WithoutKinetic(hm.Hamiltonian):
    """Kernels that fill no ``kinetic`` role (the energy kernel would need it)."""

    def compiled(self, dim):
        kernels = diagonal_mass_kernels(INVERSE_MASS)
        del kernels.functions["kinetic"]
        kernels.functions.update(position_flow=position_flow_kernel, energy=separable_energy_kernel)
        return kernels


def test_a_kernel_that_cannot_stand_in_is_named_with_the_method(target):
    """No empty NotImplementedError: the part, the method and the reason, before a kernel
    is composed."""
    with pytest.raises(NotImplementedError, match=r"hamiltonian WithWorkspace has no Python "
                       r"sample_momentum.*workspace 'square_root'"):  # fmt: skip
        WithWorkspace(target).sample_momentum(generators(2))
    with pytest.raises(NotImplementedError, match=r"hamiltonian WithoutKinetic has no Python "
                       r"kinetic.*no 'kinetic' kernel.*WithoutKinetic\.kinetic"):  # fmt: skip
        WithoutKinetic(target).kinetic(np.ones((2, 3)))


def test_the_built_in_parts_keep_their_python_forms(target, monkeypatch):
    """The fallback is for the base class's methods only: a part with Python methods never
    composes a kernel for them (its draws stay bit-identical)."""
    from hamiltonia.compiled import python_calls

    def refuse(*args, **kwargs):
        raise AssertionError("a kernel was called from Python")

    monkeypatch.setattr(python_calls, "kernel_form", refuse)
    ham = _reference(target)
    state = ham.evaluate(np.zeros((2, 3)), np.ones((2, 3)))
    ham.sample_momentum(generators(2))
    ham.energy(state, 0.1)
    ham.update_auxiliary(state, generators(2))
    assert ham.inverse_mass_diagonal(state.aux) is None


def test_kernels_without_a_momentum_draw_name_it(target):
    class NoDraw(KernelOnlyHamiltonian):
        def compiled(self, dim):
            kernels = super().compiled(dim)
            del kernels.functions["draw_momentum"]
            return kernels

    with pytest.raises(NotImplementedError, match=r"NoDraw has no Python sample_momentum.*"
                       r"no 'draw_momentum' kernel"):  # fmt: skip
        NoDraw(target).sample_momentum(generators(2))


class StaleDraws(hm.EuclideanHamiltonian):
    """Replaces its parent's momentum kernel and inherits the parent's Python draws."""

    def compiled(self, dim):
        kernels = super().compiled(dim)
        kernels.functions["draw_momentum"] = diagonal_mass_kernels(INVERSE_MASS).functions[
            "draw_momentum"
        ]
        kernels.params["sqrt_mass"] = 1.0 / np.sqrt(INVERSE_MASS)
        return kernels


def test_a_stale_inherited_python_form_is_refused_by_the_step_size_search(target):
    """Not a base class's method, which calls the kernel, but a parent's paired with the
    kernel this Hamiltonian replaced: the search would tune for the parent's momenta."""
    from hamiltonia.compiled.parts import python_form_missing

    ham = StaleDraws(target)
    assert python_form_missing(ham) == "StaleDraws.sample_momentum"
    sampler = hm.HamiltonianSampler(ham, hm.StaticLength(3), tuners=[hm.DualAveraging()])
    with pytest.raises(NotImplementedError, match=r"hamiltonian StaleDraws\.sample_momentum "
                       r"is inherited.*write StaleDraws\.sample_momentum"):  # fmt: skip
        hm.sample(target, sampler, chains=2, warmup=10, draws=5, seed=1, progress=False)
