"""Running chains: seeds, reproducibility, progress, options and bad input."""

import re
import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.registry import UnknownNameError
from hamiltonia.results.runfile import RunFileError
from hamiltonia.targets.banana import Banana
from tests.interrupting import interrupted

SHORT = {"warmup": 100, "draws": 50, "progress": False}


@pytest.mark.parametrize("sampler", ["hmc", "mala", "rwmh"])
def test_same_seed_same_draws(sampler):
    a = hm.sample("banana", sampler, chains=2, seed=3, **SHORT)
    b = hm.sample("banana", sampler, chains=2, seed=3, **SHORT)
    np.testing.assert_array_equal(a.draws, b.draws)
    for name in a.stats:
        np.testing.assert_array_equal(a.stats[name], b.stats[name])
    c = hm.sample("banana", sampler, chains=2, seed=4, **SHORT)
    assert not np.array_equal(a.draws, c.draws)


def test_a_sampler_object_is_adapted_in_place_and_a_rebuilt_one_repeats_the_run():
    # As documented in sample(): the adapted metric stays in the object, a second run warms
    # up from it (other draws), and the same recipe built again repeats the first run.
    target = hm.targets.get("gaussian-d10")
    sampler = hm.samplers.build("nuts", target)
    first = hm.sample(target, sampler, chains=2, seed=3, **SHORT)
    adapted = sampler.hamiltonian.metric.inverse_mass.copy()
    assert not np.allclose(adapted, 1.0)
    again = hm.sample(target, sampler, chains=2, seed=3, **SHORT)
    assert not np.array_equal(first.draws, again.draws)
    rebuilt = hm.sample(target, hm.samplers.build("nuts", target), chains=2, seed=3, **SHORT)
    np.testing.assert_array_equal(first.draws, rebuilt.draws)


def test_a_seed_sequence_is_not_advanced_by_a_run():
    # Reused, the same object gives the same draws, and they are those of its entropy.
    seq = np.random.SeedSequence(5)
    a = hm.sample("banana", "hmc", chains=2, seed=seq, **SHORT)
    b = hm.sample("banana", "hmc", chains=2, seed=seq, **SHORT)
    c = hm.sample("banana", "hmc", chains=2, seed=int(a.attrs["seed_entropy"]), **SHORT)
    np.testing.assert_array_equal(a.draws, b.draws)
    np.testing.assert_array_equal(a.draws, c.draws)
    assert seq.n_children_spawned == 0
    child = seq.spawn(1)[0]
    d = hm.sample("banana", "hmc", chains=2, seed=child, **SHORT)
    assert d.attrs["seed_spawn_key"] == "[0]" and not np.array_equal(a.draws, d.draws)


@pytest.mark.parametrize("sampler", ["hmc", "rwmh"])
def test_a_chain_does_not_depend_on_the_others(sampler):
    """Chain c uses SeedSequence child c: running 3 chains vectorised or 1 alone gives chain 0
    the same draws."""
    three = hm.sample("gaussian-d10", sampler, chains=3, seed=11, **SHORT)
    one = hm.sample("gaussian-d10", sampler, chains=1, seed=11, **SHORT)
    np.testing.assert_array_equal(three.draws[:1], one.draws)


def test_result_shapes_and_stats():
    res = hm.sample("gaussian-d10", "hmc", chains=3, warmup=50, draws=40, seed=0,
                    progress=False, n_steps=7, n_steps_jitter=0)  # fmt: skip
    assert res.draws.shape == (3, 40, 10)
    for name in ("accepted", "acceptance_rate", "energy", "diverging", "n_grad", "step_size", "lp"):
        assert res.stats[name].shape == (3, 40), name
    assert res.stats["diverging"].dtype == bool
    assert np.all(res.stats["n_grad"] == 7)
    assert res.n_grad == 3 * 40 * 7
    assert res.log_weights is None
    assert res.target == "gaussian-d10" and res.sampler == "hmc"
    # Step sizes are frozen after warm-up.
    assert np.all(res.stats["step_size"] == res.stats["step_size"][:, :1])
    assert np.all(np.isfinite(res.draws))


def test_fixed_step_size_is_not_adapted():
    res = hm.sample("banana", "hmc", chains=2, seed=0, step_size=0.05, **SHORT)
    assert np.all(res.stats["step_size"] == 0.05)


