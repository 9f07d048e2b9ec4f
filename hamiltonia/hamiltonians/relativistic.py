r"""The relativistic Hamiltonian of relativistic HMC, written once, as kernels.

Lu, Perrone, Hasenclever, Teh and Vollmer (2017), *Relativistic Monte Carlo* (AISTATS), give
the particle of mass :math:`m` the kinetic energy of special relativity, with a speed of
light :math:`c`:

.. math::

    K(p) = m c^2 \gamma(p), \qquad \gamma(p) = \sqrt{\frac{p^\top p}{m^2 c^2} + 1},
    \qquad \frac{\partial K}{\partial p} = \frac{p}{m \gamma(p)}.

The speed :math:`|\partial K / \partial p|` stays below :math:`c` however large the momentum,
so a large gradient cannot throw the position far in one step; as :math:`c \to \infty`,
:math:`K(p) - m c^2 \to p^\top p / (2m)`, the Gaussian kinetic energy of standard HMC. The
momentum :math:`\propto e^{-K(p)}` is not Gaussian (its tails are exponential), so a partial
refresh that keeps only a Gaussian is refused with it (:mod:`hamiltonia.refresh.contracts`).

The part is written only as kernels (``docs/design.rst``, "A part is written once"): the
roles ``draw_momentum``, ``velocity`` and ``kinetic`` here, the position flow and the
separable energy :math:`-\log\pi(q) + K(p)` from :mod:`hamiltonia.hamiltonians.base`. It runs
on the compiled path with any target; the base class's Python methods call these kernels
where Python asks for them (the step-size search, :mod:`hamiltonia.testing`).
``docs/tutorial_new_hamiltonian.rst`` reads it line by line.
"""

from __future__ import annotations

import math

from hamiltonia._validation import check_positive
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import own
from hamiltonia.hamiltonians.base import Hamiltonian, position_flow_kernel, separable_energy_kernel

__all__ = ["RelativisticHamiltonian", "relativistic_hamiltonian"]


def lorentz_factor(p, mass, light_speed):
    r""":math:`\gamma(p) = \sqrt{p^\top p / (m c)^2 + 1}`."""
    s = 0.0
    for i in range(p.shape[0]):
        s += p[i] * p[i]
    return math.sqrt(s / (mass * light_speed) ** 2 + 1.0)


def relativistic_velocity_kernel(ctx, q, p, out):
    r""":math:`\partial K/\partial p = p / (m \gamma(p))`: the ``velocity`` role."""
    scale = 1.0 / (own.mass * lorentz_factor(p, own.mass, own.light_speed))
    for i in range(p.shape[0]):
        out[i] = scale * p[i]
    return out


def relativistic_kinetic_kernel(ctx, q, p, v):
    r""":math:`K(p) = m c^2 \gamma(p)`: the ``kinetic`` role."""
    return own.mass * own.light_speed**2 * lorentz_factor(p, own.mass, own.light_speed)


def relativistic_draw_kernel(ctx, q, p):
    r"""An exact draw :math:`p \propto e^{-K(p)}`: the ``draw_momentum`` role.

    :math:`p = r\,\omega`, :math:`\omega` uniform on the sphere, and the radius of density
    :math:`\propto r^{d-1} e^{-K(r)}`, :math:`K(r) = \sqrt{m^2 c^4 + c^2 r^2}`, by rejection:
    :math:`K` is convex, so it lies above its tangent :math:`s r + k` at any :math:`r_0`, and
    a proposal :math:`r \sim \operatorname{Gamma}(d, 1/s)`, of density
    :math:`\propto r^{d-1} e^{-s r}`, is accepted with probability
    :math:`e^{s r + k - K(r)} \le 1`. The tangent at the mode :math:`r_0` of
    :math:`r^d e^{-K(r)}`, where :math:`d K(r_0) = c^2 r_0^2`:

    .. math::

        c^2 r_0^2 = x = \tfrac{d}{2}\Bigl(d + \sqrt{d^2 + 4 m^2 c^4}\Bigr), \qquad
        s = K'(r_0) = \frac{c d}{\sqrt x}, \qquad k = K(r_0) - s r_0 = \frac{d\, m^2 c^4}{x},

    accepts more than two proposals in three whatever :math:`m`, :math:`c` and :math:`d`.
    """
    d, c, mc2 = p.shape[0], own.light_speed, own.mass * own.light_speed**2
    x = 0.5 * d * (d + math.sqrt(d * d + 4.0 * mc2 * mc2))
    slope, floor = c * d / math.sqrt(x), d * mc2 * mc2 / x
    r = ctx.rng.gamma(d, 1.0 / slope)
    while ctx.rng.random() >= math.exp(slope * r + floor - math.sqrt(mc2 * mc2 + c * c * r * r)):
        r = ctx.rng.gamma(d, 1.0 / slope)
    norm = 0.0
    for i in range(d):
        p[i] = ctx.rng.standard_normal()
        norm += p[i] * p[i]
    scale = r / math.sqrt(norm)
    for i in range(d):
        p[i] *= scale


