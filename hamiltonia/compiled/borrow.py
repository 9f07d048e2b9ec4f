"""Borrowed views: arrays and generators that the chain kernel uses without counting
references.

Numba counts references to every array (and every ``numpy.random.Generator``) that a
variable holds: each assignment, slice, tuple and call argument adds an atomic increment and
a decrement, and the composed chain kernel hands the kernel context (the parameter tuples
``PF`` and ``PI``, the auxiliary variables, the scratch rows) to a dozen inlined parts every
iteration. LLVM's
reference-count pruning removes the pairs inside one basic block, but not those around the
parts' loops, so one iteration of HMC on a 2-d target made dozens of atomic operations,
which took 30 % of its time (33 against 23 ns per gradient on banana, measured).

The chain kernel's arrays all belong to its caller, which holds them for the whole call (the
scratch rows, allocated in the kernel, are kept alive to its end with :func:`keep_alive`).
:func:`borrowed` therefore hands the kernel the same arrays with a null reference count
(``meminfo``), on which numba's reference operations are no-ops. A part that allocates an
array of its own still gets a counted one.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils, datamodel
from numba.extending import intrinsic

__all__ = ["borrowed", "keep_alive"]


def _without_meminfo(context, builder, ty, value):
    """``value`` of numba type ``ty`` with the ``meminfo`` of every member set to null."""
    if isinstance(ty, types.BaseTuple):
        for i, member in enumerate(ty.types):
            item = builder.extract_value(value, i)
            value = builder.insert_value(value, _without_meminfo(context, builder, member, item), i)
        return value
    model = context.data_model_manager[ty]
    if isinstance(model, datamodel.models.StructModel) and "meminfo" in model._fields:
        position = model.get_field_position("meminfo")
        null = cgutils.get_null_value(builder.extract_value(value, position).type)
        return builder.insert_value(value, null, position)
    return value


@intrinsic
def borrowed(typingctx, value):
    """``value`` (an array, a generator, or a tuple of them) as a view that numba does not
    count references to. The caller must keep the original alive while the view is used."""

    def codegen(context, builder, signature, args):
        return _without_meminfo(context, builder, signature.args[0], args[0])

    return value(value), codegen


@intrinsic
def keep_alive(typingctx, value):
    """Nothing; a use of ``value`` here keeps numba from releasing it earlier."""

    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.none(value), codegen
