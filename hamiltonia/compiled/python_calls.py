"""A part's kernels called from Python, one chain at a time: the Python form of a part
written only as a kernel.

Such a part (``docs/design.rst``, "A part is written once") runs on the compiled path, but
a few Python entries still ask for its maths, before any chain runs: the step-size search of
dual averaging draws momenta, integrates a step and compares energies
(:func:`~hamiltonia.tuners.adaptation.find_initial_step_size`), and the test kit's
:func:`~hamiltonia.testing.check_invariance` draws the chains' auxiliary variables and
momenta. The base classes' methods (:class:`~hamiltonia.Hamiltonian`,
:class:`~hamiltonia.hamiltonians.Metric`), which such a part leaves as they are, call its
kernels through :func:`kernel_form`: each method's kernel is composed, the roles it calls
bound to the part's own kernels and the names it reads to its parameters, into a small
compiled entry (cached on disk as the chain kernel is, :mod:`hamiltonia.compiled.compose`),
and called once per chain, on the chain's own generator: the draws are the compiled
chain's.

The Python signatures carry no position for the momentum's methods (``sample_momentum(rngs,
aux)``, ``velocity(p, aux)``, ``kinetic(p, aux)``): their kernels get a position of ``nan``,
so a kernel that reads one (not a separable Hamiltonian's) gives ``nan``, never a number
for a position it was not given. What a kernel cannot stand in for is refused with
:class:`NoPythonForm`, naming the part, the method and what to write, before anything is
composed: a role its kernels do not fill, and a workspace (which the kernels derive only
inside the compiled chain, in a step that draws).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hamiltonia import backend
from hamiltonia.compiled.context import chain_context
from hamiltonia.compiled.parts import NotCompilable, PartKernels, compiled_counterpart
from hamiltonia.compiled.roles import (
    HAMILTONIAN,
    draw_momentum,
    energy,
    inverse_mass_diagonal,
    kinetic,
    target_energy,
    update_auxiliary,
    velocity,
)

__all__ = ["KernelForm", "NoPythonForm", "kernel_form", "kernels_for"]


class NoPythonForm(NotImplementedError):
    """A part's method has no Python form, and its kernel cannot be called in its place: the
    message names the part, the method and what to write."""


# -- the entries, one per method: each is composed with the part's kernels in its roles,
# and builds the kernel context from what the method has (None for what it has not: a
# kernel that reads it does not compile here, and the method has no Python form)


def _draw_entry(rng, q, p, aux, PF, PI):
    draw_momentum(chain_context(rng, aux, None, None, PF, PI, None, None, None), q, p)


def _velocity_entry(q, p, out, aux, PF, PI):
    # The role may hand back p itself (M = I): copied, so that out holds it either way.
    v = velocity(chain_context(None, aux, None, None, PF, PI, None, None, None), q, p, out)
    for i in range(out.shape[0]):
        out[i] = v[i]


def _kinetic_entry(q, p, v, aux, PF, PI):
    ctx = chain_context(None, aux, None, None, PF, PI, None, None, None)
    return kinetic(ctx, q, p, velocity(ctx, q, p, v))


def _energy_entry(q, p, lp, grad, v, eps, aux, PF, PI):
    ctx = chain_context(None, aux, None, None, PF, PI, None, None, None)
    return energy(ctx, q, p, lp, grad, v, eps)


def _target_energy_entry(q, p, lp, grad, v, eps, aux, PF, PI, logp, fdata, idata):
    ctx = chain_context(None, aux, None, None, PF, PI, logp, fdata, idata)
    return target_energy(ctx, q, p, lp, grad, v, eps)


def _update_entry(rng, q, p, aux, PF, PI):
    update_auxiliary(chain_context(rng, aux, None, None, PF, PI, None, None, None), q, p)


def _inverse_mass_entry(aux, out, PF, PI):
    m = inverse_mass_diagonal(chain_context(None, aux, None, None, PF, PI, None, None, None))
    for i in range(out.shape[0]):
        out[i] = m[i]


#: The roles each Python method needs filled to be called through the kernels.
NEEDS = {
    "sample_momentum": ("draw_momentum",),
    "from_standard": ("draw_momentum",),  # a metric's: its sample() draws through it
    "velocity": ("velocity",),
    "kinetic": ("velocity", "kinetic"),
    "energy": ("energy",),
    "update_auxiliary": ("update_auxiliary",),
    "inverse_mass_diagonal": ("inverse_mass_diagonal",),
}


def _written(part, method: str) -> str:
    return f"write {type(part).__name__}.{method}"


def kernels_for(part, kind: str, method: str, dim: int) -> PartKernels:
    """``part``'s kernels, to call in place of its Python ``method``, or
    :class:`NoPythonForm` naming both where it hands out none (neither form of the method)."""
    compiled = getattr(part, "compiled", None)
    if compiled is None or compiled(dim) is None:
        reason = "it hands out no kernels: compiled() returns None"
    else:
        try:
            return compiled_counterpart(part, dim, kind)
        except NotCompilable as err:
            reason = str(err)
    raise NoPythonForm(
        f"{kind} {type(part).__name__} has neither a Python {method} nor a kernel for it "
        f"({reason}): {_written(part, method)}, or hand out its kernels from compiled()"
    )


def kernel_form(part, kind: str, method: str, dim: int, *, optional: bool = False):
    """A :class:`KernelForm` of ``part`` (a ``kind`` filling the Hamiltonian's roles: a
    Hamiltonian or a metric) to call in place of its Python ``method``, in ``dim``
    dimensions; with ``optional``, ``None`` where the part hands out no kernel for it (the
    base class's default then stands).

    Raises
    ------
    NoPythonForm
        Naming the part, the method and the reason, where the kernels cannot stand in for
        the method (none for its roles, or a workspace).
    """
    try:
        kernels = kernels_for(part, kind, method, dim)
    except NoPythonForm:
        if optional:
            return None
        raise
    who = f"{kind} {type(part).__name__}"
    for role in NEEDS[method]:
        if role not in kernels.functions:
            if optional:
                return None
            raise NoPythonForm(
                f"{who} has no Python {method}, and hands out no {role!r} kernel to call in "
                f"its place (its kernels: {sorted(kernels.functions)}): "
                f"{_written(part, method)}, or hand out a {role!r} kernel from compiled()"
            )
    if kernels.workspace:
        names = ", ".join(repr(entry[0]) for entry in kernels.workspace)
        raise NoPythonForm(
            f"{who} has no Python {method}, and its kernels cannot be called in its place "
            f"from Python: they keep the workspace {names}, which they derive only inside "
            f"the compiled chain; {_written(part, method)}"
        )
    return KernelForm(part, kind, method, kernels)


_ENTRIES: dict = {}


class KernelForm:
    """The kernels of a part in the Hamiltonian's slot, laid out alone and called from
    Python one chain at a time (see the module's docstring); built by :func:`kernel_form`,
    afresh for each call of a method, so that it reads the part's current parameters."""

    def __init__(self, part, kind: str, method: str, kernels: PartKernels):
        from hamiltonia.compiled.plan import _layout

        self.part, self.method = part, method
        self.layout = _layout(None, {HAMILTONIAN: (part, kind)}, {HAMILTONIAN: kernels})

    def _entry(self, entry):
        """``entry`` composed with the part's kernels (once per process for a composition;
        numba's cache keeps it between processes)."""
        from hamiltonia.compiled.compose import CompositionError, compose

        layout = self.layout
        roles = {role: fn for role, fn in layout.functions.items() if role != "run_chains"}
        key = (
            entry,
            tuple(sorted((role, id(fn)) for role, fn in roles.items())),
            tuple(sorted(layout.names.items(), key=repr)),
        )
        if key not in _ENTRIES:
            try:
                _ENTRIES[key] = compose(roles, entry, layout.names, layout.parts)
            except CompositionError as err:
                who = layout.parts[HAMILTONIAN]
                raise NoPythonForm(
                    f"{who} has no Python {self.method}, and its kernels cannot be called in "
                    f"its place from Python ({err}); {_written(self.part, self.method)}"
                ) from None
        return _ENTRIES[key]

    def _aux_rows(self, aux: dict | None, n: int) -> np.ndarray:
        """The chains' auxiliary variables laid out as the kernels read them, one row per
        chain: a variable the chains do not hold yet at the part's initial value."""
        rows = np.zeros((n, self.layout.n_aux))
        for name, at, size, initial in self.layout.aux:
            value = (aux or {}).get(name)
            if value is None:
                value = np.broadcast_to(np.asarray(initial, dtype=np.float64), (size,))
            value = np.reshape(np.asarray(backend.to_numpy(value), dtype=np.float64), (-1, size))
            rows[:, at : at + size] = np.broadcast_to(value, (n, size))
        return rows

    def _nowhere(self, dim: int) -> np.ndarray:
        """The position of a method whose Python signature has none (see the module's
        docstring)."""
        return np.full(dim, np.nan)

    @staticmethod
    def _rows(x) -> np.ndarray:
        return np.ascontiguousarray(backend.to_numpy(x), dtype=np.float64)

    def sample(self, rngs, aux: dict | None, dim: int):
        """One momentum per generator (``draw_momentum``), shape ``(len(rngs), dim)``."""
        n = len(rngs)
        p, q, rows = np.empty((n, dim)), self._nowhere(dim), self._aux_rows(aux, n)
        run, PF, PI = self._entry(_draw_entry), self.layout.PF, self.layout.PI
        for c, rng in enumerate(rngs):
            run(rng, q, p[c], rows[c], PF, PI)
        return backend.asarray(p)

    def velocity(self, p, aux: dict | None):
        """:math:`\\partial H/\\partial p` per chain (``velocity``)."""
        p = self._rows(p)
        n, dim = p.shape
        out, q, rows = np.empty_like(p), self._nowhere(dim), self._aux_rows(aux, n)
        run, PF, PI = self._entry(_velocity_entry), self.layout.PF, self.layout.PI
        for c in range(n):
            run(q, p[c], out[c], rows[c], PF, PI)
        return backend.asarray(out)

    def kinetic(self, p, aux: dict | None):
        """The kinetic energy per chain (``kinetic`` of ``velocity``)."""
        p = self._rows(p)
        n, dim = p.shape
        out, v, q, rows = np.empty(n), np.empty(dim), self._nowhere(dim), self._aux_rows(aux, n)
        run, PF, PI = self._entry(_kinetic_entry), self.layout.PF, self.layout.PI
        for c in range(n):
            out[c] = run(q, p[c], v, rows[c], PF, PI)
        return backend.asarray(out)

    def energy(self, state, step_size, target):
        """The energy the accept step uses, per chain (``energy``; ``target_energy`` with
        the ``target`` called back where the part's energy reads it), at ``step_size`` (one,
        or one per chain; ``None``: ``nan``, for an energy that does not depend on it)."""
        from hamiltonia.compiled import callback

        q, p = self._rows(state.q), self._rows(state.p)
        n, dim = q.shape
        lp = self._rows(state.log_prob).reshape(n)
        grad = np.full((n, dim), np.nan) if state.grad is None else self._rows(state.grad)
        eps = np.nan if step_size is None else backend.to_numpy(step_size)
        eps = np.broadcast_to(np.asarray(eps, dtype=np.float64), (n,))
        out, v, rows = np.empty(n), np.empty(dim), self._aux_rows(state.aux, n)
        PF, PI = self.layout.PF, self.layout.PI
        if not self.layout.functions["energy_reads_target"]:
            run = self._entry(_energy_entry)
            for c in range(n):
                out[c] = run(q[c], p[c], lp[c], grad[c], v, eps[c], rows[c], PF, PI)
            return backend.asarray(out)
        run = self._entry(_target_energy_entry)
        with callback.registered(target) as kernel:
            fn, fdata, idata = kernel.function, kernel.fdata, kernel.idata
            for c in range(n):
                callback.set_chain(c)
                out[c] = run(q[c], p[c], lp[c], grad[c], v, eps[c], rows[c], PF, PI, fn, fdata,
                             idata)  # fmt: skip
            callback.raise_error(kernel)
        return backend.asarray(out)

    def update_auxiliary(self, state, rngs):
        """``state`` after the Gibbs update of the auxiliary variables (``update_auxiliary``,
        which may rescale the momentum), one chain at a time on its own generator; the
        state given is left as it is."""
        q, p = self._rows(state.q), np.array(self._rows(state.p))
        n = q.shape[0]
        rows = self._aux_rows(state.aux, n)
        run, PF, PI = self._entry(_update_entry), self.layout.PF, self.layout.PI
        for c, rng in enumerate(rngs):
            run(rng, q[c], p[c], rows[c], PF, PI)
        aux = dict(state.aux)
        for name, at, size, _ in self.layout.aux:
            shape = np.shape(aux[name]) if name in aux else (n, size)
            aux[name] = backend.asarray(rows[:, at : at + size].reshape(shape))
        return dataclasses.replace(state, p=backend.asarray(p), aux=aux)

    def inverse_mass_diagonal(self, aux: dict | None, n: int, dim: int):
        """Each chain's diagonal inverse mass, shape ``(n, dim)`` (``inverse_mass_diagonal``)."""
        rows, out = self._aux_rows(aux, n), np.empty((n, dim))
        run, PF, PI = self._entry(_inverse_mass_entry), self.layout.PF, self.layout.PI
        for c in range(n):
            run(rows[c], out[c], PF, PI)
        return backend.asarray(out)
