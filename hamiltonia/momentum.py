"""Momentum refreshment between trajectories.

Between two trajectories a Hamiltonian sampler resamples (part of) the momentum, a Gibbs step
on :math:`p` (or a Metropolis step that keeps :math:`e^{-H}` invariant) that lets the chain
move between energy levels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import REFRESH, draw_momentum
from hamiltonia.state import PhaseState

__all__ = ["FullRefresh", "MomentumRefresh", "PartialRefresh", "partial_mix"]


def partial_mix(p, u, rho):
    """:math:`\\rho p + \\sqrt{1 - \\rho^2}\\, u`: one definition for both paths (arrays
    or scalars)."""
    return rho * p + (1.0 - rho * rho) ** 0.5 * u


def full_refresh_kernel(rng, q, p, grad, lp, eps, aux, PF, PI):
    draw_momentum(rng, q, p, aux, PF, PI)


def partial_refresh_kernel(rng, q, p, grad, lp, eps, aux, PF, PI):
    rho = PF[REFRESH][0]
    u = np.empty(p.shape[0])
    draw_momentum(rng, q, u, aux, PF, PI)
    for i in range(p.shape[0]):
        p[i] = partial_mix(p[i], u[i], rho)


class MomentumRefresh:
    """Abstract momentum refreshment.

    Contract
    --------
    * ``refresh(hamiltonian, state, rngs, step_size)`` returns the state with new momenta,
      leaving :math:`e^{-H(q,p)}` invariant; chain ``c`` draws only from ``rngs[c]``.
      ``step_size`` (per chain) is the step size of the coming trajectory, for refreshments
      that depend on it (the MH momentum test of a non-separable shadow Hamiltonian).
    * ``flip_on_reject``: whether a rejected proposal negates the current momentum (needed
      for detailed balance when momentum is carried over, as in partial refreshment).
    * ``compiled(dim)`` returns the compiled counterpart (role ``refresh``), or ``None``;
      its first integer parameter is ``flip_on_reject``.
    """

    flip_on_reject: bool = False
    numeric_methods = ("refresh",)

    def refresh(
        self,
        hamiltonian,
        state: PhaseState,
        rngs: Sequence[np.random.Generator],
        step_size=None,
    ) -> PhaseState:
        raise NotImplementedError

    def compiled(self, dim: int):
        return None

    def __repr__(self):
        return f"{type(self).__name__}()"


class FullRefresh(MomentumRefresh):
    """Draw a fresh momentum :math:`p \\sim \\mathcal N(0, M)` every iteration (standard HMC,
    spec/seed002_ch1-3.md §2.3, Algorithm 2)."""

    def refresh(self, hamiltonian, state, rngs, step_size=None):
        return state.with_momentum(hamiltonian.sample_momentum(rngs, state.aux))

    def compiled(self, dim):
        return PartKernels({"refresh": full_refresh_kernel}, iparams=[self.flip_on_reject])


class PartialRefresh(MomentumRefresh):
    """Partial momentum refreshment (Horowitz 1991):

    .. math::

        p' = \\rho\\, p + \\sqrt{1 - \\rho^2}\\, u, \\qquad u \\sim \\mathcal N(0, M),

    which leaves :math:`\\mathcal N(0, M)` invariant, so the momentum keeps a memory of the
    last trajectory and successive trajectories continue in similar directions. A rejected
    proposal negates the momentum (``flip_on_reject``) so that the composition of the
    Metropolis step, the negation and the refresh keeps detailed balance (the generalised
    HMC of Horowitz; the partial refresh of PMHMC and PS2HMC, spec/seed000_004.md §1.7 and
    seed002_ch4-10.md §3).

    Parameters
    ----------
    rho : float in [0, 1)
        The memory :math:`\\rho`; 0 is a full refresh. :math:`\\rho = 1` is refused: the
        momentum would never change, so the chain would move on one energy level only and
        (with the flip on rejection) retrace its own steps.
    """

    flip_on_reject = True

    def __init__(self, rho: float):
        try:
            value = float(rho) if not isinstance(rho, bool | str) else np.nan
        except (TypeError, ValueError, OverflowError):
            value = np.nan
        if not np.isfinite(value) or not 0.0 <= value < 1.0:
            extra = (
                " (rho = 1 never refreshes the momentum: the chain stays on one energy "
                "level and is not ergodic)"
                if value == 1.0
                else ""
            )
            raise ValueError(f"rho must lie in [0, 1), got {rho!r}{extra}")
        self.rho = value

    def refresh(self, hamiltonian, state, rngs, step_size=None):
        u = hamiltonian.sample_momentum(rngs, state.aux)
        return state.with_momentum(partial_mix(state.p, u, self.rho))

    def compiled(self, dim):
        return PartKernels(
            {"refresh": partial_refresh_kernel},
            fparams=[self.rho],
            iparams=[self.flip_on_reject],
        )

    def __repr__(self):
        return f"PartialRefresh(rho={self.rho})"
