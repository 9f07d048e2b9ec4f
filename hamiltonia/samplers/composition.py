"""Composition helpers: build each part of a Hamiltonian sampler from user-level options.

The registered recipes (:mod:`hamiltonia.samplers.recipes`) are short compositions of these
functions, and a plugin's recipe uses the same ones, so that its options mean what the
built-ins' options mean and are refused with the same messages. Each helper builds one part
through its registry (:mod:`hamiltonia.registry`, the path a plugin's part takes), checks its
options, and names the option and its valid range when one is wrong. :func:`compose` puts
the parts together; :ref:`composing-a-sampler` builds a plugin's sampler with them.

The step size: with ``step_size=None`` it is found by the initial-step-size heuristic and
adapted by dual averaging during warm-up, then frozen; a number fixes it (no adaptation),
unless ``adapt_step_size=True``, in which case it is the starting point of the adaptation.
"""

from __future__ import annotations

import contextlib
import inspect
import math

import numpy as np

from hamiltonia import backend as _backend
from hamiltonia import integrators as _integrators
from hamiltonia import reducers as _reducers
from hamiltonia import refresh as _refresh
from hamiltonia import structures as _structures
from hamiltonia import trajectories as _trajectories
from hamiltonia import tuners as _tuners
from hamiltonia._validation import check_flag, check_int
from hamiltonia.hamiltonians.euclidean import EuclideanHamiltonian
from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric, Metric
from hamiltonia.hamiltonians.random_mass import RandomMassHamiltonian, check_mass_volatility
from hamiltonia.hamiltonians.shadow import LeapfrogShadowHamiltonian, SeparableShadowHamiltonian
from hamiltonia.integrators import Integrator, make_integrator
from hamiltonia.registry import UnknownNameError
from hamiltonia.samplers.hamiltonian import HamiltonianSampler
from hamiltonia.state import ChainState, ModelError, PhaseState
from hamiltonia.structures.base import CanonicalStructure
from hamiltonia.structures.magnetic import MagneticStructure, check_field
from hamiltonia.trajectories.no_u_turn import DEFAULT_MAX_TREE_DEPTH
from hamiltonia.tuners.adaptation import METRIC_POOLING

__all__ = [
    "ADAPTED_METRICS",
    "MAX_STEPS",
    "METRIC_POOLING",
    "PerChainMetricSampler",
    "compose",
    "hamiltonian",
    "integrator",
    "metric_tuners",
    "metropolis_trajectory",
    "momentum_refresh",
    "named_refresh",
    "named_trajectory",
    "no_u_turn",
    "reducer",
    "step_size_tuners",
    "structure",
    "tuners",
    "with_shadow",
]

#: The ``metric`` options adapted during warm-up.
ADAPTED_METRICS = ("diagonal", "dense")

#: Most leapfrog steps per trajectory a recipe accepts: far beyond any useful trajectory
#: (NUTS at its default depth 10 takes at most 1023), a guard against a typo that would hang.
MAX_STEPS = 1_000_000

_STAN_WINDOWS = (75, 25, 50)


def _check_adapt_metric(adapt_metric) -> bool:
    """Whether ``adapt_metric`` asks for a metric per chain, or ``ValueError`` naming it."""
    if not isinstance(adapt_metric, str) or adapt_metric not in METRIC_POOLING:
        raise ValueError(
            "adapt_metric must be 'pooled' (one metric from every chain's warm-up draws) or "
            f"'per-chain' (each chain's own, from its own draws), got {adapt_metric!r:.80}"
        )
    return adapt_metric == "per-chain"


def _check_metric(metric) -> None:
    if isinstance(metric, str) and metric not in ("identity", *ADAPTED_METRICS):
        raise ValueError(
            "metric must be 'identity', 'diagonal' or 'dense' (adapted in warm-up), an "
            f"inverse-mass array or a Metric, got {metric!r}"
        )


def hamiltonian(target, *, metric="identity", mass_volatility: float | None = 0.0):
    """The Hamiltonian :math:`H(q, p) = U(q) + K(p)` of a ``metric`` and a ``mass_volatility``.

    With a fixed mass, :math:`H = -\\log\\pi(q) + \\tfrac12 p^\\top M^{-1} p`
    (:class:`~hamiltonia.hamiltonians.EuclideanHamiltonian`); with :math:`\\beta > 0`, a
    diagonal mass redrawn every iteration, :math:`\\log m_i \\sim \\mathcal N(0, \\beta^2)`
    (:class:`~hamiltonia.hamiltonians.RandomMassHamiltonian`, quantum-inspired HMC).

    Parameters
    ----------
    target : Target
    metric : str, array or Metric
        ``"identity"`` or ``None`` (:math:`M = I`); ``"diagonal"`` or ``"dense"``: the
        identity as such a metric, adapted by :func:`metric_tuners` (the compiled composition
        then stays the same when a window ends); or a fixed inverse mass matrix (1-D
        diagonal, 2-D dense, or a :class:`~hamiltonia.hamiltonians.Metric`).
    mass_volatility : float >= 0 or None
        :math:`\\beta` (default 0: a fixed mass; ``None``: the target's research value).

    Returns
    -------
    Hamiltonian
        ``ValueError`` names ``metric`` or ``mass_volatility`` and what they accept.

    References
    ----------
    Duane et al. (1987), *Hybrid Monte Carlo*; Neal (2011), *MCMC using Hamiltonian
    dynamics*; Liu and Zhang (2019), *Quantum-inspired HMC*; Mongwe (2022), thesis, §2.6.
    """
    _check_metric(metric)
    if isinstance(metric, str) and metric in ADAPTED_METRICS:
        dim = target.dim
        metric = DiagonalMetric(np.ones(dim)) if metric == "diagonal" else DenseMetric(np.eye(dim))
    if mass_volatility is None:
        mass_volatility = target.research_mass_volatility
    beta = check_mass_volatility(mass_volatility)
    if beta == 0:
        return EuclideanHamiltonian(target, metric)
    return RandomMassHamiltonian(target, beta, metric)


