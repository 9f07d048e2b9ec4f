"""The no-U-turn trajectory policy (NUTS) over any integrator, on both paths.

:class:`NoUTurn` grows a trajectory by doubling, in a random direction each time, until the
trajectory starts to turn back on itself, and samples the next state from it with
multinomial weights (Hoffman and Gelman 2014, *The No-U-Turn Sampler*, JMLR 15; Betancourt
2017, *A Conceptual Introduction to Hamiltonian Monte Carlo*, §A.3-A.4; the variant of Stan
2.2x). For a trajectory of states :math:`z_i = (q_i, p_i)` from the start :math:`z_0`, with
energies :math:`H_i`:

* each state weighs :math:`w_i = e^{H_0 - H_i}`; within a subtree the state is drawn in
  proportion to the weights (multinomial sampling); when a new subtree of weight
  :math:`W_\\text{new}` joins the tree of weight :math:`W_\\text{old}`, its state replaces the
  current sample with probability :math:`\\min(1, W_\\text{new}/W_\\text{old})` (biased
  progressive sampling, which favours later states and keeps the right distribution);
* the *generalised* no-U-turn criterion: a (sub)trajectory from :math:`z_-` to :math:`z_+`
  with momentum sum :math:`\\rho = \\sum_i p_i` continues while

  .. math::

      p_-^\\sharp \\cdot \\rho > 0 \\quad\\text{and}\\quad p_+^\\sharp \\cdot \\rho > 0,
      \\qquad p^\\sharp = \\partial H / \\partial p = M^{-1} p;

* every merge of two adjacent (sub)trees :math:`A` (earlier in time) and :math:`B` checks the
  criterion on :math:`A \\cup B`, and also on :math:`A` extended by the first state of
  :math:`B` and on :math:`B` extended by the last state of :math:`A` (Stan's extra checks,
  which catch U-turns that fall between the two halves);
* a state whose energy error :math:`H_i - H_0` exceeds
  :data:`~hamiltonia.trajectories.metropolis.MAX_ENERGY_ERROR` (or is not finite) is a divergence:
  the
  subtree being built is abandoned and the trajectory stops;
* the tree stops doubling at ``max_tree_depth`` (a trajectory of at most
  :math:`2^{\\text{depth}} - 1` steps).

The acceptance statistic (what dual averaging targets) is the mean over every state built of
:math:`\\min(1, e^{H_0 - H_i})`.

Each chain draws from its own generator, in the same order on both paths: one uniform for
the direction of each doubling, one at each merge inside a subtree (after its checks pass),
and one at each merge into the tree. The NumPy path builds the trees of all chains in
lockstep (every chain's subtree of depth :math:`j` has :math:`2^j` states, so the merges
coincide), a chain that has stopped being masked; the compiled kernel builds one chain's
tree iteratively, with a stack of one summary per level of the subtree being built.

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").
"""

from __future__ import annotations

import numpy as np

from hamiltonia import backend
from hamiltonia._validation import check_int
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import (
    column,
    hamiltonian_energy,
    integrate,
    own,
    velocity,
)
from hamiltonia.trajectories.metropolis import (
    TrajectoryPolicy,
    is_divergent,
    metropolis_probability,
)

__all__ = [
    "DEFAULT_MAX_TREE_DEPTH",
    "MAX_TREE_DEPTH_LIMIT",
    "NUTS_STATS",
    "NoUTurn",
    "continues",
    "progressive_probability",
    "subtree_probability",
]

#: Stan's and NumPyro's default.
DEFAULT_MAX_TREE_DEPTH = 10
#: The no-U-turn criteria (see :class:`NoUTurn`).
CRITERIA = ("stan", "numpyro")
#: Deepest tree accepted: 2^20 - 1 steps a transition is far beyond any useful trajectory.
MAX_TREE_DEPTH_LIMIT = 20

#: The statistics of a no-U-turn transition, in the column order of its kernel.
NUTS_STATS = (
    ("accepted", "bool"),
    ("acceptance_rate", "float64"),
    ("diverging", "bool"),
    ("energy", "float64"),
    ("n_steps", "int64"),
    ("n_grad", "int64"),
    ("tree_depth", "int64"),
)


