"""The quantum-inspired random mass: a diagonal mass matrix redrawn every iteration.

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").
"""

from __future__ import annotations

import numpy as np

from hamiltonia import backend
from hamiltonia._validation import as_float
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import offset, own
from hamiltonia.elementary import exp
from hamiltonia.hamiltonians.base import separable_energy_kernel
from hamiltonia.hamiltonians.euclidean import EuclideanHamiltonian
from hamiltonia.hamiltonians.metrics import DiagonalMetric, IdentityMetric, gaussian_kinetic_kernel
from hamiltonia.refresh.contracts import GAUSSIAN_MOMENTUM

__all__ = [
    "MASS_AUX",
    "RandomMassHamiltonian",
    "check_mass_volatility",
    "draw_log_mass",
    "momentum_rescale",
    "random_inverse_mass",
]

#: The chain's auxiliary variable holding :math:`\log m` (zero, the value of a variable not
#: set yet, is the base metric itself).
MASS_AUX = "log_mass"


def check_mass_volatility(value) -> float:
    """A finite :math:`\\beta \\ge 0`, or ``ValueError`` naming ``mass_volatility``."""
    beta = as_float(value, "mass_volatility", "a number >= 0")
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(f"mass_volatility must be a finite number >= 0, got {value!r}")
    return beta


# -- the maths, written once for both paths (scalars or arrays)


def draw_log_mass(volatility, z):
    """:math:`\\log m = \\beta z`, :math:`z \\sim \\mathcal N(0, 1)`."""
    return volatility * z


def momentum_rescale(old_log_mass, new_log_mass):
    """:math:`\\sqrt{m_{new}/m_{old}}`: keeps the whitened momentum :math:`M^{-1/2}p`."""
    return exp(0.5 * (new_log_mass - old_log_mass))


def random_inverse_mass(base_inverse_mass, log_mass):
    """:math:`M^{-1} = M_0^{-1} e^{-\\log m}` (diagonal)."""
    return base_inverse_mass * exp(-log_mass)


# -- kernels (see hamiltonia.compiled.roles): parameters ``mass_volatility`` (beta) and
#    ``base_inverse_mass``; aux: log m, then the workspace M^{-1} and M^{1/2}


def random_mass_update_kernel(ctx, q, p):
    """Redraw the mass and rescale the momentum with it (role ``update_auxiliary``)."""
    d = p.shape[0]
    volatility = own.mass_volatility
    base = own.base_inverse_mass
    at = offset.log_mass
    inverse_at = offset.inverse_mass
    sqrt_at = offset.sqrt_mass
    for i in range(d):
        new = draw_log_mass(volatility, ctx.rng.standard_normal())
        p[i] *= momentum_rescale(ctx.aux[at + i], new)
        ctx.aux[at + i] = new
        inverse = random_inverse_mass(base[i], new)
        ctx.aux[inverse_at + i] = inverse
        ctx.aux[sqrt_at + i] = 1.0 / np.sqrt(inverse)


def random_mass_inverse_kernel(ctx):
    """The chain's diagonal inverse mass (role ``inverse_mass_diagonal``)."""
    d = own.base_inverse_mass.shape[0]
    at = offset.inverse_mass
    return ctx.aux[at : at + d]


def random_mass_velocity_kernel(ctx, q, p, out):
    d = p.shape[0]
    at = offset.inverse_mass
    for i in range(d):
        out[i] = ctx.aux[at + i] * p[i]
    return out


def random_mass_position_flow_kernel(ctx, q, p, v, h):
    """:math:`q \\leftarrow q + h M^{-1} p` in one pass, with the finite check."""
    d = q.shape[0]
    at = offset.inverse_mass
    check = 0.0
    for i in range(d):
        q[i] += h * (ctx.aux[at + i] * p[i])
        check += q[i] - q[i]
    return check


def random_mass_draw_kernel(ctx, q, p):
    d = p.shape[0]
    at = offset.sqrt_mass
    for i in range(d):
        p[i] = ctx.rng.standard_normal() * ctx.aux[at + i]


