"""Bounds that depend on other blocks (issue 53, item 5): ``hm.interval``, ``hm.lower`` and
``hm.upper`` with a function of the other blocks as a bound, against the same model
reparameterised by hand with its Jacobian, on every backend; and the JAX route's float32
data, named at build."""

from __future__ import annotations

import warnings

import autograd.numpy as anp
import numpy as np
import pytest
from scipy.stats import norm

import hamiltonia as hm
from hamiltonia.modelling.constraints import DependentBounds, EvaluatedBounds

COUNTS = (6.0, 3.0, 2.0)

#: alpha in (0, 1), beta in (0, 1 - alpha) (GARCH's alpha1, beta1), gamma > beta (a vector:
#: a scalar bound broadcast over its axis), delta < -alpha.
DEPENDENT = {
    "alpha": hm.interval(0, 1),
    "beta": hm.interval(0, lambda p: 1 - p["alpha"]),
    "gamma": hm.lower(lambda p: p["beta"], 2),
    "delta": hm.upper(lambda p: -p["alpha"]),
}
#: The same, by hand: fractions and offsets with fixed bounds.
BY_HAND = {"alpha": hm.interval(0, 1), "u": hm.interval(0, 1), "g": hm.positive(2),
           "d": hm.positive()}  # fmt: skip


def _density(xp, alpha, beta, gamma, delta):
    n1, n2, n3 = COUNTS
    counts = n1 * xp.log(alpha) + n2 * xp.log(beta) + n3 * xp.log(1 - alpha - beta)
    return counts - 1.5 * xp.sum(gamma - beta[..., None], axis=-1) - 0.5 * (delta + 1) ** 2


def _logp(xp):
    def logp(p):
        return _density(xp, p["alpha"], p["beta"], p["gamma"], p["delta"])

    return logp


def _logp_by_hand(xp):
    def logp(p):
        alpha = p["alpha"]
        beta = p["u"] * (1 - alpha)
        gamma = beta[..., None] + p["g"]
        delta = -alpha - p["d"]
        # x_beta = (1 - alpha) u: the Jacobian log(1 - alpha) of u -> beta (gamma and delta
        # are shifts of g and d, of Jacobian 1).
        return _density(xp, alpha, beta, gamma, delta) + xp.log(1 - alpha)

    return logp


def _backend_modules():
    out = [("autograd", anp), ("numba", anp)]
    try:
        import jax.numpy as jnp
    except ImportError:
        jnp = None
    return [*out, ("jax", jnp)]


@pytest.mark.parametrize(("backend", "xp"), _backend_modules(), ids=["autograd", "numba", "jax"])
def test_log_density_equals_the_hand_reparameterisation(backend, xp):
    if xp is None:
        pytest.skip("jax is not installed")
    model = hm.Model(_logp(xp), DEPENDENT, backend=backend)
    hand = hm.Model(_logp_by_hand(xp), BY_HAND, backend=backend)
    assert model.backend == backend  # numba compiled it: no fallback to autograd
    assert model.dim == hand.dim == 5
    z = np.random.default_rng(3).normal(scale=1.5, size=(6, 5))
    lp, grad = model.log_prob_and_grad(z)
    lp_hand, grad_hand = hand.log_prob_and_grad(z)
    np.testing.assert_allclose(lp, lp_hand, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad, grad_hand, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model.log_prob(z), lp_hand, rtol=1e-12, atol=1e-12)
    # The reported values satisfy the bounds, and come back to z.
    x = model.constrain(z)
    alpha, beta, gamma, delta = x[:, 0], x[:, 1], x[:, 2:4], x[:, 4]
    assert np.all((beta > 0) & (beta < 1 - alpha) & (gamma > beta[:, None]).all(-1))
    assert np.all(delta < -alpha)
    values = model.layout.unflatten(x)
    np.testing.assert_allclose(model.unconstrain(values, chains=6), z, atol=1e-10)


