"""What several rules ask of the facts (data only: no words)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..facts import (
    Consumer,
    GpuRelease,
    IncidentFacts,
    gpu_label_text,
    held_before,
    left_processes,
)
from ..model import GPU_COMMS, SourceRef, is_container, restartable
from ..timeline import TimelineEvent

#: causes where host memory (the machine's or a cgroup's) ran out
HOST_CAUSES = ("host_oom", "cgroup_oom", "oomd", "earlyoom")
#: a --max-queued-requests at least this large is no bound
UNLIMITED_QUEUE = 2**62


def ref(facts: IncidentFacts, *kinds: str) -> list[SourceRef]:
    """The first evidence line of the first of ``kinds`` the incident has."""
    for kind in kinds:
        for ev in facts.incident.evidence:
            if ev.kind == kind:
                return [ev.ref]
    return []


def spec_algorithm(facts: IncidentFacts) -> str | None:
    """The killed server's speculative-decoding algorithm (``EAGLE3``), if it had one."""
    algo = (facts.config or {}).get("speculative_algorithm")
    if algo:
        return str(algo)
    load = facts.incident.killed_load
    return load.speculative_algorithm if load else None


def released(f: IncidentFacts) -> list[GpuRelease]:
    """The GPUs that held memory before the kill and fell to (nearly) nothing after it."""
    return [g for g in f.gpu_release if g.freed and held_before(g)]


def idle_gpus(f: IncidentFacts) -> list[GpuRelease]:
    """The GPUs that held (nearly) nothing before the kill."""
    return [g for g in f.gpu_release if not held_before(g)]


def gpu_names(gpus: list[GpuRelease]) -> str:
    """``GPUs 0–3``, ``GPU 2``, ``GPUs 0, 2, 5``; bus ids or uuids as they are.

    >>> g = lambda label: GpuRelease(label, 0, 0, None, True)
    >>> gpu_names([g(f"GPU {i}") for i in range(4)]), gpu_names([g("GPU 2")]), gpu_names([g("GPU 0"), g("GPU 5")])
    ('GPUs 0–3', 'GPU 2', 'GPUs 0, 5')
    """
    return gpu_label_text([g.gpu for g in gpus])


def gpu_workload(f: IncidentFacts) -> bool:
    """Whether the killed service used GPUs, as far as the data tells: a server configuration
    or load of it, GPU memory that fell when it died, or a victim named like an inference
    server. GPU samples alone say only that the host has GPUs: GPU advice is not given for a
    data loader, a database or a web server killed beside a server that keeps its GPUs."""
    from ...engines import engines

    inc = f.incident
    if f.config or f.unit_loads is not None:
        return True
    # GPUs emptied at the kill of a service (or container): it was using them (a session's
    # process killed beside a server that died a moment later is not)
    if restartable(inc.unit) and released(f):
        return True
    names = [inc.unit or ""] + [v.comm or "" for v in inc.victims]
    return any(n.lower().startswith(GPU_COMMS) or any(e.names(n) for e in engines().values()) for n in names)


def while_loading(f: IncidentFacts) -> bool:
    """Whether the killed run died before it was ready (it never served)."""
    load = f.incident.killed_load
    return load is not None and load.never_ready


def bigger_consumer(f: IncidentFacts) -> Consumer | None:
    """In a host-wide OOM, the largest consumer of the task table when it is another program
    than the server (a data loader beside it) and held more than the server's own processes.

    The server's own are the victim's name and, when the victim is an inference engine's
    process, every process of that engine: vLLM's ``VLLM::Worker_TP`` ranks beside a killed
    ``VLLM::EngineCor`` are the server, not a neighbour to cap."""
    from .words import engine_of

    victim = f.incident.victim
    if f.incident.cause != "host_oom" or victim is None or not f.consumers:
        return None
    engine = engine_of(f)
    engine_victim = engine.owns_process(victim.comm)

    def own(name: str) -> bool:
        return name == victim.comm or (engine_victim and engine.owns_process(name))

    server_kb = sum(c.rss_kb for c in f.consumers if own(c.name))
    top = next((c for c in f.consumers if not own(c.name)), None)
    return top if top is not None and top.rss_kb > server_kb else None


def limit_kind(f: IncidentFacts) -> str:
    """Which setting limits the killed unit's memory: ``podman``, ``docker`` or ``systemd``
    (the words are the ``memory_limit`` macro's in ``templates/rules/_common.j2``)."""
    box = f.incident.container
    if box is not None and box.runtime == "podman":
        return "podman"
    if box is not None or is_container(f.incident.unit):
        return "docker"
    return "systemd"


def left_running(f: IncidentFacts) -> list[tuple[str, TimelineEvent]]:
    """The unit's processes systemd reported still running after it stopped, or found still in
    its cgroup when it started again: ``pid (name)``, each once."""
    out = []
    seen = set()
    for pid, name, ev in left_processes(f):
        if pid not in seen:
            seen.add(pid)
            out.append((f"pid {pid} ({name})", ev))
    return out


def restarts_found_them(f: IncidentFacts) -> bool:
    """Whether a start of the unit after the kill found its old processes in its cgroup."""
    return any(ev.kind == "left_over" for _pid, _name, ev in left_processes(f))


def death_seen(f: IncidentFacts) -> bool:
    """Whether systemd's account of the unit's death is in the data (a journal covering the
    kill): without it, no restart line proves nothing."""
    inc = f.incident
    if inc.ts is None:
        return False
    if f.undated.death_told():
        return True  # (a journal with no times holding the kill's own lines)
    return any(
        ev.origin == "systemd" and ev.unit == inc.unit and abs((ev.ts - inc.ts).total_seconds()) <= 120
        for ev in f.timeline.events
    )


def operator_started(f: IncidentFacts) -> bool:
    """Whether an operator's ``systemctl start|restart`` of the unit came between the kill's
    run-up and the recovery's start: then it was brought back on purpose, not left down. In a
    journal with no times, one after the kill's own lines, before systemd started the unit."""
    inc = f.incident
    rec = inc.recovery_load
    if inc.ts is None or inc.unit is None:
        return False
    if f.undated.operator_started(inc.container.name if inc.container is not None else inc.unit):
        return True
    until = rec.start_ts if rec is not None and rec.start_ts is not None else inc.recovered_ts or inc.ts
    for ev in f.timeline.events:
        if ev.origin != "operator" or not (inc.ts - timedelta(minutes=15) <= ev.ts <= until):
            continue
        words = ev.message.split()
        if inc.container is not None:
            # docker start|restart|run … <name>, docker compose up
            if inc.container.name in words and {"start", "restart", "run", "up"} & set(words):
                return True
        elif inc.unit in words and ("start" in words or "restart" in words):
            return True
    return False


def refs(rows: list[dict[str, Any]], n: int = 1) -> list[SourceRef]:
    """Citations of the first ``n`` query rows (``source_id``, ``line_no``)."""
    return [SourceRef(int(r["source_id"]), int(r["line_no"])) for r in rows[:n]]
