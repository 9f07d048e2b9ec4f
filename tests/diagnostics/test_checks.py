"""The problems of a run: each check fires on the case it names and stays quiet on iid draws;
sample() warns after the file is safe; the CLI prints a WARNINGS block."""

import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from arviz_stats.base import array_stats

import hamiltonia as hm
from hamiltonia.cli import EXIT_INTERRUPTED, main
from hamiltonia.diagnostics.checks import SamplingWarning, diagnose, e_bfmi

CHAINS, N = 4, 1000


def _healthy(dim=3, seed=0) -> hm.Result:
    """iid standard normal draws and energies, no divergence, a steady step size."""
    rng = np.random.default_rng(seed)
    stats = {
        "diverging": np.zeros((CHAINS, N), dtype=bool),
        "energy": rng.normal(size=(CHAINS, N)),
        "step_size": np.full((CHAINS, N), 0.5),
        "n_grad": np.full((CHAINS, N), 10),
        "acceptance_rate": np.full((CHAINS, N), 0.8),
    }
    return hm.Result(
        draws=rng.normal(size=(CHAINS, N, dim)),
        stats=stats,
        names=tuple(f"x{i}" for i in range(dim)),
        attrs={"step_size_initial": [0.5] * CHAINS},
    )


def _checks(result):
    return [p.check for p in diagnose(result)]


def test_iid_draws_have_no_problem():
    assert diagnose(_healthy()) == []


def test_divergences_are_counted_with_their_share_and_chains():
    result = _healthy()
    result.stats["diverging"][1, 5] = result.stats["diverging"][2, 7] = True
    (problem,) = diagnose(result)
    assert (problem.check, problem.value) == ("divergences", 2.0)
    assert problem.where == ("chain 1", "chain 2")
    assert "2 divergent transitions" in problem.message and "(0.1% of 4000" in problem.message


def test_r_hat_names_the_parameters_whose_chains_disagree():
    result = _healthy()
    result.draws[0, :, 1] += 1.0  # one chain elsewhere, for x1 only
    problems = {p.check: p for p in diagnose(result)}
    assert problems["r_hat"].where == ("x1",)
    assert problems["r_hat"].value == pytest.approx(np.max(hm.diagnostics.rhat(result.draws)))


def test_one_chain_is_not_judged_by_r_hat_but_still_by_ess():
    """R-hat compares chains: one chain has none (nan), which is not a disagreement; its
    ESS is still checked."""
    one = _healthy()
    one.draws, one.stats = one.draws[:1], {k: v[:1] for k, v in one.stats.items()}
    one.attrs["step_size_initial"] = [0.5]
    assert diagnose(one) == []
    one.draws[0] = np.cumsum(one.draws[0], axis=0)  # a random walk: low ESS
    assert set(_checks(one)) == {"ess_bulk", "ess_tail"}


def test_weights_that_are_not_finite_are_reported_not_raised():
    """A shadow sampler's draw where the shadow Hamiltonian is not finite has no weight:
    the run's checks say so (they used to raise at the end of the run, losing it)."""
    result = _healthy()
    result.log_weights = np.zeros((CHAINS, N))
    result.log_weights[2, 10:13] = np.nan
    (problem,) = diagnose(result)
    assert (problem.check, problem.value, problem.where) == ("weights", 3.0, ("chain 2",))
    assert "3 of 4000 draws have an importance weight that is not finite" in problem.message


def test_low_bulk_and_tail_ess_per_chain():
    """An AR(1) chain with phi = 0.99 has an ESS of n (1 - phi) / (1 + phi) = 5 per 1000."""
    result = _healthy(dim=2)
    rng = np.random.default_rng(1)
    x = np.empty((CHAINS, N))
    x[:, 0] = rng.normal(size=CHAINS)
    for t in range(1, N):
        x[:, t] = 0.99 * x[:, t - 1] + np.sqrt(1 - 0.99**2) * rng.normal(size=CHAINS)
    result.draws[..., 0] = x
    problems = {p.check: p for p in diagnose(result)}
    assert problems["ess_bulk"].where == ("x0",) and problems["ess_tail"].where == ("x0",)
    assert problems["ess_bulk"].value < 100
    assert problems["ess_bulk"].value == pytest.approx(hm.diagnostics.ess(x)[()] / CHAINS)