RETURNS = np.random.default_rng(4).normal(0.1, 1.0, size=40)
GARCH = {"mu": hm.real(), "alpha0": hm.positive(), "alpha1": hm.interval(0, 1),
         "beta1": hm.interval(0, lambda p: 1 - p["alpha1"])}  # fmt: skip


def _garch_loglik(xp, mu, alpha0, alpha1, beta1):
    """GARCH(1,1) with sigma_1 = 1, the recursion as a loop (JAX: a lax.scan)."""
    r = RETURNS
    if xp is anp:
        var, lp = 1.0, -0.5 * (r[0] - mu) ** 2
        for t in range(1, len(r)):
            var = alpha0 + alpha1 * (r[t - 1] - mu) ** 2 + beta1 * var
            lp = lp - 0.5 * (r[t] - mu) ** 2 / var - 0.5 * anp.log(var)
        return lp
    import jax

    def step(var, pair):
        var = alpha0 + alpha1 * (pair[0] - mu) ** 2 + beta1 * var
        return var, -0.5 * (pair[1] - mu) ** 2 / var - 0.5 * xp.log(var)

    _, terms = jax.lax.scan(step, 1.0, (r[:-1], r[1:]))
    return -0.5 * (r[0] - mu) ** 2 + xp.sum(terms)


@pytest.mark.parametrize(("backend", "xp"), _backend_modules(), ids=["autograd", "numba", "jax"])
def test_garch_equals_its_hand_reparameterisation(backend, xp):
    """Stan's real<lower=0, upper=1 - alpha1> beta1 against beta1 = (1 - alpha1) v, v in
    (0, 1), with log(1 - alpha1) added, at random points."""
    if xp is None:
        pytest.skip("jax is not installed")

    def logp(p):
        return _garch_loglik(xp, p["mu"], p["alpha0"], p["alpha1"], p["beta1"])

    def by_hand(p):
        beta1 = p["v"] * (1 - p["alpha1"])
        lp = _garch_loglik(xp, p["mu"], p["alpha0"], p["alpha1"], beta1)
        return lp + xp.log(1 - p["alpha1"])

    hand_blocks = {**{k: v for k, v in GARCH.items() if k != "beta1"}, "v": hm.interval(0, 1)}
    model = hm.Model(logp, GARCH, backend=backend)
    hand = hm.Model(by_hand, hand_blocks, backend=backend)
    assert model.backend == backend
    z = np.random.default_rng(5).normal(size=(4, 4))
    lp, grad = model.log_prob_and_grad(z)
    lp_hand, grad_hand = hand.log_prob_and_grad(z)
    np.testing.assert_allclose(lp, lp_hand, rtol=1e-12)
    np.testing.assert_allclose(grad, grad_hand, rtol=1e-9, atol=1e-10)


def test_constrain_and_unconstrain_are_inverse_with_and_without_batch():
    layout = hm.ParameterLayout(DEPENDENT)
    # beta's bound reads alpha, declared after it: the order is the dependencies'.
    reordered = hm.ParameterLayout({"beta": DEPENDENT["beta"], "alpha": hm.interval(0, 1)})
    assert reordered.order == ("alpha", "beta") and reordered.reads == {"beta": ("alpha",)}
    assert layout.reads == {"beta": ("alpha",), "gamma": ("beta",), "delta": ("alpha",)}
    z = np.random.default_rng(0).normal(size=(3, 4, layout.dim))
    values, log_jac = layout.constrain(z)
    assert log_jac.shape == (3, 4) and values["gamma"].shape == (3, 4, 2)
    assert list(values) == list(DEPENDENT)  # reported in the declaration's order
    np.testing.assert_allclose(layout.unconstrain(values, (3, 4)), z, atol=1e-12)
    one, lj = layout.constrain(z[1, 2])
    assert lj == pytest.approx(log_jac[1, 2], abs=1e-12)
    np.testing.assert_allclose(layout.unconstrain(one), z[1, 2], atol=1e-12)
    # The constraint at the values: the bound evaluated (here for gamma, beta's value).
    at = layout.constraint_at("gamma", values, (3, 4))
    assert isinstance(at, EvaluatedBounds)
    np.testing.assert_allclose(
        np.broadcast_to(at.lower, (3, 4, 2)), values["beta"][..., None] + 0 * values["gamma"]
    )


