"""Delayed-rejection HMC (Modi, Barnett and Carpenter 2023), written once as a kernel: it
leaves its target invariant (and without its ghost factor it does not), recovers the moments
of a multiscale Gaussian, rescues the trajectories plain HMC loses there, runs from a recipe
and the command line, refuses bad parameters and the NumPy path, and resumes exactly.

The target is a Gaussian whose scales differ a hundredfold, 0.1 and 10: the leapfrog is
stable on the narrow coordinate only for step sizes below :math:`2 \\times 0.1`.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import autograd.numpy as anp
import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.compiled.parts import python_form_missing
from hamiltonia.runner.loop import kernel_only_parts
from hamiltonia.testing import assert_moments_recovered, check_invariance, correlated_gaussian
from hamiltonia.testing.targets import GaussianTarget
from hamiltonia.trajectories.delayed_rejection import DelayedRejection
from tests.interrupting import in_warmup_from, interrupted, killed_at_checkpoint

# The negative control lives beside the tutorial that shows it (docs/examples, which the
# documentation's examples import as a reader's script would).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "examples"))
from without_ghost import WithoutGhost

MULTISCALE = GaussianTarget([0.5, -1.0], np.diag([0.1**2, 10.0**2]))
#: Where stage 1 now succeeds and now fails, so that the ghost factor matters.
EDGE = {"step_size": 0.15, "n_steps": 3}
#: Beyond the leapfrog's stability: every stage-1 trajectory diverges, stage 2 does not.
UNSTABLE = {"step_size": 0.25, "n_steps": 5}


def dr_sampler(target=MULTISCALE, *, step_size, n_steps, refresh=None, **options):
    return hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(target),
        DelayedRejection(n_steps, **options),
        refresh=refresh or hm.FullRefresh(),
        step_size=step_size,
    )


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    """``delayed-rejection`` by name, as its entry point registers it (here for the process
    where the installed metadata does not have it yet)."""
    monkeypatch.setattr(hm.trajectories.registry, "_extra", dict(hm.trajectories.registry._extra))
    if "delayed-rejection" not in hm.trajectories.names():
        hm.trajectories.register("delayed-rejection", DelayedRejection)


def test_it_is_written_only_as_a_kernel():
    assert python_form_missing(DelayedRejection(3)) == "DelayedRejection.transition"
    assert kernel_only_parts(dr_sampler(**EDGE)) == [
        "trajectory DelayedRejection (DelayedRejection.transition)"
    ]


@pytest.mark.parametrize(
    ("options", "refresh"),
    [
        ({}, None),
        ({"probabilistic": True}, None),
        ({}, hm.PartialRefresh(0.5)),
        ({"reduction": 3, "step_size_jitter": 0.3}, None),
    ],
    ids=["plain", "probabilistic", "partial-refresh", "reduction-3-jittered"],
)
def test_it_leaves_a_multiscale_gaussian_invariant(options, refresh):
    """With a partial refresh the momentum carried over (negated on a final rejection) is
    tested too."""
    sampler = dr_sampler(**EDGE, refresh=refresh, **options)
    assert check_invariance(MULTISCALE, sampler).passed


def test_without_the_ghost_factor_it_is_not_invariant():
    """The negative control: the same kernel and setting, the ghost factor dropped. The
    check rejects it (the narrow coordinate's variance, by about ten standard errors)."""
    sampler = hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(MULTISCALE),
        WithoutGhost(EDGE["n_steps"]),
        step_size=EDGE["step_size"],
    )
    with pytest.raises(
        AssertionError, match=r"does not leave GaussianTarget invariant.*variance of x1"
    ):
        check_invariance(MULTISCALE, sampler)


def test_the_ghost_is_integrated_with_the_structure_reversed():
    """Over a magnetic field the ghost starts from z2 with its momentum and the field's sign
    negated. At this setting a ghost integrated in the field as it is fails the check."""
    target = correlated_gaussian(3)
    sampler = hm.samplers.build(
        "mhmc", target, trajectory="delayed-rejection", n_steps=1, step_size=1.1, g=2.0
    )
    assert type(sampler.trajectory) is DelayedRejection
    assert check_invariance(target, sampler).passed


def test_it_recovers_the_moments_of_a_multiscale_gaussian():
    """A step size jittered across the narrow scale's stability limit: about a third of
    the transitions are stage 1's and half stage 2's; means and variances within z-scores
    of their Monte Carlo standard errors."""
    sampler = dr_sampler(step_size=0.2, n_steps=40, step_size_jitter=0.3)
    run = hm.sample(MULTISCALE, sampler, chains=4, warmup=0, draws=5000, seed=3, progress=False)
    assert run.attrs["compiled"] is True
    stage = run.stats["stage"]
    assert np.mean(stage == 1) > 0.25 and np.mean(stage == 2) > 0.25
    assert_moments_recovered(run, MULTISCALE.exact_moments)


