"""Finding the canonical data files for tests that need them."""

import os
from pathlib import Path

import pytest

#: The CI's mirror (see .ci/run), used when HAMILTONIA_DATA is not set.
DEFAULT_MIRROR = Path(__file__).resolve().parents[2] / "shared" / "data"


def use_data(monkeypatch, *names: str) -> None:
    """Point HAMILTONIA_DATA at a folder holding the files of data sets ``names`` (the
    variable's own folder first, then the CI mirror), fall back to the per-user cache, or skip
    the test."""
    from hamiltonia import datasets

    env = os.environ.get("HAMILTONIA_DATA", "").strip()
    files = [datasets.info(name).file for name in names]
    for folder in ([Path(env)] if env else []) + [DEFAULT_MIRROR]:
        if all((folder / f).is_file() for f in files):
            monkeypatch.setenv("HAMILTONIA_DATA", str(folder))
            return
    monkeypatch.delenv("HAMILTONIA_DATA", raising=False)
    status = datasets.status()
    if any(status[name] == "missing" for name in names):
        pytest.skip("no canonical data files: set HAMILTONIA_DATA (e.g. to ../shared/data)")
