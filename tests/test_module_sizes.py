"""A house of small rooms (issue 48): every module of the package holds one job, in at most
:data:`MOST_LINES` lines, with a docstring that says what it holds. Every module that was
over the limit has been split by its jobs; none may grow past it again."""

from __future__ import annotations

from pathlib import Path

import pytest

import hamiltonia

PACKAGE = Path(hamiltonia.__file__).parent
MOST_LINES = 600

MODULES = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("module", MODULES)
def test_a_module_is_a_small_room(module):
    lines = len((PACKAGE / module).read_text().splitlines())
    assert lines <= MOST_LINES, f"{module} has {lines} lines (at most {MOST_LINES})"