@pytest.mark.parametrize("compiled", [False, True])
def test_e_bfmi_is_arviz_s_and_flags_a_slow_energy(compiled):
    energy = np.cumsum(np.random.default_rng(2).normal(size=(CHAINS, N)), axis=1)
    bfmi = e_bfmi(energy, compiled=compiled)
    np.testing.assert_allclose(bfmi, array_stats.bfmi(energy), rtol=1e-12)
    # Scaled near the float limit, the ratio is the same (no overflow in the squares).
    np.testing.assert_allclose(e_bfmi(energy * 1e300, compiled=compiled), bfmi, rtol=1e-12)
    # A constant chain, or one with a value that is not finite, has none.
    energy[0] = 3.0
    energy[1, 5] = np.nan
    energy[2, 7] = np.inf
    bfmi = e_bfmi(energy, compiled=compiled)
    assert np.isnan(bfmi[:3]).all() and np.isfinite(bfmi[3:]).all()
    np.testing.assert_allclose(bfmi, e_bfmi(energy, compiled=not compiled), rtol=1e-12)
    energy = np.cumsum(np.random.default_rng(2).normal(size=(CHAINS, N)), axis=1)
    result = _healthy()
    result.stats["energy"] = energy
    assert _checks(result) == ["e_bfmi"]


def test_a_random_walk_has_no_energy_to_judge():
    result = _healthy()
    result.stats["energy"] = np.cumsum(result.stats["energy"], axis=1)
    result.stats["n_grad"][:] = 0
    assert "e_bfmi" not in _checks(result)


def test_a_partial_refresh_is_not_judged_by_e_bfmi():
    """A partial refresh keeps most of the momentum, so the energy moves slowly by design:
    pshmc on blr-heart (rho = 0.9) has E-BFMI of 0.2-0.3 (below the threshold in a chain at
    least, which a fresh momentum's check would flag) and is not flagged, while the same slow
    energy with a fresh momentum is."""
    run = hm.sample("blr-heart", "pshmc", chains=2, warmup=300, draws=300, seed=0,
                    progress=False)  # fmt: skip
    assert run.attrs["momentum_memory"] == 0.9
    assert np.any(e_bfmi(run.stats["energy"]) < 0.3)
    assert "e_bfmi" not in [p.check for p in diagnose(run)]
    fresh = _healthy()
    fresh.stats["energy"] = np.cumsum(fresh.stats["energy"], axis=1)
    assert "e_bfmi" in _checks(fresh) and fresh.attrs.get("momentum_memory", 0.0) == 0.0


def test_a_collapsed_step_size_is_reported_for_its_chain_only():
    result = _healthy()
    result.stats["step_size"][1, -1] = 0.5e-4  # 10^4 below the start
    result.stats["step_size"][2, -1] = 0.5e-2  # 10^2: an ordinary adaptation
    (problem,) = diagnose(result)
    assert (problem.check, problem.where) == ("step_size", ("chain 1",))
    assert problem.value == pytest.approx(1e4)


def test_a_chain_that_never_moved_is_frozen():
    result = _healthy()
    result.draws[3] = result.draws[3, 0]
    problems = {p.check: p for p in diagnose(result)}
    assert problems["frozen"].where == ("chain 3",)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_few_draws_give_no_spurious_error(n):
    result = _healthy()
    result.draws = result.draws[:, :n]
    result.stats = {k: v[:, :n] for k, v in result.stats.items()}
    problems = diagnose(result)
    assert {p.check for p in problems} <= {"e_bfmi", "frozen"}


def test_sample_warns_after_the_file_is_safe(tmp_path):
    """A 100 % divergent run of frozen chains (step_size 10^6): the warnings name both, and a
    user who turns them into errors still has the finished file."""
    path = tmp_path / "run.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingWarning)
        with pytest.raises(SamplingWarning, match="1200 divergent transitions"):
            hm.sample("banana", chains=4, warmup=50, draws=300, seed=1, progress=False,
                      step_size=1e6, adapt_step_size=False, output=path)  # fmt: skip
    saved = hm.load(path)
    assert saved.attrs["complete"] is True
    checks = {p.check for p in saved.diagnose()}
    assert {"divergences", "frozen"} <= checks


