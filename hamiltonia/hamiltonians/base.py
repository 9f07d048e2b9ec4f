"""The abstract :class:`Hamiltonian`."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from hamiltonia import backend
from hamiltonia.compiled import python_calls
from hamiltonia.compiled.roles import kinetic as kinetic_role
from hamiltonia.compiled.roles import velocity as velocity_role
from hamiltonia.state import PhaseState, evaluate_target

__all__ = ["Hamiltonian", "position_flow_kernel", "separable_energy_kernel"]


def position_flow_kernel(ctx, q, p, v, h):
    """:math:`q \\leftarrow q + h\\, \\partial H/\\partial p` through the ``velocity`` role
    (the ``position_flow`` role of any Hamiltonian whose metric gives no fused one); returns
    0 when the new position is finite, nan otherwise."""
    v = velocity_role(ctx, q, p, v)
    check = 0.0
    for i in range(q.shape[0]):
        q[i] += h * v[i]
        # x - x is 0 for finite x and nan otherwise: the check rides along the update.
        check += q[i] - q[i]
    return check


def separable_energy_kernel(ctx, q, p, lp, grad, v, eps):
    """Kernel of :math:`H = -\\log\\pi(q) + K(p)` (the ``energy`` role); ``v`` is scratch
    space for :math:`\\partial K/\\partial p`."""
    return -lp + kinetic_role(ctx, q, p, velocity_role(ctx, q, p, v))


class Hamiltonian:
    """A Hamiltonian :math:`H(q, p) = U(q) + K(p)` over a target.

    The potential energy is :math:`U(q) = -\\log\\pi(q)`; the kinetic energy and the momentum
    distribution :math:`\\propto e^{-K(p)}` are chosen by subclasses.

    Contract
    --------
    * ``potential(state)`` and ``kinetic(p, aux)`` return one value per chain;
      ``energy(state, step_size)`` is the energy the accept step uses: :math:`H` here
      (``step_size``, the step size actually integrated, matters only to a shadow
      Hamiltonian).
    * ``velocity(p, aux)`` is :math:`\\partial H/\\partial p`; the force is
      ``state.grad`` :math:`= -\\partial H/\\partial q`.
    * ``sample_momentum(rngs, aux)`` draws one momentum per chain, row ``c`` from
      ``rngs[c]``.
    * ``aux`` is the chains' auxiliary variables (``state.aux``), for Hamiltonians whose
      kinetic energy depends on a per-chain variable (a random mass); others ignore it.
    * ``compiled(dim)`` returns the compiled counterpart
      (:class:`~hamiltonia.compiled.parts.PartKernels` for the roles ``velocity``,
      ``kinetic``, ``draw_momentum`` and ``energy``), or ``None``.
    * ``update_auxiliary(state, rngs)`` is a Gibbs update of the Hamiltonian's own
      auxiliary variables at the start of an iteration (a random mass is redrawn); the
      state itself by default. ``per_chain_mass`` says whether the mass is such a variable,
      and ``inverse_mass_diagonal(aux)`` then returns it, shape ``(chains, dim)`` (``None``
      for a fixed metric).
    * ``evaluate(q)`` builds a :class:`~hamiltonia.state.PhaseState` at positions ``q`` (with
      zero momenta), evaluating the target once and turning failures into ``nan``.
    * ``n_grad_per_evaluation`` is the number of gradient evaluations ``evaluate`` costs.
    * An energy that evaluates the target (a non-separable shadow's curvature) counts its
      gradients between ``start_counting(n_chains)`` and ``counted()``, which the sampler
      adds to ``n_grad``; ``counted()`` is ``None`` by default.
    * A Hamiltonian may be written only as a kernel (``compiled()``, and none of
      :attr:`KERNEL_FORMS`): it runs on the compiled path, and this class's methods call its
      kernels, one chain at a time, for the Python entries that still ask for them (the
      step-size search, the test kit's start): ``kinetic``, ``velocity``,
      ``sample_momentum``, ``energy`` (its ``energy`` kernel), ``update_auxiliary`` and
      ``inverse_mass_diagonal`` (their kernels, where it hands them out). Where a kernel
      cannot stand in, the error names the Hamiltonian and the method
      (:mod:`hamiltonia.compiled.python_calls`); one with neither form is refused when its
      sampler is built (:meth:`check_forms`).
    """

    n_grad_per_evaluation = 1
    per_chain_mass = False
    #: What the Hamiltonian vouches for its momentum (:mod:`hamiltonia.refresh.contracts`):
    #: nothing by default, since the framework cannot know a new kinetic energy's law.
    provides: frozenset[str] = frozenset()

    def __init__(self, target):
        self.target = target

    @property
    def dim(self) -> int:
        return self.target.dim

    def potential(self, state: PhaseState) -> np.ndarray:
        """:math:`U(q) = -\\log\\pi(q)`."""
        return -state.log_prob

    # The three methods below are abstract: a Hamiltonian that does not write them has no
    # Python form of its maths (python_form_missing says so, and the run is compiled). Their
    # bodies call the part's kernels instead, one chain at a time, for the Python entries
    # that still ask for them (the step-size search, the test kit's start); a part with
    # neither form is told so, naming the method.

    @abstractmethod
    def kinetic(self, p: np.ndarray, aux: dict | None = None) -> np.ndarray:
        """:math:`K(p)` per chain; here, for a Hamiltonian written only as a kernel, its
        ``kinetic`` kernel of its ``velocity`` (:mod:`hamiltonia.compiled.python_calls`)."""
        return self._kernel_form("kinetic").kinetic(p, aux)

    @abstractmethod
    def velocity(self, p: np.ndarray, aux: dict | None = None) -> np.ndarray:
        """:math:`\\partial H/\\partial p` per chain; here, its ``velocity`` kernel."""
        return self._kernel_form("velocity").velocity(p, aux)

    @abstractmethod
    def sample_momentum(
        self, rngs: Sequence[np.random.Generator], aux: dict | None = None
    ) -> np.ndarray:
        """One momentum per chain, row ``c`` from ``rngs[c]``; here, its ``draw_momentum``
        kernel, with the draws of the compiled chain."""
        return self._kernel_form("sample_momentum").sample(rngs, aux, self.dim)

    def energy(self, state: PhaseState, step_size=None) -> np.ndarray:
        """:math:`H(q, p)` per chain: the potential and the kinetic energy or, for a
        Hamiltonian with no Python ``kinetic``, its ``energy`` kernel (which may differ from
        :math:`H`, as a shadow's does)."""
        if self.without_python_form("kinetic"):
            return self._kernel_form("energy").energy(state, step_size, self.target)
        return self.potential(state) + self.kinetic(state.p, state.aux)

    def update_auxiliary(self, state: PhaseState, rngs) -> PhaseState:
        """No auxiliary variables to update: ``state`` itself; for a Hamiltonian written
        only as a kernel, the update of its ``update_auxiliary`` kernel, if it has one."""
        form = self._kernel_form("update_auxiliary", optional=True)
        return state if form is None else form.update_auxiliary(state, rngs)

    #: The methods a Hamiltonian written only as a kernel leaves to this class.
    KERNEL_FORMS = ("kinetic", "velocity", "sample_momentum")

    def without_python_form(self, *names: str) -> bool:
        """Whether the Hamiltonian leaves any of the methods ``names`` (default
        :attr:`KERNEL_FORMS`) to this class's calls of its kernels: it has no Python form
        of them."""
        cls = type(self)
        return any(
            getattr(getattr(cls, name, None), "__isabstractmethod__", False)
            for name in names or self.KERNEL_FORMS
        )

    def _kernel_form(self, method: str, optional: bool = False):
        """The Hamiltonian's kernels to call in place of its Python ``method``
        (:func:`hamiltonia.compiled.python_calls.kernel_form`); with ``optional``, ``None``
        for a Hamiltonian with a Python form, or no kernel for the method."""
        if optional and not self.without_python_form():
            return None
        return python_calls.kernel_form(self, "hamiltonian", method, self.dim, optional=optional)

    def check_forms(self) -> None:
        """Refuse, naming the method, a Hamiltonian that has neither a Python form of one of
        :attr:`KERNEL_FORMS` nor a kernel for it (``compiled()`` returns ``None``): before
        any sampling, rather than at its first call. Whether its kernels can stand in for
        each method is told at that call, which composes them."""
        for name in self.KERNEL_FORMS:
            if self.without_python_form(name):
                python_calls.kernels_for(self, "hamiltonian", name, self.dim)

    def start_counting(self, n_chains: int) -> None:
        """Begin counting the gradients the energies of one iteration spend (NumPy path;
        none for a Hamiltonian whose energy does not evaluate the target)."""

    def counted(self):
        """The gradients counted since :meth:`start_counting`, per chain, or ``None``."""
        return None

    def inverse_mass_diagonal(self, aux: dict | None):
        """A fixed metric: ``None``; for a Hamiltonian written only as a kernel, its
        ``inverse_mass_diagonal`` kernel, if it has one."""
        form = self._kernel_form("inverse_mass_diagonal", optional=True)
        if form is None or not aux:
            return None
        n = np.shape(next(iter(aux.values())))[0]
        return form.inverse_mass_diagonal(aux, n, self.dim)

    #: Methods whose maths the compiled counterpart repeats (see
    #: :func:`hamiltonia.compiled.parts.overrides_without_kernel`).
    numeric_methods = (
        "kinetic",
        "velocity",
        "sample_momentum",
        "energy",
        "potential",
        "update_auxiliary",
        "inverse_mass_diagonal",
    )

    def compiled(self, dim: int):
        """The compiled counterpart, or ``None`` (the run then uses the NumPy path)."""
        return None

    def evaluate(self, q: np.ndarray, p: np.ndarray | None = None) -> PhaseState:
        """A phase state at ``q`` (and ``p``, zeros by default)."""
        lp, g = evaluate_target(self.target, q, with_grad=True)
        return PhaseState(q, backend.xp().zeros_like(q) if p is None else p, lp, g)
