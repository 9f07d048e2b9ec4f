"""The rank diagnostics (:math:`\\hat R`, bulk and tail ESS, the MCSE of the mean) are
ArviZ's numbers by hamiltonia's own road: compared with ``arviz_stats`` on random draws of
many kinds and shapes, on both roads of the autocovariances (direct sums and FFT); the
checks' screen decides as the exact values do, its bounds on the right side of them."""

import warnings

import numpy as np
import pytest
from arviz_base import rcParams
from arviz_stats.base import array_stats

from hamiltonia import diagnostics as dg
from hamiltonia.diagnostics import batched, rank_estimators, screening, univariate
from hamiltonia.diagnostics import estimator_kernels as kernels
from hamiltonia.diagnostics import estimators as est
from tests.fresh_process import printed_by

PROB = rcParams["stats.ci_prob"]


@pytest.fixture(autouse=True)
def compiled_road(monkeypatch):
    """Every size takes the compiled road here (by default only large runs do, see
    estimator_kernels.COMPILED_MIN_SIZE), so that it is what is compared with ArviZ."""
    monkeypatch.setattr(kernels, "COMPILED_MIN_SIZE", 0)


def test_a_small_run_takes_numpy_road_and_a_large_one_the_compiled(monkeypatch):
    monkeypatch.undo()
    x = np.random.default_rng(1).normal(size=(4, 1000, 3))
    assert not kernels._compiled_road(x)
    assert kernels._compiled_road(np.empty((4, 1_000_000, 1)))
    # Either road gives the same numbers, and the same extremes.
    small = est.convergence(x)
    monkeypatch.setattr(kernels, "COMPILED_MIN_SIZE", 0)
    forced = est.convergence(x)
    for name in small:
        np.testing.assert_allclose(forced[name], small[name], rtol=1e-10)
    monkeypatch.setattr(kernels, "COMPILED_MIN_SIZE", 10**12)
    x[0, 5, 1] = np.nan
    x[1, :, 2] = np.nan
    plain = est.extremes(x)
    monkeypatch.setattr(kernels, "COMPILED_MIN_SIZE", 0)
    for a, b in zip(plain, est.extremes(x), strict=True):
        np.testing.assert_array_equal(a, b)


def _ar1(rng, phi, chains, n):
    x = np.empty((chains, n))
    x[:, 0] = rng.normal(size=chains)
    noise = rng.normal(size=(chains, n)) * np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x


