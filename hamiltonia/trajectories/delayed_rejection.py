"""Delayed-rejection HMC: a rejected trajectory gets a second try with a smaller step size.

Modi, Barnett and Carpenter (2023), *Delayed rejection Hamiltonian Monte Carlo for sampling
multiscale distributions*, Bayesian Analysis (arXiv:2110.00610). A step size that suits the
wide parts of a target diverges in its narrow parts; instead of lowering it everywhere,
:class:`DelayedRejection` keeps it and, only where the first trajectory is rejected,
integrates again from the same state with a step size ``reduction`` times smaller.

The policy is written once, as a kernel (the ``transition`` role, with the Metropolis
length policy's ``trajectory_length`` reused): it runs compiled with any target, a target
without a kernel called back (:doc:`/design`). It has no Python ``transition``, so
``compiled=False`` is refused before the run starts, naming it.

The maths (:func:`delayed_rejection`) is :func:`stage_probability` and the kernel's three
trajectories; :doc:`/tutorial_new_trajectory` walks through it.
"""

from __future__ import annotations

import numpy as np

from hamiltonia._validation import check_flag, check_int
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import (
    column,
    hamiltonian_energy,
    integrate,
    own,
    reverse_structure,
    trajectory_length,
)
from hamiltonia.trajectories.metropolis import (
    METROPOLIS_STATS,
    StaticLength,
    TrajectoryPolicy,
    is_divergent,
    keep_or_reverse,
    metropolis_probability,
)

__all__ = [
    "MAX_REDUCTION",
    "DelayedRejection",
    "delayed_rejection",
    "delayed_rejection_kernel",
    "stage_probability",
]

#: The largest step-size reduction taken (stage 2 integrates ``reduction`` times the steps).
MAX_REDUCTION = 100


def stage_probability(delta):
    """The acceptance probability of a first stage with energy error :math:`\\delta = H(z_1)
    - H(z_0)`: :math:`\\min(1, e^{-\\delta})`, and 0 for a divergent one (not finite, or
    above :data:`~hamiltonia.trajectories.metropolis.MAX_ENERGY_ERROR`, where
    :math:`e^{-\\delta}` underflows to 0 anyway). Scalars."""
    if is_divergent(delta):
        return 0.0
    return metropolis_probability(delta)


def integrated(ctx, q, p, grad, lp, sign, eps, n_steps, h_eps, q1, p1, g1, v):
    """``n_steps`` steps of size ``eps`` from :math:`(q, \\text{sign}\\cdot p)` into ``q1``,
    ``p1``, ``g1``: returns the end's log density, its energy at the step size ``h_eps``
    (``nan`` where the trajectory stopped being finite) and the gradients it took."""
    for i in range(q.shape[0]):
        q1[i] = q[i]
        p1[i] = sign * p[i]
        g1[i] = grad[i]
    lp1, n_grad = integrate(ctx, q1, p1, g1, lp, eps, n_steps, v)
    h1 = np.nan
    if np.isfinite(lp1):
        h1 = hamiltonian_energy(ctx, q1, p1, lp1, g1, v, h_eps)
    return lp1, h1, n_grad