def test_given_step_size_with_adaptation_is_the_start():
    res = hm.sample(
        "banana", "hmc", chains=2, seed=0, step_size=0.05, adapt_step_size=True, **SHORT
    )
    assert not np.all(res.stats["step_size"] == 0.05)


def test_progress_bar_goes_to_stderr_and_can_be_turned_off(capsys):
    hm.sample("banana", "rwmh", chains=1, warmup=10, draws=10, seed=0, progress=False)
    assert capsys.readouterr().err == ""
    hm.sample("banana", "rwmh", chains=1, warmup=10, draws=10, seed=0, progress=True)
    assert "rwmh" in capsys.readouterr().err


def test_initial_positions_are_used():
    init = np.array([[0.1, 0.2], [0.3, -0.4]])
    res = hm.sample(
        "banana",
        "hmc",
        chains=2,
        warmup=0,
        draws=1,
        seed=0,
        progress=False,
        initial=init,
        step_size=1e-12,
    )
    # With a vanishing step the chains stay where they started.
    np.testing.assert_allclose(res.draws[:, 0], init, atol=1e-9)


def test_sampler_object_and_options_together_is_an_error():
    target = hm.targets.get("banana")
    sampler = hm.samplers.build("hmc", target)
    with pytest.raises(ValueError, match="n_steps"):
        hm.sample(target, sampler, n_steps=3, **SHORT)
    res = hm.sample(target, sampler, chains=1, seed=0, **SHORT)
    assert res.draws.shape == (1, 50, 2)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"chains": 0}, ValueError, "chains"),
        ({"warmup": -1}, ValueError, "warmup"),
        ({"draws": 0}, ValueError, "draws"),
        ({"draws": 2.5}, ValueError, "draws"),
        ({"seed": -3}, ValueError, "seed"),
        ({"seed": "abc"}, ValueError, "seed"),
        ({"step_size": -0.1}, ValueError, "step_size"),
        ({"step_size": 0.0}, ValueError, "step_size"),
        ({"step_size": float("nan")}, ValueError, "step_size"),
        ({"n_steps": 0}, ValueError, "n_steps"),
        ({"target_accept": 1.5}, ValueError, "target_accept"),
        ({"metric": np.ones(3)}, ValueError, "metric"),
        ({"metric": -np.ones(2)}, ValueError, "inverse_mass"),
        ({"bogus": 1}, ValueError, "bogus"),
        ({"initial": np.zeros(3)}, ValueError, "initial"),
        ({"initial": "abc"}, ValueError, r"initial must be an array of numbers .*'abc'"),
        ({"initial": np.array([np.nan, 0.0])}, ValueError, "initial"),
        ({"sampler": "hmcc"}, UnknownNameError, "did you mean 'hmc'"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, error, match):
    kwargs = {"sampler": "hmc", **kwargs}
    sampler = kwargs.pop("sampler")
    with pytest.raises(error, match=match):
        hm.sample("banana", sampler, **{**SHORT, **kwargs})


@pytest.mark.parametrize("progress", ["no", "False", 0, None])
def test_progress_must_be_a_flag(tmp_path, progress):
    """A truthy string such as "no" showed the bar (and 0 hid it): progress takes a bool,
    in sample() as in resume() (refused there before the file is read)."""
    with pytest.raises(ValueError, match=rf"progress must be True or False, got {progress!r}"):
        hm.sample("banana", "hmc", **{**SHORT, "progress": progress})
    with pytest.raises(ValueError, match=rf"progress must be True or False, got {progress!r}"):
        hm.resume(tmp_path / "no-such-run.nc", progress=progress)


def test_unknown_target_name():
    with pytest.raises(UnknownNameError, match="did you mean 'banana'"):
        hm.sample("bananna", "hmc", **SHORT)


def test_target_must_be_a_target():
    with pytest.raises(TypeError, match="target"):
        hm.sample(42, "hmc", **SHORT)


