"""The postmortem's sections between the Impact and the Timeline — trigger, root cause and
contributing factors, detection, resolution, lessons — as data (:class:`Story`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ...analysis.facts import IncidentFacts, host_samples
from ...analysis.incidents import cause_line
from ...analysis.model import RUNTIME_NAMES, Incident, Recommendation, is_container, limit_owner
from ...analysis.summary import killer_words
from ...analysis.undated import Undated
from ...query import run_named_dicts
from ...store.db import Store
from ..redact import Redactor
from .common import Sources, gib_kb, server_file, utc_text
from .types import Factor, OutageStatus, Story

HOST_CAUSES = ("host_oom", "cgroup_oom", "oomd", "earlyoom")


def story(
    store: Store, facts: IncidentFacts, recs: Sequence[Recommendation], sources: Sources, clean: Redactor
) -> Story:
    inc = facts.incident
    first = facts.timeline.kill_ts
    return Story(
        **_trigger(facts),
        **_root(facts, sources),
        factors=[
            Factor(
                clean(r.factor),
                sources.cite(r.evidence[0].source_id, r.evidence[0].line_no) if r.evidence else "",
            )
            for r in recs
            if r.factor
        ],
        **_detection(facts, sources, clean),
        **_resolution(facts, server_file(sources, facts.incident.recovery_source, clean)),
        went_well=[clean(r.went_well) for r in recs if r.went_well],
        went_wrong=[clean(r.went_wrong) for r in recs if r.went_wrong],
        lucky=[clean(r.lucky) for r in recs if r.lucky],
        outage_errors=_outage_errors(store, inc.host, first, inc.recovered_ts, clean),
    )


def _trigger(facts: IncidentFacts) -> dict[str, Any]:
    inc = facts.incident
    load = inc.killed_load
    if inc.cause in HOST_CAUSES:
        kind = "loading" if load is not None and load.never_ready else "memory"
    else:
        kind = inc.cause
    oom = facts.cuda_oom or {}
    tl = facts.timeline
    return {
        "trigger": kind,
        "window_min": round((tl.kill_ts - tl.start).total_seconds() / 60),
        # (the one figure every section states: not rounded again here)
        "growth_mib": facts.host_growth_mib,
        "rate_mib_min": facts.host_rate_mib_min,
        "host_limit_pct": facts.host_avail_limit_pct,
        **_host_legs(facts),
        "running_first": facts.running_first,
        "running_last": facts.running_last,
        "queue_max": facts.queue_max,
        "retractions": facts.retractions,
        "retracted": facts.retracted_reqs,
        "oom_phase": oom.get("phase"),
        # two decimals, as the CUDA error gives them: "1.4 GiB asked, 1.4 GiB free" hid why a
        # 1.42 GiB allocation did not fit in 1.36 GiB
        "oom_asked_gib": _gib(oom.get("tried_mib"), 2),
        "oom_free_gib": _gib(oom.get("free_mib"), 2),
    }


def _host_legs(facts: IncidentFacts) -> dict[str, Any]:
    """Where host memory's figures begin and end: the window's first sample, earlyoom's last
    reading (and how old it was at the kill), the growth up to it and, to earlyoom's limit at
    the kill, after it; where the rate's span began when it ends at an old reading."""
    host = host_samples(facts.timeline)
    first = host[0][0] if host else None
    reading = facts.host_reading_ts
    old_end = facts.host_avail_before_s is not None  # (the last sample is an old reading)
    return {
        "first_utc": utc_text(first) if first is not None else "",
        "reading_utc": utc_text(reading) if reading is not None else "",
        "reading_before_s": facts.host_reading_before_s,
        "reading_growth_mib": facts.host_reading_growth_mib,
        "end_growth_mib": facts.host_end_growth_mib,
        "rate_from_utc": utc_text(facts.host_rate_from) if old_end and facts.host_rate_from else "",
    }


def _gib(mib: float | None, places: int = 1) -> float | None:
    return round(mib / 1024, places) if mib is not None else None


