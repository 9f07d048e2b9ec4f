"""The guarded evaluation of a user's target: a bad point is a rejection, a bug is shown."""

import re
from contextlib import nullcontext

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.state import ModelError, check_reject_on, evaluate_target, rejecting


class Model(hm.Target):
    """A standard normal whose ``mode`` breaks it in one of the ways users' models break."""

    def __init__(self, mode="ok", dim=2):
        super().__init__(dim)
        self.mode = mode

    def log_prob_and_grad(self, q):
        q = np.asarray(q, dtype=float)
        if self.mode == "raises-above-1" and np.any(q[..., 0] > 1):
            return undefined_name  # noqa: F821 - the user's bug under test
        if self.mode == "domain-above-1" and np.any(q[..., 0] > 1):
            raise FloatingPointError("outside the support")
        if self.mode == "always-raises":
            raise ZeroDivisionError("boom")
        lp, g = -0.5 * np.sum(q * q, axis=-1), -q
        if self.mode == "returns-none":
            return None, g
        if self.mode == "returns-string":
            return "0.0", g
        if self.mode == "bad-shape":
            return lp[..., None, None], g
        if self.mode == "bad-grad-shape":
            return lp, g[..., :1]
        return lp, g

    def log_prob(self, q):
        return self.log_prob_and_grad(q)[0]


def test_an_exception_names_the_chain_and_position_and_chains_the_original():
    q = np.array([[0.0, 0.0], [2.0, 0.5], [3.0, 0.0]])
    with pytest.raises(ModelError, match=r"raised NameError.*chain 1, position \[2\. +0\.5\]") as e:
        evaluate_target(Model("raises-above-1"), q)
    assert isinstance(e.value.__cause__, NameError)
    assert e.value.chain == 1
    np.testing.assert_array_equal(e.value.position, q[1])


def test_declared_exceptions_reject_only_the_rows_that_raise():
    q = np.array([[0.0, 0.0], [2.0, 0.5]])
    with rejecting(FloatingPointError):
        lp, _ = evaluate_target(Model("domain-above-1"), q)
    assert lp[0] == 0.0 and np.isnan(lp[1])
    # outside the block the same exception is a bug again
    with pytest.raises(ModelError, match="FloatingPointError"):
        evaluate_target(Model("domain-above-1"), q)
    # an undeclared type is never rejected
    with rejecting(FloatingPointError), pytest.raises(ModelError, match="NameError"):
        evaluate_target(Model("raises-above-1"), q)


@pytest.mark.parametrize(
    ("mode", "error", "match"),
    [
        ("returns-none", TypeError, "returned NoneType for the log density"),
        ("returns-string", TypeError, "returned str for the log density"),
        ("bad-grad-shape", ValueError, r"gradient of shape \(1,\) for one point"),
    ],
)
def test_a_wrong_return_is_named(mode, error, match):
    with pytest.raises(error, match=match):
        with (
            pytest.warns(RuntimeWarning, match="one at a time")
            if "shape" in mode
            else nullcontext()
        ):
            evaluate_target(Model(mode), np.zeros((3, 2)))


def test_a_batch_of_the_wrong_shape_names_the_shapes():
    with pytest.warns(RuntimeWarning, match=r"returned shapes \(3, 1, 1\) and \(3, 2\)"):
        with pytest.raises(ValueError, match=r"log density of shape \(1, 1\) for one point"):
            evaluate_target(Model("bad-shape"), np.zeros((3, 2)))


def test_reject_on_is_validated():
    assert check_reject_on(None) == ()
    assert check_reject_on(FloatingPointError) == (FloatingPointError,)
    assert check_reject_on([KeyError, ValueError]) == (KeyError, ValueError)
    for bad in ("FloatingPointError", 3, (ValueError, "x"), BaseException):
        with pytest.raises(ValueError, match="reject_on must be an Exception subclass"):
            check_reject_on(bad)


@pytest.mark.parametrize(
    ("given", "example"),
    [
        ("ValueError", "reject_on=ValueError"),  # not "got 'V'": a string is no tuple
        ((KeyError, "np.linalg.LinAlgError"), "reject_on=np.linalg.LinAlgError"),
        ("ValueError, KeyError", "reject_on=(FloatingPointError, ZeroDivisionError)"),
    ],
)
def test_reject_on_as_a_string_says_to_pass_the_class(given, example):
    name = given if isinstance(given, str) else given[1]
    message = f"not the string '{name}': pass the exception class itself, e.g. {example}"
    with pytest.raises(ValueError, match=re.escape(message)):
        check_reject_on(given)


# -- through sample(): the cases of the issue, as a user meets them


def test_sample_shows_the_users_exception_with_the_iteration():
    with pytest.raises(ModelError) as e:
        hm.sample(Model("raises-above-1"), chains=2, warmup=50, draws=50, seed=1,
                  progress=False, compiled=False)  # fmt: skip
    message = str(e.value)
    assert "NameError" in message and "chain" in message and "position" in message
    assert ("iteration" in message) or ("step-size search" in message) or ("initial" in message)
    assert isinstance(e.value.__cause__, NameError)


def test_a_model_that_always_raises_shows_its_exception_at_initialisation():
    with pytest.raises(ModelError, match=r"ZeroDivisionError: boom.*at an initial point"):
        hm.sample(Model("always-raises"), chains=2, warmup=10, draws=10, seed=0,
                  progress=False, compiled=False)  # fmt: skip


@pytest.mark.parametrize("mode", ["returns-none", "returns-string"])
def test_a_model_returning_no_number_is_named_not_retried(mode):
    with pytest.raises(TypeError, match="for the log density"):
        hm.sample(Model(mode), chains=2, warmup=10, draws=10, seed=0, progress=False,
                  compiled=False)  # fmt: skip


def test_reject_on_samples_the_truncated_support_and_counts_the_rejections():
    result = hm.sample(Model("domain-above-1"), "hmc", chains=2, warmup=200, draws=300, seed=3,
                       progress=False, compiled=False, reject_on=FloatingPointError)  # fmt: skip
    assert result.draws[..., 0].max() <= 1.0
    assert result.n_divergent > 0  # the rejections are recorded, not hidden
    assert np.all(np.isfinite(result.draws))


def test_sample_validates_reject_on():
    with pytest.raises(ValueError, match=r"not the string 'KeyError'.* reject_on=KeyError$"):
        hm.sample(Model(), chains=1, warmup=1, draws=1, progress=False, reject_on="KeyError")
