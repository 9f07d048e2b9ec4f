"""Warm-up adaptation.

A :class:`Tuner` adapts a sampler's free parameters during warm-up and freezes them after.
All chains adapt at once (the arrays hold one value per chain); ``finalize`` runs at the
barrier that ends warm-up, where a tuner may pool information across chains. The metric is
adapted pooled over the chains (one metric for all) or per chain (each chain, each
antithetic pair, its own, from its own draws: :class:`WindowedMetric`'s ``per_chain``), the
same estimate (:func:`estimate_metric`) either way; :doc:`/adaptation` compares the two.

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").

Where they live
---------------
This module holds the built-in tuners, :class:`DualAveraging` (with its kernels and the
initial step-size search, :func:`find_initial_step_size`) and :class:`WindowedMetric`, and
re-exports the names of two modules of one job each:

* :mod:`hamiltonia.tuners.base`: :class:`Tuner`, the contract, and the helpers of its
  adapted state (:func:`declared_parameters`, :func:`read_parameter`,
  :func:`write_parameter`, :func:`checked_parameter`);
* :mod:`hamiltonia.tuners.metric_estimate`: :func:`metric_windows`, :func:`estimate_metric`
  and :data:`METRIC_POOLING`, the windowed metric's schedule and estimate.
"""

from __future__ import annotations

import numpy as np

from hamiltonia import backend
from hamiltonia._validation import check_int, check_positive, check_probability, finite_array
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import column, own

# The threshold of a stuck chain, one for warm-up's restart and the run's check.
from hamiltonia.diagnostics.stuck import STUCK_STEP_FACTOR
from hamiltonia.state import ChainState, ModelError
from hamiltonia.tuners.base import (
    Tuner,
    checked_parameter,
    declared_parameters,
    read_parameter,
    write_parameter,
)
from hamiltonia.tuners.metric_estimate import (
    METRIC_POOLING,  # noqa: F401  (re-exported: it was defined here)
    estimate_metric,
    metric_windows,
    settled_draws,
)

__all__ = [
    "DualAveraging",
    "Tuner",
    "WindowedMetric",
    "checked_parameter",
    "declared_parameters",
    "dual_averaging_step",
    "estimate_metric",
    "find_initial_step_size",
    "metric_windows",
    "read_parameter",
    "write_parameter",
]


def dual_averaging_step(mu, h_bar, log_eps_bar, m, alpha, target_accept, gamma, t0, kappa):
    """One update of dual averaging (scalars or per-chain arrays): returns
    ``(h_bar, log_eps, log_eps_bar, m)`` after observing the acceptance statistic
    ``alpha``."""
    m = m + 1.0
    w = 1.0 / (m + t0)
    h_bar = (1.0 - w) * h_bar + w * (target_accept - alpha)
    log_eps = mu - np.sqrt(m) / gamma * h_bar
    eta = m ** (-kappa)
    log_eps_bar = eta * log_eps + (1.0 - eta) * log_eps_bar
    return h_bar, log_eps, log_eps_bar, m


def dual_averaging_kernel(ctx, eps, state):
    """Kernel of :meth:`DualAveraging.update` for one chain (role ``tune``):
    ``state`` = (mu, h_bar, log_eps_bar, m); the parameters ``target_accept``, ``gamma``,
    ``t0`` and ``kappa``; it reads the statistics ``acceptance_rate`` and ``diverging``,
    whichever part records them."""
    alpha = ctx.stats[column.acceptance_rate]
    if ctx.stats[column.diverging] > 0.0:
        alpha = 0.0
    h_bar, log_eps, log_eps_bar, m = dual_averaging_step(
        state[0], state[1], state[2], state[3], alpha, own.target_accept, own.gamma, own.t0,
        own.kappa,
    )  # fmt: skip
    state[1] = h_bar
    state[2] = log_eps_bar
    state[3] = m
    eps[0] = np.exp(log_eps)


