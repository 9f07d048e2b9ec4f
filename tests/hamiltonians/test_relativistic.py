"""Relativistic HMC (Lu et al. 2017), the built-in Hamiltonian written only as kernels
(``hamiltonia/hamiltonians/relativistic.py``): its maths against an independent Python form,
the test kit on it and on broken copies of it, its exact momentum draws, long runs that
recover known moments, the command line, its refusals, and a resumed run.

Each statistical check has a fixed seed and a threshold from a family-wise level, never a
number tuned until it passes.
"""

from __future__ import annotations

import ast
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.compiled.roles import own
from hamiltonia.hamiltonians.relativistic import (
    RelativisticHamiltonian,
    lorentz_factor,
    relativistic_hamiltonian,
)
from hamiltonia.refresh import provided
from hamiltonia.refresh.momentum import MetropolisPartialRefresh, PartialRefresh
from hamiltonia.testing import (
    assert_moments_recovered,
    check_energy_error_order,
    check_gradient,
    check_integrator,
    check_invariance,
    correlated_gaussian,
)
from hamiltonia.testing.integrators import ORDER_N_STEPS, ORDER_REFINEMENT
from hamiltonia.testing.invariance import INVARIANCE_ALPHA
from hamiltonia.testing.momentum import virial_z
from tests.interrupting import interrupted
from tests.testing.relativistic import RelativisticHamiltonian as PythonRelativistic

#: Regimes of (mass, light_speed): m c^2 = 1; heavy and slow; light and fast; and m c^2 = 100,
#: where the paper's Gamma(d, 1/c) proposal would accept fewer than one draw in 10^39.
REGIMES = [(1.0, 1.0), (2.0, 0.5), (0.5, 3.0), (1.0, 10.0)]


@pytest.fixture
def registered(monkeypatch):
    """``hamiltonian="relativistic"`` by name: the installed entry point, or (before it is
    installed) the factory registered for this test."""
    registry = hm.hamiltonians.registry
    monkeypatch.setattr(registry, "_extra", dict(registry._extra))
    if "relativistic" not in registry.names():
        hm.hamiltonians.register("relativistic", relativistic_hamiltonian)


def _gaussian(dim=3):
    """The kit's correlated Gaussian: exact moments and exact draws."""
    return correlated_gaussian(dim)


def _sampler(hamiltonian, refresh=None, step_size=0.8):
    return hm.HamiltonianSampler(
        hamiltonian, hm.StaticLength(5), refresh=refresh or hm.FullRefresh(), step_size=step_size
    )


def _generators(n, seed=0):
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]


# -- the maths: one form, the kernels, against an independent Python form


