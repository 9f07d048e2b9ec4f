"""Named samplers: short recipes composing the parts.

Each recipe takes the target first and the sampler's options by keyword, and returns a
:class:`~hamiltonia.samplers.Sampler`. They are registered under the entry-point group
``hamiltonia.samplers``, the same way a plugin registers its own.

Step size: with ``step_size=None`` (default) the step size is found by the initial-step-size
heuristic and adapted by dual averaging during warm-up, then frozen. A number fixes it
(no adaptation), unless ``adapt_step_size=True``, in which case it is the starting point of
the adaptation.

Each recipe is a short composition of the public helpers of
:mod:`hamiltonia.samplers.composition`, which a plugin's recipe uses too. They build the
parts through their registries (:mod:`hamiltonia.registry`), the path a plugin's part takes:
``integrator=NAME`` from ``hamiltonia.integrators``, ``field=NAME`` from
``hamiltonia.structures``, ``hamiltonian=NAME`` from ``hamiltonia.hamiltonians``,
``tuners=NAME`` from ``hamiltonia.tuners``, and the refresh, trajectory policy, tuners and
reducers the options choose from the groups of their kinds.

Hamiltonian and tuners: every Hamiltonian recipe takes ``hamiltonian=`` (a registered name
or a :class:`~hamiltonia.hamiltonians.Hamiltonian` class, built for the target with the
recipe's ``metric`` and ``mass_volatility`` where the factory takes them, or a Hamiltonian
built for the target) in place of the one ``metric`` and ``mass_volatility`` build, except
with a ``shadow``, which is built over the recipe's own. Every recipe takes ``tuners=`` (a
registered tuner's name, a comma-separated string or a list of names, Tuner classes or
instances): each is added to the recipe's own warm-up tuners, or replaces the one of its
class there (``tuners="dual-averaging"`` with a fixed ``step_size`` adapts it, as
``adapt_step_size=True`` does; a :class:`~hamiltonia.tuners.DualAveraging` instance
replaces the recipe's dual averaging with its own settings). ``adapt_step_size=False`` turns
the step size's adaptation off, and then refuses a dual averaging in ``tuners``.
"""

from __future__ import annotations

import contextvars
import inspect

import numpy as np

from hamiltonia import hamiltonians as _hamiltonians
from hamiltonia import tuners as _tuners
from hamiltonia.hamiltonians import Hamiltonian
from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric, make_metric
from hamiltonia.hamiltonians.random_mass import check_mass_volatility
from hamiltonia.registry import UnknownNameError
from hamiltonia.samplers import composition as make

# Kept importable from here, where they were first defined.
from hamiltonia.samplers.composition import ADAPTED_METRICS as ADAPTED_METRICS
from hamiltonia.samplers.composition import MAX_STEPS as MAX_STEPS
from hamiltonia.samplers.hamiltonian import HamiltonianSampler
from hamiltonia.samplers.random_walk import RandomWalkMetropolis
from hamiltonia.trajectories.no_u_turn import DEFAULT_MAX_TREE_DEPTH
from hamiltonia.tuners import DualAveraging, Tuner, WindowedMetric

__all__ = [
    "a_hmc",
    "a_mhmc",
    "a_s2hmc",
    "as2hmc",
    "hmc",
    "js2hmc",
    "mala",
    "mhmc",
    "nuts",
    "phmc",
    "pmhmc",
    "ps2hmc",
    "pshmc",
    "qihmc",
    "qimhmc",
    "rwmh",
    "s2hmc",
    "shmc",
    "smhmc",
    "split_hmc",
]

#: The name of the recipe being built, for the messages of the options it refuses: a preset
#: (``s2hmc``), :func:`mala` and :func:`split_hmc` run the body of :func:`hmc` or :func:`nuts`.
_RECIPE: contextvars.ContextVar[str | None] = contextvars.ContextVar("recipe", default=None)


def _recipe(default: str) -> str:
    """The name of the recipe the user called (the outermost one being built)."""
    return _RECIPE.get() or default


def _as_recipe(name: str, build, *args, **options):
    """``build(*args, **options)``, with ``name`` as the recipe the messages name (unless an
    outer recipe already is)."""
    token = _RECIPE.set(_RECIPE.get() or name)
    try:
        return build(*args, **options)
    finally:
        _RECIPE.reset(token)