def delayed_rejection(ctx, q, p, grad, lp, eps, ghost):
    """One delayed-rejection transition of one chain, in place (see :class:`DelayedRejection`).

    ``ghost`` is ``True`` in the kernel; ``False`` drops the ghost factor (accepting stage 2
    with :math:`\\min(1, e^{H_0 - H_2})`), which is **wrong**: the tests' and the tutorial's
    negative control, which the invariance check rejects."""
    n_steps, eps1 = trajectory_length(ctx, eps)
    d = q.shape[0]
    q1, p1, g1, v = ctx.scratch[0, :d], ctx.scratch[1, :d], ctx.scratch[2, :d], ctx.scratch[3, :d]
    h0 = hamiltonian_energy(ctx, q, p, lp, grad, v, eps1)
    # Stage 1: z1, L steps of size eps from z0.
    lp1, h1, n_grad = integrated(ctx, q, p, grad, lp, 1.0, eps1, n_steps, eps1, q1, p1, g1, v)
    alpha1 = stage_probability(h1 - h0)
    last = h1 - h0  # the energy error of the last stage tried
    total = n_steps
    stage = 0
    if ctx.rng.random() < alpha1:
        stage = 1
    elif own.probabilistic == 0 or ctx.rng.random() < 1.0 - alpha1:
        # Stage 2: z2, a L steps of size eps / a from z0, over z1 (rows 0-2).
        a = own.reduction
        lp2, h2, used = integrated(
            ctx, q, p, grad, lp, 1.0, eps1 / a, a * n_steps, eps1, q1, p1, g1, v
        )
        n_grad += used
        total += a * n_steps
        last = h2 - h0
        ghost_factor = 1.0
        if ghost and not is_divergent(last):
            # The ghost z1': stage 1 from z2 reversed (its momentum, the structure's sign).
            qg, pg, gg = ctx.scratch[4, :d], ctx.scratch[5, :d], ctx.scratch[6, :d]
            reverse_structure(ctx)
            _, hg, used = integrated(ctx, q1, p1, g1, lp2, -1.0, eps1, n_steps, eps1, qg, pg, gg, v)
            reverse_structure(ctx)
            n_grad += used
            total += n_steps
            ghost_factor = (1.0 - stage_probability(hg - h2)) / (1.0 - alpha1)
            if own.probabilistic != 0:
                ghost_factor = ghost_factor * ghost_factor  # the tries' probabilities too
        if not is_divergent(last) and ghost_factor > 0.0:
            if ctx.rng.random() < metropolis_probability(last - np.log(ghost_factor)):
                stage = 2
                lp1, h1 = lp2, h2  # the proposal kept: z2, in rows 0-2
    keep_or_reverse(ctx, stage > 0, q, p, grad, q1, p1, g1)
    if stage > 0:
        lp = lp1
    ctx.stats[column.accepted] = 1.0 if stage > 0 else 0.0
    ctx.stats[column.acceptance_rate] = alpha1
    ctx.stats[column.diverging] = 1.0 if stage == 0 and is_divergent(last) else 0.0
    ctx.stats[column.energy] = h1 if stage > 0 else h0
    ctx.stats[column.n_steps] = total
    ctx.stats[column.n_grad] = n_grad
    ctx.stats[column.stage] = stage
    return lp


def delayed_rejection_kernel(ctx, q, p, grad, lp, eps):
    """Kernel of :class:`DelayedRejection` for one chain (role ``transition``)."""
    return delayed_rejection(ctx, q, p, grad, lp, eps, True)


