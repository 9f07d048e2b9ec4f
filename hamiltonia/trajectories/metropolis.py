"""Trajectory policies: how long to integrate, and how a trajectory becomes the next state.

A :class:`MetropolisTrajectory` integrates a number of steps (fixed, :class:`StaticLength`,
or drawn per chain, :class:`RandomLength`) and applies the Metropolis test of Hybrid Monte
Carlo. Dynamic policies (the no-U-turn tree) build a set of states and select among them;
they override :meth:`TrajectoryPolicy.transition` and hand out their own ``transition``
kernel.

The maths of the accept step (:func:`metropolis_probability`, :func:`is_divergent`) and of
the step-size jitter (:func:`jittered_step_size`) is written once and used by both paths.

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from hamiltonia import backend
from hamiltonia._validation import as_float, check_int
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import (
    column,
    hamiltonian_energy,
    integrate,
    offset,
    own,
    part,
    reverse_structure,
    trajectory_length,
    velocity,
)
from hamiltonia.state import PhaseState

__all__ = [
    "MAX_ENERGY_ERROR",
    "MetropolisTrajectory",
    "RandomLength",
    "StaticLength",
    "TrajectoryPolicy",
    "is_divergent",
    "jittered_step_size",
    "keep_or_reverse",
    "metropolis_probability",
    "metropolis_select",
]

#: Energy error beyond which a trajectory is called divergent (Stan's and NumPyro's value).
MAX_ENERGY_ERROR = 1000.0


def metropolis_probability(delta):
    """:math:`\\min(1, e^{-\\delta})` for the energy error :math:`\\delta = H_1 - H_0`
    (``nan`` stays ``nan``; callers reject it). Scalars or arrays."""
    return np.exp(-np.maximum(delta, 0.0))


def is_divergent(delta):
    """A non-finite energy error, or one above :data:`MAX_ENERGY_ERROR`."""
    return np.logical_not(np.isfinite(delta)) | (delta > MAX_ENERGY_ERROR)


def jittered_step_size(step_size, jitter, u):
    """:math:`\\varepsilon (1 + j (2u - 1))`, :math:`u \\sim U(0, 1)`."""
    return step_size * (1.0 + jitter * (2.0 * u - 1.0))


class TrajectoryPolicy:
    """Abstract trajectory policy.

    Contract
    --------
    ``transition(sampler, state, step_size, rngs)`` takes the state *after* momentum
    refreshment and returns ``(next_state, info)`` where ``info`` holds per-chain arrays for
    every statistic in :meth:`stats` (at least ``accepted``, ``acceptance_rate``, the
    statistic step-size adaptation targets, ``diverging``, ``n_grad``, ``n_steps`` and
    ``energy``). Chain ``c`` draws only from ``rngs[c]``.

    ``stats()`` declares the statistics as ``(name, dtype)`` pairs (ArviZ's names where one
    exists); ``compiled(dim)`` returns the compiled counterpart (role ``transition``).

    ``publishes`` names the vectors (one of length ``dim`` per chain) the policy can add to
    ``info`` for the warm-up tuners that read them (:attr:`~hamiltonia.tuners.Tuner.reads`):
    the run switches ``publish`` on for the warm-up of a sampler with such a tuner, and then
    the Python form puts them in ``info`` and the kernels write them into the workspace
    entries of those names, which their :class:`~hamiltonia.compiled.parts.PartKernels`
    lists as ``published``.
    """

    numeric_methods = ("transition",)

    #: The vectors the policy publishes when :attr:`publish` is on (see the contract).
    publishes: tuple[str, ...] = ()
    #: Whether to publish them this iteration: on during a warm-up whose tuners read them.
    publish: bool = False

    @abstractmethod
    def transition(self, sampler, state: PhaseState, step_size: np.ndarray, rngs):
        # A policy written only as a kernel has no Python transition: say so, and where its
        # kernel runs, rather than raise a bare NotImplementedError.
        raise NotImplementedError(
            f"trajectory {type(self).__name__} has no Python transition: it is written only "
            "as a kernel, which runs on the compiled path (hamiltonia.sample with compiled "
            "left on, or hamiltonia.testing's checks); write transition() to step it from "
            "Python"
        )

    def stats(self) -> tuple[tuple[str, str], ...]:
        return METROPOLIS_STATS

    def compiled(self, dim: int):
        return None


def metropolis_select(
    current: PhaseState,
    proposal: PhaseState,
    h0,
    h1,
    rngs: Sequence[np.random.Generator],
    *,
    flip_on_reject: bool = False,
    reverse=None,
):
    """Metropolis test between ``current`` and ``proposal`` with energies ``h0``, ``h1``.

    Accepts with probability :func:`metropolis_probability`; one ``rng.random()`` per chain.
    A proposal with a non-finite energy or state, or an energy error above
    :data:`MAX_ENERGY_ERROR`, is rejected and marked divergent.

    The proposal's momentum is not negated: negation followed by the next refreshment's
    negation cancel, so accepting keeps :math:`p'` and rejecting keeps :math:`p` (or
    :math:`-p` when ``flip_on_reject``, as partial refreshment requires). ``reverse``
    (the structure's :meth:`~hamiltonia.structures.base.PoissonStructure.reverse`) is applied to a
    rejected chain: the proposal map with its time reversal is an involution only with the
    structure's auxiliary variables negated too (the magnetic field's sign, Algorithm 3).

    Returns
    -------
    next_state, accepted, accept_prob, diverging (the last three on the host)
    """
    host = backend.to_numpy
    with np.errstate(all="ignore"):
        delta = np.asarray(host(h1), dtype=np.float64) - np.asarray(host(h0), dtype=np.float64)
        ok = host(proposal.finite) & np.isfinite(delta)
        diverging = ~ok | is_divergent(delta)
        accept_prob = np.where(ok, metropolis_probability(delta), 0.0)
    u = np.array([rng.random() for rng in rngs])
    accepted = ok & (u < accept_prob)
    stay = current.with_momentum(-current.p) if flip_on_reject else current
    if reverse is not None:
        stay = reverse(stay)
    return proposal.select(backend.asmask(accepted), stay), accepted, accept_prob, diverging


#: The statistics of a Metropolis transition, in the column order of its kernel.
METROPOLIS_STATS = (
    ("accepted", "bool"),
    ("acceptance_rate", "float64"),
    ("diverging", "bool"),
    ("energy", "float64"),
    ("n_steps", "int64"),
    ("n_grad", "int64"),
)


def keep_or_reverse(ctx, accepted, q, p, grad, q1, p1, g1):
    """The chain's state after a Metropolis test, in place: the proposal ``(q1, p1, g1)``
    where ``accepted``; else the start, its momentum negated where the refresh's
    ``flip_on_reject`` says so and the structure's auxiliary variables reversed (role
    ``reverse_structure``). Every transition kernel that ends in an accept step calls it."""
    if accepted:
        for i in range(q.shape[0]):
            q[i] = q1[i]
            p[i] = p1[i]
            grad[i] = g1[i]
    else:
        if part.refresh.flip_on_reject:
            for i in range(p.shape[0]):
                p[i] = -p[i]
        reverse_structure(ctx)


def uniform_length_kernel(ctx, eps):
    """Kernel of :meth:`MetropolisTrajectory.n_steps` and :meth:`MetropolisTrajectory.jittered`
    for one chain (role ``trajectory_length``): a number of steps uniform on ``min_steps ..
    max_steps`` (no draw when they are equal), then the step size jittered by
    ``step_size_jitter`` (one uniform, when it is not 0)."""
    lo = own.min_steps
    hi = own.max_steps
    n_steps = lo
    if hi > lo:
        n_steps = ctx.rng.integers(lo, hi + 1)
    eps_used = eps
    if own.step_size_jitter > 0.0:
        eps_used = jittered_step_size(eps, own.step_size_jitter, ctx.rng.random())
    return n_steps, eps_used


def metropolis_transition_kernel(ctx, q, p, grad, lp, eps):
    """Kernel of :meth:`MetropolisTrajectory.transition` for one chain (role
    ``transition``): the role ``trajectory_length`` draws the number of steps and the step
    size; the refresh's ``flip_on_reject`` says whether a rejection negates the momentum. A
    rejection also reverses the structure's auxiliary variables (role ``reverse_structure``;
    nothing for the canonical one)."""
    n_steps, eps_used = trajectory_length(ctx, eps)
    d = q.shape[0]
    q1 = ctx.scratch[0, :d]
    p1 = ctx.scratch[1, :d]
    g1 = ctx.scratch[2, :d]
    v = ctx.scratch[3, :d]
    h0 = hamiltonian_energy(ctx, q, p, lp, grad, v, eps_used)
    for i in range(d):
        q1[i] = q[i]
        p1[i] = p[i]
        g1[i] = grad[i]
    lp1, n_grad = integrate(ctx, q1, p1, g1, lp, eps_used, n_steps, v)
    h1 = np.nan
    if np.isfinite(lp1):
        h1 = hamiltonian_energy(ctx, q1, p1, lp1, g1, v, eps_used)
    delta = h1 - h0
    ok = np.isfinite(delta)
    prob = 0.0
    if ok:
        prob = metropolis_probability(delta)
    diverging = is_divergent(delta)
    if own.publish:
        # The proposal, accepted or not, and its velocity, for the tuners that read them.
        v1 = velocity(ctx, q1, p1, v)
        for i in range(d):
            ctx.aux[offset.proposal + i] = q1[i]
            ctx.aux[offset.proposal_velocity + i] = v1[i]
    u = ctx.rng.random()
    accepted = ok and u < prob
    keep_or_reverse(ctx, accepted, q, p, grad, q1, p1, g1)
    if accepted:
        lp = lp1
    ctx.stats[column.accepted] = 1.0 if accepted else 0.0
    ctx.stats[column.acceptance_rate] = prob
    ctx.stats[column.diverging] = 1.0 if diverging else 0.0
    ctx.stats[column.energy] = h1 if accepted else h0
    ctx.stats[column.n_steps] = n_steps
    ctx.stats[column.n_grad] = n_grad
    return lp


class MetropolisTrajectory(TrajectoryPolicy):
    """Integrate a number of steps, then apply the Metropolis test (HMC, Algorithm 2).

    The number of steps is drawn per chain, uniformly on ``min_steps .. max_steps`` from the
    chain's own generator (no draw when they are equal). With ``step_size_jitter``
    :math:`j > 0`, each chain integrates with :math:`\\varepsilon (1 + j (2u - 1))`,
    :math:`u \\sim U(0, 1)` drawn after the length (Neal 2011, §5.4.2.2): a fixed
    trajectory can resonate with a period of the target, so that a coordinate barely moves
    (on Gaussians in particular), and a random length or step size breaks the resonance.
    The energies of the accept step are evaluated at the step size actually integrated.

    Parameters
    ----------
    min_steps, max_steps : int
        :math:`1 \\le L_{min} \\le L_{max}`.
    step_size_jitter : float in [0, 1)
        Relative jitter of the step size (default 0: none).
    """

    numeric_methods = ("transition", "n_steps", "jittered")

    #: The position at the end of the trajectory, accepted or not, and the velocity
    #: :math:`\\partial H / \\partial p` there (what ChEES reads).
    publishes = ("proposal", "proposal_velocity")

    def __init__(self, min_steps: int, max_steps: int, step_size_jitter: float = 0.0):
        self.min_steps = check_int(min_steps, "min_steps", minimum=1)
        self.max_steps = check_int(max_steps, "max_steps", minimum=1)
        if self.max_steps < self.min_steps:
            raise ValueError(
                f"max_steps must be >= min_steps = {self.min_steps}, got {max_steps!r}"
            )
        jitter = step_size_jitter
        if isinstance(jitter, bool) or not isinstance(jitter, int | float | np.floating):
            raise ValueError(f"step_size_jitter must be a number in [0, 1), got {jitter!r}")
        jitter = as_float(jitter, "step_size_jitter", "a number in [0, 1)")
        if not 0.0 <= jitter < 1.0:
            raise ValueError(f"step_size_jitter must lie in [0, 1), got {step_size_jitter!r}")
        self.step_size_jitter = jitter

    def n_steps(self, rngs) -> np.ndarray:
        """The number of steps of each chain this iteration."""
        if self.max_steps == self.min_steps:
            return np.full(len(rngs), self.min_steps, dtype=np.int64)
        return np.array(
            [rng.integers(self.min_steps, self.max_steps + 1) for rng in rngs], dtype=np.int64
        )

    def jittered(self, step_size, rngs):
        """The step sizes to integrate with this iteration (one uniform per chain when
        jittering, none otherwise)."""
        if not self.step_size_jitter:
            return np.asarray(step_size)
        u = np.array([rng.random() for rng in rngs])
        return jittered_step_size(np.asarray(step_size), self.step_size_jitter, u)

    def transition(self, sampler, state, step_size, rngs):
        ham = sampler.hamiltonian
        n = self.n_steps(rngs)
        eps = self.jittered(step_size, rngs)
        proposal, n_grad = sampler.integrator.integrate(ham, state, eps, n)
        with np.errstate(all="ignore"):  # a diverging trajectory overflows; it is rejected
            h0 = ham.energy(state, eps)
            h1 = ham.energy(proposal, eps)
        nxt, accepted, prob, diverging = metropolis_select(
            state,
            proposal,
            h0,
            h1,
            rngs,
            flip_on_reject=sampler.refresh.flip_on_reject,
            reverse=sampler.integrator.structure.reverse,
        )
        host = backend.to_numpy
        info = {
            "accepted": accepted,
            "acceptance_rate": prob,
            "diverging": diverging,
            "energy": np.where(accepted, host(h1), host(h0)),
            "n_steps": n,
            "n_grad": n_grad,
        }
        if self.publish:
            info["proposal"] = host(proposal.q)
            info["proposal_velocity"] = host(ham.velocity(proposal.p, proposal.aux))
        return nxt, info

    def compiled(self, dim):
        return PartKernels(
            {
                "transition": metropolis_transition_kernel,
                "trajectory_length": uniform_length_kernel,
            },
            params={
                "step_size_jitter": self.step_size_jitter,
                "min_steps": self.min_steps,
                "max_steps": self.max_steps,
                "publish": bool(self.publish),
            },
            stats=self.stats(),
            workspace=(("proposal", dim), ("proposal_velocity", dim)),
            published=self.publishes,
        )

    def __repr__(self):
        extra = f", step_size_jitter={self.step_size_jitter}" if self.step_size_jitter else ""
        return f"{type(self).__name__}({self.min_steps}, {self.max_steps}{extra})"


class StaticLength(MetropolisTrajectory):
    """A fixed number of integration steps :math:`L` per trajectory.

    Parameters
    ----------
    n_steps : int
        :math:`L \\geq 1`.
    step_size_jitter : float in [0, 1)
        Relative jitter of the step size (default 0: none), see
        :class:`MetropolisTrajectory`.
    """

    def __init__(self, n_steps: int, step_size_jitter: float = 0.0):
        length = check_int(n_steps, "n_steps", minimum=1)
        super().__init__(length, length, step_size_jitter)

    @property
    def length(self) -> int:
        return self.min_steps

    def __repr__(self):
        if self.step_size_jitter:
            return f"StaticLength({self.length}, step_size_jitter={self.step_size_jitter})"
        return f"StaticLength({self.length})"


class RandomLength(MetropolisTrajectory):
    """A number of steps drawn per chain and iteration, uniformly on
    :math:`\\{L_{min}, \\dots, L_{max}\\}` (default :math:`L_{min} = 1`), from the chain's own
    generator: jittered trajectory lengths (Neal 2011, §5.4.2.2; the JS2HMC of
    Mongwe 2022, thesis, §7.2)."""

    def __init__(self, max_steps: int, min_steps: int = 1, step_size_jitter: float = 0.0):
        super().__init__(min_steps, max_steps, step_size_jitter)

    def __repr__(self):
        extra = f", step_size_jitter={self.step_size_jitter}" if self.step_size_jitter else ""
        return f"RandomLength({self.max_steps}, min_steps={self.min_steps}{extra})"
