"""Shadow Hamiltonians: the abstract :class:`ShadowHamiltonian` and the separable
:class:`SeparableShadowHamiltonian` of S2HMC.

A symplectic integrator of step size :math:`\\varepsilon` conserves, far better than
:math:`H`, a modified ("shadow") Hamiltonian :math:`\\tilde H = H + O(\\varepsilon^k)`. A
shadow sampler targets :math:`e^{-\\tilde H}`, which raises acceptance, and corrects the draws
with the importance weights

.. math::

    w(q, p) = \\exp\\bigl(\\tilde H(q, p) - H(q, p)\\bigr),

so that weighted averages estimate expectations under :math:`e^{-H}`.

References
----------
Izaguirre and Hampton (2004), *Shadow hybrid Monte Carlo*; Sweet, Hampton, Skeel and Izaguirre
(2009), *A separable shadow Hamiltonian hybrid Monte Carlo method* (S2HMC); Mongwe, Mbuvha and
Marwala (2021, 2022), PS2HMC and SMHMC.

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from hamiltonia import backend
from hamiltonia.compiled.roles import column, kinetic, offset, own, velocity
from hamiltonia.hamiltonians.base import Hamiltonian, separable_energy_kernel
from hamiltonia.state import PhaseState
from hamiltonia.structures.magnetic import FIELD_AUX, field_sign

__all__ = ["LeapfrogShadowHamiltonian", "SeparableShadowHamiltonian", "ShadowHamiltonian"]


class ShadowHamiltonian(Hamiltonian):
    """A Hamiltonian :math:`\\tilde H` that wraps a base Hamiltonian :math:`H`.

    Contract
    --------
    * ``base`` is the wrapped :class:`Hamiltonian`; kinetic energy, velocity and momentum draws
      are delegated to it, so integrators still integrate the flow of :math:`H`.
    * ``energy(state, step_size)`` returns :math:`\\tilde H` for the integrator and step size
      in use (one value per chain); the accept step of a shadow sampler uses it in place of
      :math:`H`.
    * ``log_weight(state, step_size)`` returns :math:`\\tilde H - H`, the log importance weight
      of a retained draw.
    * ``order`` is :math:`k` in :math:`\\tilde H - H_{\\text{conserved}} = O(\\varepsilon^k)`.
    """

    order: int = 4

    def __init__(self, base: Hamiltonian):
        super().__init__(base.target)
        self.base = base

    @property
    def metric(self):
        """The base Hamiltonian's metric (a warm-up tuner adapts it there)."""
        return self.base.metric

    @metric.setter
    def metric(self, metric):
        self.base.metric = metric

    def kinetic(self, p, aux=None):
        return self.base.kinetic(p, aux)

    def velocity(self, p, aux=None):
        return self.base.velocity(p, aux)

    def sample_momentum(self, rngs, aux=None):
        return self.base.sample_momentum(rngs, aux)

    def energy(self, state: PhaseState, step_size: np.ndarray | None = None) -> np.ndarray:
        raise NotImplementedError

    def log_weight(self, state: PhaseState, step_size: np.ndarray) -> np.ndarray:
        """:math:`\\log w = \\tilde H - H`."""
        return self.energy(state, step_size) - self.base.energy(state, step_size)


def backward_error_term(eps, value):
    """:math:`\\tfrac{\\varepsilon^2}{12}\\,x`: every shadow's correction is this times a
    combination of kinetic energies and curvatures (both paths, scalars or arrays)."""
    return eps * eps / 12.0 * value


def central_curvature(eps, dot):
    """:math:`v^\\top\\nabla^2 U v \\approx -v^\\top(g_+ - g_-)/2\\varepsilon` from
    ``dot`` :math:`= v^\\top(g_+ - g_-)`, :math:`g_\\pm = \\nabla\\log\\pi(q \\pm
    \\varepsilon v)` (both paths)."""
    return -dot / (2.0 * eps)


def _check_shadow_base(base, kind: str) -> None:
    """Refuse a base a shadow of ``kind`` cannot wrap, naming why."""
    if not isinstance(base, Hamiltonian):
        raise TypeError(f"base must be a Hamiltonian, got {type(base).__name__}")
    if isinstance(base, ShadowHamiltonian):
        raise ValueError("base must be a Hamiltonian H, not another shadow Hamiltonian")
    if base.per_chain_mass:
        raise ValueError(
            f"base {type(base).__name__} has a random mass: the {kind} shadow's correction "
            "depends on the mass, so a Gibbs redraw of the mass from its prior would not "
            "leave exp(-H~) invariant; use a fixed metric"
        )
    if type(base).energy is not Hamiltonian.energy:
        raise ValueError(
            f"base {type(base).__name__} overrides energy(): the {kind} shadow needs "
            "H = U(q) + K(p)"
        )