def test_log_jacobian_is_the_transform_at_the_evaluated_bounds():
    """log(high - low) + log sigma(z) + log(1 - sigma(z)): the bound's dependence on alpha
    adds nothing (the map is triangular)."""
    layout = hm.ParameterLayout({"alpha": hm.interval(0, 1),
                                 "beta": hm.interval(0, lambda p: 1 - p["alpha"])})  # fmt: skip
    z = np.array([0.4, -1.3])
    values, log_jac = layout.constrain(z)
    sig = 1 / (1 + np.exp(-z))
    expected = np.sum(np.log(sig) + np.log1p(-sig)) + np.log(1 - values["alpha"])
    assert log_jac == pytest.approx(expected, abs=1e-13)

    # Against a finite-difference Jacobian of the whole map (z_alpha, z_beta) -> (alpha, beta).
    def x_of(z):
        v, _ = layout.constrain(z)
        return np.array([v["alpha"], v["beta"]])

    eps = 1e-6
    jac = np.column_stack([(x_of(z + eps * e) - x_of(z - eps * e)) / (2 * eps) for e in np.eye(2)])
    assert jac[0, 1] == 0.0
    assert log_jac == pytest.approx(np.log(abs(np.linalg.det(jac))), abs=1e-8)


@pytest.mark.parametrize("backend", ["autograd", "numba"])
def test_an_empty_interval_has_density_zero(backend):
    """Where the bounds leave no room (high <= low) the log density is -inf, with a finite
    gradient, not nan."""

    def logp(p):
        return -0.5 * (p["a"] ** 2 + (p["b"] - 1) ** 2) - 0.1 * p["x"] ** 2

    params = {"a": hm.real(), "b": hm.real(),
              "x": hm.interval(lambda p: p["a"], lambda p: p["b"])}  # fmt: skip
    model = hm.Model(logp, params, backend=backend)
    assert model.backend == backend
    z = np.array([[0.0, 1.0, 0.3], [1.0, 0.5, 0.3], [1.0, 1.0, 0.0]])
    lp, grad = model.log_prob_and_grad(z)
    assert np.isfinite(lp[0]) and np.all(lp[1:] == -np.inf)
    assert np.all(np.isfinite(grad))


def test_a_bound_written_for_one_point_is_evaluated_point_by_point():
    """A bound that indexes a block's own axis from the front does not take the chains'
    leading axes: autograd evaluates it one chain at a time, and the reported draws are
    right."""

    def logp(p):
        return -0.5 * anp.sum(p["w"] ** 2) - p["x"]

    params = {"w": hm.real(2), "x": hm.lower(lambda p: p["w"][0])}
    with pytest.warns(hm.RowByRowWarning):
        model = hm.Model(logp, params, backend="autograd")
    z = np.random.default_rng(1).normal(size=(3, 3))
    x = model.constrain(z)
    np.testing.assert_allclose(x[:, 2], x[:, 0] + np.exp(z[:, 2]))


def _mean_and_mcse(result, names):
    table = result.summary()
    return table.loc[names, "mean"].to_numpy(), table.loc[names, "mcse"].to_numpy()