def continues(dot_minus, dot_plus):
    """The generalised no-U-turn criterion from its two dot products
    :math:`p_-^\\sharp\\cdot\\rho` and :math:`p_+^\\sharp\\cdot\\rho`: true while the
    trajectory has not turned back at either end."""
    return (dot_minus > 0.0) & (dot_plus > 0.0)


def subtree_probability(log_weight_new, log_weight_old):
    """Probability that the sample of a subtree is the newer half's (multinomial sampling
    within a subtree): :math:`W_\\text{new} / (W_\\text{old} + W_\\text{new})`."""
    return np.exp(log_weight_new - np.logaddexp(log_weight_old, log_weight_new))


def progressive_probability(log_weight_new, log_weight_old):
    """Probability that a new subtree's sample replaces the tree's (biased progressive
    sampling): :math:`\\min(1, W_\\text{new} / W_\\text{old})`."""
    return metropolis_probability(log_weight_old - log_weight_new)


# ---------------------------------------------------------------------------------- compiled
# Rows of the kernel's scratch: the integration state, the velocity, the tree's two edges,
# then summaries of (sub)trees, each SUMMARY_ROWS rows: momentum sum, momenta and velocities
# at the left and right ends, the sample (q, p, grad), and a row whose first entries hold
# the log weight, the sample's log density and energy (rows are at least 8 wide).
_ZQ, _ZP, _ZG, _V, _LQ, _LP, _LG, _RQ, _RP, _RG = range(10)
_TREE = 10
SUMMARY_ROWS = 9
_RHO, _PL, _PR, _SL, _SR, _SQ, _SP, _SG, _SC = range(SUMMARY_ROWS)


def scratch_rows(max_tree_depth: int) -> int:
    """Scratch rows the kernel needs: fixed rows, the tree, and a stack of one summary per
    level of the deepest subtree plus the leaf being built."""
    return _TREE + SUMMARY_ROWS * (max_tree_depth + 2)


def _copy(dst, src, d):
    for i in range(d):
        dst[i] = src[i]


def _copy_rows(w, dst, src, first, n, d):
    for r in range(first, first + n):
        _copy(w[dst + r], w[src + r], d)


def _leaf(ctx, w, c, d):
    """Summary ``c`` of the one-state subtree at the integration state."""
    v = velocity(ctx, w[_ZQ, :d], w[_ZP, :d], w[_V, :d])
    for r in (_RHO, _PL, _PR, _SP):
        _copy(w[c + r], w[_ZP], d)
    _copy(w[c + _SL], v, d)
    _copy(w[c + _SR], v, d)
    _copy(w[c + _SQ], w[_ZQ], d)
    _copy(w[c + _SG], w[_ZG], d)


def _merge_ok(w, old, new, forward, d, trapezoid):
    """The three no-U-turn checks of merging summary ``old`` with the adjacent ``new``
    (``new`` later in time when ``forward``); with ``trapezoid``, NumPyro's single check.
    The dot products of all the checks are summed in one pass over the rows."""
    left = old if forward else new
    right = new if forward else old
    # Row views, so that each loop runs over contiguous rows and vectorises.
    rho_l, rho_r = w[left + _RHO], w[right + _RHO]
    sl_l, sr_r = w[left + _SL], w[right + _SR]
    if trapezoid:
        pl_l, pr_r = w[left + _PL], w[right + _PR]
        dm = dp = 0.0
        for i in range(d):
            rho = rho_l[i] + rho_r[i] - 0.5 * (pl_l[i] + pr_r[i])
            dm += sl_l[i] * rho
            dp += sr_r[i] * rho
        return continues(dm, dp)
    # A u B; A extended by the first state of B; B extended by the last state of A.
    pl_r, pr_l = w[right + _PL], w[left + _PR]
    sl_r, sr_l = w[right + _SL], w[left + _SR]
    dm = dp = dm_first = dp_first = dm_last = dp_last = 0.0
    for i in range(d):
        rho = rho_l[i] + rho_r[i]
        dm += sl_l[i] * rho
        dp += sr_r[i] * rho
        first = rho_l[i] + pl_r[i]
        dm_first += sl_l[i] * first
        dp_first += sl_r[i] * first
        last = rho_r[i] + pr_l[i]
        dm_last += sr_l[i] * last
        dp_last += sr_r[i] * last
    return continues(dm, dp) and continues(dm_first, dp_first) and continues(dm_last, dp_last)