def test_initial_point_with_non_finite_density():
    target = hm.Target.from_functions(
        lambda x: np.where(x[..., 0] > 0, -0.5 * np.sum(x**2, -1), -np.inf),
        lambda x: (np.where(x[..., 0] > 0, -0.5 * np.sum(x**2, -1), -np.inf), -x),
        dim=2,
        vectorized=True,
    )
    with pytest.raises(ValueError, match=r"initial.*chain 1"):
        hm.sample(target, "hmc", chains=2, initial=np.array([[1.0, 0.0], [-1.0, 0.0]]), **SHORT)


class PartlyBroken(hm.Target):
    """A standard normal whose log density is NaN for x0 > 1.5 and raises for x0 < -1.5; the
    batch call also raises if any row is in the raising region."""

    def __init__(self):
        super().__init__(2)

    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        if np.any(x[..., 0] < -1.5):
            raise FloatingPointError("model blew up")
        lp = -0.5 * np.sum(x**2, axis=-1)
        lp = np.where(x[..., 0] > 1.5, np.nan, lp)
        return lp, -x


@pytest.mark.parametrize("sampler", ["hmc", "mala", "rwmh"])
def test_nan_or_declared_raising_log_density_is_a_divergent_rejection(sampler):
    res = hm.sample(
        PartlyBroken(),
        sampler,
        chains=4,
        warmup=200,
        draws=300,
        seed=0,
        progress=False,
        initial=np.zeros(2),
        reject_on=FloatingPointError,
    )
    assert np.all(np.isfinite(res.draws))
    assert np.all(np.abs(res.draws[..., 0]) <= 1.5)
    assert res.stats["diverging"].sum() > 0
    # Every divergent transition was rejected.
    assert not np.any(res.stats["diverging"] & res.stats["accepted"])


@pytest.mark.parametrize("sampler", ["hmc", "rwmh"])
def test_an_undeclared_exception_stops_the_run_and_is_shown(sampler):
    with pytest.raises(hm.ModelError, match="FloatingPointError: model blew up") as err:
        hm.sample(PartlyBroken(), sampler, chains=4, warmup=200, draws=300, seed=0,
                  progress=False, initial=np.zeros(2))  # fmt: skip
    assert isinstance(err.value.__cause__, FloatingPointError)
    assert err.value.position[0] < -1.5


class InterruptAfter(hm.Target):
    """A standard normal that raises KeyboardInterrupt (as Ctrl-C would) after n calls."""

    def __init__(self, n):
        super().__init__(2)
        self.calls, self.n = 0, n

    def log_prob_and_grad(self, x):
        self.calls += 1
        if self.calls > self.n:
            raise KeyboardInterrupt
        x = np.asarray(x, dtype=float)
        return -0.5 * np.sum(x**2, axis=-1), -x


def test_interrupted_run_keeps_its_draws(tmp_path):
    path = tmp_path / "partial.nc"
    target = InterruptAfter(n=1000)
    with pytest.warns(RuntimeWarning, match="interrupted after"):
        res = hm.sample(
            target,
            "hmc",
            chains=2,
            warmup=20,
            draws=500,
            seed=0,
            progress=False,
            step_size=0.5,
            n_steps=5,
            output=path,
        )
    done = res.attrs["draws_done"]
    assert 0 < done < 500 and res.draws.shape == (2, done, 2)
    assert res.attrs["complete"] is False
    assert np.all(np.isfinite(res.draws))
    back = hm.load(path)
    np.testing.assert_array_equal(back.draws, res.draws)
    assert back.attrs["complete"] is False


def test_interrupt_during_warmup_propagates():
    with pytest.raises(KeyboardInterrupt):
        hm.sample(
            InterruptAfter(n=10),
            "hmc",
            chains=1,
            warmup=50,
            draws=50,
            seed=0,
            progress=False,
            step_size=0.5,
            n_steps=5,
        )


