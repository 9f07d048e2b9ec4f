"""The composed :class:`HamiltonianSampler`."""

from __future__ import annotations

import numpy as np

from hamiltonia import backend
from hamiltonia.hamiltonians.base import Hamiltonian
from hamiltonia.hamiltonians.shadow import ShadowHamiltonian
from hamiltonia.integrators import Integrator, make_integrator
from hamiltonia.reducers.base import ImportanceWeights, gives_weights
from hamiltonia.refresh.momentum import FullRefresh, MomentumRefresh
from hamiltonia.samplers.base import BASE_STATS, Sampler
from hamiltonia.state import ChainState
from hamiltonia.trajectories.metropolis import TrajectoryPolicy
from hamiltonia.tuners.base import declared_parameters, read_parameter

__all__ = ["HamiltonianSampler"]


class HamiltonianSampler(Sampler):
    """A Hamiltonian Monte Carlo sampler composed from its parts.

    One iteration updates the Hamiltonian's auxiliary variables (a random mass), refreshes
    the momentum, lets the trajectory policy integrate (and accept or select), and reports
    statistics:

    .. math::

        p \\sim \\text{refresh}(p), \\qquad
        (q', p') = \\Phi_{\\varepsilon}^{L}(q, p), \\qquad
        \\text{accept w.p. } \\min\\bigl(1, e^{H(q,p) - H(q',p')}\\bigr)

    where :math:`H` is the Hamiltonian's ``energy`` at the step size integrated (a
    :class:`~hamiltonia.hamiltonians.ShadowHamiltonian` returns :math:`\\tilde H`).

    Parameters
    ----------
    hamiltonian : Hamiltonian
        The energy (and through it, the target).
    integrator : Integrator or str
        Default :class:`~hamiltonia.integrators.Leapfrog`; a registered name
        (``"leapfrog"``, ``"two-stage"``, ``"three-stage"``) is accepted.
    trajectory : TrajectoryPolicy
        How long to integrate and how to pick the next state.
    refresh : MomentumRefresh
        Default :class:`~hamiltonia.refresh.momentum.FullRefresh`.
    tuners : sequence of Tuner
        Warm-up adaptation, e.g. ``[DualAveraging(0.8)]``.
    reducer : VarianceReducer, optional
        Supplies importance weights for shadow samplers (default: none, or
        :class:`~hamiltonia.reducers.base.ImportanceWeights` with a shadow Hamiltonian).
    step_size : float, optional
        Initial (or, with no step-size tuner, fixed) step size.

    References
    ----------
    Duane et al. (1987); Neal (2011); Mongwe (2022), thesis, §2.4 (Algorithm 2).
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
        if reducer is None and isinstance(hamiltonian, ShadowHamiltonian):
            reducer = ImportanceWeights()
        super().__init__(hamiltonian.target, step_size=step_size, tuners=tuners, reducer=reducer)
        self.hamiltonian = hamiltonian
        self.integrator = make_integrator("leapfrog" if integrator is None else integrator)
        if not isinstance(self.integrator, Integrator):
            raise TypeError(f"integrator must be an Integrator, got {type(integrator).__name__}")
        self.trajectory = trajectory
        self.refresh = FullRefresh() if refresh is None else refresh
        if not isinstance(self.refresh, MomentumRefresh):
            raise TypeError(f"refresh must be a MomentumRefresh, got {type(refresh).__name__}")
        self._check_composition()

    def _check_composition(self) -> None:
        """Refuse compositions that would sample the wrong distribution, naming the parts."""
        ham, reducer = self.hamiltonian, self.reducer
        # A Hamiltonian with neither a Python form nor a kernel of a method: named now, not at
        # its first call.
        ham.check_forms()
        self.integrator.structure.check(ham)
        self.integrator.check(ham)
        if isinstance(ham, ShadowHamiltonian) and not gives_weights(reducer):
            raise ValueError(
                f"hamiltonian {type(ham).__name__} is a shadow Hamiltonian: the chain targets "
                "exp(-H~), so its draws need importance weights; give a reducer that supplies "
                f"them (reducer {type(reducer).__name__} gives none)"
            )
        if isinstance(ham, ShadowHamiltonian):
            if getattr(self.trajectory, "step_size_jitter", 0.0):
                raise ValueError(
                    f"hamiltonian {type(ham).__name__} is a shadow Hamiltonian, which depends "
                    f"on the step size: with trajectory {type(self.trajectory).__name__}'s "
                    "step_size_jitter each iteration would leave a different exp(-H~) "
                    "invariant; jitter the number of steps (n_steps_jitter) instead"
                )
        if getattr(self.trajectory, "needs_full_refresh", False) and not isinstance(
            self.refresh, FullRefresh
        ):
            raise ValueError(
                f"trajectory {type(self.trajectory).__name__} weighs its states against a "
                f"freshly drawn momentum: it needs FullRefresh, not {type(self.refresh).__name__}"
            )
        if getattr(ham, "needs_momentum_test", False) and not getattr(
            self.refresh, "momentum_test", False
        ):
            raise ValueError(
                f"hamiltonian {type(ham).__name__} is not separable: its refreshment needs a "
                f"Metropolis momentum test, which refresh {type(self.refresh).__name__} does "
                "not make"
            )
        # What the refresh requires of the Hamiltonian (a partial refresh: a Gaussian
        # momentum, hamiltonia.refresh.contracts); a refusal names both and the alternative.
        self.refresh.check(ham)
        # One tuner sets the step sizes; what a tuner adapts, the sampler has.
        setters = [type(t).__name__ for t in self.tuners if getattr(t, "sets_step_size", False)]
        if len(setters) > 1:
            raise ValueError(f"two tuners set the step sizes: {', '.join(setters)}; keep one")
        for tuner in self.tuners:
            for path in declared_parameters(tuner):
                try:
                    read_parameter(self, path)
                except AttributeError:
                    raise ValueError(
                        f"tuner {type(tuner).__name__} adapts {path}, which "
                        f"{_owner_of(self, path)} does not have: give the sampler a part that "
                        "has it"
                    ) from None
        # What each tuner reads of every iteration, the trajectory must publish.
        published = tuple(getattr(self.trajectory, "publishes", ()))
        for tuner in self.tuners:
            missing = [name for name in getattr(tuner, "reads", ()) if name not in published]
            if missing:
                raise ValueError(
                    f"tuner {type(tuner).__name__} reads {', '.join(missing)} of every "
                    f"iteration, which trajectory {type(self.trajectory).__name__} does not "
                    f"publish (it publishes: {', '.join(published) or 'nothing'}); use a "
                    "trajectory that does, such as a MetropolisTrajectory"
                )

    def energy(self, state, step_size):
        """The energy the accept step uses at the given step size."""
        return self.hamiltonian.energy(state, step_size)

    def stats(self):
        own = (*self.trajectory.stats(), *self.integrator.stats(), *self.refresh.stats())
        return BASE_STATS + tuple(s for s in own if s[0] not in dict(BASE_STATS))

    def compiled_parts(self):
        """The parts the compiled path composes, by slot (see
        :mod:`hamiltonia.compiled.roles`); tuners are listed separately."""
        from hamiltonia.compiled import roles

        return {
            roles.HAMILTONIAN: (self.hamiltonian, "hamiltonian"),
            # The structure's flow may depend on the kinetic energy (the magnetic one does).
            roles.STRUCTURE: (
                self.integrator.structure,
                "structure",
                {"hamiltonian": self.hamiltonian},
            ),
            roles.INTEGRATOR: (self.integrator, "integrator"),
            roles.REFRESH: (self.refresh, "refresh"),
            roles.TRAJECTORY: (self.trajectory, "trajectory"),
        }

    def init(self, positions):
        phase = self.hamiltonian.evaluate(backend.asarray(positions))
        return ChainState(phase, self._initial_step_sizes(positions.shape[0]))

    def step(self, chain, rngs):
        ham = self.hamiltonian
        # A Hamiltonian whose energy evaluates the target (a non-separable shadow's
        # curvature) counts those gradients, as its compiled kernel adds them to n_grad.
        ham.start_counting(len(rngs))
        state = ham.update_auxiliary(chain.phase, rngs)
        # The compiled chain draws the integrator's choices here too (after the structure's
        # preparation, which draws nothing).
        state = self.integrator.randomise(state, rngs)
        mirror = self.reducer.mirrored(len(rngs))
        if mirror.any():
            state = self._reversed(state, mirror)
        state = self.refresh.refresh(ham, state, rngs, chain.step_size)
        if mirror.any():
            # The secondary of an antithetic pair refreshes through the reversal, so its
            # momentum normals enter negated (hamiltonia.reducers.antithetic).
            state = self._reversed(state, mirror)
        refreshed = self.refresh.counted()
        counting = bool(self.integrator.stats())
        if counting:
            self.integrator.start_counting(len(rngs))
        nxt, info = self.trajectory.transition(self, state, chain.step_size, rngs)
        if counting:
            info.update(self.integrator.counted())
        info.update(refreshed)
        energy_grads = ham.counted()
        if energy_grads is not None:
            info["n_grad"] = info["n_grad"] + energy_grads
        chain.phase = nxt
        return chain, info

    def _reversed(self, state, mask):
        """``state`` with the chains ``mask`` reversed: momentum and structure negated."""
        flipped = self.integrator.structure.reverse(state.with_momentum(-state.p))
        return flipped.select(backend.asmask(mask), state)

    def probe_acceptance(self, chain, step_size, rngs):
        from hamiltonia.trajectories.metropolis import metropolis_probability

        ham = self.hamiltonian
        _refuse_stale_python_form(ham)
        state = chain.phase.with_momentum(ham.sample_momentum(rngs, chain.phase.aux))
        proposal, _ = self.integrator.integrate(ham, state, step_size, 1)
        with np.errstate(all="ignore"):
            delta = backend.to_numpy(
                self.energy(proposal, step_size) - self.energy(state, step_size)
            )
            ok = backend.to_numpy(proposal.finite) & np.isfinite(delta)
            return np.where(ok, metropolis_probability(delta), 0.0)

    def __repr__(self):
        return (
            f"HamiltonianSampler(hamiltonian={self.hamiltonian!r}, integrator={self.integrator!r},"
            f" trajectory={self.trajectory!r}, refresh={self.refresh!r}, tuners={self.tuners!r})"
        )


#: The Hamiltonian's Python methods a one-step probe of the step-size search runs.
_PROBED = ("kinetic", "velocity", "sample_momentum", "energy", "potential")


def _refuse_stale_python_form(ham) -> None:
    """Refuse, naming it, a Python method the step-size search would run that is the
    Hamiltonian's parent's, paired with a kernel the Hamiltonian replaced
    (:func:`~hamiltonia.compiled.parts.python_form_missing`): the search would tune the step
    size for the parent's maths. A method the Hamiltonian leaves to the base class has no
    such parent: the base class calls the kernel."""
    from hamiltonia.compiled.parts import python_form_missing
    from hamiltonia.compiled.python_calls import NoPythonForm

    missing = python_form_missing(ham)
    name = None if missing is None else missing.rpartition(".")[2]
    if name in _PROBED and not ham.without_python_form(name):
        raise NoPythonForm(
            f"hamiltonian {missing} is inherited from a parent that pairs it with another kernel "
            f"than the one {type(ham).__name__} hands out, and the step-size search runs it: "
            f"write {missing} to match the kernel (or give a fixed step size)"
        )


def _owner_of(sampler, path: str) -> str:
    """The part of ``sampler`` that would hold ``path`` (``"trajectory StaticLength"``), or
    the sampler, for a message."""
    *parents, _ = path.split(".")
    for k in range(len(parents), 0, -1):
        try:
            part = read_parameter(sampler, ".".join(parents[:k]))
        except AttributeError:
            continue
        return f"{'.'.join(parents[:k])} {type(part).__name__}"
    return f"sampler {type(sampler).__name__}"
