"""The one generated paragraph that opens every report: what died, why, how long, what
brought service back."""

from __future__ import annotations

import re
from datetime import timedelta, tzinfo

from ..parsers.journal.systemd import oomd_kill, oomd_reason
from ..text.formats import clock, human, size_kb
from ..timeutil import UTC
from .facts import IncidentFacts, blocked_restarts, killed_in_vain, left_processes
from .model import Incident, is_container, killed_process, restartable

CAUSE_WORDS = {
    "cgroup_oom": "the kernel's memory-cgroup OOM killer (the unit hit its memory limit)",
    "host_oom": "the kernel OOM killer (the host ran out of RAM)",
    "gpu_oom": "a CUDA out-of-memory error",
    "oomd": "systemd-oomd (host memory pressure or swap use)",
    "earlyoom": "earlyoom (host RAM below its threshold)",
    "signal": "a signal, with no OOM record",
    "timeout": "systemd after its stop or start timeout ran out (TimeoutStopSec=/TimeoutStartSec=)",
    "gpu_fault": "a GPU fault (an NVIDIA Xid error before it)",
    "crash": "an error in the server itself (nothing killed it)",
    "unknown": "an unknown cause",
}


def summarise(facts: IncidentFacts, zone: tzinfo = UTC) -> str:
    inc = facts.incident
    what = inc.unit or "a process"
    algo = (facts.config or {}).get("speculative_algorithm")
    model = (facts.config or {}).get("model_path")
    desc = ", ".join(x for x in (str(algo) if algo else "", str(model) if model else "") if x)
    box = inc.container
    noun = "container" if box is not None or is_container(inc.unit) else "unit"
    if box is not None:
        # the name an operator knows, the image and the short id `docker ps` shows
        what = f"{box.runtime_name} {box.words()}"
        desc = "; ".join(x for x in (box.details(), desc) if x)
    load = inc.killed_load
    # a start that never became ready was not killed in service: it failed while loading
    loading = load is not None and load.never_ready
    verb, by = ("failed while loading", ", ended by") if loading else ("was killed", " by")
    if inc.cause == "crash":
        verb, by = ("failed while loading" if loading else "crashed"), ", stopped by"
    parts = [
        f"{what}{f' ({desc})' if desc else ''} {verb} on {inc.host or 'the host'} at "
        f"{inc.ts.astimezone(zone):%Y-%m-%d} {clock(inc.ts, zone)}{by} "
        f"{CAUSE_WORDS.get(inc.cause, inc.cause).replace('the unit hit', f'the {noun} hit')}."
        if inc.ts
        else f"{what} died."
    ]
    if inc.cause == "cgroup_oom" and inc.memcg_limit_kb and inc.memcg_usage_kb:
        spare = (
            f" (the host itself still had {size_kb(facts.host_avail_end_mib * 1024)} available)"
            if facts.host_avail_end_mib is not None
            else ""
        )
        parts.append(
            f"Its cgroup used {size_kb(inc.memcg_usage_kb)} of a {size_kb(inc.memcg_limit_kb)} limit: "
            f"the {noun}'s share of host RAM ran out{spare}, not GPU memory."
        )
    elif inc.cause in ("host_oom", "oomd", "earlyoom"):
        parts.append("Host RAM ran out, not GPU memory.")
    elif inc.cause == "gpu_oom":
        parts.append("GPU memory ran out, not host RAM.")
    elif inc.cause in ("gpu_fault", "crash"):
        parts.append(inc.cause_explanation[:1].upper() + inc.cause_explanation[1:] + ".")
    if facts.undated_kills:
        k = facts.undated_kills[0]
        parts.append(
            f"An OOM-killer record of pid {k['victim_pid']} in this unit's cgroup has no time (its boot is "
            "dated by no journal given): most likely this kill — see the recommendations."
        )
    oomd = _oomd_words(inc)
    if oomd:
        parts.append(oomd)
    v = inc.victim
    if v is not None:
        rss = f", {size_kb(v.anon_rss_kb)} anonymous RSS" if v.anon_rss_kb else ""
        others = len(inc.killed_with)
        parts.append(
            f"The kernel killed {v.comm} (pid {v.pid}{rss})"
            + (f" and {others} more process{'es' if others > 1 else ''} of the {noun}" if others else "")
            + "."
        )
        for later in inc.later_kills:
            if later.ts is not None and v.ts is not None:
                parts.append(
                    f"{_secs(later.ts - v.ts)} later it killed {later.comm} (pid {later.pid}) of the same "
                    "unit again, in a record of its own."
                )
    earlier = _earlier_kill(facts)
    if earlier is not None:
        parts.append(earlier)
    repeat = _repeat_words(inc, zone)
    if repeat:
        parts.append(repeat)
    stayed = _stayed_words(facts, zone)
    if stayed:
        parts.append(stayed)
    reboot = _reboot_words(facts, zone)
    if reboot:
        parts.append(reboot)
    gave_up = next(
        (
            ev
            for ev in facts.timeline.events
            if ev.kind == "start_limit_hit" and ev.unit == inc.unit and inc.ts is not None and ev.ts >= inc.ts
        ),
        None,
    )
    if gave_up is not None:
        parts.append(
            f"systemd gave up restarting it at {clock(gave_up.ts, zone)}: its start limit "
            "(StartLimitBurst= starts within StartLimitIntervalSec=) was reached."
        )
    if inc.recovered_ts is not None and inc.recovery_unit:
        load = inc.recovery_load
        how = (
            f"the fallback {inc.recovery_unit}"
            if inc.fallback_unit
            else (f"a restart of {inc.recovery_unit}" if inc.recovery_unit == inc.unit else inc.recovery_unit)
        )
        if box is not None and inc.recovery_unit == inc.unit:
            how = f"a restart of {box.words()}" + (
                f" by {box.runtime_name}'s restart policy" if inc.restart_count else ""
            )
        started = f", started at {clock(load.start_ts, zone)}," if load and load.start_ts else ""
        rb = facts.reboot
        if started and rb is not None and load is not None and load.start_ts and load.start_ts >= rb.up_ts:
            started = started[:-1] + " after the reboot,"
            if how.startswith("a restart of "):
                how = how[len("a restart of ") :]  # the new boot started it, not Restart=
        took = (
            f" after a {load.load_s:.0f} s ({human(load.load_s)}) load"
            if load and load.load_s is not None
            else ""
        )
        killed_model = inc.killed_load.model_path if inc.killed_load is not None else None
        other_model = ""
        if load is not None and load.model_path and killed_model and load.model_path != killed_model:
            served = (facts.config or {}).get("served_model_name")
            if served and served == (facts.recovery_config or {}).get("served_model_name"):
                # the same name to clients (a quantised or smaller copy): clients see no change
                other_model = (
                    f" It loads another checkpoint ({load.model_path}, not {killed_model}) under the "
                    f"same served model name ({served})."
                )
            else:
                other_model = f" It serves another model ({load.model_path}, not {killed_model})."
        guessed = (
            f" ({inc.recovery_unit} is taken as the recovery: the first server ready on this host after the "
            "kill — the killed run's model and port are not in the data, as its start was not logged)"
            if inc.recovery_guessed
            else ""
        )
        parts.append(
            f"Service was down for {human(inc.downtime_s)} until {how}{started} was ready at "
            f"{clock(inc.recovered_ts, zone)}{took}{guessed}.{other_model}"
        )
        if facts.stop_restarted and facts.stop_ts is not None:
            parts.append(
                f"It was out of service from {clock(facts.stop_ts, zone)}, when the serving run was "
                f"stopped to start the one that failed: {human((inc.recovered_ts - facts.stop_ts).total_seconds())} "
                "in all."
            )
    elif is_container(inc.unit):
        name = box.words() if box is not None else inc.unit
        runtime = box.runtime_name if box is not None else "Its runtime"
        n = inc.restart_count
        parts.append(
            f"{runtime} restarted {name} ({n} time{'s' if n > 1 else ''}), but no source shows it serving again."
            if n
            else f"No source shows {name} serving again: {runtime} starts a container again only under a "
            "restart policy (--restart on-failure or unless-stopped), else an operator must."
        )
    elif inc.unit is not None and not restartable(inc.unit):
        parts.append(
            f"{inc.unit} is not a service (a session's or a container's scope, or a slice): "
            "systemd does not start it again."
        )
    elif facts.reboot is not None and facts.reboot.unit_started_ts is not None:
        parts.append(
            f"{inc.unit} was started again at {clock(facts.reboot.unit_started_ts, zone)}, after the "
            "reboot, but no source shows it ready."
        )
    else:
        parts.append("No source shows the service coming back.")
    return " ".join(p for p in parts if p)