def test_output_is_checkpointed_and_completed(tmp_path, monkeypatch):
    """Checkpoints append the new draws only; the finished run replaces them with one file."""
    from hamiltonia.results.runfile import RunFile, partial_dir

    path = tmp_path / "run.nc"
    saves, blocks = [], []
    original = RunFile.append

    def spy(self, q, stats, log_weights, meta, gradients=None, **kwargs):
        before = self.written
        original(self, q, stats, log_weights, meta, gradients, **kwargs)
        saves.append(self.written)
        blocks.append(self.written - before)

    monkeypatch.setattr(RunFile, "append", spy)
    res = hm.sample(
        "banana",
        "hmc",
        chains=2,
        warmup=50,
        draws=30,
        seed=0,
        progress=False,
        output=path,
        checkpoint_seconds=0.0,
        compiled=False,
    )
    assert len(saves) > 2 and saves[0] < 30 and saves[-1] <= 30  # partial writes
    assert sum(blocks) == saves[-1]  # each draw written once, in the block after it was made
    back = hm.load(path)
    assert back.attrs["complete"] is True
    np.testing.assert_array_equal(back.draws, res.draws)
    assert not partial_dir(path).exists()  # the checkpoints are gone once the run is whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.nc"]  # no lock, no temporary


class InterruptingBanana(Banana):
    """The banana, interrupted (as by Ctrl-C) once after a number of evaluations; it keeps
    its compiled kernel out, so that the NumPy path runs."""

    budget = None

    def log_prob_and_grad(self, x):
        if InterruptingBanana.budget is not None:
            InterruptingBanana.budget -= 1
            if InterruptingBanana.budget < 0:
                InterruptingBanana.budget = None
                raise KeyboardInterrupt
        return super().log_prob_and_grad(x)

    def numba_kernel(self):
        return None


@pytest.fixture
def interrupting_banana():
    hm.targets.register("interrupting-banana", InterruptingBanana, overwrite=True)
    yield
    hm.targets.registry._extra.pop("interrupting-banana", None)


@pytest.mark.parametrize("options", [{}, {"metric": "diagonal", "step_size_jitter": 0.3}])
def test_resume_continues_exactly(tmp_path, interrupting_banana, options):
    kwargs = dict(chains=2, warmup=100, draws=200, seed=5, progress=False, n_steps=5, **options)
    full = hm.sample("interrupting-banana", "hmc", **kwargs)
    path = tmp_path / "run.nc"
    InterruptingBanana.budget = 100 * 5 + 80 * 5 + 3  # stop inside the 81st draw
    with pytest.warns(RuntimeWarning, match="continue with hamiltonia.resume"):
        part = hm.sample(
            "interrupting-banana", "hmc", output=path, checkpoint_seconds=0.0, **kwargs
        )
    assert 0 < part.n_draws < 200
    resumed = hm.resume(path, progress=False)
    assert resumed.attrs["complete"] is True and resumed.n_draws == 200
    np.testing.assert_array_equal(resumed.draws, full.draws)
    np.testing.assert_array_equal(resumed.stats["step_size"], full.stats["step_size"])
    assert hm.load(path).attrs["complete"] is True


def test_resume_refuses_what_it_cannot_rebuild(tmp_path):
    path = tmp_path / "done.nc"
    hm.sample("banana", "hmc", chains=1, warmup=10, draws=10, seed=0, progress=False, output=path)
    with pytest.raises(ValueError, match="complete run"):
        hm.resume(path)


def test_resume_continues_exactly_on_the_compiled_path(tmp_path, monkeypatch):

    kwargs = dict(chains=2, warmup=200, draws=3000, seed=6, progress=False, n_steps=5)
    full = hm.sample("banana", "hmc", **kwargs)
    assert full.attrs["compiled"]
    path = tmp_path / "run.nc"
    with pytest.warns(RuntimeWarning, match="interrupted"):
        part = interrupted(monkeypatch, 2, lambda: hm.sample(
            "banana", "hmc", output=path, checkpoint_seconds=0.0, **kwargs))  # fmt: skip
    assert 0 < part.n_draws < 3000
    resumed = hm.resume(path, progress=False)
    np.testing.assert_array_equal(resumed.draws, full.draws)


