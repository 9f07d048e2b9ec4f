"""Targets built from user functions."""

import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm


def _logp(x):
    return -0.5 * anp.sum(x**2) - 0.1 * anp.sum(x**4)


def test_from_logp_gradient_and_hvp():
    target = hm.Target.from_logp(_logp, dim=3, names=["a", "b", "c"])
    x = np.array([[0.3, -1.0, 2.0], [0.0, 0.5, -0.5]])
    lp, g = target.log_prob_and_grad(x)
    np.testing.assert_allclose(lp, [-0.5 * np.sum(r**2) - 0.1 * np.sum(r**4) for r in x])
    np.testing.assert_allclose(g, -x - 0.4 * x**3, rtol=1e-12)
    v = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(target.hvp(x[0], v), (-1 - 1.2 * x[0] ** 2) * v, rtol=1e-12)
    assert target.names == ("a", "b", "c")


def test_from_logp_vectorized_matches_row_by_row():
    def batch_logp(x):
        return -0.5 * anp.sum(x**2, axis=-1) - 0.1 * anp.sum(x**4, axis=-1)

    vec = hm.Target.from_logp(batch_logp, dim=3, vectorized=True)
    rows = hm.Target.from_logp(_logp, dim=3)
    x = np.random.default_rng(0).normal(size=(4, 3))
    for a, b in zip(vec.log_prob_and_grad(x), rows.log_prob_and_grad(x), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    v = np.ones_like(x)
    np.testing.assert_allclose(vec.hvp(x, v), rows.hvp(x, v), rtol=1e-12)


def test_from_functions():
    target = hm.Target.from_functions(
        lambda x: -0.5 * np.sum(x**2, axis=-1),
        lambda x: (-0.5 * np.sum(x**2, axis=-1), -x),
        dim=2,
        vectorized=True,
    )
    assert not target.has_hvp
    with pytest.raises(NotImplementedError):
        target.hvp(np.zeros(2), np.ones(2))
    np.testing.assert_allclose(target.grad_log_prob(np.ones((3, 2))), -np.ones((3, 2)))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"dim": 0}, "dim"), ({"dim": 2.5}, "dim"), ({"dim": 2, "names": ["a"]}, "names")],
)
def test_bad_construction_names_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        hm.Target.from_logp(_logp, **kwargs)


def test_wrong_shape_names_x():
    target = hm.Target.from_logp(_logp, dim=3)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 3\)"):
        target.log_prob(np.zeros(4))


def test_not_callable():
    with pytest.raises(TypeError, match="logp"):
        hm.Target.from_logp("not a function", dim=2)


def test_check_setting_names_the_argument_and_the_values():
    from hamiltonia.targets.base import SETTINGS, check_setting

    assert SETTINGS == ("default", "paper")
    assert check_setting("paper") == "paper"
    for bad in ("bogus", "", None, 1):
        with pytest.raises(ValueError, match=r"setting must be one of 'default', 'paper', got"):
            check_setting(bad)


def test_with_setting_records_the_setting():
    from hamiltonia.targets.base import with_setting

    t = hm.Target.from_logp(lambda x: -0.5 * anp.sum(x**2, axis=-1), 2, vectorized=True)
    assert t.setting == "default"
    t.description = "a model"
    assert with_setting(t, "default") is t and t.description == "a model"
    with_setting(t, "paper")
    assert t.setting == "paper" and t.description == "a model [setting: paper]"
    with pytest.raises(ValueError, match="setting"):
        with_setting(t, "other")


NOT_ONE_NUMBER = [
    (lambda x: -0.5 * x**2, r"\(3,\)"),
    (lambda x: -0.5 * anp.sum(x**2, keepdims=True), r"\(1,\)"),
]


@pytest.mark.parametrize("backend", [None, "numba", "autograd"])
@pytest.mark.parametrize(("logp", "shape"), NOT_ONE_NUMBER, ids=["elementwise", "one-element"])
def test_a_logp_that_returns_no_single_number_is_refused_when_built(logp, shape, backend):
    """Not a compile failure (no fallback to autograd with a CompileWarning, which would
    fail while sampling, or for shape (1,) run row by row): the user's error, named when
    the target is built, whatever the backend."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no CompileWarning nor RowByRowWarning first
        with pytest.raises(ValueError, match=rf"logp must return one number.*shape {shape}"):
            hm.Target.from_logp(logp, dim=3, backend=backend)
    with pytest.raises(TypeError, match="logp returned NoneType"):
        hm.Target.from_logp(lambda x: None, dim=3, backend=backend)