def _shown(value) -> str:
    """A user's part in a message: a name as given, a class or an instance by its class."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, type):
        return value.__name__
    return type(value).__name__


def _is_identity(metric) -> bool:
    return metric is None or (isinstance(metric, str) and metric == "identity")


def _factory_takes(factory, option: str) -> bool:
    """Whether ``factory`` takes the keyword ``option`` (or any keyword)."""
    parameters = inspect.signature(factory).parameters.values()
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == option and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        for p in parameters
    )


def _missing(factory, given: dict, skip: int = 0) -> list[str]:
    """The parameters of ``factory`` without a default that ``given`` does not hold (after
    the first ``skip``, which the caller passes by position)."""
    parameters = list(inspect.signature(factory).parameters.values())[skip:]
    return [
        p.name
        for p in parameters
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name not in given
    ]


def _built_hamiltonian(recipe, hamiltonian, target, **options):
    """:func:`~hamiltonia.hamiltonians.make_hamiltonian`, its ``ValueError`` naming the
    recipe."""
    try:
        return _hamiltonians.make_hamiltonian(hamiltonian, target, **options)
    except ValueError as err:
        raise ValueError(f"{recipe}: {err}") from None


def _chosen_hamiltonian(recipe, target, hamiltonian, metric, mass_volatility, shadow):
    """The Hamiltonian of ``hamiltonian=`` (not ``None``): a registered name or a Hamiltonian
    class, built for ``target`` with ``metric`` (as a Metric; an adapted ``"diagonal"`` or
    ``"dense"`` as the identity of that kind) and ``mass_volatility`` where its factory
    takes them, or a Hamiltonian built for ``target``. ``ValueError`` names ``hamiltonian``
    and the recipe where the other options ask for what the Hamiltonian cannot take."""
    shown = _shown(hamiltonian)
    if shadow is not None:
        raise ValueError(
            f"{recipe}: hamiltonian={shown} cannot be combined with shadow={shadow!r}: the "
            "shadow is built over the recipe's own Euclidean Hamiltonian, with the integrator "
            "and the importance weights that go with it; choose the Hamiltonian in a recipe "
            "without a shadow (hmc, nuts, mhmc, ...)"
        )
    beta = None if mass_volatility is None else check_mass_volatility(mass_volatility)
    random_mass = beta is None or beta > 0  # mass_volatility asks for a random mass
    adapted = isinstance(metric, str) and metric in make.ADAPTED_METRICS
    if isinstance(hamiltonian, Hamiltonian):
        if random_mass:
            raise ValueError(
                f"{recipe}: hamiltonian={shown} and mass_volatility={mass_volatility!r} both "
                "choose the Hamiltonian: give a random mass inside the Hamiltonian "
                "(RandomMassHamiltonian), or mass_volatility=0"
            )
        if adapted:
            kind = DiagonalMetric if metric == "diagonal" else DenseMetric
            if not isinstance(getattr(hamiltonian, "metric", None), kind):
                raise ValueError(
                    f"{recipe}: metric={metric!r} adapts the Hamiltonian's {kind.__name__} in "
                    f"warm-up, and the given hamiltonian={shown} has "
                    f"{type(getattr(hamiltonian, 'metric', None)).__name__}: build it with a "
                    f"{kind.__name__}, or give metric='identity' to keep its own"
                )
        elif not _is_identity(metric):
            raise ValueError(
                f"{recipe}: give the metric inside the Hamiltonian or as metric=, not both "
                f"(hamiltonian={shown})"
            )
        return _built_hamiltonian(recipe, hamiltonian, target)
    if isinstance(hamiltonian, str):
        try:
            factory = _hamiltonians.registry.factory(hamiltonian)
        except UnknownNameError:
            factory = None  # make_hamiltonian names the registered ones
    elif isinstance(hamiltonian, type) and issubclass(hamiltonian, Hamiltonian):
        factory = hamiltonian
    else:
        factory = None
    if factory is None:
        return _built_hamiltonian(recipe, hamiltonian, target)  # refused, naming the names
    given = {}
    if _factory_takes(factory, "metric"):
        if adapted:
            dim = target.dim
            given["metric"] = (
                DiagonalMetric(np.ones(dim)) if metric == "diagonal" else DenseMetric(np.eye(dim))
            )
        else:
            given["metric"] = make_metric(metric, target.dim)
    elif not _is_identity(metric):
        raise ValueError(
            f"{recipe}: hamiltonian={shown} takes no metric, so metric={metric!r:.40} cannot be "
            "given with it: give metric='identity'"
        )
    if random_mass:
        if not _factory_takes(factory, "mass_volatility"):
            raise ValueError(
                f"{recipe}: hamiltonian={shown} takes no mass_volatility, so "
                f"mass_volatility={mass_volatility!r} cannot be given with it: give "
                "mass_volatility=0 (or hamiltonian='random-mass')"
            )
        given["mass_volatility"] = target.research_mass_volatility if beta is None else beta
    required = _missing(factory, given, skip=1)
    if required:
        how = (
            f"hamiltonia.hamiltonians.get({hamiltonian!r}, target, ...)"
            if isinstance(hamiltonian, str)
            else f"{hamiltonian.__name__}(target, ...)"
        )
        hint = (
            " (mass_volatility reaches it only when it asks for a random mass: None or above 0)"
            if "mass_volatility" in required
            else ""
        )
        raise ValueError(
            f"{recipe}: hamiltonian={shown} needs {', '.join(required)}, which the recipe does "
            f"not give{hint}: build it, {how}, and give the Hamiltonian"
        )
    return _built_hamiltonian(recipe, hamiltonian, target, **given)


def _tuner_entries(recipe: str, tuners) -> list:
    """The entries of a ``tuners`` option: a name, a comma-separated string of names, a Tuner
    class or instance, or a list of those."""
    if isinstance(tuners, str):
        return [name.strip() for name in tuners.split(",")]
    if isinstance(tuners, Tuner | type):
        return [tuners]
    if isinstance(tuners, list | tuple):
        return list(tuners)
    raise ValueError(
        f"{recipe}: tuners must be a registered tuner's name, a list of names, or Tuner "
        f"classes or instances, got {tuners!r:.80}"
    )


def _one_tuner(recipe: str, entry, given: dict):
    """The tuner of one entry of ``tuners``: an instance as it is, a registered name or a
    Tuner class built with those of the recipe's options in ``given`` its factory takes."""
    if isinstance(entry, Tuner):
        return entry
    if isinstance(entry, str):
        try:
            factory = _tuners.registry.factory(entry)
        except UnknownNameError as err:
            raise ValueError(f"{recipe}: tuners: {err}") from None
    elif isinstance(entry, type) and issubclass(entry, Tuner):
        factory = entry
    else:
        raise ValueError(
            f"{recipe}: each of tuners must be a registered tuner's name, a Tuner class or a "
            f"Tuner, got {entry!r:.80} (registered: {', '.join(_tuners.names())})"
        )
    options = {k: v for k, v in given.items() if _factory_takes(factory, k)}
    required = _missing(factory, options)
    if required:
        raise ValueError(
            f"{recipe}: tuners: {_shown(entry)} needs {', '.join(required)}, which the recipe "
            "does not give: build the tuner (hamiltonia.tuners.get) and give it in tuners"
        )
    if isinstance(entry, str):
        return _tuners.get(entry, **options)
    return entry(**options)


