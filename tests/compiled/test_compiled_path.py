"""The compiled path agrees with the NumPy path, and falls back when it must."""

import itertools

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.compiled import NotCompilable, plan_for
from hamiltonia.integrators import Leapfrog
from hamiltonia.testing import assert_moments_recovered, assert_paths_agree
from hamiltonia.trajectories.metropolis import StaticLength

TARGETS = ["banana", "gaussian-d10", "funnel-d25", "correlated-gaussian"]


@pytest.mark.parametrize("name", TARGETS)
@pytest.mark.parametrize("metric", ["identity", "diagonal", "dense"])
def test_same_draws_as_numpy_path_with_a_fixed_step(name, metric):
    """Same generators, same order of draws: the paths agree to rounding error."""
    target = hm.targets.get(name)
    if metric == "diagonal":
        metric = np.linspace(0.5, 1.5, target.dim)
    elif metric == "dense":
        metric = np.eye(target.dim) * 0.8 + 0.2 / target.dim
    assert_paths_agree(
        target,
        sampler="hmc",
        chains=3,
        warmup=0,
        draws=40,
        seed=7,
        step_size=0.05,
        n_steps=10,
        metric=metric,
    )


@pytest.mark.parametrize("sampler", ["hmc", "mala"])
def test_same_dual_averaging_as_numpy_path(sampler):
    """Dual averaging runs inside the kernel exactly as the Python tuner does. It amplifies
    rounding differences (an HMC step-size change of 1e-16 grows by about an order of
    magnitude per early iteration, and the paths part ways after some 50 iterations), so the
    comparison covers the first 10 iterations. Each warm-up iteration records the step size
    it used, before the tuner's update: the warm-up's draws and statistics agree too."""
    a, _ = assert_paths_agree(
        "gaussian-d10", sampler=sampler, chains=2, warmup=10, draws=5, seed=1, save_warmup=True
    )
    assert a.warmup_stats is not None and "step_size" in a.warmup_stats


def test_a_chain_does_not_depend_on_the_others():
    three = hm.sample("banana", "hmc", chains=3, warmup=100, draws=50, seed=2, progress=False)
    one = hm.sample("banana", "hmc", chains=1, warmup=100, draws=50, seed=2, progress=False)
    assert three.attrs["compiled"] and one.attrs["compiled"]
    np.testing.assert_array_equal(three.draws[:1], one.draws)


@pytest.mark.parametrize(("name", "params"), [("banana", {}), ("gaussian", {"dim": 20})])
def test_compiled_recovers_moments(name, params):
    target = hm.targets.get(name, **params)
    run = hm.sample(
        target,
        "hmc",
        chains=4,
        warmup=1000,
        draws=20000,
        seed=11,
        progress=False,
        compiled=True,
        metric="diagonal",
        step_size_jitter=0.5,
    )
    assert_moments_recovered(run, target.exact_moments)


class MyLeapfrog(Leapfrog):
    """A user's subclass that rewrites the maths in plain Python (a leapfrog step by step,
    with no merged kicks): its parent's kernel would not do what it does, so it runs on the
    NumPy path."""

    def integrate(self, hamiltonian, state, step_size, n_steps):
        return hm.Integrator.integrate(self, hamiltonian, state, step_size, n_steps)

    def step(self, hamiltonian, state, step_size):
        eps = np.asarray(step_size)[:, None]
        p = state.p + 0.5 * eps * state.grad
        new = hamiltonian.evaluate(state.q + eps * hamiltonian.velocity(p))
        new.p = p + 0.5 * eps * new.grad
        return new


class MyCoefficients(hm.integrators.Splitting):
    """A subclass that only gives a new coefficient table: compiled with no kernel of its
    own (a leapfrog of two half steps)."""

    kicks = (0.25, 0.5, 0.25)
    drifts = (0.5, 0.5)


def test_subclass_overriding_maths_falls_back_with_a_warning_and_samples_correctly():
    """20,000 draws: the MCSE of banana's second moments rests on rare tail excursions, and
    with 10,000 draws this seed left the variance of w1 at z = -4.0 for the built-in
    leapfrog's draws as well as for this one's."""
    target = hm.targets.get("banana")
    sampler = hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(target),
        StaticLength(15),
        integrator=MyLeapfrog(),
        tuners=[hm.DualAveraging(0.8)],
    )
    with pytest.raises(
        NotCompilable, match=r"integrator MyLeapfrog .*MyLeapfrog\.(step|integrate) overrides"
    ):
        plan_for(sampler)
    with pytest.raises(ValueError, match="integrator MyLeapfrog"):
        hm.sample(target, sampler, chains=1, warmup=10, draws=10, progress=False, compiled=True)
    with pytest.warns(hm.FallbackWarning, match="integrator MyLeapfrog"):
        run = hm.sample(target, sampler, chains=4, warmup=1000, draws=20000, seed=4,
                        progress=False)  # fmt: skip
    assert run.attrs["compiled"] is False
    assert_moments_recovered(run, target.exact_moments)