class RelativisticHamiltonian(Hamiltonian):
    r""":math:`H(q, p) = -\log\pi(q) + m c^2 \sqrt{p^\top p / (m^2 c^2) + 1}`: relativistic
    HMC (Lu et al. 2017), written only as kernels (see the module docstring).

    Its momentum draws are exact (:func:`relativistic_draw_kernel`). The paper's proposal,
    :math:`\operatorname{Gamma}(d, 1/c)` accepted with probability :math:`e^{c r - K(r)}`, is
    the tangent at infinity and as exact, but accepts about :math:`e^{-m c^2}` of its
    proposals where :math:`m c^2 \gg d` (:math:`6 \times 10^{-40}` at :math:`m = 1`,
    :math:`c = 10`, :math:`d = 5`); the tangent at the mode accepts more than two in three.

    Parameters
    ----------
    target : Target
        The distribution of :math:`q`.
    mass : float > 0
        The rest mass :math:`m` (default 1).
    light_speed : float > 0
        The speed of light :math:`c` (default 1), the bound on the speed
        :math:`|\partial K / \partial p|`.

    Raises
    ------
    ValueError
        Naming ``mass`` or ``light_speed`` where it is not a finite number > 0.

    References
    ----------
    Lu, Perrone, Hasenclever, Teh and Vollmer (2017), *Relativistic Monte Carlo*, AISTATS,
    PMLR 54:1236-1245.
    """

    #: Not Gaussian: the momentum vouches for nothing a refresh could require.
    provides = frozenset()

    def __init__(self, target, mass: float = 1.0, light_speed: float = 1.0):
        super().__init__(target)
        self.mass = check_positive(mass, "RelativisticHamiltonian: mass")
        self.light_speed = check_positive(light_speed, "RelativisticHamiltonian: light_speed")

    def compiled(self, dim):
        functions = {
            "draw_momentum": relativistic_draw_kernel,
            "velocity": relativistic_velocity_kernel,
            "kinetic": relativistic_kinetic_kernel,
            "position_flow": position_flow_kernel,  # q += h velocity(p)
            "energy": separable_energy_kernel,  # -log pi(q) + kinetic(p)
        }
        return PartKernels(functions, params={"mass": self.mass, "light_speed": self.light_speed})

    def __repr__(self):
        return (
            f"RelativisticHamiltonian({self.target!r}, mass={self.mass}, "
            f"light_speed={self.light_speed})"
        )


def relativistic_hamiltonian(target, mass: float = 1.0, light_speed: float = 1.0):
    r"""The relativistic kinetic energy of Lu et al. (2017), whose speed stays below the speed
    of light: relativistic HMC.

    ``mass`` and ``light_speed``: :math:`m` and :math:`c`, finite and above 0 (default 1 and
    1; :class:`~hamiltonia.hamiltonians.relativistic.RelativisticHamiltonian`). It takes no
    ``metric``: its kinetic energy is not :math:`\tfrac12 p^\top M^{-1} p` (with ``nuts``,
    whose default metric is an adapted diagonal one, give ``metric="identity"``).
    """
    return RelativisticHamiltonian(target, mass, light_speed)