def structure(target, field=None, *, g: float | None = None, field_seed: int = 0):
    """The Poisson structure of a ``field`` option: canonical (``None``) or magnetic.

    The magnetic flow :math:`\\dot q = M^{-1} p`, :math:`\\dot p = -\\nabla U(q) + G M^{-1} p`
    of an antisymmetric :math:`G` (:mod:`hamiltonia.structures.magnetic`), whose sign is
    negated with the momentum on rejection.

    Parameters
    ----------
    target : Target
    field : None, str or array
        ``None``: the canonical flow. A structure registered in ``hamiltonia.structures``:
        ``"research"`` (:math:`G_{1i} = g`, :math:`G_{i1} = -g`), ``"random"`` (entry scale
        ``g``, drawn from ``field_seed``) or a plugin's, given those of ``dim``, ``g`` and
        ``seed`` its factory takes. Or an antisymmetric ``(dim, dim)`` matrix.
    g : float >= 0, optional
        The field's strength (default: the target's research value).
    field_seed : int >= 0
        Seed of the random field (default 0).

    Returns
    -------
    PoissonStructure or None
        ``None`` for the canonical flow. ``ValueError`` names ``field``, ``g`` or
        ``field_seed``.

    References
    ----------
    Tripuraneni et al. (2017), *Magnetic Hamiltonian Monte Carlo*; Mongwe (2022), thesis,
    §2.5.
    """
    if field is None:
        if g is not None:
            raise ValueError("g is the strength of a magnetic field: give field='research' too")
        return None
    if isinstance(field, str):
        return _named_structure(target, field, g, field_seed)
    if g is not None:
        raise ValueError("g applies to field='research' or 'random', not to a given matrix")
    return MagneticStructure(check_field(field, target.dim))


def _named_structure(target, name, g, field_seed):
    known = _structures.names()
    if name not in known:
        others = ", ".join(repr(n) for n in known if n not in ("research", "random"))
        raise ValueError(
            f"field must be None, 'research', 'random' (or another registered structure: "
            f"{others}) or an antisymmetric (dim, dim) matrix, got {name!r}"
        )
    given = {"dim": target.dim, "g": target.research_field_strength if g is None else g}
    given["seed"] = field_seed
    accepted = {k: v for k, v in given.items() if _structures.registry.accepts(name, k)}
    if g is not None and "g" not in accepted:
        raise ValueError(f"g applies to a field with a strength; field={name!r} takes none")
    try:
        built = _structures.get(name, **accepted)
    except TypeError as err:
        if _structures.registry.accepts(name, "field"):
            raise ValueError(
                f"field={name!r} needs the field matrix: give it as field=G (antisymmetric)"
            ) from None
        raise ValueError(f"field={name!r}: {err}") from None
    # The canonical structure by name is the canonical flow, as field=None.
    return None if type(built) is CanonicalStructure else built


