"""Momentum refreshment between trajectories.

Between two trajectories a Hamiltonian sampler resamples (part of) the momentum, a Gibbs step
on :math:`p` (or a Metropolis step that keeps :math:`e^{-H}` invariant) that lets the chain
move between energy levels.

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from hamiltonia import backend
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import (
    column,
    draw_momentum,
    hamiltonian_energy,
    kinetic,
    offset,
    own,
    velocity,
)
from hamiltonia.refresh.contracts import GAUSSIAN_MOMENTUM, check_requirements
from hamiltonia.state import PhaseState
from hamiltonia.trajectories.metropolis import metropolis_probability

__all__ = [
    "FullRefresh",
    "MetropolisPartialRefresh",
    "MomentumRefresh",
    "PartialRefresh",
    "partial_mix",
]


def partial_mix(p, u, rho):
    """:math:`\\rho p + \\sqrt{1 - \\rho^2}\\, u`: one definition for both paths (arrays
    or scalars)."""
    return rho * p + (1.0 - rho * rho) ** 0.5 * u


def refresh_energy_error(h_new, h_old):
    """:math:`\\delta = \\hat H_\\text{new} - \\hat H_\\text{old}` of a tested refresh, with a
    current energy that is not finite taken as :math:`+\\infty`: such a state has no density
    under the chain's target (a shadow Hamiltonian whose finite-difference stencil leaves
    the support at a step size warm-up changed since the state was accepted), and is left
    by any refresh of finite energy (:math:`\\delta = -\\infty`), where a ``nan`` error would
    refuse every refresh and the chain would never move again. One definition for both
    paths (arrays of chains, or one chain's numbers in a kernel)."""
    return h_new - np.fmin(h_old, np.inf)


def partial_complement(p, u, rho):
    """:math:`-\\sqrt{1 - \\rho^2}\\, p + \\rho u`, the noise's image under the rotation of
    a tested refresh (both paths, arrays or scalars)."""
    return rho * u - (1.0 - rho * rho) ** 0.5 * p


def full_refresh_kernel(ctx, q, p, grad, lp, eps):
    draw_momentum(ctx, q, p)


def partial_refresh_kernel(ctx, q, p, grad, lp, eps):
    rho = own.rho
    u = np.empty(p.shape[0])
    draw_momentum(ctx, q, u)
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
      it declares the parameter ``flip_on_reject``, which the Metropolis transition reads.
    * ``requires``: the capabilities the refresh needs of the Hamiltonian
      (:mod:`hamiltonia.refresh.contracts`: ``"gaussian-momentum"`` for a partial refresh),
      and ``instead``, the refresh to use where one is missing; ``check(hamiltonian)``
      refuses a Hamiltonian that lacks one, naming both parts and ``instead``. The sampler's
      composition calls it (:func:`hamiltonia.samplers.composition.compose`).
    """

    flip_on_reject: bool = False
    numeric_methods = ("refresh",)
    #: The capabilities the refresh needs of the Hamiltonian (none by default).
    requires: frozenset[str] = frozenset()
    #: The refresh to use where the Hamiltonian lacks one of them (for the refusal).
    instead: str = ""

    def check(self, hamiltonian) -> None:
        """Refuse ``hamiltonian`` where it lacks a capability the refresh ``requires``:
        ``ValueError`` naming both parts and the refresh to use ``instead``
        (:func:`hamiltonia.refresh.contracts.check_requirements`)."""
        check_requirements(self, hamiltonian)

    @property
    def keeps_momentum(self) -> bool:
        """Whether a refresh may keep some of the momentum it is given (a partial or a
        tested refresh): the chains then start from a momentum drawn from the kinetic
        energy's distribution, not from zero (:func:`hamiltonia.sample`)."""
        return False

    def stats(self) -> tuple[tuple[str, str], ...]:
        """The per-iteration statistics the refresh records (none by default)."""
        return ()

    def counted(self) -> dict:
        """The statistics of the last ``refresh`` call by name (NumPy path)."""
        return {}

    @abstractmethod
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
    Mongwe 2022, thesis, §2.4, Algorithm 2)."""

    def refresh(self, hamiltonian, state, rngs, step_size=None):
        return state.with_momentum(hamiltonian.sample_momentum(rngs, state.aux))

    def compiled(self, dim):
        return PartKernels(
            {"refresh": full_refresh_kernel}, params={"flip_on_reject": self.flip_on_reject}
        )


class PartialRefresh(MomentumRefresh):
    """Partial momentum refreshment (Horowitz 1991):

    .. math::

        p' = \\rho\\, p + \\sqrt{1 - \\rho^2}\\, u, \\qquad u \\sim \\mathcal N(0, M),

    which leaves :math:`\\mathcal N(0, M)` invariant, so the momentum keeps a memory of the
    last trajectory and successive trajectories continue in similar directions. A rejected
    proposal negates the momentum (``flip_on_reject``) so that the composition of the
    Metropolis step, the negation and the refresh keeps detailed balance (the generalised
    HMC of Horowitz; the partial refresh of PMHMC and PS2HMC, Mongwe 2022, thesis, §5.2,
    eq. 5.1; Mongwe, Mbuvha and Marwala 2021, PS2HMC, eq. 18).

    The mix keeps :math:`\\mathcal N(0, M)` and no other distribution, so for
    :math:`\\rho > 0` it ``requires`` a Hamiltonian whose momentum given the position is
    that Gaussian (``"gaussian-momentum"``, :mod:`hamiltonia.refresh.contracts`); with any
    other kinetic energy (a relativistic one) use :class:`MetropolisPartialRefresh`.

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

    @property
    def keeps_momentum(self) -> bool:
        return self.rho > 0.0

    @property
    def requires(self) -> frozenset[str]:
        # rho = 0 keeps nothing of p: p' = u is an exact draw whatever the kinetic energy.
        return frozenset({GAUSSIAN_MOMENTUM}) if self.rho > 0.0 else frozenset()

    @property
    def instead(self) -> str:
        return (
            f"MetropolisPartialRefresh(rho={self.rho}) (refresh='metropolis-partial'), which "
            "tests the mixed momentum against the energy and so keeps exp(-H) invariant "
            "whatever the kinetic energy"
        )

    def refresh(self, hamiltonian, state, rngs, step_size=None):
        u = hamiltonian.sample_momentum(rngs, state.aux)
        return state.with_momentum(partial_mix(state.p, u, self.rho))

    def compiled(self, dim):
        return PartKernels(
            {"refresh": partial_refresh_kernel},
            params={"rho": self.rho, "flip_on_reject": self.flip_on_reject},
        )

    def __repr__(self):
        return f"PartialRefresh(rho={self.rho})"


