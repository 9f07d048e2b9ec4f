"""JAX set-up shared by the NumPyro and BlackJAX runners: float64, CPU, a private
persistent compilation cache, and a clock for compile events."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager

__all__ = ["compile_events", "setup_jax"]

_COMPILE_PREFIX = "/jax/core/compile/"


def setup_jax():
    """Import JAX in float64 with a per-process persistent compilation cache; returns it."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    jax.config.update("jax_enable_x64", True)
    cache = tempfile.mkdtemp(prefix="hamiltonia-bench-xla-")
    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return jax


@contextmanager
def compile_events():
    """Collects the seconds JAX spends tracing, lowering and compiling (or loading from the
    persistent cache) inside the block: ``with compile_events() as ev: ...; ev["seconds"]``.

    Only the ``/jax/core/compile/`` events are summed (trace, MLIR lowering, backend
    compile); the backend-compile event already includes a persistent-cache load.
    """
    import jax.monitoring as monitoring

    box = {"seconds": 0.0, "events": 0}

    def listener(event, duration, **_):
        if event.startswith(_COMPILE_PREFIX) and box.get("on", True):
            box["seconds"] += float(duration)
            box["events"] += 1

    monitoring.register_event_duration_secs_listener(listener)
    try:
        yield box
    finally:
        box["on"] = False
