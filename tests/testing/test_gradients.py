"""The gradient check of the kit (hamiltonia.testing.gradients): it passes on the built-in
targets and fails, naming the coordinate, on a wrong gradient or Hessian-vector product."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.testing import check_gradient, correlated_gaussian, gradient_points
from hamiltonia.testing.gradients import finite_difference_gradient


class Quadratic(hm.Target):
    """:math:`\\log\\pi(x) = -\\tfrac12 \\sum_i c_i x_i^2`, with deliberate mistakes: the
    gradient of one coordinate scaled by ``grad_error``, the Hessian-vector product by
    ``hvp_error``, the value of ``log_prob_and_grad`` shifted by ``value_error``."""

    def __init__(self, grad_error=1.0, hvp_error=1.0, value_error=0.0):
        super().__init__(3, names=["alpha", "beta", "gamma"])
        self.c = np.array([0.5, 2.0, 30.0])
        self.grad_error, self.hvp_error, self.value_error = grad_error, hvp_error, value_error

    def log_prob(self, x):
        return -0.5 * np.sum(self.c * np.asarray(x) ** 2, axis=-1)

    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        g = -self.c * x
        g[..., 1] *= self.grad_error
        return self.log_prob(x) + self.value_error, g

    def hvp(self, x, v):
        return -self.c * np.asarray(v) * self.hvp_error


@pytest.mark.parametrize(
    "target",
    [Quadratic(), correlated_gaussian(4), *(hm.targets.get(n) for n in (
        "banana", "gaussian-d10", "correlated-gaussian", "funnel-d25"))],
    ids=lambda t: type(t).__name__,
)  # fmt: skip
def test_correct_gradients_pass(target):
    worst = check_gradient(target)
    assert 0.0 <= worst <= 1.0


def test_a_gradient_wrong_in_one_coordinate_fails_naming_it():
    # 0.1 % off in one coordinate: a hundred times the tolerance.
    with pytest.raises(AssertionError, match=r"gradient of 'beta' \(coordinate 1\)"):
        check_gradient(Quadratic(grad_error=1.001))
    with pytest.raises(AssertionError, match="'beta'"):
        check_gradient(Quadratic(grad_error=-1.0))  # a sign error


def test_a_wrong_hessian_vector_product_fails():
    with pytest.raises(AssertionError, match="Hessian-vector product"):
        check_gradient(Quadratic(hvp_error=1.01))
    check_gradient(Quadratic(hvp_error=1.01), hvp=False)  # unless it is not checked


def test_log_prob_and_grad_must_give_log_prob():
    with pytest.raises(AssertionError, match="log_prob_and_grad and log_prob disagree"):
        check_gradient(Quadratic(value_error=1e-6))


def test_the_step_rule_resolves_the_gradient_at_every_scale():
    """Central differences with h = eps^(1/3) max(1, |x|) agree with the exact gradient to
    about eps^(2/3) relative (4e-11), here from 1e-3 to 1e8 (log density up to 1e18)."""
    target = Quadratic()
    x = np.outer(np.logspace(-3, 8, 12), np.ones(3))
    d, h = finite_difference_gradient(target, x)
    _, g = target.log_prob_and_grad(x)
    assert np.all(h > 0) and np.all(np.abs(d - g) <= 1e-9 * np.maximum(np.abs(g), 1.0)), d / g
    check_gradient(target, x)


def test_points_are_exact_draws_when_the_target_has_a_sampler():
    target = correlated_gaussian(3)
    from hamiltonia.testing import exact_draws

    np.testing.assert_array_equal(gradient_points(target, 5, seed=2), exact_draws(target, 5, 2))
    banana = hm.targets.get("banana")
    assert gradient_points(banana, 5).shape == (5, 2)