def metropolis_partial_refresh_kernel(ctx, q, p, grad, lp, eps):
    """Kernel of :meth:`MetropolisPartialRefresh.refresh` for one chain (role
    ``refresh``): the acceptance goes to the column ``refresh_accepted``."""
    d = p.shape[0]
    rho = own.rho
    at = offset.refresh_rows
    u = ctx.aux[at : at + d]
    v = ctx.aux[at + d : at + 2 * d]
    p_new = ctx.aux[at + 2 * d : at + 3 * d]
    draw_momentum(ctx, q, u)
    h_old = hamiltonian_energy(ctx, q, p, lp, grad, v, eps)
    h_old += kinetic(ctx, q, u, velocity(ctx, q, u, v))
    for i in range(d):
        p_new[i] = partial_mix(p[i], u[i], rho)
        u[i] = partial_complement(p[i], u[i], rho)
    h_new = hamiltonian_energy(ctx, q, p_new, lp, grad, v, eps)
    h_new += kinetic(ctx, q, u, velocity(ctx, q, u, v))
    delta = refresh_energy_error(h_new, h_old)
    # One uniform whatever the energies, as on the NumPy path.
    accepted = ctx.rng.random() < metropolis_probability(delta) and math.isfinite(h_new)
    if accepted:
        for i in range(d):
            p[i] = p_new[i]
    ctx.stats[column.refresh_accepted] = 1.0 if accepted else 0.0


