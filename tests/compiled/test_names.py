"""Kernels read parameters, statistics columns and auxiliary offsets by name (issue 27):
what a name binds to, and that a name no part declares is an error naming the part and the
field when the plan is built, never a read out of bounds."""

from __future__ import annotations

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.compiled import plan_for
from hamiltonia.compiled.compose import KernelSignatureError, NameBindingError
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import column, draw_momentum, offset, own, part
from hamiltonia.refresh.momentum import PartialRefresh, partial_mix

RUN = {"chains": 2, "warmup": 0, "draws": 20, "seed": 3, "progress": False}


def _sampler(refresh, target="gaussian"):
    return hm.HamiltonianSampler(
        hamiltonian=hm.EuclideanHamiltonian(hm.targets.get(target)),
        integrator=hm.Leapfrog(),
        trajectory=hm.StaticLength(5),
        refresh=refresh,
        tuners=[],
        step_size=0.3,
    )


# -- kernels of test refreshes (module level: the composer reads their source)


def named_refresh_kernel(ctx, q, p, grad, lp, eps):
    """The partial refresh, reading its memory by name and the trajectory's length."""
    rho = own.memory
    u = np.empty(p.shape[0])
    draw_momentum(ctx, q, u)
    for i in range(p.shape[0]):
        p[i] = partial_mix(p[i], u[i], rho)
    ctx.stats[column.refresh_seen_steps] = part.trajectory.max_steps
    ctx.aux[offset.refresh_memo] = rho


def misspelt_refresh_kernel(ctx, q, p, grad, lp, eps):
    draw_momentum(ctx, q, p)
    p[0] *= own.memroy


def other_part_kernel(ctx, q, p, grad, lp, eps):
    draw_momentum(ctx, q, p)
    p[0] *= part.trajectory.no_such_length


def unknown_column_kernel(ctx, q, p, grad, lp, eps):
    draw_momentum(ctx, q, p)
    ctx.stats[column.no_such_statistic] = 1.0


def _scale_without_params(p):
    p[0] *= own.memory


def helper_without_params_kernel(ctx, q, p, grad, lp, eps):
    draw_momentum(ctx, q, p)
    _scale_without_params(p)


def old_style_refresh_kernel(rng, q, p, grad, lp, eps, aux, stats, PF, PI, logp, fdata, idata):
    """A kernel of the positional convention before the kernel context."""
    draw_momentum(rng, q, p, aux, PF, PI)


class NamedRefresh(PartialRefresh):
    """A partial refresh whose kernel is chosen by the test."""

    kernel = staticmethod(named_refresh_kernel)

    def __init__(self, rho, params=None):
        super().__init__(rho)
        self.params = params

    def stats(self):
        return (("refresh_seen_steps", "int64"),)

    def counted(self):
        return {}

    def compiled(self, dim):
        params = {"memory": self.rho, "flip_on_reject": True}
        if self.params is not None:
            params = self.params
        return PartKernels(
            {"refresh": type(self).kernel},
            params=params,
            stats=self.stats(),
            workspace=(("refresh_memo", 1),),
        )


def _with_kernel(kernel, **kwargs):
    cls = type("Refresh", (NamedRefresh,), {"kernel": staticmethod(kernel)})
    return cls(0.5, **kwargs)


def test_a_kernel_reads_its_own_and_other_parts_values_by_name():
    refresh = NamedRefresh(0.5)
    sampler = _sampler(refresh)
    layout = plan_for(sampler).layout()
    assert layout.param("refresh", "memory") == 0.5
    assert layout.param("trajectory", "max_steps") == 5
    assert layout.param("refresh", "flip_on_reject") == 1
    # The draws are those of the built-in partial refresh, whose kernel reads rho by name.
    first, second = _sampler(NamedRefresh(0.5)), _sampler(PartialRefresh(0.5))
    named = hm.sample(first.target, first, compiled=True, **RUN)
    builtin = hm.sample(second.target, second, compiled=True, **RUN)
    np.testing.assert_array_equal(named.draws, builtin.draws)


@pytest.mark.parametrize(
    "kernel, words",
    [
        (misspelt_refresh_kernel, ["own.memroy", "refresh Refresh", "memory"]),
        (other_part_kernel, ["part.trajectory.no_such_length", "trajectory StaticLength"]),
        (unknown_column_kernel, ["column.no_such_statistic", "statistic"]),
        (helper_without_params_kernel, ["_scale_without_params", "ctx"]),
    ],
    ids=["own", "part", "column", "helper"],
)
def test_a_name_no_part_declares_is_an_error_naming_the_part_and_the_field(kernel, words):
    """Whatever the ``compiled`` option: a kernel that reads a name no part declares is the
    part's bug, shown when the plan is built, not a fallback to the NumPy path."""
    sampler = _sampler(_with_kernel(kernel))
    with pytest.raises(NameBindingError) as info:
        plan_for(sampler)
    for word in words:
        assert word in str(info.value)
    with pytest.raises(NameBindingError):
        hm.sample(sampler.target, sampler, **RUN)


@pytest.mark.parametrize(
    "params, words",
    [
        ({"memory": "0.5", "flip_on_reject": 1}, ["refresh Refresh", "'memory'", "str"]),
        ({"memory": None, "flip_on_reject": 1}, ["refresh Refresh", "'memory'"]),
        ({"memory": np.array(["a"]), "flip_on_reject": 1}, ["'memory'", "not of numbers"]),
        ({"not an identifier": 1.0}, ["not an identifier"]),
    ],
)
def test_a_parameter_of_the_wrong_type_is_an_error_naming_the_part_and_the_field(params, words):
    sampler = _sampler(_with_kernel(named_refresh_kernel, params=params))
    with pytest.raises(TypeError) as info:
        plan_for(sampler)
    for word in words:
        assert word in str(info.value)


def test_a_name_read_outside_a_composition_says_so():
    with pytest.raises(RuntimeError, match="only inside a compiled composition"):
        _ = own.rho
    with pytest.raises(RuntimeError, match="only inside a compiled composition"):
        _ = column.lp


def test_a_kernel_of_the_old_signature_is_refused_naming_the_part_role_and_signature():
    """A kernel that still takes ``aux, PF, PI, ...`` is the part's bug, shown when the plan
    is built with the signature to write, not a fallback to the NumPy path."""
    sampler = _sampler(_with_kernel(old_style_refresh_kernel))
    with pytest.raises(KernelSignatureError) as info:
        plan_for(sampler)
    message = str(info.value)
    for word in [
        "refresh Refresh",
        "'refresh'",
        "old_style_refresh_kernel(ctx, q, p, grad, lp, eps)",
    ]:
        assert word in message
    with pytest.raises(KernelSignatureError):
        hm.sample(sampler.target, sampler, **RUN)
