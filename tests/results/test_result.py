"""Results: summaries, ArviZ layout, netCDF round trip, weighted draws."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.results import Result


@pytest.fixture(scope="module")
def result():
    return hm.sample("banana", "hmc", chains=2, warmup=100, draws=80, seed=0, progress=False)


def test_summary_columns(result):
    summary = result.summary()
    assert list(summary.columns) == ["mean", "sd", "median", "5%", "95%", "mcse", "ess_bulk",
                                     "ess_tail", "r_hat"]  # fmt: skip
    assert list(summary.index) == ["w1", "w2"]
    flat = result.draws.reshape(-1, 2)
    np.testing.assert_allclose(
        summary[["median", "5%", "95%"]].T, np.quantile(flat, [0.5, 0.05, 0.95], axis=0)
    )
    np.testing.assert_allclose(summary["mean"], result.draws.mean(axis=(0, 1)))
    np.testing.assert_allclose(summary["sd"], result.draws.reshape(-1, 2).std(axis=0))
    np.testing.assert_allclose(summary["r_hat"], hm.diagnostics.rhat(result.draws))


def test_datatree_layout(result):
    tree = result.to_datatree()
    post, stats = tree["posterior"], tree["sample_stats"]
    assert set(post.data_vars) == {"w1", "w2"}
    assert post["w1"].dims == ("chain", "draw")
    np.testing.assert_array_equal(post["w2"].values, result.draws[..., 1])
    for name in ("acceptance_rate", "diverging", "energy", "lp", "step_size", "n_steps"):
        assert name in stats.data_vars


def test_save_never_replaces_a_file_unasked(result, tmp_path):
    path = tmp_path / "run.nc"
    path.write_text("the user's earlier work")
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        result.save(path)
    assert path.read_text() == "the user's earlier work"
    result.save(path, overwrite=True)
    np.testing.assert_array_equal(hm.load(path).draws, result.draws)
    with pytest.raises(OSError, match="is a folder"):
        result.save(tmp_path)
    with pytest.raises(ValueError, match="overwrite must be True or False"):
        result.save(tmp_path / "other.nc", overwrite="yes")


def test_save_and_load_round_trip(result, tmp_path):
    path = result.save(tmp_path / "run.nc")
    back = hm.load(path)
    np.testing.assert_array_equal(back.draws, result.draws)
    assert back.names == result.names
    assert set(back.stats) == set(result.stats)
    for name in result.stats:
        np.testing.assert_array_equal(back.stats[name], result.stats[name])
    assert back.stats["diverging"].dtype == bool
    assert back.sampler == "hmc" and back.target == "banana"
    assert back.sampling_seconds == pytest.approx(result.sampling_seconds)
    assert back.log_weights is None
    assert back.attrs["draws"] == 80


def test_load_expands_the_home_folder_as_save_does(result, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    path = result.save("~/run.nc")
    assert path == tmp_path / "run.nc"
    np.testing.assert_array_equal(hm.load("~/run.nc").draws, result.draws)


def test_load_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such"):
        hm.load(tmp_path / "no-such.nc")


def _weighted_result(log_weights):
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(2, 500, 1))
    stats = {
        "n_grad": np.ones((2, 500), dtype=int),
        "diverging": np.zeros((2, 500), bool),
        "acceptance_rate": np.ones((2, 500)),
    }
    return Result(draws=draws, stats=stats, names=("x",), log_weights=log_weights)


def test_weighted_summary_and_round_trip(tmp_path):
    draws_lw = np.log(np.random.default_rng(1).uniform(0.5, 1.5, size=(2, 500)))
    res = _weighted_result(draws_lw)
    w = np.exp(draws_lw)
    expected = np.sum(w * res.draws[..., 0]) / w.sum()
    summary = res.summary()
    assert summary.loc["x", "mean"] == pytest.approx(expected)
    unweighted = hm.diagnostics.ess(res.draws, "bulk")[0]
    kish = hm.diagnostics.kish_ess(draws_lw)
    assert summary.loc["x", "ess_bulk"] == pytest.approx(unweighted * kish / 1000)
    back = hm.load(res.save(tmp_path / "w.nc"))
    np.testing.assert_array_equal(back.log_weights, draws_lw)


def test_equal_weights_change_nothing():
    res = _weighted_result(np.zeros((2, 500)))
    plain = _weighted_result(None)
    np.testing.assert_allclose(res.summary().values, plain.summary().values, rtol=1e-10)


def test_the_summary_agrees_with_arviz_stats(result):
    """Each diagnostic is arviz_stats.summary's, with its defaults (its tail ESS included)."""
    import arviz_stats

    ours = result.summary()
    theirs = arviz_stats.summary(result.to_datatree(), round_to="none")
    for mine, name in [
        ("mean", "mean"),
        ("sd", "sd"),
        ("mcse", "mcse_mean"),
        ("ess_bulk", "ess_bulk"),
        ("ess_tail", "ess_tail"),
        ("r_hat", "r_hat"),
    ]:
        np.testing.assert_allclose(ours[mine].to_numpy(), theirs[name].to_numpy(dtype=float),
                                   rtol=1e-10, err_msg=mine)  # fmt: skip


