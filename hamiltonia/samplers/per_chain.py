"""The sampler of per-chain metric adaptation: a Hamiltonian sampler whose chains each move
with a metric of their own.

One job: :class:`PerChainMetricSampler`, which :func:`hamiltonia.samplers.composition.compose`
builds where a tuner adapts the metric per chain (``adapt_metric="per-chain"``,
:class:`~hamiltonia.tuners.adaptation.WindowedMetric` with ``per_chain=True``). It moves the
chains in groups (each chain, each antithetic pair), each with its metric installed, and joins
the groups' states and statistics back in chain order; a checkpoint saves the chains'
metrics with the sampler's state. :mod:`hamiltonia.samplers.composition` re-exports it.
"""

from __future__ import annotations

import contextlib

import numpy as np

from hamiltonia import backend as _backend
from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric, Metric
from hamiltonia.samplers.hamiltonian import HamiltonianSampler
from hamiltonia.state import ChainState, ModelError, PhaseState

__all__ = ["PerChainMetricSampler"]


def _joined(values: list, order: np.ndarray):
    """The per-chain arrays of the groups, ``values`` (chains on the first axis), joined and
    put back in chain order (``order``: the chain of each joined row)."""
    if all(isinstance(v, np.ndarray) or np.isscalar(v) for v in values):
        xp = np
    else:
        xp = _backend.xp()
    joined = xp.concatenate([xp.asarray(v) for v in values], axis=0)
    if np.array_equal(order, np.arange(order.size)):
        return joined
    return joined[xp.asarray(np.argsort(order))]


def _joined_phases(phases: list[PhaseState], order: np.ndarray) -> PhaseState:
    """The groups' phase states as one, in chain order."""

    def field(name):
        values = [getattr(phase, name) for phase in phases]
        return None if values[0] is None else _joined(values, order)

    names = dict.fromkeys(name for phase in phases for name in phase.aux)
    aux = {}
    for name in names:
        # A variable a group has not set yet is zero there (the parts' convention).
        reference = next(phase.aux[name] for phase in phases if name in phase.aux)
        aux[name] = _joined(
            [
                phase.aux[name]
                if name in phase.aux
                else _backend.xp().zeros((phase.q.shape[0], *reference.shape[1:]))
                for phase in phases
            ],
            order,
        )
    return PhaseState(field("q"), field("p"), field("log_prob"), field("grad"), aux)


def _per_chain(value, n: int):
    """A statistic of a group's step as one value per chain of the group."""
    return np.broadcast_to(value, (n,)) if np.ndim(value) == 0 else value


