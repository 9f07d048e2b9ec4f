"""The roles a part's compiled counterpart can fill, and the argument conventions they share.

A part's kernels are plain Python functions written in the subset of Python that numba
compiles. They call the kernels of *other* parts only through the role names defined here
(``velocity(...)``, ``integrate(...)``, ...): importing a role from this module gives a stub
that raises when called from Python, and :mod:`hamiltonia.compiled.compose` binds each role
to the kernel of the part that fills it in the sampler being compiled. So a leapfrog kernel
works with any metric's ``velocity`` and an accept rule with any Hamiltonian's ``energy``,
and none of them names another part.

Every kernel takes the **kernel context** ``ctx`` first, then only the values of its call
(``velocity(ctx, q, p, out)``), and hands ``ctx`` on to the roles it calls. The context
(:mod:`hamiltonia.compiled.context`: a struct of borrowed views, whose fields cost nothing to
read) carries what the whole iteration of one chain shares:

``ctx.rng``
    the chain's generator, written as a ``numpy.random.Generator``
    (``ctx.rng.standard_normal()``; the methods
    :data:`~hamiltonia.compiled.pcg64_stream.GENERATOR_METHODS` names).
    In the chain kernels it is the chain's ``PCG64`` state, a ``uint64`` row, and the
    composer writes each call as the function of
    :data:`~hamiltonia.compiled.pcg64_stream.GENERATOR_METHODS` that draws the same number
    from it (:class:`~hamiltonia.compiled.compose.GeneratorCalls`);
``ctx.aux``
    the chain's auxiliary variables and workspaces, float64 (``ctx.aux[offset.NAME]``);
``ctx.scratch``
    the transition's scratch rows, :data:`~hamiltonia.compiled.chain.SCRATCH_ROWS` (or the
    part's ``PartKernels.scratch_rows``) of at least ``dim`` and at least 8 entries, each
    starting on a 64-byte line: use ``ctx.scratch[k, :dim]``;
``ctx.stats``
    the iteration's statistics row (``ctx.stats[column.NAME]``), zeroed at the start of
    every iteration;
``ctx.logp``, ``ctx.fdata``, ``ctx.idata``
    the target's kernel and its data: ``lp = ctx.logp(q, grad, ctx.fdata, ctx.idata)``;
``ctx.PF``, ``ctx.PI``
    the parameters of all parts, which a kernel reads **by name** (below), never by index.

The chain kernel builds the context once per call from borrowed views
(:mod:`hamiltonia.compiled.borrow`); the Python entries of :mod:`hamiltonia.compiled.python_calls`
build it with ``None`` in the fields a method does not have. A kernel written for the
positional convention before the context (``..., aux, PF, PI, logp, fdata, idata``) is
refused when the plan is built, naming the part, the role and the signature to write
(:class:`~hamiltonia.compiled.compose.KernelSignatureError`).

A kernel reads the parameters by name: the composer rewrites four kinds of names into the
places the plan laid the values out in (:mod:`hamiltonia.compiled.plan`), and checks each
when the plan is built, so a missing or misspelt name is an error naming the part and the
field, not a read out of bounds:

``own.NAME``
    The parameter ``NAME`` of the part whose kernel this is (declared in its
    :class:`~hamiltonia.compiled.parts.PartKernels` ``params``): a float, an int or a float
    array. In the kernels a part hands out and in the helpers they call (a helper is
    composed once per part that calls it, so there ``own`` is the calling part).
``part.SLOT.NAME``
    The parameter ``NAME`` of the part in slot ``SLOT`` (:data:`SLOTS`: ``hamiltonian``,
    ``structure``, ``integrator``, ``refresh``, ``trajectory``, ``tuner``): a part that needs
    another's value asks for it by name (the Metropolis transition reads
    ``part.refresh.flip_on_reject``). Anywhere, helpers included.
``column.NAME``
    The column of the statistic ``NAME`` in the iteration's row ``ctx.stats``, whichever
    part records it (a constant: ``ctx.stats[column.acceptance_rate]``).
``offset.NAME``
    The offset in the chain's ``ctx.aux`` of the auxiliary variable or workspace ``NAME``
    (``ctx.aux[offset.field_reversed]``).

A kernel or helper that reads ``own.NAME`` or ``part.SLOT.NAME`` takes ``ctx`` (the values
are read from ``ctx.PF`` and ``ctx.PI``).

Signatures (one chain; ``q``, ``p``, ``grad``, ``v`` of shape ``(dim,)``; :data:`ROLE_SIGNATURES`):

``draw_momentum(ctx, q, p)``
    Fill ``p`` with a draw from the momentum distribution. [Hamiltonian]
``velocity(ctx, q, p, out) -> array``
    :math:`\\partial H/\\partial p`: written into ``out`` and returned, or ``p`` itself
    returned where the two are equal (:math:`M = I`), which saves a copy. Callers read the
    returned array and never write into it. [Hamiltonian]
``position_flow(ctx, q, p, v, h) -> float``
    :math:`q \\leftarrow q + h\\,\\partial H/\\partial p`, the exact flow of a separable
    Hamiltonian's kinetic energy on the position (``v`` is scratch space); returns 0.0 when
    the new position is finite and nan otherwise. The canonical ``drift``; a metric may fuse
    it into one pass (:func:`~hamiltonia.hamiltonians.base.position_flow_kernel` is the
    generic form). [Hamiltonian]
``kinetic(ctx, q, p, v) -> float``
    The kinetic energy, given ``v = velocity(p)``. [Hamiltonian]
``energy(ctx, q, p, lp, grad, v, eps) -> float``
    The energy the accept step uses at step size ``eps`` (a shadow Hamiltonian's differs
    from :math:`H`), without the target; ``v`` is scratch space. [Hamiltonian]
``energy_reads_target`` (a constant, ``False`` unless a Hamiltonian fills it)
    Whether the accept step's energy needs the target (a non-separable shadow evaluates the
    gradient near ``q`` for its curvature term). [Hamiltonian]
``target_energy(ctx, q, p, lp, grad, v, eps) -> float``
    That energy, reading the target (``ctx.logp``). [Hamiltonian]
``hamiltonian_energy(ctx, q, p, lp, grad, v, eps) -> float``
    The accept step's energy: what a kernel calls (an accept rule, a refresh with a
    Metropolis test). No part fills it: the composer binds it (:data:`COMPOSED_ROLES`) to
    ``target_energy`` where ``energy_reads_target``, and otherwise to a kernel that calls
    ``energy`` (:func:`~hamiltonia.compiled.chain.energy_without_target_kernel`), so the
    choice is made once per composition, in the composer. It replaces the idiom
    ``if energy_reads_target: target_energy(...) else: energy(...)``, which still works
    (numba prunes the constant branch). The three roles have one signature since the
    context carries the target; the flag stays, because the Python form of a part's energy
    (:mod:`hamiltonia.compiled.python_calls`) calls the target back only where it is on.
    [composer]
``kick(ctx, q, p, grad, h) -> float`` / ``drift(ctx, q, p, v, h) -> float``
    The momentum and position flows for a time ``h`` (``v`` is scratch space). Each returns
    0.0 when what it read or wrote is finite (the gradient for ``kick``, the new position for
    ``drift``) and nan otherwise: ``x - x`` summed along the update costs nothing, where a
    separate pass over the state would. [Poisson structure]
``randomise(ctx)``
    Draw the integrator's random choices for this iteration's trajectory into its
    auxiliary variables (the subset order of the randomised split,
    :class:`~hamiltonia.integrators.data_split.RandomisedSplit`), at the start of every
    iteration after ``prepare``; a no-op by default. [integrator]
``integrate(ctx, q, p, grad, lp, eps, n_steps, v)``
    ``n_steps`` steps in place; returns ``(lp, n_grad)``, ``lp`` nan when the trajectory
    stopped being finite. An integrator that declares statistics adds to its columns of
    the iteration's row ``ctx.stats`` (zeroed at the start of every iteration), so that a
    policy that integrates in pieces (a no-U-turn tree) gets their sum. [integrator]
``update_auxiliary(ctx, q, p)``
    A Gibbs update of the Hamiltonian's own auxiliary variables that keeps the joint
    distribution invariant, at the start of every iteration (a random mass is redrawn and
    the momentum rescaled with it); a no-op by default. [Hamiltonian]
``inverse_mass_diagonal(ctx) -> array``
    The chain's current diagonal inverse mass, for a Hamiltonian whose mass is a per-chain
    variable (read by a structure that depends on the metric). [Hamiltonian]
``prepare(ctx, q)``
    Recompute what the structure derives from the Hamiltonian's auxiliary variables, after
    ``update_auxiliary`` (the magnetic normal form for a random mass); a no-op by default.
    [Poisson structure]
``reverse_structure(ctx)``
    Negate the structure's auxiliary variables (the sign of a magnetic field), as a rejected
    proposal does together with the momentum; a no-op by default. [Poisson structure]
``weigh(ctx, q, p, lp, grad, v, eps)``
    Record the log importance weight of the retained state in the part's column of
    ``ctx.stats`` (a shadow Hamiltonian's :math:`\\tilde H - H`), after every transition;
    ``v`` is scratch space; a no-op by default. [Hamiltonian]
``refresh(ctx, q, p, grad, lp, eps)``
    The momentum refreshment between trajectories, writing its statistics (a momentum
    test's acceptance) into the iteration's row ``ctx.stats``. [momentum refresh]
``trajectory_length(ctx, eps) -> (n_steps, eps)``
    The number of steps of this iteration's trajectory and the step size to integrate it
    with, drawn from the chain's generator (the Metropolis transition calls it, so a new
    length policy, a geometric or Halton length, replaces this kernel alone and reuses the
    transition). [trajectory policy]
``transition(ctx, q, p, grad, lp, eps)``
    One transition from the refreshed state, in place; returns the new log density and
    writes the part's statistics into ``ctx.stats``; its work space is ``ctx.scratch``.
    [trajectory policy]
``tune(ctx, eps, state)``
    One warm-up update of the step size ``eps`` (shape ``(1,)``) from this iteration's
    statistics ``ctx.stats``; ``state`` is the tuner's per-chain state. [step-size tuner]
``adapt(ctx, eps)``
    One warm-up update, after ``tune``, of per-chain values held in ``ctx.aux``: the tuner's
    own state (its :class:`~hamiltonia.compiled.parts.PartKernels` ``aux``) and the
    per-chain parameters other parts declare there (a trajectory's number of steps at
    ``ctx.aux[offset.NAME]``), from the iteration's statistics and step size. Several tuners
    may hand one out (at most :data:`MAX_KERNEL_ADAPTERS`): the plan puts the ``k``-th in
    slot ``adapter_k`` and binds its kernel to the role ``adapt_k``, which the chain kernel
    calls in turn; their state, in ``aux``, is saved with the chains and resumes with them.
    [tuner]
"""