def test_an_interrupted_overwrite_is_resumed_and_the_old_run_kept_till_then(tmp_path, monkeypatch):
    """overwrite=True keeps the complete run it is to replace until it finishes; interrupted,
    resume continues the new run (not "nothing to resume"), load reads the old one with a
    warning naming the new one, and the resumed run then replaces the old file."""
    kwargs = dict(chains=2, warmup=100, draws=1500, progress=False, n_steps=5)
    path = tmp_path / "run.nc"
    old = hm.sample("banana", "hmc", seed=1, output=path, **{**kwargs, "draws": 50})
    full = hm.sample("banana", "hmc", seed=2, **kwargs)
    with pytest.warns(RuntimeWarning, match="interrupted"):
        part = interrupted(monkeypatch, 2, lambda: hm.sample(
            "banana", "hmc", seed=2, output=path, overwrite=True, checkpoint_seconds=0.0,
            **kwargs))  # fmt: skip
    assert 0 < part.n_draws < 1500
    with pytest.warns(UserWarning, match="unfinished one"):
        kept = hm.load(path)
    np.testing.assert_array_equal(kept.draws, old.draws)
    assert hm.load(path, unfinished=True).n_draws == part.n_draws
    resumed = hm.resume(path, progress=False)
    np.testing.assert_array_equal(resumed.draws, full.draws)
    np.testing.assert_array_equal(hm.load(path).draws, full.draws)  # no warning: one run
    with pytest.raises(FileNotFoundError, match="no unfinished run"):
        hm.load(path, unfinished=True)
    with pytest.raises(ValueError, match="unfinished"):
        hm.load(path, unfinished="no")


@pytest.mark.parametrize(("sampler", "keeps"), [("phmc", True), ("shmc", True), ("hmc", False)])
def test_a_refresh_that_keeps_momentum_starts_from_a_drawn_one(sampler, keeps):
    """Where a refresh keeps momentum, the chains start from p ~ N(0, M) (its stationary
    marginal), not from p = 0; a full refresh draws its own (the start is left as is)."""
    from hamiltonia.runner.initial_points import _initial_state
    from hamiltonia.runner.run import make_rngs
    from hamiltonia.testing import Z_THRESHOLD

    target = hm.targets.get("gaussian", dim=3)
    smp = hm.samplers.build(sampler, target)
    state = _initial_state(smp, target, None, make_rngs(0, 400)[0])
    p = np.asarray(state.phase.p)
    if not keeps:
        assert not p.any()
        return
    n = p.size  # M = I: every component is a standard normal
    z = [p.mean() / np.sqrt(1.0 / n), (np.mean(p**2) - 1.0) / np.sqrt(2.0 / n)]
    assert max(map(abs, z)) < Z_THRESHOLD, z


@pytest.mark.parametrize("compiled", [True, False])
def test_a_tested_refresh_does_not_freeze_a_chain_started_at_a_mode(compiled):
    """Started at the mode with p = 0, a refresh tested against the shadow Hamiltonian
    whose stencil left the support was refused for ever: the chain never moved, every
    trajectory 'accepted', and dual averaging raised the step size to 1e35."""
    import autograd.numpy as anp

    target = hm.Target.from_logp(
        lambda x: anp.where(x[..., 0] > 1.5, -anp.inf, -0.5 * anp.sum(x**2, axis=-1)), dim=2,
        backend="autograd")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = hm.sample(target, "shmc", chains=2, warmup=200, draws=200, seed=1,
                        initial=np.zeros(2), progress=False, compiled=compiled)  # fmt: skip
    assert np.all(run.stats["refresh_accepted"].mean(axis=1) > 0.5)
    assert np.all(run.stats["step_size"][:, -1] < 10.0)


def test_a_run_of_a_user_model_resumes_exactly_when_given_its_model(tmp_path, monkeypatch):
    import autograd.numpy as anp

    def model(shift=0.0):
        return hm.Model(lambda p: -0.5 * anp.sum((p["x"] - shift) ** 2, axis=-1),
                        {"x": hm.real(2)}, backend="autograd")  # fmt: skip

    kwargs = dict(chains=2, warmup=30, draws=200, seed=4, progress=False)
    full = hm.sample(model(), "hmc", **kwargs)
    path = tmp_path / "run.nc"
    with pytest.warns(hm.InterruptedRunWarning, match=r"resume\('.*run.nc', target=<the same"):
        interrupted(monkeypatch, 2, lambda: hm.sample(
            model(), "hmc", output=path, checkpoint_seconds=0.0, **kwargs))  # fmt: skip
    refusal = r"without its target: .*resume\(path, target=model\)"
    with pytest.raises(RunFileError, match=refusal):
        hm.resume(path)
    with pytest.raises(RunFileError, match="does not match its draws"):
        hm.resume(path, target=model(shift=1.0), progress=False)
    resumed = hm.resume(path, target=model(), progress=False)
    np.testing.assert_array_equal(resumed.draws, full.draws)