def test_it_rescues_what_plain_hmc_rejects_at_the_same_step_size():
    """Beyond the stability limit every plain HMC trajectory diverges and is rejected; under
    delayed rejection stage 1 never succeeds either, and stage 2, at half the step size,
    accepts most of its proposals. No divergence is reported: none decided a transition."""
    run = {"chains": 2, "warmup": 0, "draws": 200, "seed": 1, "progress": False}
    plain = hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(MULTISCALE),
        hm.StaticLength(UNSTABLE["n_steps"]),
        step_size=UNSTABLE["step_size"],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.SamplingWarning)  # the divergences, the ESS
        hmc = hm.sample(MULTISCALE, plain, **run)
        dr = hm.sample(MULTISCALE, dr_sampler(**UNSTABLE), **run)
    assert hmc.stats["diverging"].all() and not hmc.stats["accepted"].any()
    assert not np.any(dr.stats["stage"] == 1)
    assert not dr.stats["diverging"].any()
    assert dr.stats["accepted"].mean() > 0.5 > hmc.stats["accepted"].mean()
    np.testing.assert_array_equal(dr.stats["accepted"], dr.stats["stage"] == 2)


def test_its_statistics_follow_the_stages():
    """Stage 1 alone integrates L steps; a retry integrates a L more and the ghost's L. A
    leapfrog step is one gradient. An accepted transition reports the stage it took."""
    n_steps, a = EDGE["n_steps"], 3
    sampler = dr_sampler(**EDGE, reduction=a)
    run = hm.sample(MULTISCALE, sampler, chains=2, warmup=0, draws=300, seed=2, progress=False)
    stage, steps = run.stats["stage"], run.stats["n_steps"]
    assert set(np.unique(stage)) == {0, 1, 2}
    np.testing.assert_array_equal(steps, np.where(stage == 1, n_steps, (2 + a) * n_steps))
    np.testing.assert_array_equal(run.stats["n_grad"], steps)
    np.testing.assert_array_equal(run.stats["accepted"], stage > 0)
    alpha = run.stats["acceptance_rate"]
    assert np.all((alpha >= 0.0) & (alpha <= 1.0))


def test_a_target_without_a_kernel_is_called_back_with_the_same_draws():
    """Written once, as a kernel: the same density in autograd (no numba kernel) is called
    back from the compiled chain, with the same stages and the same draws to rounding."""
    precision, mean = 1.0 / np.diag(MULTISCALE.covariance), MULTISCALE.mean
    written = hm.Target.from_logp(
        lambda x: -0.5 * anp.sum(precision * (x - mean) ** 2, axis=-1), dim=2, backend="autograd"
    )
    runs = [
        hm.sample(target, dr_sampler(target, **EDGE), chains=2, warmup=0, draws=30, seed=1,
                  progress=False)
        for target in (MULTISCALE, written)
    ]  # fmt: skip
    assert "called back" in runs[1].attrs["path_reason"]
    np.testing.assert_array_equal(runs[0].stats["stage"], runs[1].stats["stage"])
    assert set(np.unique(runs[0].stats["stage"])) == {0, 1, 2}
    np.testing.assert_allclose(runs[0].draws, runs[1].draws, rtol=0, atol=1e-9)


def test_from_a_recipe_with_step_size_adaptation():
    """``trajectory="delayed-rejection"`` in any Hamiltonian recipe; dual averaging tunes
    stage 1's acceptance. The same draws as the sampler composed by hand."""
    options = {"chains": 2, "warmup": 150, "draws": 100, "seed": 4, "progress": False}
    run = hm.sample("banana", "hmc", trajectory="delayed-rejection", n_steps=5, **options)
    assert run.attrs["compiled"] is True and "stage" in run.stats
    assert 0.6 < run.stats["acceptance_rate"].mean() < 0.95
    target = hm.targets.get("banana")
    by_hand = hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(target), DelayedRejection(5), tuners=[hm.DualAveraging()]
    )
    np.testing.assert_array_equal(hm.sample(target, by_hand, **options).draws, run.draws)


