"""Warm-up adaptation.

A :class:`Tuner` adapts a sampler's free parameters during warm-up and freezes them after.
All chains adapt at once (the arrays hold one value per chain); ``finalize`` runs at the
barrier that ends warm-up, where a tuner may pool information across chains. The metric is
adapted pooled over the chains (one metric for all) or per chain (each chain, each
antithetic pair, its own, from its own draws: :class:`WindowedMetric`'s ``per_chain``), the
same estimate (:func:`estimate_metric`) either way; :doc:`/adaptation` compares the two.

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from hamiltonia import backend
from hamiltonia._validation import check_int, check_positive, check_probability, finite_array
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import column, own
from hamiltonia.state import ChainState, ModelError

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


def dual_averaging_kernel(eps, state, stats, PF, PI):
    """Kernel of :meth:`DualAveraging.update` for one chain (role ``tune``):
    ``state`` = (mu, h_bar, log_eps_bar, m); the parameters ``target_accept``, ``gamma``,
    ``t0`` and ``kappa``; it reads the statistics ``acceptance_rate`` and ``diverging``,
    whichever part records them."""
    alpha = stats[column.acceptance_rate]
    if stats[column.diverging] > 0.0:
        alpha = 0.0
    h_bar, log_eps, log_eps_bar, m = dual_averaging_step(
        state[0], state[1], state[2], state[3], alpha, own.target_accept, own.gamma, own.t0,
        own.kappa,
    )  # fmt: skip
    state[1] = h_bar
    state[2] = log_eps_bar
    state[3] = m
    eps[0] = np.exp(log_eps)


class Tuner:
    """Abstract warm-up tuner.

    Contract
    --------
    * ``start(sampler, chain, n_warmup, rngs)`` runs once before warm-up (it may change
      ``chain``, for instance to set an initial step size).
    * ``update(sampler, chain, info, iteration)`` runs after each warm-up iteration with the
      transition's ``info`` (per-chain arrays, see
      :class:`~hamiltonia.trajectories.metropolis.TrajectoryPolicy`). ``iteration`` counts from 0.
    * ``finalize(sampler, chain)`` runs once at the end of warm-up and sets the values used
      for sampling.
    * ``compiled(dim)`` returns the compiled counterpart: kernels for the ``tune`` role
      (a step-size tuner that updates inside the chain kernel) or none (a tuner that acts
      only at the chunk boundaries it declares), or ``None`` when the tuner cannot run
      with the compiled path.
    * ``independent_chains`` says whether each chain's adaptation reads that chain (its
      antithetic pair) alone, its state one row per chain; such a tuner's
      ``take_chains(rows, rngs)`` keeps the rows of some chains, so that an executor's task
      can warm those chains up on its own (:mod:`hamiltonia.runner.tasks`).
    * ``adapts`` names the parameters of the sampler's parts the tuner sets (the path of
      attributes from the sampler, ``"trajectory.min_steps"``): every checkpoint saves their
      values (:meth:`adapted_state`) and :func:`hamiltonia.resume`, which rebuilds the
      sampler from its recipe, puts them back (:meth:`restore_adapted_state`), so that a
      run stopped after warm-up, or in it, continues with the values adapted rather than the
      recipe's. A tuner that adapts something other than plain values overrides the three
      methods instead. The chains' step sizes and the Hamiltonian's metric are saved with
      the chains whichever tuner adapts them.
    * A run resumed after warm-up does not ``start`` its tuners but still calls
      ``finalize``: a tuner that never started must then leave the sampler as it is (its
      values are back already), as :class:`DualAveraging` does.
    """

    numeric_methods = ("update",)

    #: The parameters of the sampler's parts this tuner adapts, each as the path of
    #: attributes from the sampler it is given (``"trajectory.min_steps"``,
    #: ``"refresh.rho"``), or a tuple of none. Each value is ``None``, a bool, an int, a
    #: float, a string, or an array (a list, a tuple) of numbers; the default
    #: :meth:`adapted_state` saves them, :meth:`check_adapted_state` checks them against the
    #: rebuilt sampler's own, and :meth:`restore_adapted_state` sets them.
    adapts: tuple[str, ...] = ()

    #: Whether each chain adapts on its own draws alone (see the contract); a tuner that
    #: does not say so is taken to pool its chains.
    independent_chains = False

    #: Whether the tuner was asked to adapt each chain apart (``per_chain``), which lets a
    #: run warm its chains up in an executor's tasks.
    per_chain = False

    def take_chains(self, rows, rngs) -> None:
        """Keep the warm-up state of the chains ``rows`` only (in the run's numbering), whose
        generators are now ``rngs``: what a task that warms up those chains alone needs."""
        raise NotImplementedError(f"{type(self).__name__} cannot warm chains up apart")

    def compiled(self, dim: int):
        return None

    def start(self, sampler, chain: ChainState, n_warmup: int, rngs) -> None:
        pass

    @abstractmethod
    def update(self, sampler, chain: ChainState, info: dict, iteration: int) -> None:
        raise NotImplementedError

    def finalize(self, sampler, chain: ChainState) -> None:
        pass

    # -- the compiled path runs warm-up in chunks; a tuner says where it needs control back
    def boundaries(self, n_warmup: int) -> list[int]:
        """Warm-up iteration counts after which :meth:`update_chunk` must run (the compiled
        path ends its chunks there). Default: none."""
        return []

    def update_chunk(self, sampler, chain, positions: np.ndarray, first_iteration: int) -> None:
        """Called by the compiled path after each warm-up chunk with the positions
        ``(chains, n, dim)`` of its iterations ``first_iteration ..``. Tuners whose update
        runs inside the compiled kernel (dual averaging) do nothing here."""

    # -- warm-up checkpoints: hamiltonia.resume continues a run stopped in warm-up exactly
    def warmup_state(self) -> dict | None:
        """The tuner's state between two warm-up iterations, after :meth:`start`: plain
        values and NumPy arrays that later iterations do not change (copies, or arrays the
        tuner never writes again), cheap enough to take after every iteration; the run
        writes them as JSON only at a checkpoint. ``None`` (the default): the tuner cannot
        be checkpointed, and a run that uses it is not checkpointed during warm-up."""
        return None

    def check_warmup_state(self, state: dict, *, chains: int, dim: int, n_warmup: int,
                           done: int) -> dict:  # fmt: skip
        """``state`` (a :meth:`warmup_state` read back from a file, a mapping) checked for a run of
        ``chains`` chains in ``dim`` dimensions stopped after ``done`` of ``n_warmup``
        warm-up iterations: the checked copy (arrays of the right shapes, finite), or
        ``ValueError`` whose message starts with the offending field."""
        raise ValueError("this tuner's warm-up state cannot be restored")

    def restore_warmup_state(self, sampler, state: dict, n_warmup: int, rngs) -> None:
        """Put back a state checked by :meth:`check_warmup_state` in place of :meth:`start`
        (which would search the step size again, drawing from the generators)."""
        raise NotImplementedError

    # -- the adapted state: what warm-up leaves in the sampler's parts, which a run rebuilt
    #    from its recipe (hamiltonia.resume) does not have
    def adapted_state(self, sampler) -> dict:
        """The values this tuner adapted into ``sampler``'s parts, as JSON-ready values by
        name, for the resume state of every checkpoint (in warm-up and after it).

        By default the parameters of :attr:`adapts`, each read from ``sampler`` by its
        path: ``{"trajectory.min_steps": 7, ...}``; ``{}`` for a tuner that adapts none
        (the built-in ones: the step sizes and the metric are saved with the chains).
        ``TypeError`` names a value a resume state cannot hold, ``AttributeError`` a path
        the sampler does not have."""
        return {
            path: _plain_parameter(self, path, read_parameter(sampler, path))
            for path in declared_parameters(self)
        }

    def check_adapted_state(self, sampler, state: dict) -> dict:
        """``state`` (an :meth:`adapted_state` read back from a file, a mapping) checked
        against ``sampler``, rebuilt from its recipe: the checked copy, or ``ValueError``
        whose message starts with the offending field.

        By default each parameter of :attr:`adapts` must be there (and nothing else), of the
        kind of the sampler's own value: a bool for a bool, an integer for an int, a finite
        number for a float, a string for a string, finite numbers of the same shape for an
        array (integers for an integer array); any plain value where the sampler's is
        ``None``. The checked values are of the sampler's own types."""
        if not isinstance(state, dict):
            raise ValueError("the adapted state is not a mapping")
        declared = declared_parameters(self)
        unknown = [name for name in state if name not in declared]
        if unknown:
            adapted = ", ".join(declared) or "none"
            raise ValueError(
                f"{unknown[0]} is not a parameter {type(self).__name__} adapts (it adapts: "
                f"{adapted})"
            )
        missing = [path for path in declared if path not in state]
        if missing:
            raise ValueError(
                f"{missing[0]} is missing (a file of another version of "
                f"{type(self).__name__}, which adapts {', '.join(declared)}?)"
            )
        return {
            path: checked_parameter(path, state[path], read_parameter(sampler, path))
            for path in declared
        }

    def restore_adapted_state(self, sampler, state: dict) -> None:
        """Put back into ``sampler``'s parts a state checked by :meth:`check_adapted_state`
        (or taken by :meth:`adapted_state` in this process): by default, set each parameter
        of :attr:`adapts` by its path. Runs before the chains are restored and before any
        iteration, on a sampler rebuilt from its recipe."""
        for path in declared_parameters(self):
            current = read_parameter(sampler, path)
            write_parameter(sampler, path, checked_parameter(path, state[path], current))

    def __repr__(self):
        return f"{type(self).__name__}()"


# -- the parameters a tuner adapts, by path: read, written, and checked as data from a file


def declared_parameters(tuner) -> tuple[str, ...]:
    """``tuner.adapts`` checked: a tuple (or list) of paths of attribute names, such as
    ``"trajectory.min_steps"``; ``TypeError`` naming the tuner otherwise."""
    adapts = getattr(tuner, "adapts", ())
    name = type(tuner).__name__
    # A bare string would be read as a sequence of one-letter paths.
    if isinstance(adapts, str) or not isinstance(adapts, tuple | list):
        raise TypeError(
            f"{name}.adapts must be a tuple of parameter paths such as "
            f"('trajectory.min_steps',), got {adapts!r}"
        )
    for path in adapts:
        if not isinstance(path, str) or not all(p.isidentifier() for p in path.split(".")):
            raise TypeError(
                f"{name}.adapts holds {path!r}, which is not a path of attribute names such "
                "as 'trajectory.min_steps'"
            )
    if len(set(adapts)) != len(adapts):
        raise TypeError(f"{name}.adapts names a parameter twice: {adapts!r}")
    return tuple(adapts)


def read_parameter(sampler, path: str):
    """The value at ``path`` (``"trajectory.min_steps"``) from ``sampler``;
    ``AttributeError`` naming the first attribute missing."""
    names = path.split(".")
    value = sampler
    for k, name in enumerate(names):
        try:
            value = getattr(value, name)
        except AttributeError:
            missing = ".".join(names[: k + 1])
            raise AttributeError(
                f"{path}: sampler {type(sampler).__name__} has no {missing!r}"
            ) from None
    return value


def write_parameter(sampler, path: str, value) -> None:
    """Set the attribute at ``path`` of ``sampler`` to ``value`` (through the part's own
    property where it has one)."""
    *parents, name = path.split(".")
    owner = read_parameter(sampler, ".".join(parents)) if parents else sampler
    setattr(owner, name, value)


def _plain_parameter(tuner, path: str, value):
    """``value`` as a JSON-ready value (an array as nested lists), or ``TypeError`` naming
    the tuner and the path of a value a resume state cannot hold."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_ | np.integer | np.floating):
        return value.item()
    if isinstance(value, int | float):
        return value
    if isinstance(value, np.ndarray | list | tuple):
        array = np.asarray(value) if not isinstance(value, np.ndarray) else value
        if array.dtype.kind in "biuf":
            return array.tolist()
    raise TypeError(
        f"{type(tuner).__name__} adapts {path}, a {type(value).__name__}, which a resume state "
        "cannot hold (None, a bool, a number, a string or an array of numbers): override "
        "adapted_state, check_adapted_state and restore_adapted_state to save it"
    )


def checked_parameter(path: str, value, current):
    """``value`` (read back from a file) checked against ``current``, the rebuilt sampler's
    own value at ``path``, and returned in its type; ``ValueError`` starting with ``path``
    otherwise. See :meth:`Tuner.check_adapted_state`."""

    def refuse(expected: str):
        return ValueError(f"{path} must be {expected}, got {value!r:.80}")

    integer = isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
    real = integer or isinstance(value, float | np.floating)

    def finite(expected: str) -> float:
        try:
            number = float(value)
        except OverflowError:
            raise refuse(expected) from None
        if not np.isfinite(number):
            raise refuse(expected)
        return number

    if current is None:
        # Nothing to compare with: any plain value, its numbers finite.
        if value is None or isinstance(value, bool | str) or integer:
            return value
        if real:
            return finite("a finite number")
        if isinstance(value, list | np.ndarray):
            return finite_array(value, path, np.shape(value))
        raise refuse("None, a bool, a number, a string or a list of numbers")
    if isinstance(current, bool | np.bool_):
        if not isinstance(value, bool | np.bool_):
            raise refuse("True or False")
        return type(current)(value)
    if isinstance(current, int | np.integer):
        if not integer:
            raise refuse("an integer")
        try:
            return type(current)(value)
        except OverflowError:
            raise refuse(f"an integer that fits a {type(current).__name__}") from None
    if isinstance(current, float | np.floating):
        if not real:
            raise refuse("a number")
        return type(current)(finite("a finite number"))
    if isinstance(current, str):
        if not isinstance(value, str):
            raise refuse("a string")
        return value
    if isinstance(current, np.ndarray | list | tuple):
        return _checked_array(path, value, current)
    raise ValueError(
        f"{path} is a {type(current).__name__} in the sampler, which the default "
        "check_adapted_state cannot check: the tuner must override it"
    )


def _checked_array(path: str, value, current):
    """``value`` as an array of ``current``'s shape and kind (finite numbers; integers for
    an integer array, bools for a bool one), returned as ``current``'s type."""
    own = np.asarray(current)
    kind = own.dtype.kind
    if kind not in "biuf":
        raise ValueError(
            f"{path} is an array of {own.dtype} in the sampler, which the default "
            "check_adapted_state cannot check: the tuner must override it"
        )
    expected = {"b": "bools", "i": "integers", "u": "integers"}.get(kind, "numbers")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError, OverflowError):  # ragged lists
        raise ValueError(f"{path} is not an array of {expected}") from None
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{path} is not an array of {expected}")
    if array.shape != own.shape:
        raise ValueError(f"{path} has shape {array.shape}, expected {own.shape}")
    # An empty list reads as floats whatever it was.
    if array.size and (
        (kind == "b") != (array.dtype.kind == "b")
        or (kind in "iu" and array.dtype.kind not in "iu")
    ):
        raise ValueError(f"{path} is not an array of {expected}")
    if kind == "f" and not np.all(np.isfinite(array)):
        raise ValueError(f"{path} holds non-finite values")
    checked = array.astype(own.dtype)
    if kind in "iu" and not np.array_equal(checked, array):
        raise ValueError(f"{path} does not fit an array of {own.dtype}")
    if isinstance(current, np.ndarray):
        return checked  # astype made a copy
    return type(current)(checked.tolist())


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


