"""The leapfrog (Störmer-Verlet) integrator."""

from __future__ import annotations

from hamiltonia.integrators.splitting import Splitting

__all__ = ["Leapfrog"]


class Leapfrog(Splitting):
    """Leapfrog: half kick, drift, half kick (kicks :math:`(1/2, 1/2)`, drift :math:`1`).

    .. math::

        p_{1/2} &= p_0 + \\tfrac{\\varepsilon}{2} \\nabla\\log\\pi(q_0) \\\\
        q_1 &= q_0 + \\varepsilon\\, M^{-1} p_{1/2} \\\\
        p_1 &= p_{1/2} + \\tfrac{\\varepsilon}{2} \\nabla\\log\\pi(q_1)

    (Mongwe 2022, thesis, §2.4, eq. 2.19, corrected form; the printed equation has a sign
    typo: the kick follows :math:`-\\nabla U = \\nabla\\log\\pi`). Adjacent half kicks of
    consecutive steps are merged, so ``L`` steps cost ``L`` gradient evaluations (the gradient
    at the start is cached); a trajectory that stops being finite counts the evaluations up to
    that point. Symplectic, reversible and of order 2.

    References
    ----------
    Neal (2011), *MCMC using Hamiltonian dynamics*, §2.3.
    """

    kicks = (0.5, 0.5)
    drifts = (1.0,)
