"""verify_gpu_freed: whether the GPUs were released after the kill, and what held them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..facts import IncidentFacts, killed_in_vain
from ..model import SourceRef
from . import Finding, Found, rule, spec
from .common import gpu_names, gpu_workload, idle_gpus, left_running, released, restarts_found_them

NAME = "verify_gpu_freed"


@rule(
    NAME,
    severity="medium",
    requires=(
        "incident",
        "gpu_procs_after",
        "gpu_release",
        "gpu_freed_by_stop",
        "gpu_holders",
        "gpu_freed_late",
        "reboot",
    ),
)
def verify_gpu_freed(f: IncidentFacts, found: Found) -> Finding | None:
    """GPU memory after the kill: left behind by the unit's processes (listed by nvidia-smi, or
    memory that did not drop), held by another process, released — or unknown (no samples)."""
    finding = _finding(f)
    if finding is None:
        return None
    # what the action item depends on, whatever the case
    data = {
        **finding.data,
        "any_left": bool(left_running(f)),
        "stuck_any": killed_in_vain(f),
        "holders_any": bool(f.gpu_holders),
        "rebooted": f.reboot is not None,
    }
    return spec(NAME).finding(data, finding.evidence, severity=finding.severity)


def _finding(f: IncidentFacts) -> Finding | None:
    inc = f.incident
    if f.gpu_procs_after:
        pids = sorted({int(r["pid"]) for r in f.gpu_procs_after})
        last = max(r["last_ts"] for r in f.gpu_procs_after)
        after = (last - inc.ts).total_seconds() if inc.ts is not None and isinstance(last, datetime) else None
        data = {
            "case": "listed",
            "pids": pids,
            "last_ts": last if after is not None else None,
            "last_after_s": after,
        }
        return spec(NAME).finding(data, severity="high")
    gpu = gpu_workload(f)
    held = [g for g in f.gpu_release if g.freed is False]
    if held and gpu:
        return _held(f, held)
    freed = released(f)
    if freed and gpu:
        idle = idle_gpus(f)
        stop = f.gpu_freed_by_stop
        data = {
            # (a release after the unit's stop is the stop's, not the death's)
            "case": "released" if stop is None else "after_stop",
            "stop_ts": stop.ts if stop is not None else None,
            "stop_kind": stop.kind if stop is not None else None,
            "stop_command": stop.message if stop is not None and stop.origin == "operator" else None,
            "count": len(freed),
            "unit_gpus": f.unit_gpus.text if f.unit_gpus else None,
            "freed_names": gpu_names(freed),
            "idle_names": gpu_names(idle) if idle else None,
            "left_mib": max(g.min_after_mib or 0 for g in freed),
            "within_s": max((g.freed_after_s or 0.0) for g in freed),
        }
        refs = [SourceRef(stop.source_id, stop.line_no)] if stop is not None else []
        return spec(NAME).finding(data, refs, severity="info")
    if inc.cause != "signal" and gpu and f.reboot is None:  # a reboot frees every GPU
        return spec(NAME).finding({"case": "unknown"})
    return None


def _held(f: IncidentFacts, held: list[Any]) -> Finding:
    """Memory that stayed up after the kill: another process's, or the unit's own leftovers."""
    on = [{"gpu": g.gpu, "mib": g.min_after_mib} for g in held[:8]]
    others = [h for h in f.gpu_holders if h.first_ts is not None]
    if others:
        holders = [{"pid": h.pid, "name": h.name} for h in others]
        return spec(NAME).finding({"case": "other_process", "on": on, "holders": holders})
    stuck = left_running(f)
    inc, late = f.incident, f.gpu_freed_late
    data = {
        "case": "stayed",
        "on": on,
        "rebooted_ts": f.reboot.up_ts if f.reboot is not None else None,
        "freed_ts": late.ts if late is not None and inc.ts is not None else None,
        "freed_after_s": (late.ts - inc.ts).total_seconds()
        if late is not None and inc.ts is not None
        else None,
        "freed_by_command_ts": late.command.ts if late is not None and late.command is not None else None,
        "left": [name for name, _ in stuck],
        "stuck": killed_in_vain(f),
        "found_by_restarts": restarts_found_them(f),
    }
    return spec(NAME).finding(
        data, [SourceRef(e.source_id, e.line_no) for _, e in stuck[:1]], severity="high"
    )
