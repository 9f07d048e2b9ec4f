"""Facts about the machine a run is on, for checks made before any work."""

from __future__ import annotations

import os

__all__ = ["physical_memory"]


def physical_memory() -> int | None:
    """Bytes of physical memory, or ``None`` where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