def find_initial_step_size(sampler, chain: ChainState, rngs, step_size=1.0, max_doublings=100):
    """The heuristic of Hoffman and Gelman (2014, Algorithm 4), per chain.

    Starting from ``step_size`` (one for all chains, or one per chain), doubles (or halves)
    :math:`\\varepsilon` until the acceptance probability of a one-step trial,
    :math:`a(\\varepsilon)`, crosses :math:`1/2`: with
    :math:`s = 2\\,[a(\\varepsilon_0) > 1/2] - 1`, repeat
    :math:`\\varepsilon \\leftarrow 2^s \\varepsilon` while :math:`a(\\varepsilon)^s > 2^{-s}`.

    All chains still searching are probed together, but each chain draws only from its own
    generator and only while it searches, so a chain's stream (and its result) does not
    depend on the other chains. The secondary chain of an antithetic pair then takes its
    primary's step size and generator state (:meth:`~hamiltonia.reducers.antithetic.AntitheticPairs.
    rejoin`): the searches of the two may have drawn different numbers of probes. A sampler
    whose chains move in groups with parts of their own (:meth:`~hamiltonia.samplers.Sampler.
    chain_groups`: a metric per chain) is searched one group at a time, each with its parts.
    """
    n = len(rngs)
    eps = np.array(np.broadcast_to(np.asarray(step_size, dtype=float), (n,)))
    groups = getattr(sampler, "chain_groups", lambda _: None)(n)
    if groups is not None:
        for group in groups:
            rows = np.asarray(group)
            with sampler.parts_of(group):
                sub = ChainState(chain.phase.take(rows), np.asarray(chain.step_size)[rows])
                try:
                    eps[rows] = find_initial_step_size(
                        sampler, sub, [rngs[i] for i in group], eps[rows], max_doublings
                    )
                except ModelError as err:
                    raise err.renumbered(group) from err.__cause__
        return eps

    def probe(rows):
        sub = ChainState(chain.phase.take(rows), chain.step_size[rows])
        try:
            return sampler.probe_acceptance(sub, eps[rows], [rngs[i] for i in rows])
        except ModelError as err:
            raise err.renumbered(rows) from err.__cause__

    everyone = np.arange(n)
    prob = probe(everyone)
    direction = np.where(prob > 0.5, 1.0, -1.0)
    active = everyone
    for _ in range(max_doublings):
        # a^s > 2^-s  <=>  s log a > -s log 2 (a = 0 never satisfies it when s = 1)
        sign = direction[active]
        keep = sign * np.log(np.maximum(prob, 1e-300)) > -sign * np.log(2.0)
        active = active[keep]
        if active.size == 0:
            break
        eps[active] *= 2.0 ** direction[active]
        prob = probe(active)
    sampler.reducer.rejoin(eps, rngs)
    return eps


