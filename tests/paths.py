"""Running a target on both paths (NumPy and compiled), for the tests of every target."""

import numpy as np

import hamiltonia as hm


def run_both_paths(target, **kwargs):
    """The same run on the NumPy path and on the compiled path, in that order."""
    kwargs.setdefault("progress", False)
    runs = [hm.sample(target, compiled=compiled, **kwargs) for compiled in (False, True)]
    assert [r.attrs["compiled"] for r in runs] == [False, True]
    return runs


def assert_paths_agree(target, atol=1e-9, **kwargs):
    """With a fixed step size both paths draw the same streams and give the same draws (to
    rounding)."""
    numpy_run, compiled_run = run_both_paths(target, **kwargs)
    np.testing.assert_allclose(numpy_run.draws, compiled_run.draws, rtol=0, atol=atol)
