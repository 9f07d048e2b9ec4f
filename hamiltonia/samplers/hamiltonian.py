"""The composed :class:`HamiltonianSampler`."""

from __future__ import annotations

import numpy as np

from hamiltonia import backend
from hamiltonia.hamiltonians.base import Hamiltonian
from hamiltonia.hamiltonians.shadow import ShadowHamiltonian
from hamiltonia.integrators.base import Integrator
from hamiltonia.integrators.leapfrog import Leapfrog
from hamiltonia.momentum import FullRefresh, MomentumRefresh
from hamiltonia.samplers.base import Sampler
from hamiltonia.state import ChainState
from hamiltonia.trajectories import TrajectoryPolicy

__all__ = ["HamiltonianSampler"]


class HamiltonianSampler(Sampler):
    """A Hamiltonian Monte Carlo sampler composed from its parts.

    One iteration refreshes the momentum, lets the trajectory policy integrate (and accept or
    select), and reports statistics:

    .. math::

        p \\sim \\text{refresh}(p), \\qquad
        (q', p') = \\Phi_{\\varepsilon}^{L}(q, p), \\qquad
        \\text{accept w.p. } \\min\\bigl(1, e^{H(q,p) - H(q',p')}\\bigr)

    where :math:`H` is replaced by the shadow :math:`\\tilde H` when the Hamiltonian is a
    :class:`~hamiltonia.hamiltonians.ShadowHamiltonian`.

    Parameters
    ----------
    hamiltonian : Hamiltonian
        The energy (and through it, the target).
    integrator : Integrator
        Default :class:`~hamiltonia.integrators.Leapfrog`.
    trajectory : TrajectoryPolicy
        How long to integrate and how to pick the next state.
    refresh : MomentumRefresh
        Default :class:`~hamiltonia.momentum.FullRefresh`.
    tuners : sequence of Tuner
        Warm-up adaptation, e.g. ``[DualAveraging(0.8)]``.
    reducer : VarianceReducer, optional
        Supplies importance weights for shadow samplers.
    step_size : float, optional
        Initial (or, with no step-size tuner, fixed) step size.

    References
    ----------
    Duane et al. (1987); Neal (2011); spec/seed002_ch1-3.md §2.3 (Algorithm 2).
    """

    name = "hamiltonian"

    def __init__(
        self,
        hamiltonian: Hamiltonian,
        trajectory: TrajectoryPolicy,
        integrator: Integrator | None = None,
        refresh: MomentumRefresh | None = None,
        tuners=(),
        reducer=None,
        step_size: float | None = None,
    ):
        if not isinstance(hamiltonian, Hamiltonian):
            raise TypeError(f"hamiltonian must be a Hamiltonian, got {type(hamiltonian).__name__}")
        if not isinstance(trajectory, TrajectoryPolicy):
            raise TypeError(
                f"trajectory must be a TrajectoryPolicy, got {type(trajectory).__name__}"
            )
        super().__init__(hamiltonian.target, step_size=step_size, tuners=tuners, reducer=reducer)
        self.hamiltonian = hamiltonian
        self.integrator = Leapfrog() if integrator is None else integrator
        if not isinstance(self.integrator, Integrator):
            raise TypeError(f"integrator must be an Integrator, got {type(integrator).__name__}")
        self.trajectory = trajectory
        self.refresh = FullRefresh() if refresh is None else refresh
        if not isinstance(self.refresh, MomentumRefresh):
            raise TypeError(f"refresh must be a MomentumRefresh, got {type(refresh).__name__}")

    def energy(self, state, step_size):
        """The energy the accept step uses: :math:`H`, or :math:`\\tilde H` for a shadow."""
        if isinstance(self.hamiltonian, ShadowHamiltonian):
            return self.hamiltonian.energy(state, step_size)
        return self.hamiltonian.energy(state)

    def init(self, positions):
        phase = self.hamiltonian.evaluate(backend.asarray(positions))
        return ChainState(phase, self._initial_step_sizes(positions.shape[0]))

    def step(self, chain, rngs):
        state = self.refresh.refresh(self.hamiltonian, chain.phase, rngs)
        nxt, info = self.trajectory.transition(self, state, chain.step_size, rngs)
        chain.phase = nxt
        return chain, info

    def probe_acceptance(self, chain, step_size, rngs):
        ham = self.hamiltonian
        state = chain.phase.with_momentum(ham.sample_momentum(rngs))
        proposal, _ = self.integrator.integrate(ham, state, step_size, 1)
        xp = backend.xp()
        with np.errstate(all="ignore"):
            delta = self.energy(proposal, step_size) - self.energy(state, step_size)
            prob = xp.exp(-delta)
            prob = xp.where(proposal.finite & xp.isfinite(prob), prob, 0.0)
        return np.minimum(1.0, backend.to_numpy(prob))

    def __repr__(self):
        return (
            f"HamiltonianSampler(hamiltonian={self.hamiltonian!r}, integrator={self.integrator!r},"
            f" trajectory={self.trajectory!r}, refresh={self.refresh!r}, tuners={self.tuners!r})"
        )