class TemperedGaussian(type(hm.targets.get("gaussian", dim=2))):
    """A built-in target with a kernel, its density rewritten in Python (temperature 4):
    the inherited kernel computes the parent's density."""

    def log_prob_and_grad(self, x):
        lp, grad = super().log_prob_and_grad(x)
        return lp / 4.0, grad / 4.0

    def log_prob(self, x):
        return super().log_prob(x) / 4.0

    @property
    def exact_moments(self):
        parent = super().exact_moments
        return hm.targets.ExactMoments(parent.mean, 4.0 * parent.var)


def test_a_target_subclass_rewriting_the_density_does_not_run_the_parents_kernel():
    target = TemperedGaussian(dim=2)
    sampler = hm.samplers.build("nuts", target)
    with pytest.raises(NotCompilable, match=r"TemperedGaussian\.log_prob.* overrides"):
        plan_for(sampler)
    with pytest.warns(hm.FallbackWarning, match="inherited kernel is not used"):
        run = hm.sample(target, chains=4, warmup=500, draws=4000, seed=2, progress=False)
    assert run.attrs["compiled"] is False
    assert "overrides the density of the parent's kernel" in run.attrs["path_reason"]
    assert_moments_recovered(run, target.exact_moments)


def test_a_rewritten_density_is_found_behind_a_constructor_rows_and_a_split():
    """A Model subclass taking its temperature in its constructor, and a row target whose
    rows' density is rewritten (under a split too), do not run the parent's kernel."""
    import autograd.numpy as anp

    from hamiltonia.targets.linear import LinearRegression

    class TemperedModel(hm.Model):
        def __init__(self, beta, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.beta = beta

        def log_prob_and_grad(self, x):
            lp, grad = super().log_prob_and_grad(x)
            return self.beta * lp, self.beta * grad

    class TemperedRows(LinearRegression):
        def rows_log_prob_and_grad(self, x, start, stop, prior_share):
            lp, grad = super().rows_log_prob_and_grad(x, start, stop, prior_share)
            return 0.25 * lp, 0.25 * grad

    model = TemperedModel(0.25, lambda p: -0.5 * anp.sum(p["x"] ** 2, axis=-1),
                          {"x": hm.real(2)}, backend="numba")  # fmt: skip
    X = np.random.default_rng(0).normal(size=(30, 2))
    rows = TemperedRows(X, X @ np.array([1.0, -1.0]))
    rewritten = "TemperedRows.rows_log_prob_and_grad"
    cases = [(model, "nuts", "TemperedModel.log_prob_and_grad"), (rows, "nuts", rewritten),
             (rows, "split-hmc", rewritten)]  # fmt: skip
    for target, sampler, stale in cases:
        smp = hm.samplers.build(sampler, target)
        with pytest.raises(NotCompilable, match=stale):
            plan_for(smp)
    # Their parents keep their kernels.
    plan_for(hm.samplers.build("split-hmc", LinearRegression(X, X @ np.array([1.0, -1.0]))))


def test_a_part_of_an_abstract_base_has_no_compiled_counterpart_and_says_so():
    class MyRefresh(hm.MomentumRefresh):
        def refresh(self, ham, state, rngs, step_size=None):
            return state.with_momentum(ham.sample_momentum(rngs, state.aux))

    target = hm.targets.get("gaussian", dim=2)
    sampler = hm.HamiltonianSampler(hm.EuclideanHamiltonian(target), StaticLength(5),
                                    refresh=MyRefresh(), step_size=0.5)  # fmt: skip
    with pytest.raises(NotCompilable, match=r"^refresh MyRefresh has no compiled counterpart$"):
        plan_for(sampler)


def test_subclass_with_only_a_table_runs_compiled():
    target = hm.targets.get("banana")
    sampler = hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(target), StaticLength(5), integrator=MyCoefficients(),
        step_size=0.05,
    )  # fmt: skip
    _, b = assert_paths_agree(target, sampler, chains=2, warmup=0, draws=30, seed=3)
    assert np.all(b.stats["n_grad"] == 10)  # two stages a step


def test_target_without_kernel_runs_numpy_path():
    import autograd.numpy as anp

    target = hm.Target.from_logp(lambda x: -0.5 * anp.sum(x**2), dim=2, backend="autograd")
    run = hm.sample(target, "hmc", chains=2, warmup=20, draws=20, seed=0, progress=False)
    assert run.attrs["compiled"] is False
    # Asked for, the compiled chain runs and calls the target back (issue 27).
    run = hm.sample(target, "hmc", chains=2, warmup=20, draws=20, progress=False, compiled=True)
    assert run.attrs["compiled"] is True
    assert "called back" in run.attrs["path_reason"]


def _nan_kernel(q, grad, fdata, idata):
    # A standard normal whose log density is NaN beyond q0 > 1.
    lp = 0.0
    for i in range(q.shape[0]):
        grad[i] = -q[i]
        lp -= 0.5 * q[i] * q[i]
    if q[0] > 1.0:
        return np.nan
    return lp


