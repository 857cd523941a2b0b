"""bound_queue: the scheduler's queue grew before a host-memory kill."""

from __future__ import annotations

from typing import Any

from ..facts import IncidentFacts
from ..model import SourceRef
from . import Finding, Found, rule, spec
from .common import HOST_CAUSES, UNLIMITED_QUEUE

NAME = "bound_queue"


@rule(NAME, severity="high", requires=("incident", "queue_max", "config", "limits", "host_queue_split"))
def bound_queue(f: IncidentFacts, found: Found) -> Finding | None:
    """A queue of at least 16 requests before a host-memory kill: bound it, with the configured
    bounds, and says whether host memory grew with the queue or before it."""
    inc = f.incident
    if inc.cause not in HOST_CAUSES or not f.queue_max or f.queue_max < 16:
        return None
    data: dict[str, Any] = {
        "queue_max": f.queue_max,
        "token_usage_max": f.token_usage_max,
        "retractions": f.retractions,
        "retracted_reqs": f.retracted_reqs,
        "config_known": f.config is not None,
        "max_queued": max_queued(f),
        "max_running": max_running(f),
        "growth": growth(f),
    }
    evidence = [SourceRef(*f.queue_start_at)] if f.queue_start_at else []
    return spec(NAME).finding(data, evidence)


def max_queued(f: IncidentFacts) -> str:
    """The killed run's queue bound as configured (``unlimited`` when none)."""
    from .words import engine_of

    raw = str((f.config or {}).get("raw") or "")
    parsed = engine_of(f).parse_args(raw) if raw else None
    key = engine_of(f).setting("max_queued_requests").arg or "max_queued_requests"
    return queue_bound(parsed[0].get(key) if parsed else None)


def queue_bound(value: str | None) -> str:
    """A queue bound as the server printed it, in the report's words: ``unlimited`` for none
    (not given; Python's ``None``, as printed arguments show an unset one; or a bound too large
    to be one).

    >>> queue_bound("256"), queue_bound("'64'"), queue_bound("None"), queue_bound(None), queue_bound(str(2**62))
    ('256', '64', 'unlimited', 'unlimited', 'unlimited')
    """
    q = value.strip().strip("'\"") if value is not None else None
    if q is None or q.lower() in ("", "none", "null") or (q.isdigit() and int(q) >= UNLIMITED_QUEUE):
        return "unlimited"
    return q


def max_running(f: IncidentFacts) -> dict[str, Any]:
    """The running-requests bound as configured, and what the server made of 'auto' at startup."""
    return {
        "configured": (f.config or {}).get("max_running_requests"),
        "effective": (f.limits or {}).get("max_running_requests"),
    }


def growth(f: IncidentFacts) -> dict[str, Any] | None:
    """How host RAM grew before and after requests began to queue (``None``: not measured, or
    it did not grow after they began: nothing to lay on the queue)."""
    split = f.host_queue_split
    if split is None or f.queue_start_ts is None or split[1] <= 0 or split[3] <= 0 or split[2] <= 0:
        return None
    before, before_min, after, after_min = split
    total = before + after
    return {
        "before_mib": before,
        "after_mib": after,
        "before_rate_mib": before / before_min,
        "after_rate_mib": after / after_min,
        "queue_start_ts": f.queue_start_ts,
        "before_queue": total > 0 and before >= 0.25 * total,
        "running_first": f.running_first,
        "running_last": f.running_last,
        "at_least": f.host_avail_limit_pct is not None,
    }
