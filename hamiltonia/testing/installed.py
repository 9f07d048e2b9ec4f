"""Skipping a plugin's tests when the plugin is not installed.

A plugin's tests import the plugin and find its parts through entry points, which exist only
once the package is installed (``pip install -e .``). At the top of each test module::

    from hamiltonia.testing import skip_unless_installed

    skip_unless_installed("my-plugin")

    from my_plugin.targets import MyTarget  # after the check
"""

from __future__ import annotations

import importlib.metadata

__all__ = ["skip_unless_installed"]


def skip_unless_installed(distribution: str, folder: str | None = None) -> None:
    """Skip the calling test module (``pytest.skip(..., allow_module_level=True)``) when the
    package ``distribution`` is not installed; the reason says how to install it, from
    ``folder`` (default ``plugins/<distribution>``)."""
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        import pytest

        pytest.skip(
            f"the plugin {distribution} is not installed "
            f"(pip install -e {folder or 'plugins/' + distribution})",
            allow_module_level=True,
        )
