"""What a module split by its jobs (issue 48) must keep: every name the old module exported,
the very object of the module that now holds it, so that old import paths, pickles and entry
points go on working."""

from __future__ import annotations

import importlib


def assert_re_exported(old: str, homes: dict[str, list[str]], public: list[str]) -> None:
    """``old`` (a module path) still has ``__all__ == public`` and gives each name of
    ``homes`` (``{new module path: names}``) as the object of its new home, where a public
    name is also in the home's ``__all__``."""
    module = importlib.import_module(old)
    assert module.__all__ == public
    for new, names in homes.items():
        home = importlib.import_module(new)
        for name in names:
            assert getattr(module, name) is getattr(home, name), f"{old}.{name}"
            if not name.startswith("_"):
                assert name in home.__all__, f"{new}.{name}"
