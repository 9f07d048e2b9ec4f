"""Prior and posterior predictive draws of a user's model.

A :class:`~hamiltonia.Model` that declares how to simulate its observations,
``simulate(params, rng) -> {name: array}`` for one set of constrained parameters, gives

* the **posterior predictive**: for each posterior draw :math:`\\theta^{(c, s)}` of chain
  :math:`c`, one simulated data set :math:`\\tilde y^{(c, s)} \\sim p(y \\mid \\theta^{(c, s)})`,
  so that the draws are of

  .. math::

      p(\\tilde y \\mid y) = \\int p(\\tilde y \\mid \\theta)\\, p(\\theta \\mid y)\\, d\\theta;

* the **prior predictive**, with ``prior(rng) -> {block: value}`` drawing the parameters
  from the prior: :math:`\\theta^{(s)} \\sim p(\\theta)`, then :math:`\\tilde y^{(s)} \\sim p(y
  \\mid \\theta^{(s)})`, draws of :math:`p(\\tilde y) = \\int p(\\tilde y \\mid \\theta)\\,
  p(\\theta)\\, d\\theta`, to check before sampling that the prior gives plausible data.

Each chain has its own random-number generator, spawned from one seed
(:class:`numpy.random.SeedSequence`), as NumPyro's ``Predictive`` and PyMC's
``sample_posterior_predictive`` do, so a chain's predictive draws do not depend on the number
of chains; a run's default seed is derived from the run's own, so that its predictive draws
are reproducible without one. The groups are ArviZ's ``prior``, ``prior_predictive`` and
``posterior_predictive`` (Gelman et al., *Bayesian Data Analysis*, 3rd ed., ch. 6).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

__all__ = [
    "PREDICTIVE_SPAWN_KEY",
    "chain_generators",
    "name_observations",
    "prior_predictive_groups",
    "sample_prior_predictive",
    "simulate_per_draw",
]

#: The spawn key of a run's predictive draws under its seed: a stream of its own, distinct
#: from the chains' (which are the seed's first children).
PREDICTIVE_SPAWN_KEY = 0x7072656469637469  # "predicti"


def chain_generators(seed, chains: int, *, run_entropy=None) -> list[np.random.Generator]:
    """One generator per chain, spawned from ``seed`` (an int, a ``SeedSequence`` or
    ``None``). With ``seed=None`` and a run's ``run_entropy`` (its ``seed_entropy``), the
    generators derive from the run's seed, on a stream of their own; with neither, fresh
    entropy."""
    if seed is None and run_entropy is not None:
        seq = np.random.SeedSequence(int(run_entropy), spawn_key=(PREDICTIVE_SPAWN_KEY,))
    elif isinstance(seed, np.random.SeedSequence):
        seq = seed
    else:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
            raise ValueError(f"seed must be an int, a SeedSequence or None, got {seed!r}")
        seq = np.random.SeedSequence(seed)
    return [np.random.default_rng(s) for s in seq.spawn(chains)]


def name_observations(out, observed: Sequence[str], who: str, *, known: bool = True) -> dict:
    """``out``, what ``who`` (``"simulate"``, ``"log_likelihood"``) returned for one draw or a
    batch, by observed variable: a mapping as it is, one array under the name of the only
    observed variable (``"y"`` when none is named), so that it takes that variable's dims
    and pairs with its ``observed_data`` in ArviZ.

    Parameters
    ----------
    out : mapping or array
        The function's result.
    observed : sequence of str
        The observed variables' names (of ``observed_data``, else of ``observed_dims``).
    who : str
        The function's name, for the messages.
    known : bool
        Whether ``observed`` is every observed variable (``observed_data`` was given): a
        name outside it is then refused.

    Raises
    ------
    ValueError
        One array where several variables are observed (which one it is cannot be told),
        or a name that ``observed_data`` does not hold.
    """
    observed = list(observed)
    if not isinstance(out, Mapping):
        if len(observed) > 1:
            raise ValueError(
                f"{who} returned one array, but the model observes {observed}: return a "
                f"dict of arrays by observed variable, e.g. {{{observed[0]!r}: ...}}"
            )
        return {observed[0] if observed else "y": out}
    unknown = sorted(str(k) for k in out if str(k) not in observed)
    if known and unknown:
        raise ValueError(
            f"{who} returned {unknown}, which observed_data does not hold (it holds "
            f"{observed}); name each array after the observed variable it is of"
        )
    return dict(out)


def _as_arrays(out, default, who: str) -> dict:
    if callable(default):
        out = default(out)
    elif not isinstance(out, Mapping):
        out = {default: out}
    arrays = {}
    for name, value in out.items():
        try:
            arrays[str(name)] = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(
                f"{who} returned {value!r} for {name!r}; it must return numbers or arrays of "
                "numbers by name"
            ) from None
    return arrays


def simulate_per_draw(fn: Callable, values: Mapping, rngs, default, who: str) -> dict:
    """``fn(params, rng)`` at each draw of the blocks ``values`` (leading axes ``(chains,
    draws)``), chain ``c`` drawing from ``rngs[c]``, stacked by name to ``(chains, draws,
    ...)``. The shapes a draw returns must agree across draws. ``default`` names one array
    ``fn`` returns: a name, or a function from the result to arrays by name (as
    :func:`name_observations`)."""
    values = {k: np.asarray(v) for k, v in values.items()}
    chains, draws = next(iter(values.values())).shape[:2]
    rows = []
    for c in range(chains):
        for s in range(draws):
            rows.append(_as_arrays(fn({k: v[c, s] for k, v in values.items()}, rngs[c]),
                                   default, who))  # fmt: skip
    first = rows[0]
    for row in rows[1:]:
        if row.keys() != first.keys() or any(row[k].shape != first[k].shape for k in first):
            raise ValueError(
                f"{who} returned {_shapes(row)} at one draw and {_shapes(first)} at another; "
                "it must return the same names and shapes at every draw"
            )
    return {
        k: np.stack([row[k] for row in rows]).reshape(chains, draws, *first[k].shape) for k in first
    }


def _shapes(row: dict) -> str:
    return "{" + ", ".join(f"{k}: {v.shape}" for k, v in row.items()) + "}"


def prior_predictive_groups(target, draws: int, chains: int, seed=None, run_entropy=None):
    """The ``prior`` group (the blocks and generated quantities by name, ``(chains, draws,
    ...)``) of ``draws`` prior draws per chain of ``target`` (a :class:`~hamiltonia.Model`
    with ``prior=``), and, where it simulates its observations, the ``prior_predictive``
    group: one simulated data set per prior draw. Chain ``c`` uses its own generator
    (:func:`chain_generators`) for both."""
    from hamiltonia._validation import check_int
    from hamiltonia.modelling.parameters import split_blocks

    draws = check_int(draws, "draws", minimum=1)
    chains = check_int(chains, "chains", minimum=1)
    if not hasattr(target, "prior_draws"):
        raise TypeError(
            f"{type(target).__name__} has no prior to draw from: prior predictive checks need "
            "a hamiltonia.Model with prior=fn"
        )
    rngs = chain_generators(seed, chains, run_entropy=run_entropy)
    reported = target.prior_draws(draws, rngs)
    groups = {"prior": split_blocks(reported, target.blocks)}
    simulated = target.simulate_observations(reported, rngs)
    if simulated is not None:
        groups["prior_predictive"] = simulated
    return groups


def sample_prior_predictive(model, draws: int = 500, *, chains: int = 1, seed=None):
    """Prior predictive checks before sampling: ``draws`` parameter sets per chain from the
    model's prior (``Model(..., prior=fn)``) and one simulated data set for each
    (``simulate=fn``), as an ArviZ :class:`xarray.DataTree` with the groups ``prior``,
    ``prior_predictive`` and ``observed_data`` (PyMC's ``sample_prior_predictive``,
    NumPyro's ``Predictive(model, num_samples=...)``). A run's
    :meth:`Result.sample_prior_predictive <hamiltonia.Result.sample_prior_predictive>`
    adds the same groups to the run.

    Parameters
    ----------
    model : Model
        A model with ``prior`` (and ``simulate`` for the ``prior_predictive`` group).
    draws : int
        Draws per chain.
    chains : int
        Chains, each with its own generator spawned from ``seed``.
    seed : int, SeedSequence or None
        The seed (``None``: fresh entropy).
    """
    from arviz_base import from_dict

    groups = prior_predictive_groups(model, draws, chains, seed)
    observed = model.observed_data
    if observed:
        groups["observed_data"] = observed
    dims = {name: list(d) for name, _shape, d in model.blocks if d}
    dims.update(model.observed_dims)
    return from_dict(groups, dims=dims or None, coords=model.coords or None)