def _repeat_words(inc: Incident, zone: tzinfo) -> str | None:
    """A repeat: the same unit killed before on this host in the week (an hour apart or more:
    a kill within the hour is one shortage, told by the restart loop's words)."""
    week = [(ts, cause) for ts, cause in inc.earlier_week if inc.ts and inc.ts - ts > timedelta(hours=1)]
    if not week or inc.ts is None:
        return None
    last_ts, last_cause = week[0]
    n = len(inc.earlier_week) + 1
    ordinal = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(n, f"{n}th")
    by = "the same cause" if last_cause == inc.cause else f"by {CAUSE_WORDS.get(last_cause, last_cause)}"
    return (
        f"It is the {ordinal} kill of this unit on this host in 7 days — the last, "
        f"{_secs(inc.ts - last_ts)} before, at {last_ts.astimezone(zone):%Y-%m-%d} {clock(last_ts, zone)}, "
        f"{by}."
    )


def _reboot_words(facts: IncidentFacts, zone: tzinfo) -> str | None:
    """The host's reboot after the kill: when the old boot was last heard of and when the new
    one began (its start, from a journal's monotonic clock, or its first line)."""
    rb, inc = facts.reboot, facts.incident
    if rb is None or inc.ts is None:
        return None
    after = human((rb.up_ts - inc.ts).total_seconds())
    text = (
        f"The host was rebooted: {rb.boot_words} began at {clock(rb.up_ts, zone)}, {after} after the kill"
        if rb.exact
        else f"The host was rebooted: the first line of {rb.boot_words} is at {clock(rb.up_ts, zone)}, "
        f"{after} after the kill"
    )
    if rb.last_old_ts is not None:
        text += f" (the previous boot's last line at {clock(rb.last_old_ts, zone)})"
    hung = any(ev.kind == "hung_task" for ev in facts.timeline.events if inc.ts <= ev.ts < rb.up_ts)
    if hung:
        text += "; before it the kernel reported tasks hung"
    return text + "."


