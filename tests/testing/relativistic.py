"""A non-Gaussian kinetic energy for the tests: the relativistic one, with exact momentum draws.

The relativistic kinetic energy (Lu, Perrone, Hasenclever, Teh and Vollmer 2017,
*Relativistic Monte Carlo*) of a particle of mass :math:`m` and speed of light :math:`c`,

.. math::

    K(p) = m c^2 \\sqrt{\\frac{p^\\top p}{m^2 c^2} + 1}, \\qquad
    \\frac{\\partial K}{\\partial p} = \\frac{p}{m \\sqrt{p^\\top p / (m^2 c^2) + 1}},

is not quadratic: its momentum distribution :math:`\\propto e^{-K(p)}` has exponential
tails, and the speed :math:`|\\partial K / \\partial p|` stays below :math:`c`. It is what
the tests need of a kinetic energy that is not :math:`\\tfrac12 p^\\top M^{-1} p`: a
partial refresh :math:`\\rho p + \\sqrt{1-\\rho^2}\\,u` does not keep its momentum
distribution, and a splitting tuned for a quadratic kinetic energy reaches its order only
at finer steps.

Exact draws: :math:`p = r\\,\\omega`, :math:`\\omega` uniform on the sphere, and the radius
of density :math:`\\propto r^{d-1} e^{-K(r)}` by rejection from
:math:`\\operatorname{Gamma}(d, 1/c)`, of density :math:`\\propto r^{d-1} e^{-c r}`:
:math:`K(r) = \\sqrt{m^2 c^4 + c^2 r^2} \\ge c r`, so a proposal is accepted with
probability :math:`e^{c r - K(r)} \\in [e^{-m c^2}, 1]`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hamiltonia.hamiltonians import Hamiltonian

#: Proposals each chain draws at once in :meth:`RelativisticHamiltonian.sample_momentum`.
BATCH = 4


class RelativisticHamiltonian(Hamiltonian):
    """:math:`H(q, p) = -\\log\\pi(q) + m c^2 \\sqrt{p^\\top p / (m^2 c^2) + 1}` (see the
    module docstring); Python methods only, so it runs on the NumPy path.

    It declares nothing about its momentum: the framework must find out by itself that
    its momentum is not Gaussian.

    Parameters
    ----------
    target : Target
    mass, light_speed : float > 0
        :math:`m` and :math:`c` (default 1 and 1).
    """

    def __init__(self, target, mass: float = 1.0, light_speed: float = 1.0):
        super().__init__(target)
        self.mass = float(mass)
        self.light_speed = float(light_speed)

    def _gamma(self, p: np.ndarray) -> np.ndarray:
        """:math:`\\sqrt{p^\\top p / (m^2 c^2) + 1}` per chain."""
        mc = self.mass * self.light_speed
        return np.sqrt(np.sum(p * p, axis=-1) / (mc * mc) + 1.0)

    def kinetic(self, p, aux=None):
        return self.mass * self.light_speed**2 * self._gamma(p)

    def velocity(self, p, aux=None):
        return p / (self.mass * self._gamma(p)[..., None])

    def sample_momentum(self, rngs: Sequence[np.random.Generator], aux=None) -> np.ndarray:
        m, c, d = self.mass, self.light_speed, self.dim
        out = np.empty((len(rngs), d))
        for row, rng in enumerate(rngs):
            while True:
                r = rng.gamma(d, 1.0 / c, size=BATCH)
                accept = rng.random(BATCH) < np.exp(c * r - np.sqrt(m * m * c**4 + c * c * r * r))
                if accept.any():
                    radius = r[np.argmax(accept)]
                    break
            direction = rng.standard_normal(d)
            out[row] = radius * direction / np.linalg.norm(direction)
        return out

    def __repr__(self):
        return f"RelativisticHamiltonian({self.target!r}, mass={self.mass}, c={self.light_speed})"
