"""The both-paths check of the kit (hamiltonia.testing.paths): the NumPy path and the compiled
path agree on a correct target, and a compiled kernel that computes something else fails."""

import numpy as np
import pytest

from hamiltonia.testing import PATHS_ATOL, GaussianTarget, correlated_gaussian

RUN = dict(chains=2, warmup=0, draws=20, seed=3, step_size=0.4, n_steps=5)


class SkewedKernel(GaussianTarget):
    """A Gaussian whose compiled kernel has its mean moved by 1e-3: the Python maths and
    the kernel disagree, as a kernel with a typo would."""

    def numba_kernel(self):
        return GaussianTarget(self.mean + 1e-3, self.covariance).numba_kernel()


def test_a_correct_target_agrees_on_both_paths(gaussian_target, assert_paths_agree):
    numpy_run, compiled_run = assert_paths_agree(gaussian_target, "hmc", **RUN)
    assert not numpy_run.attrs["compiled"] and compiled_run.attrs["compiled"]
    assert 0 < numpy_run.stats["accepted"].mean() < 1  # accept decisions compared, both kinds
    assert np.abs(numpy_run.draws - compiled_run.draws).max() < PATHS_ATOL


def test_a_kernel_that_computes_something_else_fails(assert_paths_agree):
    base = correlated_gaussian()
    with pytest.raises(AssertionError, match="the NumPy path and the compiled path differ"):
        assert_paths_agree(SkewedKernel(base.mean, base.covariance), "hmc", **RUN)


def test_statistics_are_compared_exactly_when_discrete():
    from hamiltonia.testing.paths import _compare

    _compare("energy", np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]), 1e-9, 1e-9)
    with pytest.raises(AssertionError, match=r"accepted differs between the paths.*index \(1,\)"):
        _compare("accepted", np.array([True, False]), np.array([True, True]), 1e-9, 1e-9)
    with pytest.raises(AssertionError, match="energy: the NumPy path and the compiled path"):
        _compare("energy", np.array([1.0]), np.array([1.0 + 1e-6]), 1e-9, 1e-9)


def test_compiled_is_not_an_option(assert_paths_agree, gaussian_target):
    with pytest.raises(ValueError, match="runs both paths"):
        assert_paths_agree(gaussian_target, "hmc", compiled=True, **RUN)
