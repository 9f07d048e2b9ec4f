"""Plugin registry through entry points.

Everything that can be chosen by name is found under an entry-point group with
:mod:`importlib.metadata`: whole targets and samplers, and the parts a sampler is composed of.
hamiltonia registers its own built-ins there too, so every lookup takes the path a
third-party plugin takes.

- ``hamiltonia.targets``: ``factory(**params) -> Target`` (:func:`hamiltonia.targets.get`);
- ``hamiltonia.samplers``: ``recipe(target, **options) -> Sampler``
  (:func:`hamiltonia.samplers.get`);
- ``hamiltonia.hamiltonians``: ``factory(target, **options) -> Hamiltonian``
  (:func:`hamiltonia.hamiltonians.get`);
- ``hamiltonia.integrators``: ``factory(structure=None, **options) -> Integrator``
  (:func:`hamiltonia.integrators.get`);
- ``hamiltonia.refreshes``: ``factory(**options) -> MomentumRefresh``
  (:func:`hamiltonia.refresh.get`);
- ``hamiltonia.trajectories``: ``factory(**options) -> TrajectoryPolicy``
  (:func:`hamiltonia.trajectories.get`);
- ``hamiltonia.structures``: ``factory(**options) -> PoissonStructure``
  (:func:`hamiltonia.structures.get`);
- ``hamiltonia.tuners``: ``factory(**options) -> Tuner`` (:func:`hamiltonia.tuners.get`);
- ``hamiltonia.reducers``: ``factory(**options) -> VarianceReducer``
  (:func:`hamiltonia.reducers.get`);
- ``hamiltonia.studies``: a :class:`~hamiltonia.reproduce.study.Study` subclass, a plugin's
  published study that ``hamiltonia reproduce NAME`` runs (:mod:`hamiltonia.reproduce.study`).

A factory is a class or any callable; its keyword arguments are the part's options. A
plugin package adds, in its ``setup.cfg``::

    [options.entry_points]
    hamiltonia.targets =
        my-target = my_package.targets:my_target
    hamiltonia.samplers =
        my-sampler = my_package.samplers:my_sampler
    hamiltonia.integrators =
        my-integrator = my_package.integrators:MyIntegrator

The sampler recipes take their string options from these registries: ``integrator=NAME``
builds the integrator registered as ``NAME`` (with the magnetic structure, when there is
one, as ``structure=``), and ``field=NAME`` the Poisson structure registered as ``NAME``
(with those of ``dim``, ``g`` and ``seed`` its factory accepts). So once ``my-integrator`` is
installed, ``hamiltonia sample banana --sampler hmc -O integrator=my-integrator`` uses it.
``hamiltonian=NAME`` builds the Hamiltonian registered as ``NAME`` for the target (given the
recipe's ``metric`` and ``mass_volatility`` where its factory takes them), and
``tuners=NAME`` (or a list of names) adds the tuners registered under those names to the
recipe's own. The refresh, trajectory policy, tuners and reducers that the other options
select are built through the registries of their kinds too, by the built-in names.

A lookup of a name no package registers raises :class:`UnknownNameError` (a ``KeyError``)
with the closest registered names and the list of all; a recipe's ``integrator``,
``field``, ``hamiltonian`` or ``tuners`` option names the same in a ``ValueError``.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["PluginWarning", "Registry", "UnknownNameError", "lookups"]

_OWN_DISTRIBUTION = "hamiltonia"


class PluginWarning(UserWarning):
    """A plugin failed to load, or two plugins registered the same name."""


class UnknownNameError(KeyError):
    """A name that no installed package registers."""

    def __str__(self):
        return str(self.args[0])


@dataclass
class _Entry:
    name: str
    obj: Callable
    source: str  # distribution name

    @property
    def description(self) -> str:
        """The factory docstring's first sentence, as plain text."""
        from hamiltonia._text import first_sentence

        return first_sentence(inspect.getdoc(self.obj) or "")