def test_from_the_command_line(tmp_path):
    out = tmp_path / "run.nc"
    assert (
        main(
            [
                "sample",
                "banana",
                "--sampler",
                "hmc",
                "-O",
                "trajectory=delayed-rejection",
                "-O",
                "n_steps=5",
                "--chains",
                "2",
                "--warmup",
                "100",
                "--draws",
                "50",
                "--seed",
                "1",
                "--no-progress",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    run = hm.load(out)
    assert run.attrs["compiled"] is True and set(np.unique(run.stats["stage"])) <= {0, 1, 2}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"n_steps": 0}, "n_steps must be an integer >= 1, got 0"),
        ({"n_steps": 3, "reduction": 1}, r"reduction must be an integer in \[2, 100\], got 1"),
        ({"n_steps": 3, "reduction": 2.5}, r"reduction must be an integer in \[2, 100\]"),
        ({"n_steps": 3, "step_size_jitter": 1.0}, r"step_size_jitter must lie in \[0, 1\)"),
        ({"n_steps": 3, "probabilistic": "yes"}, "probabilistic must be True or False"),
    ],
)
def test_bad_parameters_are_refused_by_name(options, message):
    with pytest.raises(ValueError, match=message):
        DelayedRejection(**options)


def test_a_recipe_option_it_does_not_take_is_refused():
    with pytest.raises(
        ValueError, match="trajectory 'delayed-rejection' takes no option 'n_steps_jitter'"
    ):
        hm.samplers.build("hmc", MULTISCALE, trajectory="delayed-rejection", n_steps_jitter=0.5)


def test_the_numpy_path_is_refused_before_any_work():
    """No Python form: ``compiled=False`` is refused, naming the part and the method,
    before the target is evaluated once."""
    calls = []

    def log_prob(x):
        calls.append(1)
        return -0.5 * np.sum(x**2, axis=-1)

    target = hm.Target.from_logp(log_prob, dim=2)
    calls.clear()  # from_logp probes the function (its vectorisation, a trace)
    with pytest.raises(
        ValueError,
        match=r"compiled=False was asked but trajectory "
        r"DelayedRejection \(DelayedRejection.transition\) "
        "is written only as a kernel",
    ):
        hm.sample(
            target,
            "hmc",
            trajectory="delayed-rejection",
            compiled=False,
            step_size=0.3,
            chains=2,
            warmup=0,
            draws=10,
            progress=False,
        )
    assert calls == []


RESUMED = {"sampler": "hmc", "trajectory": "delayed-rejection", "n_steps": 4, "chains": 2,
           "warmup": 30, "draws": 40, "seed": 5, "progress": False}  # fmt: skip


def _in_chunks_of_seven(monkeypatch):
    """Compiled chunks of 7 iterations, so that the run stops where the test says (chunking
    changes no draw)."""
    from hamiltonia.runner import paths

    chunker = paths.Chunker
    monkeypatch.setattr(paths, "Chunker", lambda **_: chunker(first=7, largest=7))


def _assert_same_run(resumed, full):
    assert resumed.attrs["complete"] is True
    np.testing.assert_array_equal(resumed.draws, full.draws)
    for name, values in full.stats.items():
        np.testing.assert_array_equal(resumed.stats[name], values, err_msg=name)


def test_a_run_interrupted_in_sampling_resumes_to_the_same_draws(tmp_path, monkeypatch):
    """Ctrl-C after the second stored block: the resumed run, rebuilt from its recipe and
    options, makes the uninterrupted run's draws and statistics to the bit."""
    full = hm.sample("banana", **RESUMED)
    _in_chunks_of_seven(monkeypatch)
    path = tmp_path / "run.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.InterruptedRunWarning)
        part = interrupted(
            monkeypatch,
            2,
            lambda: hm.sample("banana", output=path, checkpoint_seconds=0.0, **RESUMED),
        )
    assert 0 < part.n_draws < RESUMED["draws"]
    _assert_same_run(hm.resume(path, progress=False), full)


def test_a_run_killed_in_warmup_resumes_to_the_same_draws(tmp_path, monkeypatch):
    """Killed as a warm-up checkpoint is written (the file keeps the one before): the step
    size's dual averaging resumes from its saved state."""
    full = hm.sample("banana", **RESUMED)
    _in_chunks_of_seven(monkeypatch)
    path = tmp_path / "run.nc"
    killed_at_checkpoint(
        monkeypatch,
        in_warmup_from(20),
        lambda: hm.sample("banana", output=path, checkpoint_seconds=0.0, **RESUMED),
    )
    assert 0 < hm.load(path).attrs["warmup_done"] < 20
    _assert_same_run(hm.resume(path, progress=False), full)


def test_a_direct_python_step_names_the_kernel_only_trajectory():
    """Stepping a kernel-only policy from Python says what it is, not a bare
    NotImplementedError."""
    sampler = hm.HamiltonianSampler(
        hm.EuclideanHamiltonian(hm.targets.get("banana")), DelayedRejection(3), step_size=0.1
    )
    rngs = [np.random.default_rng(c) for c in range(2)]
    with pytest.raises(NotImplementedError, match="DelayedRejection has no Python transition"):
        sampler.step(sampler.init(np.zeros((2, 2))), rngs)