def with_shadow(
    hamiltonian,
    shadow: str | None,
    *,
    integrator="leapfrog",
    structure=None,
    fixed_point_tolerance: float = 1e-6,
    fixed_point_max_iterations: int = 100,
    hessian: str = "finite-difference",
    shadow_sign: str = "corrected",
):
    """A shadow Hamiltonian over ``hamiltonian``, and the integrator whose shadow it is.

    ``"separable"``: S2HMC's separable fourth-order shadow
    :math:`\\tilde H = H + \\tfrac{\\varepsilon^2}{24}\\nabla U^\\top M^{-1}\\nabla U`
    (:class:`~hamiltonia.hamiltonians.SeparableShadowHamiltonian`) of the processed leapfrog
    (:class:`~hamiltonia.integrators.ProcessedLeapfrog`). ``"leapfrog"``: the (magnetic)
    leapfrog's non-separable fourth-order shadow :math:`\\hat H`
    (:class:`~hamiltonia.hamiltonians.LeapfrogShadowHamiltonian`). The draws then carry the
    importance weights :math:`\\log w = \\tilde H - H`.

    Parameters
    ----------
    hamiltonian : Hamiltonian
        With a fixed mass (a shadow's correction depends on the mass).
    shadow : None, "separable" or "leapfrog"
        ``None``: ``hamiltonian`` and ``integrator`` come back unchanged.
    integrator : str or Integrator
        ``"leapfrog"`` (default), or ``"processed-leapfrog"`` with ``"separable"``.
    structure : PoissonStructure or None
        From :func:`structure`; a magnetic field only with ``"leapfrog"``.
    fixed_point_tolerance, fixed_point_max_iterations : float > 0, int >= 1
        Of the processed leapfrog's fixed points (defaults 1e-6 and 100, the thesis's).
    hessian : {"finite-difference", "target"}
        The curvature of ``"leapfrog"``: differences of the gradient or the target's ``hvp``.
    shadow_sign : {"corrected", "printed"}
        The sign of the magnetic term of ``"leapfrog"``: conserved to fourth order, or the
        SMHMC paper's printed one.

    Returns
    -------
    (Hamiltonian, str or Integrator)
        What to sample, and the integrator to give :func:`integrator`. ``ValueError`` names
        the option of a combination that has no shadow.

    References
    ----------
    Sweet et al. (2009), *A separable shadow Hamiltonian hybrid Monte Carlo method*;
    Izaguirre and Hampton (2004), *Shadow hybrid Monte Carlo*; Mongwe, Mbuvha and Marwala
    (2021, PS2HMC; 2022, SMHMC); Mongwe (2022), thesis, §2.7.
    """
    if shadow != "leapfrog" and (shadow_sign != "corrected" or hessian != "finite-difference"):
        raise ValueError("hessian and shadow_sign apply to shadow='leapfrog'")
    if shadow is None:
        return hamiltonian, integrator
    if shadow not in ("separable", "leapfrog"):
        raise ValueError(f"shadow must be None, 'separable' or 'leapfrog', got {shadow!r}")
    if isinstance(hamiltonian, RandomMassHamiltonian):
        raise ValueError(
            f"shadow={shadow!r} needs a fixed mass (mass_volatility=0): its correction "
            "depends on the mass"
        )
    if shadow == "leapfrog":
        if integrator != "leapfrog":
            raise ValueError(
                "shadow='leapfrog' is the (magnetic) leapfrog's own shadow; got "
                f"integrator={integrator!r}"
            )
        if structure is not None and not isinstance(structure, MagneticStructure):
            raise ValueError(
                f"shadow='leapfrog' has the magnetic term of a constant field only, not "
                f"field={type(structure).__name__}"
            )
        field = None if structure is None else structure.field
        return LeapfrogShadowHamiltonian(hamiltonian, hessian, field, shadow_sign), integrator
    if structure is not None:
        raise ValueError(
            "shadow='separable' is the processed leapfrog's shadow of the canonical dynamics; "
            "it does not apply to a magnetic field"
        )
    if integrator not in ("leapfrog", "processed-leapfrog"):
        raise ValueError(
            "shadow='separable' integrates with the processed leapfrog, whose shadow it is; "
            f"got integrator={integrator!r}"
        )
    try:
        processed = _integrators.get(
            "processed-leapfrog",
            tolerance=fixed_point_tolerance,
            max_iterations=fixed_point_max_iterations,
        )
    except ValueError as err:
        # The integrator names its own parameters; the user gave the recipe's.
        message = str(err)
        for own in ("tolerance", "max_iterations"):
            if message.startswith(own):
                message = "fixed_point_" + message
        raise ValueError(message) from None
    return SeparableShadowHamiltonian(hamiltonian), processed


def integrator(integrator="leapfrog", structure=None):
    """The integrator ``integrator`` over the Poisson structure ``structure``.

    A leapfrog step is :math:`p \\leftarrow p - \\tfrac{\\varepsilon}{2}\\nabla U(q)`,
    :math:`q \\leftarrow q + \\varepsilon M^{-1} p`,
    :math:`p \\leftarrow p - \\tfrac{\\varepsilon}{2}\\nabla U(q)`; the splittings compose
    more kicks and drifts; over a magnetic structure the drift is the exact flow of :math:`G`.

    Parameters
    ----------
    integrator : str or Integrator
        ``"leapfrog"`` (default), ``"two-stage"``, ``"three-stage"``, another name registered
        in ``hamiltonia.integrators``, or an :class:`~hamiltonia.integrators.Integrator`.
    structure : PoissonStructure or None
        From :func:`structure`; a named integrator's factory gets it as ``structure=``.

    Returns
    -------
    Integrator
        ``ValueError`` names ``integrator`` (an unknown name, or one given with a field).

    References
    ----------
    Leimkuhler and Reich (2004), *Simulating Hamiltonian Dynamics*; Blanes, Casas and
    Sanz-Serna (2014), *Numerical integrators for the Hybrid Monte Carlo method*.
    """
    if structure is None:
        return make_integrator(integrator)
    if isinstance(integrator, Integrator):
        raise ValueError(
            "give the magnetic field either through field= or inside the Integrator, not both"
        )
    return make_integrator(integrator, structure=structure)


