"""Borrowed views (hamiltonia.compiled.borrow): the same memory, no reference counting."""

import numpy as np
from numba import njit

from hamiltonia.compiled.borrow import borrowed, keep_alive


@njit(cache=False)
def _write_through(a, b, rng):
    x, (y, g) = borrowed(a), borrowed((b, rng))
    x[0] = 5.0
    y[1] = 7
    return x.sum() + y.sum(), g.standard_normal()


def test_borrowed_views_share_the_callers_memory_and_generator_stream():
    a, b = np.ones(3), np.arange(3)
    total, z = _write_through(a, b, np.random.default_rng(4))
    assert a.tolist() == [5.0, 1.0, 1.0] and b.tolist() == [0, 7, 2]
    assert total == 7.0 + 9
    # The borrowed generator advances the caller's generator, as the original would.
    expected = np.random.default_rng(4).standard_normal()
    assert z == expected


@njit(cache=False)
def _scratch_sums(n, borrow):
    owned = np.ones((4, n))
    rows = borrowed(owned) if borrow else owned
    total = 0.0
    for k in range(4):
        row = rows[k, : n - k]
        for i in range(row.shape[0]):
            total += row[i]
    keep_alive(owned)
    return total


def _increfs(fn) -> int:
    return sum(ir.count("call void @NRT_incref") for ir in fn.inspect_llvm().values())


def test_views_of_a_borrowed_array_are_not_reference_counted():
    # Compiled twice, once per value of ``borrow`` (a literal would fold); the counting
    # version takes a reference for every row view, the borrowing one for none of them.
    @njit(cache=False)
    def counted(n):
        return _scratch_sums(n, False)

    @njit(cache=False)
    def borrowing(n):
        return _scratch_sums(n, True)

    assert counted(6) == borrowing(6) == 6 + 5 + 4 + 3
    assert _increfs(borrowing) < _increfs(counted)