def test_resume_is_exact_for_hmc_within_gibbs(tmp_path, monkeypatch):
    """The Gibbs schedule (every n iterations) continues where it stopped."""
    from hamiltonia.runner import loop
    from tests.samplers.test_gibbs import HierarchicalNormal

    hm.targets.register("hierarchical-normal", HierarchicalNormal, overwrite=True)
    try:
        kwargs = dict(chains=2, warmup=50, draws=120, seed=2, progress=False, n_steps=5)
        full = hm.sample("hierarchical-normal", "hmc", **kwargs)
        original = loop.Recorder.record
        calls = {"n": 0}

        def interrupt(self, *args, **kw):
            original(self, *args, **kw)
            calls["n"] += 1
            if calls["n"] == 37:  # not a multiple of the Gibbs period (5)
                raise KeyboardInterrupt

        monkeypatch.setattr(loop.Recorder, "record", interrupt)
        path = tmp_path / "run.nc"
        with pytest.warns(RuntimeWarning):
            hm.sample("hierarchical-normal", "hmc", output=path, checkpoint_seconds=0.0, **kwargs)
        monkeypatch.setattr(loop.Recorder, "record", original)
        resumed = hm.resume(path, progress=False)
        np.testing.assert_array_equal(resumed.draws, full.draws)
    finally:
        hm.targets.registry._extra.pop("hierarchical-normal", None)


def test_resume_with_metric_adaptation_and_numpy_path(tmp_path, monkeypatch):
    """A run that adapted its metric resumes on the path it ran on, to the same draws."""
    from hamiltonia.runner import loop

    for compiled in (False, True):
        kwargs = dict(
            chains=2,
            warmup=200,
            draws=150,
            seed=9,
            progress=False,
            n_steps=5,
            metric="diagonal",
            compiled=compiled,
        )
        full = hm.sample("banana", "hmc", **kwargs)
        original = loop.Recorder.record
        calls = {"n": 0}

        def interrupt(self, *args, _original=original, _calls=calls, **kw):
            _original(self, *args, **kw)
            _calls["n"] += 1
            if _calls["n"] == 1:  # after the first stored block
                raise KeyboardInterrupt

        monkeypatch.setattr(loop.Recorder, "record", interrupt)
        path = tmp_path / f"run-{compiled}.nc"
        with pytest.warns(RuntimeWarning):
            hm.sample("banana", "hmc", output=path, checkpoint_seconds=0.0, **kwargs)
        monkeypatch.setattr(loop.Recorder, "record", original)
        resumed = hm.resume(path, progress=False)
        assert resumed.attrs["compiled"] is compiled
        np.testing.assert_array_equal(resumed.draws, full.draws)


class OnePointAtATime(hm.Target):
    """A target written for a single point (breaks the batch contract)."""

    def __init__(self):
        super().__init__(2)

    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        return float(-0.5 * np.sum(x**2)), -x


def test_unvectorised_target_is_evaluated_row_by_row_with_a_warning():
    from hamiltonia.targets.base import ExactMoments
    from hamiltonia.testing import assert_moments_recovered

    with pytest.warns(RuntimeWarning, match="one at a time"):
        run = hm.sample(
            OnePointAtATime(),
            "hmc",
            chains=3,
            warmup=300,
            draws=1500,
            seed=0,
            progress=False,
            n_steps=5,
            step_size_jitter=0.5,
        )
    assert_moments_recovered(run, ExactMoments(np.zeros(2), np.ones(2)))


