"""health_check_backoff: what the operator's readiness polls got while the server loaded."""

from __future__ import annotations

from datetime import datetime
from itertools import pairwise
from statistics import median

from ..facts import IncidentFacts
from ..model import SourceRef
from . import Finding, Found, rule, spec

NAME = "health_check_backoff"


def _status(p: dict[str, object]) -> int:
    return int(str(p["status"] or 0))


def _ref(p: dict[str, object]) -> SourceRef:
    return SourceRef(int(str(p["source_id"])), int(str(p["line_no"])))


@rule(NAME, severity="low", requires=("incident", "polls"))
def health_check_backoff(f: IncidentFacts, found: Found) -> Finding | None:
    """The readiness poller's requests to the recovering server: whether a 2xx came before the
    server was ready (then the status code is not readiness), their interval, the first 2xx."""
    # a server's own warmup may ask once; the operator's poller is the path asked most
    by_path: dict[str, list[dict[str, object]]] = {}
    for p in f.polls:
        by_path.setdefault(str(p["path"]), []).append(p)
    polls = max(by_path.values(), key=len, default=[])
    if len(polls) < 2:
        return None
    times = [p["ts"] for p in polls if isinstance(p["ts"], datetime)]
    gaps = [(b - a).total_seconds() for a, b in pairwise(times)]
    ready = f.incident.recovered_ts

    def before_ready(p: dict[str, object]) -> bool:
        ts = p["ts"]
        return ready is None or (isinstance(ts, datetime) and ts < ready)

    early = [p for p in polls if before_ready(p)]
    early_ok = [p for p in early if 200 <= _status(p) < 300]
    first_ok = next((p for p in polls if 200 <= _status(p) < 300 and not before_ready(p)), None)
    data: dict[str, object] = {
        "path": str(polls[0]["path"]),
        "polls": len(polls),
        "interval_s": median(gaps) if gaps else 0.0,
        "not_ready": sum(1 for p in early if _status(p) >= 500),
        "recovery_unit": f.incident.recovery_unit,
        "early_ok": len(early_ok),
    }
    if early_ok:
        p = early_ok[0]
        ts = p["ts"]
        data |= {
            "early_status": _status(p),
            "early_ts": ts if isinstance(ts, datetime) else None,
            "early_ahead_s": (ready - ts).total_seconds() if ready and isinstance(ts, datetime) else None,
        }
        return spec(NAME).finding(data, [_ref(p)])
    ok_ts = first_ok["ts"] if first_ok is not None and ready is not None else None
    if isinstance(ok_ts, datetime) and ready is not None:
        data |= {"first_ok_ts": ok_ts, "first_ok_lag_s": (ok_ts - ready).total_seconds()}
    return spec(NAME).finding(data, [_ref(polls[0])])
