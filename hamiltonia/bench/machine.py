"""The machine a benchmark ran on: date, CPU model, cores, memory, and the versions that
matter."""

from __future__ import annotations

import datetime as _dt
import os
import platform
from importlib import metadata

from hamiltonia.bench.peers import peer_versions


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except (OSError, ValueError):
        pass
    return None


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info() -> dict:
    """Date, CPU model, cores, memory, and the versions that matter."""
    info = {
        "date": _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }
    for dist in ("hamiltonia", "numpy", "numba"):
        info[dist] = _version(dist)
    info.update(peer_versions())
    return info