def metropolis_trajectory(n_steps: int, *, n_steps_jitter: float = 0.0, step_size_jitter=0.0):
    """``n_steps`` integration steps (or a jittered number), then a Metropolis test.

    With ``n_steps_jitter`` :math:`j` the number of steps is drawn per chain and iteration
    uniformly on :math:`\\{\\max(1, \\lceil (1 - j) L\\rceil), \\dots, L\\}`; with
    ``step_size_jitter`` :math:`s` the step size on
    :math:`[(1 - s)\\varepsilon, (1 + s)\\varepsilon]`. The proposal is accepted with
    probability :math:`\\min(1, e^{H(q, p) - H(q', p')})`.

    Parameters
    ----------
    n_steps : int in [1, MAX_STEPS]
        :math:`L`, the (longest) number of steps.
    n_steps_jitter : float in [0, 1]
        :math:`j` (default 0: always :math:`L`; 1: uniform on :math:`1..L`).
    step_size_jitter : float in [0, 1)
        :math:`s` (default 0).

    Returns
    -------
    MetropolisTrajectory
        ``ValueError`` names ``n_steps``, ``n_steps_jitter`` or ``step_size_jitter``.

    References
    ----------
    Neal (2011), *MCMC using Hamiltonian dynamics*, §5.4.2.2; Mackenzie (1989), *An improved
    hybrid Monte Carlo method*.
    """
    longest = check_int(n_steps, "n_steps", minimum=1, maximum=MAX_STEPS)
    if isinstance(n_steps_jitter, bool) or not isinstance(n_steps_jitter, int | float):
        raise ValueError(f"n_steps_jitter must be a number in [0, 1], got {n_steps_jitter!r}")
    if not 0.0 <= n_steps_jitter <= 1.0:
        raise ValueError(f"n_steps_jitter must lie in [0, 1], got {n_steps_jitter!r}")
    shortest = max(1, math.ceil((1.0 - n_steps_jitter) * longest - 1e-12))
    return _trajectories.get(
        "metropolis", min_steps=shortest, max_steps=longest, step_size_jitter=step_size_jitter
    )


def no_u_turn(max_tree_depth: int = DEFAULT_MAX_TREE_DEPTH, criterion: str = "stan"):
    """The no-U-turn tree: multinomial NUTS with the generalised criterion.

    The trajectory doubles in random directions until the no-U-turn criterion stops it or it
    has :math:`2^d - 1` steps (:math:`d` = ``max_tree_depth``); the next state is drawn with
    weights :math:`e^{H_0 - H_i}` (:class:`~hamiltonia.trajectories.no_u_turn.NoUTurn`).

    Parameters
    ----------
    max_tree_depth : int in [1, 20]
        :math:`d` (default 10: at most 1023 steps).
    criterion : {"stan", "numpyro"}
        Stan's criterion (default) or NumPyro's and BlackJAX's.

    Returns
    -------
    NoUTurn
        ``ValueError`` names ``max_tree_depth`` or ``criterion``.

    References
    ----------
    Hoffman and Gelman (2014), *The No-U-Turn Sampler*, JMLR 15; Betancourt (2017), *A
    Conceptual Introduction to Hamiltonian Monte Carlo*, arXiv:1701.02434.
    """
    return _trajectories.get("no-u-turn", max_tree_depth=max_tree_depth, criterion=criterion)


def momentum_refresh(rho: float = 0.0, hamiltonian=None):
    """The momentum refresh between trajectories: full (``rho = 0``) or partial.

    Partial refreshment keeps the momentum, :math:`p' = \\rho p + \\sqrt{1 - \\rho^2}\\, u`,
    :math:`u \\sim \\mathcal N(0, M)`, and negates it on rejection
    (:class:`~hamiltonia.refresh.momentum.PartialRefresh`). A Hamiltonian that
    ``needs_momentum_test`` (the leapfrog's shadow) gets the refresh tested against it,
    ``rho = 0`` included (:class:`~hamiltonia.refresh.momentum.MetropolisPartialRefresh`).

    Parameters
    ----------
    rho : float in [0, 1)
        :math:`\\rho` (default 0: :math:`p \\sim \\mathcal N(0, M)`).
    hamiltonian : Hamiltonian, optional
        The Hamiltonian sampled.

    Returns
    -------
    MomentumRefresh
        ``ValueError`` names ``rho`` and its range.

    References
    ----------
    Horowitz (1991), *A generalized guided Monte Carlo algorithm*; Izaguirre and Hampton
    (2004); Mongwe (2022), thesis, §5.2.
    """
    if getattr(hamiltonian, "needs_momentum_test", False):
        return _refresh.get("metropolis-partial", rho=rho)
    if isinstance(rho, int | float) and not isinstance(rho, bool) and rho == 0:
        return _refresh.get("full")
    return _refresh.get("partial", rho=rho)


def _named(lookup, kind: str, name, given: dict, defaults: dict):
    """The part ``name`` of a part registry ``lookup`` (a package's registry), built with
    the recipe's options its factory takes; an option set away from its default that the
    factory does not take is a ValueError naming both."""
    if not isinstance(name, str):
        raise ValueError(f"{kind} must be the name of a registered {kind}, got {name!r}")
    registry = lookup.registry
    try:
        registry.factory(name)
    except UnknownNameError as err:
        # A recipe's option: a ValueError (as integrator= and field= give), with the
        # registry's message of the names it has.
        raise ValueError(f"{kind}: {err}") from None
    options = {key: value for key, value in given.items() if registry.accepts(name, key)}
    for key, value in given.items():
        if key not in options and value != defaults.get(key):
            raise ValueError(
                f"{kind} {name!r} takes no option {key!r} (its options: "
                f"{', '.join(registry.options(name)) or 'none'}); leave {key} at its default"
            )
    required = [
        p.name
        for p in inspect.signature(registry.factory(name)).parameters.values()
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name not in options
    ]
    if required:
        raise ValueError(
            f"{kind} {name!r} needs {', '.join(required)}, which the recipe does not give: "
            f"build it with hamiltonia.{lookup.__name__.rpartition('.')[2]}.get({name!r}, ...) "
            "and compose the sampler (hamiltonia.samplers.composition.compose)"
        )
    return lookup.get(name, **options)