def _absorb(w, dst, src, src_later, d):
    """Summary ``dst`` becomes the merge of ``dst`` and the adjacent ``src`` (the sample is
    chosen by the caller): momentum sum added, the outer end on ``src``'s side taken from
    it (``src`` later in time when ``src_later``)."""
    rho, add = w[dst + _RHO], w[src + _RHO]
    for i in range(d):
        rho[i] += add[i]
    if src_later:
        _copy_rows(w, dst, src, _PR, 1, d)
        _copy_rows(w, dst, src, _SR, 1, d)
    else:
        _copy_rows(w, dst, src, _PL, 1, d)
        _copy_rows(w, dst, src, _SL, 1, d)


def _take_sample(w, dst, src, d):
    """Summary ``dst``'s sample (state, log density and energy) becomes ``src``'s."""
    _copy_rows(w, dst, src, _SQ, 3, d)
    w[dst + _SC, 1] = w[src + _SC, 1]
    w[dst + _SC, 2] = w[src + _SC, 2]


def no_u_turn_transition_kernel(ctx, q, p, grad, lp, eps):
    """Kernel of :meth:`NoUTurn.transition` for one chain (role ``transition``), the tree
    built iteratively; its parameters are ``max_tree_depth`` and ``criterion`` (0 Stan's, 1
    NumPyro's)."""
    max_depth = own.max_tree_depth
    trapezoid = own.criterion == 1
    d = q.shape[0]
    w = ctx.scratch
    tree = _TREE
    stack = _TREE + SUMMARY_ROWS
    h0 = hamiltonian_energy(ctx, q, p, lp, grad, w[_V, :d], eps)
    # The tree is the start state alone: both edges, the sample, the summary.
    _copy(w[_ZQ], q, d)
    _copy(w[_ZP], p, d)
    _copy(w[_ZG], grad, d)
    _leaf(ctx, w, tree, d)
    w[tree + _SC, 0] = 0.0
    w[tree + _SC, 1] = lp
    w[tree + _SC, 2] = h0
    for r in range(3):
        _copy(w[_LQ + r], w[_ZQ + r], d)
        _copy(w[_RQ + r], w[_ZQ + r], d)
    lp_left = lp
    lp_right = lp
    n_leapfrog = 0
    n_grad = 0
    sum_prob = 0.0
    diverging = False
    depth = 0
    while depth < max_depth:
        forward = ctx.rng.random() >= 0.5
        step = eps if forward else -eps
        edge = _RQ if forward else _LQ
        for r in range(3):
            _copy(w[_ZQ + r], w[edge + r], d)
        lp_z = lp_right if forward else lp_left
        # The subtree of depth `depth`, one state at a time, on a stack of summaries: the
        # slots hold completed subtrees waiting for a partner of their size, larger ones
        # lower; each leaf is built on top and merged down into the slots below it while
        # the sizes match (a binary counter), so no summary is ever copied. The finished
        # subtree ends in slot 0.
        valid = True
        n_stacked = 0
        for leaf in range(2**depth):
            lp_z, used = integrate(
                ctx, w[_ZQ, :d], w[_ZP, :d], w[_ZG, :d], lp_z, step, 1, w[_V, :d]
            )
            n_grad += used
            n_leapfrog += 1
            h = np.inf
            if np.isfinite(lp_z):
                h = hamiltonian_energy(
                    ctx, w[_ZQ, :d], w[_ZP, :d], lp_z, w[_ZG, :d], w[_V, :d], eps
                )
                if not np.isfinite(h):
                    h = np.inf
            delta = h - h0
            sum_prob += metropolis_probability(delta) if np.isfinite(delta) else 0.0
            if is_divergent(delta):
                diverging = True
                valid = False
                break
            new = stack + n_stacked * SUMMARY_ROWS
            _leaf(ctx, w, new, d)
            w[new + _SC, 0] = h0 - h
            w[new + _SC, 1] = lp_z
            w[new + _SC, 2] = h
            k = leaf
            while k & 1:
                old = new - SUMMARY_ROWS
                if not _merge_ok(w, old, new, forward, d, trapezoid):
                    valid = False
                    break
                lw_old = w[old + _SC, 0]
                lw_new = w[new + _SC, 0]
                if ctx.rng.random() < subtree_probability(lw_new, lw_old):
                    _take_sample(w, old, new, d)
                w[old + _SC, 0] = np.logaddexp(lw_old, lw_new)
                _absorb(w, old, new, forward, d)
                new = old
                n_stacked -= 1
                k >>= 1
            if not valid:
                break
            n_stacked += 1
        new = stack
        if not valid:
            break
        # The new subtree joins the tree: its edge, the progressive sample, the checks.
        for r in range(3):
            _copy(w[edge + r], w[_ZQ + r], d)
        if forward:
            lp_right = lp_z
        else:
            lp_left = lp_z
        depth += 1
        lw_tree = w[tree + _SC, 0]
        lw_new = w[new + _SC, 0]
        if ctx.rng.random() < progressive_probability(lw_new, lw_tree):
            _take_sample(w, tree, new, d)
        w[tree + _SC, 0] = np.logaddexp(lw_tree, lw_new)
        turned = not _merge_ok(w, tree, new, forward, d, trapezoid)
        # The tree absorbs the new subtree, which lies on its forward side when `forward`.
        _absorb(w, tree, new, forward, d)
        if turned:
            break
    moved = False
    for i in range(d):
        if w[tree + _SQ, i] != q[i]:
            moved = True
        q[i] = w[tree + _SQ, i]
        p[i] = w[tree + _SP, i]
        grad[i] = w[tree + _SG, i]
    ctx.stats[column.accepted] = 1.0 if moved else 0.0
    ctx.stats[column.acceptance_rate] = sum_prob / n_leapfrog if n_leapfrog > 0 else 0.0
    ctx.stats[column.diverging] = 1.0 if diverging else 0.0
    ctx.stats[column.energy] = w[tree + _SC, 2]
    ctx.stats[column.n_steps] = n_leapfrog
    ctx.stats[column.n_grad] = n_grad
    ctx.stats[column.tree_depth] = depth
    return w[tree + _SC, 1]


