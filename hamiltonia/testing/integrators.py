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

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from hamiltonia import backend

__all__ = [
    "ORDER_N_STEPS",
    "ORDER_REFINEMENT",
    "ORDER_REFINEMENTS",
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


class _EnergyErrors:
    """The root-mean-square energy errors of ``integrator`` over a fixed time, each number
    of steps integrated once (a range made finer reuses the lengths it shares with the
    last).

    For :math:`L` steps, :math:`\\varepsilon = T / L`, the error is the root mean square over
    the chains of :math:`E(\\Phi_\\varepsilon^L(z)) - E(z)`; its rounding is estimated as
    :math:`\\epsilon_\\text{mach}\\, \\bar E \\sqrt L`, with :math:`\\bar E` the root
    mean square of :math:`E(z)`: the energies' own rounding, grown as a random walk over
    the steps.
    """

    def __init__(
        self,
        integrator: Any,
        hamiltonian: Any,
        *,
        energy: Callable[[Any, np.ndarray], np.ndarray] | None = None,
        total_time: float = 0.3,
        n_chains: int = 8,
        seed: int = 3,
        start: Any = None,
    ):
        self.integrator = integrator
        self.hamiltonian = hamiltonian
        self.energy = hamiltonian.energy if energy is None else energy
        self.total_time = total_time
        self.start = (
            start_states(hamiltonian, integrator, n_chains, seed) if start is None else start
        )
        self._errors: dict[int, float] = {}
        self._rounding: dict[int, float] = {}

    def _measure(self, length) -> None:
        n = self.start.q.shape[0]
        eps = np.full(n, self.total_time / length)
        end, _ = self.integrator.integrate(self.hamiltonian, self.start, eps, int(length))
        before = self.energy(self.start, eps)
        self._errors[length] = float(np.sqrt(np.mean((self.energy(end, eps) - before) ** 2)))
        scale = float(np.sqrt(np.mean(np.asarray(before, dtype=float) ** 2)))
        self._rounding[length] = float(np.finfo(float).eps * scale * np.sqrt(int(length)))

    def errors(self, lengths: Sequence[int]) -> np.ndarray:
        """The errors for each number of steps in ``lengths``."""
        for length in lengths:
            if length not in self._errors:
                self._measure(length)
        return np.asarray([self._errors[length] for length in lengths])

    def rounding(self, lengths: Sequence[int]) -> np.ndarray:
        """The estimated rounding of each error in ``lengths`` (measured first)."""
        self.errors(lengths)
        return np.asarray([self._rounding[length] for length in lengths])

    def log_steps(self, lengths: Sequence[int]) -> np.ndarray:
        return np.log(self.total_time / np.asarray(lengths, dtype=float))

    def slope(self, lengths: Sequence[int]) -> float:
        """The least-squares slope of :math:`\\log` error against
        :math:`\\log\\varepsilon`."""
        errors = self.errors(lengths)
        assert np.all(np.isfinite(errors) & (errors > 0)), (
            f"energy errors {errors.tolist()}: not finite and positive, so there is no slope to fit"
        )
        return float(np.polyfit(self.log_steps(lengths), np.log(errors), 1)[0])

    def local_slopes(self, lengths: Sequence[int]) -> np.ndarray:
        """The slopes between neighbouring step sizes (after :meth:`slope`)."""
        return np.diff(np.log(self.errors(lengths))) / np.diff(self.log_steps(lengths))


#: The numbers of steps :func:`energy_error_slope` integrates by default.
ORDER_N_STEPS = (8, 16, 32, 64, 128)

#: How many times :func:`check_energy_error_order` may make its step sizes
#: :data:`ORDER_REFINEMENT` times finer when the slope misses the order.
ORDER_REFINEMENTS = 3

#: The factor by which each refinement of :func:`check_energy_error_order` multiplies
#: every number of steps (two octaves: it keeps three of the five default lengths).
ORDER_REFINEMENT = 4


def energy_error_slope(
    integrator: Any,
    hamiltonian: Any,
    *,
    energy: Callable[[Any, np.ndarray], np.ndarray] | None = None,
    total_time: float = 0.3,
    n_steps: Sequence[int] = ORDER_N_STEPS,
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
    errors = _EnergyErrors(
        integrator, hamiltonian, energy=energy, total_time=total_time, n_chains=n_chains,
        seed=seed, start=start,
    )  # fmt: skip
    return errors.slope(n_steps)


def _steps_text(lengths: Sequence[int]) -> str:
    return f"n_steps=({', '.join(str(int(length)) for length in lengths)})"


def check_energy_error_order(
    integrator: Any,
    hamiltonian: Any,
    *,
    order: float | None = None,
    tol: float = ORDER_TOLERANCE,
    n_steps: Sequence[int] = ORDER_N_STEPS,
    refine: int = ORDER_REFINEMENTS,
    **slope_options: Any,
) -> float:
    """Assert that the energy error falls as :math:`\\varepsilon^k`, :math:`k` the order.

    .. math::

        |\\hat k - k| < \\text{tol},

    :math:`\\hat k` from :func:`energy_error_slope` over ``n_steps`` (``slope_options``:
    ``total_time``, ``energy``, ``n_chains``, ``seed``, ``start``, are passed there) and
    :math:`k` = ``order`` (default ``integrator.order``). With the default step sizes
    (:math:`T = 0.3`, :math:`L = 8 \\ldots 128`) the error is in its asymptotic regime on
    the built-in targets with a Gaussian kinetic energy, and the next term of the error
    expansion bends the fitted slope by less than :data:`ORDER_TOLERANCE` :math:`= 0.2`,
    while orders differ by 2 (symmetric integrators have even orders), so a wrong order
    cannot pass.

    **Finer steps when the slope is pre-asymptotic.** The error is
    :math:`a_k\\varepsilon^k + a_{k+1}\\varepsilon^{k+1} + \\dots`, and where the leading
    coefficient is small against the next (a splitting tuned for a quadratic kinetic energy
    with a non-quadratic one: the two-stage integrator with a relativistic kinetic energy
    on the banana shows a slope of 3 at the default steps and of 2 four and sixteen times
    finer) the default range measures the next term. So when the slope misses, the check
    makes every step :data:`ORDER_REFINEMENT` :math:`= 4` times finer, up to ``refine``
    times, and passes if a finer range shows the order: its fitted slope within ``tol``
    **and** each slope between neighbouring step sizes within ``tol`` too. The second
    condition keeps the search honest: an error :math:`a\\varepsilon^{k_1} +
    b\\varepsilon^{k_0}` of a wrong integrator, whose slope moves from :math:`k_1` to
    :math:`k_0 < k < k_1`, has a fitted slope near :math:`k` over the range where it
    passes through :math:`k`, but it stays within :math:`\\pm` tol of :math:`k` over a
    factor of at most about :math:`2.25^{1/(k_1 - k_0)}` in the step size (here a
    factor 16), so only an error that has settled on :math:`\\varepsilon^k` passes. A
    range whose errors come within reach of the rounding (an error under
    :math:`4 / (\\text{tol}\\,\\log\\rho)` times its estimated rounding
    :math:`\\epsilon_\\text{mach}\\bar E\\sqrt L`, :math:`\\rho` the smallest ratio of
    neighbouring lengths: the rounding would then move a neighbours' slope by more than
    tol/2) is not judged, and the refinement stops. ``refine=0`` judges ``n_steps`` alone.
    A failure reports the slope of every range measured and, where the slope was still
    moving towards the order, says so and names the finer ``n_steps=`` to pass.

    Returns
    -------
    float
        The fitted slope of the range that passed.
    """
    order = integrator.order if order is None else order
    name = type(integrator).__name__
    errors = _EnergyErrors(integrator, hamiltonian, **slope_options)
    lengths = tuple(int(length) for length in n_steps)
    smallest_ratio = float(np.min(np.asarray(lengths[1:]) / np.asarray(lengths[:-1])))
    # The rounding may move a neighbours' slope (2 rounding / error / log ratio) by tol / 2.
    margin = 4.0 / (tol * np.log(smallest_ratio)) if smallest_ratio > 1 else np.inf
    measured: list[tuple[tuple[int, ...], float, np.ndarray]] = []
    floor_note = ""
    for stage in range(int(refine) + 1):
        if stage:
            lengths = tuple(ORDER_REFINEMENT * length for length in lengths)
            rounding = errors.rounding(lengths)
            found = errors.errors(lengths)
            if np.any(found < margin * rounding):
                worst = int(np.argmin(found / rounding))
                floor_note = (
                    f" ({_steps_text(lengths)} would come within reach of the rounding: an "
                    f"error of {found[worst]:.2g} against a rounding of about "
                    f"{rounding[worst]:.2g})"
                )
                break
        slope = errors.slope(lengths)
        local = errors.local_slopes(lengths)
        measured.append((lengths, slope, local))
        # The range the caller chose is judged as it always was; a range the check chose
        # after a miss must also be straight (see the docstring).
        if abs(slope - order) < tol and (stage == 0 or np.all(np.abs(local - order) < tol)):
            return slope
    first_lengths, first, _ = measured[0]
    message = (
        f"{name}: the energy error falls as step_size**{first:.2f}, not as "
        f"step_size**{order} (tolerance {tol}; {_steps_text(first_lengths)} over "
        f"total_time={errors.total_time:g})"
    )
    if len(measured) > 1:
        finer = []
        for lengths, slope, local in measured[1:]:
            text = f"step_size**{slope:.2f} at {_steps_text(lengths)}"
            if abs(slope - order) < tol:
                # Within tolerance, but not straight: say why it did not pass.
                between = ", ".join(f"{value:.2f}" for value in local)
                text += f" (between neighbouring steps {between}: not settled on one power)"
            finer.append(text)
        message += f"; finer steps give {', '.join(finer)}"
    message += floor_note
    slopes = np.array([slope for _, slope, _ in measured])
    last_lengths = measured[-1][0]
    next_lengths = tuple(ORDER_REFINEMENT * length for length in last_lengths)
    # Pre-asymptotic: every range on the same side of the order, each closer than the last,
    # the finest closer by more than tol. A slope that crosses the order is not settling.
    distance = np.abs(slopes - order)
    approaching = (
        len(slopes) > 1
        and len(set(np.sign(slopes - order))) == 1
        and bool(np.all(np.diff(distance) < 0))
        and distance[-1] < distance[0] - tol
    )
    if len(measured) == 1 and not floor_note:
        message += (
            f". If the slope is pre-asymptotic (the next terms of the error still matter at "
            f"these steps), finer steps give the order: pass {_steps_text(next_lengths)}"
        )
    elif approaching:
        message += (
            f". The slope is still moving towards {order} as the steps shrink: it was measured "
            "pre-asymptotically; "
            + (
                "finer steps would reach the rounding of the energy, so the check cannot "
                "follow it further"
                if floor_note
                else f"pass finer steps, {_steps_text(next_lengths)} or finer"
            )
        )
    elif len(measured) == 1:
        message += (
            ". Finer steps would reach the rounding of the energy, so the check could not "
            "look for the slope at finer steps"
        )
    else:
        message += f": finer steps do not bring it to {order}, so the order is not {order}"
    raise AssertionError(message)


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
    order_options: Mapping[str, Any] | None = None,
) -> None:
    """All the checks of this module with their defaults: :func:`check_integrate_contract`,
    :func:`check_reversibility`, :func:`check_volume_preservation` (on
    ``volume_hamiltonian`` when given, e.g. one over a Gaussian target, on which the map is
    linear) and :func:`check_energy_error_order` (against ``order``, default
    ``integrator.order``, with ``order_options`` such as ``n_steps=``)."""
    check_integrate_contract(integrator, hamiltonian)
    check_reversibility(integrator, hamiltonian)
    check_volume_preservation(
        integrator, hamiltonian if volume_hamiltonian is None else volume_hamiltonian
    )
    check_energy_error_order(integrator, hamiltonian, order=order, **(order_options or {}))
