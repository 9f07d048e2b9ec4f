"""Poisson structures: the geometry of a Hamiltonian flow.

A flow on phase space :math:`z = (q, p)` is

.. math::

    \\dot z = J\\, \\nabla H(z),

with an antisymmetric structure matrix :math:`J`. The canonical structure

.. math::

    J = \\begin{pmatrix} 0 & I \\\\ -I & 0 \\end{pmatrix}

gives Hamilton's equations :math:`\\dot q = \\partial H/\\partial p`,
:math:`\\dot p = -\\partial H/\\partial q`. Non-canonical structures such as the magnetic
:math:`J_G = \\begin{pmatrix} 0 & I \\\\ -I & G \\end{pmatrix}` (Tripuraneni et al. 2017;
Mongwe 2022, thesis, §2.5, eq. 2.21) bend trajectories while keeping volume and energy.

An :class:`~hamiltonia.integrators.Integrator` declares the structure it integrates. A
structure with an auxiliary variable (the sign of the magnetic field,
:class:`~hamiltonia.structures.magnetic.MagneticStructure`) reverses it in
:meth:`PoissonStructure.reverse`,
which a rejected proposal calls together with the momentum negation.

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import position_flow

__all__ = ["CanonicalStructure", "PoissonStructure"]


# -- kernels of the canonical flows (roles ``kick`` and ``drift``, one chain, in place)


def canonical_kick_kernel(ctx, q, p, grad, h):
    """:math:`p \\leftarrow p + h \\nabla\\log\\pi(q)`; returns 0 when the gradient is
    finite, nan otherwise."""
    check = 0.0
    for i in range(p.shape[0]):
        p[i] += h * grad[i]
        # x - x is 0 for finite x and nan otherwise: the check rides along the update.
        check += grad[i] - grad[i]
    return check


def canonical_drift_kernel(ctx, q, p, v, h):
    """:math:`q \\leftarrow q + h\\, \\partial H/\\partial p`: the Hamiltonian's
    ``position_flow`` (``v`` is scratch space); returns 0 when the new position is finite,
    nan otherwise."""
    return position_flow(ctx, q, p, v, h)


class PoissonStructure:
    """Abstract Poisson structure.

    Contract
    --------
    * ``matrix(dim)`` returns the antisymmetric ``(2 dim, 2 dim)`` matrix :math:`J`.
    * ``vector_field(dH_dq, dH_dp)`` returns :math:`(\\dot q, \\dot p) = J \\nabla H`, batched
      over leading axes.
    * ``reverse(state)`` returns the state with the structure's auxiliary variables
      negated: with the momentum negated too, the time reversal of the flow
      (:math:`(q, p, s) \\to (q, -p, -s)` for a magnetic field's sign :math:`s`). A
      rejected proposal calls it. The state itself when there are none.
    * ``kick(hamiltonian, q, p, grad, h, aux)`` and ``drift(hamiltonian, q, p, h, aux)``
      return ``(q, p)`` after the flows of the potential and of the kinetic energy for a
      time ``h`` (shape ``(chains, 1)``): the pieces a splitting integrator composes.
    * ``check(hamiltonian)`` raises ``ValueError`` for a Hamiltonian the structure cannot
      integrate.
    * ``compiled(dim, hamiltonian)`` hands out the kernels (roles ``kick``, ``drift`` and
      optionally ``prepare`` and ``reverse_structure``) for the sampler's Hamiltonian.
    """

    is_canonical: bool = False
    numeric_methods = ("kick", "drift", "vector_field", "reverse")

    @abstractmethod
    def kick(self, hamiltonian, q, p, grad, h, aux=None):
        raise NotImplementedError

    @abstractmethod
    def drift(self, hamiltonian, q, p, h, aux=None):
        raise NotImplementedError

    def compiled(self, dim: int, hamiltonian=None):
        return None

    def check(self, hamiltonian) -> None:
        """Nothing to refuse by default."""

    def reverse(self, state):
        return state

    def holding(self, fixed) -> PoissonStructure | None:
        """This structure with the coordinates ``fixed`` held still (a Gibbs block's: their
        momentum is zero and stays zero, their positions do not move), or ``None`` where the
        structure cannot say (then it is refused inside HMC within Gibbs). The canonical
        flow holds a coordinate with no momentum and no force still by itself."""
        return self if self.is_canonical else None

    def matrix(self, dim: int) -> np.ndarray:
        raise NotImplementedError

    def vector_field(self, dH_dq: np.ndarray, dH_dp: np.ndarray):
        dim = dH_dq.shape[-1]
        flow = np.concatenate([dH_dq, dH_dp], axis=-1) @ self.matrix(dim).T
        return flow[..., :dim], flow[..., dim:]


class CanonicalStructure(PoissonStructure):
    """The canonical structure :math:`J = ((0, I), (-I, 0))` of Hamilton's equations."""

    is_canonical = True

    def matrix(self, dim):
        eye = np.eye(dim)
        zero = np.zeros((dim, dim))
        return np.block([[zero, eye], [-eye, zero]])

    def vector_field(self, dH_dq, dH_dp):
        return dH_dp, -dH_dq

    def kick(self, hamiltonian, q, p, grad, h, aux=None):
        return q, p + h * grad

    def drift(self, hamiltonian, q, p, h, aux=None):
        return q + h * hamiltonian.velocity(p, aux), p

    def compiled(self, dim, hamiltonian=None):
        return PartKernels({"kick": canonical_kick_kernel, "drift": canonical_drift_kernel})

    def __repr__(self):
        return "CanonicalStructure()"