def gradient_term_kernel(ctx, q, grad, v, eps):
    """:math:`\\tfrac{\\varepsilon^2}{12} K(\\nabla\\log\\pi)`, the separable shadow's
    correction to :math:`H` and its log weight; ``v`` is scratch space."""
    return backward_error_term(eps, kinetic(ctx, q, grad, velocity(ctx, q, grad, v)))


def separable_shadow_energy_kernel(ctx, q, p, lp, grad, v, eps):
    """Kernel of :meth:`SeparableShadowHamiltonian.energy` (role ``energy``):
    :math:`H + \\tfrac{\\varepsilon^2}{12} K(\\nabla\\log\\pi)`; ``v`` is scratch space."""
    h = separable_energy_kernel(ctx, q, p, lp, grad, v, eps)
    return h + gradient_term_kernel(ctx, q, grad, v, eps)


def separable_shadow_weight_kernel(ctx, q, p, lp, grad, v, eps):
    """Kernel of :meth:`SeparableShadowHamiltonian.log_weight` (role ``weigh``): writes
    :math:`\\tfrac{\\varepsilon^2}{12} K(\\nabla\\log\\pi)` into the part's column."""
    ctx.stats[column.log_weight] = gradient_term_kernel(ctx, q, grad, v, eps)


class SeparableShadowHamiltonian(ShadowHamiltonian):
    """The separable shadow Hamiltonian of S2HMC (Sweet et al. 2009):

    .. math::

        \\tilde H(q, p) = U(q) + K(p) + \\frac{\\varepsilon^2}{24}\\,
            \\nabla U(q)^\\top M^{-1} \\nabla U(q)
        = H(q, p) + \\frac{\\varepsilon^2}{12} K\\bigl(\\nabla U(q)\\bigr),

    with :math:`U = -\\log\\pi` and :math:`K(p) = \\tfrac12 p^\\top M^{-1} p`. It is the
    leapfrog's fourth-order shadow :math:`\\hat H` (Mongwe, Mbuvha and Marwala 2021, PS2HMC,
    Theorem 1) written in the coordinates of the canonical map :math:`X` of
    :class:`~hamiltonia.integrators.ProcessedLeapfrog`:
    :math:`\\tilde H = \\hat H \\circ X + O(\\varepsilon^4)`, so the processed leapfrog
    :math:`X^{-1} \\circ \\text{LF}^L \\circ X` conserves it to fourth order while it conserves
    :math:`H` to second order. :math:`\\tilde H` is separable with the same Gaussian
    momentum, so a full or partial momentum refresh leaves :math:`e^{-\\tilde H}` invariant
    with no momentum test (PS2HMC, §III: the test "is actually not required"). The log
    importance weight of a draw is

    .. math::

        \\log w = \\tilde H - H = \\frac{\\varepsilon^2}{24}\\,
            \\nabla U^\\top M^{-1} \\nabla U,

    a function of :math:`q` alone.

    Parameters
    ----------
    base : Hamiltonian
        :math:`H`: a separable Hamiltonian with a fixed metric
        (:class:`~hamiltonia.hamiltonians.EuclideanHamiltonian`).

    References
    ----------
    Sweet, Hampton, Skeel and Izaguirre (2009), *A separable shadow Hamiltonian hybrid Monte
    Carlo method*, J. Chem. Phys. 131; Mongwe, Mbuvha and Marwala (2021), PS2HMC, IEEE Access
    9:151235-151244, eq. 14.
    """

    order = 4

    @property
    def provides(self) -> frozenset[str]:
        """What its base provides: the shadow adds to :math:`H` a term of the
        position alone, which leaves the momentum's law given the position as it was."""
        from hamiltonia.refresh.contracts import provided

        return provided(self.base)

    def __init__(self, base: Hamiltonian):
        _check_shadow_base(base, "separable")
        super().__init__(base)

    def energy(self, state: PhaseState, step_size=None) -> np.ndarray:
        """:math:`\\tilde H` per chain at the step size ``step_size`` (one per chain)."""
        if step_size is None:
            raise ValueError("a shadow Hamiltonian's energy needs the step size integrated")
        return self.base.energy(state) + self.log_weight(state, step_size)

    def log_weight(self, state: PhaseState, step_size) -> np.ndarray:
        """:math:`\\tilde H - H = \\tfrac{\\varepsilon^2}{12} K(\\nabla\\log\\pi(q))`."""
        eps = backend.asarray(np.asarray(step_size, dtype=np.float64))
        return backward_error_term(eps, self.base.kinetic(state.grad, state.aux))

    def compiled(self, dim):
        from hamiltonia.compiled.parts import compiled_counterpart

        kernels = compiled_counterpart(self.base, dim, "hamiltonian")
        functions = {
            **kernels.functions,
            "energy": separable_shadow_energy_kernel,
            "weigh": separable_shadow_weight_kernel,
        }
        return replace(
            kernels, functions=functions, stats=(*kernels.stats, ("log_weight", "float64"))
        )

    def __repr__(self):
        return f"SeparableShadowHamiltonian({self.base!r})"