from __future__ import annotations

__all__ = [
    "ADAPTER_SLOTS",
    "COMPOSED_ROLES",
    "CONTEXT_FIELDS",
    "HAMILTONIAN",
    "INTEGRATOR",
    "MAX_KERNEL_ADAPTERS",
    "METHOD_ROLES",
    "NAME_MARKERS",
    "REFRESH",
    "ROLE_SIGNATURES",
    "ROLE_SLOTS",
    "SLOTS",
    "STRUCTURE",
    "TRAJECTORY",
    "TUNER",
    "adapt_1",
    "adapt_2",
    "adapt_3",
    "column",
    "draw_momentum",
    "drift",
    "energy",
    "energy_reads_target",
    "hamiltonian_energy",
    "integrate",
    "inverse_mass_diagonal",
    "kick",
    "kinetic",
    "offset",
    "own",
    "part",
    "position_flow",
    "prepare",
    "randomise",
    "refresh",
    "reverse_structure",
    "target_energy",
    "trajectory_length",
    "transition",
    "tune",
    "update_auxiliary",
    "velocity",
    "weigh",
]

#: What a kernel reads besides the state it is handed: the fields of the kernel context
#: ``ctx`` (:mod:`hamiltonia.compiled.context`), in order.
CONTEXT_FIELDS = ("rng", "aux", "scratch", "stats", "PF", "PI", "logp", "fdata", "idata")

