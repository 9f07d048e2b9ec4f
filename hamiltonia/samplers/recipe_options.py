"""How the recipes read their options (:mod:`hamiltonia.samplers.recipes`): the recipe named
in the messages, the ``hamiltonian=`` option (a registered name, a Hamiltonian class or a
Hamiltonian) checked against ``metric`` and ``mass_volatility``, the ``tuners=`` option merged
with the recipe's own warm-up tuners, and the dynamics and trajectory that
:func:`~hamiltonia.samplers.recipes.hmc` and :func:`~hamiltonia.samplers.recipes.nuts` build
alike from their options.
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
from hamiltonia.tuners import Tuner, WindowedMetric

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
                own = getattr(hamiltonian, "metric", None)
                has = "no metric" if own is None else type(own).__name__
                raise ValueError(
                    f"{recipe}: metric={metric!r} adapts the Hamiltonian's {kind.__name__} in "
                    f"warm-up, and the given hamiltonian={shown} has {has}: build it with a "
                    f"{kind.__name__}, or give metric='identity' to keep its own"
                )
        elif not _is_identity(metric):
            raise ValueError(
                f"{recipe}: give the metric inside the Hamiltonian or as metric=, not both "
                f"(hamiltonian={shown})"
            )
        return _built_hamiltonian(recipe, hamiltonian, target)
    factory = _hamiltonian_factory(hamiltonian)
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
        if getattr(tuner, "sets_step_size", False) and adapt_step_size is not None:
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
        if same is None and getattr(tuner, "sets_step_size", False):
            # One tuner sets the step sizes: this one, in the place of the recipe's own.
            same = next((i for i, t in enumerate(chosen) if t.sets_step_size), None)
        if same is None:
            chosen.append(tuner)
        else:
            chosen[same] = tuner
    return chosen


def _hamiltonian_factory(hamiltonian):
    """The factory of the ``hamiltonian=`` option: a registered name's or a Hamiltonian
    class; ``None`` for anything else (an unknown name, which make_hamiltonian refuses
    naming the registered ones)."""
    if isinstance(hamiltonian, str):
        try:
            return _hamiltonians.registry.factory(hamiltonian)
        except UnknownNameError:
            return None
    if isinstance(hamiltonian, type) and issubclass(hamiltonian, Hamiltonian):
        return hamiltonian
    return None


def _has_no_metric(hamiltonian) -> bool:
    """Whether the ``hamiltonian=`` option (a name, a class or a Hamiltonian) has no metric:
    its factory takes none, or the Hamiltonian given holds none."""
    if isinstance(hamiltonian, Hamiltonian):
        return getattr(hamiltonian, "metric", None) is None
    factory = _hamiltonian_factory(hamiltonian)
    return factory is not None and not _factory_takes(factory, "metric")


def _dynamics(target, metric, adapt_windows, adapt_metric, mass_volatility, field, g,
              field_seed, shadow, integrator, hamiltonian=None, recipe="hmc",
              recipe_metric="identity", **shadow_options):  # fmt: skip
    """What :func:`hmc` and :func:`nuts` build alike: the metric's warm-up tuners (pooled or
    per chain, :func:`~hamiltonia.samplers.composition.metric_tuners`), the Hamiltonian
    (``hamiltonian``'s, or the one of ``metric`` and ``mass_volatility``; shadowed if
    ``shadow`` asks) and the integrator over the field's structure. ``recipe_metric`` is the
    recipe's default ``metric``, which a ``hamiltonian`` without a metric ignores (any other
    ``metric`` is refused with it)."""
    if hamiltonian is not None and metric == recipe_metric and _has_no_metric(hamiltonian):
        # The recipe's own default (nuts adapts a diagonal one) is not the user's choice: a
        # Hamiltonian without a metric (the relativistic one) simply has none to adapt.
        metric = "identity"
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