class DualAveraging(Tuner):
    """Nesterov primal-dual averaging of the log step size (Hoffman and Gelman 2014).

    With target acceptance :math:`\\delta` and the iteration's acceptance statistic
    :math:`\\alpha_m`:

    .. math::

        \\bar H_m &= \\Bigl(1 - \\frac{1}{m + t_0}\\Bigr)\\bar H_{m-1}
                    + \\frac{1}{m + t_0}(\\delta - \\alpha_m) \\\\
        \\log\\varepsilon_m &= \\mu - \\frac{\\sqrt m}{\\gamma}\\bar H_m \\\\
        \\log\\bar\\varepsilon_m &= m^{-\\kappa}\\log\\varepsilon_m
                    + (1 - m^{-\\kappa})\\log\\bar\\varepsilon_{m-1}

    with :math:`\\mu = \\log(10\\varepsilon_0)`, :math:`\\bar H_0 = 0`,
    :math:`\\bar\\varepsilon_0 = 1`; after warm-up :math:`\\varepsilon = \\bar\\varepsilon`
    (Hoffman and Gelman 2014; Mongwe 2022, thesis, §2.8, eq. 2.36). Divergent transitions count as
    :math:`\\alpha = 0`.

    Parameters
    ----------
    target_accept : float in (0, 1)
        :math:`\\delta`, default 0.8.
    gamma, t0, kappa : float
        Defaults 0.05, 10 and 0.75 (Stan's and the thesis's).
    initial_step_size : float, optional
        :math:`\\varepsilon_0`. By default it comes from :func:`find_initial_step_size`.
    find_initial : bool
        Search for :math:`\\varepsilon_0` (default true; the thesis starts from
        :math:`10^{-4}` without a search, pass ``initial_step_size=1e-4,
        find_initial=False`` to reproduce it).
    pool_chains : bool
        Give every chain the geometric mean of the adapted step sizes at the end of warm-up
        (default false: each chain keeps its own, as in Stan).

    Notes
    -----
    What it adapts, the chains' step sizes, is part of the chains' state, which every
    checkpoint saves (``step_size``): it declares no part parameter (:attr:`Tuner.adapts`
    is empty), and its state in warm-up is :meth:`warmup_state`.
    """

    sets_step_size = True

    def __init__(
        self,
        target_accept: float = 0.8,
        *,
        gamma: float = 0.05,
        t0: float = 10.0,
        kappa: float = 0.75,
        initial_step_size: float | None = None,
        find_initial: bool = True,
        pool_chains: bool = False,
    ):
        self.target_accept = check_probability(target_accept, "target_accept")
        self.gamma = check_positive(gamma, "gamma")
        self.t0 = float(t0)
        if not np.isfinite(self.t0) or self.t0 < 0:
            raise ValueError(f"t0 must be a finite number >= 0, got {t0!r}")
        self.kappa = check_probability(kappa, "kappa")
        self.initial_step_size = (
            None
            if initial_step_size is None
            else check_positive(initial_step_size, "initial_step_size")
        )
        self.find_initial = bool(find_initial)
        self.pool_chains = bool(pool_chains)

    #: Columns of :attr:`state`, one row per chain: the averaging centre :math:`\\mu`, the
    #: running mean :math:`\\bar H`, :math:`\\log\\bar\\varepsilon`, and the count :math:`m`.
    STATE_COLUMNS = ("mu", "h_bar", "log_eps_bar", "m")

    @property
    def independent_chains(self) -> bool:
        """Each chain averages its own acceptance statistics; only ``pool_chains`` joins
        them, at the end of warm-up."""
        return not self.pool_chains

    def take_chains(self, rows, rngs):
        if hasattr(self, "state"):
            # A C-ordered copy: the compiled kernel reads one row per chain.
            self.state = np.ascontiguousarray(self.state[np.asarray(rows)])

    def start(self, sampler, chain, n_warmup, rngs):
        check_int(n_warmup, "n_warmup")
        if self.find_initial:
            start = 1.0 if self.initial_step_size is None else self.initial_step_size
            chain.step_size = find_initial_step_size(sampler, chain, rngs, start)
        elif self.initial_step_size is not None:
            chain.step_size = np.full_like(chain.step_size, self.initial_step_size)
        self.state = np.zeros((chain.step_size.shape[0], 4))
        self.restart(chain)

    def restart(self, chain) -> None:
        """Start averaging afresh around the current step size (after a metric update)."""
        self.state[:, 0] = np.log(10.0 * chain.step_size)
        self.state[:, 1:] = 0.0

    def update(self, sampler, chain, info, iteration):
        alpha = np.where(info["diverging"], 0.0, np.nan_to_num(info["acceptance_rate"]))
        mu = self.state[:, 0]
        h_bar, log_eps, log_eps_bar, m = dual_averaging_step(
            mu, *self.state[:, 1:].T, alpha, *self.parameters()
        )
        self.state = np.stack([mu, h_bar, log_eps_bar, m], axis=1)
        chain.step_size = np.exp(log_eps)

    def parameters(self) -> tuple[float, float, float, float]:
        """(target_accept, gamma, t0, kappa)."""
        return (self.target_accept, self.gamma, self.t0, self.kappa)

    def compiled(self, dim):
        return PartKernels(
            {"tune": dual_averaging_kernel},
            params={
                name: float(value)
                for name, value in zip(
                    ("target_accept", "gamma", "t0", "kappa"), self.parameters(), strict=True
                )
            },
        )

    def warmup_state(self):
        """:math:`(\\mu, \\bar H, \\log\\bar\\varepsilon, m)` per chain and the parameters
        :math:`(\\delta, \\gamma, t_0, \\kappa)` (checked against the rebuilt sampler's on
        resume: they define the updates that follow). The step size in force is the
        chain's, saved with it."""
        if not hasattr(self, "state"):
            return None
        return {
            # Copies: restart() writes the state in place.
            **{name: self.state[:, k].copy() for k, name in enumerate(self.STATE_COLUMNS)},
            "parameters": self._named_parameters(),
        }  # fmt: skip

    def check_warmup_state(self, state, *, chains, dim, n_warmup, done):
        missing = [name for name in self.STATE_COLUMNS if name not in state]
        if missing:
            raise ValueError(f"{missing[0]} is missing")
        checked = {name: finite_array(state[name], name, (chains,)) for name in self.STATE_COLUMNS}
        m = checked["m"]
        # m counts the updates since the last restart: a whole number, at most done.
        if np.any(m < 0) or np.any(m != np.floor(m)) or np.any(m > done):
            raise ValueError(f"m must count updates: whole numbers in [0, {done}]")
        own = self._named_parameters()
        if state.get("parameters") != own:
            raise ValueError(
                f"parameters {state.get('parameters')!r} are not the sampler's options {own!r}"
            )
        return checked

    def _named_parameters(self) -> dict:
        return dict(zip(("target_accept", "gamma", "t0", "kappa"), self.parameters(), strict=True))

    def restore_warmup_state(self, sampler, state, n_warmup, rngs):
        # The compiled kernel reads the state as one C-ordered row per chain.
        self.state = np.ascontiguousarray(
            np.stack([state[name] for name in self.STATE_COLUMNS], axis=1), dtype=np.float64
        )

    def finalize(self, sampler, chain):
        if not hasattr(self, "state") or not np.all(self.state[:, 3] > 0):
            return  # no adaptation happened: keep the current step size
        log_eps = self.state[:, 2]
        if self.pool_chains:
            log_eps = np.full_like(log_eps, np.mean(log_eps))
        chain.step_size = np.exp(log_eps)

    def __repr__(self):
        return f"DualAveraging(target_accept={self.target_accept})"