def metric_windows(
    n_warmup: int, initial_buffer: int = 75, window: int = 25, terminal_buffer: int = 50
) -> list[tuple[int, int]]:
    """The slow windows ``[start, end)`` (iteration numbers from 0) of Stan's windowed
    adaptation.

    After an initial buffer (step size only), windows of doubling length (``window``,
    ``2 window``, ...) estimate the metric; the last one is stretched to end
    ``terminal_buffer`` iterations before the end of warm-up. With fewer than
    ``initial_buffer + window + terminal_buffer`` warm-up iterations, Stan's fallback is used:
    15 % initial buffer, one window of 75 %, 10 % terminal buffer. Under 20 iterations there
    is no window.
    """
    if n_warmup < 20:
        return []
    if n_warmup < initial_buffer + window + terminal_buffer:
        initial_buffer = int(0.15 * n_warmup)
        terminal_buffer = int(0.1 * n_warmup)
        window = n_warmup - initial_buffer - terminal_buffer
    # As Stan: the first window always has the base size; a later window is stretched to the
    # terminal buffer when the window after it would not fit.
    last = n_warmup - terminal_buffer
    windows, begin, size = [], initial_buffer, window
    end = begin + size
    while True:
        windows.append((begin, end))
        if end >= last:
            break
        begin, size = end, 2 * size
        end = begin + size
        if end + 2 * size > last:
            end = last
    return windows


