"""Plugin-style Hamiltonians and a metric written only as kernels (``compiled()`` and no
Python maths, as ``docs/design.rst`` invites), shared by the tests of their Python
fallbacks (``tests/hamiltonians/test_base.py``) and of the test kit
(``tests/testing/test_kernel_only_parts.py``).

The kernels must live in a file: the composer copies them from their source.
"""

from __future__ import annotations

import math

import numpy as np

import hamiltonia as hm
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import offset, own
from hamiltonia.hamiltonians import Metric
from hamiltonia.hamiltonians.base import position_flow_kernel, separable_energy_kernel

#: The diagonal inverse mass of the fixed-mass parts, and the scales of their target.
INVERSE_MASS = np.array([0.5, 2.0, 1.0])
SCALES = np.array([1.0, 2.0, 0.5])


def gaussian_target():
    """A diagonal Gaussian with a numba kernel, exact moments and exact draws."""
    from hamiltonia.targets.gaussian import DiagonalGaussian

    return DiagonalGaussian(3, scales=SCALES)


# -- a fixed diagonal mass: p ~ N(0, M), K = p^T M^-1 p / 2


def scaled_draw_kernel(ctx, q, p):
    sqrt_mass = own.sqrt_mass
    for i in range(p.shape[0]):
        p[i] = ctx.rng.standard_normal() * sqrt_mass[i]


def scaled_velocity_kernel(ctx, q, p, out):
    inverse_mass = own.inverse_mass
    for i in range(p.shape[0]):
        out[i] = inverse_mass[i] * p[i]
    return out


def half_dot_kernel(ctx, q, p, v):
    """:math:`p^\\top v / 2`, the Gaussian kinetic energy given ``v = velocity(p)``."""
    s = 0.0
    for i in range(p.shape[0]):
        s += p[i] * v[i]
    return 0.5 * s


def diagonal_mass_kernels(inverse_mass: np.ndarray) -> PartKernels:
    return PartKernels(
        {
            "draw_momentum": scaled_draw_kernel,
            "velocity": scaled_velocity_kernel,
            "kinetic": half_dot_kernel,
        },
        params={"inverse_mass": inverse_mass, "sqrt_mass": 1.0 / np.sqrt(inverse_mass)},
    )


class KernelOnlyHamiltonian(hm.Hamiltonian):
    """A diagonal Gaussian kinetic energy written only as kernels."""

    provides = frozenset({"gaussian-momentum"})  # a Gaussian momentum given the position

    def __init__(self, target, inverse_mass=INVERSE_MASS):
        super().__init__(target)
        self.inverse_mass = np.asarray(inverse_mass, dtype=float)

    def compiled(self, dim):
        kernels = diagonal_mass_kernels(self.inverse_mass)
        kernels.functions.update(position_flow=position_flow_kernel, energy=separable_energy_kernel)
        return kernels


class KernelOnlyMetric(Metric):
    """The same kinetic energy as a metric of the Euclidean Hamiltonian, written only as
    kernels (the Euclidean Hamiltonian adds the position flow and the energy, so the
    composition is :class:`KernelOnlyHamiltonian`'s)."""

    form = "diagonal"

    def __init__(self, inverse_mass=INVERSE_MASS):
        self.inverse_mass = np.asarray(inverse_mass, dtype=float)

    def compiled(self, dim):
        return diagonal_mass_kernels(self.inverse_mass)


# -- a per-chain random scale of the mass: M = s I, log s ~ N(0, volatility^2), redrawn at
#    every iteration by a Gibbs step that keeps z = M^-1/2 p (as RandomMassHamiltonian)


def scale_update_kernel(ctx, q, p):
    at = offset.log_scale
    new = own.volatility * ctx.rng.standard_normal()
    factor = math.exp(0.5 * (new - ctx.aux[at]))
    for i in range(p.shape[0]):
        p[i] *= factor
    ctx.aux[at] = new


def scale_draw_kernel(ctx, q, p):
    scale = math.exp(0.5 * ctx.aux[offset.log_scale])
    for i in range(p.shape[0]):
        p[i] = ctx.rng.standard_normal() * scale


def scale_velocity_kernel(ctx, q, p, out):
    inverse = math.exp(-ctx.aux[offset.log_scale])
    for i in range(p.shape[0]):
        out[i] = inverse * p[i]
    return out


class RandomScaleHamiltonian(hm.Hamiltonian):
    """A Gaussian kinetic energy with a per-chain random scale of the mass, written only as
    kernels: its auxiliary variable ``log_scale`` is drawn by its ``update_auxiliary``
    kernel."""

    provides = frozenset({"gaussian-momentum"})  # a Gaussian momentum given the position

    def __init__(self, target, volatility=0.5):
        super().__init__(target)
        self.volatility = float(volatility)

    def compiled(self, dim):
        return PartKernels(
            {
                "update_auxiliary": scale_update_kernel,
                "draw_momentum": scale_draw_kernel,
                "velocity": scale_velocity_kernel,
                "position_flow": position_flow_kernel,
                "kinetic": half_dot_kernel,
                "energy": separable_energy_kernel,
            },
            params={"volatility": self.volatility},
            aux=(("log_scale", 1),),
        )


def generators(n: int, seed: int = 0) -> list[np.random.Generator]:
    return [np.random.default_rng(seed + c) for c in range(n)]
