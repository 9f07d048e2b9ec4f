"""Built-in targets: gradients, Hessian-vector products, batching and exact moments."""

import numpy as np
import pytest

import hamiltonia as hm

BUILTIN = [
    "banana",
    "gaussian-d10",
    "gaussian-d50",
    "gaussian-d100",
    "funnel-d25",
    "correlated-gaussian",
    "student-t",
]


@pytest.fixture(params=BUILTIN, ids=str)
def target(request):
    return hm.targets.get(request.param)


def _points(target, n=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, target.dim)) * 0.7


def _central_difference(f, x, h=1e-5):
    out = []
    for i in range(x.shape[-1]):
        e = np.zeros_like(x)
        e[..., i] = h
        out.append((f(x + e) - f(x - e)) / (2 * h))
    return np.stack(out, axis=-1)


def test_gradient_matches_finite_differences(target):
    x = _points(target)
    lp, grad = target.log_prob_and_grad(x)
    np.testing.assert_allclose(lp, target.log_prob(x), rtol=1e-14, atol=1e-12)
    fd = _central_difference(target.log_prob, x)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * np.max(np.abs(grad)))


def test_hvp_matches_finite_differences_of_gradient(target):
    x = _points(target, seed=1)
    v = np.random.default_rng(2).normal(size=x.shape)
    h = 1e-6
    fd = (target.grad_log_prob(x + h * v) - target.grad_log_prob(x - h * v)) / (2 * h)
    hv = target.hvp(x, v)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-6 * np.max(np.abs(hv)))
    assert target.has_hvp


def test_batched_equals_row_by_row(target):
    x = _points(target, n=4).reshape(2, 2, target.dim)
    lp, grad = target.log_prob_and_grad(x)
    assert lp.shape == (2, 2) and grad.shape == x.shape
    for i in range(2):
        for j in range(2):
            lp1, g1 = target.log_prob_and_grad(x[i, j])
            np.testing.assert_allclose(lp[i, j], lp1, rtol=1e-13)
            np.testing.assert_allclose(grad[i, j], g1, rtol=1e-13, atol=1e-13)


def test_names_and_moments(target):
    assert len(target.names) == target.dim == len(set(target.names))
    moments = target.exact_moments
    assert moments.mean.shape == moments.var.shape == (target.dim,)
    assert np.all(moments.var > 0)


def test_banana_moments_match_grid_quadrature():
    """The banana's exact moments (1-D quadrature using conjugacy in w1) agree with a plain
    2-D grid quadrature of the unnormalised density."""
    target = hm.targets.get("banana")
    # Wide enough that the cut-off tails hold less than 1e-12 of the mass.
    w1 = np.linspace(-10, 6, 3201)
    w2 = np.linspace(-7, 7, 2801)
    grid = np.stack(np.meshgrid(w1, w2, indexing="ij"), axis=-1)
    lp = target.log_prob(grid)
    dens = np.exp(lp - lp.max())
    z = dens.sum()
    m1 = np.sum(dens * grid[..., 0]) / z
    m2 = np.sum(dens * grid[..., 1]) / z
    v1 = np.sum(dens * (grid[..., 0] - m1) ** 2) / z
    v2 = np.sum(dens * (grid[..., 1] - m2) ** 2) / z
    exact = target.exact_moments
    np.testing.assert_allclose(exact.mean, [m1, m2], atol=1e-6)
    np.testing.assert_allclose(exact.var, [v1, v2], rtol=1e-6)


def test_banana_data_follow_the_spec():
    target = hm.targets.get("banana")
    assert target.y.shape == (100,)
    expected = np.random.default_rng(0).normal(1.0, 2.0, size=100)
    np.testing.assert_array_equal(target.y, expected)


def test_gaussian_family_and_fixed_sizes():
    g7 = hm.targets.get("gaussian", dim=7)
    assert g7.dim == 7
    d10 = hm.targets.get("gaussian-d10")
    expected = np.exp(np.random.default_rng(1).normal(size=10))
    np.testing.assert_allclose(d10.exact_moments.var, expected**2)
    assert hm.targets.get("gaussian-d50").dim == 50
    assert hm.targets.get("gaussian-d100").dim == 100


def test_funnel_counts_v_plus_latents():
    funnel = hm.targets.get("funnel-d25")
    assert funnel.dim == 26 and funnel.names[0] == "v"
    assert funnel.exact_moments.var[0] == 9.0
    np.testing.assert_allclose(funnel.exact_moments.var[1:], np.exp(4.5))


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("gaussian", {"dim": 0}, "dim"),
        ("funnel", {"scale": -1.0}, "scale"),
        ("correlated-gaussian", {"rho": 1.5}, "rho"),
        ("student-t", {"nu": 2.0}, "nu"),
        ("student-t", {"rho": -1.0}, "rho"),
        ("banana", {"n_obs": 0}, "n_obs"),
    ],
)
def test_bad_target_parameters_name_the_parameter(name, params, match):
    with pytest.raises(ValueError, match=match):
        hm.targets.get(name, **params)


def _builtin_names():
    return [
        name
        for name in hm.targets.names()
        if hm.targets.registry.factory(name).__module__.startswith("hamiltonia.targets.")
    ]


def test_every_builtin_factory_takes_a_setting_and_refuses_others():
    """``setting`` is checked before anything is built or loaded (no data needed here)."""
    names = _builtin_names()
    assert {"banana", "jdp-sp500", "bnn-power", "blr-ard-audit", "bnn-ard-power"} <= set(names)
    for name in names:
        assert "setting" in hm.targets.registry.options(name), name
        with pytest.raises(ValueError, match=r"setting must be one of 'default', 'paper'"):
            hm.targets.get(name, setting="bogus")


def test_synthetic_paper_settings_are_the_defaults(target):
    """The thesis's constants are the defaults (banana N = 100, sigma_y^2 = 4, sigma_w^2 = 1;
    funnel sigma = 3; Gaussian scales log-normal with a seed the thesis does not give)."""
    paper = hm.targets.get(target.registered_name, setting="paper")
    assert paper.setting == "paper" and target.setting == "default"
    assert paper.description.endswith("[setting: paper]")
    assert paper.registered_params == {"setting": "paper"}
    x = _points(target)
    np.testing.assert_array_equal(paper.log_prob(x), target.log_prob(x))


def test_the_student_t_is_scipys_and_its_kernel_is_its_density():
    """Its log density is scipy's up to the normalising constant, its compiled kernel gives
    the same value and gradient, and its moments are nu / (nu - 2) times the scale."""
    from scipy import stats

    target = hm.targets.get("student-t", dim=4, nu=7.0, rho=0.3)
    x = _points(target, n=5, seed=3) * 3
    reference = stats.multivariate_t(np.zeros(4), target.scale_matrix, df=7.0).logpdf(x)
    offset = reference - target.log_prob(x)
    np.testing.assert_allclose(offset, offset[0], rtol=0, atol=1e-12)
    kernel = target.numba_kernel()
    lp, grad = target.log_prob_and_grad(x)
    for row in range(5):
        g = np.empty(4)
        value = kernel.function(x[row].copy(), g, kernel.fdata, kernel.idata)
        np.testing.assert_allclose(value, lp[row], rtol=1e-13)
        np.testing.assert_allclose(g, grad[row], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(target.exact_moments.var, 7.0 / 5.0)