def _root(facts: IncidentFacts, sources: Sources) -> dict[str, Any]:
    inc = facts.incident
    v = inc.victim
    said = cause_line(inc.evidence) if inc.cause == "crash" else None
    if v is not None:
        cite = sources.cite(v.source_id, v.line_no)
    elif said is not None:  # the server's own error, not systemd's word that the unit failed
        cite = sources.cite(said.source_id, said.line_no)
    elif inc.evidence:
        cite = sources.cite(inc.evidence[0].source_id, inc.evidence[0].line_no)
    else:
        cite = ""
    return {
        "victim": (v.comm or "?") if v is not None else "",
        "killer": killer_words(inc.killer),
        "victim_pid": v.pid if v is not None else None,
        # the kernel's anonymous RSS, else earlyoom's VmRSS
        "victim_rss_gib": gib_kb(v.anon_rss_kb or v.vm_rss_kb) if v is not None else None,
        "victim_rss_kb": (v.anon_rss_kb or v.vm_rss_kb) if v is not None else None,
        "killed_with": len(inc.killed_with),
        "limit_gib": gib_kb(inc.memcg_limit_kb),
        "limit_kb": inc.memcg_limit_kb,
        "usage_gib": gib_kb(inc.memcg_usage_kb),
        "limit_owner": limit_owner(
            inc.unit, (facts.oom or {}).get("oom_memcg"), boxed=inc.container is not None
        ),
        "root_cite": cite,
    }


def _detection(facts: IncidentFacts, sources: Sources, clean: Redactor) -> dict[str, Any]:
    """The first operator action after the kill (what the logs show of the response), and
    systemd's automatic restart."""
    inc = facts.incident
    kill = inc.ts
    restart = next((r["ts"] for r in facts.restarts if isinstance(r.get("ts"), datetime)), None)
    # (a restart job in a journal with no times, after the kill's own lines there)
    undated_restart = facts.restarts[0] if facts.restarts and restart is None else None
    return {
        **_first_action(facts, sources, clean),
        "restart_utc": utc_text(restart) if restart else "",
        "restart_after_s": (restart - kill).total_seconds() if restart and kill else None,
        "restart_cite": sources.cite(undated_restart["source_id"], undated_restart["line_no"])
        if undated_restart
        else "",
        "restarter": _restarter(inc),
    }


def _first_action(facts: IncidentFacts, sources: Sources, clean: Redactor) -> dict[str, Any]:
    """The first operator command after the kill: a dated one; else one in a journal with no
    times after the kill's own lines there (no time of its own); else none, and the commands
    of such journals that cannot be placed around the kill."""
    # (past the timeline's end too: a stop 16 minutes after a failed start that never came back)
    act, kill, undated = facts.first_operator, facts.incident.ts, facts.undated
    out: dict[str, Any] = {
        "detected_utc": "",
        "detected_after_s": None,
        "detected_what": "",
        "detected_cite": "",
        "detected_kill_lines": "",
        "undated_commands": 0,
        "undated_files": [],
    }
    if act is not None:
        out["detected_utc"] = utc_text(act["ts"])
        out["detected_after_s"] = (act["ts"] - kill).total_seconds() if kill else None
        out["detected_what"] = clean(str(act["message"]))
        out["detected_cite"] = sources.cite(act["source_id"], act["line_no"])
    elif placed := undated.commands_after():
        out["detected_what"] = clean(placed[0].message)
        out["detected_cite"] = sources.cite(placed[0].source_id, placed[0].line_no)
        out["detected_kill_lines"] = _kill_lines(undated, placed[0].source_id)
    else:
        out["undated_commands"] = sum(u.commands for u in undated.unplaced)
        out["undated_files"] = [
            clean(sources.cite(u.source_id, None)) for u in undated.unplaced if u.commands
        ]
    return out


def _kill_lines(undated: Undated, source_id: int) -> str:
    """The kill's own lines in a file with no times: ``26–30`` (``26``: one)."""
    first, last = next(p.kill_lines for p in undated.placed if p.source_id == source_id)
    return f"{first}–{last}" if last > first else str(first)