class NanBeyondOne(hm.Target):
    def __init__(self):
        super().__init__(2)

    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        lp = np.where(x[..., 0] > 1.0, np.nan, -0.5 * np.sum(x**2, axis=-1))
        return lp, -x

    def numba_kernel(self):
        from hamiltonia.compiled import NumbaTarget

        return NumbaTarget.build(_nan_kernel, [0.0])


def test_nan_in_compiled_kernel_is_a_divergent_rejection():
    run = hm.sample(
        NanBeyondOne(),
        "hmc",
        chains=2,
        warmup=200,
        draws=300,
        seed=0,
        progress=False,
        initial=np.zeros(2),
        compiled=True,
    )
    assert run.attrs["compiled"]
    assert np.all(np.isfinite(run.draws)) and np.all(run.draws[..., 0] <= 1.0)
    assert run.stats["diverging"].sum() > 0
    assert not np.any(run.stats["diverging"] & run.stats["accepted"])


def test_bad_compiled_option():
    with pytest.raises(ValueError, match="compiled"):
        hm.sample("banana", compiled="yes", progress=False)


def _synthetic_logistic(n_features: int, seed: int = 0):
    from hamiltonia.targets.logistic import LogisticRegression

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, n_features))
    beta = np.linspace(1.0, -0.5, n_features)
    y = (rng.random(300) < 1 / (1 + np.exp(-(X @ beta)))).astype(float)
    return LogisticRegression(X, y)


@pytest.mark.parametrize("n_features", [3, 4, 5, 6])
def test_logistic_regression_kernel_equals_numpy(n_features):
    """The compiled BLR log density equals the NumPy one; the kernel combines four columns
    per pass over the rows, so dimensions 4 to 7 leave every remainder (a synthetic data
    set, so no data files are needed)."""
    target = _synthetic_logistic(n_features)
    kernel = target.numba_kernel()
    for w in np.random.default_rng(n_features).normal(size=(5, target.dim)) * 3:
        lp, grad = kernel.evaluate(w)  # through compiled code
        lp_ref, grad_ref = target.log_prob_and_grad(w)
        np.testing.assert_allclose(lp, lp_ref, rtol=1e-12)
        np.testing.assert_allclose(grad, grad_ref, rtol=1e-10, atol=1e-10)


def test_logistic_regression_paths_agree():
    """Both paths give the same draws on a logistic regression."""
    assert_paths_agree(
        _synthetic_logistic(4), sampler="hmc", chains=2, warmup=0, draws=20, seed=1,
        step_size=0.05, n_steps=10,
    )  # fmt: skip


@pytest.mark.parametrize("name", TARGETS)
def test_builtin_kernels_match_numpy(name):
    """Each built-in kernel, run as compiled code, equals the NumPy log density."""
    target = hm.targets.get(name)
    kernel = target.numba_kernel()
    for q in np.random.default_rng(1).normal(size=(4, target.dim)):
        lp, grad = kernel.evaluate(q)
        ref_lp, ref_grad = target.log_prob_and_grad(q)
        np.testing.assert_allclose(lp, ref_lp, rtol=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12)


COMPOSITIONS = list(
    itertools.product(
        ["leapfrog", "two-stage", "three-stage"],
        [0.0, 0.8],  # full or partial refresh
        [0.0, 1.0],  # static or random length
        ["identity", "diagonal", "dense"],
    )
)


@pytest.mark.parametrize(("integrator", "rho", "n_steps_jitter", "metric"), COMPOSITIONS)
def test_every_composition_gives_the_same_draws_on_both_paths(
    integrator, rho, n_steps_jitter, metric
):
    """One implementation of every part: for a fixed step size the NumPy path and the
    composed kernel draw the same streams and give the same draws and statistics.

    The kernel contracts ``a * b + c`` into fused multiply-adds where NumPy rounds twice, so
    the paths differ in the last bit, and on banana's curved trajectories (more so with
    momenta carried over by a partial refresh) that difference grows by orders of magnitude
    per iteration: measured, it stays below 1e-11 with the leapfrog and the two-stage
    integrator, and with the three-stage one at its step of 0.21 and a partial refresh
    (which starts from a drawn momentum) grows about threefold an iteration to 2e-4 after
    30 iterations: hence 1e-3. A difference in the maths would show at the size of a step
    (1e-1) at once, and the discrete outcomes must agree exactly.
    """
    target = hm.targets.get("banana")
    inverse_mass = {
        "identity": "identity",
        "diagonal": np.array([0.7, 1.3]),
        "dense": np.array([[1.0, 0.3], [0.3, 0.8]]),
    }[metric]
    a, _ = assert_paths_agree(
        target, sampler="hmc", chains=4, warmup=0, draws=30, seed=11,
        step_size=0.07 * {'leapfrog': 1, 'two-stage': 2, 'three-stage': 3}[integrator],
        n_steps=4, metric=inverse_mass, integrator=integrator, rho=rho,
        n_steps_jitter=n_steps_jitter,
        atol=1e-3,  # the fused multiply-adds' last bits, amplified on banana (see above)
    )  # fmt: skip
    if n_steps_jitter:
        assert len(np.unique(a.stats["n_steps"])) > 2