class PerChainMetricSampler(HamiltonianSampler):
    """A :class:`~hamiltonia.samplers.HamiltonianSampler` whose chains each move with a metric
    of their own: the sampler of per-chain metric adaptation (``adapt_metric="per-chain"``,
    :class:`~hamiltonia.tuners.adaptation.WindowedMetric` with ``per_chain=True``).

    The chains move in groups (:meth:`chain_groups`): each chain, or each antithetic pair
    (whose two chains share their random numbers, and so their metric), as a run of its own
    with its metric installed (:meth:`parts_of`), so that chain :math:`c`'s draws do not
    depend on how many chains run beside it. On the NumPy path one group is stepped at a
    time (the vectorisation over chains is given up: :doc:`/adaptation` measures its cost);
    on the compiled path each chain runs in its own kernel call anyway, with its own
    metric's parameters (:meth:`hamiltonia.compiled.plan.CompiledPlan.run`).

    Until warm-up installs them (:meth:`set_chain_metrics`), every chain moves with the
    Hamiltonian's own metric, which stays the one the sampler was built with: the adapted
    metrics are :attr:`chain_metrics`, and a checkpoint saves them with the sampler's state
    (:meth:`extra_state`).

    Parameters are those of :class:`~hamiltonia.samplers.HamiltonianSampler`.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._chain_metrics: list | None = None
        # Inside parts_of: the sampler moves the chains it is given as one group.
        self._in_group = False

    @property
    def chain_metrics(self) -> list | None:
        """Each chain's metric (an antithetic pair's two chains share theirs), or ``None``
        while every chain moves with the Hamiltonian's own."""
        return None if self._chain_metrics is None else list(self._chain_metrics)

    def set_chain_metrics(self, metrics) -> None:
        """Install one metric per chain (a list of
        :class:`~hamiltonia.hamiltonians.Metric`), or ``None``: every chain with the
        Hamiltonian's own."""
        if metrics is None:
            self._chain_metrics = None
            return
        metrics = list(metrics)
        if not metrics or not all(isinstance(m, Metric) for m in metrics):
            raise TypeError("chain metrics must be a non-empty list of Metric, one per chain")
        self._chain_metrics = metrics

    def _grouping(self, chains: int) -> list[list[int]]:
        # An antithetic pair is one group: its chains share their random numbers.
        return [list(g) for g in self.reducer.pairing(chains)] or [[c] for c in range(chains)]

    def chain_groups(self, chains):
        """Each chain, or each antithetic pair, in order; ``None`` inside :meth:`parts_of`
        (the chains given then are one group). ``ValueError`` where the sampler holds the
        metrics of another number of chains."""
        if self._in_group:
            return None
        held = self._chain_metrics
        if held is not None and len(held) != chains:
            raise ValueError(
                f"the sampler holds the adapted metrics of {len(held)} chains, not {chains}: "
                "a run with another number of chains adapts them anew (warm-up)"
            )
        return self._grouping(chains)

    @contextlib.contextmanager
    def parts_of(self, group):
        """Install the metric of the chains ``group`` (one of :meth:`chain_groups`) for the
        duration; the sampler then moves the chains it is given as that one group."""
        metric = self.hamiltonian.metric
        if self._chain_metrics is not None:
            self.hamiltonian.metric = self._chain_metrics[group[0]]
        was, self._in_group = self._in_group, True
        try:
            yield
        finally:
            self.hamiltonian.metric = metric
            self._in_group = was

    def _by_group(self, chain: ChainState, rngs, move):
        """``move(sub_chain, sub_rngs, rows)`` for each group (its chains ``rows``) with its
        parts installed: what ``move`` returned, by group, and the chain of each row of
        their joined results; a model's error names the run's chain."""
        n = len(rngs)
        groups = self.chain_groups(n)
        step = np.broadcast_to(np.asarray(chain.step_size, dtype=float), (n,))
        results = []
        for group in groups:
            rows = np.asarray(group)
            with self.parts_of(group):
                sub = ChainState(chain.phase.take(rows), np.array(step[rows]))
                try:
                    results.append(move(sub, [rngs[c] for c in group], rows))
                except ModelError as err:
                    raise err.renumbered(group) from err.__cause__
        return results, np.concatenate([np.asarray(g) for g in groups])

    def init(self, positions):
        q = np.asarray(_backend.to_numpy(positions), dtype=float)
        groups = self._grouping(q.shape[0])
        if self._in_group or len(groups) == 1:
            return super().init(positions)
        # One group at a time: a chain's log density and gradient are then computed as in a
        # run of its own (a target's matrix product may round differently with more rows).
        phases = [super(PerChainMetricSampler, self).init(q[g]).phase for g in groups]
        order = np.concatenate([np.asarray(g) for g in groups])
        return ChainState(_joined_phases(phases, order), self._initial_step_sizes(q.shape[0]))

    def step(self, chain, rngs):
        if self.chain_groups(len(rngs)) is None:
            return super().step(chain, rngs)
        parent = super()

        def move(sub, sub_rngs, rows):
            sub, info = parent.step(sub, sub_rngs)
            return sub.phase, {k: _per_chain(v, len(rows)) for k, v in info.items()}

        results, order = self._by_group(chain, rngs, move)
        chain.phase = _joined_phases([phase for phase, _ in results], order)
        infos = [info for _, info in results]
        return chain, {k: _joined([info[k] for info in infos], order) for k in infos[0]}

    def probe_acceptance(self, chain, step_size, rngs):
        if self.chain_groups(len(rngs)) is None:
            return super().probe_acceptance(chain, step_size, rngs)
        eps = np.broadcast_to(np.asarray(step_size, dtype=float), (len(rngs),))
        parent = super()

        def move(sub, sub_rngs, rows):
            return parent.probe_acceptance(sub, np.array(eps[rows]), sub_rngs)

        results, order = self._by_group(chain, rngs, move)
        return _joined(results, order)

    def log_weight(self, chain):
        n = np.shape(chain.phase.log_prob)[0]
        if self.chain_groups(n) is None:
            return super().log_weight(chain)
        parent = super()
        results, order = self._by_group(
            chain, [None] * n, lambda sub, _rngs, _rows: parent.log_weight(sub)
        )
        return None if results[0] is None else _joined(results, order)

    def extra_state(self):
        """The sampler's state, and each chain's metric once adapted: ``chain_metrics``, the
        metrics' class and inverse mass matrices, one per chain."""
        state = super().extra_state()
        if self._chain_metrics is not None:
            state["chain_metrics"] = {
                "kind": type(self._chain_metrics[0]).__name__,
                "inverse_mass": [np.asarray(m.inverse_mass).tolist() for m in self._chain_metrics],
            }
        return state

    def restore_extra_state(self, state):
        """Put back an :meth:`extra_state` read from a file, checked: ``ValueError`` naming
        ``chain_metrics`` and what is wrong with it."""
        super().restore_extra_state(state)
        saved = state.get("chain_metrics") if isinstance(state, dict) else None
        if saved is None:
            self.set_chain_metrics(None)
            return
        kinds = {"DiagonalMetric": DiagonalMetric, "DenseMetric": DenseMetric}
        kind = saved.get("kind") if isinstance(saved, dict) else None
        matrices = saved.get("inverse_mass") if isinstance(saved, dict) else None
        if kind not in kinds or not isinstance(matrices, list) or not matrices:
            raise ValueError(
                "sampler_state.chain_metrics must hold the kind (DiagonalMetric or DenseMetric) "
                "and a non-empty list of inverse mass matrices, one per chain"
            )
        dim = self.target.dim
        shape = (dim,) if kind == "DiagonalMetric" else (dim, dim)
        metrics = []
        for c, matrix in enumerate(matrices):
            try:
                values = np.asarray(matrix, dtype=np.float64)
                if values.shape != shape:
                    raise ValueError(f"shape {values.shape}, expected {shape}")
                metrics.append(kinds[kind](values))
            except (TypeError, ValueError) as err:
                raise ValueError(
                    f"sampler_state.chain_metrics: the metric of chain {c} is invalid: {err}"
                ) from None
        self.set_chain_metrics(metrics)

    def select_extra_state(self, state, chains):
        saved = state.get("chain_metrics")
        if saved is None:
            return state
        matrices = [saved["inverse_mass"][c] for c in chains]
        return {**state, "chain_metrics": {**saved, "inverse_mass": matrices}}