def _tuner_list(recipe, tuners, metric_tuners, step_size, adapt_step_size, target_accept,
                metric="identity", adapt_windows=None, adapt_metric="pooled") -> list:  # fmt: skip
    """The recipe's own warm-up tuners (the step size's, as the options ask, then
    ``metric_tuners``) with those of the ``tuners`` option: each replaces the one of its
    class among them, or is added after them. A named tuner (or a Tuner class) gets those of
    ``target_accept``, ``initial_step_size`` (``step_size``) and, for an adapted metric,
    ``kind``, the windows and ``per_chain`` that its factory takes. ``metric=None``: the
    sampler has no Hamiltonian, whose metric a tuner could adapt. ``ValueError`` names
    ``tuners`` and the recipe for a tuner the other options turn off."""
    own = make.step_size_tuners(
        step_size, adapt_step_size=adapt_step_size, target_accept=target_accept
    ) + list(metric_tuners)
    if tuners is None:
        return own
    given = {"target_accept": target_accept, "initial_step_size": step_size}
    adapted = isinstance(metric, str) and metric in make.ADAPTED_METRICS
    if adapted:
        given["kind"] = metric
        windows = ("initial_buffer", "window", "terminal_buffer")
        given.update(zip(windows, (int(v) for v in adapt_windows), strict=True))
        if adapt_metric == "per-chain":
            given["per_chain"] = True
    chosen = list(own)
    seen: set[type] = set()
    for entry in _tuner_entries(recipe, tuners):
        tuner = _one_tuner(recipe, entry, given)
        kind = type(tuner)
        shown = _shown(entry)
        if kind in seen:
            raise ValueError(f"{recipe}: tuners holds two tuners of one class, {kind.__name__}")
        seen.add(kind)
        if isinstance(tuner, DualAveraging) and adapt_step_size is not None:
            if not adapt_step_size:
                raise ValueError(
                    f"{recipe}: tuners={shown} adapts the step size, which "
                    "adapt_step_size=False turns off"
                )
        if isinstance(tuner, WindowedMetric):
            if metric is None:
                raise ValueError(
                    f"{recipe}: tuners={shown} adapts a Hamiltonian's metric, and {recipe} has "
                    "no Hamiltonian"
                )
            if not adapted or tuner.kind != metric:
                raise ValueError(
                    f"{recipe}: tuners={shown} adapts a {tuner.kind!r} metric: give "
                    f"metric={tuner.kind!r} (the recipe then adapts it on its windows), not "
                    f"metric={metric!r:.40}"
                )
        same = next((i for i, t in enumerate(chosen) if type(t) is kind), None)
        if same is None:
            chosen.append(tuner)
        else:
            chosen[same] = tuner
    return chosen


def _dynamics(target, metric, adapt_windows, adapt_metric, mass_volatility, field, g,
              field_seed, shadow, integrator, hamiltonian=None, recipe="hmc",
              **shadow_options):  # fmt: skip
    """What :func:`hmc` and :func:`nuts` build alike: the metric's warm-up tuners (pooled or
    per chain, :func:`~hamiltonia.samplers.composition.metric_tuners`), the Hamiltonian
    (``hamiltonian``'s, or the one of ``metric`` and ``mass_volatility``; shadowed if
    ``shadow`` asks) and the integrator over the field's structure."""
    adapt_metric = make.metric_tuners(metric, adapt_windows, adapt_metric)
    if hamiltonian is None:
        hamiltonian = make.hamiltonian(target, metric=metric, mass_volatility=mass_volatility)
    else:
        hamiltonian = _chosen_hamiltonian(
            recipe, target, hamiltonian, metric, mass_volatility, shadow
        )
    structure = make.structure(target, field, g=g, field_seed=field_seed)
    hamiltonian, integrator = make.with_shadow(
        hamiltonian, shadow, integrator=integrator, structure=structure, **shadow_options
    )
    return adapt_metric, hamiltonian, make.integrator(integrator, structure)


def _trajectory(target, name, n_steps, n_steps_jitter, step_size_jitter):
    """The Metropolis transition over ``n_steps`` (the target's research value for
    ``None``), or the trajectory policy registered as ``name``."""
    length = target.research_n_steps if n_steps is None else n_steps
    if name is None:
        return make.metropolis_trajectory(
            length, n_steps_jitter=n_steps_jitter, step_size_jitter=step_size_jitter
        )
    return make.named_trajectory(
        name, length, n_steps_jitter=n_steps_jitter, step_size_jitter=step_size_jitter
    )