def test_the_warning_points_at_the_user_s_line():
    with pytest.warns(SamplingWarning) as record:
        hm.sample("banana", chains=2, warmup=50, draws=100, seed=1, progress=False,
                  step_size=1e6, adapt_step_size=False)  # fmt: skip
    assert {os.path.basename(w.filename) for w in record} == {os.path.basename(__file__)}


def test_a_log_density_of_extreme_scale_reports_the_collapse():
    class Extreme(hm.Target):
        def log_prob(self, q):
            return -1e300 * 0.5 * np.sum(q**2, axis=-1)

        def grad_log_prob(self, q):
            return -1e300 * q

    with pytest.warns(SamplingWarning, match="step size collapsed"):
        result = hm.sample(Extreme(dim=2), chains=2, warmup=100, draws=100, seed=3,
                           progress=False, compiled=False)  # fmt: skip
    assert np.all(np.isfinite(result.draws))


def test_summary_is_computed_once_per_set_of_draws(monkeypatch):
    result = _healthy()
    from hamiltonia.results import result as results

    calls = []
    original = results.summary_table
    monkeypatch.setattr(results, "summary_table", lambda *args: calls.append(1) or original(*args))
    first = result.summary()
    first.loc["x0", "mean"] = 99.0  # a copy: the cached table is not changed
    second = result.summary()
    assert second.loc["x0", "mean"] != 99.0
    result.diagnose()
    assert len(calls) == 1
    result.draws = result.draws[:, :500]
    result.summary()
    assert len(calls) == 2