def _antithetic_entry(name: str, entries: dict) -> _Entry | None:
    """``a-NAME``: the registered sampler ``NAME`` run in antithetic pairs, for any recipe
    with an ``antithetic`` option (so ``a-ps2hmc`` or ``a-nuts`` needs no registration)."""
    if not name.startswith("a-") or name[2:] not in entries:
        return None
    base = entries[name[2:]]
    if name[2:].startswith("a-"):
        raise UnknownNameError(f"unknown sampler {name!r}: {name[2:]!r} already runs in pairs")
    signature = inspect.signature(base.obj)
    if "antithetic" not in signature.parameters:
        raise UnknownNameError(
            f"unknown sampler {name!r}: {name[2:]!r} has no 'antithetic' option, so it cannot "
            "run in antithetic pairs"
        )

    def recipe(target, **options):
        sampler = base.obj(target, **{"antithetic": True, **options})
        sampler.name = name
        return sampler

    recipe.__signature__ = signature.replace(
        parameters=[
            p.replace(default=True) if p.name == "antithetic" else p
            for p in signature.parameters.values()
        ]
    )
    recipe.__name__ = recipe.__qualname__ = name
    recipe.__doc__ = f"{name[2:]} in antithetic pairs (hamiltonia.reducers.antithetic).\n\n" + (
        inspect.getdoc(base.obj) or ""
    )
    return _Entry(name, recipe, base.source)


class Registry:
    """Named factories discovered from one entry-point group.

    Entry points are loaded on first use. A plugin that fails to import is reported with a
    :class:`PluginWarning` naming it and its error, and everything else still loads. When two
    distributions register one name, a warning names both; hamiltonia's own entry wins over
    plugins, and otherwise the first distribution in alphabetical order wins.

    ``returns``, when given, is the class :meth:`build` checks the factory's product against
    (the part registries give the part's abstract class).
    """

    def __init__(self, group: str, kind: str, returns: type | None = None):
        self.group = group
        self.kind = kind
        #: The class every factory's product must be an instance of (checked by :meth:`build`).
        self.returns = returns
        self._entries: dict[str, _Entry] | None = None
        self._extra: dict[str, _Entry] = {}

    def refresh(self) -> None:
        """Forget what was discovered (call after installing a plugin in a running process)."""
        self._entries = None

    def _discover(self) -> dict[str, _Entry]:
        if self._entries is not None:
            return self._entries
        found: dict[str, list] = {}
        for ep in importlib.metadata.entry_points(group=self.group):
            dist = ep.dist.name if ep.dist is not None else "<unknown>"
            candidates = found.setdefault(ep.name, [])
            if any(c.value == ep.value and d == dist for d, c in candidates):
                continue  # the same distribution seen twice on sys.path
            candidates.append((dist, ep))
        entries: dict[str, _Entry] = {}
        for name, candidates in sorted(found.items()):
            candidates.sort(key=lambda c: (c[0] != _OWN_DISTRIBUTION, c[0]))
            for dist, ep in candidates:
                try:
                    obj = ep.load()
                except Exception as err:  # a broken plugin must not break the rest
                    self._warn(
                        f"could not load {self.kind} {name!r} from plugin {dist} "
                        f"({ep.value}): {type(err).__name__}: {err}"
                    )
                    continue
                if not callable(obj):
                    self._warn(
                        f"{self.kind} {name!r} from plugin {dist} ({ep.value}) is not callable; "
                        "an entry point must name a factory function or class"
                    )
                    continue
                entries[name] = _Entry(name, obj, dist)
                break
            if len(candidates) > 1:
                who = ", ".join(f"{d} ({ep.value})" for d, ep in candidates)
                used = (
                    f"using the one from {entries[name].source}"
                    if name in entries
                    else "none loaded"
                )
                self._warn(f"{self.kind} {name!r} is registered more than once: {who}; {used}")
        self._entries = entries
        return entries

    @staticmethod
    def _warn(message: str) -> None:
        # Attribute the warning to the first frame outside hamiltonia: the user's call.
        import sys

        level, frame = 1, sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__", "").startswith("hamiltonia."):
            level, frame = level + 1, frame.f_back
        warnings.warn(message, PluginWarning, stacklevel=level)

    def _all(self) -> dict[str, _Entry]:
        return {**self._discover(), **self._extra}

    def register(self, name: str, factory: Callable, *, overwrite: bool = False) -> None:
        """Register ``factory`` under ``name`` in this process (no packaging needed)."""
        if not callable(factory):
            raise TypeError(f"factory must be callable, got {type(factory).__name__}")
        if name in self._all() and not overwrite:
            raise ValueError(f"{self.kind} {name!r} is already registered; pass overwrite=True")
        self._extra[name] = _Entry(name, factory, "<runtime>")

    def names(self) -> list[str]:
        """Sorted registered names."""
        return sorted(self._all())

    def describe(self) -> dict[str, str]:
        """Name to description: the first sentence of the factory's docstring, as plain
        text."""
        return {name: e.description for name, e in sorted(self._all().items())}

    def source(self, name: str) -> str:
        """The distribution that registers ``name``."""
        return self._lookup(name).source

    def _lookup(self, name: str) -> _Entry:
        entries = self._all()
        if isinstance(name, str) and name not in entries and self.kind == "sampler":
            coupled = _antithetic_entry(name, entries)
            if coupled is not None:
                return coupled
        if not isinstance(name, str) or name not in entries:
            # A name in other capitals ("NUTS") is the likeliest meaning; then near spellings.
            close = [n for n in entries if n.lower() == str(name).lower()] or (
                difflib.get_close_matches(str(name), list(entries), n=3, cutoff=0.5)
            )
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}{hint} "
                f"(registered: {', '.join(sorted(entries)) or 'none'})"
            )
        return entries[name]

    def factory(self, name: str) -> Callable:
        """The registered callable itself."""
        return self._lookup(name).obj

    def options(self, name: str) -> list[str]:
        """Keyword options the factory accepts."""
        sig = inspect.signature(self.factory(name))
        return [
            p.name
            for p in sig.parameters.values()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "target"
        ]

    def accepts_any(self, name: str) -> bool:
        """Whether the factory of ``name`` takes any keyword (``**options``)."""
        parameters = inspect.signature(self.factory(name)).parameters.values()
        return any(p.kind is p.VAR_KEYWORD for p in parameters)

    def call(self, name: str, *args, **options):
        """Call the factory, rejecting unknown options with a message naming them."""
        factory = self.factory(name)
        if not self.accepts_any(name):
            valid = self.options(name)
            unknown = [k for k in options if k not in valid]
            if unknown:
                raise ValueError(
                    f"unknown option {unknown[0]!r} for {self.kind} {name!r}; "
                    f"valid options: {', '.join(valid) or 'none'}" + self._elsewhere(unknown[0])
                )
        return factory(*args, **options)

    def _elsewhere(self, option: str) -> str:
        """Which other entries take ``option`` (``trajectory=`` is an option of ``hmc``, not
        of ``nuts``), as the end of an unknown option's message; ``""`` where none does."""
        others = []
        for other in self.names():
            try:
                if option in self.options(other):
                    others.append(other)
            except Exception:  # a plugin's broken entry must not hide the user's mistake
                continue
        if not others:
            return ""
        shown = ", ".join(others[:6]) + (", ..." if len(others) > 6 else "")
        return f" ({option!r} is an option of the {self.kind} {shown})"

    def build(self, name: str, *args, **options):
        """:meth:`call`, then check that the product is a ``returns`` (``TypeError`` naming
        the plugin that registered ``name`` if not)."""
        product = self.call(name, *args, **options)
        if self.returns is not None and not isinstance(product, self.returns):
            raise TypeError(
                f"{self.kind} {name!r} from {self.source(name)} returned "
                f"{type(product).__name__}, not a hamiltonia {self.returns.__name__}"
            )
        return product

    def accepts(self, name: str, option: str) -> bool:
        """Whether the factory of ``name`` takes the keyword ``option`` (or any keyword)."""
        return self.accepts_any(name) or option in self.options(name)


