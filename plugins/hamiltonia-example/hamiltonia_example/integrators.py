"""The ``yoshida4`` integrator: Yoshida's fourth-order triple jump, as a coefficient table."""

from __future__ import annotations

from hamiltonia.integrators import Splitting

__all__ = ["Yoshida4"]

#: The triple jump's weights: :math:`w_1 = 1/(2 - 2^{1/3})`, :math:`w_0 = 1 - 2w_1`.
_W1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
_W0 = 1.0 - 2.0 * _W1


class Yoshida4(Splitting):
    """Yoshida's fourth-order triple jump: three leapfrog steps of sizes
    :math:`w_1\\varepsilon, w_0\\varepsilon, w_1\\varepsilon`.

    With :math:`w_1 = 1/(2 - 2^{1/3}) \\approx 1.35121` and :math:`w_0 = 1 - 2w_1 \\approx
    -1.70241` (a step backwards), the second-order errors of the three leapfrogs cancel, so
    the composition is of order 4: the energy error over a fixed time falls as
    :math:`\\varepsilon^4`. Written as a splitting, the kicks are :math:`b = (w_1/2,
    (w_1 + w_0)/2, (w_0 + w_1)/2, w_1/2)` and the drifts :math:`a = (w_1, w_0, w_1)`:
    palindromic, so symmetric and reversible, and three gradients a step.

    It is only a coefficient table on :class:`~hamiltonia.integrators.Splitting`, so it runs
    on the compiled path with no kernel of its own, and integrates a magnetic flow when given
    a magnetic ``structure``.

    References
    ----------
    Yoshida (1990), *Construction of higher order symplectic integrators*, Phys. Lett. A
    150(5-7); Hairer, Lubich and Wanner (2006), *Geometric Numerical Integration*, §II.4.
    """

    order = 4
    kicks = (_W1 / 2.0, (_W1 + _W0) / 2.0, (_W0 + _W1) / 2.0, _W1 / 2.0)
    drifts = (_W1, _W0, _W1)

    def __init__(self, structure=None):
        super().__init__(structure=structure)
