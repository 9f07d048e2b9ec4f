"""Split integrators over data subsets: the naive, randomised and symmetric splits of split
HMC (Cobb and Jalaian 2021).

The potential of a data target is split into :math:`M` components, one per subset of its
rows, :math:`U = \\sum_m U_m` with :math:`U_m = -\\log p(\\omega)/M - \\ell_m(\\omega)`
(:class:`~hamiltonia.targets.split.SplitTarget`). A split integrator composes the exact flows
of the components (kicks :math:`\\varphi^{U_m}_h: p \\leftarrow p - h\\nabla U_m(q)`) and of
the kinetic energy (drifts :math:`\\varphi^{K}_h: q \\leftarrow q + h M^{-1}p`), so that a kick
needs one subset's gradient only; the Metropolis test keeps the whole Hamiltonian. With the
step size :math:`\\varepsilon`:

Naive split (the authors' baseline, eq. 8; hamiltorch's ``SPLITTING_KMID``): the leapfrog
with its gradient accumulated subset by subset,

.. math::

    \\Psi = \\varphi^{U_1}_{\\varepsilon/2} \\circ \\cdots \\circ \\varphi^{U_M}_{\\varepsilon/2}
        \\circ \\varphi^{K}_{\\varepsilon} \\circ \\varphi^{U_M}_{\\varepsilon/2} \\circ \\cdots
        \\circ \\varphi^{U_1}_{\\varepsilon/2}.

Randomised split (Neal 2011, §5.1; eqs. 6-7): one leapfrog of a drift :math:`\\varepsilon/M`
per subset, in an order :math:`\\pi` drawn uniformly once per trajectory,

.. math::

    \\Psi_\\pi = \\prod_{j=1}^{M} \\varphi^{U_{\\pi_j}}_{\\varepsilon/2} \\circ
        \\varphi^{K}_{\\varepsilon/M} \\circ \\varphi^{U_{\\pi_j}}_{\\varepsilon/2}.

Each :math:`\\Psi_\\pi` is volume preserving but not symmetric; the reverse trajectory is
integrated by the reversed order, which is as likely, so the transition keeps the target
(Neal 2011, §5.1). Integrating backwards (a negative step size, as the no-U-turn tree does)
applies the inverse map, the reversed sequence.

Symmetric split (Cobb and Jalaian 2021, §4, Algorithm 1): the components in order and back,
with :math:`D = 2(M - 1)` drifts of :math:`\\varepsilon/D` between consecutive kicks,

.. math::

    \\Psi = \\varphi^{U_1}_{\\varepsilon/2} \\circ \\varphi^{K}_{\\varepsilon/D} \\circ
        \\varphi^{U_2}_{\\varepsilon/2} \\circ \\cdots \\circ \\varphi^{U_M}_{\\varepsilon/2}
        \\circ \\varphi^{U_M}_{\\varepsilon/2} \\circ \\cdots \\circ
        \\varphi^{K}_{\\varepsilon/D} \\circ \\varphi^{U_1}_{\\varepsilon/2}.

The paper's eqs. 9-10 give the drifts the subscript :math:`\\varepsilon/2`; Algorithm 1, the
index definition (each part flows for time :math:`\\varepsilon`) and hamiltorch's
``SPLITTING`` all drift :math:`\\varepsilon/D`, which makes the total drift :math:`\\varepsilon`
and the scheme consistent: that is what is implemented. Algorithm 1 has no drift at all
for :math:`M = 1` (:math:`D = 0`; hamiltorch refuses it); here one split is the leapfrog, as it
is for the other two schemes.

All three are compositions of exact shears, hence volume preserving. The naive and
symmetric splits are symmetric, hence reversible and of order 2; the randomised one, for a
given order, is a Lie-Trotter composition of the flows of :math:`U_{\\pi_j} + K/M`: reversible
only with the order reversed, and of order 1 (its energy error over a fixed time falls as
:math:`\\varepsilon`). All three are the leapfrog for :math:`M = 1`, bit for bit.

Written once
------------
A scheme is its sequence of flows (:func:`split_sequence`), a pure function of :math:`M`
in terms of *slots*; a chain's order maps the slots to subsets (the identity but for the
randomised split). :class:`DataSplit` turns the sequence into kick groups between drifts
(kicks at one position commute, so the kicks of one subset within a group merge, and the
last group of a step merges with the first of the next), and one executor runs every scheme
on each path: the vectorised NumPy method and the compiled kernel. A subset's gradient is
evaluated once per position it is needed at, so a step costs :math:`M` subset gradients (one full
pass) with the naive split, :math:`2M` with the randomised one and :math:`2(M - 1)` with the
symmetric one, as the paper counts. At the
end of a trajectory the whole log density and its gradient are evaluated (the Metropolis
test and the next trajectory need them; for :math:`M = 1` the last kick's gradient is that).
``n_grad`` counts full-data gradient passes (subset gradients over :math:`M`, rounded up at
each call); the statistic ``n_subset_grad`` counts the subset gradients exactly, and
``n_subset_grad / M`` is the cost to compare samplers by. The no-U-turn tree integrates one
step per call, so each of its states costs the subset gradient of the step's first kick
again and the closing whole gradient (which its multinomial weights need anyway): about
:math:`2(M - 1) + 1 + M` subset gradients a state with the symmetric split, not
:math:`2(M - 1)`.

References
----------
Cobb, A. D. and Jalaian, B. (2021), *Scaling Hamiltonian Monte Carlo inference for Bayesian
neural networks with symmetric splitting*, UAI, §3-4, Algorithm 1. Neal, R. M. (2011),
*MCMC using Hamiltonian dynamics*, §5.1. Shahbaba, B. et al. (2014), *Split Hamiltonian Monte
Carlo*, Statistics and Computing 24 (the nested leapfrog).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from hamiltonia import backend
from hamiltonia._validation import check_int
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import column, drift, kick, offset, own
from hamiltonia.integrators.base import Integrator, per_chain_lengths
from hamiltonia.state import PhaseState

__all__ = [
    "SCHEMES",
    "DataSplit",
    "NaiveSplit",
    "RandomisedSplit",
    "SymmetricSplit",
    "make_split_integrator",
    "split_sequence",
    "split_table",
]

#: The auxiliary variable holding a chain's subset order (slot to subset).
ORDER = "split_order"


# ------------------------------------------------------------------ the schemes, as data
def split_sequence(scheme: str, n_splits: int) -> list[tuple]:
    """The flows of one step of ``scheme``, in order: ``("kick", slot, c)`` for a kick of
    the subset in ``slot`` for :math:`c\\varepsilon`, ``("drift", a)`` for a drift of
    :math:`a\\varepsilon`."""
    m = n_splits
    half = 0.5
    if scheme == "naive" or m == 1:
        return [
            *(("kick", j, half) for j in range(m)),
            ("drift", 1.0),
            *(("kick", j, half) for j in reversed(range(m))),
        ]
    if scheme == "randomised":
        ops = []
        for j in range(m):
            ops += [("kick", j, half), ("drift", 1.0 / m), ("kick", j, half)]
        return ops
    if scheme == "symmetric":
        d = 2.0 * (m - 1)
        ops = []
        for j in range(m):
            ops.append(("kick", j, half))
            if j < m - 1:
                ops.append(("drift", 1.0 / d))
        for j in reversed(range(m)):
            ops.append(("kick", j, half))
            if j > 0:
                ops.append(("drift", 1.0 / d))
        return ops
    raise ValueError(f"scheme must be one of {', '.join(map(repr, SCHEMES))}, got {scheme!r}")


SCHEMES = ("naive", "randomised", "symmetric")


def _merged(kicks) -> list[tuple[int, float]]:
    """Kicks at one position, the coefficients of each slot summed (they commute), in the
    order of first appearance."""
    out: dict[int, float] = {}
    for slot, c in kicks:
        out[slot] = out.get(slot, 0.0) + c
    return list(out.items())


def split_table(sequence) -> dict[str, np.ndarray]:
    """A step's sequence as the executor's table: drifts :math:`a_1..a_k` and the kick
    groups :math:`G_0, \\dots, G_k` between them, then :math:`W` (the merge of :math:`G_k`
    and :math:`G_0`, between two steps). ``starts[g]:starts[g + 1]`` indexes group ``g``'s
    entries of ``slots`` and ``coefs``."""
    groups: list[list] = [[]]
    drifts = []
    for op in sequence:
        if op[0] == "drift":
            drifts.append(op[1])
            groups.append([])
        else:
            groups[-1].append((op[1], op[2]))
    if not drifts:
        raise ValueError("a split step needs a drift")
    groups = [_merged(g) for g in groups]
    groups.append(_merged(groups[-1] + groups[0]))
    starts = np.cumsum([0] + [len(g) for g in groups])
    entries = [e for g in groups for e in g]
    return {
        "drifts": np.array(drifts, dtype=np.float64),
        "starts": starts.astype(np.float64),
        "slots": np.array([s for s, _ in entries], dtype=np.float64),
        "coefs": np.array([c for _, c in entries], dtype=np.float64),
    }


# ------------------------------------------------------------------ the compiled executor
def _kick_group(ctx, q, p, gm, g, table_starts, slots, coefs, eps, cached, lp_m, n_evals, sel):
    """Kick group ``g`` at the current position, evaluating each subset's gradient there
    once; returns ``(finite, cached, lp_m, n_evals)`` (``cached``: the subset whose gradient
    ``gm`` holds, ``lp_m`` its log density)."""
    o = offset.split_order
    for j in range(int(table_starts[g]), int(table_starts[g + 1])):
        comp = int(ctx.aux[o + int(slots[j])])
        if comp != cached:
            sel[0] = comp
            lp_m = ctx.logp(q, gm, ctx.fdata, sel)
            n_evals += 1
            cached = comp
            if not math.isfinite(lp_m):
                return False, cached, lp_m, n_evals
        if kick(ctx, q, p, gm, coefs[j] * eps) != 0.0:
            return False, cached, lp_m, n_evals
    return True, cached, lp_m, n_evals


def data_split_integrate_kernel(ctx, q, p, grad, lp, eps, n_steps, v):
    """Kernel of :meth:`DataSplit.integrate` for one chain, in place (role ``integrate``);
    its parameters are the scheme's tables, forwards and backwards."""
    n_comp = own.n_components
    if n_steps == 0:
        return lp, 0
    if eps >= 0.0:
        drifts, starts, slots, coefs = own.fw_drifts, own.fw_starts, own.fw_slots, own.fw_coefs
    else:
        drifts, starts, slots, coefs = own.bw_drifts, own.bw_starts, own.bw_slots, own.bw_coefs
    k = drifts.shape[0]
    # A private copy: its first entry selects the component, and chains run in parallel.
    sel = ctx.idata.copy()
    # One split: the component is the whole density, whose gradient the state holds;
    # otherwise the chain's workspace, not an allocation per call (a no-U-turn tree calls
    # once per state).
    if n_comp == 1:
        gm = grad
    else:
        gm = ctx.aux[offset.split_gradient : offset.split_gradient + grad.shape[0]]
    cached = 0 if n_comp == 1 else -1
    lp_m = lp
    n_evals = 0
    ok, cached, lp_m, n_evals = _kick_group(
        ctx, q, p, gm, 0, starts, slots, coefs, eps, cached, lp_m, n_evals, sel
    )
    for step in range(n_steps):
        if not ok:
            break
        for s in range(k):
            if drift(ctx, q, p, v, drifts[s] * eps) != 0.0:
                ok = False
                break
            cached = -1
            g = s + 1
            if s == k - 1 and step < n_steps - 1:
                g = k + 1  # the last group of this step merged with the first of the next
            ok, cached, lp_m, n_evals = _kick_group(
                ctx, q, p, gm, g, starts, slots, coefs, eps, cached, lp_m, n_evals, sel
            )
            if not ok:
                break
    if ok:
        if n_comp == 1:
            lp = lp_m  # the last kick's: the whole density at the end, its gradient in grad
        else:
            lp = ctx.logp(q, grad, ctx.fdata, ctx.idata)
            n_evals += n_comp
            ok = math.isfinite(lp)
    ctx.stats[column.n_subset_grad] += n_evals
    n_grad = (n_evals + n_comp - 1) // n_comp
    if not ok:
        return math.nan, n_grad
    return lp, n_grad