#: How the non-separable shadow's curvature term gets its Hessian-vector product.
HESSIAN_METHODS = ("finite-difference", "target")
#: The sign of the magnetic term: the one that conserves to fourth order, or the paper's.
SHADOW_SIGNS = ("corrected", "printed")


def _leapfrog_shadow_terms(ctx, q, p, lp, grad, v, eps):
    """The field-free :math:`\\hat H` of :class:`LeapfrogShadowHamiltonian`, with the
    Hessian-vector product by central differences of step ``eps``, and the velocities
    :math:`M^{-1}p` and :math:`M^{-1}\nabla U` the magnetic term needs; ``ok`` is false
    when a shifted gradient was not finite. The working rows and the gradient counter are
    the part's workspace ``shadow_rows``."""
    d = q.shape[0]
    at = offset.shadow_rows
    shifted = ctx.aux[at : at + d]
    g_plus = ctx.aux[at + d : at + 2 * d]
    g_minus = ctx.aux[at + 2 * d : at + 3 * d]
    w = ctx.aux[at + 3 * d : at + 4 * d]
    vel = velocity(ctx, q, p, v)
    k_p = kinetic(ctx, q, p, vel)
    for i in range(d):
        shifted[i] = q[i] + eps * vel[i]
    lp_plus = ctx.logp(shifted, g_plus, ctx.fdata, ctx.idata)
    for i in range(d):
        shifted[i] = q[i] - eps * vel[i]
    lp_minus = ctx.logp(shifted, g_minus, ctx.fdata, ctx.idata)
    ctx.aux[at + 4 * d] += 2.0
    if not (math.isfinite(lp_plus) and math.isfinite(lp_minus)):
        return math.nan, vel, w, False
    dot = 0.0
    for i in range(d):
        dot += vel[i] * (g_plus[i] - g_minus[i])
    gw = velocity(ctx, q, grad, w)
    k_g = kinetic(ctx, q, grad, gw)
    h = -lp + k_p + backward_error_term(eps, central_curvature(eps, dot) - k_g)
    return h, vel, gw, True


def leapfrog_shadow_energy_kernel(ctx, q, p, lp, grad, v, eps):
    """Kernel of :meth:`LeapfrogShadowHamiltonian.energy` without a field (role
    ``target_energy``)."""
    h, _vel, _gw, _ok = _leapfrog_shadow_terms(ctx, q, p, lp, grad, v, eps)
    return h


def magnetic_leapfrog_shadow_energy_kernel(ctx, q, p, lp, grad, v, eps):
    """Kernel of :meth:`LeapfrogShadowHamiltonian.energy` with a field (role
    ``target_energy``): the magnetic term with the parameters ``sign`` (of the term) and
    ``field`` (by rows), and the chain's sign of the field, the structure's auxiliary
    variable ``field_reversed``."""
    d = q.shape[0]
    h, vel, gw, ok = _leapfrog_shadow_terms(ctx, q, p, lp, grad, v, eps)
    if not ok:
        return math.nan
    field = own.field
    sign = own.sign * field_sign(ctx.aux[offset.field_reversed])
    bend = 0.0
    for i in range(d):
        row = 0.0
        for j in range(d):
            row += field[i * d + j] * gw[j]
        bend += vel[i] * row
    return h + backward_error_term(eps, sign * bend)


def energy_needs_target_kernel(ctx, q, p, lp, grad, v, eps):
    """The ``energy`` role of :class:`LeapfrogShadowHamiltonian`, which declares
    ``energy_reads_target`` so that callers use ``target_energy``: without the target its
    energy cannot be evaluated, and a caller that ignored the flag rejects every proposal
    (nan) rather than sample the wrong distribution."""
    return math.nan