#: The signature of each role: what a kernel filling it takes, and in which order.
ROLE_SIGNATURES = {
    "draw_momentum": "(ctx, q, p)",
    "velocity": "(ctx, q, p, out)",
    "position_flow": "(ctx, q, p, v, h)",
    "kinetic": "(ctx, q, p, v)",
    "energy": "(ctx, q, p, lp, grad, v, eps)",
    "target_energy": "(ctx, q, p, lp, grad, v, eps)",
    "hamiltonian_energy": "(ctx, q, p, lp, grad, v, eps)",
    "kick": "(ctx, q, p, grad, h)",
    "drift": "(ctx, q, p, v, h)",
    "randomise": "(ctx)",
    "integrate": "(ctx, q, p, grad, lp, eps, n_steps, v)",
    "update_auxiliary": "(ctx, q, p)",
    "inverse_mass_diagonal": "(ctx)",
    "prepare": "(ctx, q)",
    "reverse_structure": "(ctx)",
    "weigh": "(ctx, q, p, lp, grad, v, eps)",
    "refresh": "(ctx, q, p, grad, lp, eps)",
    "trajectory_length": "(ctx, eps)",
    "transition": "(ctx, q, p, grad, lp, eps)",
    "tune": "(ctx, eps, state)",
    "adapt": "(ctx, eps)",
}

#: Slots of ``PF`` and ``PI``: which part's parameters sit where.
HAMILTONIAN, STRUCTURE, INTEGRATOR, REFRESH, TRAJECTORY, TUNER = range(6)
#: How many tuners may update inside the chain kernel besides the step size's (role
#: ``adapt``): each has a slot of its own, ``adapter_1`` ...
MAX_KERNEL_ADAPTERS = 3
#: The slot of the ``k``-th tuner that adapts inside the kernel (``k`` from 1).
ADAPTER_SLOTS = tuple(range(TUNER + 1, TUNER + 1 + MAX_KERNEL_ADAPTERS))
SLOTS = (
    "hamiltonian", "structure", "integrator", "refresh", "trajectory", "tuner",
    *(f"adapter_{k}" for k in range(1, MAX_KERNEL_ADAPTERS + 1)),
)  # fmt: skip