def randomised_order_kernel(ctx):
    """Kernel of :meth:`RandomisedSplit.randomise` (role ``randomise``): a uniform order of
    the subsets, the ranks of :math:`M` uniform draws."""
    m = own.n_components
    if m == 1:
        return  # one order only: no draw, so that one split is the leapfrog bit for bit
    o = offset.split_order
    u = np.empty(m)
    for j in range(m):
        u[j] = ctx.rng.random()
    order = np.argsort(u)
    for j in range(m):
        ctx.aux[o + j] = order[j]


# ------------------------------------------------------------------ the parts
class DataSplit(Integrator):
    """A split integrator over the data subsets of a
    :class:`~hamiltonia.targets.split.SplitTarget`, given by its scheme's sequence
    (:func:`split_sequence`); see the module's docstring for the maths.

    Parameters
    ----------
    n_splits : int >= 1
        :math:`M`, the number of subsets of the target it integrates (the sampler checks
        that the target is split as many ways).
    structure : PoissonStructure, optional
        Canonical (the only one: a kick of one subset at a time is a canonical shear).
    """

    scheme = "naive"
    order = 2
    #: Its NumPy path indexes the data subsets on the host (refused elsewhere before a run).
    backends = ("numpy",)

    def __init__(self, n_splits: int = 2, structure=None):
        super().__init__(structure)
        self.n_splits = check_int(n_splits, "n_splits (the number of data subsets)", minimum=1)
        sequence = split_sequence(self.scheme, self.n_splits)
        backward = [op for op in reversed(sequence)]
        self._tables = (split_table(sequence), split_table(backward))

    # ------------------------------------------------------------------ contract
    @property
    def n_grad_per_step(self) -> int:
        return 1

    @property
    def exact_gradient_count(self) -> bool:
        # One split counts one gradient a step, as the leapfrog; more count subset
        # gradients and the closing evaluation, in full-data passes.
        return self.n_splits == 1

    def check(self, hamiltonian) -> None:
        n = getattr(hamiltonian.target, "n_components", None)
        if n != self.n_splits:
            what = "is not split" if n is None else f"is split {n} ways"
            raise ValueError(
                f"integrator {type(self).__name__}(n_splits={self.n_splits}) integrates a "
                f"target split into {self.n_splits} data subsets, but target "
                f"{type(hamiltonian.target).__name__} {what} "
                "(hamiltonia.targets.split.split_target(target, n_splits))"
            )

    def stats(self):
        return (("n_subset_grad", "int64"),)

    def start_counting(self, n_chains: int) -> None:
        self._counted = np.zeros(n_chains, dtype=np.int64)

    def counted(self) -> dict:
        return {"n_subset_grad": getattr(self, "_counted", np.zeros(0, dtype=np.int64))}

    def identity_order(self, n_chains: int) -> np.ndarray:
        return np.tile(np.arange(self.n_splits, dtype=np.float64), (n_chains, 1))

    def _order(self, state: PhaseState) -> np.ndarray:
        order = state.aux.get(ORDER)
        if order is None:
            return self.identity_order(state.q.shape[0]).astype(np.int64)
        return np.asarray(backend.to_numpy(order)).reshape(state.q.shape[0], -1).astype(np.int64)

    # ------------------------------------------------------------------ NumPy path
    def step(self, hamiltonian, state, step_size):
        return self.integrate(hamiltonian, state, step_size, 1)[0]

    def integrate(self, hamiltonian, state: PhaseState, step_size, n_steps):
        if backend.get_backend() != "numpy":
            raise ValueError(
                f"{type(self).__name__} runs on the NumPy backend and compiled, not on "
                f"backend {backend.get_backend()!r}"
            )
        n_chains = state.q.shape[0]
        lengths = per_chain_lengths(n_steps, n_chains)
        eps = np.broadcast_to(np.asarray(backend.to_numpy(step_size), dtype=np.float64),
                              (n_chains,))  # fmt: skip
        backward = eps < 0.0
        if backward.any() and not backward.all():
            # Chains integrating backwards (a no-U-turn tree) run the reversed sequence.
            end, n_evals = self._integrate_by_direction(hamiltonian, state, eps, lengths, backward)
        else:
            end, n_evals = self._integrate(hamiltonian, state, eps, lengths, int(backward.any()))
        counted = getattr(self, "_counted", None)
        if counted is not None and counted.shape == (n_chains,):
            counted += n_evals
        return end, (n_evals + self.n_splits - 1) // self.n_splits

    def _integrate_by_direction(self, hamiltonian, state, eps, lengths, backward):
        parts = [np.flatnonzero(~backward), np.flatnonzero(backward)]
        done = [
            self._integrate(hamiltonian, state.take(idx), eps[idx], lengths[idx], direction)
            for direction, idx in enumerate(parts)
        ]
        where = np.argsort(np.concatenate(parts))
        merged = PhaseState(
            *(
                None if getattr(done[0][0], f) is None
                else np.concatenate([getattr(d[0], f) for d in done])[where]
                for f in ("q", "p", "log_prob", "grad")
            ),
            {k: np.concatenate([d[0].aux[k] for d in done])[where] for k in done[0][0].aux},
        )  # fmt: skip
        return merged, np.concatenate([d[1] for d in done])[where]

    def _integrate(self, hamiltonian, state, eps, lengths, direction: int):
        """The chains integrating in one ``direction`` (0 forwards, 1 backwards); returns the
        end state and the subset gradients each chain evaluated."""
        table = self._tables[direction]
        drifts, starts = table["drifts"], table["starts"].astype(np.int64)
        slots, coefs = table["slots"].astype(np.int64), table["coefs"]
        n_chains, m = state.q.shape[0], self.n_splits
        target, structure, aux = hamiltonian.target, self.structure, dict(state.aux)
        order = self._order(state)
        q, p = np.array(state.q, dtype=np.float64), np.array(state.p, dtype=np.float64)
        gm = np.array(state.grad, dtype=np.float64) if m == 1 else np.zeros_like(q)
        lp_m = np.array(state.log_prob, dtype=np.float64)
        cached = np.full(n_chains, 0 if m == 1 else -1, dtype=np.int64)
        n_evals = np.zeros(n_chains, dtype=np.int64)
        alive = lengths > 0  # chains still integrating: not finished and finite
        e = eps[:, None]

        def kick_group(g, chains):
            nonlocal p
            for j in range(starts[g], starts[g + 1]):
                comp = order[:, slots[j]]
                # A chain that met a non-finite value stops there, as the kernel does.
                stale = chains & alive & (comp != cached)
                for c in np.unique(comp[stale]):
                    rows = stale & (comp == c)
                    lp_c, g_c = target.component_log_prob_and_grad(q[rows], int(c))
                    lp_m[rows], gm[rows] = lp_c, g_c
                    cached[rows] = c
                    n_evals[rows] += 1
                    finite = np.isfinite(lp_c) & np.all(np.isfinite(g_c), axis=-1)
                    alive[np.flatnonzero(rows)[~finite]] = False
                live = chains & alive
                with np.errstate(all="ignore"):
                    _, kicked = structure.kick(hamiltonian, q, p, gm, coefs[j] * e, aux)
                p = np.where(live[:, None], kicked, p)

        kick_group(0, alive.copy())
        for step in range(int(lengths.max(initial=0))):
            for s in range(len(drifts)):
                moving = alive & (step < lengths)
                if not moving.any():
                    break
                with np.errstate(all="ignore"):
                    drifted, _ = structure.drift(hamiltonian, q, p, drifts[s] * e, aux)
                q = np.where(moving[:, None], drifted, q)
                alive &= ~moving | np.all(np.isfinite(q), axis=-1)
                cached[moving] = -1
                if s < len(drifts) - 1:
                    kick_group(s + 1, moving & alive)
                else:
                    last = step == lengths - 1
                    kick_group(len(drifts), moving & alive & last)
                    kick_group(len(drifts) + 1, moving & alive & ~last)
        started = lengths > 0
        if m == 1:
            lp, grad = lp_m, gm
        else:
            lp = np.array(state.log_prob, dtype=np.float64)
            grad = np.array(state.grad, dtype=np.float64)
            ends = started & alive
            if ends.any():
                lp[ends], grad[ends] = target.log_prob_and_grad(q[ends])
                n_evals[ends] += m
        ok = alive & np.isfinite(lp)
        lp = np.where(started & ~ok, np.nan, lp)
        end = PhaseState(q, p, lp, grad, aux)
        if not started.all():
            end = end.select(backend.asmask(started), state)
        return end, n_evals

    # ------------------------------------------------------------------ compiled path
    def compiled(self, dim):
        fw, bw = self._tables
        params = {"n_components": self.n_splits}
        for prefix, table in (("fw", fw), ("bw", bw)):
            params.update({f"{prefix}_{name}": value for name, value in table.items()})
        return PartKernels(
            {"integrate": data_split_integrate_kernel, **self._extra_kernels()},
            params=params,
            stats=self.stats(),
            aux=((ORDER, self.n_splits, np.arange(self.n_splits, dtype=np.float64)),),
            workspace=(("split_gradient", dim),),
            target_components=self.n_splits,
        )

    def _extra_kernels(self) -> dict:
        return {}

    def __repr__(self):
        return f"{type(self).__name__}(n_splits={self.n_splits})"


