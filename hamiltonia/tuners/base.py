"""The tuner contract and the adapted state: what every warm-up tuner is, and how the values
it adapts into the sampler's parts are saved, checked and put back.

One job: :class:`Tuner`, the abstract warm-up tuner (its contract: ``start``, ``update``,
``finalize``, the compiled path's chunks, warm-up checkpoints, the adapted state), and the
helpers of its default adapted state, which read, write and check the parameters a tuner
:attr:`~Tuner.adapts` by their path from the sampler (:func:`declared_parameters`,
:func:`read_parameter`, :func:`write_parameter`, :func:`checked_parameter`). The built-in
tuners are in :mod:`hamiltonia.tuners.adaptation`, which re-exports these names.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from hamiltonia._validation import finite_array
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.state import ChainState

__all__ = [
    "Tuner",
    "checked_parameter",
    "declared_parameters",
    "read_parameter",
    "write_parameter",
]


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
    * ``compiled(dim)`` returns the compiled counterpart: a kernel for the ``tune`` role
      (the step-size tuner, one per sampler, updating inside the chain kernel), or for the
      ``adapt`` role (a tuner that sets per-chain values in ``aux`` inside the kernel: its
      own state and parameters other parts declare there; up to
      :data:`~hamiltonia.compiled.roles.MAX_KERNEL_ADAPTERS` such tuners, run in their
      order), or none (a tuner that acts only at the chunk boundaries it declares, or after
      every iteration), or ``None`` when the tuner cannot run with the compiled path.
    * ``per_iteration`` (a class attribute, default ``False``): the compiled path calls
      ``update`` after every warm-up iteration too, as the NumPy path does, with the same
      ``info``: the iteration's statistics of every part (``acceptance_rate``,
      ``diverging``, ``n_steps``, ...) and what the trajectory publishes. Written once, such
      a tuner runs on both paths; on the compiled path each warm-up iteration is then a
      chunk of its own (a return to Python per iteration, which a tuner that reads the
      chains together, as ChEES does, needs anyway).
    * ``reads`` names the vectors of each iteration the tuner needs from the trajectory
      (``"proposal"``, ``"proposal_velocity"``: see
      :attr:`~hamiltonia.trajectories.TrajectoryPolicy.publishes`): during warm-up the
      trajectory publishes them into ``info``, one row per chain, on both paths; a sampler
      whose trajectory does not publish one is refused when it is built, naming both.
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
      values are back already), as
      :class:`~hamiltonia.tuners.adaptation.DualAveraging` does.
    """

    numeric_methods = ("update",)

    #: Whether the compiled path calls :meth:`update` after every warm-up iteration (see the
    #: contract); ``False``: it runs the ``tune`` kernel, or :meth:`update_chunk` at the
    #: boundaries.
    per_iteration: bool = False

    #: The vectors of each iteration this tuner reads from the trajectory's ``info``
    #: (:attr:`~hamiltonia.trajectories.TrajectoryPolicy.publishes`).
    reads: tuple[str, ...] = ()

    #: Whether the tuner sets the chains' step sizes: a sampler has at most one such tuner,
    #: and a recipe's ``tuners=`` option puts it in the place of the recipe's own.
    sets_step_size: bool = False

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
        # A tuner whose update() runs after every iteration runs with the compiled path as
        # it is; any other must say how it does (a kernel, or update_chunk).
        return PartKernels() if self.per_iteration else None

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
