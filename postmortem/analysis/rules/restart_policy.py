"""restart_policy: what an automatic restart did, or that none was set."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ...parsers.kubernetes.names import is_k8s_unit
from ..facts import IncidentFacts, blocked_restarts, killed_in_vain
from ..model import is_container, is_service
from . import Finding, Found, rule, spec
from .common import death_seen, operator_started, refs, while_loading

NAME = "restart_policy"


@rule(
    NAME, severity="medium", requires=("incident", "restarts", "unit_loads", "reboot", "timeline", "undated")
)
def restart_policy(f: IncidentFacts, found: Found) -> Finding | None:
    """systemd's (or a container runtime's) restart after the kill: what it reloaded, whether the
    fallback beat it, restarts blocked by leftover processes; or no restart when none was set."""
    inc = f.incident
    if inc.cause == "gpu_fault":
        return None  # a restart loads onto the failed GPU: the gpu_fault advice says what to do
    if is_k8s_unit(inc.unit):
        return None  # kubelet restarts a pod's container (restartPolicy): k8s_startup_probe
    if is_container(inc.unit):
        return _container(f)
    if not is_service(inc.unit):
        return None  # a session's scope or a slice: nothing systemd starts, so nothing it restarts
    if inc.restart_count:
        first = f.restarts[0]["ts"] if f.restarts else None
        ended = _restart_ended(f, first) if isinstance(first, datetime) and inc.fallback_unit else None
        data = {
            "case": "restarted",
            "restart_count": inc.restart_count,
            "blocked": blocked_restarts(f),
            "stuck_for_good": killed_in_vain(f) and f.gpu_freed_late is None,
            "loading": while_loading(f),
            "fallback": inc.fallback_unit,
            "ended": ended,
            "versus": _versus(f) if inc.fallback_unit else None,
        }
        return spec(NAME).finding(data, refs(f.restarts))
    if not death_seen(f):
        return None  # no journal of the kill: whether a restart was scheduled is not known
    rec = inc.recovery_load
    if (
        f.reboot is not None
        and rec is not None
        and rec.start_ts is not None
        and rec.start_ts >= f.reboot.up_ts
    ):
        return None  # it came back with the host's boot, not by a restart
    if inc.recovered_ts is None or (inc.recovery_unit == inc.unit and not operator_started(f)):
        return spec(NAME).finding(
            {
                "case": "none",
                "back": inc.recovered_ts is not None,
                "blocked": 0,
                "stuck_for_good": False,
                "fallback": None,
                "ended": None,
                "versus": None,
            }
        )
    return None


def _container(f: IncidentFacts) -> Finding | None:
    """A container's runtime restarts it under a restart policy (``--restart``), not systemd."""
    inc = f.incident
    box = inc.container
    data: dict[str, Any] = {
        "runtime": box.runtime_name if box is not None else "Its runtime",
        "cli": box.runtime if box is not None else "docker",
        # (what the templates read of a unit's restart: none of it applies to a container)
        "blocked": 0,
        "stuck_for_good": False,
        "fallback": None,
        "ended": None,
        "versus": None,
    }
    if inc.restart_count:
        data |= {
            "case": "container_restarted",
            "restart_count": inc.restart_count,
            "loading": while_loading(f),
        }
        return spec(NAME).finding(data, refs(f.restarts))
    if inc.recovered_ts is None:
        # (back without a start systemd logged: the cgroupfs driver has no scope to start; a
        # restart policy or an operator brought it back, nothing to advise)
        return spec(NAME).finding(data | {"case": "container_none", "back": False})
    return None


def _versus(f: IncidentFacts) -> dict[str, Any] | None:
    """When the restart, left alone, would have been ready (the unit's median load after it
    began) against when the fallback was."""
    inc = f.incident
    med = f.unit_loads.median_load_s if f.unit_loads is not None else None
    if not f.restarts or med is None or inc.recovered_ts is None:
        return None
    restart_ts = f.restarts[0]["ts"]
    if not isinstance(restart_ts, datetime):
        return None
    expected = restart_ts + timedelta(seconds=med)
    return {
        "restart_ts": restart_ts,
        "expected_ts": expected,
        "median_s": med,
        "recovered_ts": inc.recovered_ts,
        "gain_s": (expected - inc.recovered_ts).total_seconds(),
    }


def _restart_ended(f: IncidentFacts, restart_ts: datetime) -> dict[str, Any] | None:
    """How the automatic restart ended when it did not reach ready before the operator's
    fallback did (killed again, failed): then there is nothing to weigh it against."""
    inc = f.incident
    for ld in sorted(f.unit_loads.loads if f.unit_loads else [], key=lambda x: x.start_ts or restart_ts):
        if ld.start_ts is None or ld.start_ts < restart_ts - timedelta(seconds=5):
            continue
        if inc.recovered_ts is not None and ld.start_ts > inc.recovered_ts:
            break
        if ld.outcome in ("killed", "failed"):
            return {"start_ts": ld.start_ts, "outcome": ld.outcome}
        return None
    return None