#: The ways a metric is adapted over the chains (``WindowedMetric``'s ``per_chain`` and the
#: recipes' ``adapt_metric`` option): one metric from all chains' draws, or each chain's
#: (each antithetic pair's) own from its own draws.
METRIC_POOLING = ("pooled", "per-chain")


def estimate_metric(draws: np.ndarray, kind: str):
    """Stan's regularised estimate of the inverse mass matrix from the ``n`` draws of a slow
    window, ``draws`` of shape ``(n, dim)``; ``None`` when ``n < 2`` (nothing to estimate).

    With :math:`\\hat\\Sigma` the draws' sample covariance (divisor :math:`n - 1`), or its
    diagonal for ``kind="diagonal"``,

    .. math::

        M^{-1} = \\frac{n}{n + 5}\\,\\hat\\Sigma + 10^{-3}\\,\\frac{5}{n + 5}\\,I,

    which shrinks the estimate towards a small multiple of the identity, the more so the
    fewer the draws. The maths of both ways of adapting, written once: the pooled
    adaptation gives it every chain's draws of the window, the per-chain one a chain's own
    (an antithetic pair's two chains'), on both paths.

    Parameters
    ----------
    draws : ndarray, shape ``(n, dim)``
        The positions of the window's iterations, in the sampler's coordinates.
    kind : {"diagonal", "dense"}
        Which metric to estimate.

    Returns
    -------
    DiagonalMetric, DenseMetric or None
    """
    from hamiltonia.hamiltonians.metrics import DenseMetric, DiagonalMetric

    n, dim = draws.shape
    if n < 2:  # Stan's schedule can leave a one-iteration window: nothing to estimate
        return None
    shrink, jitter = n / (n + 5.0), 1e-3 * 5.0 / (n + 5.0)
    if kind == "diagonal":
        return DiagonalMetric(shrink * draws.var(axis=0, ddof=1) + jitter)
    cov = np.atleast_2d(np.cov(draws, rowvar=False))
    return DenseMetric(shrink * cov + jitter * np.eye(dim))