class RandomMassHamiltonian(EuclideanHamiltonian):
    """A Gaussian kinetic energy whose diagonal mass is redrawn every iteration
    (quantum-inspired HMC, Liu and Zhang 2019; Mongwe 2022, thesis, §2.6 and
    §4.2):

    .. math::

        M = M_0^{1/2} \\operatorname{diag}(m) M_0^{1/2}, \\qquad
        \\log m_i \\sim \\mathcal N(0, \\beta^2) \\text{ independently},

    with the base metric :math:`M_0` (identity, as in the research, or a diagonal one that
    warm-up may adapt) and the vol-of-vol :math:`\\beta`. The mass is the chain's auxiliary
    variable :data:`MASS_AUX` (:math:`\\log m`). Marginally over :math:`m` and :math:`p` the
    chain targets :math:`\\pi(q)` (thesis Theorem 4.2.2): the mass is held for a whole
    trajectory and its Metropolis test, so momentum draws, kinetic energy and integrator use
    the same :math:`M` and the normalising :math:`\\tfrac12\\log|M|` cancels.

    The mass is redrawn at the start of each iteration, before the momentum refresh, by an
    exact Gibbs step in the coordinates :math:`(q, z = M^{-1/2} p, m)`, in which
    :math:`m` is independent of :math:`(q, z)`: a new :math:`m'` is drawn and the momentum
    rescaled to :math:`p' = M'^{1/2} z`. With a full refresh the rescaling is irrelevant;
    with a partial refresh (a momentum kept between iterations) it is what keeps the
    composition valid, where drawing :math:`m'` and keeping :math:`p` would not be.

    The research's convention is followed: :math:`\\beta` is the standard deviation of
    :math:`\\log m_i` (thesis §4.2). The public code of the research draws
    :math:`\\sqrt{m_i} = e^{\\beta z}`, so that its :math:`\\beta` is half of this one.

    Parameters
    ----------
    target : Target
    mass_volatility : float >= 0
        :math:`\\beta` (0.1 for banana and Australian credit, 0.3 otherwise in the research;
        0 is the base metric, i.e. HMC).
    metric : None, "identity", 1-D array or DiagonalMetric
        The base metric :math:`M_0^{-1}` (dense metrics are refused: the random mass is
        diagonal in the base metric's coordinates only for a diagonal one).
    """

    per_chain_mass = True
    #: Given the position and the mass, the momentum is :math:`\mathcal N(0, M)`: declared
    #: again, since this class redefines the kinetic energy.
    provides = frozenset({GAUSSIAN_MOMENTUM})

    def __init__(self, target, mass_volatility: float, metric=None):
        super().__init__(target, metric)
        self._base_inverse_mass()  # refuses a dense metric now
        self.mass_volatility = check_mass_volatility(mass_volatility)

    def _base_inverse_mass(self) -> np.ndarray:
        if isinstance(self.metric, IdentityMetric):
            return np.ones(self.dim)
        if isinstance(self.metric, DiagonalMetric):
            return self.metric.inverse_mass
        raise ValueError(
            "a random mass needs an identity or diagonal base metric, got "
            f"{type(self.metric).__name__} (adapt the metric with 'diagonal')"
        )

    def inverse_mass_diagonal(self, aux):
        log_mass = (aux or {}).get(MASS_AUX)
        if log_mass is None:  # before the first draw: the base metric
            return None
        return random_inverse_mass(backend.asarray(self._base_inverse_mass()), log_mass)

    def _inverse(self, aux):
        inverse = self.inverse_mass_diagonal(aux)
        return backend.asarray(self._base_inverse_mass()) if inverse is None else inverse

    def kinetic(self, p, aux=None):
        return 0.5 * backend.xp().sum(self._inverse(aux) * p * p, axis=-1)

    def velocity(self, p, aux=None):
        return self._inverse(aux) * p

    def sample_momentum(self, rngs, aux=None):
        z = backend.asarray(np.stack([rng.standard_normal(self.dim) for rng in rngs]))
        return z / backend.xp().sqrt(self._inverse(aux))

    def update_auxiliary(self, state, rngs):
        xp = backend.xp()
        z = np.stack([rng.standard_normal(self.dim) for rng in rngs])
        new = backend.asarray(draw_log_mass(self.mass_volatility, z))
        old = state.aux.get(MASS_AUX)
        old = xp.zeros_like(new) if old is None else old
        p = state.p * momentum_rescale(old, new)
        return type(state)(state.q, p, state.log_prob, state.grad, {**state.aux, MASS_AUX: new})

    def compiled(self, dim):
        d = self.dim
        return PartKernels(
            {
                "update_auxiliary": random_mass_update_kernel,
                "inverse_mass_diagonal": random_mass_inverse_kernel,
                "velocity": random_mass_velocity_kernel,
                "position_flow": random_mass_position_flow_kernel,
                "kinetic": gaussian_kinetic_kernel,
                "draw_momentum": random_mass_draw_kernel,
                "energy": separable_energy_kernel,
            },
            params={
                "mass_volatility": float(self.mass_volatility),
                "base_inverse_mass": self._base_inverse_mass(),
            },
            aux=((MASS_AUX, d),),
            workspace=(("inverse_mass", d), ("sqrt_mass", d)),
        )

    def __repr__(self):
        return (
            f"RandomMassHamiltonian({self.target!r}, mass_volatility={self.mass_volatility}, "
            f"metric={self.metric!r})"
        )
