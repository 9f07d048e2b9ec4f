"""The magnetic fields :math:`G` of magnetic HMC and their checks: any field given as a
finite antisymmetric matrix (:func:`check_field`), the research's field
(:func:`research_field`) and a random one (:func:`random_field`), with the check of their
strength :math:`g \\ge 0`. :class:`~hamiltonia.structures.magnetic.MagneticStructure`
integrates the flow of such a field.
"""

from __future__ import annotations

import numbers

import numpy as np

from hamiltonia._validation import as_float, check_int

__all__ = ["check_field", "check_field_strength", "random_field", "research_field"]


def check_field(field, dim: int | None = None, name: str = "field") -> np.ndarray:
    """``field`` as a finite antisymmetric float matrix (of shape ``(dim, dim)`` when
    ``dim`` is given), or ``ValueError`` naming the offending entries."""
    try:
        G = np.array(field, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a square matrix of numbers, got {field!r:.80}") from None
    if G.ndim != 2 or G.shape[0] != G.shape[1] or G.shape[0] < 1:
        raise ValueError(f"{name} must be a square matrix, got shape {G.shape}")
    if dim is not None and G.shape != (dim, dim):
        raise ValueError(f"{name} must have shape ({dim}, {dim}) (the target's dim), got {G.shape}")
    if not np.all(np.isfinite(G)):
        bad = np.argwhere(~np.isfinite(G))[0]
        raise ValueError(f"{name} must be finite, got {name}[{bad[0]}, {bad[1]}] = {G[tuple(bad)]}")
    scale = float(np.max(np.abs(G), initial=0.0))
    asym = np.abs(G + G.T) > 1e-12 * max(scale, 1e-300)
    if asym.any():
        pairs = [(int(i), int(j)) for i, j in np.argwhere(asym) if i <= j]
        i, j = pairs[0]
        more = f" (and {len(pairs) - 1} more)" if len(pairs) > 1 else ""
        a, b = float(G[i, j]), float(G[j, i])
        if i == j:
            detail = f"{name}[{i}, {i}] = {a!r} is not 0"
        else:
            detail = f"{name}[{i}, {j}] = {a!r} but {name}[{j}, {i}] = {b!r}"
        raise ValueError(f"{name} must be antisymmetric ({name}.T == -{name}): {detail}{more}")
    return G


def check_field_strength(g, name: str = "g") -> float:
    """A finite number :math:`g \\ge 0`."""
    value = as_float(g, name, "a number >= 0")
    if not np.isfinite(value) or value < 0:
        raise ValueError(
            f"{name} must be a finite number >= 0 (the sign of the field is sampled as an "
            f"auxiliary variable, so -g is the same sampler), got {g!r}"
        )
    return value


def research_field(dim: int, g: float) -> np.ndarray:
    """The research's field: :math:`G_{1i} = g`, :math:`G_{i1} = -g` for :math:`i \\ge 2`,
    zero elsewhere (Mongwe 2022, thesis, §3.5; g = 0.2 for the logistic regressions, 0.1
    otherwise). Rank two, with eigenvalues :math:`\\pm i g \\sqrt{\\dim - 1}`."""
    dim = check_int(dim, "dim", minimum=1)
    g = check_field_strength(g)
    G = np.zeros((dim, dim))
    G[0, 1:] = g
    G[1:, 0] = -g
    return G


def random_field(dim: int, scale: float, seed: int = 0) -> np.ndarray:
    """A random antisymmetric field with independent :math:`\\mathcal N(0, \\text{scale}^2)`
    entries above the diagonal (Brofos and Lederman's alternative to the research's
    field), reproducible from ``seed``."""
    dim = check_int(dim, "dim", minimum=1)
    scale = check_field_strength(scale, "g")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"field_seed must be an integer >= 0, got {seed!r}")
    upper = np.triu(np.random.default_rng(seed).normal(0.0, scale, (dim, dim)), 1)
    return upper - upper.T