def hmc(
    target,
    *,
    n_steps: int | None = 15,
    step_size: float | None = None,
    target_accept: float = 0.8,
    adapt_step_size: bool | None = None,
    metric="identity",
    step_size_jitter: float = 0.0,
    n_steps_jitter: float = 0.0,
    integrator="leapfrog",
    rho: float = 0.0,
    adapt_windows=(75, 25, 50),
    adapt_metric: str = "pooled",
    field=None,
    g: float | None = None,
    field_seed: int = 0,
    mass_volatility: float | None = 0.0,
    shadow: str | None = None,
    fixed_point_tolerance: float = 1e-6,
    fixed_point_max_iterations: int = 100,
    hessian: str = "finite-difference",
    shadow_sign: str = "corrected",
    antithetic: bool = False,
    control_variates: int | bool = False,
    refresh: str | None = None,
    trajectory: str | None = None,
    hamiltonian=None,
    tuners=None,
) -> HamiltonianSampler:
    """Hamiltonian Monte Carlo with a static number of leapfrog steps.

    Full momentum refreshment :math:`p \\sim \\mathcal N(0, M)`, ``n_steps`` leapfrog steps, a
    Metropolis test on :math:`H` (Mongwe 2022, thesis, §2.4, Algorithm 2), and dual averaging
    of the step size during warm-up (§2.8).

    Parameters
    ----------
    target : Target
    n_steps : int or None
        Leapfrog steps per trajectory :math:`L` (default 15, the thesis's value for banana and
        the Gaussians; ``None``: the target's research value, Table 3.8).
    step_size : float, optional
        Fixed (or initial, see module docs) step size :math:`\\varepsilon`.
    target_accept : float
        Target acceptance rate of dual averaging (default 0.8).
    adapt_step_size : bool, optional
        Adapt the step size during warm-up (default: only when ``step_size`` is not given).
    metric : str, array or Metric
        ``"identity"`` (default, :math:`M = I` as in the thesis); ``"diagonal"`` or
        ``"dense"`` to adapt the inverse mass matrix during warm-up on Stan's windows
        (:class:`~hamiltonia.tuners.adaptation.WindowedMetric`); or a fixed inverse mass matrix (1-D
        diagonal, 2-D dense, or a :class:`~hamiltonia.hamiltonians.Metric`).
    adapt_windows : (int, int, int)
        Stan's warm-up schedule for an adapted metric: the initial buffer (step size only),
        the first metric window (each next one twice as long), and the terminal buffer
        (default ``(75, 25, 50)``, Stan's; scaled down as Stan does when warm-up is short).
    adapt_metric : {"pooled", "per-chain"}
        How an adapted metric reads the chains' warm-up draws: ``"pooled"`` (default), one
        metric from every chain's draws of a window; ``"per-chain"`` (Stan's and NumPyro's
        choice), each chain's (each antithetic pair's) own metric from its own draws and its
        step size searched from its own, so that a chain's draws do not depend on the number
        of chains and an executor's task warms its own chains up (:doc:`/adaptation`). A
        fixed metric is not adapted either way (the step size is adapted per chain always).
    step_size_jitter : float in [0, 1)
        Draw each trajectory's step size uniformly within this relative distance of the
        adapted one (default 0, as in the thesis); breaks resonances of a fixed trajectory
        length.
    n_steps_jitter : float in [0, 1]
        Draw each chain's number of steps per iteration uniformly from
        :math:`\\lceil(1 - j)L\\rceil` (at least 1) to :math:`L` = ``n_steps`` (default 0: always
        :math:`L`; 1: uniform on :math:`1..L`, the random length of
        :class:`~hamiltonia.trajectories.metropolis.RandomLength`).
    integrator : str or Integrator
        ``"leapfrog"`` (default), ``"two-stage"`` or ``"three-stage"`` (the splittings of
        Blanes, Casas and Sanz-Serna; ``n_steps`` counts steps, each costing one gradient per
        stage), any other name registered in ``hamiltonia.integrators``
        (:func:`hamiltonia.integrators.names`, a plugin's included), or an
        :class:`~hamiltonia.integrators.Integrator`.
    rho : float in [0, 1)
        Partial momentum refreshment :math:`p' = \\rho p + \\sqrt{1-\\rho^2}\\, u`, the
        momentum kept between iterations and negated on rejection (default 0: a full
        refresh); see :class:`~hamiltonia.refresh.momentum.PartialRefresh`.
    field : None, "research", "random", str or array
        A magnetic field :math:`G` (magnetic HMC, :mod:`hamiltonia.structures.magnetic`): the
        research's rank-two field, a random antisymmetric one, or a given antisymmetric
        ``(dim, dim)`` matrix (default ``None``: the canonical dynamics); or the name of
        another structure registered in ``hamiltonia.structures``
        (:func:`hamiltonia.structures.names`).
    g : float >= 0, optional
        The research field's strength, or the random field's entry scale (default: the
        target's research value, 0.2 for the logistic regressions and 0.1 otherwise).
    field_seed : int
        Seed of the random field (default 0).
    mass_volatility : float >= 0 or None
        The vol-of-vol :math:`\\beta` of a random diagonal mass redrawn every iteration,
        :math:`\\log m_i \\sim \\mathcal N(0, \\beta^2)` (quantum-inspired HMC,
        :class:`~hamiltonia.hamiltonians.RandomMassHamiltonian`; default 0: a fixed mass;
        ``None``: the target's research value, 0.1 for banana and Australian credit, 0.3
        otherwise).
    shadow : None, "separable" or "leapfrog"
        Sample a shadow Hamiltonian and reweigh the draws (default ``None``: :math:`H`
        itself). ``"separable"``: S2HMC's separable shadow
        (:class:`~hamiltonia.hamiltonians.SeparableShadowHamiltonian`) integrated by the
        processed leapfrog (:class:`~hamiltonia.integrators.ProcessedLeapfrog`).
        ``"leapfrog"``: the leapfrog's non-separable shadow, with the magnetic term when a
        ``field`` is given (:class:`~hamiltonia.hamiltonians.LeapfrogShadowHamiltonian`),
        the refresh then tested
        (:class:`~hamiltonia.refresh.momentum.MetropolisPartialRefresh`). Both with importance
        weights (:class:`~hamiltonia.reducers.base.ImportanceWeights`).
    fixed_point_tolerance : float > 0
        Of the processed leapfrog's fixed points (default 1e-6, the thesis's).
    fixed_point_max_iterations : int >= 1
        Of the processed leapfrog's fixed points (default 100, the thesis's).
    hessian : {"finite-difference", "target"}
        The curvature of ``shadow="leapfrog"``: central differences of the gradient (two
        gradients an energy, compiled) or the target's ``hvp`` (NumPy path).
    shadow_sign : {"corrected", "printed"}
        The sign of the magnetic term of ``shadow="leapfrog"`` with a field: the one that
        conserves to fourth order (default) or the SMHMC paper's printed one.
    antithetic : bool
        Run the chains in antithetic pairs
        (:class:`~hamiltonia.reducers.antithetic.AntitheticPairs`:
        shared random numbers, the secondary's momentum normals negated; an even number of
        chains); default ``False``.
    control_variates : {False, 1, 2}
        Keep the gradient of the log density at each draw for zero-variance control
        variates of this polynomial order
        (:class:`~hamiltonia.reducers.control_variates.ControlVariates`;
        :meth:`hamiltonia.Result.control_variate_summary`); default ``False``.
    refresh : str, optional
        A registered momentum refresh by name (:func:`hamiltonia.refresh.names`, a plugin's
        among them), given ``rho`` where it takes it; default: full, or partial with ``rho``.
    trajectory : str, optional
        A registered trajectory policy by name (:func:`hamiltonia.trajectories.names`, a
        plugin's length policy among them), given ``n_steps`` and the jitters where it
        takes them; default: the Metropolis transition over ``n_steps``.
    hamiltonian : str, Hamiltonian class or Hamiltonian, optional
        The Hamiltonian to sample, in place of the one ``metric`` and ``mass_volatility``
        build: a name registered in ``hamiltonia.hamiltonians`` (``"euclidean"``,
        ``"random-mass"``, a plugin's: :func:`hamiltonia.hamiltonians.names`) or a
        :class:`~hamiltonia.hamiltonians.Hamiltonian` class, built for the target with
        ``metric`` (as a :class:`~hamiltonia.hamiltonians.Metric`; ``"diagonal"`` and
        ``"dense"`` as the identity of that kind, adapted in warm-up) and with
        ``mass_volatility`` when it asks for a random mass (``None`` or above 0), where its
        factory takes them (an option it does not take must stay at its default); or a
        Hamiltonian built for the target, whose metric an adapted ``metric`` must match.
        Refused with a ``shadow``, which is built over the recipe's own Hamiltonian (default
        ``None``: ``"euclidean"``, or ``"random-mass"`` when ``mass_volatility`` asks).
    tuners : str, list, Tuner class or Tuner, optional
        Warm-up tuners added to the recipe's own (the dual averaging of the step size, the
        windowed metric): names registered in ``hamiltonia.tuners``
        (:func:`hamiltonia.tuners.names`, a plugin's among them; one name, a list, or
        comma-separated on the command line) or Tuner classes, built with those of
        ``target_accept``, ``initial_step_size`` (``step_size``) and, for an adapted
        ``metric``, ``kind``, the windows and ``per_chain`` that the factory takes; or Tuner
        instances. A tuner of a class the recipe already has replaces the recipe's:
        ``tuners="dual-averaging"`` with a fixed ``step_size`` adapts it (as
        ``adapt_step_size=True``), a :class:`~hamiltonia.tuners.DualAveraging` instance
        replaces the recipe's with its own settings. Refused where another option turns the
        tuner off: a dual averaging with ``adapt_step_size=False``, a windowed metric of
        another kind than an adapted ``metric``. Default ``None``: the recipe's own.
    """
    recipe = _recipe("hmc")
    metric_tuners, hamiltonian, integrator = _dynamics(
        target, metric, adapt_windows, adapt_metric, mass_volatility, field, g, field_seed,
        shadow, integrator, hamiltonian, recipe, fixed_point_tolerance=fixed_point_tolerance,
        fixed_point_max_iterations=fixed_point_max_iterations,
        hessian=hessian, shadow_sign=shadow_sign,
    )  # fmt: skip
    return make.compose(
        hamiltonian,
        integrator=integrator,
        trajectory=_trajectory(target, trajectory, n_steps, n_steps_jitter, step_size_jitter),
        refresh=make.momentum_refresh(rho, hamiltonian)
        if refresh is None
        else make.named_refresh(refresh, rho),
        tuners=_tuner_list(
            recipe,
            tuners,
            metric_tuners,
            step_size,
            adapt_step_size,
            target_accept,
            metric,
            adapt_windows,
            adapt_metric,
        ),
        reducer=make.reducer(hamiltonian, antithetic=antithetic, control_variates=control_variates),
        step_size=step_size,
        name="hmc",
    )


