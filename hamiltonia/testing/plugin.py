"""The pytest plugin of hamiltonia: fixtures for testing a new part or a plugin package.

Registered under the entry-point group ``pytest11`` (name ``hamiltonia``), so every pytest
session of an environment where hamiltonia is installed has these fixtures; disable it with
``pytest -p no:hamiltonia``. The fixtures return the functions of :mod:`hamiltonia.testing`
(importing them when first used), and a seed and a target to call them with:

========================  =============================================================
fixture                   gives
========================  =============================================================
``hamiltonia_seed``       :data:`HAMILTONIA_SEED`, a fixed seed
``gaussian_target``       :func:`hamiltonia.testing.targets.correlated_gaussian` (3-d)
``assert_paths_agree``    :func:`hamiltonia.testing.paths.assert_paths_agree`
``check_integrator``      :func:`hamiltonia.testing.integrators.check_integrator`
``check_invariance``      :func:`hamiltonia.testing.invariance.check_invariance`
``check_gradient``        :func:`hamiltonia.testing.gradients.check_gradient`
``assert_moments``        :func:`hamiltonia.testing.moments.assert_moments_recovered`
========================  =============================================================

It also registers the marker ``slow`` (for long statistical runs) unless the project
defines it already.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = [
    "HAMILTONIA_SEED",
    "assert_moments",
    "assert_paths_agree",
    "check_gradient",
    "check_integrator",
    "check_invariance",
    "gaussian_target",
    "hamiltonia_seed",
]

#: The seed of the ``hamiltonia_seed`` fixture.
HAMILTONIA_SEED = 20240611


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``slow`` marker, unless the project has its own."""
    defined = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
    if "slow" not in defined:
        config.addinivalue_line(
            "markers", "slow: a long statistical run (hamiltonia.testing); deselect with "
            "-m 'not slow'"
        )  # fmt: skip


@pytest.fixture
def hamiltonia_seed() -> int:
    """A fixed seed, :data:`HAMILTONIA_SEED`: statistical tests must be reproducible."""
    return HAMILTONIA_SEED


@pytest.fixture
def gaussian_target() -> Any:
    """A small correlated Gaussian with exact moments and an exact sampler
    (:func:`hamiltonia.testing.targets.correlated_gaussian`, ``dim=3``, ``rho=0.5``)."""
    from hamiltonia.testing.targets import correlated_gaussian

    return correlated_gaussian(3, 0.5)


@pytest.fixture
def assert_paths_agree() -> Callable[..., Any]:
    """:func:`hamiltonia.testing.paths.assert_paths_agree`."""
    from hamiltonia.testing.paths import assert_paths_agree as check

    return check


@pytest.fixture
def check_integrator() -> Callable[..., Any]:
    """:func:`hamiltonia.testing.integrators.check_integrator`."""
    from hamiltonia.testing.integrators import check_integrator as check

    return check


@pytest.fixture
def check_invariance() -> Callable[..., Any]:
    """:func:`hamiltonia.testing.invariance.check_invariance`."""
    from hamiltonia.testing.invariance import check_invariance as check

    return check


@pytest.fixture
def check_gradient() -> Callable[..., Any]:
    """:func:`hamiltonia.testing.gradients.check_gradient`."""
    from hamiltonia.testing.gradients import check_gradient as check

    return check


@pytest.fixture
def assert_moments() -> Callable[..., Any]:
    """:func:`hamiltonia.testing.moments.assert_moments_recovered`."""
    from hamiltonia.testing.moments import assert_moments_recovered as check

    return check