def test_sampling_agrees_with_the_hand_reparameterisation():
    """Default hm.sample on the dependent interval and on the model written by hand (a
    fraction u in (0, 1), beta = u (1 - alpha), the Jacobian log(1 - alpha) added): posterior
    means agree by MCSE z-scores, and with the exact ones (a Dirichlet(n + 1)), within a
    Bonferroni bound over the comparisons."""
    n1, n2, n3 = COUNTS

    def logp(p):
        a, b = p["alpha"], p["beta"]
        return n1 * anp.log(a) + n2 * anp.log(b) + n3 * anp.log(1 - a - b)

    def by_hand(p):
        a = p["alpha"]
        b = p["u"] * (1 - a)
        return n1 * anp.log(a) + n2 * anp.log(b) + n3 * anp.log(1 - a - b) + anp.log(1 - a)

    model = hm.Model(logp, {"alpha": hm.interval(0, 1),
                            "beta": hm.interval(0, lambda p: 1 - p["alpha"])})  # fmt: skip
    hand = hm.Model(by_hand, {"alpha": hm.interval(0, 1), "u": hm.interval(0, 1)},
                    generated=lambda p: {"beta": p["u"] * (1 - p["alpha"])})  # fmt: skip
    assert model.backend == "numba"
    run = hm.sample(model, seed=11, progress=False)
    other = hm.sample(hand, seed=12, progress=False)
    draws = run.draws
    assert np.all((draws[..., 1] > 0) & (draws[..., 1] < 1 - draws[..., 0]))
    m1, s1 = _mean_and_mcse(run, ["alpha", "beta"])
    m2, s2 = _mean_and_mcse(other, ["alpha", "beta"])
    exact = np.array([n1 + 1, n2 + 1]) / (n1 + n2 + n3 + 3)
    z = np.concatenate([(m1 - m2) / np.sqrt(s1**2 + s2**2), (m1 - exact) / s1])
    bound = norm.ppf(1 - 0.01 / (2 * len(z)))
    assert np.all(np.abs(z) < bound), (z, bound)


def test_bounds_that_read_unknown_blocks_or_each_other_are_refused():
    with pytest.raises(ValueError, match=r"upper bound of 'beta' reads p\['alpah'\], which is "
                                         "not a block"):  # fmt: skip
        hm.Model(lambda p: 0.0, {"alpha": hm.interval(0, 1),
                                 "beta": hm.interval(0, lambda p: 1 - p["alpah"])})  # fmt: skip
    with pytest.raises(ValueError, match=r"blocks \['a', 'b'\] read each other in a cycle "
                                         r"\(a -> b -> a"):  # fmt: skip
        hm.Model(lambda p: 0.0, {"a": hm.lower(lambda p: p["b"]), "b": hm.upper(lambda p: p["a"])})
    with pytest.raises(ValueError, match="the bounds of 'a' read 'a' itself"):
        hm.ParameterLayout({"a": hm.interval(lambda p: p["a"] - 1, 2)})
    with pytest.raises(ValueError, match="interval needs lower < upper"):
        hm.interval(1, 0)
    with pytest.raises(ValueError, match="lower must be a finite number or a function"):
        hm.interval(np.inf, lambda p: 1.0)
    shape = r"upper bound of 'b' returned shape \(3,\), which does not broadcast .* \(2,\)"
    with pytest.raises(ValueError, match=shape):
        hm.ParameterLayout({"a": hm.real(3), "b": hm.upper(lambda p: p["a"], 2)})
    with pytest.raises(ValueError, match=r"upper bound of 'b' is .* it must be finite"):
        hm.ParameterLayout({"a": hm.real(), "b": hm.upper(lambda p: np.log(p["a"] - 1))})


def test_a_value_outside_its_dependent_bounds_is_named_with_the_bounds_there():
    layout = hm.ParameterLayout(DEPENDENT)
    good = {"alpha": 0.5, "beta": 0.2, "gamma": [0.3, 1.0], "delta": -1.0}
    layout.unconstrain(good)
    message = r"beta must be in \(0, its upper bound\), got 0.6 \(its bounds there: lower 0.0, "
    with pytest.raises(ValueError, match=message + "upper 0.5"):
        layout.unconstrain({**good, "beta": 0.6})
    with pytest.raises(ValueError, match=r"gamma\[0\] = 0.1 \(its bounds there: lower 0.2"):
        layout.unconstrain({**good, "gamma": [0.1, 1.0]})