def named_refresh(name: str, rho: float = 0.0):
    """The momentum refresh registered as ``name`` (:mod:`hamiltonia.refresh`, a plugin's
    among them), given ``rho`` where its factory takes it.

    Returns
    -------
    MomentumRefresh
        ``ValueError`` for a name no package registers (listing those that are) or a
        ``rho`` the refresh does not take.
    """
    return _named(_refresh, "refresh", name, {"rho": rho}, {"rho": 0.0})


def named_trajectory(name: str, n_steps: int, *, n_steps_jitter=0.0, step_size_jitter=0.0):
    """The trajectory policy registered as ``name`` (:mod:`hamiltonia.trajectories`, a
    plugin's among them), given ``n_steps`` and the jitters where its factory takes them.

    Returns
    -------
    TrajectoryPolicy
        ``ValueError`` for a name no package registers or a jitter the policy does not take.
    """
    given = {"n_steps": n_steps, "n_steps_jitter": n_steps_jitter,
             "step_size_jitter": step_size_jitter}  # fmt: skip
    # n_steps always has a value in a recipe: a policy without it simply does not get it.
    defaults = {"n_steps": n_steps, "n_steps_jitter": 0.0, "step_size_jitter": 0.0}
    return _named(_trajectories, "trajectory", name, given, defaults)


def step_size_tuners(
    step_size: float | None = None,
    *,
    adapt_step_size: bool | None = None,
    target_accept: float = 0.8,
) -> list:
    """Dual averaging of the step size, when asked: ``[DualAveraging]`` or ``[]``.

    It drives the acceptance statistic :math:`\\alpha_t` towards :math:`\\delta`:
    :math:`\\log\\varepsilon_{t+1} = \\mu - \\tfrac{\\sqrt t}{\\gamma}\\bar H_t`,
    :math:`\\bar H_t = (1 - \\tfrac{1}{t + t_0})\\bar H_{t-1}
    + \\tfrac{1}{t + t_0}(\\delta - \\alpha_t)`, then freezes the averaged step size
    (:class:`~hamiltonia.tuners.DualAveraging`).

    Parameters
    ----------
    step_size : float > 0, optional
        Fixed, or the start of the adaptation (default: the initial-step-size heuristic).
    adapt_step_size : bool, optional
        Adapt (default: only when ``step_size`` is not given).
    target_accept : float in (0, 1)
        :math:`\\delta` (default 0.8).

    Returns
    -------
    list of Tuner
        ``ValueError`` names ``adapt_step_size`` or ``target_accept``.

    References
    ----------
    Nesterov (2009), *Primal-dual subgradient methods*; Hoffman and Gelman (2014), §3.2.
    """
    adapt_step_size = check_flag(adapt_step_size, "adapt_step_size", allow_none=True)
    adapt = step_size is None if adapt_step_size is None else adapt_step_size
    if not adapt:
        if step_size is None:
            raise ValueError("step_size must be given when adapt_step_size=False")
        return []
    return [_tuners.get("dual-averaging", target_accept=target_accept, initial_step_size=step_size)]


def _windows(adapt_windows) -> dict:
    """Stan's warm-up windows ``(initial buffer, first window, terminal buffer)``."""
    if (
        not isinstance(adapt_windows, tuple | list)
        or len(adapt_windows) != 3
        or any(isinstance(v, bool) or not isinstance(v, int | np.integer) for v in adapt_windows)
    ):
        raise ValueError(
            "adapt_windows must be three integers (initial buffer, first window, terminal "
            f"buffer), such as Stan's (75, 25, 50); got {adapt_windows!r:.80}"
        )
    first, window, last = (int(v) for v in adapt_windows)
    if first < 0 or window < 1 or last < 0:
        raise ValueError(
            f"adapt_windows must be (>= 0, >= 1, >= 0) iterations, got {tuple(adapt_windows)}"
        )
    return {"initial_buffer": first, "window": window, "terminal_buffer": last}


def metric_tuners(metric="identity", adapt_windows=_STAN_WINDOWS,
                  adapt_metric: str = "pooled") -> list:  # fmt: skip
    """Stan's windowed adaptation of a ``"diagonal"`` or ``"dense"`` metric, or ``[]``.

    Each window sets :math:`M^{-1} = \\tfrac{n}{n + 5}\\hat\\Sigma + 10^{-3}\\tfrac{5}{n + 5}I`
    from its :math:`n` draws' covariance (its diagonal for ``"diagonal"``), pooled over
    chains or per chain (:class:`~hamiltonia.tuners.adaptation.WindowedMetric`). Give
    :func:`hamiltonian` the same ``metric``; :func:`compose` builds the
    :class:`PerChainMetricSampler` that a metric per chain needs.

    Parameters
    ----------
    metric : str, array or Metric
        As in :func:`hamiltonian`.
    adapt_windows : (int >= 0, int >= 1, int >= 0)
        Iterations of the initial buffer (step size only), the first metric window (each next
        one twice as long) and the terminal buffer (default ``(75, 25, 50)``, Stan's);
        checked only for an adapted metric.
    adapt_metric : {"pooled", "per-chain"}
        ``"pooled"`` (default): one metric from every chain's draws of a window.
        ``"per-chain"`` (Stan's and NumPyro's choice): each chain (each antithetic pair) its
        own, from its own draws, so that a chain's draws do not depend on the number of
        chains (:doc:`/adaptation`). Checked whatever the metric; a fixed metric is not
        adapted either way.

    Returns
    -------
    list of Tuner
        ``ValueError`` names ``metric``, ``adapt_windows`` or ``adapt_metric`` and what they
        accept.

    References
    ----------
    Stan Development Team, *Stan Reference Manual*, "Automatic parameter tuning".
    """
    _check_metric(metric)
    per_chain = _check_adapt_metric(adapt_metric)
    if isinstance(metric, str) and metric in ADAPTED_METRICS:
        options = _windows(adapt_windows)
        if per_chain:  # only then: a tuner of the registry that knows no per_chain still builds
            options["per_chain"] = True
        return [_tuners.get("windowed-metric", kind=metric, **options)]
    return []


