"""``hamiltonia list`` and ``hamiltonia datasets``: the registered samplers, targets and
parts with their options, and the data sets."""

from __future__ import annotations

import textwrap

#: Width of ``hamiltonia list``'s lines: a description longer than the rest of the line
#: continues on the next, under the descriptions.
LIST_WIDTH = 100


def _registries(parts: bool) -> list:
    """``(title, registry)`` of ``hamiltonia list``: the samplers and the targets, or with
    ``--parts`` the samplers and the part registries by role."""
    from hamiltonia import samplers, targets

    if not parts:
        return [("samplers", samplers.registry), ("targets", targets.registry)]
    from hamiltonia import (
        hamiltonians,
        integrators,
        reducers,
        refresh,
        structures,
        trajectories,
        tuners,
    )

    roles = (hamiltonians, integrators, structures, refresh, trajectories, tuners, reducers)
    titles = ("hamiltonians", "integrators", "structures", "refreshes", "trajectories",
              "tuners", "reducers")  # fmt: skip
    return [("samplers", samplers.registry)] + [
        (title, module.registry) for title, module in zip(titles, roles, strict=True)
    ]


def _options(registry, name: str) -> tuple[str, ...] | None:
    """The options of the factory of ``name``; ``None`` where its signature cannot be read."""
    try:
        names = tuple(registry.options(name))
        if registry.accepts_any(name):
            names += ("any keyword",)
    except (TypeError, ValueError):
        return None
    return names


def _options_texts(registry, names) -> dict[str, str]:
    """Name to `` Options: a, b.``: the factory's keyword options. Recipes with the options
    of another (the presets of hmc and of nuts) name it, the shortest name of those with the
    same options, rather than repeat the list."""
    options = {name: _options(registry, name) for name in names}
    first: dict[tuple, str] = {}
    for name in sorted(names, key=lambda n: (len(n), n)):
        if options[name]:
            first.setdefault(options[name], name)
    texts = {}
    for name, own in options.items():
        if own is None:
            texts[name] = ""
        elif own and first[own] != name:
            texts[name] = f" Options: those of {first[own]}."
        else:
            texts[name] = f" Options: {', '.join(own) or 'none'}."
    return texts


def _cmd_list(out, parts: bool = False) -> int:
    for title, registry in _registries(parts):
        print(f"{title}:", file=out)
        described = registry.describe()  # the first sentences, as plain text
        width = max((len(n) for n in described), default=0)
        indent = " " * (width + 4)
        options = _options_texts(registry, described) if parts else {}
        for name, text in described.items():
            if parts:
                # A first sentence cut before a display (``...:``) ends here.
                text = (text[:-1] + "." if text.endswith(":") else text) + options[name]
            line = textwrap.fill(f"  {name:<{width}}  {text}", LIST_WIDTH,
                                 subsequent_indent=indent, break_on_hyphens=False,
                                 break_long_words=False)  # fmt: skip
            print(line.rstrip(), file=out)
    return 0


def _cmd_datasets(out) -> int:
    import os

    from hamiltonia import datasets

    state = datasets.status()
    descriptions = datasets.describe()
    width = max(len(n) for n in state)
    mirror = os.environ.get("HAMILTONIA_DATA")
    print(f"mirror (HAMILTONIA_DATA): {mirror or 'not set'}", file=out)
    for name in datasets.names():
        print(f"  {name:<{width}}  {state[name]:<8}  {descriptions[name]}", file=out)
    return 0