#: The slot of the part that fills each role.
ROLE_SLOTS = {
    "draw_momentum": HAMILTONIAN,
    "velocity": HAMILTONIAN,
    "position_flow": HAMILTONIAN,
    "kinetic": HAMILTONIAN,
    "energy": HAMILTONIAN,
    "energy_reads_target": HAMILTONIAN,
    "target_energy": HAMILTONIAN,
    "update_auxiliary": HAMILTONIAN,
    "inverse_mass_diagonal": HAMILTONIAN,
    "weigh": HAMILTONIAN,
    "kick": STRUCTURE,
    "drift": STRUCTURE,
    "prepare": STRUCTURE,
    "reverse_structure": STRUCTURE,
    "integrate": INTEGRATOR,
    "randomise": INTEGRATOR,
    "refresh": REFRESH,
    "transition": TRAJECTORY,
    "trajectory_length": TRAJECTORY,
    "tune": TUNER,
    **{f"adapt_{k}": slot for k, slot in enumerate(ADAPTER_SLOTS, start=1)},
}

#: The roles that no part fills: the composer binds each from the roles the parts fill (see
#: the module's docstring), its kernel composed for the part in this slot. A part that hands
#: out a kernel for one of them is refused (it is not in :data:`ROLE_SLOTS`).
COMPOSED_ROLES = {"hamiltonian_energy": HAMILTONIAN}

#: The roles whose kernels carry the maths of each Python method of the parts
#: (``numeric_methods``): a part that hands out another kernel for one of these roles than
#: the class it inherits the method from has a stale Python form of that method, and one
#: that keeps them keeps it (:func:`~hamiltonia.compiled.parts.python_form_missing`). A
#: method named after a role is that role's; a part whose own methods are named otherwise
#: says so in a class attribute ``method_roles`` of the same shape.
METHOD_ROLES = {
    # Hamiltonian (and its metric)
    "kinetic": ("kinetic",),
    "velocity": ("velocity", "position_flow"),
    "sample_momentum": ("draw_momentum",),
    "sample": ("draw_momentum",),
    "from_standard": ("draw_momentum",),
    "energy": ("energy", "target_energy"),
    "potential": ("energy", "target_energy"),
    # Poisson structure
    "vector_field": ("kick", "drift"),
    "reverse": ("reverse_structure",),
    # integrator
    "step": ("integrate",),
    # trajectory policy: the length of a Metropolis trajectory and its jittered step size
    "n_steps": ("trajectory_length",),
    "jittered": ("trajectory_length",),
    # tuner
    "update": ("tune", "adapt"),
}


class Role:
    """A placeholder for the kernel that fills role ``name`` in a composition (or, for a
    flag such as ``energy_reads_target``, for the number that fills it: the composer binds
    it as a module constant, which numba folds)."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args):
        raise RuntimeError(
            f"the role {self.name!r} is bound only inside a compiled composition "
            "(hamiltonia.compiled.compose); call the part's Python method instead"
        )

    def __repr__(self):
        return f"Role({self.name!r})"


draw_momentum = Role("draw_momentum")
velocity = Role("velocity")
position_flow = Role("position_flow")
kinetic = Role("kinetic")
energy = Role("energy")
energy_reads_target = Role("energy_reads_target")
target_energy = Role("target_energy")
hamiltonian_energy = Role("hamiltonian_energy")
kick = Role("kick")
drift = Role("drift")
update_auxiliary = Role("update_auxiliary")
inverse_mass_diagonal = Role("inverse_mass_diagonal")
weigh = Role("weigh")
prepare = Role("prepare")
reverse_structure = Role("reverse_structure")
integrate = Role("integrate")
randomise = Role("randomise")
refresh = Role("refresh")
transition = Role("transition")
trajectory_length = Role("trajectory_length")
tune = Role("tune")
adapt_1 = Role("adapt_1")
adapt_2 = Role("adapt_2")
adapt_3 = Role("adapt_3")


class Names:
    """A marker whose attributes name parameters, columns or offsets in a kernel (see the
    module's docstring): the composer rewrites ``own.rho`` into the place of the part's
    ``rho``. Outside a composition the names mean nothing, and reading one raises."""

    def __init__(self, kind: str):
        self._kind = kind

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(
            f"{self._kind}.{name} names a value only inside a compiled composition "
            "(hamiltonia.compiled.compose); call the part's Python method instead"
        )

    def __repr__(self):
        return f"Names({self._kind!r})"


own = Names("own")
part = Names("part")
column = Names("column")
offset = Names("offset")
#: The markers by the kind of name they carry.
NAME_MARKERS = {"own": own, "part": part, "column": column, "offset": offset}