def tuners(
    step_size: float | None = None,
    *,
    adapt_step_size: bool | None = None,
    target_accept: float = 0.8,
    metric="identity",
    adapt_windows=_STAN_WINDOWS,
    adapt_metric: str = "pooled",
) -> list:
    """The warm-up tuners of the options: :func:`step_size_tuners` + :func:`metric_tuners`.

    Parameters
    ----------
    step_size, adapt_step_size, target_accept
        As in :func:`step_size_tuners`.
    metric, adapt_windows, adapt_metric
        As in :func:`metric_tuners` (checked first, as the recipes check them).

    Returns
    -------
    list of Tuner

    References
    ----------
    Hoffman and Gelman (2014), §3.2; the Stan Reference Manual.
    """
    adapt_metric = metric_tuners(metric, adapt_windows, adapt_metric)
    adapt_step = step_size_tuners(
        step_size, adapt_step_size=adapt_step_size, target_accept=target_accept
    )
    return adapt_step + adapt_metric


def reducer(hamiltonian, *, antithetic: bool = False, control_variates: int | bool = False):
    """The variance reducer of the options, or ``None`` (the sampler's default).

    Control variates over antithetic pairs over the importance weights of a shadow
    Hamiltonian. Antithetic pairs of chains share their random numbers, the secondary
    negating its momentum normals (:class:`~hamiltonia.reducers.antithetic.AntitheticPairs`).
    Zero-variance control variates estimate :math:`E f` by the mean of
    :math:`f + \\Delta P + \\nabla P^\\top \\nabla\\log\\pi`, :math:`P` a linear or quadratic
    polynomial fitted by least squares
    (:class:`~hamiltonia.reducers.control_variates.ControlVariates`).

    Parameters
    ----------
    hamiltonian : Hamiltonian
        The Hamiltonian sampled.
    antithetic : bool
        Antithetic pairs (an even number of chains); default ``False``.
    control_variates : {False, 1, 2}
        The polynomial order (``True`` is 1); default ``False``.

    Returns
    -------
    VarianceReducer or None
        ``ValueError`` names ``antithetic`` or ``control_variates``.

    References
    ----------
    Piponi, Hoffman and Sountsov (2020), *Hamiltonian Monte Carlo swindles*; Mira, Solgi and
    Imparato (2013), *Zero variance MCMC for Bayesian estimators*.
    """
    from hamiltonia.hamiltonians.shadow import ShadowHamiltonian

    antithetic = check_flag(antithetic, "antithetic")
    if control_variates is False:
        control_variates = 0
    elif control_variates is True:
        control_variates = 1
    if isinstance(control_variates, bool | np.bool_) or control_variates not in (0, 1, 2):
        raise ValueError(f"control_variates must be False, 1 or 2, got {control_variates!r}")
    if not (antithetic or control_variates):
        return None
    target = hamiltonian.target
    if control_variates and target.constrains:
        raise ValueError(
            f"control_variates: target {type(target).__name__} reports constrained draws, "
            "and the control variates need the gradient in the coordinates of the draws"
        )
    shadow = isinstance(hamiltonian, ShadowHamiltonian)
    built = _reducers.get("importance-weights") if shadow else None
    if antithetic:
        built = _reducers.get("antithetic", inner=built)
    if control_variates:
        built = _reducers.get("control-variates", order=int(control_variates), inner=built)
    return built


def compose(
    hamiltonian,
    trajectory,
    *,
    integrator=None,
    refresh=None,
    tuners=(),
    reducer=None,
    step_size: float | None = None,
    name: str | None = None,
) -> HamiltonianSampler:
    """The :class:`~hamiltonia.samplers.HamiltonianSampler` of the parts, named ``name``.

    One iteration: :math:`p \\sim \\text{refresh}(p)`,
    :math:`(q', p') = \\Phi_\\varepsilon^L(q, p)`, accepted (or selected along the
    trajectory) with probability :math:`\\min(1, e^{H(q, p) - H(q', p')})`.

    Parameters
    ----------
    hamiltonian, trajectory, integrator, refresh, tuners, reducer
        From :func:`hamiltonian` (and :func:`with_shadow`), :func:`metropolis_trajectory` or
        :func:`no_u_turn` (or a policy of one's own), :func:`integrator` (default: the
        leapfrog), :func:`momentum_refresh` (default: full), :func:`tuners` (default: none)
        and :func:`reducer` (default: the importance weights of a shadow Hamiltonian).
    step_size : float, optional
        The fixed or initial step size.
    name : str, optional
        The name the result reports (default: the name it was built by).

    Returns
    -------
    HamiltonianSampler
        ``TypeError`` names a part not of its kind; ``ValueError`` the parts of a
        composition that would sample the wrong distribution (a refresh whose ``requires``
        the Hamiltonian does not provide, :mod:`hamiltonia.refresh.contracts`: a partial
        refresh with a kinetic energy that is not Gaussian). A
        :class:`PerChainMetricSampler` where a tuner adapts the metric per chain
        (:func:`metric_tuners` with ``adapt_metric="per-chain"``).

    References
    ----------
    Duane et al. (1987); Neal (2011); Mongwe (2022), thesis, §2.4 (Algorithm 2).
    """
    per_chain = any(getattr(tuner, "per_chain", False) for tuner in tuners)
    cls = PerChainMetricSampler if per_chain else HamiltonianSampler
    sampler = cls(
        hamiltonian=hamiltonian,
        integrator=integrator,
        trajectory=trajectory,
        refresh=refresh,
        tuners=tuners,
        reducer=reducer,
        step_size=step_size,
    )
    if name is not None:
        sampler.name = name
    return sampler