def nuts(
    target,
    *,
    max_tree_depth: int = DEFAULT_MAX_TREE_DEPTH,
    criterion: str = "stan",
    step_size: float | None = None,
    target_accept: float = 0.8,
    adapt_step_size: bool | None = None,
    metric="diagonal",
    integrator="leapfrog",
    adapt_windows=(75, 25, 50),
    adapt_metric: str = "pooled",
    field=None,
    g: float | None = None,
    field_seed: int = 0,
    mass_volatility: float | None = 0.0,
    shadow: str | None = None,
    fixed_point_tolerance: float = 1e-6,
    fixed_point_max_iterations: int = 100,
    antithetic: bool = False,
    control_variates: int | bool = False,
    hamiltonian=None,
    tuners=None,
) -> HamiltonianSampler:
    """The no-U-turn sampler (multinomial NUTS, generalised criterion), as in Stan and NumPyro.

    The trajectory policy is :class:`~hamiltonia.trajectories.no_u_turn.NoUTurn`.

    Defaults as Stan's: a diagonal metric adapted on Stan's warm-up windows, dual averaging of
    the step size towards an acceptance statistic of 0.8, trees of depth at most 10.

    Parameters
    ----------
    target : Target
    max_tree_depth : int in [1, 20]
        Most doublings of a trajectory (default 10: at most 1023 steps).
    criterion : {"stan", "numpyro"}
        The no-U-turn criterion: Stan's (default) or NumPyro's and BlackJAX's
        (:class:`~hamiltonia.trajectories.no_u_turn.NoUTurn`).
    step_size, target_accept, adapt_step_size, integrator
        As in :func:`hmc`.
    metric : str, array or Metric
        ``"diagonal"`` (default) or ``"dense"``, adapted during warm-up; ``"identity"``; or a
        fixed inverse mass matrix, as in :func:`hmc`.
    adapt_windows : (int, int, int)
        Stan's warm-up windows, as in :func:`hmc`.
    adapt_metric : {"pooled", "per-chain"}
        One metric from every chain's warm-up draws (default), or each chain's own from its
        own draws (Stan's and NumPyro's choice), as in :func:`hmc`.
    field, g, field_seed, mass_volatility
        A magnetic field and a random mass, as in :func:`hmc`: the tree then follows the
        magnetic flow of a fixed :math:`G` (valid: see
        :class:`~hamiltonia.trajectories.no_u_turn.NoUTurn`),
        or a mass drawn for each tree.
    shadow, fixed_point_tolerance, fixed_point_max_iterations
        ``shadow="separable"`` builds the tree from processed-leapfrog steps and weighs
        its states by the separable shadow :math:`\\tilde H`, with importance weights: the
        research's adaptive S2HMC (Mongwe 2022, thesis, §7.2, Algorithm 13; valid because
        the processed step is symplectic and reversible, and :math:`\\tilde H` is separable
        with the Gaussian momentum the tree is weighed against), as in :func:`hmc`.
    antithetic : bool
        Antithetic pairs of chains, as in :func:`hmc`: the pair shares the tree's random
        numbers too, so on a symmetric target the secondary's tree mirrors the primary's.
    control_variates : {False, 1, 2}
        Keep the draws' gradients for zero-variance control variates, as in :func:`hmc`.
    hamiltonian, tuners
        A registered Hamiltonian in place of the one ``metric`` and ``mass_volatility``
        build, and warm-up tuners added to (or replacing those of their class among) the
        recipe's own, as in :func:`hmc` (the default ``metric="diagonal"`` is adapted: give
        ``metric="identity"`` with a Hamiltonian that takes no metric).

    References
    ----------
    Hoffman and Gelman (2014), *The No-U-Turn Sampler*, JMLR 15; Betancourt (2017), *A
    Conceptual Introduction to Hamiltonian Monte Carlo*, arXiv:1701.02434;
    Mongwe (2022), thesis, §2.8.
    """
    recipe = _recipe("nuts")
    metric_tuners, hamiltonian, integrator = _dynamics(
        target, metric, adapt_windows, adapt_metric, mass_volatility, field, g, field_seed,
        shadow, integrator, hamiltonian, recipe, fixed_point_tolerance=fixed_point_tolerance,
        fixed_point_max_iterations=fixed_point_max_iterations,
    )  # fmt: skip
    return make.compose(
        hamiltonian,
        integrator=integrator,
        trajectory=make.no_u_turn(max_tree_depth, criterion),
        tuners=_tuner_list(
            recipe,
            tuners,
            metric_tuners,
            step_size,
            adapt_step_size,
            target_accept,
            metric,
            adapt_windows,
            adapt_metric,
        ),
        reducer=make.reducer(hamiltonian, antithetic=antithetic, control_variates=control_variates),
        step_size=step_size,
        name="nuts",
    )


