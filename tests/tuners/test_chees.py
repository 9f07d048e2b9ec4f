"""ChEES and the contract it is written through (issue 48, item 2): a tuner that runs after
every iteration on both paths (``per_iteration``), reads what the trajectory publishes
(``reads``), sets the step size in place of the recipe's (``sets_step_size``) and adapts a
part's parameter that resumes (``adapts``)."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.trajectories.jittered_length import JitteredLength, halton, jittered_steps
from hamiltonia.tuners import DualAveraging, Tuner
from hamiltonia.tuners.chees import ChEES, chees_gradient, harmonic_mean_acceptance
from tests.interrupting import interrupted

WARMUP, DRAWS = 40, 30


class Recorder(Tuner):
    """A plugin's tuner that only looks: every iteration's info, on both paths."""

    per_iteration = True
    reads = ("proposal", "proposal_velocity")

    def start(self, sampler, chain, n_warmup, rngs):
        self.seen = []

    def update(self, sampler, chain, info, iteration):
        self.seen.append((iteration, {k: np.array(v) for k, v in info.items()},
                          np.array(chain.phase.q), np.array(chain.phase.p)))  # fmt: skip


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
def test_a_tuner_sees_every_iteration_and_the_proposal_on_both_paths(compiled):
    """update() runs after each warm-up iteration with the iteration's statistics and the
    proposal; an accepted proposal is the chain's next position, and the velocity is the
    Hamiltonian's at the proposal (M = I: the momentum, which a rejection negates)."""
    recorder = Recorder()
    target = hm.targets.get("gaussian")
    sampler = hm.samplers.get("hmc")(target, n_steps=5, tuners=[recorder])
    hm.sample(target, sampler, chains=3, warmup=WARMUP, draws=DRAWS, seed=2,
              progress=False, compiled=compiled)  # fmt: skip
    assert [it for it, *_ in recorder.seen] == list(range(WARMUP))
    accepted_somewhere = False
    for _, info, q, p in recorder.seen:
        assert info["proposal"].shape == info["proposal_velocity"].shape == q.shape
        accepted = info["accepted"].astype(bool)
        np.testing.assert_array_equal(info["proposal"][accepted], q[accepted])
        np.testing.assert_array_equal(info["proposal_velocity"][accepted], p[accepted])
        assert {"acceptance_rate", "diverging", "n_steps"} <= set(info)
        accepted_somewhere |= accepted.any()
    assert accepted_somewhere
    # Publishing ends with warm-up: sampling pays nothing for it.
    assert sampler.trajectory.publish is False


