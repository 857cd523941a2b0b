"""Facts about the machine postmortem runs on. Standard library only (the drawing process's
start-up imports it)."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, e.g. a container's cpuset), at least 1."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity on this platform
        return os.cpu_count() or 1