def mala(
    target,
    *,
    step_size: float | None = None,
    target_accept: float = 0.6,
    adapt_step_size: bool | None = None,
    metric="identity",
    integrator="leapfrog",
    rho: float = 0.0,
    control_variates: int | bool = False,
    adapt_windows=(75, 25, 50),
    adapt_metric: str = "pooled",
    hamiltonian=None,
    tuners=None,
) -> HamiltonianSampler:
    """Metropolis-adjusted Langevin algorithm: HMC with one leapfrog step.

    With :math:`M = I`, one leapfrog step of size :math:`\\varepsilon` from a fresh momentum is
    the Langevin proposal
    :math:`x' = x + \\tfrac{\\varepsilon^2}{2}\\nabla\\log\\pi(x) + \\varepsilon z`, and the
    Metropolis test on :math:`H` equals the MALA ratio
    :math:`\\pi(x')q(x|x')/(\\pi(x)q(x'|x))` (Mongwe 2022, thesis, §2.3). Default target
    acceptance 0.6, the thesis's value for MALA (ch. 9). ``integrator``, ``rho``,
    ``control_variates``, ``hamiltonian``, ``tuners`` and, for an adapted ``metric``,
    ``adapt_windows`` and ``adapt_metric`` are those of :func:`hmc` (with ``rho > 0`` it is
    Horowitz's generalised HMC with one step, a discretised underdamped Langevin diffusion).

    References
    ----------
    Roberts and Tweedie (1996), *Exponential convergence of Langevin distributions and their
    discrete approximations*.
    """
    sampler = _as_recipe(
        "mala",
        hmc,
        target,
        n_steps=1,
        step_size=step_size,
        target_accept=target_accept,
        adapt_step_size=adapt_step_size,
        metric=metric,
        integrator=integrator,
        rho=rho,
        control_variates=control_variates,
        adapt_windows=adapt_windows,
        adapt_metric=adapt_metric,
        hamiltonian=hamiltonian,
        tuners=tuners,
    )
    sampler.name = "mala"
    return sampler


def rwmh(
    target,
    *,
    step_size: float | None = None,
    target_accept: float = 0.25,
    adapt_step_size: bool | None = None,
    tuners=None,
) -> RandomWalkMetropolis:
    """Random-walk Metropolis with Gaussian proposals of standard deviation step_size.

    The proposal is :math:`x^* \\sim \\mathcal N(x, \\varepsilon^2 I)`: ``step_size`` is the
    proposal **standard deviation**. Dual averaging targets acceptance 0.25 by default
    (Roberts and Rosenthal's optimal scaling; the thesis's value, ch. 9). ``tuners`` adds
    warm-up tuners as in :func:`hmc` (none that adapts a metric: the random walk has no
    Hamiltonian, and so no ``hamiltonian`` option either).
    """
    sampler = RandomWalkMetropolis(
        target,
        step_size=step_size,
        tuners=_tuner_list(
            _recipe("rwmh"), tuners, [], step_size, adapt_step_size, target_accept, metric=None
        ),
    )
    return sampler


