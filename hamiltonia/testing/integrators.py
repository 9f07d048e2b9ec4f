"""Exact properties of an integrator, for any integrator and any kinetic energy.

An :class:`~hamiltonia.integrators.Integrator` :math:`\\Phi_\\varepsilon^L` used in an HMC
transition must be

* **reversible**: :math:`R \\circ \\Phi_\\varepsilon^L \\circ R \\circ \\Phi_\\varepsilon^L =
  \\text{id}` with :math:`R(q, p) = (q, -p)` (and the structure's auxiliary variables
  reversed, :meth:`~hamiltonia.structures.base.PoissonStructure.reverse`), so that the
  proposal is an involution and the Metropolis ratio is the energy ratio
  (:func:`check_reversibility`);
* **volume preserving**: :math:`|\\det D\\Phi_\\varepsilon^L| = 1`, so that no Jacobian
  enters the acceptance probability (:func:`check_volume_preservation`);
* **of its order** :math:`k` (``integrator.order``): the energy error over a fixed time
  :math:`T` falls as :math:`\\varepsilon^k` (:func:`check_energy_error_order`), which is
  what makes the acceptance rate high at a useful step size;

and keep its contract: one trajectory length per chain, the gradients counted, its input
unchanged (:func:`check_integrate_contract`). :func:`check_integrator` runs all four.

Each check takes an integrator instance and a Hamiltonian (for example
``EuclideanHamiltonian(target, metric)`` or ``RandomMassHamiltonian(target, 0.5)``); the
start states come from :func:`start_states`, seeded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hamiltonia import backend

__all__ = [
    "ORDER_TOLERANCE",
    "check_energy_error_order",
    "check_integrate_contract",
    "check_integrator",
    "check_reversibility",
    "check_volume_preservation",
    "energy_error_slope",
    "start_states",
]

#: How far the fitted log-log slope may be from ``integrator.order``
#: (see :func:`check_energy_error_order`).
ORDER_TOLERANCE = 0.2


def start_states(
    hamiltonian: Any, integrator: Any, n_chains: int, seed: int = 0, scale: float = 0.5
):
    """Seeded phase states to integrate from.

    Positions :math:`q \\sim \\mathcal N(0, s^2 I)` (``scale`` :math:`s`), momenta
    :math:`p \\sim \\mathcal N(0, I)`, drawn from ``default_rng(seed)``; the Hamiltonian's
    auxiliary variables (a random mass) drawn per chain from ``default_rng(seed + c)``; and
    the structure's auxiliary variables reversed on the odd chains (a magnetic field's sign
    takes both values), so that every check covers both orientations.

    Returns
    -------
    PhaseState
        ``n_chains`` rows, with the log density and its gradient evaluated.
    """
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n_chains, hamiltonian.dim)) * scale
    p = rng.normal(size=(n_chains, hamiltonian.dim))
    state = hamiltonian.update_auxiliary(
        hamiltonian.evaluate(q, p), [np.random.default_rng(seed + c) for c in range(n_chains)]
    )
    odd = np.arange(n_chains) % 2 == 1
    return integrator.structure.reverse(state).select(backend.asmask(odd), state)


def check_reversibility(
    integrator: Any,
    hamiltonian: Any,
    *,
    step_size: float = 0.02,
    n_steps: int = 20,
    n_chains: int = 5,
    seed: int = 0,
    atol: float = 1e-10,
    min_move: float = 0.1,
    start: Any = None,
) -> float:
    """Assert that integrating, reversing and integrating again returns to the start.

    .. math::

        (q_1, p_1) = \\Phi_\\varepsilon^L(q_0, p_0), \\qquad
        (q_2, p_2) = \\Phi_\\varepsilon^L(q_1, -p_1), \\qquad
        \\max\\bigl(|q_2 - q_0|, |-p_2 - p_0|\\bigr) \\le \\text{atol},

    with the structure's auxiliary variables reversed with the momentum, and the
    integrator's (``integrator.reverse``: the randomised split's subset order). The default
    ``atol`` = :math:`10^{-10}` is rounding accumulated over :math:`2L` steps, far below
    what a non-symmetric step of order :math:`k` leaves, :math:`O(\\varepsilon^{k+1})` a
    step (:math:`8 \\times 10^{-6}` for :math:`k = 2` at the default
    :math:`\\varepsilon = 0.02`). The
    trajectory must also move (some coordinate of :math:`q` by more than ``min_move``), so
    that the check is not passed by a map that does nothing.

    Returns
    -------
    float
        The largest deviation found.
    """
    start = start_states(hamiltonian, integrator, n_chains, seed) if start is None else start
    eps = np.full(start.q.shape[0], float(step_size))
    end, _ = integrator.integrate(hamiltonian, start, eps, n_steps)
    # The integrator's own random choices (a split's subset order) are reversed with the
    # momentum and the structure: the reversed trajectory is integrated with them.
    reversed_end = integrator.reverse(integrator.structure.reverse(end.with_momentum(-end.p)))
    back, _ = integrator.integrate(hamiltonian, reversed_end, eps, n_steps)
    error = float(max(np.max(np.abs(back.q - start.q)), np.max(np.abs(-back.p - start.p))))
    name = type(integrator).__name__
    assert error <= atol, (
        f"{name} is not reversible: integrating {n_steps} steps of {step_size}, negating the "
        f"momentum and integrating again misses the start by {error:.3g} > atol {atol:g}"
    )
    moved = float(np.max(np.abs(end.q - start.q)))
    assert moved > min_move, f"{name} barely moved ({moved:.3g}): the check is vacuous"
    return error


def check_volume_preservation(
    integrator: Any,
    hamiltonian: Any,
    *,
    step_size: float = 0.05,
    n_steps: int = 10,
    seed: int = 4,
    fd_step: float = 1e-5,
    atol: float = 1e-7,
    min_departure: float = 0.1,
    point: Any = None,
) -> float:
    """Assert that the map's Jacobian determinant is one, by finite differences.

    For each phase-space coordinate :math:`z_j` of a point :math:`z`, the central
    difference of step :math:`\\delta` and its Richardson extrapolation

    .. math::

        C_\\delta e_j = \\frac{\\Phi(z + \\delta e_j) - \\Phi(z - \\delta e_j)}{2\\delta},
        \\qquad D\\Phi \\approx \\tfrac13\\bigl(4 C_{\\delta/2} - C_\\delta\\bigr),
        \\qquad |\\log|\\det D\\Phi|| \\le \\text{atol},

    all :math:`8D` copies integrated together, with the same auxiliary variables (one
    random mass, one field sign), so they are images under one map. The central difference
    errs by :math:`O(\\delta^2)`, which the extrapolation cancels, leaving
    :math:`O(\\delta^4)` (truncation) plus about :math:`\\epsilon_\\text{mach}|z|/\\delta`
    (rounding) per entry. With ``fd_step`` :math:`\\delta = 10^{-5}` the truncation is
    negligible and the rounding, near :math:`10^{-11}`, dominates; an error :math:`E` in
    the entries moves :math:`\\log|\\det|` by :math:`\\operatorname{tr}(D\\Phi^{-1} E)`, at
    most about :math:`2D\\,\\kappa\\,|E|` with :math:`\\kappa` the condition number of
    :math:`D\\Phi`. Measured with the defaults on the banana, for every built-in integrator
    and kinetic energy at a dozen start points (:math:`\\kappa` up to :math:`2 \\times
    10^4`), :math:`|\\log|\\det||` stays below :math:`10^{-8}`, so ``atol``
    :math:`= 10^{-7}` leaves a margin of ten; a map that is not volume preserving changes
    the log volume by :math:`O(\\varepsilon L)`, orders of magnitude more. A map with
    :math:`\\kappa > 10^6` (a trajectory that diverged: take a smaller step or another
    point) is refused with ``ValueError``, since finite differences cannot decide there.
    The determinant must also be positive and the map far from the identity (some entry of
    :math:`D\\Phi - I` above ``min_departure``).

    Returns
    -------
    float
        :math:`\\log|\\det D\\Phi|`.
    """
    z_state = start_states(hamiltonian, integrator, 1, seed) if point is None else point
    dim = hamiltonian.dim
    z0 = np.concatenate([np.asarray(z_state.q[0]), np.asarray(z_state.p[0])])
    eye = np.eye(2 * dim)
    deltas = (fd_step, fd_step / 2)
    copies = z0 + np.vstack([s * d * eye for d in deltas for s in (1.0, -1.0)])
    n = len(copies)
    state = hamiltonian.evaluate(copies[:, :dim].copy(), copies[:, dim:].copy())
    state.aux.update({k: np.repeat(np.asarray(v)[:1], n, axis=0) for k, v in z_state.aux.items()})
    end, _ = integrator.integrate(hamiltonian, state, np.full(n, float(step_size)), n_steps)
    out = np.hstack([np.asarray(end.q), np.asarray(end.p)]).reshape(2, 2, 2 * dim, 2 * dim)
    central = [(out[k, 0] - out[k, 1]).T / (2 * d) for k, d in enumerate(deltas)]
    jac = (4.0 * central[1] - central[0]) / 3.0  # Richardson: the delta^2 terms cancel
    name = type(integrator).__name__
    with np.errstate(all="ignore"):
        kappa = np.linalg.cond(jac) if np.all(np.isfinite(jac)) else np.inf
    if not kappa <= 1e6:
        raise ValueError(
            f"{name}: the map's Jacobian has condition number {kappa:.3g} at this point (a "
            "diverging trajectory?): finite differences cannot decide; choose a smaller "
            "step_size or another point"
        )
    sign, logdet = np.linalg.slogdet(jac)
    assert sign > 0, f"{name}: the Jacobian determinant is not positive (sign {sign})"
    assert abs(logdet) <= atol, (
        f"{name} is not volume preserving: log|det J| = {logdet:.3g} after {n_steps} steps of "
        f"{step_size} (atol {atol:g})"
    )
    departure = float(np.max(np.abs(jac - np.eye(2 * dim))))
    assert departure > min_departure, f"{name}: the map is the identity to {departure:.3g}: vacuous"
    return float(logdet)


def energy_error_slope(
    integrator: Any,
    hamiltonian: Any,
    *,
    energy: Callable[[Any, np.ndarray], np.ndarray] | None = None,
    total_time: float = 0.3,
    n_steps: Sequence[int] = (8, 16, 32, 64, 128),
    n_chains: int = 8,
    seed: int = 3,
    start: Any = None,
) -> float:
    """The log-log slope of the energy error against the step size, over a fixed time.

    For each :math:`L` in ``n_steps``, :math:`\\varepsilon = T / L`, integrate :math:`L`
    steps from the same start states and take the root mean square over the chains of
    :math:`E(\\Phi_\\varepsilon^L(z)) - E(z)`; then fit

    .. math::

        \\log \\text{err}(\\varepsilon) = k \\log\\varepsilon + c

    by least squares and return :math:`k`. ``energy(state, step_size)`` is the conserved
    quantity (default ``hamiltonian.energy``: :math:`H`; give a shadow Hamiltonian's
    ``energy`` to measure how well the integrator conserves :math:`\\tilde H`).
    """
    energy = hamiltonian.energy if energy is None else energy
    start = start_states(hamiltonian, integrator, n_chains, seed) if start is None else start
    n = start.q.shape[0]
    steps = np.asarray(n_steps, dtype=float)
    errors = []
    for length in n_steps:
        eps = np.full(n, total_time / length)
        end, _ = integrator.integrate(hamiltonian, start, eps, int(length))
        errors.append(float(np.sqrt(np.mean((energy(end, eps) - energy(start, eps)) ** 2))))
    errors_arr = np.asarray(errors)
    assert np.all(np.isfinite(errors_arr) & (errors_arr > 0)), (
        f"energy errors {errors}: not finite and positive, so there is no slope to fit"
    )
    return float(np.polyfit(np.log(total_time / steps), np.log(errors_arr), 1)[0])


def check_energy_error_order(
    integrator: Any,
    hamiltonian: Any,
    *,
    order: float | None = None,
    tol: float = ORDER_TOLERANCE,
    **slope_options: Any,
) -> float:
    """Assert that the energy error falls as :math:`\\varepsilon^k`, :math:`k` the order.

    .. math::

        |\\hat k - k| < \\text{tol},

    :math:`\\hat k` from :func:`energy_error_slope` (``slope_options`` are passed there)
    and :math:`k` = ``order`` (default ``integrator.order``). With the default step sizes
    (:math:`T = 0.3`, :math:`L = 8 \\ldots 128`) the error is in its asymptotic regime on
    the built-in targets, and the next term of the error expansion bends the fitted slope
    by less than :data:`ORDER_TOLERANCE` :math:`= 0.2`, while orders differ by 2 (symmetric
    integrators have even orders), so a wrong order cannot pass.

    Returns
    -------
    float
        The fitted slope.
    """
    order = integrator.order if order is None else order
    slope = energy_error_slope(integrator, hamiltonian, **slope_options)
    assert abs(slope - order) < tol, (
        f"{type(integrator).__name__}: the energy error falls as step_size**{slope:.2f}, "
        f"not as step_size**{order} (tolerance {tol})"
    )
    return slope


def check_integrate_contract(
    integrator: Any,
    hamiltonian: Any,
    *,
    lengths: Sequence[int] = (0, 1, 7, 20, 13),
    step_size: float = 0.02,
    seed: int = 0,
    atol: float = 1e-12,
) -> None:
    """Assert the contract of ``integrate``: per-chain lengths, gradient counts, no
    mutation of the input.

    * ``integrate(..., n_steps=lengths)`` with one length per chain gives, for each chain
      :math:`c`, what ``integrate`` of that chain alone for ``lengths[c]`` steps gives (to
      ``atol``);
    * the gradient count is :math:`L \\cdot` ``n_grad_per_step`` per chain, or, for an
      integrator with ``exact_gradient_count = False`` (fixed-point iterations), more than
      :math:`L` when :math:`L > 0` and zero when :math:`L = 0`;
    * the input state is left unchanged.
    """
    lengths_arr = np.asarray(lengths, dtype=np.int64)
    n = len(lengths_arr)
    start = start_states(hamiltonian, integrator, n, seed)
    saved = start.copy()
    eps = np.full(n, float(step_size))
    name = type(integrator).__name__
    each, n_each = integrator.integrate(hamiltonian, start, eps, lengths_arr)
    n_each = np.asarray(n_each)
    for field in ("q", "p"):
        assert np.array_equal(getattr(start, field), getattr(saved, field)), (
            f"{name}.integrate modified its input state's {field}"
        )
    if getattr(integrator, "exact_gradient_count", True):
        expected = lengths_arr * integrator.n_grad_per_step
        assert np.array_equal(n_each, expected), (
            f"{name} counted {n_each.tolist()} gradients, expected {expected.tolist()}"
        )
    else:
        assert np.all((n_each > lengths_arr) == (lengths_arr > 0)) and np.all(
            n_each[lengths_arr == 0] == 0
        ), f"{name} counted {n_each.tolist()} gradients for lengths {lengths_arr.tolist()}"
    for c, length in enumerate(lengths_arr):
        alone, _ = integrator.integrate(hamiltonian, start.take([c]), eps[[c]], int(length))
        np.testing.assert_allclose(
            np.asarray(each.q[c]), np.asarray(alone.q[0]), rtol=0, atol=atol,
            err_msg=f"{name}: chain {c} with its own length {length} differs from it alone",
        )  # fmt: skip
        np.testing.assert_allclose(
            np.asarray(each.p[c]), np.asarray(alone.p[0]), rtol=0, atol=atol,
            err_msg=f"{name}: chain {c} with its own length {length} differs from it alone",
        )  # fmt: skip


def check_integrator(
    integrator: Any,
    hamiltonian: Any,
    *,
    order: float | None = None,
    volume_hamiltonian: Any = None,
) -> None:
    """All the checks of this module with their defaults: :func:`check_integrate_contract`,
    :func:`check_reversibility`, :func:`check_volume_preservation` (on
    ``volume_hamiltonian`` when given, e.g. one over a Gaussian target, on which the map is
    linear) and :func:`check_energy_error_order` (against ``order``, default
    ``integrator.order``)."""
    check_integrate_contract(integrator, hamiltonian)
    check_reversibility(integrator, hamiltonian)
    check_volume_preservation(
        integrator, hamiltonian if volume_hamiltonian is None else volume_hamiltonian
    )
    check_energy_error_order(integrator, hamiltonian, order=order)