# ------------------------------------------------------------------------------- NumPy path
class _Summary:
    """A batch of (sub)tree summaries, one row per chain (see the module docstring)."""

    def __init__(self, rho, p_left, p_right, sharp_left, sharp_right, sample, log_weight, h):
        self.rho, self.p_left, self.p_right = rho, p_left, p_right
        self.sharp_left, self.sharp_right = sharp_left, sharp_right
        self.sample, self.log_weight, self.h = sample, log_weight, h

    @classmethod
    def leaf(cls, hamiltonian, state, log_weight, h):
        sharp = hamiltonian.velocity(state.p, state.aux)
        return cls(state.p, state.p, state.p, sharp, sharp, state, log_weight, h)


def _dots(a, b):
    xp = backend.xp()
    return backend.to_numpy(xp.sum(a * b, axis=-1))


def _batch_merge_ok(old: _Summary, new: _Summary, forward: np.ndarray, trapezoid: bool):
    """The checks of the compiled ``_merge_ok`` for every chain; ``forward`` says per chain
    whether ``new`` is later in time."""
    fw = backend.asmask(forward)[:, None]
    xp = backend.xp()

    def pick(a, b):  # the earlier (left) and later (right) summaries' fields
        return xp.where(fw, a, b), xp.where(fw, b, a)

    rho_l, rho_r = pick(old.rho, new.rho)
    sl_l, sl_r = pick(old.sharp_left, new.sharp_left)
    sr_l, sr_r = pick(old.sharp_right, new.sharp_right)
    pl_r = pick(old.p_left, new.p_left)[1]  # the first momentum of the later half
    pr_l = pick(old.p_right, new.p_right)[0]  # the last of the earlier one
    rho = rho_l + rho_r
    if trapezoid:
        pl_l = pick(old.p_left, new.p_left)[0]
        pr_r = pick(old.p_right, new.p_right)[1]
        rho = rho - 0.5 * (pl_l + pr_r)
        return continues(_dots(sl_l, rho), _dots(sr_r, rho))
    ok = continues(_dots(sl_l, rho), _dots(sr_r, rho))
    first = rho_l + pl_r
    ok &= continues(_dots(sl_l, first), _dots(sl_r, first))
    last = rho_r + pr_l
    return ok & continues(_dots(sr_l, last), _dots(sr_r, last))


