"""Facts about the machine a run is on, for checks made before any work."""

from __future__ import annotations

import os

__all__ = ["available_memory", "physical_memory"]


def physical_memory() -> int | None:
    """Bytes of physical memory, or ``None`` where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def available_memory() -> int | None:
    """Bytes of memory that can be allocated now without swapping: Linux's estimate
    (``MemAvailable`` in ``/proc/meminfo``: free memory plus the caches it can drop), else
    the physical memory, or ``None`` where the system says neither."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # the kernel writes kB, meaning KiB
    except (OSError, ValueError, IndexError):
        pass
    return physical_memory()
