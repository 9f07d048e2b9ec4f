"""Thinning and kept warm-up draws (``thin=``, ``save_warmup=``), on both paths."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import main
from hamiltonia.runner.thinning import kept, thin_statistics
from tests.interrupting import interrupted

RUN = dict(chains=2, warmup=60, seed=3, progress=False, n_steps=5)


def _expected(stats: dict, thin: int) -> dict:
    """The thinned statistics, written out group by group."""
    out = {}
    for name, values in stats.items():
        groups = values[:, : values.shape[1] // thin * thin].reshape(values.shape[0], -1, thin)
        if name == "diverging":
            out[name] = groups.any(axis=-1)
        elif name == "n_grad":
            out[name] = groups.sum(axis=-1)
        else:
            out[name] = groups[..., -1]
    return out


def test_thin_statistics_summarise_the_group():
    stats = {
        "diverging": np.array([[False, True, False, False, False, False, True]]),
        "n_grad": np.array([[1, 2, 3, 4, 5, 6, 7]]),
        "energy": np.array([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]]),
    }
    out = thin_statistics(stats, 3)  # two whole groups; the seventh iteration is dropped
    np.testing.assert_array_equal(out["diverging"], [[True, False]])
    np.testing.assert_array_equal(out["n_grad"], [[6, 15]])
    np.testing.assert_array_equal(out["energy"], [[0.3, 0.6]])
    np.testing.assert_array_equal(kept(np.arange(7)[None], 3), [[2, 5]])
    assert thin_statistics(stats, 1)["n_grad"].tolist() == stats["n_grad"].tolist()


@pytest.mark.parametrize("compiled", [False, True])
def test_thinned_draws_are_every_thin_th_iteration_of_the_same_run(compiled):
    full = hm.sample("banana", "hmc", draws=60, compiled=compiled, **RUN)
    thinned = hm.sample("banana", "hmc", draws=61, thin=3, compiled=compiled, **RUN)
    assert thinned.attrs["compiled"] is compiled and thinned.attrs["thin"] == 3
    assert thinned.n_draws == 20  # 61 // 3: the last, incomplete group is not run
    np.testing.assert_array_equal(thinned.draws, kept(full.draws, 3))
    expected = _expected(full.stats, 3)
    assert set(thinned.stats) == set(expected)
    for name, values in expected.items():
        np.testing.assert_array_equal(thinned.stats[name], values, err_msg=name)
    assert thinned.n_grad == full.n_grad  # thinning hides no work


@pytest.mark.parametrize("compiled", [False, True])
def test_kept_warmup_draws_are_the_warmup_iterations(compiled):
    """Without adaptation a warm-up iteration is a plain iteration: the kept warm-up draws are
    the draws of a run without warm-up, and the draws after them are unchanged."""
    fixed = dict(RUN, step_size=0.2, adapt_step_size=False, compiled=compiled)
    plain = hm.sample("banana", "hmc", **{**fixed, "warmup": 0}, draws=60)
    saved = hm.sample("banana", "hmc", **fixed, draws=30, thin=2, save_warmup=True)
    np.testing.assert_array_equal(saved.warmup_draws, kept(plain.draws, 2))
    for name, values in _expected(plain.stats, 2).items():
        np.testing.assert_array_equal(saved.warmup_stats[name], values, err_msg=name)
    unsaved = hm.sample("banana", "hmc", **fixed, draws=30, thin=2)
    assert unsaved.warmup_draws is None
    np.testing.assert_array_equal(saved.draws, unsaved.draws)


def test_adapting_warmup_records_the_step_size_each_iteration_used():
    result = hm.sample("banana", "hmc", draws=10, save_warmup=True, **RUN)
    steps = result.warmup_stats["step_size"]
    assert steps.shape == (2, 60) and len(np.unique(steps[0])) > 10  # dual averaging moves it


def test_warmup_groups_survive_the_file(tmp_path):
    result = hm.sample("banana", "hmc", draws=20, save_warmup=True, thin=2, **RUN)
    tree = result.to_datatree()
    assert {"warmup_posterior", "warmup_sample_stats"} <= set(tree.children)
    assert tree["warmup_posterior"]["w1"].shape == (2, 30)
    loaded = hm.load(result.save(tmp_path / "run.nc"))
    np.testing.assert_array_equal(loaded.warmup_draws, result.warmup_draws)
    for name, values in result.warmup_stats.items():
        np.testing.assert_array_equal(loaded.warmup_stats[name], values)
    assert "warmup_posterior" not in hm.sample("banana", "hmc", draws=5, **RUN).to_datatree()


@pytest.mark.parametrize("compiled", [False, True])
def test_a_thinned_run_with_its_warmup_resumes_exactly(tmp_path, monkeypatch, compiled):
    kwargs = dict(RUN, warmup=100, draws=3000, thin=3, save_warmup=True, compiled=compiled)
    full = hm.sample("banana", "hmc", **kwargs)
    path = tmp_path / "run.nc"
    with pytest.warns(RuntimeWarning, match="interrupted"):
        part = interrupted(monkeypatch, 3, lambda: hm.sample(
            "banana", "hmc", output=path, checkpoint_seconds=0.0, **kwargs))  # fmt: skip
    assert 0 < part.n_draws < 1000
    assert hm.load(path).warmup_draws.shape == (2, 33, 2)  # from the unfinished run's folder
    resumed = hm.resume(path, progress=False)
    np.testing.assert_array_equal(resumed.draws, full.draws)
    np.testing.assert_array_equal(resumed.warmup_draws, full.warmup_draws)
    for name, values in full.stats.items():
        np.testing.assert_array_equal(resumed.stats[name], values, err_msg=name)
    np.testing.assert_array_equal(hm.load(path).warmup_draws, full.warmup_draws)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"thin": 0}, r"thin must be an integer >= 1, got 0"),
        ({"thin": 2.0}, r"thin must be an integer >= 1, got 2.0"),
        ({"thin": 11}, r"thin must be at most draws \(10\) so that a draw is kept, got 11"),
        ({"save_warmup": "yes"}, r"save_warmup must be True or False, got 'yes'"),
    ],
)
def test_bad_thinning_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        hm.sample("banana", "hmc", draws=10, **{**RUN, **kwargs})


def test_the_cli_thins_and_keeps_the_warmup(tmp_path, capsys):
    path = tmp_path / "run.nc"
    args = ["sample", "banana", "--sampler", "hmc", "--chains", "2", "--warmup", "40",
            "--draws", "40", "--thin", "4", "--save-warmup", "--seed", "1", "--no-progress",
            "--output", str(path)]  # fmt: skip
    assert main(args) == 0
    assert "2 chains x 10 draws after 40 warm-up (thinned: one iteration in 4)" in (
        capsys.readouterr().out
    )
    result = hm.load(path)
    assert result.n_draws == 10 and result.warmup_draws.shape == (2, 10, 2)


def test_a_thinned_run_counts_divergent_draws_not_transitions():
    """A thinned draw is flagged when any of its iterations diverged: the warning says it
    counts kept draws, of how many iterations each."""
    result = hm.sample("banana", "hmc", chains=2, warmup=100, draws=400, seed=2, thin=4,
                       step_size=0.15, progress=False)  # fmt: skip
    (problem,) = [p for p in result.diagnose() if p.check == "divergences"]
    count = int(result.stats["diverging"].sum())
    assert f"in {count} of 200 kept draws" in problem.message
    assert "a draw is kept every 4 iterations" in problem.message
