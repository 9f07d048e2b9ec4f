"""The peers of the benchmark: NumPyro, BlackJAX and mici, each run on the very problem a
hamiltonia target defines.

Nothing here imports a peer at module level: :func:`detect_peers` only asks the import
system whether the packages are there, and each runner module imports its peer when it
runs. The JAX log densities are built from the hamiltonia target's own data arrays (the
banana's observations, the Gaussian's scales, the regression's design matrix and labels),
in float64, with the same algebra as the target's NumPy and numba code, so every library
samples the same density at the same cost per gradient.
"""

from __future__ import annotations

import importlib.util
from importlib import metadata

import numpy as np

__all__ = ["PEERS", "detect_peers", "initial_points", "jax_log_density", "peer_versions"]

#: Peer name -> the modules it needs.
PEERS: dict[str, tuple[str, ...]] = {
    "numpyro": ("numpyro", "jax"),
    "blackjax": ("blackjax", "jax"),
    "mici": ("mici",),
}


def detect_peers(find_spec=importlib.util.find_spec) -> dict[str, dict]:
    """Which peers can run, without importing them.

    Returns ``{peer: {"available": bool, "missing": [module, ...]}}`` for every peer of
    :data:`PEERS`. ``find_spec`` is :func:`importlib.util.find_spec` (replaceable in tests).
    """
    found = {}
    for peer, modules in PEERS.items():
        missing = []
        for module in modules:
            try:
                spec = find_spec(module)
            except (ImportError, ValueError):
                spec = None
            if spec is None:
                missing.append(module)
        found[peer] = {"available": not missing, "missing": missing}
    return found


def peer_versions() -> dict[str, str]:
    """Installed versions of the peers and of JAX (``"not installed"`` when absent)."""
    versions = {}
    for dist in ("jax", "jaxlib", "numpyro", "blackjax", "mici"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return versions


def initial_points(seed: int, chains: int, dim: int) -> np.ndarray:
    """The initial positions hamiltonia draws by default for ``seed``: chain ``c`` takes
    ``dim`` uniform(-2, 2) draws from child ``c`` of ``SeedSequence(seed)``. Every library
    starts from these points."""
    from hamiltonia.runner.run import INIT_RADIUS, make_rngs

    rngs, _ = make_rngs(seed, chains)
    return np.stack([rng.uniform(-INIT_RADIUS, INIT_RADIUS, dim) for rng in rngs])


def jax_log_density(target):
    """A ``jax.numpy`` log density of one position ``(dim,)`` equal to ``target.log_prob``.

    Supported: :class:`~hamiltonia.targets.banana.Banana`,
    :class:`~hamiltonia.targets.gaussian.DiagonalGaussian`,
    :class:`~hamiltonia.targets.funnel.Funnel` and
    :class:`~hamiltonia.targets.logistic.LogisticRegression`; ``TypeError`` otherwise.
    Needs ``jax_enable_x64`` (the runners set it).
    """
    import jax.numpy as jnp
    from jax.nn import softplus

    from hamiltonia.targets.banana import Banana
    from hamiltonia.targets.funnel import Funnel
    from hamiltonia.targets.gaussian import DiagonalGaussian
    from hamiltonia.targets.logistic import LogisticRegression, design_matrix

    if isinstance(target, Banana):
        y = np.asarray(target.y, dtype=float)
        sum_y, sum_y2, n = float(y.sum()), float(np.sum(y**2)), float(y.size)
        var_y, var_w = float(target.var_y), float(target.var_w)

        def banana(w):
            s = w[0] + w[1] ** 2
            sse = sum_y2 - 2.0 * s * sum_y + n * s * s
            return -sse / (2.0 * var_y) - (w[0] ** 2 + w[1] ** 2) / (2.0 * var_w)

        return banana
    if isinstance(target, DiagonalGaussian):
        precision = jnp.asarray(1.0 / np.asarray(target.scales, dtype=float) ** 2)

        def gaussian(x):
            return -0.5 * jnp.sum(x * x * precision)

        return gaussian
    if isinstance(target, Funnel):
        scale2, n_x = float(target.scale) ** 2, float(target.n_x)

        def funnel(x):
            v, xs = x[0], x[1:]
            return -(v**2) / (2.0 * scale2) - 0.5 * jnp.sum(xs**2) * jnp.exp(-v) - 0.5 * n_x * v

        return funnel
    if isinstance(target, LogisticRegression):
        Xt = jnp.asarray(design_matrix(target.X))
        y = jnp.asarray(np.asarray(target.y, dtype=float))
        prec = 1.0 / float(target.prior_scale) ** 2

        def logistic(w):
            z = Xt @ w
            return z @ y - jnp.sum(softplus(z)) - 0.5 * prec * jnp.sum(w * w)

        return logistic
    raise TypeError(f"no JAX log density for target {type(target).__name__}")
