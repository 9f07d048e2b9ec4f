"""The contract between a momentum refresh and a Hamiltonian: what one requires, what the
other provides, checked once where a sampler is composed.

A refresh declares ``requires``, a set of capability names; a Hamiltonian declares
``provides``; :meth:`~hamiltonia.refresh.momentum.MomentumRefresh.check` refuses a
composition whose Hamiltonian lacks a requirement, naming both parts and the refresh to use
instead. One capability is defined:

``"gaussian-momentum"`` (:data:`GAUSSIAN_MOMENTUM`)
    Under :math:`e^{-H}`, the momentum given the position (and the auxiliary variables, a
    random mass) is the zero-mean Gaussian :math:`\\mathcal N(0, M)` that
    ``sample_momentum`` draws. A partial refresh needs it: with :math:`u \\sim \\mathcal
    N(0, M)`,

    .. math::

        p' = \\rho p + \\sqrt{1 - \\rho^2}\\, u \\sim \\mathcal N(0, \\rho^2 M + (1 - \\rho^2) M)
        = \\mathcal N(0, M) \\quad \\text{if } p \\sim \\mathcal N(0, M),

    and for any other distribution of :math:`p` (a relativistic kinetic energy's, a
    non-separable shadow's :math:`p \\mid q`) the mix is a convolution that changes its
    shape, towards the Gaussian of the same covariance, so :math:`e^{-H}` is not kept. A
    refresh that tests the mixed momentum against the energy
    (:class:`~hamiltonia.refresh.momentum.MetropolisPartialRefresh`) keeps :math:`e^{-H}`
    for any symmetric kinetic energy, :math:`K(-p) = K(p)`, whose ``sample_momentum``
    draws :math:`e^{-K}`.

**How a Hamiltonian declares.** A class attribute (or property) ``provides``, a frozenset of
capability names; the declaration vouches for the maths of the class that makes it and of
its bases. A subclass that redefines a method the momentum's distribution depends on
(:data:`MOMENTUM_METHODS`: ``kinetic``, ``velocity``, ``sample_momentum``, ``energy``,
and ``compiled``, whose kernels carry them on the compiled path) below the declaring class
voids the declaration, and provides nothing until it declares again: a relativistic kinetic
energy written as a subclass of :class:`~hamiltonia.hamiltonians.EuclideanHamiltonian` does
not inherit its Gaussian momentum. A Hamiltonian that ``needs_momentum_test`` (the
leapfrog's non-separable shadow) never provides a Gaussian momentum. hamiltonia's own
Hamiltonians declare it on their classes: the Euclidean and random-mass ones a Gaussian
momentum, the leapfrog's shadow none, the separable shadow and the conditional Hamiltonian
what their base provides (a property). A Hamiltonian that declares nothing provides
nothing: the safe default, since the framework cannot know a new kinetic energy's
distribution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "CAPABILITIES",
    "GAUSSIAN_MOMENTUM",
    "MOMENTUM_METHODS",
    "Provision",
    "check_requirements",
    "provided",
    "provision",
]

#: The capability of a Hamiltonian whose momentum given the position is the zero-mean
#: Gaussian its ``sample_momentum`` draws (see the module docstring).
GAUSSIAN_MOMENTUM = "gaussian-momentum"

#: Each capability, as a refusal names it.
CAPABILITIES = {
    GAUSSIAN_MOMENTUM: (
        "a Gaussian momentum (under exp(-H), the momentum given the position is the "
        "N(0, M) that sample_momentum draws)"
    ),
}

#: The methods whose maths decide the momentum's distribution under :math:`e^{-H}`: the
#: Python forms, and ``compiled``, whose kernels are the maths on the compiled path (and
#: the only form of a Hamiltonian written as kernels).
MOMENTUM_METHODS = ("kinetic", "velocity", "sample_momentum", "energy", "compiled")


@dataclass(frozen=True)
class Provision:
    """What a Hamiltonian provides, and why (for a refusal's message).

    Attributes
    ----------
    provides : frozenset of str
        The capability names.
    reason : str
        Where the answer comes from: the declaring class, or why there is none.
    """

    provides: frozenset[str]
    reason: str


def _declaration(hamiltonian: Any) -> tuple[type | None, Any]:
    """The most derived class of ``hamiltonian`` that declares ``provides``, and the
    declared value."""
    for cls in type(hamiltonian).__mro__:
        if "provides" in vars(cls):
            return cls, hamiltonian.provides
    return None, frozenset()


def provision(hamiltonian: Any) -> Provision:
    """What ``hamiltonian`` provides (see the module docstring for the rules), with the
    reason."""
    name = type(hamiltonian).__name__
    if "provides" in getattr(hamiltonian, "__dict__", {}):
        provides = frozenset(hamiltonian.provides)
        reason = f"{name} declares provides={sorted(provides)} on the instance"
    else:
        cls, declared = _declaration(hamiltonian)
        provides = frozenset(declared)
        reason = (
            f"{name} declares no provides"
            if not provides and cls is not type(hamiltonian)
            else f"{cls.__name__} declares provides={sorted(provides)}"
        )
        # A method the momentum depends on, redefined below the declaring class, voids it.
        redefined = [
            method
            for method in MOMENTUM_METHODS
            if cls is not None and not issubclass(cls, _definer(type(hamiltonian), method))
        ]
        if redefined and provides:
            return Provision(
                frozenset(),
                f"{name} redefines {', '.join(redefined)} below {cls.__name__}, whose "
                f"provides={sorted(provides)} therefore does not hold for it",
            )
    if GAUSSIAN_MOMENTUM in provides and getattr(hamiltonian, "needs_momentum_test", False):
        provides = provides - {GAUSSIAN_MOMENTUM}
        reason += "; but it needs a momentum test: its momentum given the position is not Gaussian"
    return Provision(provides, reason)


def _definer(cls: type, method: str) -> type:
    """The class of ``cls``'s method resolution order that defines ``method``."""
    return next((klass for klass in cls.__mro__ if method in vars(klass)), object)


def provided(hamiltonian: Any) -> frozenset[str]:
    """The capability names ``hamiltonian`` provides."""
    return provision(hamiltonian).provides


def check_requirements(refresh: Any, hamiltonian: Any) -> None:
    """Refuse ``refresh`` with ``hamiltonian`` where the Hamiltonian lacks a capability the
    refresh ``requires``: ``ValueError`` naming both parts, what is missing, why, and the
    refresh's ``instead`` (the one to use in its place)."""
    requires = frozenset(getattr(refresh, "requires", frozenset()))
    if not requires:
        return
    found = provision(hamiltonian)
    missing = sorted(requires - found.provides)
    if not missing:
        return
    ham = type(hamiltonian).__name__
    needs = " and ".join(CAPABILITIES.get(item, repr(item)) for item in missing)
    instead = getattr(refresh, "instead", "")
    declare = ", ".join(repr(item) for item in missing)
    raise ValueError(
        f"refresh {refresh!r} requires {needs}, which hamiltonian {ham} does not provide "
        f"({found.reason}). "
        + (f"Use {instead}; or, " if instead else "")
        + f"if {ham}'s momentum is such, declare provides = frozenset({{{declare}}}) on it"
    )
