"""The report's opening paragraph, at most five sentences: what died and why, what ran out,
what led to it or what followed, how long service was down and what brought it back.

:func:`summary_data` gathers the facts (data only); ``templates/partials/summary.md.j2`` says
them (block ``summary``), one sentence per key of ``sentences``, in that order. Which facts get
a sentence is decided here: the opening, what ran out and how service came back always; the rest
by importance (a reboot, GPU memory left behind, systemd giving up, a repeat kill, an undated
OOM record, oomd's rule, the growth before the kill, the processes killed, another process
killed first) until there are five.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta, tzinfo
from typing import Any

from ..lazyre import lazy_re
from ..parsers.journal.systemd import oomd_kill, oomd_reason
from ..parsers.kubernetes.names import is_k8s_unit
from ..text.formats import clock, human
from ..timeutil import UTC
from .facts import IncidentFacts, blocked_restarts, killed_in_vain, left_processes
from .model import (
    CRASH_CAUSES,
    Incident,
    death_noun,
    is_container,
    killed_process,
    limit_owner,
    restartable,
)

#: how each cause is said: a label for tables, a phrase for sentences (``{noun}``: unit or
#: container). The one description of the cause enum.
CAUSES: dict[str, tuple[str, str]] = {
    "cgroup_oom": (
        "cgroup memory limit (kernel memcg OOM killer)",
        "the kernel's memory-cgroup OOM killer (the {noun} hit its memory limit)",
    ),
    "host_oom": ("host RAM exhausted (kernel OOM killer)", "the kernel OOM killer (the host ran out of RAM)"),
    "gpu_oom": ("GPU memory exhausted (CUDA OOM)", "a CUDA out-of-memory error"),
    "oomd": (
        "systemd-oomd kill (memory pressure or swap)",
        "systemd-oomd (host memory pressure or swap use)",
    ),
    "earlyoom": ("earlyoom kill (low host RAM)", "earlyoom (host RAM below its threshold)"),
    "signal": ("killed by a signal (no OOM record)", "a signal, with no OOM record"),
    "timeout": (
        "systemd stop/start timeout (SIGKILL after TimeoutStopSec=/TimeoutStartSec=)",
        "systemd after its stop or start timeout ran out (TimeoutStopSec=/TimeoutStartSec=)",
    ),
    "gpu_fault": ("GPU fault (NVIDIA Xid before the death)", "a GPU fault (an NVIDIA Xid error before it)"),
    "crash": ("server crash (an error, not a kill)", "an error in the server itself (nothing killed it)"),
    "eviction": (
        "kubelet eviction (node memory pressure)",
        "kubelet's eviction (the node's memory fell below its eviction threshold)",
    ),
    "probe_kill": (
        "killed by kubelet after failed probes (not an OOM)",
        "kubelet, after its probe failed again and again (no OOM)",
    ),
    "unknown": ("unknown", "an unknown cause"),
}
# CRASH_CAUSES (in .model): the server died of its own error (a CUDA out-of-memory error is
# one): it "crashed", it was not "killed" (an unknown cause keeps "killed": systemd saw a
# signal end it)


def death_word(cause: str, loading: bool = False) -> str:
    """How a report says the process ended (``loading``: its start never became ready).

    >>> death_word("cgroup_oom"), death_word("gpu_oom"), death_word("gpu_oom", loading=True)
    ('killed', 'crashed', 'failed to start')
    >>> death_word("host_oom", loading=True)
    'killed while loading'
    """
    if loading:
        return "failed to start" if cause in CRASH_CAUSES else "killed while loading"
    return "crashed" if cause in CRASH_CAUSES else "killed"


def killer_words(killer: str | None) -> str:
    """Who killed the victim (the incident's ``killer``): a user-space killer by its name, else
    the kernel.

    >>> killer_words("earlyoom"), killer_words("systemd-oomd"), killer_words("kernel"), killer_words(None)
    ('earlyoom', 'systemd-oomd', 'the kernel', 'the kernel')
    """
    return "the kernel" if killer in (None, "kernel") else killer


def death_label(cause: str, loading: bool = False) -> str:
    """The header row's label for the moment: ``Killed at``, ``Crashed at``, ``Failed at``.

    >>> death_label("signal"), death_label("crash", loading=True)
    ('Killed at', 'Failed at')
    """
    if loading and cause in CRASH_CAUSES:
        return "Failed at"
    return "Crashed at" if cause in CRASH_CAUSES else "Killed at"


def cause_phrase(cause: str, noun: str = "unit") -> str:
    """The phrase of a cause, its ``{noun}`` the unit's or the container's.

    >>> cause_phrase("cgroup_oom", "container")
    "the kernel's memory-cgroup OOM killer (the container hit its memory limit)"
    """
    return CAUSES.get(cause, (cause, cause))[1].format(noun=noun)


#: the label of each cause, for tables
CAUSE_LABELS = {k: label for k, (label, _) in CAUSES.items()}
#: the phrase of each cause (``the unit``'s), for code that wants it plain
CAUSE_WORDS = {k: phrase.format(noun="unit") for k, (_, phrase) in CAUSES.items()}
#: sentences after the first three, most important first; the paragraph keeps five at most
OPTIONAL = (
    "started_by",
    "reboot",
    "left_behind",
    "gave_up",
    "repeat",
    "undated",
    "oomd",
    "growth",
    "victims",
    "earlier_kill",
    "stop_restarted",
)
MAX_SENTENCES = 5
#: how long before a kill another process's kill counts as the same shortage
EARLIER_KILL_S = 600.0


def summarise(facts: IncidentFacts, zone: tzinfo = UTC, templates: Sequence[str] = ()) -> str:
    """The paragraph, rendered from ``templates/partials/summary.md.j2``."""
    from ..text.templates import render_blocks

    data = summary_data(facts, zone)
    return render_blocks("partials/summary.md.j2", data, ("summary",), templates)["summary"]


def summary_data(facts: IncidentFacts, zone: tzinfo = UTC) -> dict[str, Any]:
    """What the paragraph says: a dict per sentence, and ``sentences``, their keys in order."""
    inc = facts.incident
    box = inc.container
    noun = "container" if box is not None or is_container(inc.unit) else "unit"
    if inc.cause == "cgroup_oom":
        noun = limit_owner(inc.unit, (facts.oom or {}).get("oom_memcg"), boxed=box is not None)
    data: dict[str, Any] = {"zone": zone, "noun": noun, "clock": lambda ts: clock(ts, zone)}
    data["head"] = _head(facts, noun)
    data["end"] = death_noun(inc.cause, data["head"]["loading"])
    data["ran_out"] = _ran_out(facts)
    data["back"] = _back(facts)
    optional = {
        "started_by": facts.started_by,
        "reboot": _reboot(facts),
        "left_behind": _left_behind(facts),
        "gave_up": _gave_up(facts),
        "repeat": _repeat(inc),
        "undated": facts.undated_kills[0] if facts.undated_kills else None,
        "oomd": _oomd(inc),
        "growth": _growth(facts),
        "victims": _victims(inc),
        "earlier_kill": _earlier_kill(facts),
        "stop_restarted": facts.stop_ts
        if facts.stop_restarted and facts.stop_ts is not None and inc.recovered_ts is not None
        else None,
    }
    data.update(optional)
    chosen = ["head"] + (["ran_out"] if data["ran_out"] else [])
    room = MAX_SENTENCES - len(chosen) - 1
    extra = [k for k in OPTIONAL if optional[k] is not None][: max(room, 0)]
    after = [k for k in extra if k in _AFTER_BACK]
    before = sorted((k for k in extra if k not in _AFTER_BACK), key=_ORDER.index)
    data["sentences"] = chosen + before + ["back"] + after
    return data


#: sentences told after how service came back (they measure against it)
_AFTER_BACK = frozenset({"stop_restarted"})


#: the order the chosen sentences are told in (a story: before the kill, the kill, after it)
_ORDER = [
    "started_by",
    "growth",
    "earlier_kill",
    "undated",
    "oomd",
    "victims",
    "repeat",
    "left_behind",
    "reboot",
    "gave_up",
    "stop_restarted",
]


def _head(facts: IncidentFacts, noun: str) -> dict[str, Any]:
    inc = facts.incident
    box = inc.container
    cfg = facts.config or {}
    desc = [str(x) for x in (cfg.get("speculative_algorithm"), cfg.get("model_path")) if x]
    what = inc.unit  # None: the template's "A process"
    detail = ", ".join(desc)
    if box is not None:
        # the name an operator knows, the image and the short id `docker ps` shows
        what = f"{box.runtime_name} {box.words()}"
        detail = "; ".join(x for x in (box.details(), detail) if x)
    load = inc.killed_load
    return {
        "what": what,
        "detail": detail,
        # a start that never became ready was not killed in service: it failed while loading
        "loading": load is not None and load.never_ready,
        "host": inc.host,
        "ts": inc.ts,
        "cause": inc.cause,
        "cause_words": CAUSES.get(inc.cause, (inc.cause, inc.cause))[1].format(noun=noun),
    }


def _ran_out(facts: IncidentFacts) -> dict[str, Any] | None:
    inc = facts.incident
    if inc.cause == "cgroup_oom" and inc.memcg_limit_kb and inc.memcg_usage_kb:
        return {
            "kind": "cgroup",
            "usage_kb": inc.memcg_usage_kb,
            "limit_kb": inc.memcg_limit_kb,
            "host_avail_mib": facts.host_avail_end_mib,
            "host_avail_before_s": facts.host_avail_before_s,
            "host_avail_at_most": facts.host_avail_limit_pct is not None,
        }
    if inc.cause == "oomd":  # a pressure or swap threshold, not RAM exhausted
        return {"kind": "pressure"}
    if inc.cause == "earlyoom":  # its threshold (10 % available by default), not exhausted
        return {"kind": "low"}
    if inc.cause == "host_oom":
        return {"kind": "host"}
    if inc.cause == "gpu_oom":
        return {"kind": "gpu"}
    if inc.cause in ("gpu_fault", "crash") and inc.cause_explanation:
        return {"kind": "explained", "text": inc.cause_explanation}
    return None


def _back(facts: IncidentFacts) -> dict[str, Any]:
    """How service came back — or why no source shows it back."""
    inc = facts.incident
    box = inc.container
    if inc.recovered_ts is not None and (inc.recovery_unit or inc.recovery_load is not None):
        load = inc.recovery_load
        rb = facts.reboot
        after_reboot = bool(load and load.start_ts and rb is not None and load.start_ts >= rb.up_ts)
        if not inc.recovery_unit:  # a server whose log nothing ties to a unit (started by hand?)
            how = "unnamed"
        elif inc.fallback_unit:
            how = "fallback"
        else:
            how = "restart" if inc.recovery_unit == inc.unit else "other"
        return {
            "case": "back",
            "how": how,
            "unit": inc.recovery_unit,
            "container": box.words() if box is not None and inc.recovery_unit == inc.unit else None,
            "runtime": box.runtime_name if box is not None else None,
            "by_policy": bool(inc.restart_count),
            # an evicted pod is not restarted: its owner (a StatefulSet, a ReplicaSet) makes a new one
            "replaced_by": _replaced_by(facts) if inc.cause == "eviction" and is_k8s_unit(inc.unit) else None,
            "downtime_s": inc.downtime_s,
            "start_ts": load.start_ts if load else None,
            "after_reboot": after_reboot,
            "ready_ts": inc.recovered_ts,
            "load_s": load.load_s if load else None,
            "guessed": inc.recovery_guessed,
            "other_model": _other_model(facts),
        }
    if inc.serving is False:
        return {
            "case": "no_server",
            "name": box.words() if box is not None else inc.unit,
            "served_on": facts.served_on,
        }
    if is_k8s_unit(inc.unit):
        box_state = (facts.k8s.container or {}) if facts.k8s else {}
        return {
            "case": "pod",
            "name": box.words() if box is not None else inc.unit,
            "restarts": inc.restart_count,
            "backoff": facts.k8s.count("backoff") if facts.k8s else 0,
            "state": box_state.get("state_reason"),
        }
    if is_container(inc.unit):
        return {
            "case": "container",
            "name": box.words() if box is not None else inc.unit,
            "runtime": box.runtime_name if box is not None else "Its runtime",
            "restarts": inc.restart_count,
        }
    if inc.unit is not None and not restartable(inc.unit):
        return {"case": "not_a_service", "unit": inc.unit}
    if facts.reboot is not None and facts.reboot.unit_started_ts is not None:
        return {"case": "started_after_reboot", "unit": inc.unit, "ts": facts.reboot.unit_started_ts}
    return {"case": "none"}


def _replaced_by(facts: IncidentFacts) -> str:
    """Who made the pod that replaced an evicted one: its owner, as its Pod object names it."""
    owner = ((facts.k8s.container if facts.k8s else None) or {}).get("owner")
    return str(owner) if owner else "its owner"


def _other_model(facts: IncidentFacts) -> dict[str, Any] | None:
    """The recovery serves another model than the killed run (or another checkpoint under the
    same served name)."""
    inc = facts.incident
    load = inc.recovery_load
    killed_model = inc.killed_load.model_path if inc.killed_load is not None else None
    if load is None or not load.model_path or not killed_model or load.model_path == killed_model:
        return None
    served = (facts.config or {}).get("served_model_name")
    same_name = bool(served) and served == (facts.recovery_config or {}).get("served_model_name")
    return {"model": load.model_path, "killed_model": killed_model, "served": served if same_name else None}


def _growth(facts: IncidentFacts) -> dict[str, Any] | None:
    """Host memory in use grew before a host-memory kill (and the running requests with it)."""
    inc = facts.incident
    grew = facts.host_growth_mib
    if inc.cause not in ("cgroup_oom", "host_oom", "oomd", "earlyoom") or grew is None or grew < 1024:
        return None
    tl = facts.timeline
    return {
        "grew_mib": grew,
        # the last figure is earlyoom's limit at the kill, a bound: it grew by at least that
        "at_least": facts.host_avail_limit_pct is not None,
        "minutes": round((tl.kill_ts - tl.start).total_seconds() / 60),
        # the last reading long before the kill: the growth is up to it, not to the kill
        "old_s": facts.host_avail_before_s if facts.host_avail_limit_pct is None else None,
        "running_first": facts.running_first,
        "running_last": facts.running_last,
        "queued": facts.queue_max,
    }


#: later kills of the same incident the summary names one by one (the rest it counts)
LATER_NAMED = 3


def _victims(inc: Incident) -> dict[str, Any] | None:
    v = inc.victim
    if v is None:
        return None
    # each later kill's time after the kill before it ("37 s later ...; 37 s later ..." reads as
    # one after the other), and after the first (for the last of those counted)
    later: list[dict[str, Any]] = []
    prev = v.ts
    # processes per record (memory.oom.group), counted once: a loop of 1,000 kills would
    # otherwise scan every victim for each
    per_record = Counter(o.oom_id for o in inc.victims if o.oom_id is not None)
    for lk in inc.later_kills:
        if lk.ts is None or v.ts is None or prev is None:
            continue
        since = (lk.ts - v.ts).total_seconds()
        later.append(
            {
                "after_s": (lk.ts - prev).total_seconds(),
                "since_first_s": since,
                "comm": lk.comm,
                "pid": lk.pid,
                # the processes killed with it in its record (memory.oom.group)
                "others": per_record[lk.oom_id] - 1 if lk.oom_id is not None else 0,
            }
        )
        prev = lk.ts
    # a restart loop killed again and again: the first kills by name, then how many more and
    # when the last one came (the summary stays a paragraph); one more is named, not counted
    named = later if len(later) <= LATER_NAMED + 1 else later[:LATER_NAMED]
    more = later[len(named) :]
    return {
        "killer": killer_words(inc.killer),
        "comm": v.comm,
        "pid": v.pid,
        "rss_kb": v.anon_rss_kb,
        "others": len(inc.killed_with),
        # what was killed again: a systemd unit, or a Docker or Kubernetes container
        "kin": "container" if inc.container is not None or is_container(inc.unit) else "unit",
        "later": named,
        "later_more": len(more),
        # the processes those records killed (more than one each: group kills)
        "later_more_killed": len(more) + sum(lk["others"] for lk in more),
        "later_last_s": more[-1]["since_first_s"] if more else None,
    }


def _repeat(inc: Incident) -> dict[str, Any] | None:
    """A repeat: the same unit killed before on this host in the week (an hour apart or more:
    a kill within the hour is one shortage, told by the restart loop's words)."""
    week = [(ts, cause) for ts, cause in inc.earlier_week if inc.ts and inc.ts - ts > timedelta(hours=1)]
    if not week or inc.ts is None:
        return None
    last_ts, last_cause = week[0]
    n = len(inc.earlier_week) + 1
    return {
        "nth": {2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(n, f"{n}th"),
        "last_ts": last_ts,
        "before_s": (inc.ts - last_ts).total_seconds(),
        "same_cause": last_cause == inc.cause,
        "last_cause_words": CAUSE_WORDS.get(last_cause, last_cause),
    }


def _reboot(facts: IncidentFacts) -> dict[str, Any] | None:
    rb, inc = facts.reboot, facts.incident
    if rb is None or inc.ts is None:
        return None
    return {
        "exact": rb.exact,
        "boot": rb.boot_words,
        "up_ts": rb.up_ts,
        "after_s": (rb.up_ts - inc.ts).total_seconds(),
        "last_old_ts": rb.last_old_ts,
        "hung": any(ev.kind == "hung_task" for ev in facts.timeline.events if inc.ts <= ev.ts < rb.up_ts),
    }


def _left_behind(facts: IncidentFacts) -> dict[str, Any] | None:
    """The unit's processes that outlived it holding GPU memory (systemd left them running, or
    could not end them), the restarts they made fail, and when the memory was freed."""
    inc = facts.incident
    if inc.ts is None or not any(g.freed is False for g in facts.gpu_release):
        return None
    left = left_processes(facts)
    pids = list(dict.fromkeys(pid for pid, _name, _ev in left))
    if not pids:
        return None
    late = facts.gpu_freed_late
    return {
        "pids": pids,
        "stuck": killed_in_vain(facts),
        "freed_ts": late.ts if late is not None else None,
        "freed_after_s": (late.ts - inc.ts).total_seconds() if late is not None else None,
        "until_reboot": late is None and facts.reboot is not None,
        "blocked": blocked_restarts(facts),
        "found_by_restart": any(ev.kind == "left_over" for _pid, _name, ev in left),
        "command": _short_command(late.command.message)
        if late is not None and late.command is not None
        else None,
        "command_ts": late.command.ts if late is not None and late.command is not None else None,
    }


def _short_command(command: str) -> str:
    """A command line as an operator typed it: the program's name, not its path, and at most
    60 characters.

    >>> _short_command("/usr/bin/kill -9 60288 60289")
    'kill -9 60288 60289'
    """
    prog, _, rest = command.strip().partition(" ")
    text = f"{prog.rsplit('/', 1)[-1]} {rest}".strip()
    return text if len(text) <= 60 else text[:59] + "…"


def _gave_up(facts: IncidentFacts) -> datetime | None:
    """When systemd stopped restarting the unit: its start limit after the incident's last kill
    (a limit an operator reset, after which the unit ran and was killed again, was not the end)."""
    inc = facts.incident
    if inc.ts is None:
        return None
    last = max([inc.ts, *(lk.ts for lk in inc.later_kills if lk.ts is not None)])
    ev = next(
        (
            ev
            for ev in facts.timeline.events
            if ev.kind == "start_limit_hit" and ev.unit == inc.unit and ev.ts >= last
        ),
        None,
    )
    return ev.ts if ev is not None else None


def _oomd(inc: Incident) -> dict[str, Any] | None:
    """systemd-oomd's own account of its kill: the cgroup, and the rule that fired (memory
    pressure of a slice over its limit, or memory and swap use over a share)."""
    if inc.cause != "oomd":
        return None
    ev = next(
        (e for e in inc.evidence if e.kind == "oom_kill" and e.raw.get("killer") == "systemd-oomd"), None
    )
    if ev is None:
        return None
    cgroup, why = oomd_kill(ev.detail), oomd_reason(ev.detail)
    return {"cgroup": cgroup or inc.unit or "the unit", "why": in_gib(why) if cgroup and why else None}


def in_gib(text: str) -> str:
    """oomd's reason with its byte counts in GiB.

    >>> in_gib("due to memory used (520913395712) / total (540449587200) and swap used "
    ...             "(8014780416) / total (8589930496) being more than 90.00%")
    'due to memory used (485.1 of 503.3 GiB) and swap used (7.5 of 8.0 GiB) being more than 90.00%'
    """
    return _OOMD_BYTES.sub(
        lambda m: f"{m.group(1)} ({int(m.group(2)) / 2**30:,.1f} of {int(m.group(3)) / 2**30:,.1f} GiB)",
        text.rstrip("."),
    )


_OOMD_BYTES = lazy_re(r"(\w+ used) \((\d+)\) / total \((\d+)\)")


def _earlier_kill(facts: IncidentFacts) -> dict[str, Any] | None:
    """The kernel's last kill of another process shortly before this one: a shortage that
    killed something else first (a data loader), then this unit."""
    inc = facts.incident
    if inc.ts is None:
        return None
    mine = {v.pid for v in inc.victims}
    last = None
    for ev in facts.timeline.events:
        if ev.origin != "kernel" or ev.kind != "oom_kill" or ev.ts >= inc.ts:
            continue
        if (inc.ts - ev.ts).total_seconds() > EARLIER_KILL_S:
            continue
        if inc.unit is not None and ev.unit == inc.unit:
            continue  # the unit's previous run, killed before it restarted: an incident of its own
        proc = killed_process(ev.message)
        if proc is None or proc[0] in mine:
            continue
        last = (ev, proc)
    if last is None:
        return None
    ev, (pid, comm) = last
    return {
        "before_s": (inc.ts - ev.ts).total_seconds(),
        "comm": comm,
        "pid": pid,
        "unit": ev.unit if ev.unit and ev.unit != inc.unit else None,
    }


def downtime_text(
    downtime_s: float | None, unit: str | None, missing: str = "not restored", serving: bool | None = None
) -> str:
    """A kill's downtime in words: ``missing`` when the service is not seen back, a dash for a
    unit that is no service (a session's scope or a slice: nothing to be down; a container is
    a service, its runtime's) or that ran no server (``serving`` False: a neighbour)."""
    if downtime_s is not None:
        return human(downtime_s)
    if unit is not None and not restartable(unit):
        return "— (not a service)"
    if serving is False:
        return "— (no server ran in it)"
    return missing
