"""The kernel context: what every kernel of a composition reads besides the state it is
handed (:mod:`hamiltonia.compiled.roles`, "the kernel context").

``ctx = chain_context(rng, aux, scratch, stats, PF, PI, logp, fdata, idata)`` (compiled code
only) holds the chain's generator, auxiliary variables, scratch rows, statistics row, the
parameters of the parts and the target, and a kernel reads them as ``ctx.rng``, ``ctx.aux``
... (:data:`~hamiltonia.compiled.roles.CONTEXT_FIELDS`). The chain kernel builds it once per
call from its borrowed views (:mod:`hamiltonia.compiled.borrow`), the Python entries of
:mod:`hamiltonia.compiled.python_calls` with ``None`` in the fields a method has not.

It is a numba type of its own, a struct of the fields, rather than a named tuple, for one
reason: numba counts references to a tuple's arrays wherever the tuple is bound, and the
context is bound as the first argument of every inlined kernel. The members are borrowed
views, whose counts are no-ops that LLVM deletes, but numba still wrote them out: composed
with a named tuple, compiling ``hmc`` took 10 % longer than with the positional arguments it
replaced (about 0.3 s of 2.7, measured side by side with an empty cache). The struct declares
no references to count, and reading a field hands out the borrowed view as it is; both are
right only because :func:`chain_context` borrows every member.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.core.datamodel import models
from numba.core.typing.templates import AttributeTemplate
from numba.extending import (
    infer_getattr,
    intrinsic,
    lower_getattr_generic,
    register_model,
)

from hamiltonia.compiled.borrow import _without_meminfo
from hamiltonia.compiled.roles import CONTEXT_FIELDS

__all__ = ["ChainContextType", "chain_context"]


class ChainContextType(types.Type):
    """The numba type of a kernel context: the types of its fields, in
    :data:`~hamiltonia.compiled.roles.CONTEXT_FIELDS` order."""

    def __init__(self, members: tuple):
        self.members = tuple(members)
        pairs = zip(CONTEXT_FIELDS, self.members, strict=True)
        inner = ", ".join(f"{name}={ty}" for name, ty in pairs)
        super().__init__(name=f"ChainContext({inner})")

    @property
    def key(self):
        return self.members

    def field(self, name: str):
        return self.members[CONTEXT_FIELDS.index(name)]


@register_model(ChainContextType)
class ChainContextModel(models.StructModel):
    """A struct of the fields, with no references of its own to count (see the module's
    docstring)."""

    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, list(zip(CONTEXT_FIELDS, fe_type.members, strict=True)))

    def traverse(self, builder):
        return []


@infer_getattr
class ChainContextAttributes(AttributeTemplate):
    key = ChainContextType

    def generic_resolve(self, typ, attr):
        if attr in CONTEXT_FIELDS:
            return typ.field(attr)
        return None


@lower_getattr_generic(ChainContextType)
def _context_field(context, builder, typ, value, attr):
    # The borrowed view as it is, not a new reference: its release is a no-op.
    return context.data_model_manager[typ].get(builder, value, attr)


@intrinsic
def chain_context(typingctx, rng, aux, scratch, stats, PF, PI, logp, fdata, idata):
    """The kernel context of these values (in compiled code), each borrowed: the caller
    keeps them alive while the context is used."""
    members = (rng, aux, scratch, stats, PF, PI, logp, fdata, idata)
    ctx_type = ChainContextType(members)

    def codegen(context, builder, signature, args):
        struct = cgutils.create_struct_proxy(ctx_type)(context, builder)
        for name, ty, value in zip(CONTEXT_FIELDS, signature.args, args, strict=True):
            setattr(struct, name, _without_meminfo(context, builder, ty, value))
        return struct._getvalue()

    return ctx_type(*members), codegen
