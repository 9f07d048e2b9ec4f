"""Every registered sampler's draws, on both paths, are the ones recorded in the regression
table (``regression_table.npz``, written by :mod:`tests.samplers.regression_cases`).

The table guards refactorings of the parts and of the composer: a change that is meant to
move no number must leave every cell as it was. Cells are compared to rounding: the table
was written on one processor, and another one's vector units (the width LLVM vectorises a
reassociated sum to, NumPy's SIMD ``exp``, the LAPACK kernels of an eigensolver) may round
the last bit differently; with ``HAMILTONIA_REGRESSION_EXACT=1`` cells must be
bit-identical, which is how a refactoring is checked on the machine that wrote the table.

Two effects make the rounding of a cell larger than a few ulps, both measured on a second
processor (an AVX-512 AMD EPYC against the table's): a draw near zero carries the absolute
rounding of the cell's larger numbers (the log densities, about 100), so the comparison
allows that absolute rounding (``SCALE_RTOL`` times the cell's largest value; the largest
seen, 2e-11, on ``split-hmc+randomised``); and a sampler whose integrator stops its fixed
points at a tolerance (S2HMC's processed leapfrog, 1e-6) may stop one iteration sooner or
later, which moves a draw by up to about that tolerance (2.4e-7 seen, on ``s2hmc``). A
change of an algorithm moves draws at the first decimal, far above either allowance.
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
#: Absolute rounding allowed, relative to the largest value of the cell (module docstring).
SCALE_RTOL = 1e-9
#: A fixed point's stopping tolerance is multiplied by this for the absolute allowance of a
#: sampler whose integrator iterates one (module docstring).
FIXED_POINT_FACTOR = 10.0


def _fixed_point_tolerance(sampler: str, options: dict, target: str) -> float:
    """The stopping tolerance of the sampler's fixed points, 0 where it has none."""
    import hamiltonia as hm

    built = hm.samplers.get(sampler)(hm.targets.get(target), **options)
    return float(getattr(getattr(built, "integrator", None), "tolerance", 0.0) or 0.0)


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
        fixed_point_atol = FIXED_POINT_FACTOR * _fixed_point_tolerance(sampler, options, target)
        for compiled in (False, True):
            key = rc.key(row, target, compiled)
            draws = rc.run(sampler, options, target, compiled)
            assert (draws is None) == (key not in table), f"{key}: a path came or went"
            if draws is None:
                continue
            if EXACT:
                np.testing.assert_array_equal(draws, table[key], err_msg=key)
            else:
                atol = max(SCALE_RTOL * np.max(np.abs(table[key])), fixed_point_atol)
                np.testing.assert_allclose(draws, table[key], rtol=RTOL, atol=atol, err_msg=key)
