"""A data target's potential split over subsets of its rows (hamiltonia.targets.split)."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.targets.split import SplitTarget, split_boundaries, split_target

#: Data targets with rows, small enough to build in a test.
ROW_TARGETS = {
    "linear-regression": lambda: hm.targets.get("linear-regression", n_obs=37, dim=3),
    "blr-german": lambda: hm.targets.get("blr-german"),
    "bnn-concrete": lambda: hm.targets.get("bnn-concrete"),
}


@pytest.fixture(params=sorted(ROW_TARGETS), ids=str)
def data_target(request):
    return ROW_TARGETS[request.param]()


def _point(target, seed=0):
    return 0.1 * np.random.default_rng(seed).normal(size=(2, target.dim))


@pytest.mark.parametrize("n_splits", [1, 3, 7])
def test_components_sum_to_the_target(data_target, n_splits):
    """sum_m (-U_m) = log pi and sum_m (-grad U_m) = grad log pi (prior shared 1/M each), and
    the split target's own density is the target's."""
    split = SplitTarget(data_target, n_splits)
    x = _point(data_target)
    lp, grad = data_target.log_prob_and_grad(x)
    parts = [split.component_log_prob_and_grad(x, m) for m in range(n_splits)]
    np.testing.assert_allclose(sum(p[0] for p in parts), lp, rtol=1e-12)
    np.testing.assert_allclose(sum(p[1] for p in parts), grad, rtol=1e-10, atol=1e-10)
    lp_split, grad_split = split.log_prob_and_grad(x)
    np.testing.assert_allclose(lp_split, lp, rtol=1e-12)
    np.testing.assert_allclose(grad_split, grad, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n_splits", [1, 4])
def test_compiled_components_equal_the_numpy_ones(data_target, n_splits):
    """The compiled kernel evaluates each component (idata[0]) as the NumPy form does, and
    the whole density (-1) bit for bit as the target's own kernel."""
    split = SplitTarget(data_target, n_splits)
    kernel = split.numba_kernel()
    assert kernel.components == n_splits
    x = _point(data_target)[0]
    for m in range(n_splits):
        lp, grad = kernel.evaluate_component(x, m)
        lp_ref, grad_ref = split.component_log_prob_and_grad(x, m)
        np.testing.assert_allclose(lp, lp_ref, rtol=1e-10)
        np.testing.assert_allclose(grad, grad_ref, rtol=1e-8, atol=1e-9)
    whole, whole_grad = kernel.evaluate_component(x, -1)
    own, own_grad = data_target.numba_kernel().evaluate(x)
    assert whole == own and np.array_equal(whole_grad, own_grad)


def test_one_split_is_the_target_bit_for_bit(data_target):
    split = SplitTarget(data_target, 1)
    x = _point(data_target)
    lp, grad = data_target.log_prob_and_grad(x)
    lp_0, grad_0 = split.component_log_prob_and_grad(x, 0)
    assert np.array_equal(lp, lp_0) and np.array_equal(grad, grad_0)


def test_subsets_are_consecutive_and_equal_to_one_row():
    bounds = split_boundaries(10, 4)
    assert bounds.tolist() == [0, 3, 6, 8, 10]
    assert split_boundaries(400, 4).tolist() == [0, 100, 200, 300, 400]


@pytest.mark.parametrize("bad", [0, -2, 38, 2.5, 2.0, True, "2", None])
def test_bad_n_splits_are_refused_naming_the_range(bad):
    data = ROW_TARGETS["linear-regression"]()
    with pytest.raises(ValueError, match=r"n_splits .*37 rows.* in \[1, 37\]"):
        SplitTarget(data, bad)


def test_a_target_without_rows_is_refused():
    with pytest.raises(TypeError, match="no rows to split"):
        SplitTarget(hm.targets.get("banana"), 2)


def test_split_target_reuses_or_resplits():
    data = ROW_TARGETS["linear-regression"]()
    split = split_target(data, 3)
    assert split_target(split, 3) is split
    again = split_target(split, 5)
    assert again.base is data and again.n_splits == 5
    # What a user reads of the data target (its names, its moments) is the base's.
    assert again.names == data.names
    np.testing.assert_array_equal(again.exact_moments.mean, data.exact_moments.mean)


def test_what_a_result_reads_is_the_data_targets():
    """Names, blocks, coords, observed data and the pointwise log likelihood (ArviZ's
    groups) are the data target's."""
    data = hm.targets.get("blr-german")
    split = SplitTarget(data, 3)
    assert split.reported_names == data.reported_names
    assert split.blocks == data.blocks and split.coords == data.coords
    np.testing.assert_array_equal(split.observed_data["y"], data.observed_data["y"])
    draws = _point(data)
    np.testing.assert_array_equal(
        split.pointwise_log_likelihood(draws)["y"], data.pointwise_log_likelihood(draws)["y"]
    )
    np.testing.assert_array_equal(split.predict(draws), data.predict(draws))