def _joined(values: list, order: np.ndarray):
    """The per-chain arrays of the groups, ``values`` (chains on the first axis), joined and
    put back in chain order (``order``: the chain of each joined row)."""
    if all(isinstance(v, np.ndarray) or np.isscalar(v) for v in values):
        xp = np
    else:
        xp = _backend.xp()
    joined = xp.concatenate([xp.asarray(v) for v in values], axis=0)
    if np.array_equal(order, np.arange(order.size)):
        return joined
    return joined[xp.asarray(np.argsort(order))]


def _joined_phases(phases: list[PhaseState], order: np.ndarray) -> PhaseState:
    """The groups' phase states as one, in chain order."""

    def field(name):
        values = [getattr(phase, name) for phase in phases]
        return None if values[0] is None else _joined(values, order)

    names = dict.fromkeys(name for phase in phases for name in phase.aux)
    aux = {}
    for name in names:
        # A variable a group has not set yet is zero there (the parts' convention).
        reference = next(phase.aux[name] for phase in phases if name in phase.aux)
        aux[name] = _joined(
            [
                phase.aux[name]
                if name in phase.aux
                else _backend.xp().zeros((phase.q.shape[0], *reference.shape[1:]))
                for phase in phases
            ],
            order,
        )
    return PhaseState(field("q"), field("p"), field("log_prob"), field("grad"), aux)


def _per_chain(value, n: int):
    """A statistic of a group's step as one value per chain of the group."""
    return np.broadcast_to(value, (n,)) if np.ndim(value) == 0 else value