class MetropolisPartialRefresh(PartialRefresh):
    """Partial refreshment with a Metropolis test, for a non-separable Hamiltonian
    :math:`\\hat H` (the mix-and-match refresh of Radivojević and Akhmatskaya; SHMC, PSHMC
    and SMHMC, Mongwe, Mbuvha and Marwala 2022, SMHMC, eqs. 17-18):

    .. math::

        (p^*, u^*) = \\bigl(\\rho p + \\sqrt{1-\\rho^2}\\, u,\\; -\\sqrt{1-\\rho^2}\\, p + \\rho u
        \\bigr), \\qquad u \\sim \\mathcal N(0, M),

    accepted with probability :math:`\\min\\{1, \\exp(\\hat H(q, p) + K(u) - \\hat H(q, p^*)
    - K(u^*))\\}` (the papers print max, a typo), else :math:`p` is kept (not negated). The
    rotation is volume preserving and, :math:`u` being fresh and symmetric, equivalent to an
    involution, so this is a Metropolis step for :math:`e^{-\\hat H(q,p) - K(u)}`. A rejected
    trajectory negates the momentum, as for :class:`PartialRefresh`. ``rho = 0`` proposes a
    fresh momentum and tests it. The statistic ``refresh_accepted`` records the test.
    One uniform per chain, after the normal draws. A current state whose :math:`\\hat H` is
    not finite is left by any proposal of finite energy (:func:`refresh_energy_error`).
    """

    momentum_test = True
    keeps_momentum = True  # a refused refresh keeps the momentum, whatever rho
    # The test keeps exp(-H) whatever the momentum's distribution: it needs no Gaussian.
    requires = frozenset()

    def __init__(self, rho: float):
        # rho = 0 is valid here: a fresh momentum, tested.
        super().__init__(rho)
        self._tally: np.ndarray | None = None

    def stats(self) -> tuple[tuple[str, str], ...]:
        return (("refresh_accepted", "bool"),)

    def counted(self) -> dict:
        tally, self._tally = self._tally, None
        return {} if tally is None else {"refresh_accepted": tally}

    def refresh(self, hamiltonian, state, rngs, step_size=None):
        base = getattr(hamiltonian, "base", hamiltonian)
        u = hamiltonian.sample_momentum(rngs, state.aux)
        p_new = partial_mix(state.p, u, self.rho)
        u_new = partial_complement(state.p, u, self.rho)
        with np.errstate(all="ignore"):
            h_old = hamiltonian.energy(state, step_size) + base.kinetic(u, state.aux)
            proposal = state.with_momentum(p_new)
            h_new = hamiltonian.energy(proposal, step_size) + base.kinetic(u_new, state.aux)
            h_new = np.asarray(h_new, dtype=np.float64)
            delta = refresh_energy_error(h_new, np.asarray(h_old, dtype=np.float64))
        draws = np.array([rng.random() for rng in rngs])
        with np.errstate(all="ignore"):
            accepted = np.isfinite(h_new) & (draws < metropolis_probability(delta))
        self._tally = accepted
        return proposal.select(backend.asmask(accepted), state)

    def compiled(self, dim):
        return PartKernels(
            {"refresh": metropolis_partial_refresh_kernel},
            params={"rho": self.rho, "flip_on_reject": self.flip_on_reject},
            stats=self.stats(),
            workspace=(("refresh_rows", 3 * dim),),
        )

    def __repr__(self):
        return f"MetropolisPartialRefresh(rho={self.rho})"
