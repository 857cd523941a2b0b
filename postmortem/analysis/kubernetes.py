"""What Kubernetes says about a pod container's death (data only): its spec and status as its
Pod object showed them, and its events around the kill — probe failures, restarts, back-off,
evictions. The Kubernetes rules (``rules/k8s_*``) read it; docs/inputs.md (Kubernetes)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..parsers.kubernetes.names import is_k8s_unit
from ..query import run_named_dicts
from .model import Incident

if TYPE_CHECKING:
    from ..store.db import Store

#: how long before the kill a container's events are read (a startup probe's budget is minutes)
BEFORE = timedelta(hours=2)
#: … and after it (the restart, its readiness)
AFTER = timedelta(hours=2)


@dataclass
class K8sFacts:
    """A pod's container around its death."""

    unit: str
    container: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    def probe(self, which: str) -> dict[str, Any] | None:
        """A probe's settings (``startup``, ``liveness``, ``readiness``) as the Pod gave them."""
        raw = (self.container or {}).get(f"{which}_probe")
        try:
            return dict(json.loads(raw)) if raw else None
        except ValueError:
            return None

    def count(self, kind: str, probe: str | None = None) -> int:
        """How many times ``kind`` happened, by the source that saw most of them (an Event's
        count included; kubelet's line and the Event of one back-off are the same back-off)."""
        return self._most(lambda e: e["kind"] == kind and (probe is None or e["probe"] == probe))

    def first(self, kind: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e["kind"] == kind), None)

    def restarts_after(self, kill: datetime, until: datetime) -> int:
        """How many times the container was started again after the kill, by the source that
        saw most of them (Events count them; kubelet's lines and the Pod's status see some)."""
        return self._most(
            lambda e: e["kind"] == "container_started" and e["ts"] is not None and kill < e["ts"] <= until
        )

    def _most(self, wanted: Callable[[dict[str, Any]], bool]) -> int:
        """How many ``wanted`` events the source that saw most of them counted."""
        by_origin: dict[str, int] = {}
        for e in self.events:
            if wanted(e):
                by_origin[e["origin"]] = by_origin.get(e["origin"], 0) + int(e["count"] or 1)
        return max(by_origin.values(), default=0)

    @property
    def has_events(self) -> bool:
        """Whether any Event object (not a journal line) was read for it."""
        return any(e["origin"] == "event" for e in self.events)


def k8s_facts(store: Store, inc: Incident, until: datetime) -> K8sFacts | None:
    """The Kubernetes facts of an incident whose unit is a pod's container; its restarts up to
    ``until`` (its recovery, or an hour on) become the incident's restart count."""
    if not is_k8s_unit(inc.unit) or inc.ts is None:
        return None
    unit = str(inc.unit)
    rows = run_named_dicts(store, "k8s_container_of", {"unit": unit})
    ns, _, rest = unit[4:].partition("/")
    pod = rest.rsplit("/", 1)[0]
    events = run_named_dicts(
        store,
        "k8s_events_of",
        {
            "unit": unit,
            "namespace": ns,
            "pod": pod,
            "host": inc.host,
            "from": inc.ts - BEFORE,
            "to": inc.ts + AFTER,
        },
    )
    facts = K8sFacts(unit, rows[0] if rows else None, events)
    if inc.restart_count is None and inc.cause != "eviction":  # an evicted pod is replaced, not restarted
        inc.restart_count = facts.restarts_after(inc.ts, until) or None
    return facts
