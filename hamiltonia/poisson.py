"""Poisson structures: the geometry of a Hamiltonian flow.

A flow on phase space :math:`z = (q, p)` is

.. math::

    \\dot z = J\\, \\nabla H(z),

with an antisymmetric structure matrix :math:`J`. The canonical structure

.. math::

    J = \\begin{pmatrix} 0 & I \\\\ -I & 0 \\end{pmatrix}

gives Hamilton's equations :math:`\\dot q = \\partial H/\\partial p`,
:math:`\\dot p = -\\partial H/\\partial q`. Non-canonical structures such as the magnetic
:math:`J_G = \\begin{pmatrix} 0 & I \\\\ -I & G \\end{pmatrix}` (Tripuraneni et al. 2017,
spec/seed002_ch1-3.md §2.4) bend trajectories while keeping volume and energy.

An :class:`~hamiltonia.integrators.Integrator` declares the structure it integrates; samplers
that flip a structure as an auxiliary variable (magnetic HMC flips :math:`G \\to -G`) call
:meth:`PoissonStructure.flipped`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CanonicalStructure", "PoissonStructure"]


class PoissonStructure:
    """Abstract Poisson structure.

    Contract
    --------
    * ``matrix(dim)`` returns the antisymmetric ``(2 dim, 2 dim)`` matrix :math:`J`.
    * ``vector_field(dH_dq, dH_dp)`` returns :math:`(\\dot q, \\dot p) = J \\nabla H`, batched
      over leading axes.
    * ``flipped()`` returns the structure a reversible sampler uses after negating its
      auxiliary variables (the structure itself when there are none).
    """

    is_canonical: bool = False

    def matrix(self, dim: int) -> np.ndarray:
        raise NotImplementedError

    def vector_field(self, dH_dq: np.ndarray, dH_dp: np.ndarray):
        dim = dH_dq.shape[-1]
        flow = np.concatenate([dH_dq, dH_dp], axis=-1) @ self.matrix(dim).T
        return flow[..., :dim], flow[..., dim:]

    def flipped(self) -> PoissonStructure:
        return self


class CanonicalStructure(PoissonStructure):
    """The canonical structure :math:`J = ((0, I), (-I, 0))` of Hamilton's equations."""

    is_canonical = True

    def matrix(self, dim):
        eye = np.eye(dim)
        zero = np.zeros((dim, dim))
        return np.block([[zero, eye], [-eye, zero]])

    def vector_field(self, dH_dq, dH_dp):
        return dH_dp, -dH_dq

    def __repr__(self):
        return "CanonicalStructure()"