def leapfrog_shadow_weight_kernel(ctx, q, p, lp, grad, v, eps):
    """Kernel of the ``weigh`` role of :class:`LeapfrogShadowHamiltonian`: the log weight
    :math:`\\hat H - H` of the retained state from the trajectory's ``energy`` statistic
    (its :math:`\\hat H`, so no gradient is spent), and the gradients the energies of this
    iteration spent added to ``n_grad``."""
    d = q.shape[0]
    h = separable_energy_kernel(ctx, q, p, lp, grad, v, eps)
    ctx.stats[column.log_weight] = ctx.stats[column.energy] - h
    counter = offset.shadow_rows + 4 * d
    ctx.stats[column.n_grad] += ctx.aux[counter]
    ctx.aux[counter] = 0.0


class LeapfrogShadowHamiltonian(ShadowHamiltonian):
    """The leapfrog's fourth-order shadow Hamiltonian (non-separable), with an optional
    magnetic term (SHMC, PSHMC and SMHMC):

    .. math::

        \\hat H(q, p) = H + \\frac{\\varepsilon^2}{12}\\, v^\\top \\nabla^2 U\\, v
            - \\frac{\\varepsilon^2}{24}\\, \\nabla U^\\top M^{-1} \\nabla U
            - \\sigma\\, \\frac{\\varepsilon^2}{12}\\, v^\\top G M^{-1} \\nabla U,
        \\qquad v = M^{-1} p,

    from the backward error analysis of the kick-drift-kick splitting (Mongwe, Mbuvha
    and Marwala 2021, PS2HMC, eqs. 8-13; the magnetic term from the brackets of the structure
    :math:`J_G`, their 2022 SMHMC, Theorem 1, eqs. 13-16), conserved by the (magnetic) leapfrog to
    :math:`O(\\varepsilon^4)`. :math:`G` is the field with the chain's sign
    (:data:`~hamiltonia.structures.magnetic.FIELD_AUX`). With ``shadow_sign="printed"``,
    :math:`\\sigma = -1`: the sign printed in the SMHMC paper, which conserves only to
    second order (a typo: the paper's own brackets give :math:`\\sigma = 1`); the default
    ``"corrected"`` is :math:`\\sigma = 1`.

    The curvature :math:`v^\\top\\nabla^2 U v` comes from the target's ``hvp`` (``hessian=
    "target"``, NumPy path) or, by default, from central differences of the gradient with
    the step size as their step, :math:`-v^\\top(g(q + \\varepsilon v) - g(q - \\varepsilon
    v)) / 2\\varepsilon` with :math:`g = \\nabla\\log\\pi`, which changes :math:`\\hat H` by
    :math:`O(\\varepsilon^4)`, the order of the truncation (S2HMC's footnote 1 in PS2HMC).
    Each energy then costs two gradients, counted in ``n_grad``.

    :math:`\\hat H` is not separable, so :math:`p \\mid q` is not Gaussian: a momentum
    refresh needs a Metropolis test
    (:class:`~hamiltonia.refresh.momentum.MetropolisPartialRefresh`),
    which :class:`~hamiltonia.samplers.HamiltonianSampler` checks.

    Parameters
    ----------
    base : Hamiltonian
        A separable :math:`H` with a fixed metric.
    hessian : {"finite-difference", "target"}
    field : array, optional
        The magnetic field :math:`G` of the structure integrated (SMHMC).
    shadow_sign : {"corrected", "printed"}

    References
    ----------
    Izaguirre and Hampton (2004); Radivojević and Akhmatskaya (2020); Mongwe, Mbuvha and
    Marwala (2022), *Shadow magnetic Hamiltonian Monte Carlo*, IEEE Access.
    """

    order = 4
    needs_momentum_test = True
    #: Not separable: the momentum given the position is not Gaussian.
    provides = frozenset()

    def __init__(self, base: Hamiltonian, hessian="finite-difference", field=None,
                 shadow_sign="corrected"):  # fmt: skip
        _check_shadow_base(base, "leapfrog")
        super().__init__(base)
        if hessian not in HESSIAN_METHODS:
            raise ValueError(f"hessian must be one of {HESSIAN_METHODS}, got {hessian!r}")
        if hessian == "target" and not base.target.has_hvp:
            raise ValueError(
                f"hessian='target' needs target {type(base.target).__name__} to define hvp(); "
                "use hessian='finite-difference'"
            )
        if shadow_sign not in SHADOW_SIGNS:
            raise ValueError(f"shadow_sign must be one of {SHADOW_SIGNS}, got {shadow_sign!r}")
        if shadow_sign == "printed" and field is None:
            raise ValueError("shadow_sign applies to the magnetic term: give field= too")
        self.hessian = hessian
        self.field = None if field is None else np.asarray(field, dtype=np.float64)
        self.shadow_sign = shadow_sign
        self._tally: np.ndarray | None = None

    def start_counting(self, n_chains: int) -> None:
        """Count the gradients the energies spend (NumPy path), per chain."""
        self._tally = np.zeros(n_chains, dtype=np.int64)

    def counted(self) -> np.ndarray:
        tally, self._tally = self._tally, None
        return tally

    def _curvature(self, state, v, eps):
        """:math:`v^\\top \\nabla^2 U v` per chain."""
        xp = backend.xp()
        if self.hessian == "target":
            hv = self.target.hvp(state.q, v)
            return -xp.sum(v * hv, axis=-1)
        h = eps[:, None]
        plus = self.base.evaluate(state.q + h * v)
        minus = self.base.evaluate(state.q - h * v)
        if self._tally is not None:
            # As the compiled kernel: an energy is evaluated only at a finite state.
            self._tally += 2 * np.isfinite(backend.to_numpy(state.log_prob))
        with np.errstate(all="ignore"):
            c = central_curvature(eps, xp.sum(v * (plus.grad - minus.grad), axis=-1))
            ok = xp.isfinite(plus.log_prob) & xp.isfinite(minus.log_prob)
        return xp.where(ok, c, xp.nan)

    def energy(self, state: PhaseState, step_size=None) -> np.ndarray:
        """:math:`\\hat H` per chain at the step size ``step_size`` (one per chain)."""
        if step_size is None:
            raise ValueError("a shadow Hamiltonian's energy needs the step size integrated")
        xp = backend.xp()
        n = state.q.shape[0]
        eps = backend.asarray(np.broadcast_to(np.asarray(step_size, dtype=np.float64), (n,)))
        aux = state.aux
        v = self.base.velocity(state.p, aux)
        with np.errstate(all="ignore"):
            k_g = self.base.kinetic(state.grad, aux)
            h = self.base.energy(state) + backward_error_term(
                eps, self._curvature(state, v, eps) - k_g
            )
            if self.field is not None:
                reversed_ = xp.reshape(aux.get(FIELD_AUX, xp.zeros(n)), (n,))
                sign = (1.0 if self.shadow_sign == "corrected" else -1.0) * field_sign(reversed_)
                gw = self.base.velocity(state.grad, aux)
                bend = backend.einsum("ci,ij,cj->c", v, backend.asarray(self.field), gw)
                h = h + backward_error_term(eps, sign * bend)
        return h

    def log_weight(self, state: PhaseState, step_size) -> np.ndarray:
        """:math:`\\hat H - H` (no gradient counted: the compiled path reads
        :math:`\\hat H` from the trajectory's ``energy`` statistic)."""
        # Called by the run after the iteration's count was collected: nothing is counted.
        return self.energy(state, step_size) - self.base.energy(state)

    def compiled(self, dim):
        from hamiltonia.compiled.parts import compiled_counterpart

        if self.hessian != "finite-difference":
            return None  # the target's hvp is a Python method
        kernels = compiled_counterpart(self.base, dim, "hamiltonian")
        if kernels.aux or kernels.workspace:
            return None  # a base with per-chain variables (a random mass) is refused above
        params = dict(kernels.params)
        if self.field is None:
            energy_kernel = leapfrog_shadow_energy_kernel
        else:
            energy_kernel = magnetic_leapfrog_shadow_energy_kernel
            params["sign"] = 1.0 if self.shadow_sign == "corrected" else -1.0
            params["field"] = self.field
        functions = {
            **kernels.functions,
            "energy": energy_needs_target_kernel,
            "energy_reads_target": True,
            "target_energy": energy_kernel,
            "weigh": leapfrog_shadow_weight_kernel,
        }
        return replace(
            kernels,
            functions=functions,
            params=params,
            stats=(*kernels.stats, ("log_weight", "float64")),
            workspace=(*kernels.workspace, ("shadow_rows", 4 * dim + 1)),
        )

    def __repr__(self):
        extra = "" if self.field is None else ", field=..."
        return f"LeapfrogShadowHamiltonian({self.base!r}, hessian={self.hessian!r}{extra})"
