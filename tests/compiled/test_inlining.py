"""The patch of numba's inliner (hamiltonia.compiled.inlining): the callee's blocks are
copied with one memo, so they share one copy of the scope, and what is inlined is unchanged.
That the chain kernels are the same to the bit is the regression table's check
(``HAMILTONIA_REGRESSION_EXACT=1``), with kernels compiled under the patch."""

import copy
import sys
import textwrap

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from numba.core import ir  # noqa: E402
from numba.core.inline_closurecall import InlineWorker  # noqa: E402

from hamiltonia.compiled import inlining  # noqa: E402

CALLEE = textwrap.dedent(
    """
    from numba import njit


    @njit(inline="always")
    def clipped_sum(x, lo, hi):
        total = 0.0
        for i in range(x.shape[0]):
            v = x[i]
            if v < lo:
                v = lo
            elif v > hi:
                v = hi
            total += v
        return total


    @njit
    def caller(x):
        # Two call sites of a callee of several blocks.
        return clipped_sum(x, -1.0, 1.0) + 2.0 * clipped_sum(x * x, 0.0, 0.5)
    """
)


def test_install_patches_once_and_says_so():
    assert inlining.install() is True
    assert inlining.installed()
    patched = InlineWorker.inline_ir
    assert inlining.install() is True and InlineWorker.inline_ir is patched


def test_blocks_copied_under_one_memo_share_one_scope_and_equal_the_originals():
    inlining.install()
    module = _module()
    blocks = numba.core.compiler.run_frontend(module.clipped_sum.py_func).blocks
    assert len(blocks) > 2
    inlining._state.memo = {}
    try:
        copies = {label: copy.deepcopy(block) for label, block in blocks.items()}
    finally:
        inlining._state.memo = None
    scopes = {id(block.scope) for block in copies.values()}
    assert len(scopes) == 1
    assert all(copies[label] == blocks[label] for label in blocks)
    assert all(copies[label] is not blocks[label] for label in blocks)
    # Without the shared memo, a block is copied as copy.deepcopy always did.
    alone = copy.deepcopy(next(iter(blocks.values())))
    assert alone == next(iter(blocks.values())) and isinstance(alone, ir.Block)


def test_a_callee_inlined_twice_computes_what_python_does():
    inlining.install()
    module = _module()
    x = np.random.default_rng(3).normal(size=50)
    want = module.caller.py_func.__globals__["clipped_sum"].py_func
    expected = want(x, -1.0, 1.0) + 2.0 * want(x * x, 0.0, 0.5)
    assert module.caller(x) == pytest.approx(expected, rel=1e-14)


def _module():
    name = "hamiltonia_test_inlining_module"
    if name not in sys.modules:
        import types

        module = types.ModuleType(name)
        exec(compile(CALLEE, f"<{name}>", "exec"), module.__dict__)
        sys.modules[name] = module
    return sys.modules[name]