def _restarter(inc: Incident) -> str:
    """Who restarts the unit: ``systemd``, or a container's runtime (``Docker``, ``Kubernetes``)."""
    if inc.container is not None:
        return inc.container.runtime_name
    if is_container(inc.unit):
        runtime = str(inc.unit).partition(":")[0]
        return RUNTIME_NAMES.get("kubernetes" if runtime == "k8s" else runtime, runtime)
    return "systemd"


def _resolution(facts: IncidentFacts, unnamed_file: str = "") -> dict[str, Any]:
    """How service came back; ``unnamed_file``: the file of the recovery's server when no
    source names its unit."""
    inc = facts.incident
    rec = inc.recovery_load
    kill = inc.ts
    if inc.recovered_ts is None or not (inc.recovery_unit or rec is not None):
        how = ""
    elif not inc.recovery_unit:
        how = "unnamed"
    elif facts.reboot is not None and rec is not None and rec.start_ts and rec.start_ts >= facts.reboot.up_ts:
        how = "reboot"
    elif inc.fallback_unit:
        how = "fallback"
    else:
        how = "restart" if inc.recovery_unit == inc.unit else "other"
    start = rec.start_ts if rec is not None else None
    operator = any(
        ev.origin == "operator"
        and kill is not None
        and ev.ts >= kill
        and (start is None or ev.ts <= start + timedelta(seconds=1))
        and inc.recovery_unit
        and inc.recovery_unit in ev.message
        for ev in facts.timeline.events
    ) or bool(inc.recovery_unit and facts.undated.operator_started(inc.recovery_unit))
    # systemd started the unit's OnFailure= units: a fallback it started, not the operator
    on_failure = how in ("fallback", "other") and (
        any(
            ev.origin == "systemd"
            and ev.kind == "on_failure"
            and ev.unit == inc.unit
            and kill is not None
            and ev.ts >= kill - timedelta(seconds=1)
            and (start is None or ev.ts <= start + timedelta(seconds=1))
            for ev in facts.timeline.events
        )
        or facts.undated.says("on_failure")  # (a journal with no times, after the kill's lines)
    )
    expected, gain = _restart_versus_fallback(facts) if how == "fallback" else (None, None)
    return {
        "recovery_how": how,
        "recovery_unit": inc.recovery_unit or unnamed_file,
        "recovery_started_utc": utc_text(start) if start else "",
        "recovery_started_after_s": (start - kill).total_seconds() if start and kill else None,
        "recovery_ready_utc": utc_text(inc.recovered_ts) if inc.recovered_ts else "",
        "recovery_load_s": rec.load_s if rec is not None else None,
        "operator_started": operator,
        "on_failure_started": on_failure and not operator,
        "restart_expected_utc": utc_text(expected) if expected else "",
        "fallback_gain_s": gain,
    }


def _restart_versus_fallback(facts: IncidentFacts) -> tuple[datetime | None, float | None]:
    """When the automatic restart, left alone, would have been ready (its start plus the unit's
    median load), and how much sooner the fallback was ready."""
    inc = facts.incident
    med = facts.unit_loads.median_load_s if facts.unit_loads is not None else None
    restart = next((r["ts"] for r in facts.restarts if isinstance(r.get("ts"), datetime)), None)
    if restart is None or med is None or inc.recovered_ts is None:
        return None, None
    expected = restart + timedelta(seconds=med)
    return expected, (expected - inc.recovered_ts).total_seconds()


def _outage_errors(
    store: Store, host: str | None, kill: datetime | None, back: datetime | None, clean: Redactor
) -> list[OutageStatus]:
    if kill is None:
        return []
    until = back or kill + timedelta(hours=1)
    rows = run_named_dicts(store, "outage_requests", {"host": host, "from": kill, "to": until})
    return [OutageStatus(int(r["status"]), clean(str(r["path"])), int(r["requests"])) for r in rows[:6]]
