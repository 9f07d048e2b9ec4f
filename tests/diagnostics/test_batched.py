"""The rank diagnostics by blocks of quantities (:mod:`hamiltonia.diagnostics.batched`) are
ArviZ's numbers and the road of one quantity's: on many chains of few draws, few chains of
many, draws with ties, close values, constant and non-finite columns, one quantity or many;
and the checks of a run of many short chains take them without the screen."""

import warnings

import numpy as np
import pytest
from arviz_base import rcParams

from hamiltonia.diagnostics import batched, screening, univariate
from hamiltonia.diagnostics import estimator_kernels as kernels
from hamiltonia.diagnostics import estimators as est
from tests.diagnostics.test_fast_estimators import _arviz as arviz_of
from tests.diagnostics.test_fast_estimators import _draws

PROB = rcParams["stats.ci_prob"]
NAMES = ("r_hat", "ess_bulk", "ess_tail", "ess_mean", "mcse_mean")


@pytest.fixture(autouse=True)
def compiled_road(monkeypatch):
    """Every size takes the compiled road, and so the road by blocks."""
    monkeypatch.setattr(kernels, "COMPILED_MIN_SIZE", 0)


def _arviz(x: np.ndarray) -> dict:
    """ArviZ's diagnostics of ``x`` ``(chains, draws)`` or ``(chains, draws, dim)``."""
    return arviz_of(np.moveaxis(x, -1, 0) if x.ndim == 3 else x)


def _blocks(x: np.ndarray) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return univariate._diagnostics(x, NAMES, PROB)


def _assert_same(ours: dict, theirs: dict) -> None:
    for name, expected in theirs.items():
        np.testing.assert_allclose(np.asarray(ours[name], dtype=float),
                                   np.asarray(expected, dtype=float), rtol=1e-10, atol=0,
                                   equal_nan=True, err_msg=name)  # fmt: skip


def _many(kinds, chains: int, n: int) -> np.ndarray:
    """Quantities of the kinds of :func:`_draws`, side by side ``(chains, n, len(kinds))``."""
    return np.stack([_draws(k, chains, n, seed=i) for i, k in enumerate(kinds)], axis=-1)


KINDS = ["normal", "ar", "antithetic", "ties", "cauchy", "shifted", "constant",
         "frozen-chain", "signed-zeros", "nan", "inf"]  # fmt: skip


@pytest.mark.parametrize("chains, n", [(1024, 8), (512, 9), (64, 40), (4, 1001), (1, 600),
                                       (2, 4), (3, 5)])  # fmt: skip
def test_many_quantities_at_once_are_arviz_s(chains, n):
    x = _many(KINDS, chains, n)
    _assert_same(_blocks(x), _arviz(x))


@pytest.mark.parametrize("kind", ["normal", "ar", "ties", "cauchy", "constant", "nan", "inf"])
def test_one_quantity_of_chains_and_draws_is_arviz_s(kind):
    x = _draws(kind, 256, 30, seed=3)
    ours = _blocks(x)
    assert all(np.ndim(v) == 0 for v in ours.values())
    _assert_same(ours, _arviz(x))


def test_draws_that_differ_in_their_last_bits_are_ranked_in_order():
    """Draws within a few units in the last place of each other share the sort keys' high
    bits: they are put in order by value (the ranks are ArviZ's)."""
    rng = np.random.default_rng(5)
    base = 1e6 + 1e-4 * rng.normal(size=(64, 50))
    steps = 1e6 + np.spacing(1e6) * rng.integers(-3000, 3000, size=(64, 50))
    ladder = np.nextafter(1.0, 2.0) ** rng.integers(0, 5, size=(64, 50)).astype(float)
    x = np.stack([base, steps, ladder, -steps], axis=-1)
    # The rank diagnostics (the mean's ESS of draws 1e6 apart from 0 and 1e-4 from each
    # other is ill-conditioned: any two orders of its sums differ in the fifth digit).
    theirs = {k: v for k, v in _arviz(x).items() if k in ("r_hat", "ess_bulk", "ess_tail")}
    _assert_same(_blocks(x), theirs)


def test_the_blocks_give_the_numbers_of_the_road_of_one_quantity(monkeypatch):
    """The same numbers as the road of one quantity at a time (summed in another order: to
    a few units in the last place), in blocks of any size and on any number of threads."""
    x = _many(["normal", "ar", "ties", "shifted", "antithetic", "cauchy"] * 3, 128, 60)
    blocks = _blocks(x)
    monkeypatch.setattr(batched, "BATCH_MAX_SIZE", 0)
    one_at_a_time = _blocks(x)
    for name in NAMES:
        np.testing.assert_allclose(blocks[name], one_at_a_time[name], rtol=1e-12, err_msg=name)
    monkeypatch.undo()
    monkeypatch.setattr(kernels, "COMPILED_MIN_SIZE", 0)
    for size in (1, 3 * 128 * 60, 10**9):
        monkeypatch.setattr(batched, "BLOCK_NUMBERS", size)
        for workers in (1, 3):
            monkeypatch.setattr(batched, "_threads", lambda count, w=workers: min(w, count))
            again = _blocks(x)
            for name in NAMES:
                np.testing.assert_array_equal(again[name], blocks[name], err_msg=name)


def test_a_long_run_takes_the_road_of_one_quantity(monkeypatch):
    assert batched.takes_batched(1024, 80) and batched.takes_batched(4, 300_000)
    assert not batched.takes_batched(4, 2**21 + 2) and not batched.takes_batched(4, 3)
    monkeypatch.setattr(batched, "BATCH_MAX_SIZE", 100)
    x = _many(["normal", "ties"], 4, 200)
    calls = []
    original = univariate._blocks
    monkeypatch.setattr(univariate, "_blocks", lambda *a: calls.append(1) or original(*a))
    _assert_same(_blocks(x), _arviz(x))
    assert calls == []


def test_the_checks_of_many_short_chains_are_exact_without_the_screen(monkeypatch):
    """1,024 chains of 80 draws: the screen would count 2,048 sequences into 32,768 buckets
    each; the exact values by blocks are cheaper, and are the checks' values."""
    assert not screening._screens(1024, 80) and not screening._screens(64, 1250)
    assert screening._screens(4, 300_000) and screening._screens(4, 40_000)
    x = _many(["normal", "shifted", "ar"], 1024, 80)
    calls = []
    monkeypatch.setattr(screening, "_screen_compiled", lambda *a: calls.append(1))
    values, exact = est.screened_convergence(x, 1.01, 100.0 * 1024)
    assert calls == [] and all(e.all() for e in exact.values())
    table = est.convergence(x)
    for name, got in values.items():
        np.testing.assert_array_equal(got, table[name], err_msg=name)


def test_the_screen_leaves_its_undecided_values_to_the_road_by_blocks(monkeypatch):
    """Where the screen's bounds do not decide, its exact values are the blocks' (those of
    :func:`convergence`), computed for all those quantities at once."""
    monkeypatch.setattr(screening, "_SCREEN_MIN", 1000)
    x = _many(["normal", "shifted", "ar", "nan", "inf"], 4, 4001)
    table = est.convergence(x)
    values, exact = est.screened_convergence(x, 1.01, 400.0)
    assert exact["r_hat"][1] and exact["ess_bulk"][2]
    for name in values:
        decided = exact[name]
        np.testing.assert_array_equal(values[name][decided], table[name][decided], err_msg=name)