@pytest.mark.parametrize(("mass", "light_speed"), REGIMES)
def test_the_kernels_give_the_python_forms_maths(mass, light_speed):
    """The base class's Python methods call the kernels; they agree to rounding with the
    tests' own Python-only relativistic Hamiltonian (``tests/testing/relativistic.py``)."""
    target = hm.targets.get("gaussian", dim=4)
    kernels = RelativisticHamiltonian(target, mass, light_speed)
    python = PythonRelativistic(target, mass, light_speed)
    assert kernels.without_python_form()  # written once: no Python kinetic, velocity, draw
    p = np.random.default_rng(0).normal(size=(6, 4)) * np.array([[0.1], [1], [3], [10], [1e3], [0]])
    np.testing.assert_allclose(kernels.velocity(p), python.velocity(p), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(kernels.kinetic(p), python.kinetic(p), rtol=1e-14)
    assert np.all(np.linalg.norm(kernels.velocity(p), axis=1) < light_speed)  # below c


class MomentumDensity(hm.Target):
    """:math:`e^{-K(p)}` as a target: its gradient is minus the velocity, so the kit's
    gradient check compares the ``velocity`` kernel with differences of the ``kinetic``
    one."""

    def __init__(self, hamiltonian):
        super().__init__(hamiltonian.dim)
        self.hamiltonian = hamiltonian

    def log_prob_and_grad(self, p):
        rows = np.atleast_2d(p)
        lp, grad = -self.hamiltonian.kinetic(rows), -self.hamiltonian.velocity(rows)
        return (lp[0], grad[0]) if np.ndim(p) == 1 else (lp, grad)


@pytest.mark.parametrize(("mass", "light_speed"), REGIMES)
def test_the_velocity_is_the_gradient_of_the_kinetic_energy(mass, light_speed):
    momentum = MomentumDensity(RelativisticHamiltonian(_gaussian(), mass, light_speed))
    assert check_gradient(momentum) < 1


# -- the momentum draws are exact


def _radius_cdf(mass, light_speed, dim, upper):
    """The CDF of :math:`|p|`, density :math:`\\propto r^{d-1} e^{-K(r)}`, on ``[0, upper]``:
    Simpson's rule on a grid fine enough to be exact at the KS test's resolution."""
    mc2 = mass * light_speed**2

    def density(r):
        return r ** (dim - 1) * np.exp(mc2 - np.sqrt(mc2**2 + (light_speed * r) ** 2))

    grid = np.linspace(0.0, upper, 20_001)
    cumulative = integrate.cumulative_simpson(density(grid), x=grid, initial=0.0)
    total = integrate.quad(density, 0, np.inf)[0]
    return lambda r: np.interp(r, grid, cumulative / total)


#: Draws of each exactness test, and the tests of the module's momentum family
#: (:func:`test_the_momentum_draws_are_exact`): per regime and dimension, the radius's KS
#: test and the virial z-score of every coordinate and of the sum.
N_DRAWS = 10_000
DIMS = (1, 3)
N_MOMENTUM_TESTS = len(REGIMES) * sum(1 + d + 1 for d in DIMS)
Z_MOMENTUM = stats.norm.isf(INVARIANCE_ALPHA / (2 * N_MOMENTUM_TESTS))


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize(("mass", "light_speed"), REGIMES)
def test_the_momentum_draws_are_exact(mass, light_speed, dim):
    """The radius against its CDF (Kolmogorov-Smirnov), and the virial identity, under one
    Bonferroni-corrected level for the module's family of such tests. At m c^2 = 100 the
    draws return at once: the tangent at the mode accepts most proposals."""
    ham = RelativisticHamiltonian(hm.targets.get("gaussian", dim=dim), mass, light_speed)
    p = ham.sample_momentum(_generators(N_DRAWS))
    radius = np.linalg.norm(p, axis=1)
    pvalue = stats.kstest(radius, _radius_cdf(mass, light_speed, dim, radius.max())).pvalue
    assert pvalue > INVARIANCE_ALPHA / N_MOMENTUM_TESTS
    assert np.all(np.abs(virial_z(ham, p)) < Z_MOMENTUM)


# -- the test kit: invariance (with the momentum carried over, and tested) and the order


@pytest.mark.parametrize(
    "refresh", [hm.FullRefresh(), MetropolisPartialRefresh(0.9)], ids=["full", "metropolis-partial"]
)
def test_relativistic_hmc_leaves_the_target_invariant(refresh):
    """2,000 chains from exact draws, the momentum from its law, ten transitions in the
    compiled chain. With the tested partial refresh the momentum persists, and the kit tests
    its coordinates and its kinetic energy against fresh draws too."""
    target = _gaussian()
    report = check_invariance(target, _sampler(RelativisticHamiltonian(target), refresh))
    assert 0.5 < report.acceptance_rate < 1.0
    assert (report.kinetic_ks_pvalue is not None) == isinstance(refresh, MetropolisPartialRefresh)


def test_the_leapfrog_integrates_it_to_second_order():
    """The kit's integrator checks, the leapfrog on the banana (reversibility, volume, the
    contract, the order). The non-quadratic kinetic energy's third-order term still bends
    the slope over the default steps; the order is measured once finer."""
    banana = RelativisticHamiltonian(hm.targets.get("banana"))
    finer = tuple(ORDER_REFINEMENT * n for n in ORDER_N_STEPS)
    check_integrator(hm.Leapfrog(), banana, order_options={"n_steps": finer})
    check_integrator(hm.TwoStage(), banana)  # refines by itself where the slope misses


# -- negative controls: broken copies the kit must reject


def gaussian_draw_kernel(ctx, q, p):
    """A Gaussian momentum with the relativistic energy: the wrong law."""
    for i in range(p.shape[0]):
        p[i] = ctx.rng.standard_normal()


def unrejected_draw_kernel(ctx, q, p):
    """The paper's proposal Gamma(d, 1/c) taken as it comes, the rejection forgotten."""
    d = p.shape[0]
    r = ctx.rng.gamma(d, 1.0 / own.light_speed)
    norm = 0.0
    for i in range(d):
        p[i] = ctx.rng.standard_normal()
        norm += p[i] * p[i]
    for i in range(d):
        p[i] *= r / math.sqrt(norm)


def double_velocity_kernel(ctx, q, p, out):
    """Twice the velocity: the flow of 2K, not of K."""
    scale = 2.0 / (own.mass * lorentz_factor(p, own.mass, own.light_speed))
    for i in range(p.shape[0]):
        out[i] = scale * p[i]
    return out


def double_kinetic_kernel(ctx, q, p, v):
    """Twice the kinetic energy, with the draws and the velocity of K."""
    return 2.0 * own.mass * own.light_speed**2 * lorentz_factor(p, own.mass, own.light_speed)


def broken(role, kernel):
    """The relativistic Hamiltonian with the kernel of ``role`` replaced by ``kernel``."""

    class Broken(RelativisticHamiltonian):
        def compiled(self, dim):
            kernels = super().compiled(dim)
            kernels.functions[role] = kernel
            return kernels

    Broken.__name__ = Broken.__qualname__ = f"Broken{kernel.__name__.title().replace('_', '')}"
    return Broken


@pytest.mark.parametrize(
    "refresh", [hm.FullRefresh(), MetropolisPartialRefresh(0.9)], ids=["full", "metropolis-partial"]
)
@pytest.mark.parametrize(
    ("role", "kernel"),
    [("draw_momentum", gaussian_draw_kernel), ("kinetic", double_kinetic_kernel)],
)
def test_the_invariance_check_rejects_a_wrong_momentum_law(role, kernel, refresh):
    """Draws of another law than e^{-K}, or an energy of another K than the draws': the
    Metropolis test then keeps another distribution, and the positions show it."""
    target = _gaussian()
    with pytest.raises(AssertionError, match=r"does not leave .* invariant"):
        check_invariance(target, _sampler(broken(role, kernel)(target), refresh))


def test_the_virial_check_rejects_draws_the_invariance_check_misses():
    """Forgetting the rejection draws Gamma(d, 1/c) radii, whose weight e^{cr - K(r)} lies
    in [e^{-1}, 1] at m = c = 1: ten transitions from such momenta move the positions too
    little for the invariance check to see (it passes), while the virial identity, which
    reads the draws alone, fails by many standard errors."""
    target = _gaussian()
    wrong = broken("draw_momentum", unrejected_draw_kernel)(target)
    assert check_invariance(target, _sampler(wrong), check=False).passed
    assert np.max(np.abs(virial_z(wrong, wrong.sample_momentum(_generators(N_DRAWS))))) > Z_MOMENTUM


def test_a_wrong_velocity_keeps_the_target_and_fails_the_order_check():
    """A velocity wrong by a factor integrates the flow of another Hamiltonian, 2K: the
    trajectory is still reversible and volume preserving, so the Metropolis test on H still
    keeps the target, and the invariance check rightly passes. The energy error of H then
    does not vanish as the step shrinks: the order check fails, and so does the gradient
    check of the velocity against the kinetic energy."""
    target = _gaussian()
    wrong = broken("velocity", double_velocity_kernel)
    assert check_invariance(target, _sampler(wrong(target))).passed
    with pytest.raises(AssertionError, match=r"falls as step_size\*\*-?0\.0\d, not as step_si"):
        check_energy_error_order(hm.Leapfrog(), wrong(hm.targets.get("banana")))
    with pytest.raises(AssertionError, match="MomentumDensity: the gradient of"):
        check_gradient(MomentumDensity(wrong(target)))


# -- runs: compiled, recovering known moments


#: The recovery runs below: two samplers, a mean and a variance per coordinate of the 5-d
#: Gaussian, all under one family-wise level.
RECOVERY_SAMPLERS = {"hmc": {}, "nuts": {"metric": "identity"}}
RECOVERY_DIM = 5
Z_RECOVERY = stats.norm.isf(INVARIANCE_ALPHA / (2 * 2 * RECOVERY_DIM * len(RECOVERY_SAMPLERS)))


@pytest.mark.parametrize("sampler", list(RECOVERY_SAMPLERS))
def test_a_run_recovers_the_moments_compiled(sampler, registered):
    """hmc and nuts with ``hamiltonian="relativistic"`` on the 5-d Gaussian of scales 0.27 to
    2.5, step size found and adapted in warm-up (the search calls the kernels from Python),
    run compiled with no fallback; each mean and variance within its z-score bound."""
    target = hm.targets.get("gaussian", dim=RECOVERY_DIM)
    with warnings.catch_warnings():
        warnings.simplefilter("error", hm.FallbackWarning)
        run = hm.sample(
            target,
            sampler=sampler,
            hamiltonian="relativistic",
            chains=4,
            warmup=1000,
            draws=4000,
            seed=0,
            progress=False,
            **RECOVERY_SAMPLERS[sampler],
        )
    assert run.attrs["compiled"] is True
    assert run.attrs["path_reason"] == "compiled: every part has a compiled counterpart"
    assert_moments_recovered(run, target.exact_moments, threshold=Z_RECOVERY)


def test_the_numpy_path_is_refused_with_the_reason():
    with pytest.raises(
        ValueError,
        match=r"compiled=False was asked but hamiltonian "
        r"RelativisticHamiltonian .* is written only as a kernel",
    ):
        hm.sample(
            "banana",
            sampler="hmc",
            hamiltonian=RelativisticHamiltonian,
            compiled=False,
            chains=1,
            warmup=10,
            draws=10,
            progress=False,
        )


# -- by name, and from the command line


def test_the_registered_name_builds_it(registered):
    target = hm.targets.get("banana")
    built = hm.hamiltonians.get("relativistic", target, mass=2.0, light_speed=0.5)
    assert isinstance(built, RelativisticHamiltonian)
    assert (built.mass, built.light_speed) == (2.0, 0.5)
    assert hm.hamiltonians.options("relativistic") == ["mass", "light_speed"]


def test_the_entry_point_is_installed():
    """``relativistic = hamiltonia.hamiltonians.relativistic:relativistic_hamiltonian`` in
    ``setup.cfg``, group ``hamiltonia.hamiltonians``, the path a plugin takes."""
    registry = hm.hamiltonians.registry
    assert "relativistic" in registry.names(), "setup.cfg lacks the entry point (reinstall?)"
    assert registry.factory("relativistic") is relativistic_hamiltonian
    assert registry.source("relativistic") == "hamiltonia"


def test_the_command_line_samples_with_it(registered, tmp_path, capsys):
    path = tmp_path / "run.nc"
    argv = "sample banana --sampler hmc -O hamiltonian=relativistic --chains 2 --warmup 200"
    argv = [*argv.split(), "--draws", "200", "--seed", "0", "--no-progress", "--output", str(path)]
    assert main(argv) == 0
    assert "compiled (every part has a compiled counterpart)" in capsys.readouterr().out
    run = hm.load(path)
    assert run.attrs["compiled"] is True and run.draws.shape == (2, 200, 2)


def test_nuts_runs_it_without_its_default_metric(registered, capsys):
    """nuts adapts a diagonal metric by default, which the relativistic kinetic energy does
    not have: the default is dropped (no metric adapted), and a metric the user asks for is
    refused, naming what to give."""
    argv = "sample banana --sampler nuts -O hamiltonian=relativistic --chains 2 --warmup 100"
    argv = [*argv.split(), "--draws", "100", "--seed", "0", "--no-progress"]
    assert main(argv) == 0
    assert main([*argv, "-O", "metric=dense"]) == 2
    assert (
        "takes no metric, so metric='dense' cannot be given with it: give "
        "metric='identity'" in capsys.readouterr().err
    )
    sampler = hm.samplers.build("nuts", hm.targets.get("banana"), hamiltonian="relativistic")
    assert [type(t).__name__ for t in sampler.tuners] == ["DualAveraging"]


# -- refusals


@pytest.mark.parametrize("name", ["mass", "light_speed"])
@pytest.mark.parametrize("value", [0, -1.0, math.nan, math.inf, "fast", True, None])
def test_a_bad_parameter_is_refused_naming_it(name, value, registered):
    message = rf"RelativisticHamiltonian: {name} must be a (finite number > 0|positive number)"
    target = hm.targets.get("banana")
    with pytest.raises(ValueError, match=message):
        RelativisticHamiltonian(target, **{name: value})
    with pytest.raises(ValueError, match=message):
        hm.hamiltonians.get("relativistic", target, **{name: value})


def test_a_partial_refresh_is_refused_pointing_at_the_tested_one(registered):
    """The momentum is not Gaussian: the mix of a partial refresh would not keep it. The
    refusal names the Metropolis-corrected refresh, which runs."""
    target = hm.targets.get("banana")
    ham = RelativisticHamiltonian(target)
    assert provided(ham) == frozenset()
    expected = r"requires a Gaussian momentum.*RelativisticHamiltonian.*Use MetropolisPartialRe"
    with pytest.raises(ValueError, match=expected):
        _sampler(ham, PartialRefresh(0.9))
    with pytest.raises(ValueError, match=expected):
        hm.samplers.build("hmc", target, hamiltonian="relativistic", rho=0.9)
    tested = hm.samplers.build(
        "hmc", target, hamiltonian="relativistic", rho=0.9, refresh="metropolis-partial"
    )
    assert isinstance(tested.refresh, MetropolisPartialRefresh)
    assert isinstance(_sampler(ham, PartialRefresh(0.0)).refresh, PartialRefresh)  # rho = 0


def test_a_partial_refresh_forced_in_fails_the_kit_on_the_momentum():
    """Put in after the refusal, the plain partial refresh mixes a relativistic momentum
    with a fresh one: the kinetic energy of the momentum it carries over is not that of the
    draws, and the kit says so, naming the tested refresh."""
    target = _gaussian()
    forced = _sampler(RelativisticHamiltonian(target), step_size=0.6)
    forced.refresh = PartialRefresh(0.9)
    report = check_invariance(target, forced, check=False)
    assert report.kinetic_ks_pvalue < report.p_critical and not report.passed
    with pytest.raises(AssertionError, match=r"kinetic energy: p = .*MetropolisPartialRefresh"):
        check_invariance(target, forced)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"metric": "diagonal"}, r"takes no metric, so metric='diagonal' cannot be given"),
        ({"mass_volatility": 0.3}, r"takes no mass_volatility"),
        ({"field": "research"}, r"MagneticStructure needs a Hamiltonian with a Gaussian"),
        ({"shadow": "s2"}, r"cannot be combined with shadow='s2'"),
    ],
)
def test_options_it_cannot_take_are_refused(options, message, registered):
    with pytest.raises(ValueError, match=message):
        hm.samplers.build("hmc", hm.targets.get("banana"), hamiltonian="relativistic", **options)