def downtime_text(downtime_s: float | None, unit: str | None, missing: str = "not restored") -> str:
    """A kill's downtime in words: ``missing`` when the service is not seen back, a dash for a
    unit that is no service (a session's scope or a slice: nothing to be down; a container is
    a service, its runtime's)."""
    if downtime_s is not None:
        return human(downtime_s)
    if unit is not None and not restartable(unit):
        return "— (not a service)"
    return missing


def _secs(delta: timedelta) -> str:
    return human(delta.total_seconds())


#: how long before a kill another process's kill counts as the same shortage
EARLIER_KILL_S = 600.0


def _stayed_words(facts: IncidentFacts, zone: tzinfo) -> str | None:
    """The unit's processes that outlived it holding GPU memory (systemd left them running, or
    could not end them), the restarts they made fail, and when the memory was freed."""
    inc = facts.incident
    if inc.ts is None or not any(g.freed is False for g in facts.gpu_release):
        return None
    left = left_processes(facts)
    pids = list(dict.fromkeys(pid for pid, _name, _ev in left))
    if not pids:
        return None
    listed = ", ".join(pids[:6]) + (", …" if len(pids) > 6 else "")
    how = (
        "outlived systemd's final SIGKILL"
        + ("" if facts.gpu_freed_late is not None else " (stuck in the kernel)")
        if killed_in_vain(facts)
        else "stayed running after the unit stopped"
    )
    late = facts.gpu_freed_late
    text = f"GPU memory was left behind: {len(pids)} of its processes (pids {listed}) {how} and held it"
    if late is None and facts.reboot is not None:
        text += " until the host was rebooted"
    blocked = blocked_restarts(facts)
    if blocked:
        text += (
            f"; {'the restart' if blocked == 1 else f'the {blocked} restarts'} that found them still in "
            "the unit's cgroup never became ready"
        )
    elif any(ev.kind == "left_over" for _pid, _name, ev in left):
        text += "; a restart found them still in its cgroup"
    if late is not None:
        text += (
            f". The memory was freed at {clock(late.ts, zone)} "
            f"({human((late.ts - inc.ts).total_seconds())} after the kill, nvidia-smi)"
        )
        if late.command is not None:
            text += f", after the operator ran `{_short_command(late.command.message)}` at {clock(late.command.ts, zone)}"
    return text + "."


def _short_command(command: str) -> str:
    """A command line as an operator typed it: the program's name, not its path, and at most
    60 characters.

    >>> _short_command("/usr/bin/kill -9 60288 60289")
    'kill -9 60288 60289'
    """
    prog, _, rest = command.strip().partition(" ")
    text = f"{prog.rsplit('/', 1)[-1]} {rest}".strip()
    return text if len(text) <= 60 else text[:59] + "…"


def _oomd_words(inc: Incident) -> str | None:
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
    if cgroup is None or why is None:
        return f"systemd-oomd killed every process of {inc.unit or 'the unit'}."
    return f"systemd-oomd killed every process of {cgroup} {in_gib(why)}."


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


_OOMD_BYTES = re.compile(r"(\w+ used) \((\d+)\) / total \((\d+)\)")


def _earlier_kill(facts: IncidentFacts) -> str | None:
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
    where = f" of {ev.unit}" if ev.unit and ev.unit != inc.unit else ""
    return (
        f"{_secs(inc.ts - ev.ts)} before, the kernel had killed {comm} (pid {pid}){where}: "
        "the same shortage took another process first."
    )