def test_summary_options_and_print(result, capsys):
    table = result.summary([0.025, 0.5, 0.975], lp=True)
    assert {"2.5%", "50%", "97.5%"} <= set(table.columns) and table.index[-1] == "lp"
    per_chain = result.summary(per_chain=True)
    assert per_chain.index.names == ["chain", "parameter"] and len(per_chain) == 2 * result.n_chains
    with pytest.raises(ValueError, match=r"quantiles must be numbers in \(0, 1\), got \[1.5\]"):
        result.summary([1.5])
    result.print_summary()
    out = capsys.readouterr().out
    assert "Number of divergences:" in out and "lp" in out


def test_a_parameter_named_lp_keeps_its_row_and_the_log_density_takes_stan_s_name():
    run = Result(draws=np.random.default_rng(0).normal(size=(2, 50, 2)),
                 stats={"lp": np.zeros((2, 50))}, names=("lp", "x"))  # fmt: skip
    table = run.summary(lp=True)
    assert list(table.index) == ["lp", "x", "lp__"]
    assert table.loc["lp", "mean"] == pytest.approx(run.draws[..., 0].mean())


def test_load_reads_an_arviz_file_another_library_wrote(tmp_path):
    """A DataTree with a posterior of (chain, draw, ...) variables loads as blocks; a file
    that is not a run is one clear error."""
    from arviz_base import from_dict

    rng = np.random.default_rng(0)
    tree = from_dict(
        {"posterior": {"mu": rng.normal(size=(2, 50)), "theta": rng.normal(size=(2, 50, 3))},
         "sample_stats": {"diverging": np.zeros((2, 50), bool)}},
        dims={"theta": ["school"]}, coords={"school": ["a", "b", "c"]},
    )  # fmt: skip
    path = tmp_path / "other.nc"
    tree.to_netcdf(path, engine="h5netcdf")
    loaded = hm.load(path)
    assert loaded.names == ("mu", "theta[0]", "theta[1]", "theta[2]")
    np.testing.assert_array_equal(loaded.variables()["theta"], tree["posterior"]["theta"].values)
    assert loaded.posterior["theta"].dims == ("chain", "draw", "school")
    assert list(loaded.summary().index)[:2] == ["mu", "theta[0]"]
    not_a_run = tmp_path / "nothing.nc"
    from_dict({"observed_data": {"y": np.ones(3)}}).to_netcdf(not_a_run, engine="h5netcdf")
    with pytest.raises(hm.RunFileError, match="not a readable hamiltonia run file: it has no"):
        hm.load(not_a_run)


def _long(seed=0, shift=0.0) -> Result:
    """4 chains of 20,000 iid draws of 3 parameters, the last chain of x2 shifted."""
    draws = np.random.default_rng(seed).normal(size=(4, 20_000, 3))
    draws[3, :, 2] += shift
    stats = {"diverging": np.zeros((4, 20_000), bool)}
    return Result(draws=draws, stats=stats, names=("x0", "x1", "x2"))


def test_diagnose_does_not_compute_the_summary(monkeypatch):
    """The checks read R-hat and the bulk and tail ESS alone (the summary's other columns
    are computed when asked for): the same problems as from the summary."""
    from hamiltonia.diagnostics.checks import diagnose
    from hamiltonia.results import result as results

    for shift in (0.0, 0.5):
        run = _long(shift=shift)
        with monkeypatch.context() as m:
            m.setattr(results, "summary_table", lambda *a: pytest.fail("summary computed"))
            problems = run.diagnose()
        assert problems == diagnose(run, run.summary())
        checks = [p.check for p in problems]
        assert (checks == []) == (shift == 0.0) and ("r_hat" in checks) == (shift > 0.0)


def test_the_convergence_columns_are_the_summary_s():
    run = _long(shift=0.05)
    exact = run._convergence()
    table = run.summary()
    for column, values in exact.items():
        np.testing.assert_array_equal(values, table[column].to_numpy(), err_msg=column)
    # For the checks, each value is exact or a bound on the right side of its threshold.
    fresh = _long(shift=0.05)
    decided = fresh._convergence(decide=(1.01, 100.0))
    assert np.all((decided["r_hat"] <= 1.01) == (exact["r_hat"] <= 1.01))
    assert np.all(decided["r_hat"] >= exact["r_hat"])
    assert np.all((decided["ess_bulk"] >= 400) & (decided["ess_bulk"] <= exact["ess_bulk"]))
    np.testing.assert_array_equal(decided["ess_tail"], exact["ess_tail"])


def test_weighted_convergence_columns_carry_the_kish_factor():
    lw = np.log(np.random.default_rng(2).uniform(0.5, 1.5, size=(2, 500)))
    res = _weighted_result(lw)
    table = res.summary()
    fresh = _weighted_result(lw)
    for column, values in fresh._convergence().items():
        np.testing.assert_allclose(values, table[column].to_numpy(), rtol=1e-12, err_msg=column)
