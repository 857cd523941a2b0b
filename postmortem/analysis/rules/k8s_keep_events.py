"""k8s_keep_events: no Kubernetes Event was read for a pod's death (they expire after an hour)."""

from __future__ import annotations

from ...parsers.kubernetes.names import is_k8s_unit
from ..facts import IncidentFacts
from . import Finding, Found, rule, spec

NAME = "k8s_keep_events"


@rule(NAME, severity="low", requires=("incident", "k8s"))
def k8s_keep_events(f: IncidentFacts, found: Found) -> Finding | None:
    """The API server keeps Events one hour (--event-ttl): a pod's death with none of them in
    the data lost its probe failures, kills and evictions as Kubernetes saw them."""
    inc = f.incident
    if not is_k8s_unit(inc.unit) or (f.k8s is not None and f.k8s.has_events):
        return None
    return spec(NAME).finding({"pod_object": f.k8s is not None and f.k8s.container is not None})