class PerChainMetricSampler(HamiltonianSampler):
    """A :class:`~hamiltonia.samplers.HamiltonianSampler` whose chains each move with a metric
    of their own: the sampler of per-chain metric adaptation (``adapt_metric="per-chain"``,
    :class:`~hamiltonia.tuners.adaptation.WindowedMetric` with ``per_chain=True``).

    The chains move in groups (:meth:`chain_groups`): each chain, or each antithetic pair
    (whose two chains share their random numbers, and so their metric), as a run of its own
    with its metric installed (:meth:`parts_of`), so that chain :math:`c`'s draws do not
    depend on how many chains run beside it. On the NumPy path one group is stepped at a
    time (the vectorisation over chains is given up: :doc:`/adaptation` measures its cost);
    on the compiled path each chain runs in its own kernel call anyway, with its own
    metric's parameters (:meth:`hamiltonia.compiled.plan.CompiledPlan.run`).

    Until warm-up installs them (:meth:`set_chain_metrics`), every chain moves with the
    Hamiltonian's own metric, which stays the one the sampler was built with: the adapted
    metrics are :attr:`chain_metrics`, and a checkpoint saves them with the sampler's state
    (:meth:`extra_state`).

    Parameters are those of :class:`~hamiltonia.samplers.HamiltonianSampler`.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._chain_metrics: list | None = None
        # Inside parts_of: the sampler moves the chains it is given as one group.
        self._in_group = False

    @property
    def chain_metrics(self) -> list | None:
        """Each chain's metric (an antithetic pair's two chains share theirs), or ``None``
        while every chain moves with the Hamiltonian's own."""
        return None if self._chain_metrics is None else list(self._chain_metrics)

    def set_chain_metrics(self, metrics) -> None:
        """Install one metric per chain (a list of
        :class:`~hamiltonia.hamiltonians.Metric`), or ``None``: every chain with the
        Hamiltonian's own."""
        if metrics is None:
            self._chain_metrics = None
            return
        metrics = list(metrics)
        if not metrics or not all(isinstance(m, Metric) for m in metrics):
            raise TypeError("chain metrics must be a non-empty list of Metric, one per chain")
        self._chain_metrics = metrics

    def _grouping(self, chains: int) -> list[list[int]]:
        # An antithetic pair is one group: its chains share their random numbers.
        return [list(g) for g in self.reducer.pairing(chains)] or [[c] for c in range(chains)]

    def chain_groups(self, chains):
        """Each chain, or each antithetic pair, in order; ``None`` inside :meth:`parts_of`
        (the chains given then are one group). ``ValueError`` where the sampler holds the
        metrics of another number of chains."""
        if self._in_group:
            return None
        held = self._chain_metrics
        if held is not None and len(held) != chains:
            raise ValueError(
                f"the sampler holds the adapted metrics of {len(held)} chains, not {chains}: "
                "a run with another number of chains adapts them anew (warm-up)"
            )
        return self._grouping(chains)

    @contextlib.contextmanager
    def parts_of(self, group):
        """Install the metric of the chains ``group`` (one of :meth:`chain_groups`) for the
        duration; the sampler then moves the chains it is given as that one group."""
        metric = self.hamiltonian.metric
        if self._chain_metrics is not None:
            self.hamiltonian.metric = self._chain_metrics[group[0]]
        was, self._in_group = self._in_group, True
        try:
            yield
        finally:
            self.hamiltonian.metric = metric
            self._in_group = was

    def _by_group(self, chain: ChainState, rngs, move):
        """``move(sub_chain, sub_rngs, rows)`` for each group (its chains ``rows``) with its
        parts installed: what ``move`` returned, by group, and the chain of each row of
        their joined results; a model's error names the run's chain."""
        n = len(rngs)
        groups = self.chain_groups(n)
        step = np.broadcast_to(np.asarray(chain.step_size, dtype=float), (n,))
        results = []
        for group in groups:
            rows = np.asarray(group)
            with self.parts_of(group):
                sub = ChainState(chain.phase.take(rows), np.array(step[rows]))
                try:
                    results.append(move(sub, [rngs[c] for c in group], rows))
                except ModelError as err:
                    raise err.renumbered(group) from err.__cause__
        return results, np.concatenate([np.asarray(g) for g in groups])

    def init(self, positions):
        q = np.asarray(_backend.to_numpy(positions), dtype=float)
        groups = self._grouping(q.shape[0])
        if self._in_group or len(groups) == 1:
            return super().init(positions)
        # One group at a time: a chain's log density and gradient are then computed as in a
        # run of its own (a target's matrix product may round differently with more rows).
        phases = [super(PerChainMetricSampler, self).init(q[g]).phase for g in groups]
        order = np.concatenate([np.asarray(g) for g in groups])
        return ChainState(_joined_phases(phases, order), self._initial_step_sizes(q.shape[0]))

    def step(self, chain, rngs):
        if self.chain_groups(len(rngs)) is None:
            return super().step(chain, rngs)
        parent = super()

        def move(sub, sub_rngs, rows):
            sub, info = parent.step(sub, sub_rngs)
            return sub.phase, {k: _per_chain(v, len(rows)) for k, v in info.items()}

        results, order = self._by_group(chain, rngs, move)
        chain.phase = _joined_phases([phase for phase, _ in results], order)
        infos = [info for _, info in results]
        return chain, {k: _joined([info[k] for info in infos], order) for k in infos[0]}

    def probe_acceptance(self, chain, step_size, rngs):
        if self.chain_groups(len(rngs)) is None:
            return super().probe_acceptance(chain, step_size, rngs)
        eps = np.broadcast_to(np.asarray(step_size, dtype=float), (len(rngs),))
        parent = super()

        def move(sub, sub_rngs, rows):
            return parent.probe_acceptance(sub, np.array(eps[rows]), sub_rngs)

        results, order = self._by_group(chain, rngs, move)
        return _joined(results, order)

    def log_weight(self, chain):
        n = np.shape(chain.phase.log_prob)[0]
        if self.chain_groups(n) is None:
            return super().log_weight(chain)
        parent = super()
        results, order = self._by_group(
            chain, [None] * n, lambda sub, _rngs, _rows: parent.log_weight(sub)
        )
        return None if results[0] is None else _joined(results, order)

    def extra_state(self):
        """The sampler's state, and each chain's metric once adapted: ``chain_metrics``, the
        metrics' class and inverse mass matrices, one per chain."""
        state = super().extra_state()
        if self._chain_metrics is not None:
            state["chain_metrics"] = {
                "kind": type(self._chain_metrics[0]).__name__,
                "inverse_mass": [np.asarray(m.inverse_mass).tolist() for m in self._chain_metrics],
            }
        return state

    def restore_extra_state(self, state):
        """Put back an :meth:`extra_state` read from a file, checked: ``ValueError`` naming
        ``chain_metrics`` and what is wrong with it."""
        super().restore_extra_state(state)
        saved = state.get("chain_metrics") if isinstance(state, dict) else None
        if saved is None:
            self.set_chain_metrics(None)
            return
        kinds = {"DiagonalMetric": DiagonalMetric, "DenseMetric": DenseMetric}
        kind = saved.get("kind") if isinstance(saved, dict) else None
        matrices = saved.get("inverse_mass") if isinstance(saved, dict) else None
        if kind not in kinds or not isinstance(matrices, list) or not matrices:
            raise ValueError(
                "sampler_state.chain_metrics must hold the kind (DiagonalMetric or DenseMetric) "
                "and a non-empty list of inverse mass matrices, one per chain"
            )
        dim = self.target.dim
        shape = (dim,) if kind == "DiagonalMetric" else (dim, dim)
        metrics = []
        for c, matrix in enumerate(matrices):
            try:
                values = np.asarray(matrix, dtype=np.float64)
                if values.shape != shape:
                    raise ValueError(f"shape {values.shape}, expected {shape}")
                metrics.append(kinds[kind](values))
            except (TypeError, ValueError) as err:
                raise ValueError(
                    f"sampler_state.chain_metrics: the metric of chain {c} is invalid: {err}"
                ) from None
        self.set_chain_metrics(metrics)

    def select_extra_state(self, state, chains):
        saved = state.get("chain_metrics")
        if saved is None:
            return state
        matrices = [saved["inverse_mass"][c] for c in chains]
        return {**state, "chain_metrics": {**saved, "inverse_mass": matrices}}