def split_hmc(target, *, scheme: str = "symmetric", n_splits: int = 2, n_steps: int | None = None,
              **options) -> HamiltonianSampler:  # fmt: skip
    """Split HMC over data subsets (Cobb and Jalaian 2021): the target's rows split into
    ``n_splits`` consecutive subsets, each a component
    :math:`U_m = -\\log p(\\omega)/M - \\ell_m(\\omega)` of the potential, integrated one
    subset's gradient at a time; the Metropolis test (or the no-U-turn tree) keeps the whole
    Hamiltonian, so the chain samples the exact posterior with no stochastic gradient.

    Parameters
    ----------
    target : Target
        A data target with rows (:class:`~hamiltonia.targets.split.RowTarget`: the logistic
        regressions, the Bayesian neural networks, the linear regression...), or one already
        split (:func:`~hamiltonia.targets.split.split_target`).
    scheme : {"symmetric", "randomised", "naive"}
        The split integrator (:mod:`hamiltonia.integrators.data_split`): the symmetric split of
        Cobb and Jalaian's Algorithm 1 (default), Neal's randomised split, or the naive
        nested leapfrog.
    n_splits : int
        :math:`M`, from 1 (the leapfrog) to the number of rows (default 2).
    n_steps : int, optional
        Steps per trajectory (default: the target's research value).
    **options
        Every option of :func:`hmc`: the step size and its adaptation, ``metric``, ``rho``
        and ``refresh``, ``trajectory`` (``"no-u-turn"`` for NUTS over the split), the
        jitters, ``antithetic``, ``control_variates``, ``hamiltonian`` (by name or class: it
        is built for the split target) and ``tuners``. A ``field`` or a ``shadow`` is
        refused: the split integrators integrate the canonical flow of :math:`H`.

    References
    ----------
    Cobb, A. D. and Jalaian, B. (2021), *Scaling Hamiltonian Monte Carlo inference for Bayesian
    neural networks with symmetric splitting*, UAI; Neal (2011), §5.1.
    """
    from hamiltonia.integrators.data_split import make_split_integrator
    from hamiltonia.targets.split import split_target

    if "integrator" in options:
        raise ValueError("split-hmc chooses its integrator by scheme=, not integrator=")
    for name in ("field", "shadow"):
        if options.get(name) is not None:
            raise ValueError(
                f"split-hmc integrates the canonical flow of H with a split integrator; "
                f"{name}={options[name]!r} is not available with it"
            )
    split = split_target(target, n_splits)
    sampler = _as_recipe(
        "split-hmc",
        hmc,
        split,
        integrator=make_split_integrator(scheme, split.n_splits),
        n_steps=n_steps,
        **options,
    )
    sampler.name = "split-hmc"
    return sampler


#: Options of :func:`hmc` that choose the dynamics a split integrator replaces.
_NOT_SPLIT = ("integrator", "field", "g", "field_seed", "shadow", "fixed_point_tolerance",
              "fixed_point_max_iterations", "hessian", "shadow_sign")  # fmt: skip
_split_signature = inspect.signature(split_hmc)
split_hmc.__signature__ = _split_signature.replace(
    parameters=[
        *(p for p in _split_signature.parameters.values() if p.kind != p.VAR_KEYWORD),
        *(
            p
            for name, p in inspect.signature(hmc).parameters.items()
            if name not in _split_signature.parameters and name not in _NOT_SPLIT
        ),
    ]
)


def _preset(name: str, doc: str, base=None, **defaults):
    """A recipe: ``base`` (:func:`hmc` by default) with other defaults, and the same options
    (its signature shows the defaults, so ``hamiltonia.samplers.options`` and the docs list
    them)."""
    base = hmc if base is None else base

    def recipe(target, **options):
        sampler = _as_recipe(name, base, target, **{**defaults, **options})
        sampler.name = name
        return sampler

    signature = inspect.signature(base)
    recipe.__signature__ = signature.replace(
        parameters=[
            p.replace(default=defaults[p.name]) if p.name in defaults else p
            for p in signature.parameters.values()
        ]
    )
    recipe.__name__ = recipe.__qualname__ = name
    recipe.__doc__ = doc + (_PRESET_FOOTER if base is hmc else _NUTS_FOOTER)
    return recipe


_NUTS_FOOTER = """

    Every option of :func:`nuts` is accepted, with the defaults in the signature.
"""

_PRESET_FOOTER = """

    Every option of :func:`hmc` is accepted, with the defaults in the signature: ``None``
    for ``n_steps``, ``g`` and ``mass_volatility`` takes the target's research value
    (:attr:`~hamiltonia.targets.Target.research_n_steps` and the like; Table 3.8 and the
    chapters' settings). The step size is adapted by dual averaging towards acceptance 0.8
    during warm-up, as the research tuned its step sizes, unless ``step_size`` fixes it.
"""

mhmc = _preset(
    "mhmc",
    """Magnetic HMC (Tripuraneni et al. 2017; Mongwe 2022, thesis, §2.5, Algorithm 3).

    The leapfrog over the magnetic structure with the research's field :math:`G_{1i} = g`,
    :math:`G_{i1} = -g`; the field's sign is negated with the momentum on rejection
    (:mod:`hamiltonia.structures.magnetic`).""",
    n_steps=None,
    field="research",
)

phmc = _preset(
    "phmc",
    """HMC with partial momentum refreshment (Horowitz 1991; Mongwe 2022, thesis, §5.2):
    :math:`p' = \\rho p + \\sqrt{1 - \\rho^2}\\, u` with :math:`\\rho = 0.7`, the momentum
    negated on rejection.""",
    n_steps=None,
    rho=0.7,
)

pmhmc = _preset(
    "pmhmc",
    """Magnetic HMC with partial momentum refreshment (Mongwe et al. 2021; Mongwe 2022, thesis,
    §5.2, Algorithm 10): :math:`\\rho = 0.7`; a rejection negates the momentum and the
    field's sign together.""",
    n_steps=None,
    field="research",
    rho=0.7,
)

qihmc = _preset(
    "qihmc",
    """Quantum-inspired HMC (Liu and Zhang 2019; Mongwe 2022, thesis, §2.6, Algorithm 4): a
    diagonal mass redrawn every iteration, :math:`\\log m_i \\sim \\mathcal N(0, \\beta^2)`
    (:class:`~hamiltonia.hamiltonians.RandomMassHamiltonian`).""",
    n_steps=None,
    mass_volatility=None,
)

qimhmc = _preset(
    "qimhmc",
    """Quantum-inspired magnetic HMC (Mongwe, Mbuvha and Marwala 2021; Mongwe 2022,
    thesis, §4.2, Algorithm 9): magnetic HMC with a random diagonal mass; the magnetic flow is
    that of the drawn mass (thesis eq. 4.1).""",
    n_steps=None,
    field="research",
    mass_volatility=None,
)