def lookups(registry: Registry, plural: str, example: str, factory: str = "factory(**options)"):
    """``names, describe, options, get, register``: the functions a part package offers over
    its ``registry`` (written once for the part kinds). ``plural`` names the parts in
    the docstrings, ``example`` shows options of ``get``, ``factory`` the factory's call."""
    kind = registry.kind
    made = registry.returns.__name__ if registry.returns is not None else "a part"

    def names() -> list[str]:
        return registry.names()

    def describe() -> dict[str, str]:
        return registry.describe()

    def options(name: str) -> list[str]:
        return registry.options(name)

    def get(name: str, **options):
        return registry.build(name, **options)

    def register(name: str, factory, *, overwrite: bool = False) -> None:
        registry.register(name, factory, overwrite=overwrite)

    names.__doc__ = f"Names of the registered {plural}."
    describe.__doc__ = f"Name to one-line description of every registered {kind}."
    options.__doc__ = f"The keyword options the {kind} ``name`` takes."
    get.__doc__ = (
        f"The {kind} registered as ``name``, built with ``options`` (e.g. ``{example}``); "
        f"an unknown name is an error listing the registered ones."
    )
    register.__doc__ = (
        f"Register ``{factory} -> {made}`` under ``name`` in this process (the class "
        f"{made} itself qualifies); ``overwrite=True`` replaces an existing name."
    )
    return names, describe, options, get, register