# -- a run stopped and resumed gives the uninterrupted draws


def test_a_stopped_run_resumes_to_the_same_draws(registered, tmp_path, monkeypatch):
    from hamiltonia.runner import paths

    run = dict(
        sampler="hmc",
        hamiltonian="relativistic",
        chains=2,
        warmup=60,
        draws=40,
        seed=5,
        progress=False,
    )
    full = hm.sample("banana", **run)
    path = tmp_path / "run.nc"
    chunker = paths.Chunker
    with monkeypatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.InterruptedRunWarning)
        # Chunks of 7 iterations: the run stops where the test says, whatever the machine.
        patch.setattr(paths, "Chunker", lambda **_: chunker(first=7, largest=7))
        part = interrupted(
            patch, 2, lambda: hm.sample("banana", output=path, checkpoint_seconds=0.0, **run)
        )
    assert part.n_draws == 14
    resumed = hm.resume(path, progress=False)
    assert resumed.attrs["complete"] is True and resumed.attrs["compiled"] is True
    np.testing.assert_array_equal(resumed.draws, full.draws)
    for name, values in full.stats.items():
        np.testing.assert_array_equal(resumed.stats[name], values, err_msg=name)


# -- the tutorial's count of the part's lines


def _code_lines(source: str) -> tuple[list[int], ast.Module]:
    """The numbers of the lines of ``source`` that hold code: not blank, not a comment, not
    in a docstring."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef) and ast.get_docstring(
            node, clean=False
        ):
            first = node.body[0]
            docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines = source.splitlines()
    code = [
        n
        for n, line in enumerate(lines, 1)
        if line.strip() and not line.strip().startswith("#") and n not in docstrings
    ]
    return code, tree


def test_the_tutorial_counts_the_parts_lines_as_they_are():
    """docs/tutorial_new_hamiltonian.rst states the module's length, its lines of code and
    its lines of maths (the bodies of the kernels and their helper): they are the module's."""
    import hamiltonia.hamiltonians.relativistic as module

    source = Path(module.__file__).read_text(encoding="utf-8")
    code, tree = _code_lines(source)
    factory = "relativistic_hamiltonian"  # the registry's, no maths
    kernels = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name != factory]
    maths = [n for f in kernels for n in code if f.lineno < n <= f.end_lineno]
    page = Path(__file__).parents[2] / "docs" / "tutorial_new_hamiltonian.rst"
    text = " ".join(page.read_text(encoding="utf-8").split())
    assert f"The module is {len(source.splitlines())} lines" in text
    assert f"it is {len(code)} lines of code" in text
    assert f"**{len(maths)} lines are maths**" in text
