"""numba's inlining of ``inline="always"`` functions, made linear in the size of the callee.

Every kernel of a composition is inlined into the chain kernel by numba
(:mod:`hamiltonia.compiled.compose`), and a composition is compiled once per sampler and
machine (numba caches it on disk). On a user's first run that compilation is most of the
wait: the no-U-turn chain kernel took 12.5 s, and half of it was spent in one place.

Before it splices a callee into its caller, numba's ``InlineWorker.inline_ir`` copies the
callee's IR twice, each time with one ``copy.deepcopy`` per basic block. Each block refers
to the function's :class:`numba.core.ir.Scope`, which holds every variable of the function,
so each block's copy copies the whole scope again: :math:`O(B \\cdot V)` for a callee of
:math:`B` blocks and :math:`V` variables. A no-U-turn transition, with its own callees
inlined, has hundreds of each; the copies were 17.8 of 32 s in a profile of the chain
kernel's compilation.

:func:`install` gives the copies of one ``inline_ir`` call one shared ``memo``, as one
``copy.deepcopy`` of all the blocks would: the scope and its variables are copied once, and
every block's copy refers to that one copy. numba's own code is unchanged otherwise, and so
is the IR it produces (the blocks' scope copies were equal, and inlining replaces the scope
of each block it splices in by the caller's): kernels compiled under the patch give the
regression table's draws to the bit (``HAMILTONIA_REGRESSION_EXACT=1``, with an empty
kernel folder), and ``tests/compiled/test_inlining.py`` checks the copies. Measured on the
eight-schools NUTS chain kernel (its compilation alone, 2 cores): 12.5 s before, 7.7 s
after.

The patch applies only where ``inline_ir`` still copies block by block (read from its source
when installing): a numba that copies otherwise is left alone.
"""

from __future__ import annotations

import copy
import functools
import inspect
import threading

__all__ = ["install", "installed"]

#: The line of ``InlineWorker.inline_ir`` the patch is for.
_PER_BLOCK_COPY = "copy.deepcopy(the_ir.blocks[block_label])"

_state = threading.local()
_lock = threading.Lock()
_installed: bool | None = None


def _shared_memo() -> dict | None:
    return getattr(_state, "memo", None)


def _block_deepcopy(block, memo):
    """``copy.deepcopy`` of a block, with the shared memo of the ``inline_ir`` call that
    runs it, if any (then the block's scope is copied once for all its blocks)."""
    from numba.core import ir

    shared = _shared_memo()
    if shared is not None:
        memo = shared
        done = memo.get(id(block))
        if done is not None:
            return done
    new = ir.Block.__new__(ir.Block)
    memo[id(block)] = new
    for name, value in block.__dict__.items():
        setattr(new, name, copy.deepcopy(value, memo))
    return new


def _with_shared_memo(inline_ir):
    @functools.wraps(inline_ir)
    def wrapper(*args, **kwargs):
        outer = _shared_memo()
        # The memo holds the originals alive, so no id is reused while it is in force.
        _state.memo = {}
        try:
            return inline_ir(*args, **kwargs)
        finally:
            _state.memo = outer

    wrapper.__hamiltonia_shared_memo__ = True
    return wrapper


def install() -> bool:
    """Patch numba's inliner as the module docs say (once per process); whether it is
    patched (``False`` where numba's ``inline_ir`` no longer copies block by block)."""
    global _installed
    with _lock:
        if _installed is None:
            _installed = _patch()
        return _installed


def installed() -> bool:
    """Whether :func:`install` has patched numba's inliner in this process."""
    return bool(_installed)


def _patch() -> bool:
    from numba.core import ir
    from numba.core.inline_closurecall import InlineWorker

    original = InlineWorker.inline_ir
    if getattr(original, "__hamiltonia_shared_memo__", False):
        return True
    try:
        source = inspect.getsource(original)
    except (OSError, TypeError):
        return False
    if _PER_BLOCK_COPY not in source or "__deepcopy__" in vars(ir.Block):
        return False
    ir.Block.__deepcopy__ = _block_deepcopy
    InlineWorker.inline_ir = _with_shared_memo(original)
    return True