def _fixed_chunks(chunker_class):
    """Chunks of 7 iterations whatever the clock says, so interruption points repeat."""
    return lambda **_: chunker_class(first=7, largest=7)


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
@pytest.mark.parametrize("stop_after", [1, 3, 13])
@pytest.mark.parametrize(
    "parts",
    [{}, {"field": "random", "g": 0.5, "mass_volatility": 0.4}],
    ids=["canonical", "magnetic-random-mass"],
)
def test_resume_is_bit_exact_with_momentum_kept(tmp_path, monkeypatch, compiled, stop_after, parts):
    """Partial refresh keeps the momentum between iterations and a random length draws from
    each chain's generator: resume restores the whole chain state (momentum, log density,
    gradient, generators, and the auxiliary variables: the magnetic field's sign and the
    random mass) as the run left it, at any interruption point, on both paths."""
    from hamiltonia.runner import paths

    monkeypatch.setattr(paths, "Chunker", _fixed_chunks(paths.Chunker))
    kwargs = dict(
        chains=2, warmup=30, draws=120, seed=9, progress=False, compiled=compiled,
        rho=0.8, n_steps_jitter=1.0, n_steps=6, integrator="two-stage", **parts,
    )  # fmt: skip
    full = hm.sample("banana", "hmc", **kwargs)
    path = tmp_path / "run.nc"
    with pytest.warns(RuntimeWarning, match="interrupted"):
        part = interrupted(
            monkeypatch,
            stop_after * (1 if compiled else 7),
            lambda: hm.sample("banana", "hmc", output=path, checkpoint_seconds=0.0, **kwargs),
        )
    assert part.n_draws == 7 * stop_after
    resumed = hm.resume(path, progress=False)
    assert resumed.attrs["compiled"] is compiled
    np.testing.assert_array_equal(resumed.draws, full.draws)
    for name, values in full.stats.items():
        np.testing.assert_array_equal(resumed.stats[name], values, err_msg=name)