def test_the_constraint_describes_itself():
    constraint = DEPENDENT["beta"].constraint
    assert isinstance(constraint, DependentBounds)
    assert constraint.description == "in (0, its upper bound)"
    assert repr(constraint) == "DependentBounds(0, upper=<lambda>)"
    # Without the other blocks only the numeric bound is known.
    np.testing.assert_array_equal(constraint.contains(np.array([-0.1, 0.5, 3.0])),
                                  [False, True, True])  # fmt: skip
    with pytest.raises(TypeError, match=r"ParameterLayout\.constrain"):
        constraint.forward(np.zeros(2))


# ---------------------------------------------------------------- JAX: float32 data


def test_jax_float32_data_in_a_scan_are_refused_naming_them():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    # As jnp.asarray makes them before JAX's 64-bit mode is switched on.
    y32 = jnp.asarray(np.random.default_rng(1).normal(size=30), dtype=jnp.float32)

    def logp(p):
        def step(var, yt):
            var = 0.1 + p["a"] * yt**2 + 0.5 * var
            return var, -0.5 * yt**2 / var - 0.5 * jnp.log(var)

        _, terms = jax.lax.scan(step, jnp.var(y32), y32)
        return jnp.sum(terms)

    named = r"cannot be traced in float64 .* it reads y32 \(float32, shape \(30,\)\)"
    with pytest.raises(ValueError, match=named + r".*dtype=jnp\.float64"):
        hm.Model(logp, {"a": hm.interval(0, 0.5)}, backend="jax")
    # Created in float64, the same model builds and runs.
    y64 = jnp.asarray(np.asarray(y32), dtype=jnp.float64)

    def logp64(p):
        def step(var, yt):
            var = 0.1 + p["a"] * yt**2 + 0.5 * var
            return var, -0.5 * yt**2 / var - 0.5 * jnp.log(var)

        _, terms = jax.lax.scan(step, jnp.var(y64), y64)
        return jnp.sum(terms)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = hm.Model(logp64, {"a": hm.interval(0, 0.5)}, backend="jax")
    assert np.isfinite(model.log_prob(np.zeros(1)))


def test_jax_float32_data_that_trace_warn_of_their_precision():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    data = {"y": jnp.asarray([0.1, 0.2, 0.3], dtype=jnp.float32)}

    def logp(x):
        return -0.5 * jnp.sum((data["y"] - x[0]) ** 2)

    with pytest.warns(UserWarning, match=r"float32 data, rounded .* data\['y'\] \(float32"):
        target = hm.Target.from_jax(logp, dim=1)
    assert target.log_prob(np.zeros(1)) == pytest.approx(-0.5 * 0.14, rel=1e-6)


def test_the_checks_and_the_prior_read_a_dependent_bound_at_each_draw():
    """The improper-posterior check recovers the coordinates of a block at its own draws'
    bounds, and a prior draw outside the bound its other blocks give is refused, naming the
    block."""
    import hamiltonia as hm
    from hamiltonia.diagnostics.checks import _coordinates

    params = {"a": hm.interval(0, 1), "b": hm.interval(0, lambda p: 1 - p["a"])}

    def prior(rng):
        a = rng.uniform(0, 1)
        return {"a": a, "b": rng.uniform(0, 1) * (1 - a) * 1.5}  # past 1 - a at times

    model = hm.Model(lambda p: -0.5 * p["a"] ** 2, params, prior=prior)
    z = np.random.default_rng(1).normal(size=(2, 5, 2))
    result = type("R", (), {"_target": model, "names": model.reported_names})()
    result.draws = np.asarray(model.constrain(z.reshape(10, 2))).reshape(2, 5, 2)
    back, _, _ = _coordinates(result)
    np.testing.assert_allclose(back, z, rtol=1e-8, atol=1e-10)
    with pytest.raises(ValueError, match="'b' outside its support"):
        model.prior_draws(50, [np.random.default_rng(2)])
