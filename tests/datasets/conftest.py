"""Fixtures for the data-set tests: where the canonical files are, and an isolated cache.

The canonical files come from the local mirror ``HAMILTONIA_DATA`` when it is set (the CI sets
it to ``../shared/data``), else from ``../shared/data`` next to the repository, else from the
per-user cache when it holds every file. Tests that need the files skip, saying why, when none
of these has them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hamiltonia import datasets
from hamiltonia.datasets import fetch

REPO = Path(__file__).resolve().parents[2]
DEFAULT_MIRROR = REPO.parent / "shared" / "data"
SKIP_REASON = (
    "no canonical data files: set HAMILTONIA_DATA to a folder holding them (e.g. ../shared/data) "
    "or fill the cache once online with hamiltonia.datasets.path(name)"
)


def _has_all(folder: Path) -> bool:
    return all((folder / info.file).is_file() for info in datasets.DATASETS.values())


def _mirror() -> Path | None:
    env = os.environ.get(fetch.ENV_MIRROR, "").strip()
    for folder in ([Path(env)] if env else []) + [DEFAULT_MIRROR]:
        if folder.is_dir() and _has_all(folder):
            return folder
    return None


@pytest.fixture
def data_dir(monkeypatch) -> Path:
    """Folder of the canonical files, configured so that ``datasets.path`` finds them."""
    mirror = _mirror()
    if mirror is not None:
        monkeypatch.setenv(fetch.ENV_MIRROR, str(mirror))
        return mirror
    monkeypatch.delenv(fetch.ENV_MIRROR, raising=False)
    cache = fetch.cache_dir()
    if _has_all(cache):
        return cache
    pytest.skip(SKIP_REASON)


@pytest.fixture
def mirror(monkeypatch, tmp_path) -> Path:
    """The local mirror, set as ``HAMILTONIA_DATA`` (with an empty cache); skip without one."""
    folder = _mirror()
    if folder is None:
        pytest.skip(SKIP_REASON)
    monkeypatch.setenv(fetch.ENV_MIRROR, str(folder))
    monkeypatch.setenv(fetch.ENV_CACHE, str(tmp_path / "cache"))
    return folder


@pytest.fixture
def isolated(monkeypatch, tmp_path) -> Path:
    """No mirror and an empty cache under ``tmp_path``; returns the cache's data folder."""
    monkeypatch.delenv(fetch.ENV_MIRROR, raising=False)
    monkeypatch.setenv(fetch.ENV_CACHE, str(tmp_path / "cache"))
    return fetch.cache_dir()
