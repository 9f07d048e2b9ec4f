"""Every registered sampler's draws, on both paths, are the ones recorded in the regression
table (``regression_table.npz``, written by :mod:`tests.samplers.regression_cases`).

The table guards refactorings of the parts and of the composer: a change that is meant to
move no number must leave every cell as it was. Cells are compared to rounding: the table
was written on one processor, and another one's vector units (the width LLVM vectorises a
reassociated sum to, NumPy's SIMD ``exp``) may round the last bit differently; with
``HAMILTONIA_REGRESSION_EXACT=1`` cells must be bit-identical, which is how a refactoring is
checked on the machine that wrote the table.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests.samplers import regression_cases as rc

EXACT = os.environ.get("HAMILTONIA_REGRESSION_EXACT", "") not in ("", "0")
#: Relative rounding allowed across processors: a few hundred ulps after the 42 iterations of
#: a cell, far below any change of an algorithm (which moves draws at the first decimal).
RTOL = 1e-11


@pytest.fixture(scope="module")
def table():
    with np.load(rc.TABLE) as data:
        return dict(data)


def test_the_table_has_a_cell_for_every_sampler_target_and_path(table):
    """A sampler added, removed, or gaining or losing its compiled path changes the table's
    keys: rewrite the table deliberately."""
    names = {row for row, _, _ in rc.cases()}
    rows = {key.split("|")[0] for key in table}
    assert rows == names
    for key in table:
        _row, target, path = key.split("|")
        assert target in rc.TARGETS and path in ("numpy", "compiled")


@pytest.mark.parametrize("row, sampler, options", rc.cases(), ids=[c[0] for c in rc.cases()])
def test_draws_are_those_of_the_table(table, row, sampler, options):
    for target in rc.targets_of(sampler):
        for compiled in (False, True):
            key = rc.key(row, target, compiled)
            draws = rc.run(sampler, options, target, compiled)
            assert (draws is None) == (key not in table), f"{key}: compiled path came or went"
            if draws is None:
                continue
            if EXACT:
                np.testing.assert_array_equal(draws, table[key], err_msg=key)
            else:
                np.testing.assert_allclose(draws, table[key], rtol=RTOL, atol=0, err_msg=key)