def _batch_absorb(old: _Summary, new: _Summary, forward, take_new) -> _Summary:
    """The merge of ``old`` and ``new``: the sample is ``new``'s where ``take_new``."""
    xp = backend.xp()
    fw = backend.asmask(forward)[:, None]
    take = backend.asmask(take_new)
    return _Summary(
        old.rho + new.rho,
        xp.where(fw, old.p_left, new.p_left),
        xp.where(fw, new.p_right, old.p_right),
        xp.where(fw, old.sharp_left, new.sharp_left),
        xp.where(fw, new.sharp_right, old.sharp_right),
        new.sample.select(take, old.sample),
        np.logaddexp(old.log_weight, new.log_weight),
        np.where(take_new, new.h, old.h),
    )


def _uniforms(rngs, mask) -> np.ndarray:
    """One uniform from each chain's generator where ``mask`` (``nan`` elsewhere)."""
    return np.array([rng.random() if m else np.nan for rng, m in zip(rngs, mask, strict=True)])


class NoUTurn(TrajectoryPolicy):
    """The no-U-turn trajectory policy (see the module docstring).

    Parameters
    ----------
    max_tree_depth : int
        Most doublings of the trajectory (default 10, Stan's: at most 1023 steps), in
        ``[1, 20]``.
    criterion : {"stan", "numpyro"}
        ``"stan"`` (default): the criterion above with Stan's extra checks between the two
        halves of every merge. ``"numpyro"``: NumPyro's and BlackJAX's form, a single check
        per merge with the momentum sum corrected by half of each end's momentum,
        :math:`\\rho - (p_- + p_+)/2` (Betancourt 2017, §A.4.2), for comparing with those
        libraries tree for tree.

    Notes
    -----
    Needs a full momentum refreshment each iteration (the trajectory's states are weighed
    against the refreshed start) and an integrator whose step with :math:`-\\varepsilon` is
    the inverse of its step with :math:`\\varepsilon` (the tree is integrated backward so).

    Over a non-canonical flow. The tree's invariance argument (Hoffman and Gelman 2014,
    §3.1; Betancourt 2017, App. A) uses only that the steps are volume preserving, that the
    backward step is the inverse of the forward one, so that building from any state of
    the final orbit in random directions gives the same orbit with the same probability,
    and that the criterion and the weights depend on the orbit's states alone; it never
    uses the momentum flip :math:`p \\to -p`. The magnetic leapfrog with a fixed field
    (:class:`~hamiltonia.structures.magnetic.MagneticStructure`) is a symmetric composition of exact
    flows, so its step with :math:`-\\varepsilon` is its inverse and it preserves volume:
    no-U-turn sampling over it (the research's "adaptive MHMC") leaves
    :math:`\\pi(q)\\,\\mathcal N(p; 0, M)` invariant with the field's sign left as it is
    (a tree has no rejection to flip it on), and the sampler composes it. Likewise a
    random mass is drawn once per tree.
    """

    numeric_methods = ("transition",)
    needs_full_refresh = True

    def __init__(self, max_tree_depth: int = DEFAULT_MAX_TREE_DEPTH, criterion: str = "stan"):
        self.max_tree_depth = check_int(
            max_tree_depth, "max_tree_depth", minimum=1, maximum=MAX_TREE_DEPTH_LIMIT
        )
        if criterion not in CRITERIA:
            raise ValueError(
                f"criterion must be one of {', '.join(map(repr, CRITERIA))}, got {criterion!r:.80}"
            )
        self.criterion = criterion

    def stats(self):
        return NUTS_STATS

    def transition(self, sampler, state, step_size, rngs):
        # Chains that stopped ride along masked, with infinite energies and nan sums that no
        # result reads: the warnings they raise say nothing.
        with np.errstate(all="ignore"):
            return self._transition(sampler, state, step_size, rngs)

    def _transition(self, sampler, state, step_size, rngs):
        ham, integrator = sampler.hamiltonian, sampler.integrator
        trapezoid = self.criterion == "numpyro"
        host = backend.to_numpy
        n = state.q.shape[0]
        eps = np.broadcast_to(np.asarray(step_size, dtype=float), (n,))
        h0 = host(ham.energy(state, backend.asarray(eps)))
        tree = _Summary.leaf(ham, state, np.zeros(n), h0)
        left = right = state
        active = np.ones(n, dtype=bool)
        depth = np.zeros(n, dtype=np.int64)
        n_leapfrog = np.zeros(n, dtype=np.int64)
        n_grad = np.zeros(n, dtype=np.int64)
        sum_prob = np.zeros(n)
        diverging = np.zeros(n, dtype=bool)
        for j in range(self.max_tree_depth):
            if not active.any():
                break
            forward = _uniforms(rngs, active) >= 0.5
            signed = backend.asarray(np.where(forward, eps, -eps))
            z = right.select(backend.asmask(forward), left)
            valid = active.copy()
            stack: list[_Summary] = []
            new = None
            for leaf in range(2**j):
                # A chain whose subtree already failed takes no step (and no fixed point of
                # a processed leapfrog counts for it), as in the compiled tree.
                moved, used = integrator.integrate(ham, z, signed, valid.astype(np.int64))
                n_grad += np.where(valid, host(used), 0)
                n_leapfrog += valid
                h = host(ham.energy(moved, backend.asarray(eps)))
                h = np.where(host(moved.finite) & np.isfinite(h), h, np.inf)
                delta = h - h0
                sum_prob += np.where(valid, metropolis_probability(delta), 0.0)
                bad = valid & is_divergent(delta)
                diverging |= bad
                valid &= ~bad
                z = moved.select(backend.asmask(valid), z)
                new = _Summary.leaf(ham, moved, h0 - h, h)
                k = leaf
                while k & 1:
                    old = stack.pop()
                    valid &= _batch_merge_ok(old, new, forward, trapezoid)
                    take = _uniforms(rngs, valid) < subtree_probability(
                        new.log_weight, old.log_weight
                    )
                    new = _batch_absorb(old, new, forward, take)
                    k >>= 1
                if leaf < 2**j - 1:
                    stack.append(new)
            # Chains whose subtree is valid join it to their tree; the others stop.
            joined = active & valid
            active = joined
            if not joined.any():
                break
            jm = backend.asmask(joined)
            right = z.select(jm & backend.asmask(forward), right)
            left = z.select(jm & backend.asmask(~forward), left)
            depth += joined
            take = _uniforms(rngs, joined) < progressive_probability(
                new.log_weight, tree.log_weight
            )
            turned = ~_batch_merge_ok(tree, new, forward, trapezoid)
            tree = _select_summary(joined, _batch_absorb(tree, new, forward, take), tree)
            active &= ~turned
        sample = tree.sample
        info = {
            "accepted": np.any(host(sample.q) != host(state.q), axis=-1),
            "acceptance_rate": np.where(n_leapfrog > 0, sum_prob / np.maximum(n_leapfrog, 1), 0.0),
            "diverging": diverging,
            "energy": tree.h,
            "n_steps": n_leapfrog,
            "n_grad": n_grad,
            "tree_depth": depth,
        }
        return sample, info

    def compiled(self, dim):
        return PartKernels(
            {"transition": no_u_turn_transition_kernel},
            params={
                "max_tree_depth": self.max_tree_depth,
                "criterion": CRITERIA.index(self.criterion),
            },
            stats=self.stats(),
            scratch_rows=scratch_rows(self.max_tree_depth),
        )

    def __repr__(self):
        return f"NoUTurn(max_tree_depth={self.max_tree_depth}, criterion={self.criterion!r})"


def _select_summary(mask, a: _Summary, b: _Summary) -> _Summary:
    xp = backend.xp()
    m = backend.asmask(mask)
    return _Summary(
        *(xp.where(m[:, None], x, y) for x, y in (
            (a.rho, b.rho), (a.p_left, b.p_left), (a.p_right, b.p_right),
            (a.sharp_left, b.sharp_left), (a.sharp_right, b.sharp_right),
        )),
        a.sample.select(m, b.sample),
        np.where(mask, a.log_weight, b.log_weight),
        np.where(mask, a.h, b.h),
    )  # fmt: skip