def _draws(kind, chains, n, seed=0):
    """Draws ``(chains, n)`` of one quantity."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.normal(size=(chains, n))
    if kind == "ar":  # slow mixing: the Geyer sequence runs past the direct lags
        return _ar1(rng, 0.995, chains, n)
    if kind == "antithetic":
        return _ar1(rng, -0.7, chains, n)
    if kind == "ties":
        return rng.integers(0, 4, size=(chains, n)).astype(float)
    if kind == "cauchy":
        return rng.standard_cauchy(size=(chains, n))
    if kind == "shifted":  # chains that disagree
        return rng.normal(size=(chains, n)) + np.arange(chains)[:, None] * 0.5
    if kind == "constant":
        return np.full((chains, n), 2.5)
    if kind == "frozen-chain":
        x = rng.normal(size=(chains, n))
        x[0] = x[0, 0]
        return x
    if kind == "signed-zeros":  # -0.0 and 0.0 are one value, tied
        return rng.choice([-0.0, 0.0, 1.0], size=(chains, n))
    if kind == "nan":
        x = rng.normal(size=(chains, n))
        x[-1, n // 3] = np.nan
        return x
    if kind == "inf":
        x = rng.normal(size=(chains, n))
        x[0, n // 2] = np.inf
        return x
    raise ValueError(kind)


def _arviz(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "r_hat": array_stats.rhat(x, method="rank"),
            "ess_bulk": array_stats.ess(x, method="bulk"),
            "ess_tail": array_stats.ess(x, method="tail", prob=PROB),
            "ess_mean": array_stats.ess(x, method="mean"),
            "mcse_mean": array_stats.mcse(x, method="mean"),
        }


def _ours(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "r_hat": dg.rhat(x),
            "ess_bulk": dg.ess(x, "bulk"),
            "ess_tail": dg.ess(x, "tail"),
            "ess_mean": dg.ess(x, "mean"),
            "mcse_mean": dg.mcse(x, "mean"),
        }


def _assert_same(ours, theirs):
    for name, expected in theirs.items():
        np.testing.assert_allclose(np.asarray(ours[name], dtype=float),
                                   np.asarray(expected, dtype=float), rtol=1e-10, atol=0,
                                   equal_nan=True, err_msg=name)  # fmt: skip


KINDS = ["normal", "ar", "antithetic", "ties", "cauchy", "shifted", "constant",
         "frozen-chain", "signed-zeros", "nan", "inf"]  # fmt: skip


@pytest.mark.parametrize("road", ["compiled", "one-at-a-time", "numpy"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("chains, n", [(1, 1001), (2, 7), (4, 4), (4, 5000), (3, 40_001)])
def test_the_rank_diagnostics_are_arviz_s(monkeypatch, road, kind, chains, n):
    """On the compiled road (by blocks of quantities, hamiltonia.diagnostics.batched), on
    its road of one quantity at a time (what a very long run takes) and on NumPy's (what
    runs too small for the kernels take)."""
    if road == "one-at-a-time":
        monkeypatch.setattr(batched, "BATCH_MAX_SIZE", 0)
    if road == "numpy":
        monkeypatch.setattr(kernels, "COMPILED_MIN_SIZE", 10**12)
    x = _draws(kind, chains, n, seed=chains * n)
    _assert_same(_ours(x), _arviz(x))


@pytest.mark.parametrize("kind", ["normal", "antithetic", "ar", "ties", "shifted"])
@pytest.mark.parametrize("direct_from", [0, 10**12])
def test_both_roads_of_the_autocovariances_are_arviz_s(monkeypatch, kind, direct_from):
    """Direct lag sums for every sequence (0), or the FFT for every one (10^12), on the road
    of one quantity at a time (the road by blocks sums the first lags directly always)."""
    monkeypatch.setattr(batched, "BATCH_MAX_SIZE", 0)
    monkeypatch.setattr(rank_estimators, "_DIRECT_MIN", direct_from)
    x = _draws(kind, 4, 3000, seed=5)
    _assert_same(_ours(x), _arviz(x))


def test_several_parameters_and_threads_give_the_same_numbers(monkeypatch):
    rng = np.random.default_rng(3)
    draws = np.stack([_ar1(rng, phi, 4, 4000) for phi in (0.0, 0.5, 0.9, -0.5)], axis=-1)
    single = {k: np.asarray(v) for k, v in _ours(draws).items()}
    monkeypatch.setattr(univariate, "_THREADED_SIZE", 1)
    threaded = _ours(draws)
    for name, values in single.items():
        np.testing.assert_array_equal(threaded[name], values, err_msg=name)
        assert values.shape == (4,)
    _assert_same(single, {k: np.array([_arviz(draws[..., i])[k] for i in range(4)])
                          for k in single})  # fmt: skip


def test_convergence_is_rhat_and_the_bulk_and_tail_ess_together():
    draws = np.random.default_rng(4).normal(size=(4, 2000, 3))
    table = dg.estimators.convergence(draws)
    np.testing.assert_array_equal(table["r_hat"], dg.rhat(draws))
    np.testing.assert_array_equal(table["ess_bulk"], dg.ess(draws, "bulk"))
    np.testing.assert_array_equal(table["ess_tail"], dg.ess(draws, "tail"))


def test_one_quantity_gives_a_number_not_an_array():
    x = np.random.default_rng(6).normal(size=(2, 500))
    assert np.ndim(dg.ess(x)) == 0 and dg.ess(x)[()] == pytest.approx(array_stats.ess(x))


def test_the_tail_probability_is_arviz_s_without_importing_it(monkeypatch, tmp_path):
    from arviz_base.rcparams import defaultParams, get_arviz_rcfile

    assert univariate._ARVIZ_CI_PROB == defaultParams["stats.ci_prob"][0]
    monkeypatch.chdir(tmp_path)
    assert {str(p) for p in univariate._arvizrc_candidates()} >= {str(tmp_path / "arvizrc")}
    found = get_arviz_rcfile()
    assert (found is None) == (not any(p.is_file() for p in univariate._arvizrc_candidates()))
    # A changed rcParams is followed (arviz_base is imported here).
    with monkeypatch.context() as m:
        m.setitem(rcParams, "stats.ci_prob", 0.8)
        x = _draws("normal", 2, 3000)
        assert dg.ess(x, "tail")[()] == pytest.approx(array_stats.ess(x, method="tail", prob=0.8))


@pytest.mark.parametrize("kind", ["normal", "cauchy", "ties", "signed-zeros", "constant"])
def test_the_sort_kernel_sorts(kind):
    values = _draws(kind, 1, 50_000, seed=8).ravel().copy()
    if kind == "normal":
        values[:3] = [1e300, -1e300, 5e-324]  # a range wider than a double can divide
    order, out = kernels._kernels().sort(values)
    np.testing.assert_array_equal(out, np.sort(values))
    np.testing.assert_array_equal(values[order], out)
    assert np.array_equal(np.sort(order), np.arange(values.size))


def test_the_extremes_are_numpy_s():
    draws = np.random.default_rng(9).normal(size=(3, 500, 4))
    draws[1, 7, 2] = np.nan
    low, high, nan = dg.estimators.extremes(draws)
    np.testing.assert_array_equal(low, np.nanmin(draws, axis=1))
    np.testing.assert_array_equal(high, np.nanmax(draws, axis=1))
    np.testing.assert_array_equal(nan, np.isnan(draws).any(axis=1))


def test_a_quantile_from_its_order_statistics_is_numpy_s():
    rng = np.random.default_rng(10)
    for size in (4, 5, 17, 1000, 12_345):
        a = rng.normal(size=size)
        ordered = np.sort(a)
        for p in (0.0, 0.055, 0.11, 0.25, 0.5, 0.89, 0.945, 1.0, PROB, 1 - PROB):
            assert screening._quantile_of(lambda i, s=ordered: s[i], size, p) == np.quantile(a, p)


# ------------------------------------------------------------------ the checks' screen
SCREEN_KINDS = ["normal", "ar", "antithetic", "ties", "cauchy", "shifted", "frozen-chain"]


@pytest.mark.parametrize("kind", SCREEN_KINDS)
@pytest.mark.parametrize("chains, n", [(1, 20_000), (4, 4001), (4, 20_000)])
def test_the_screen_decides_as_the_exact_values(monkeypatch, kind, chains, n):
    """Each value the screen gives is exact, or a bound on the right side of both the exact
    value and the threshold: the checks decide alike."""
    monkeypatch.setattr(screening, "_SCREEN_MIN", 1000)  # the screen at test sizes
    x = _draws(kind, chains, n, seed=n + chains)[..., None]
    exact = est.convergence(x)
    for r_hat_max, ess_min in [(1.01, 100.0 * chains), (1.001, 0.3 * chains * n), (1.5, 50.0)]:
        values, is_exact = est.screened_convergence(x, r_hat_max, ess_min)
        np.testing.assert_array_equal(values["ess_tail"], exact["ess_tail"])
        assert is_exact["ess_tail"].all()
        for name, threshold, side in (("r_hat", r_hat_max, 1), ("ess_bulk", ess_min, -1)):
            got, want = values[name][0], exact[name][0]
            if is_exact[name][0]:
                assert got == want or (np.isnan(got) and np.isnan(want))
            else:
                # A bound: at least the exact R-hat (at most the exact ESS), and within the
                # threshold.
                assert side * got >= side * want
                assert side * got <= side * threshold
                assert (want <= threshold) if side == 1 else (want >= threshold)


def test_a_healthy_long_run_is_decided_without_a_sort(monkeypatch):
    x = np.random.default_rng(11).normal(size=(4, 40_000, 2))
    calls = []
    sort = kernels._kernels().sort
    monkeypatch.setattr(kernels._kernels(), "sort", lambda *a: calls.append(1) or sort(*a))
    values, is_exact = est.screened_convergence(x, 1.01, 400.0)
    assert calls == [] and not is_exact["r_hat"].any() and not is_exact["ess_bulk"].any()
    assert np.all(values["r_hat"] <= 1.01) and np.all(values["ess_bulk"] >= 400.0)
    # A chain elsewhere: R-hat is computed exactly, and flags it.
    x[0, :, 1] += 0.5
    values, is_exact = est.screened_convergence(x, 1.01, 400.0)
    assert is_exact["r_hat"][1] and values["r_hat"][1] == est.convergence(x)["r_hat"][1] > 1.01


def test_a_small_run_s_checks_import_neither_arviz_stats_nor_compile_kernels():
    """The end-of-run checks of a small run take the NumPy road: no second spent importing
    arviz_stats (with xarray and pandas), no diagnostic kernel compiled."""
    script = (
        "import sys, warnings\n"
        "import hamiltonia as hm\n"
        "from hamiltonia.diagnostics import estimator_kernels\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        "    r = hm.sample('gaussian-d10', 'hmc', chains=4, warmup=100, draws=400, seed=0,\n"
        "                  progress=False, compiled=False)\n"
        "r.diagnose()\n"
        "print(sorted(m for m in ('arviz_stats', 'xarray') if m in sys.modules),\n"
        "      estimator_kernels._KERNELS is None)\n"
    )
    assert printed_by(script) == ["[]", "True"]


@pytest.mark.parametrize("kind", [*SCREEN_KINDS, "signed-zeros", "offset", "skewed"])
def test_the_folded_scores_lie_within_their_value_bucket_s_bounds(kind):
    """Every folded draw's exact normal score :math:`z(|x - \\text{median}|)` lies within
    the middle and half width that the screen gives its value bucket: the bounds on the
    folded :math:`\\hat R` rest on it."""
    if kind == "offset":  # a narrow range far from zero: the edges' rounding matters
        x = 1e6 + 1e-4 * _draws("normal", 4, 6000, seed=12)
    elif kind == "skewed":  # the median far from the middle of the range
        x = np.random.default_rng(13).exponential(size=(4, 6000)) ** 3
    else:
        x = _draws(kind, 4, 6000, seed=14)
    split = rank_estimators._split(x)
    low, high = float(split.min()), float(split.max())
    for buckets in (7, 256, 32_768):
        scale = buckets / (high - low)
        keys = np.empty(split.shape, np.int32)
        counts = kernels._kernels().buckets(split, low, scale, buckets, keys).sum(axis=0)
        median = float(np.median(split))
        middle, half = screening._folded_bucket_scores(counts, low, scale, high, median, split.size)
        exact = rank_estimators._rank_scores(np.abs(split - median))
        assert np.all(np.abs(exact - middle[keys]) <= half[keys]), buckets


def test_the_scores_at_a_few_positions_are_the_table_s_to_the_bit():
    size = 12_345
    positions = np.array([0, 1, 77, size // 2, size - 2, size - 1])
    rank_estimators._TABLES.pop(size, None)
    alone = rank_estimators._scores_at(positions, size)
    np.testing.assert_array_equal(alone, rank_estimators._score_table(size)[positions])
    # From the table.
    np.testing.assert_array_equal(rank_estimators._scores_at(positions, size), alone)


@pytest.mark.parametrize("seed", range(6))
def test_the_nearer_counts_are_those_of_a_direct_count(seed):
    rng = np.random.default_rng(seed)
    b = int(rng.integers(1, 60))
    pivot = int(rng.integers(0, b))
    # Falling then rising, with runs of equal values (rounded steps) and a flat bottom.
    steps = np.round(rng.exponential(size=b), 1)
    v = np.concatenate((np.cumsum(steps[:pivot])[::-1], [0.0], np.cumsum(steps[pivot + 1 :])))
    q_pivot = int(rng.integers(0, b))
    q = np.abs(np.arange(b) - q_pivot) * rng.uniform(0.0, 1.0) + rng.uniform(-0.5, 0.5)
    q = np.round(q, 1)
    counts = rng.integers(0, 5, size=b)
    cumulative = np.concatenate(([0], np.cumsum(counts)))
    for strict in (True, False):
        got = kernels._kernels().nearer(v, q, cumulative, strict)
        want = [counts[(v < t) if strict else (v <= t)].sum() for t in q]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [4, 5, 1001])
def test_the_split_kernel_splits_as_arviz_and_flags_what_is_not_finite(n):
    draws = np.random.default_rng(15).normal(size=(3, n, 5))
    draws[1, 0, 1] = np.nan
    draws[2, n - 1, 2] = -np.inf
    draws[0, n // 2, 3] = np.inf  # the middle draw of an odd count: not in its split
    finite = []
    for d in range(5):
        x = draws[:, :, d]
        out = np.empty((6, n // 2))
        low, high, ok = kernels._kernels().split(draws, d, out)
        split = rank_estimators._split(x)
        np.testing.assert_array_equal(out, split)
        assert ok == np.isfinite(x).all()
        if ok:
            assert (low, high) == (split.min(), split.max())
        finite.append(ok)
    assert finite == [True, False, False, False, True]