s2hmc = _preset(
    "s2hmc",
    """Separable shadow HMC (Sweet et al. 2009; Mongwe 2022, thesis, §2.7, Algorithm 5;
    Mongwe, Mbuvha and Marwala 2021, PS2HMC, eqs. 14-17): the processed leapfrog samples the
    separable shadow
    :math:`\\tilde H = H + \\tfrac{\\varepsilon^2}{24}\\nabla U^\\top M^{-1}\\nabla U`, and the
    draws carry the importance weights :math:`\\log w = \\tilde H - H`. The step size is
    adapted towards an acceptance of 0.95 on :math:`\\tilde H`: the research ran S2HMC with
    HMC's step size (tuned to 0.8 on :math:`H`), where it accepts nearly every proposal, and
    reports that a step size tuned to a lower acceptance makes the weights less even
    (Mongwe 2022, thesis, §7.4).""",
    n_steps=None,
    shadow="separable",
    target_accept=0.95,
)

ps2hmc = _preset(
    "ps2hmc",
    """S2HMC with partial momentum refreshment (Mongwe, Mbuvha and Marwala 2021,
    Algorithm 1; Mongwe 2022, thesis, §5.2, Algorithm 11):
    :math:`\\rho = 0.7` (the thesis's; the PS2HMC paper uses 0.9, ``rho=0.9``). The shadow is
    separable with the Gaussian momentum, so the refresh needs no momentum test; a rejection
    negates the refreshed momentum.""",
    n_steps=None,
    shadow="separable",
    rho=0.7,
    target_accept=0.95,
)

js2hmc = _preset(
    "js2hmc",
    """Jittered S2HMC (Mongwe 2022, thesis, §7.2): S2HMC whose number of steps is drawn
    uniformly on :math:`1..L_{max}` per chain and iteration, a mixture of reversible kernels
    (``n_steps_jitter=1``; :math:`L_{max}` the target's research length).""",
    n_steps=None,
    shadow="separable",
    n_steps_jitter=1.0,
    target_accept=0.95,
)

as2hmc = _preset(
    "as2hmc",
    """Adaptive S2HMC (Mongwe, Mbuvha and Marwala 2021; Mongwe 2022, thesis, §7.2, Algorithm
    13): the no-U-turn tree over processed-leapfrog steps, weighed by the separable shadow
    :math:`\\tilde H`, the U-turn checked on the post-processed states, importance weights
    :math:`\\log w = \\tilde H - H` on the draws. The step size is adapted on the shadow's
    acceptance statistic towards 0.9, not the research's 0.8: on banana the larger step
    size of 0.8 left the fixed points unconverged in the curved tail 188 times in 4000
    draws (37 at 0.9), each a divergence. Each step pre- and post-processes (two fixed
    points), so a step costs several times NUTS's gradients. The identity metric, as in the
    research.""",
    base=nuts,
    shadow="separable",
    metric="identity",
    target_accept=0.9,
)

shmc = _preset(
    "shmc",
    """Shadow HMC on the leapfrog's non-separable fourth-order shadow :math:`\\hat H`
    (Izaguirre and Hampton 2004; Mongwe et al. 2021, PS2HMC, Theorem 1 and §III): a fresh
    momentum is proposed and tested against :math:`\\hat H` (``rho=0`` of
    :class:`~hamiltonia.refresh.momentum.MetropolisPartialRefresh`; the original's momentum
    generation bounded by a constant ``c`` is not used), the leapfrog's proposal accepted on
    :math:`\\hat H`, the draws weighted by :math:`\\hat H - H`.""",
    n_steps=None,
    shadow="leapfrog",
)

pshmc = _preset(
    "pshmc",
    """SHMC with partial momentum refreshment, the "SHMC" baseline of the PS2HMC paper
    (Mongwe, Mbuvha and Marwala 2021, §III): the refresh :math:`\\rho = 0.9` (the paper's) tested
    against :math:`\\hat H`, the momentum negated on rejection.""",
    n_steps=None,
    shadow="leapfrog",
    rho=0.9,
)

smhmc = _preset(
    "smhmc",
    """Shadow magnetic HMC (Mongwe, Mbuvha and Marwala 2022, SMHMC,
    Algorithm 3): the magnetic leapfrog with the research's field, its shadow with the
    magnetic term of the corrected sign (``shadow_sign="printed"`` for the paper's), a
    partial refresh :math:`\\rho = 0.7` tested against the shadow, the momentum and the
    field's sign negated on rejection.""",
    n_steps=None,
    shadow="leapfrog",
    field="research",
    rho=0.7,
)

_ANTITHETIC = """

    The chains run in antithetic pairs (:mod:`hamiltonia.reducers.antithetic`; an even number of
    chains): the pair shares its random numbers and the secondary negates its momentum
    normals; the estimate is the pair mean, which :meth:`hamiltonia.Result.pair_summary`
    reports with its standard error and the reduction factor. The step size is adapted
    towards an acceptance of 0.95, as the research (after Piponi et al.) ran its antithetic
    samplers (Mongwe 2022, thesis, §8.3)."""

a_hmc = _preset(
    "a-hmc",
    """Antithetic HMC (Piponi, Hoffman and Sountsov 2020; Mongwe 2022, thesis, §2.9,
    Algorithm 8)."""
    + _ANTITHETIC,
    n_steps=None,
    antithetic=True,
    target_accept=0.95,
)

a_mhmc = _preset(
    "a-mhmc",
    """Antithetic magnetic HMC (Mongwe, Mbuvha and Marwala 2021; Mongwe 2022, thesis, §8.2,
    Algorithm 14): both chains start with the same field sign, which the reflection about a
    centre of symmetry preserves."""
    + _ANTITHETIC,
    n_steps=None,
    field="research",
    antithetic=True,
    target_accept=0.95,
)

a_s2hmc = _preset(
    "a-s2hmc",
    """Antithetic S2HMC (Mongwe, Mbuvha and Marwala 2021; Mongwe 2022, thesis, §8.2,
    Algorithm 15): each chain pre- and post-processes and carries its own importance
    weights; the pair estimate averages the chains' self-normalised means."""
    + _ANTITHETIC,
    n_steps=None,
    shadow="separable",
    antithetic=True,
    target_accept=0.95,
)