def test_the_cli_prints_a_warnings_block(capsys):
    args = ["sample", "banana", "--chains", "2", "--warmup", "50", "--draws", "100", "--seed",
            "1", "--no-progress", "--step-size", "1e6", "-O", "adapt_step_size=False"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    block = out[out.index("WARNINGS") :]
    assert "200 divergent transitions" in block and "never moved" in block


def _plain_sigint():
    """In the child: Ctrl-C delivered and handled as in a fresh terminal. A test process may
    have blocked or ignored SIGINT (a library's threads), and a child inherits both, which
    left the run deaf to the signal."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(os.name != "posix", reason="SIGINT")
def test_ctrl_c_during_warm_up_exits_130_without_a_traceback():
    proc = subprocess.Popen(
        [sys.executable, "-m", "hamiltonia.cli", "sample", "gaussian-d100", "--sampler", "rwmh",
         "--warmup", "10000000", "--draws", "10", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_plain_sigint,
    )  # fmt: skip
    # Past the imports (a slow machine may take many seconds over them, and a Ctrl-C there
    # is Python's, not the run's): the fallback warning comes just before warm-up.
    first = proc.stderr.readline()
    assert "running on the NumPy path" in first, first
    time.sleep(1.0)
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED
    assert "interrupted before the first draw" in err
    assert "Traceback" not in err


def test_a_value_fixed_by_the_model_is_not_a_sampling_problem():
    """The fixed entries of a Cholesky factor (L[0, 0] = 1, L[0, 1] = 0) have no variance;
    only the moving entries are judged."""
    rng = np.random.default_rng(0)
    draws = np.concatenate([rng.normal(size=(4, 500, 1)), np.ones((4, 500, 1))], axis=-1)
    result = hm.Result(draws=draws, stats={"diverging": np.zeros((4, 500), bool)},
                       names=("x", "L[0, 0]"))  # fmt: skip
    assert result.diagnose() == []


# ------------------------------------------------------------------ improper posteriors
_Y = np.array([1.2, -0.3, 0.8, 2.1, 0.4])


def _improper(record):
    return [w for w in record if "improper posterior" in str(w.message)]


def _run(model, **options):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = hm.sample(model, chains=4, warmup=300, draws=300, seed=1, progress=False,
                           **options)  # fmt: skip
    return result, record


def test_an_unconstrained_scale_is_named_as_an_improper_posterior():
    """A scale left on the real line with no prior: the density grows flat as |s| grows, and
    the draws of s (and of mu, which it frees) run off to ~1e90."""
    model = hm.Model(lambda p: -0.5 * np.sum((_Y - p["mu"]) ** 2 / p["s"] ** 2),
                     {"mu": hm.real(), "s": hm.real()})  # fmt: skip
    result, record = _run(model)
    (warning,) = _improper(record)
    assert issubclass(warning.category, SamplingWarning)
    assert "the log density looks unbounded" in str(warning.message)
    (problem,) = [p for p in result.diagnose() if p.check == "improper"]
    assert "s" in problem.where and problem.value > 1e10
    assert result.diagnose()[0].check == "improper"  # the cause, before its consequences


def test_a_log_density_rising_without_bound_names_its_parameter_only():
    """lp = a: a runs to ~1e60 with the log density; b, a proper normal, is not named."""
    model = hm.Model(lambda p: p["a"] - 0.5 * p["b"] ** 2, {"a": hm.real(), "b": hm.real()})
    result, record = _run(model)
    (warning,) = _improper(record)
    assert "a ran away to" in str(warning.message)
    (problem,) = [p for p in result.diagnose() if p.check == "improper"]
    assert problem.where == ("a",)


def test_a_positive_scale_pinned_at_the_float_limit_is_named():
    """lp = -n log s with s positive: unbounded as s -> 0, and its coordinate log s runs to
    exp's underflow (s = 5e-324): far in the unconstrained space, though |log s| < 1e10."""
    model = hm.Model(lambda p: -0.5 * np.sum((_Y - p["mu"]) ** 2) - 5 * np.log(p["s"]),
                     {"mu": hm.real(), "s": hm.positive()})  # fmt: skip
    result, record = _run(model)
    (problem,) = [p for p in result.diagnose() if p.check == "improper"]
    assert problem.where == ("s",) and problem.value >= 700 and len(_improper(record)) == 1


def test_a_proper_model_is_not_named():
    model = hm.Model(
        lambda p: -0.5 * np.sum((_Y - p["mu"]) ** 2 / p["s"] ** 2) - 5 * np.log(p["s"])
        - 0.5 * p["mu"] ** 2 - p["s"],
        {"mu": hm.real(), "s": hm.positive()},
    )  # fmt: skip
    result, record = _run(model)
    assert _improper(record) == [] and "improper" not in _checks(result)


def _far(draws, lp=None) -> hm.Result:
    chains, n, _ = draws.shape
    stats = {"diverging": np.zeros((chains, n), bool)}
    if lp is not None:
        stats["lp"] = lp
    return hm.Result(draws=draws, stats=stats, names=tuple(f"x{i}" for i in range(draws.shape[2])))


def test_a_posterior_settled_at_a_huge_scale_is_not_named():
    """GDP in dollars: 2e13 +- 1e11, chains that agree: far, but a located posterior."""
    rng = np.random.default_rng(0)
    draws = 2e13 + 1e11 * rng.normal(size=(4, 1000, 1))
    lp = -0.5 * ((draws[..., 0] - 2e13) / 1e11) ** 2
    assert "improper" not in _checks(_far(draws, lp))


def test_a_proper_tail_over_decades_is_not_named_but_a_flat_one_is():
    """Draws of N(0, 1e11^2) reach 1e10 and spread over decades out there, but their log
    density falls with |x| (about 5 nats a decade); the same draws with a flat log density
    run away."""
    rng = np.random.default_rng(1)
    draws = 1e11 * rng.normal(size=(4, 1000, 1))
    proper = -0.5 * (draws[..., 0] / 1e11) ** 2 + rng.normal(size=(4, 1000))  # + other terms
    assert "improper" not in _checks(_far(draws, proper))
    flat = rng.normal(size=(4, 1000))
    assert _checks(_far(draws, flat))[0] == "improper"


def test_a_drifting_chain_is_named_and_a_chain_at_one_huge_value_too():
    rng = np.random.default_rng(2)
    draws = rng.normal(size=(4, 1000, 2))
    draws[2, :, 1] = -8e29 * np.linspace(0.05, 1.0, 1000)  # runs off, lp rising with it
    lp = rng.normal(size=(4, 1000))
    lp[2] = np.linspace(0.0, 1e3, 1000)
    (problem,) = [p for p in diagnose(_far(draws, lp)) if p.check == "improper"]
    assert problem.where == ("x1",) and problem.value == pytest.approx(8e29)
    # Pinned beyond any number: a coordinate that left floating point.
    draws[2, :, 1] = np.inf
    assert [p.where for p in diagnose(_far(draws, lp)) if p.check == "improper"] == [("x1",)]