class NaiveSplit(DataSplit):
    """The naive split (Cobb and Jalaian 2021, eq. 8): the leapfrog with the gradient
    accumulated subset by subset, the subsets in order, then back (see
    :mod:`hamiltonia.integrators.data_split`)."""

    scheme = "naive"


class SymmetricSplit(DataSplit):
    """The symmetric split of Cobb and Jalaian (2021, Algorithm 1): :math:`D = 2(M - 1)`
    drifts of :math:`\\varepsilon/D` between the kicks of the subsets in order and back (see
    :mod:`hamiltonia.integrators.data_split`)."""

    scheme = "symmetric"


class RandomisedSplit(DataSplit):
    """Neal's randomised split (Neal 2011, §5.1; Cobb and Jalaian 2021, eqs. 6-7): a leapfrog
    of drift :math:`\\varepsilon/M` per subset, the subsets in an order drawn uniformly for
    every trajectory, one per chain (see :mod:`hamiltonia.integrators.data_split`)."""

    scheme = "randomised"
    #: A given order composes the flows of :math:`U_{\pi_j} + K/M` one after another, a
    #: Lie-Trotter splitting of :math:`H`: the energy error over a fixed time falls as
    #: :math:`\varepsilon`, not :math:`\varepsilon^2` (measured by the property kit); the
    #: random order makes the transition reversible in distribution only.
    order = 1

    def randomise(self, state, rngs):
        if self.n_splits == 1:
            return state  # one order only: no draw (the leapfrog's stream, bit for bit)
        order = np.stack([np.argsort(rng.random(self.n_splits)) for rng in rngs])
        aux = {**state.aux, ORDER: order.astype(np.float64)}
        return replace(state, aux=aux)

    def reverse(self, state):
        # The reversed trajectory runs the subsets in the reversed order.
        order = self._order(state)[:, ::-1].astype(np.float64)
        return replace(state, aux={**state.aux, ORDER: order})

    def _extra_kernels(self) -> dict:
        return {"randomise": randomised_order_kernel}


def make_split_integrator(scheme: str, n_splits: int, structure=None) -> DataSplit:
    """The split integrator of ``scheme`` (``"naive"``, ``"randomised"`` or
    ``"symmetric"``) over ``n_splits`` subsets."""
    kinds = {"naive": NaiveSplit, "randomised": RandomisedSplit, "symmetric": SymmetricSplit}
    if scheme not in kinds:
        raise ValueError(f"scheme must be one of {', '.join(map(repr, SCHEMES))}, got {scheme!r}")
    return kinds[scheme](n_splits, structure=structure)