def test_the_two_paths_show_a_tuner_the_same_iterations():
    """Written once, the tuner sees the same numbers on both paths (up to the last bits of
    the arithmetic: the chains are the same draws)."""
    seen = {}
    for compiled in (False, True):
        recorder = Recorder()
        target = hm.targets.get("gaussian")
        sampler = hm.samplers.get("hmc")(target, n_steps=5, step_size=0.3, tuners=[recorder])
        hm.sample(target, sampler, chains=2, warmup=10, draws=5, seed=4, progress=False,
                  compiled=compiled)  # fmt: skip
        seen[compiled] = recorder.seen
    for (_, a, *_), (_, b, *_) in zip(seen[False], seen[True], strict=True):
        np.testing.assert_allclose(a["proposal"], b["proposal"], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(a["accepted"], b["accepted"])


def test_a_tuner_reading_what_the_trajectory_does_not_publish_is_refused():
    target = hm.targets.get("gaussian")
    with pytest.raises(ValueError, match=r"Recorder reads proposal, proposal_velocity .*NoUTurn"):
        hm.samplers.get("nuts")(target, tuners=[Recorder()])


def test_a_tuner_adapting_a_parameter_the_sampler_lacks_is_refused():
    refused = r"ChEES adapts trajectory\.duration, which trajectory MetropolisTrajectory does not"
    with pytest.raises(ValueError, match=refused):
        hm.samplers.get("hmc")(hm.targets.get("gaussian"), tuners="chees")


def test_chees_takes_the_place_of_the_recipes_step_size_tuner():
    sampler = hm.samplers.get("hmc")(
        hm.targets.get("gaussian"), tuners="chees", trajectory="jittered-length"
    )
    assert [type(t) for t in sampler.tuners] == [ChEES]
    with pytest.raises(ValueError, match="two tuners set the step sizes: DualAveraging, ChEES"):
        hm.HamiltonianSampler(
            sampler.hamiltonian, sampler.trajectory, tuners=[DualAveraging(), ChEES()]
        )
    with pytest.raises(ValueError, match="adapt_step_size=False"):
        hm.samplers.get("hmc")(hm.targets.get("gaussian"), tuners="chees", step_size=0.1,
                               adapt_step_size=False, trajectory="jittered-length")  # fmt: skip


def test_a_per_iteration_tuner_with_no_kernel_is_not_refused_as_one_that_never_adapts():
    """Defect 2's check (a tuner with empty kernels and no chunk update) lets through a
    tuner that runs after every iteration."""
    from hamiltonia.compiled.plan import plan_for

    sampler = hm.samplers.get("hmc")(hm.targets.get("gaussian"), tuners=[Recorder()])
    assert plan_for(sampler) is not None


# -- the maths


def test_halton_is_the_base_two_van_der_corput_sequence():
    assert [halton(i) for i in range(7)] == [0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875]


def test_jittered_steps_cover_the_duration():
    assert jittered_steps(1.0, 0.1, 1.0, 1.0) == 10
    assert jittered_steps(1.0, 0.1, 0.5, 1.0) == 5
    assert jittered_steps(1.0, 0.1, 0.0, 1.0) == 1  # at least one step
    assert jittered_steps(1.0, 0.1, 0.0, 0.0) == 10  # no jitter


def test_the_harmonic_mean_ignores_divergent_chains_and_is_pulled_down_by_a_stuck_one():
    prob = np.array([0.5, 1.0, 0.0])
    assert harmonic_mean_acceptance(prob, [False, False, True]) == pytest.approx(2 / 3)
    assert harmonic_mean_acceptance(prob, [False, False, False]) == 0.0
    assert harmonic_mean_acceptance(prob, [True, True, True]) == 0.0


def test_the_chees_gradient_is_the_criterions_derivative_in_log_time():
    """On chains moving along exact straight lines q' = q + t v, the estimate equals the
    derivative of the ChEES criterion 1/4 mean((|q' - mean q'|^2 - |q - mean q|^2)^2) in
    log t, by finite differences."""
    rng = np.random.default_rng(0)
    q, v = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    t = 0.7

    def criterion(time):
        moved = q + time * v
        change = np.sum((moved - moved.mean(0)) ** 2, 1) - np.sum((q - q.mean(0)) ** 2, 1)
        return 0.25 * np.mean(change**2)

    h = 1e-6
    expected = (criterion(t * np.exp(h)) - criterion(t * np.exp(-h))) / (2 * h)
    # All accepted, none divergent; the velocity centred as the derivative of a centred
    # position is (the proposals' mean moves with the mean velocity).
    got = chees_gradient(q, q + t * v, v - v.mean(0), np.ones(50), np.zeros(50, bool),
                         np.full(50, t))  # fmt: skip
    assert got == pytest.approx(expected, rel=1e-6)


# -- ChEES at work


def _chees_run(**options):
    return hm.sample("gaussian", "chees", chains=16, warmup=200, draws=300, seed=3,
                     progress=False, **options)  # fmt: skip


def test_chees_adapts_a_duration_and_recovers_the_moments():
    """Ten independent N(0, sigma_i^2): every mean and variance within 4 reported MCSEs
    (Bonferroni over 20 estimates at about 5e-5 each), and a duration longer than one step."""
    target = hm.targets.get("gaussian")
    sampler = hm.samplers.get("chees")(target)
    result = hm.sample(target, sampler, chains=16, warmup=200, draws=300, seed=3,
                       progress=False)  # fmt: skip
    assert result.attrs["compiled"] is True
    eps = float(np.asarray(result.stats["step_size"])[0, 0])
    assert sampler.trajectory.duration > 2 * eps
    assert np.all(result.stats["step_size"] == eps)  # one step size for all chains
    draws = np.asarray(result.draws).reshape(-1, target.dim)
    summary = result.summary()
    z_mean = np.asarray(summary["mean"]) / np.asarray(summary["mcse"])
    assert np.all(np.abs(z_mean) < 4), z_mean
    variance = np.asarray(target.scales) ** 2
    sq = hm.diagnostics.mcse(np.asarray(result.draws) ** 2, "mean")
    z_var = (np.mean(draws**2, axis=0) - variance) / sq
    assert np.all(np.abs(z_var) < 4), z_var


def test_a_chees_run_stopped_after_warmup_resumes_bit_for_bit(tmp_path, monkeypatch):
    """The duration ChEES adapted is in the resume state (``adapts``), the step size and the
    Halton index with the chains."""
    import warnings

    full = _chees_run()
    path = tmp_path / "run.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.InterruptedRunWarning)
        interrupted(monkeypatch, 2, lambda: _chees_run(output=path, checkpoint_seconds=0.0))
    monkeypatch.undo()
    resumed = hm.resume(path, progress=False)
    assert resumed.attrs["complete"] is True
    np.testing.assert_array_equal(resumed.draws, full.draws)
    np.testing.assert_array_equal(resumed.stats["n_steps"], full.stats["n_steps"])


def test_the_jittered_length_has_no_numpy_path():
    """Written once, as a kernel: the NumPy path refuses it before any work, naming it."""
    with pytest.raises(ValueError, match="JitteredLength"):
        hm.sample("gaussian", "chees", chains=4, warmup=5, draws=5, compiled=False,
                  progress=False)  # fmt: skip


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="iterate"):
        ChEES(iterate="mean")
    with pytest.raises(ValueError, match="decay"):
        ChEES(decay=2.0)
    with pytest.raises(ValueError, match="jitter"):
        JitteredLength(jitter=1.5)
    with pytest.raises(ValueError, match="duration"):
        JitteredLength(duration=-1.0)


@pytest.mark.parametrize(
    "argv",
    [
        ["--sampler", "chees"],
        ["--sampler", "hmc", "-O", "tuners=chees", "-O", "trajectory=jittered-length"],
    ],
    ids=["recipe", "options"],
)
def test_chees_on_the_command_line(tmp_path, argv):
    out = tmp_path / "run.nc"
    code = main(["sample", "banana", *argv, "--chains", "8", "--warmup", "50", "--draws", "20",
                 "--no-progress", "-o", str(out)])  # fmt: skip
    assert code == 0
    assert hm.load(out).n_draws == 20
