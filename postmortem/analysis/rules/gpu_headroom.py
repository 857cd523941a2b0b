"""gpu_headroom: the server's own CUDA OOM while capturing graphs or serving."""

from __future__ import annotations

from typing import Any

from ..facts import IncidentFacts
from . import Finding, Found, rule, spec
from .bound_queue import max_running
from .common import ref, spec_algorithm
from .speculative_gpu_settings import gpu_settings

NAME = "gpu_headroom"


@rule(NAME, severity="high", requires=("incident", "cuda_oom", "config", "last_batch", "limits"))
def gpu_headroom(f: IncidentFacts, found: Found) -> Finding | None:
    """A CUDA OOM of the server itself (no other process on the GPU, no draft model): where it
    happened, how much it asked for, and the setting that decides that headroom."""
    inc, oom = f.incident, f.cuda_oom
    if inc.cause != "gpu_oom" or oom is None or f.gpu_holders or spec_algorithm(f):
        return None
    phase = oom.get("phase")
    if phase not in ("cuda_graph", "runtime", "warmup"):
        return None  # loading: the weights or the pool itself did not fit — the quoted error says which
    lb = f.last_batch or {}
    data = {
        "phase": phase,
        "ranks": oom.get("ranks"),
        "gpu": oom.get("gpu"),
        "tried_mib": oom.get("tried_mib"),
        "free_mib": oom.get("free_mib"),
        "last_batch": {k: lb.get(k) for k in ("running_req", "queue_req", "token_usage")},
        "max_running": max_running(f),
        **gpu_settings(f.config or {}),
        "unallocated_mib": fragmented(oom),
    }
    return spec(NAME).finding(data, ref(f, "cuda_oom"))


def fragmented(oom: dict[str, Any]) -> float | None:
    """What PyTorch held reserved but unallocated when an allocation failed that it would have
    fitted in — memory fragmented, not short: the error's own advice is
    ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``, and lowering the memory settings would
    not help (None: not fragmented, or the error did not say).

    >>> fragmented({"tried_mib": 716.8, "allocated_mib": 70000.0, "reserved_mib": 72775.0})
    2775.0
    >>> fragmented({"tried_mib": 2048.0, "allocated_mib": 70000.0, "reserved_mib": 70120.0}) is None
    True
    """
    tried, alloc, reserved = oom.get("tried_mib"), oom.get("allocated_mib"), oom.get("reserved_mib")
    if tried is None or alloc is None or reserved is None:
        return None
    unallocated = float(reserved) - float(alloc)
    return round(unallocated, 1) if unallocated >= float(tried) else None