class DelayedRejection(TrajectoryPolicy):
    """Delayed-rejection HMC: a rejected trajectory is retried with a smaller step size.

    From the refreshed state :math:`z_0 = (q_0, p_0)`, with :math:`\\Psi^n_h` the
    integrator's :math:`n` steps of size :math:`h`, :math:`R` the momentum flip and
    :math:`H_k = H(z_k)`:

    .. math::

        z_1 = \\Psi^L_\\varepsilon z_0, \\qquad
        \\alpha_1(z_0) = \\min\\bigl(1, e^{H_0 - H_1}\\bigr).

    If stage 1 rejects, stage 2 integrates the same time with a step ``reduction``
    :math:`a` times smaller, and the *ghost* :math:`z_1'` is the proposal stage 1 would
    make from :math:`z_2` reversed:

    .. math::

        z_2 = \\Psi^{aL}_{\\varepsilon/a} z_0, \\qquad
        z_1' = \\Psi^L_\\varepsilon R z_2, \\qquad
        \\alpha_2 = \\min\\Bigl(1, e^{H_0 - H_2}\\,
            \\Bigl[\\frac{1 - \\alpha_1(R z_2)}{1 - \\alpha_1(z_0)}\\Bigr]^k\\Bigr),

    with :math:`k = 1`, or :math:`k = 2` for the probabilistic variant (``probabilistic``),
    which tries stage 2 only with probability :math:`1 - \\alpha_1(z_0)` (Modi et al. 2023,
    §3.2). The ghost factor makes the chain reversible: the move :math:`z_0 \\to z_2`
    happens only after stage 1 failed from :math:`z_0`, and its reverse only after stage 1
    failed from :math:`R z_2`, so each side weighs its own failure,

    .. math::

        \\pi(z_0)\\,[1 - \\alpha_1(z_0)]^k\\,\\alpha_2(z_0)
        = \\pi(z_2)\\,[1 - \\alpha_1(R z_2)]^k\\,\\alpha_2(R z_2),

    the detailed balance of Tierney and Mira (1999) for the involution
    :math:`R\\Psi^{aL}_{\\varepsilon/a}` (:math:`H` is even in :math:`p`). Without it the
    chain is biased (the tests' negative control).

    On a final rejection the momentum is negated where the refresh keeps it
    (``flip_on_reject``) and the structure's auxiliary variables reversed, as in the
    Metropolis transition; an accepted proposal keeps its momentum. Every energy is
    evaluated at the stage-1 step size, so that a shadow Hamiltonian's is one density.

    Parameters
    ----------
    n_steps : int
        :math:`L \\ge 1`, the steps of stage 1.
    reduction : int
        :math:`a`, the step-size reduction of stage 2, in ``[2, 100]`` (default 2); its
        :math:`aL` steps keep the trajectory's time :math:`L\\varepsilon` (as the authors' code
        does).
    step_size_jitter : float in [0, 1)
        Relative jitter of :math:`\\varepsilon`, drawn per chain and iteration before the
        stages (default 0), as :class:`~hamiltonia.trajectories.metropolis.StaticLength`.
    probabilistic : bool
        The probabilistic variant (default ``False``).

    Notes
    -----
    Statistics: those of the Metropolis transition and ``stage``, the stage accepted
    (0: none). ``acceptance_rate`` is stage 1's :math:`\\alpha_1`, which dual averaging
    targets: the step size is tuned as plain HMC's would be, and stage 2 rescues the
    trajectories that fail where the target narrows. ``diverging`` keeps the Metropolis
    meaning, a transition rejected because its trajectory diverged: the last stage tried
    diverged (a stage-1 divergence that stage 2 rescues is not one). ``n_steps`` and
    ``n_grad`` count every trajectory, the ghost's included.
    """

    def __init__(self, n_steps: int, reduction: int = 2, step_size_jitter: float = 0.0,
                 probabilistic: bool = False):  # fmt: skip
        self.length_policy = StaticLength(n_steps, step_size_jitter)  # checks both
        self.reduction = check_int(reduction, "reduction", minimum=2, maximum=MAX_REDUCTION)
        self.probabilistic = check_flag(probabilistic, "probabilistic")

    @property
    def n_steps(self) -> int:
        """:math:`L`, the steps of stage 1."""
        return self.length_policy.length

    @property
    def step_size_jitter(self) -> float:
        """The relative jitter of the step size."""
        return self.length_policy.step_size_jitter

    def stats(self):
        return (*METROPOLIS_STATS, ("stage", "int64"))

    def compiled(self, dim):
        # The Metropolis length policy's kernel and parameters, reused; nothing else of it.
        length = self.length_policy.compiled(dim)
        return PartKernels(
            {
                "transition": delayed_rejection_kernel,
                "trajectory_length": length.functions["trajectory_length"],
            },
            params={
                **length.params,
                "reduction": self.reduction,
                "probabilistic": self.probabilistic,
            },
            stats=self.stats(),
            scratch_rows=7,
        )

    def __repr__(self):
        extra = f", step_size_jitter={self.step_size_jitter}" if self.step_size_jitter else ""
        extra += ", probabilistic=True" if self.probabilistic else ""
        return f"DelayedRejection({self.n_steps}, reduction={self.reduction}{extra})"