class WindowedMetric(Tuner):
    """Windowed adaptation of the metric (inverse mass matrix), on Stan's schedule.

    In each slow window (see :func:`metric_windows`) the warm-up positions are gathered and
    their variance (``"diagonal"``) or covariance (``"dense"``) estimated, then regularised
    towards a small multiple of the identity as in Stan (:func:`estimate_metric`):

    .. math::

        M^{-1} = \\frac{n}{n + 5}\\,\\hat\\Sigma + 10^{-3}\\,\\frac{5}{n + 5}\\,I,

    with :math:`n` the number of draws the estimate reads. A window in which chains jumped
    from one region to another (a metastable start) is read from its second half only
    (:func:`~hamiltonia.tuners.metric_estimate.settled_draws`); a stationary window is read
    whole, as Stan reads it. After each update the step size is searched again and dual
    averaging restarts around it.

    Pooled (the default), the draws of all chains are pooled into one metric for all (as mici
    does), at the barrier that the run loop provides at each window's end; the search
    starts from the geometric mean of the chains' step sizes. Per chain (``per_chain=True``,
    as Stan and NumPyro do), each chain estimates its own metric from its own draws (an
    antithetic pair, from its two chains') and searches from its own step size, so that a
    chain's draws do not depend on the other chains: the sampler must hold a metric per
    chain (:class:`~hamiltonia.samplers.composition.PerChainMetricSampler`, which the recipes
    build for ``adapt_metric="per-chain"``).

    Parameters
    ----------
    kind : {"diagonal", "dense"}
        Which metric to estimate.
    initial_buffer, window, terminal_buffer : int
        Stan's defaults 75, 25 and 50.
    per_chain : bool
        Adapt a metric per chain (default false: one metric, pooled over the chains).

    Notes
    -----
    What it adapts, the metric, is saved by every checkpoint with the chains, whichever
    tuner installed it (the Hamiltonian's ``metric``; per chain, in the sampler's own state,
    :meth:`~hamiltonia.samplers.Sampler.extra_state`): it declares no part parameter
    (:attr:`Tuner.adapts` is empty), and its state in warm-up is :meth:`warmup_state`.

    References
    ----------
    Stan Reference Manual, "HMC algorithm parameters: automatic parameter tuning".
    """

    def __init__(
        self,
        kind: str = "diagonal",
        *,
        initial_buffer: int = 75,
        window: int = 25,
        terminal_buffer: int = 50,
        per_chain: bool = False,
    ):
        if kind not in ("diagonal", "dense"):
            raise ValueError(f"metric adaptation kind must be 'diagonal' or 'dense', got {kind!r}")
        self.kind = kind
        self.initial_buffer = check_int(initial_buffer, "initial_buffer")
        self.window = check_int(window, "window", minimum=1)
        self.terminal_buffer = check_int(terminal_buffer, "terminal_buffer")
        if not isinstance(per_chain, bool | np.bool_):
            raise ValueError(f"per_chain must be True or False, got {per_chain!r}")
        self.per_chain = bool(per_chain)

    @property
    def independent_chains(self) -> bool:
        """Per chain, each chain's metric reads its own draws alone."""
        return self.per_chain

    def start(self, sampler, chain, n_warmup, rngs):
        if not hasattr(getattr(sampler, "hamiltonian", None), "metric"):
            raise TypeError("WindowedMetric needs a sampler whose Hamiltonian has a metric")
        if self.per_chain:
            if not callable(getattr(sampler, "set_chain_metrics", None)):
                raise TypeError(
                    "WindowedMetric(per_chain=True) needs a sampler that holds a metric per "
                    f"chain (PerChainMetricSampler: adapt_metric='per-chain'), not "
                    f"{type(sampler).__name__}"
                )
            # A new run starts every chain from the sampler's own metric, whatever an
            # earlier run of the same sampler adapted (and for however many chains).
            sampler.set_chain_metrics(None)
        self.windows = self._schedule(n_warmup)
        self._rngs = rngs
        self._buffer: list[np.ndarray] = []

    def observe(self, positions: np.ndarray, iteration: int) -> None:
        """Record the positions of all chains after warm-up iteration ``iteration``."""
        if any(begin <= iteration < end for begin, end in self.windows):
            self._buffer.append(np.array(backend.to_numpy(positions), dtype=float, copy=True))

    def update(self, sampler, chain, info, iteration):
        self.observe(chain.phase.q, iteration)
        if any(iteration + 1 == end for _, end in self.windows):
            self.end_window(sampler, chain)

    def compiled(self, dim):
        # Nothing runs in the kernel: the metric is estimated at the window ends, which the
        # compiled path reaches as chunk boundaries (update_chunk).
        return PartKernels()

    def boundaries(self, n_warmup):
        return [end for _, end in self._schedule(n_warmup)]

    def update_chunk(self, sampler, chain, positions, first_iteration):
        for k in range(positions.shape[1]):
            self.observe(positions[:, k], first_iteration + k)
        if any(first_iteration + positions.shape[1] == end for _, end in self.windows):
            self.end_window(sampler, chain)

    def warmup_state(self):
        """The window schedule (checked against the one the rebuilt sampler computes) and the
        positions buffered in the current window: the arrays themselves, which
        :meth:`observe` never changes once appended. The metric in force is the sampler's,
        saved with the chains (per chain: in the sampler's own state,
        :meth:`~hamiltonia.samplers.Sampler.extra_state`)."""
        if not hasattr(self, "windows"):
            return None
        return {"windows": [list(w) for w in self.windows], "buffer": tuple(self._buffer)}

    def _schedule(self, n_warmup: int) -> list[tuple[int, int]]:
        return metric_windows(n_warmup, self.initial_buffer, self.window, self.terminal_buffer)

    def check_warmup_state(self, state, *, chains, dim, n_warmup, done):
        windows = self._schedule(n_warmup)
        if state.get("windows") != [list(w) for w in windows]:
            raise ValueError(
                f"windows {state.get('windows')!r} are not the schedule {windows} of "
                f"{n_warmup} warm-up iterations"
            )
        # The buffer holds the positions after iterations begin .. done - 1 of the window
        # that done falls in (a window's end empties it).
        expected = next((done - begin for begin, end in windows if begin <= done < end), 0)
        buffer = state.get("buffer")
        if not isinstance(buffer, list | tuple):
            raise ValueError("buffer is not a list of positions")
        if len(buffer) != expected:
            raise ValueError(
                f"buffer holds {len(buffer)} positions, expected {expected} after {done} "
                "warm-up iterations"
            )
        rows = (
            finite_array(buffer, "buffer", (expected, chains, dim))
            if expected
            else np.empty((0, chains, dim))
        )
        return {"windows": windows, "buffer": rows}

    def restore_warmup_state(self, sampler, state, n_warmup, rngs):
        self.windows = self._schedule(n_warmup)
        self._rngs = rngs
        # One (chains, dim) array per iteration, as observe() appends them.
        self._buffer = [np.array(row, dtype=float) for row in state["buffer"]]

    def take_chains(self, rows, rngs):
        if hasattr(self, "windows"):
            rows = np.asarray(rows)
            self._buffer = [position[rows] for position in self._buffer]
            self._rngs = rngs

    def end_window(self, sampler, chain) -> None:
        """Estimate and install the metric from the buffered positions, then restart
        step-size adaptation: pooled, one metric from every chain's draws, the search
        starting from the chains' geometric mean step size; per chain, each chain's (each
        antithetic pair's) metric from its own draws, the search from its own step size."""
        buffer, self._buffer = self._buffer, []
        if not buffer:
            return
        buffer = self._restart_stuck(sampler, chain, buffer)
        if self.per_chain:
            if not self._install_per_chain(sampler, np.stack(buffer)):
                return
        else:
            window = settled_draws(np.stack(buffer))
            metric = estimate_metric(window.reshape(-1, window.shape[-1]), self.kind)
            if metric is None:
                return
            sampler.hamiltonian.metric = metric
        for tuner in sampler.tuners:
            if isinstance(tuner, DualAveraging) and hasattr(tuner, "state"):
                if self.per_chain:
                    start = np.array(chain.step_size, dtype=float)
                else:
                    start = float(np.exp(np.mean(np.log(chain.step_size))))
                chain.step_size = find_initial_step_size(sampler, chain, self._rngs, start)
                tuner.restart(chain)

    def _restart_stuck(self, sampler, chain, buffer: list) -> list:
        """Restart the chains that did not move in the window from the others' positions,
        and return the window's positions without theirs (for the metric).

        A chain started where the model is hard to integrate (an exploding recursion, a
        funnel's neck) can get a step size so small that warm-up never brings it out: its
        step size is :data:`STUCK_STEP_FACTOR` times or more below the chains' median, or its
        positions did not change over the window. (A chain that moves less than the others
        at a like step size is not stuck: it explores a narrower region, or the others run
        away from an improper posterior, which the run's checks report.) Such a chain takes
        the
        current state and step size of a chain that moved (the first such chain after it,
        cyclically: no random number is drawn), with a
        :class:`~hamiltonia.diagnostics.checks.SamplingWarning` naming both. Not done where
        chains are coupled or carry their own metric (antithetic pairs, ``per_chain``)."""
        positions = np.stack(buffer)  # (iterations, chains, dim)
        chains = positions.shape[1]
        coupled = self.per_chain or getattr(getattr(sampler, "reducer", None), "pairs", False)
        if chain is None or chains < 2 or coupled:
            return buffer
        with np.errstate(invalid="ignore"):
            span = np.max(positions.max(axis=0) - positions.min(axis=0), axis=-1)
        typical = float(np.median(span))
        step = np.array(np.broadcast_to(np.asarray(chain.step_size, float), (chains,)))
        stuck = ~(span > 0.0) | ~(step * STUCK_STEP_FACTOR > np.median(step))
        moved = np.flatnonzero(~stuck)
        if not stuck.any() or moved.size == 0 or not typical > 0:
            return buffer
        source = np.arange(chains)
        for k in np.flatnonzero(stuck):
            source[k] = moved[np.searchsorted(moved, k) % moved.size]
        from hamiltonia._warnings import warn_at_user
        from hamiltonia.diagnostics.checks import SamplingWarning

        others = float(np.median(step[moved]))
        restarts = "; ".join(
            f"chain {k} from chain {source[k]} (its step size {step[k]:.3g}, the others' "
            f"median {others:.3g}; its positions spanned {span[k]:.3g}, the median "
            f"{typical:.3g})"
            for k in np.flatnonzero(stuck)
        )
        warn_at_user(
            f"warm-up restarted {int(stuck.sum())} of {chains} chains that did not move in "
            f"its metric window: {restarts}. A chain started where the model is hard to "
            "integrate can stay there at a vanishing step size; it continues from another "
            "chain's position (check the initial points, or reparameterise)",
            SamplingWarning,
        )
        chain.phase = chain.phase.select(~stuck, chain.phase.take(source))
        chain.step_size = step[source]
        return [row[~stuck] for row in buffer]

    def _install_per_chain(self, sampler, positions: np.ndarray) -> bool:
        """Each group's metric (a chain, or an antithetic pair) from its own draws of the
        window, ``positions`` of shape ``(iterations, chains, dim)``, installed in the
        sampler; ``False`` (nothing installed) where a group holds under two draws."""
        _, chains, dim = positions.shape
        groups = sampler.chain_groups(chains) or [list(range(chains))]
        metrics: list = [None] * chains
        for group in groups:
            # Rows iteration by iteration, in the order the pooled estimate reads them.
            window = settled_draws(positions[:, group])
            metric = estimate_metric(window.reshape(-1, dim), self.kind)
            if metric is None:
                return False
            for c in group:
                metrics[c] = metric
        sampler.set_chain_metrics(metrics)
        return True

    def __repr__(self):
        per_chain = ", per_chain=True" if self.per_chain else ""
        return f"WindowedMetric({self.kind!r}{per_chain})"
