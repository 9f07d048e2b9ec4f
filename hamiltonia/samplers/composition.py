"""Composition helpers: build each part of a Hamiltonian sampler from user-level options.

The registered recipes (:mod:`hamiltonia.samplers.recipes`) are short compositions of these
functions, and a plugin's recipe uses the same ones, so that its options mean what the
built-ins' options mean and are refused with the same messages. Each helper builds one part
through its registry (:mod:`hamiltonia.registry`, the path a plugin's part takes), checks its
options, and names the option and its valid range when one is wrong. :func:`compose` puts
the parts together; :ref:`composing-a-sampler` builds a plugin's sampler with them.

Where they live
---------------
This module re-exports the warm-up tuners of the options
(:mod:`hamiltonia.samplers.warmup_tuners`: :func:`step_size_tuners`, :func:`metric_tuners`,
:func:`tuners`, :data:`ADAPTED_METRICS`) and the sampler of a metric per chain that
:func:`compose` builds (:mod:`hamiltonia.samplers.per_chain`: :class:`PerChainMetricSampler`).
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from hamiltonia import integrators as _integrators
from hamiltonia import reducers as _reducers
from hamiltonia import refresh as _refresh
from hamiltonia import structures as _structures
from hamiltonia import trajectories as _trajectories
from hamiltonia._validation import check_flag, check_int
from hamiltonia.hamiltonians.euclidean import EuclideanHamiltonian
from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric
from hamiltonia.hamiltonians.random_mass import RandomMassHamiltonian, check_mass_volatility
from hamiltonia.hamiltonians.shadow import LeapfrogShadowHamiltonian, SeparableShadowHamiltonian
from hamiltonia.integrators import Integrator, make_integrator
from hamiltonia.registry import UnknownNameError
from hamiltonia.samplers.hamiltonian import HamiltonianSampler
from hamiltonia.samplers.per_chain import PerChainMetricSampler
from hamiltonia.samplers.warmup_tuners import (
    ADAPTED_METRICS,
    METRIC_POOLING,
    _check_metric,
    metric_tuners,
    step_size_tuners,
    tuners,
)
from hamiltonia.structures.base import CanonicalStructure
from hamiltonia.structures.magnetic import MagneticStructure, check_field
from hamiltonia.trajectories.no_u_turn import DEFAULT_MAX_TREE_DEPTH

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

#: Most leapfrog steps per trajectory a recipe accepts: far beyond any useful trajectory
#: (NUTS at its default depth 10 takes at most 1023), a guard against a typo that would hang.
MAX_STEPS = 1_000_000


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