def test_ctrl_c_during_the_final_checks_keeps_the_finished_run(monkeypatch):
    def interrupt(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(hm.Result, "diagnose", interrupt)
    with pytest.warns(hm.InterruptedRunWarning, match="diagnostics were skipped"):
        result = hm.sample("banana", "hmc", chains=2, seed=3, **SHORT)
    assert result.draws.shape == (2, 50, 2) and result.attrs["complete"]


def test_the_path_and_why_are_recorded_and_saved(tmp_path):
    """attrs["path_reason"] says why a run took its path, and survives save and load."""
    from hamiltonia.runner.loop import COMPILED_REASON

    rwmh = "numpy: sampler RandomWalkMetropolis has no compiled counterpart"
    for sampler, compiled, reason in [
        ("hmc", None, COMPILED_REASON),
        ("hmc", True, COMPILED_REASON),
        ("hmc", False, "numpy: compiled=False was asked"),
        ("rwmh", None, rwmh),
        ("rwmh", False, "numpy: compiled=False was asked"),
    ]:
        path = tmp_path / f"{sampler}-{compiled}.nc"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", hm.FallbackWarning)
            run = hm.sample("banana", sampler, chains=2, seed=0, output=path, compiled=compiled,
                            **SHORT)  # fmt: skip
        fell_back = [w for w in caught if issubclass(w.category, hm.FallbackWarning)]
        assert len(fell_back) == (sampler == "rwmh" and compiled is None)
        assert run.attrs["compiled"] is reason.startswith("compiled: ")
        assert run.attrs["path_reason"] == reason
        assert hm.load(path).attrs["path_reason"] == reason
        copy = tmp_path / f"copy-{sampler}-{compiled}.nc"
        run.save(copy)
        assert hm.load(copy).attrs["path_reason"] == reason


def _stopped(monkeypatch, path, **kwargs):
    """A banana run written to ``path`` and stopped (Ctrl-C) after its first stored block."""
    from hamiltonia.runner import loop

    original = loop.Recorder.record

    def interrupt(self, *args, **kw):
        original(self, *args, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(loop.Recorder, "record", interrupt)
    try:
        with pytest.warns(RuntimeWarning, match="interrupted"):
            return hm.sample("banana", "hmc", chains=2, warmup=30, draws=300, seed=8,
                             progress=False, output=path, checkpoint_seconds=0.0,
                             n_steps=5, **kwargs)  # fmt: skip
    finally:
        monkeypatch.setattr(loop.Recorder, "record", original)


def test_a_resumed_run_records_why_it_took_its_path(tmp_path, monkeypatch):
    from hamiltonia.runner.loop import COMPILED_REASON

    asked = "numpy: compiled=False was asked"
    numpy_run = tmp_path / "numpy.nc"
    _stopped(monkeypatch, numpy_run, compiled=False)
    assert hm.load(numpy_run).attrs["path_reason"] == asked  # the unfinished run holds it
    kept = hm.resume(numpy_run, progress=False)
    reason = "numpy: kept from the run it continues: compiled=False was asked"
    assert kept.attrs["compiled"] is False and kept.attrs["path_reason"] == reason
    assert hm.load(numpy_run).attrs["path_reason"] == reason
    # Told otherwise, it takes the other path and says so.
    for compiled, reason in [(True, COMPILED_REASON), (None, COMPILED_REASON), (False, asked)]:
        path = tmp_path / f"compiled-{compiled}.nc"
        _stopped(monkeypatch, path)
        assert hm.load(path).attrs["path_reason"] == COMPILED_REASON
        resumed = hm.resume(path, progress=False, compiled=compiled)
        assert resumed.attrs["compiled"] is (compiled is not False)
        assert resumed.attrs["path_reason"] == hm.load(path).attrs["path_reason"] == reason
    with pytest.raises(ValueError, match="compiled must be True, False or None"):
        hm.resume(numpy_run, compiled="no")


def test_a_kept_path_reason_does_not_nest():
    from hamiltonia.runner.loop import KEPT_REASON, choose_path

    smp = hm.samplers.build("hmc", hm.targets.get("banana"))
    once = choose_path(smp, False, kept="numpy: compiled=False was asked")[1]
    assert once == f"{KEPT_REASON}: compiled=False was asked"
    assert choose_path(smp, False, kept=once) == (None, once)
    assert choose_path(smp, False, kept="") == (None, KEPT_REASON)  # a file from before


def test_a_compiled_run_that_can_no_longer_compile_says_how_to_go_on(tmp_path, monkeypatch):
    from hamiltonia.compiled import NotCompilable
    from hamiltonia.runner import loop

    path = tmp_path / "run.nc"
    _stopped(monkeypatch, path)

    def refuse(sampler, **_):
        raise NotCompilable("target Banana has no numba kernel")

    monkeypatch.setattr("hamiltonia.compiled.plan_for", refuse)
    expected = (
        "the run ran on the compiled path but target Banana has no numba kernel; pass "
        "compiled=False to continue it on the NumPy path"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        hm.resume(path, progress=False)
    with loop.spelled(loop.Spelling(required="--compiled was asked", numpy="--no-compiled")):
        with pytest.raises(ValueError, match="pass --no-compiled to continue"):
            hm.resume(path, progress=False)
    resumed = hm.resume(path, progress=False, compiled=False)
    assert resumed.attrs["path_reason"] == "numpy: compiled=False was asked"


def _model_reporting_more_than_it_moves():
    """A model whose reported width (5: a simplex of 3, a positive scale, a generated
    quantity) differs from its unconstrained dimension (3)."""
    import autograd.numpy as anp

    y = np.array([0, 1, 1, 2, 1, 0, 1])

    def logp(p):
        return anp.sum(anp.log(p["w"][y])) + 2 * anp.log(p["s"]) - p["s"]

    return hm.Model(logp, {"w": hm.simplex(3), "s": hm.positive()},
                    generated=lambda p: {"spread": p["s"] * p["w"][0]})  # fmt: skip


@pytest.fixture
def registered_model():
    hm.targets.registry.register("reports-more", _model_reporting_more_than_it_moves)
    yield
    hm.targets.registry._extra.pop("reports-more", None)


def test_resume_continues_a_model_that_reports_more_than_it_moves(
    tmp_path, monkeypatch, registered_model
):
    """The saved chain state is checked against the target's unconstrained dimension, not
    the run's reported width (a model with a simplex or generated quantities failed with "q
    has shape (2, 3), expected (2, 5)")."""
    kwargs = dict(chains=2, warmup=200, draws=3000, seed=6, progress=False)
    full = hm.sample("reports-more", "nuts", **kwargs)
    assert full.dim == 5 and hm.targets.get("reports-more").dim == 3
    path = tmp_path / "run.nc"
    with pytest.warns(RuntimeWarning, match="interrupted"):
        part = interrupted(monkeypatch, 2, lambda: hm.sample(
            "reports-more", "nuts", output=path, checkpoint_seconds=0.0, **kwargs))  # fmt: skip
    assert 0 < part.n_draws < 3000
    resumed = hm.resume(path, progress=False)
    np.testing.assert_array_equal(resumed.draws, full.draws)
