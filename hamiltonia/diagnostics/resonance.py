"""Resonance of a fixed trajectory length: the combinations of the parameters that a chain
barely moves along, which the ``resonance`` check of :mod:`hamiltonia.diagnostics.checks`
reports.

On a Gaussian the leapfrog flow of :math:`L` steps of size :math:`\\varepsilon` turns each
direction of the posterior (in the metric's units) by an angle :math:`\\Phi`, larger for a
narrower direction; with a fresh momentum each iteration the position along that direction
is then an autoregression whose lag-1 autocorrelation is :math:`\\cos\\Phi` for an accepted
proposal and 1 for a rejected one (Neal 2011, §5.4.2.2). When :math:`\\Phi` is near a whole
number of turns, each trajectory ends near where it started (a lag-1 autocorrelation near 1);
near an odd number of half turns, near its mirror image through the mean: the position
alternates in sign (a negative autocorrelation, diluted by the rejections) and its square
barely moves (an autocorrelation near 1). That is a resonance. The chain explores that
direction in a handful of effective draws, while the coordinates, each a mix of many
directions, show it only diluted, so that their :math:`\\hat R` and ESS may pass while their
Monte Carlo standard errors are too small. The step size is adapted per chain, so the chains
resonate to different degrees, and disagree.

:func:`slow_combinations` finds, in each chain, the linear combinations :math:`v^\\top x` of
extreme lag-1 autocorrelation, its time-lagged independent components: the generalised
eigenvectors of the chain's symmetrised lag-1 autocovariance :math:`C_1` and covariance
:math:`W`, :math:`C_1 v = \\rho W v`, the eigenvalue :math:`\\rho` the combination's lag-1
autocorrelation. For a Gaussian with a fixed metric they are the directions the flow turns
independently (both matrices are diagonal in them), whatever the metric. The coordinates
themselves are judged too, and alone with more coordinates than :data:`JOINT_MAX_DIM` or
fewer than :data:`DRAWS_PER_DIM` draws per coordinate in a chain.

:func:`find_resonance` names a combination when, in some chain, its lag-1 autocorrelation
:math:`\\rho` is at least :data:`RESONANCE_RHO` (the trajectory ends within
:math:`\\arccos 0.9 \\approx 0.45` rad, 7 % of a turn, of its start), or that of its square
is while :math:`\\rho < 0` (it ends near the mirror image), and the autoregression's
effective sample size :math:`N (1 - \\rho) / (1 + \\rho)` of :math:`N` draws (of the square's
:math:`\\rho` for a square) is below the per-chain minimum of the ESS checks. Heavy tails make
a square's autocorrelation high too, but not with a combination that alternates in sign; a
trajectory far too short for a wide direction makes its autocorrelation high as well, and
is named the same way. Only a fixed-length run is judged (:func:`fixed_length`): a random
number of steps or a jittered step size (and NUTS) does not resonate for long, and a single
step (MALA) cannot reach a half turn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "DRAWS_PER_DIM",
    "JOINT_MAX_DIM",
    "MIN_DRAWS",
    "RESONANCE_RHO",
    "Resonance",
    "find_resonance",
    "fixed_length",
    "slow_combinations",
]

#: :math:`|\rho|` of a lag-1 autocorrelation from which a combination is resonating.
RESONANCE_RHO = 0.9
#: Most coordinates whose combinations are searched jointly; beyond, one by one.
JOINT_MAX_DIM = 100
#: Fewest draws of a chain per coordinate for the joint search: with fewer, the search fits
#: the noise (its largest autocorrelation is biased up by about :math:`2\sqrt{d / N}`).
DRAWS_PER_DIM = 20
#: Fewest draws per chain judged (the lag-1 autocorrelation of a chain of :math:`N` draws
#: errs by about :math:`1/\sqrt N`).
MIN_DRAWS = 100
# A chain's range of a coordinate, relative to the range of all chains, below which the
# chain does not move along it (its steps are rounding).
_ROUNDING = 1e-9


@dataclass(frozen=True)
class Resonance:
    """What :func:`find_resonance` found.

    Attributes
    ----------
    rho : float
        The lag-1 autocorrelation of the worst resonating combination (of least ESS), or of
        its square.
    square : bool
        Whether it is that of a square (the combination itself flips sign, a trajectory
        near an odd number of half periods).
    ess : float
        The effective draws per chain it implies, :math:`N (1 - \\rho) / (1 + \\rho)`.
    chains : tuple of int
        The chains in which some combination resonates.
    parameters : tuple of int
        The coordinates most correlated with the resonating combinations, the worst first.
    n_steps : int
        The run's fixed number of steps per trajectory.
    """

    rho: float
    square: bool
    ess: float
    chains: tuple
    parameters: tuple
    n_steps: int


def fixed_length(result) -> int | None:
    """The number of steps of every trajectory of ``result`` when the run is fixed-length
    (the same :math:`L \\ge 2` in every iteration of every chain, a step size that stays
    fixed within each chain and is not jittered, no no-U-turn tree), else ``None``.

    The step size's jitter is read from ``result.attrs["step_size_jitter"]``, or, where the
    run does not record it, from the options the sampler was built with by name."""
    stats, attrs = result.stats, result.attrs
    if "n_steps" not in stats or attrs.get("max_tree_depth") is not None:
        return None
    jitter = attrs.get("step_size_jitter")
    if jitter is None:
        jitter = (attrs.get("options") or {}).get("step_size_jitter", 0.0)
    try:
        if float(jitter) > 0.0:
            return None
    except (TypeError, ValueError):
        return None
    steps = np.asarray(stats["n_steps"])
    if steps.size == 0 or steps.min() != steps.max() or steps.flat[0] < 2:
        return None
    if "step_size" in stats:
        eps = np.asarray(stats["step_size"], dtype=float)
        if eps.ndim == 2 and not np.all(eps == eps[:, :1]):
            return None
    return int(steps.flat[0])


def _lag_one(y: np.ndarray) -> np.ndarray:
    """The lag-1 autocorrelation of each column of ``y`` ``(..., draws, k)`` (of each chain
    at once, for chains stacked first), centred on its mean; 1 for a constant column (one
    whose sum of squares is :math:`10^{-24}` of its chain's largest), which never moves."""
    y = y - y.mean(axis=-2, keepdims=True)
    num = np.einsum("...ij,...ij->...j", y[..., 1:, :], y[..., :-1, :])
    den = np.einsum("...ij,...ij->...j", y, y)
    constant = den <= 1e-24 * np.max(den, axis=-1, keepdims=True, initial=0.0)
    return np.where(constant, 1.0, num / np.where(constant, 1.0, den))


def _slowest(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One chain's combinations of extreme lag-1 autocorrelation, ``(d, d)`` columns, and
    the correlation of each coordinate with each, of its draws ``y`` ``(draws, d)``."""
    y = y - y.mean(axis=0)
    within = y.T @ y / len(y)
    lagged = y[1:].T @ y[:-1] / (len(y) - 1)
    scale, basis = np.linalg.eigh(within)
    keep = scale > 1e-10 * scale.max()
    whiten = basis[:, keep] / np.sqrt(scale[keep])
    _, turn = np.linalg.eigh(whiten.T @ (0.5 * (lagged + lagged.T)) @ whiten)
    directions = whiten @ turn  # v' W v = 1
    with np.errstate(divide="ignore", invalid="ignore"):
        pattern = (within @ directions) / np.sqrt(np.diag(within))[:, None]
    return directions, np.nan_to_num(pattern)


#: Numbers of draws (chains x draws x coordinates) of a block of chains that
#: :func:`slow_combinations` normalises and judges at a time: a few MB, so that its
#: temporary arrays are reused rather than new memory (a page fault a page on first touch:
#: ten arrays of a thousand chains' draws cost a second).
_BLOCK_NUMBERS = 2**18


def _blocks(chains: int, size: int) -> list[slice]:
    """Blocks of whole chains of ``size`` numbers each, of about :data:`_BLOCK_NUMBERS`."""
    per = max(1, _BLOCK_NUMBERS // max(size, 1))
    return [slice(c, min(c + per, chains)) for c in range(0, chains, per)]


def slow_combinations(draws) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each chain's combinations of the parameters with extreme lag-1 autocorrelation
    (module docstring), then the coordinates themselves, of draws ``(chains, draws, d)``
    that are finite and vary within the chains (pooled).

    The draws are centred on the pooled mean and scaled by the pooled within-chain standard
    deviation of each coordinate; the chains are judged by blocks (:data:`_BLOCK_NUMBERS`),
    the coordinates of a block's chains all at once.

    Returns
    -------
    rho, rho_square : ndarray, shape ``(chains, k)``
        Each chain's lag-1 autocorrelation along each of its combinations, and that of the
        square of its distance from the pooled mean (1 where the chain does not move).
    pattern : ndarray, shape ``(chains, d, k)``
        The correlation of each coordinate with each combination, within the chain; the
        last ``d`` combinations are the coordinates.
    """
    x = np.asarray(draws, dtype=float)
    chains, n, d = x.shape
    blocks = _blocks(chains, n * d)
    squares = np.zeros(d)
    for block in blocks:
        centred = x[block] - x[block].mean(axis=1, keepdims=True)
        squares += np.einsum("cij,cij->j", centred, centred)
    mean = x.reshape(-1, d).mean(axis=0)
    scale = np.sqrt(squares / (chains * n))
    joint = d <= JOINT_MAX_DIM and n >= DRAWS_PER_DIM * d
    k = d if joint else 0  # the combinations' columns, padded where a chain has fewer
    rho, rho_square = np.zeros((chains, k + d)), np.zeros((chains, k + d))
    pattern = np.zeros((chains, d, k + d))
    pattern[:, :, k:] = np.eye(d)
    for block in blocks:
        z = (x[block] - mean) / scale
        if not joint:
            # The coordinates alone: the block's chains at once.
            rho[block], rho_square[block] = _lag_one(z), _lag_one(z * z)
            continue
        for i, c in enumerate(range(block.start, block.stop)):
            combinations, pattern_c = _slowest(z[i])
            m = combinations.shape[1]
            pattern[c, :, :m] = pattern_c
            y = np.hstack([z[i] @ combinations, z[i]])  # the combinations, the coordinates
            columns = np.r_[np.arange(m), np.arange(k, k + d)]
            rho[c, columns] = _lag_one(y)
            rho_square[c, columns] = _lag_one(y * y)
    return rho, rho_square, pattern


def find_resonance(result, ess_min: float) -> Resonance | None:
    """The resonance of a fixed-length run (module docstring), or ``None``: combinations
    along which some chain's lag-1 autocorrelation (of the combination or of its square)
    reaches :data:`RESONANCE_RHO` and implies fewer than ``ess_min`` effective draws per
    chain."""
    n_steps = fixed_length(result)
    draws = result.draws
    if n_steps is None or draws.ndim != 3 or draws.shape[1] < MIN_DRAWS:
        return None
    x = np.asarray(draws, dtype=float)
    low, high = x.min(axis=1), x.max(axis=1)
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        return None  # a runaway or a failed draw (min and max keep NaN): other checks
    spread = high.max(axis=0) - low.min(axis=0)
    # Still within a chain: moved by rounding only. A frozen chain is the frozen check's,
    # and a coordinate no chain moves is fixed by the model.
    still = (high - low) <= _ROUNDING * spread
    moving = np.flatnonzero(~still[:, spread > 0].all(axis=1))
    still = still[moving]
    varying = np.flatnonzero((spread > 0) & ~still.all(axis=0))
    # Still in every chain, at different values: each trajectory returns exactly.
    stuck = np.flatnonzero((spread > 0) & still.all(axis=0))
    if moving.size == 0 or varying.size + stuck.size == 0:
        return None
    if moving.size < x.shape[0]:
        x = x[moving]
    k, m = varying.size, stuck.size
    chains = moving.size
    if k:
        rho, rho_square, pattern = slow_combinations(x if k == x.shape[2] else x[..., varying])
        # A chain still along a coordinate that other chains move returns exactly.
        rho[:, -k:] = np.where(still[:, varying], 1.0, rho[:, -k:])
    else:
        rho = rho_square = np.zeros((chains, 0))
        pattern = np.zeros((chains, 0, 0))
    rho, rho_square = (np.hstack([r, np.ones((chains, m))]) for r in (rho, rho_square))
    stuck_pattern = np.broadcast_to(np.eye(m), (chains, m, m))
    pattern = np.concatenate(
        [np.pad(pattern, ((0, 0), (0, m), (0, 0))),
         np.pad(stuck_pattern, ((0, 0), (k, 0), (0, 0)))], axis=2,
    )  # fmt: skip
    varying = np.concatenate([varying, stuck])
    n = x.shape[1]
    rho, rho_square = (np.clip(np.nan_to_num(r, nan=0.0), -1.0, 1.0) for r in (rho, rho_square))
    with np.errstate(divide="ignore"):
        ess, ess_square = (n * (1 - r) / (1 + r) for r in (rho, rho_square))
    # The combination returns (a whole number of periods), or it flips to the far side of
    # the mean (an odd number of half periods) while its square stays.
    returns = (rho >= RESONANCE_RHO) & (ess < ess_min)
    flips = (rho_square >= RESONANCE_RHO) & (ess_square < ess_min) & (rho < 0)
    flagged = returns | flips
    if not flagged.any():
        return None
    r = np.where(flips, rho_square, rho)
    worst = np.where(flagged, np.where(flips, ess_square, ess), np.inf)
    chain, column = np.unravel_index(np.argmin(worst), worst.shape)
    parameters: list[int] = []
    # The combinations worst first; for each, the coordinates at least half as correlated
    # with it as the most correlated one, most correlated first.
    for flat in np.argsort(worst, axis=None, kind="stable"):
        c, j = np.unravel_index(flat, worst.shape)
        if not flagged[c, j]:
            break
        corr = np.abs(pattern[c, :, j])
        for i in np.argsort(-corr, kind="stable"):
            if corr[i] < 0.5 * corr.max():
                break
            if int(varying[i]) not in parameters:
                parameters.append(int(varying[i]))
    return Resonance(
        rho=float(r[chain, column]),
        square=bool(flips[chain, column]),
        ess=float(worst[chain, column]),
        chains=tuple(int(c) for c in moving[flagged.any(axis=1)]),
        parameters=tuple(parameters),
        n_steps=n_steps,
    )