class WindowedMetric(Tuner):
    """Windowed adaptation of the metric (inverse mass matrix), on Stan's schedule.

    In each slow window (see :func:`metric_windows`) the warm-up positions are gathered and
    their variance (``"diagonal"``) or covariance (``"dense"``) estimated, then regularised
    towards a small multiple of the identity as in Stan (:func:`estimate_metric`):

    .. math::

        M^{-1} = \\frac{n}{n + 5}\\,\\hat\\Sigma + 10^{-3}\\,\\frac{5}{n + 5}\\,I,

    with :math:`n` the number of draws the estimate reads. After each update the step size is
    searched again and dual averaging restarts around it.

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
        if self.per_chain:
            if not self._install_per_chain(sampler, np.stack(buffer)):
                return
        else:
            metric = estimate_metric(np.concatenate(buffer, axis=0), self.kind)
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

    def _install_per_chain(self, sampler, positions: np.ndarray) -> bool:
        """Each group's metric (a chain, or an antithetic pair) from its own draws of the
        window, ``positions`` of shape ``(iterations, chains, dim)``, installed in the
        sampler; ``False`` (nothing installed) where a group holds under two draws."""
        _, chains, dim = positions.shape
        groups = sampler.chain_groups(chains) or [list(range(chains))]
        metrics: list = [None] * chains
        for group in groups:
            # Rows iteration by iteration, in the order the pooled estimate reads them.
            metric = estimate_metric(positions[:, group].reshape(-1, dim), self.kind)
            if metric is None:
                return False
            for c in group:
                metrics[c] = metric
        sampler.set_chain_metrics(metrics)
        return True

    def __repr__(self):
        per_chain = ", per_chain=True" if self.per_chain else ""
        return f"WindowedMetric({self.kind!r}{per_chain})"
