"""Incidents: one per kill, merging what every source says about it.

Pure functions over rows of ``kill_evidence.sql``, the inferred clock offsets and the service
loads. The same kill seen twice (dmesg and the journal copy) is one incident; a storm (several
victims of one unit within seconds, or ``memory.oom.group``) is one incident with several
victims; a unit's systemd words and its server's last words attach to the kill they follow.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..engines import get_engine
from ..parsers.kubernetes.names import pod_cgroup
from ..text.formats import size_kb
from .attempts import attempt_errors, start_attempts, start_limit
from .model import Evidence, Incident, Load, Victim

#: evidence that can start an incident; everything else only attaches to one
PRIMARY_KINDS = {
    "oom_kill",
    "unit_oom_killed",
    "unit_oomd_killed",
    "unit_main_exited",
    "unit_failed",
    "server_scheduler_killed",
    "server_subprocess_crashed",
    "server_cuda_oom",
    "cuda_oom",
    # the server stopping on its own error (a crash): a server process's traceback, a scheduler
    # that exited (not killed), the server's watchdog, a failed initialisation
    "server_exception",
    "server_scheduler_dead",
    "server_watchdog",
    "server_initialization_failed",
    # Kubernetes: a container's termination, the runtime's non-zero exit, an eviction, a probe kill
    "k8s_terminated",
    "k8s_task_exit",
    "k8s_evicted",
    "k8s_probe_kill",
    # a server unit that failed before it was ready: systemd's failure (an exit code, its start
    # limit) when the unit's last load never became ready (see start_failures)
    "unit_start_failed",
}
#: the crash evidence above, by how firmly it says why
CRASH_KINDS = (
    "server_exception",
    "server_watchdog",
    "server_scheduler_dead",
    "server_initialization_failed",
)
_DEATH_RESULTS = {"oom-kill", "signal", "core-dump", "watchdog"}

MERGE_S = 120.0  # evidence of one unit within this many seconds is one incident
#: systemd's ``Failed with result`` of a death comes after the stop's timeouts (final-sigterm,
#: final-sigkill: TimeoutStopSec= each) — as long as this after the kill, it is that death's
LATE_FAILED_S = 900.0


#: cgroup path components systemd names after units
_UNIT_SUFFIXES = (".service", ".scope", ".slice", ".socket", ".mount", ".swap")
#: scopes container runtimes create under systemd's cgroup driver: their limit is the container's
_CONTAINER_SCOPES = ("docker-", "cri-containerd-", "crio-", "libpod-")


def limit_setting(memcg: str | None) -> str:
    """Which setting a memory cgroup's limit comes from, judged by its path: a systemd unit's
    cgroup (``/system.slice/x.service``) has its unit's ``MemoryMax=``; a Docker container's
    (``docker-<id>.scope`` under systemd's cgroup driver, ``/docker/<id>`` under cgroupfs) its
    ``--memory``; podman's (``libpod-<id>.scope``) its ``--memory``; anything else (another
    runtime's, an unknown path) may be a container limit.

    >>> limit_setting("/system.slice/k26-eagle3.service")
    "the unit's MemoryMax=, or MemoryLimit= on cgroup v1"
    >>> limit_setting("/docker/0123abcd")
    "the container's memory limit: docker run --memory, compose mem_limit"
    >>> limit_setting("/system.slice/docker-0123abcd.scope")
    "the container's memory limit: docker run --memory, compose mem_limit"
    >>> limit_setting("/kubepods.slice/kubepods-pod1.slice/cri-containerd-0123.scope")
    'MemoryMax= or a container limit'
    >>> limit_setting("/kubepods/pod8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f/" + "ab" * 32)
    "the container's resources.limits.memory"
    """
    pod = pod_cgroup(memcg)
    if pod is not None and (pod.pod_uid or "kubepods" in (memcg or "").rsplit("/", 1)[-1]):
        return {
            "container": "the container's resources.limits.memory",
            "pod": "the pod's limit: the sum of its containers' limits, or spec.resources",
        }.get(pod.level, "the node's allocatable memory for pods")
    runtime = container_runtime(memcg)
    if runtime == "docker":
        return "the container's memory limit: docker run --memory, compose mem_limit"
    if runtime == "podman":
        return "the container's memory limit: podman run --memory"
    leaf = (memcg or "").rstrip("/").rsplit("/", 1)[-1]
    if (
        leaf.endswith(_UNIT_SUFFIXES)
        and not leaf.startswith(_CONTAINER_SCOPES)
        and "kubepods" not in (memcg or "")
    ):
        return "the unit's MemoryMax=, or MemoryLimit= on cgroup v1"
    return "MemoryMax= or a container limit"


def container_runtime(memcg: str | None) -> str | None:
    """``docker`` or ``podman`` when a memory cgroup is a container of theirs, else None.

    >>> container_runtime("/system.slice/docker-0123abcd.scope"), container_runtime("/docker/0123")
    ('docker', 'docker')
    >>> container_runtime("/machine.slice/libpod-0123.scope"), container_runtime("/system.slice/a.service")
    ('podman', None)
    """
    path = (memcg or "").rstrip("/")
    leaf = path.rsplit("/", 1)[-1]
    if "kubepods" in path:
        return None  # the kubelet's containers (containerd, CRI-O): the pod's limits
    if (leaf.startswith("docker-") and leaf.endswith(".scope")) or path.startswith("/docker/"):
        return "docker"
    if leaf.startswith("libpod-") and leaf.endswith(".scope"):
        return "podman"
    return None


def evidence_from_rows(rows: Iterable[dict[str, Any]]) -> list[Evidence]:
    """Turn ``kill_evidence.sql`` rows into :class:`Evidence` (slices dropped, kinds named)."""
    out: list[Evidence] = []
    for r in rows:
        kind = r["kind"]
        unit = r.get("unit")
        if kind == "unit_event":
            action = r["action"]
            if unit and unit.endswith(".slice"):
                continue  # systemd repeats OOM sentences for ancestor slices; the leaf is kept
            if action == "failed" and r.get("result") not in _DEATH_RESULTS:
                kind = "unit_failed_other"
            elif action == "main_exited" and r.get("code") == "exited":
                kind = "unit_error_exit"  # (kept by start_failures when a start failed)
            else:
                kind = f"unit_{action}"
        out.append(
            Evidence(
                kind=kind,
                ts=r["ts"],
                source_id=int(r["source_id"]),
                line_no=int(r["line_no"]),
                detail=str(r.get("message") or ""),
                host=r.get("host"),
                unit=unit,
                raw=dict(r),
            )
        )
    return out


def _adj(ev: Evidence, offsets: dict[int, float]) -> datetime | None:
    if ev.ts is None:
        return None
    off = offsets.get(ev.source_id, 0.0)
    return ev.ts - timedelta(seconds=off) if off else ev.ts


@dataclass
class _Cluster:
    host: str | None
    unit: str | None
    first: datetime
    last: datetime
    items: list[Evidence] = field(default_factory=list)


def _host_match(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


def _death_without_result(clusters: list[_Cluster], ev: Evidence, t: datetime) -> _Cluster | None:
    """The unit's last death, if systemd has not yet said how it ended: one ``Failed with
    result`` per failed activation, logged once the stop's timeouts ran out (a process stuck in
    the kernel keeps it minutes after the kill). A later death logs its own kill line first."""
    for c in reversed(clusters):
        if c.unit == ev.unit and _host_match(c.host, ev.host):
            settled = any(i.kind in ("unit_failed", "unit_failed_other") for i in c.items)
            return c if not settled and t - c.last <= timedelta(seconds=LATE_FAILED_S) else None
    return None


def cluster_evidence(
    evidence: Sequence[Evidence], offsets: dict[int, float] | None = None, merge_s: float = MERGE_S
) -> list[list[Evidence]]:
    """Group evidence into incidents: same host, same unit (or no unit), close in time.

    >>> from datetime import UTC
    >>> t = datetime(2025, 5, 25, 20, 17, 19, tzinfo=UTC)
    >>> ev = [Evidence("oom_kill", t, 1, 10, "k", "h", "a.service"),
    ...       Evidence("unit_main_exited", t + timedelta(seconds=1), 2, 5, "m", "h", "a.service"),
    ...       Evidence("oom_kill", t + timedelta(hours=1), 1, 90, "k", "h", "a.service")]
    >>> [len(c) for c in cluster_evidence(ev)]
    [2, 1]
    """
    offsets = offsets or {}
    timed = [(t, e) for e in evidence if (t := _adj(e, offsets)) is not None]
    timed.sort(key=lambda p: (p[0], p[1].source_id, p[1].line_no))
    clusters: list[_Cluster] = []
    window = timedelta(seconds=merge_s)
    deferred: list[tuple[datetime, Evidence]] = []
    for t, ev in timed:
        if ev.kind not in PRIMARY_KINDS:
            deferred.append((t, ev))
            continue
        if ev.unit is None:
            deferred.append((t, ev))
            continue
        target = None
        for c in reversed(clusters):
            if c.unit == ev.unit and _host_match(c.host, ev.host) and t - c.last <= window:
                target = c
                break
        if target is None and ev.kind == "unit_failed":
            target = _death_without_result(clusters, ev, t)
        if target is None:
            clusters.append(_Cluster(ev.host, ev.unit, t, t, [ev]))
        else:
            target.items.append(ev)
            target.last = max(target.last, t)
            target.host = target.host or ev.host
    # evidence without a unit (old kernels, bare server logs) or secondary evidence joins the
    # nearest cluster of the same host; unit-less primary evidence may start its own
    for t, ev in deferred:
        best: _Cluster | None = None
        best_gap: timedelta | None = None
        for c in clusters:
            if not _host_match(c.host, ev.host):
                continue
            if ev.unit is not None and c.unit is not None and ev.unit != c.unit:
                continue
            gap = max(c.first - t, t - c.last, timedelta(0))
            if gap <= window and (best_gap is None or gap < best_gap):
                best, best_gap = c, gap
        if best is not None:
            best.items.append(ev)
            best.first, best.last = min(best.first, t), max(best.last, t)
        elif ev.kind in PRIMARY_KINDS:
            clusters.append(_Cluster(ev.host, ev.unit, t, t, [ev]))
    clusters.sort(key=lambda c: c.first)
    return [sorted(c.items, key=lambda e: (_adj(e, offsets) or c.first, e.line_no)) for c in clusters]


def victims_of(items: Sequence[Evidence]) -> list[Victim]:
    """Killed processes, the same pid reported by two sources counted once. The first kill of
    each kernel record is the one the kernel chose (the others of a record are killed with it,
    ``memory.oom.group``); a kill without a record (earlyoom) is chosen when it is first;
    systemd-oomd names a cgroup, not a process, so its kill has no victim."""
    seen: dict[tuple[int | None, str | None], Victim] = {}
    first_of: dict[tuple[int, object], tuple[int, int | None, str | None]] = {}
    for ev in items:
        if ev.kind == "oom_kill" and ev.raw.get("oom_id") is not None:
            rec = (ev.source_id, ev.raw["oom_id"])
            if rec not in first_of or ev.line_no < first_of[rec][0]:
                first_of[rec] = (ev.line_no, ev.raw.get("pid"), ev.raw.get("comm"))
    chosen = {(pid, comm) for _, pid, comm in first_of.values()}
    richness: dict[tuple[int | None, str | None], int] = {}
    for ev in items:
        if ev.kind != "oom_kill":
            continue
        r = ev.raw
        key = (r.get("pid"), r.get("comm"))
        if key == (None, None):
            # a kernel record whose kill line is elsewhere (cut by a rotation), or systemd-oomd,
            # which kills a whole cgroup and names no process: no victim here
            continue
        # the same kill in several sources: the most complete record stands for it (a record
        # cut by a rotation lacks its header's memory figures)
        rich = sum(
            r.get(c) is not None
            for c in ("memcg_usage_kb", "memcg_limit_kb", "scope", "anon_rss_kb", "vm_rss_kb")
        )
        if key in seen and rich <= richness[key]:
            continue
        richness[key] = rich
        if key in seen:
            v = seen[key]
            v.source_id, v.line_no, v.oom_id, v.anon_rss_kb, v.vm_rss_kb = (
                ev.source_id,
                ev.line_no,
                r.get("oom_id"),
                r.get("anon_rss_kb"),
                r.get("vm_rss_kb"),
            )
            continue
        seen[key] = Victim(
            pid=r.get("pid"),
            comm=r.get("comm"),
            ts=ev.ts,
            anon_rss_kb=r.get("anon_rss_kb"),
            source_id=ev.source_id,
            line_no=ev.line_no,
            chosen=key in chosen,
            oom_id=r.get("oom_id"),
            vm_rss_kb=r.get("vm_rss_kb"),
        )
    victims = list(seen.values())
    if victims and not any(v.chosen for v in victims):
        victims[0].chosen = True
    return victims


def classify(items: Sequence[Evidence]) -> tuple[str, float, str | None, str | None, str]:
    """(cause, confidence, killer, scope, one-sentence explanation) of one incident."""
    kernel = [e for e in items if e.kind == "oom_kill" and e.raw.get("killer") == "kernel"]
    oomd = [e for e in items if e.kind == "oom_kill" and e.raw.get("killer") == "systemd-oomd"]
    earlyoom = [e for e in items if e.kind == "oom_kill" and e.raw.get("killer") == "earlyoom"]
    unit_oom = [e for e in items if e.kind == "unit_oom_killed"]
    systemd_says = bool(unit_oom) or any(
        e.kind == "unit_failed" and e.raw.get("result") == "oom-kill" for e in items
    )
    cuda = [e for e in items if e.kind in ("cuda_oom", "server_cuda_oom")]
    signal = [
        e
        for e in items
        if (e.kind == "unit_main_exited" and e.raw.get("code") in ("killed", "dumped"))
        or (e.kind == "unit_failed" and e.raw.get("result") in ("signal", "core-dump"))
        or e.kind in ("server_scheduler_killed", "server_subprocess_crashed")
    ]
    if kernel:
        scope = kernel[0].raw.get("scope")
        msg = kernel[0].detail
        if scope is None:
            scope = "memcg" if msg.startswith("Memory cgroup out of memory") else None
        conf = 0.97 if systemd_says or signal or _k8s_says_oom(items) else 0.9
        if scope == "memcg":
            limit = kernel[0].raw.get("memcg_limit_kb")
            what = f" of {size_kb(limit)}" if limit else ""
            memcg = kernel[0].raw.get("oom_memcg")
            owner = cgroup_owner(memcg)
            return (
                "cgroup_oom",
                conf,
                "kernel",
                scope,
                f"the kernel's memory-cgroup OOM killer fired: the {owner}'s cgroup reached its memory "
                f"limit{what} ({limit_setting(memcg)}) — host RAM, not GPU memory{_k8s_lie(items)}",
            )
        if scope in ("cpuset", "mempolicy"):
            return (
                "host_oom",
                conf - 0.1,
                "kernel",
                scope,
                f"the kernel OOM killer fired under a {scope} constraint: the NUMA nodes the task "
                "may use ran out of host RAM — not GPU memory",
            )
        node = " (the node's memory, not the pod's limit: the kernel chose the victim among every pod)"
        return (
            "host_oom",
            conf if scope == "global" else 0.75,
            "kernel",
            scope,
            "the kernel OOM killer fired for the whole machine: host RAM (and swap) ran out — not GPU memory"
            + (node if any(e.unit and e.unit.startswith("k8s:") for e in kernel) else "")
            + _k8s_lie(items),
        )
    if oomd:
        return (
            "oomd",
            0.9,
            "systemd-oomd",
            None,
            "systemd-oomd killed the unit's cgroup because of memory pressure or swap use "
            "(host RAM, before the kernel OOM killer would have)",
        )
    if earlyoom:
        return (
            "earlyoom",
            0.9,
            "earlyoom",
            None,
            "earlyoom killed the process because available host RAM fell below its threshold",
        )
    if systemd_says:
        return (
            "unknown",
            0.6,
            "kernel",
            None,
            "systemd reports that the kernel OOM killer killed a process of the unit, but no "
            "kernel record was ingested, so host-wide and cgroup-limit OOMs cannot be told apart "
            "(add dmesg or `journalctl -k` for the window)",
        )
    k8s = kubernetes_cause(items)
    if k8s is not None:
        return k8s
    if cuda:
        return (
            "gpu_oom",
            0.8 if signal or len(items) > 1 else 0.7,
            None,
            None,
            "a CUDA out-of-memory error in the server, with no kernel OOM kill: GPU memory ran "
            "out, not host RAM",
        )
    timeout = [
        e
        for e in items
        if e.kind in ("unit_failed", "unit_failed_other") and e.raw.get("result") == "timeout"
    ]
    if timeout:
        return (
            "timeout",
            0.9,
            "systemd",
            None,
            "systemd killed the unit because it did not stop (or start) within its timeout "
            "(TimeoutStopSec= / TimeoutStartSec=, 90 s by default) — not an OOM kill",
        )
    crash = [e for e in items if e.kind in CRASH_KINDS]
    if crash:
        return ("crash", 0.8 if signal or len(crash) > 1 else 0.7, None, None, crash_words(crash))
    if any(e.kind == "unit_start_failed" for e in items) and not signal:
        return ("crash", 0.7, None, None, start_failure_words(items))
    if signal:
        return (
            "signal",
            0.6,
            None,
            None,
            "the process was killed by a signal and no OOM killer left a record (an operator, "
            "a watchdog or another process sent it)",
        )
    return ("unknown", 0.3, None, None, "the service died and no source says why")


def cgroup_owner(memcg: str | None) -> str:
    """Whose cgroup a memory cgroup path is: a pod's container, a pod, a container, a unit.

    >>> cgroup_owner("/kubepods/pod8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f"), cgroup_owner("/docker/1")
    ('pod', 'container')
    """
    pod = pod_cgroup(memcg)
    if pod is not None and (pod.pod_uid or "kubepods" in (memcg or "").rsplit("/", 1)[-1]):
        return {"container": "container", "pod": "pod"}.get(pod.level, "node's pods")
    return "container" if container_runtime(memcg) else "unit"


def _k8s_says_oom(items: Sequence[Evidence]) -> bool:
    return any(e.kind in ("k8s_task_oom", "k8s_system_oom", "k8s_oom_killing") for e in items) or any(
        e.kind == "k8s_terminated" and e.raw.get("action") == "OOMKilled" for e in items
    )


def _k8s_lie(items: Sequence[Evidence]) -> str:
    """The runtime's termination reason when the kernel's record contradicts it."""
    oom = [e for e in items if e.kind == "k8s_terminated" and e.raw.get("action") == "OOMKilled"]
    if oom and oom[0].raw.get("status") not in (None, "", "137"):
        return (
            f"; the container's status says OOMKilled with exit code {oom[0].raw.get('status')}: the kernel "
            "killed one of its processes and its main process then exited by itself"
        )
    said = [e for e in items if e.kind == "k8s_terminated" and e.raw.get("action") not in (None, "OOMKilled")]
    if not said:
        return ""
    return (
        f"; the container's status says {said[0].raw.get('action')} (exit code {said[0].raw.get('status')}),"
        " but the kernel's record shows an OOM kill: the runtime did not see it"
    )


def kubernetes_cause(items: Sequence[Evidence]) -> tuple[str, float, str | None, str | None, str] | None:
    """A Kubernetes death no OOM killer's record explains: an eviction, a probe kill, or a
    termination the runtime calls ``OOMKilled`` with no kernel record ingested."""
    kinds = {e.kind: e for e in reversed(items)}
    if "k8s_evicted" in kinds:
        return (
            "eviction",
            0.9,
            "kubelet",
            None,
            "kubelet evicted the pod because the node's available memory fell below its eviction "
            "threshold (node memory pressure): kubelet stopped it, not the kernel's OOM killer, and "
            "not the container's own limit",
        )
    if "k8s_probe_kill" in kinds:
        ev = kinds["k8s_probe_kill"]
        probe = (ev.raw.get("result") or "a").lower()
        return (
            "probe_kill",
            0.9,
            "kubelet",
            None,
            f"kubelet killed the container because its {probe} probe kept failing — no OOM record: "
            "the server was not answering (still loading, or hung), not out of memory",
        )
    term = kinds.get("k8s_terminated")
    if term is not None and term.raw.get("action") == "OOMKilled":
        return (
            "cgroup_oom",
            0.7,
            "kernel",
            "memcg",
            "the container runtime reports OOMKilled (its cgroup counted an OOM kill), but no kernel "
            "record was ingested: the limit that fired cannot be told (add dmesg or `journalctl -k`)",
        )
    return None


def cause_line(items: Sequence[Evidence]) -> Evidence | None:
    """The server's line a crash's explanation rests on: the first of its firmest kind (as
    :func:`crash_words` takes it), else the first error a failed start's server wrote."""
    order = (*CRASH_KINDS, "server_start_error")
    return min((e for e in items if e.kind in order), key=lambda e: order.index(e.kind), default=None)


def crash_words(crash: Sequence[Evidence]) -> str:
    """What the server's own lines say stopped it (the firmest kind of evidence first)."""
    first = min(crash, key=lambda e: CRASH_KINDS.index(e.kind))
    raw = first.raw
    try:
        detail = json.loads(raw.get("server_detail") or "{}")
    except ValueError:
        detail = {}
    who = detail.get("who") or "a server process"
    engine = get_engine(raw.get("engine"))
    if first.kind == "server_exception":
        phase = raw.get("phase")
        during = f" during {_PHASE_WORDS.get(phase, phase)}" if phase else ""
        text = first.detail.strip()
        if text.startswith("Traceback (incomplete"):
            text = "its traceback is cut before the exception line"
        if len(text) > 200:
            text = text[:197] + "…"
        elif text.endswith(".") and not text.endswith(".."):
            text = text[:-1]  # (the sentence goes on after it: "… config.json — and …")
        what = (
            "a server process aborted in C++ (an exception nothing caught)"
            if who == "C++ runtime"
            else f"{engine.label}'s {who} stopped on an error"
        )
        return (
            f"{what}{during} — {text} — and the server shut itself down: a crash, not a kill by an OOM killer"
        )
    if first.kind == "server_watchdog":
        return (
            f"{engine.label}'s watchdog found the {who.lower()} stuck (no step within "
            f"{engine.setting('watchdog_timeout').flag or 'its timeout'}) and "
            "killed the server: a hang — a stuck collective (NCCL), a GPU fault or a step slower than "
            "the timeout — not an OOM kill"
        )
    if first.kind == "server_scheduler_dead":
        code = raw.get("status")  # kill_evidence.sql carries the server's exit code there
        how = f" with exit code {code}" if code not in (None, "") else ""
        return (
            f"a scheduler process of the server exited{how} and the server shut itself down: a crash "
            "(its own error, or a signal it raised: -6 is an abort, -11 a segfault), not an OOM kill"
        )
    return "the server's initialisation failed and it shut itself down: an error, not an OOM kill"


_PHASE_WORDS = {
    "weights": "weight loading",
    "kv_pool": "the KV-cache allocation",
    "cuda_graph": "CUDA-graph capture",
    "init": "initialisation",
    "warmup": "warm-up",
    "runtime": "serving",
}


#: NVIDIA Xids that mean the GPU itself failed — hardware, driver or firmware — and what they
#: say; an application's own faults (13, 31, 43) and the cleanup after a death (45) are not
GPU_FAULT_XIDS: dict[int, str] = {
    48: "double-bit ECC error",
    61: "GPU micro-controller breakpoint",
    62: "GPU micro-controller halt",
    63: "ECC page retirement / row remapping event",
    64: "ECC page retirement / row remapping failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
    140: "unrecovered ECC error",
}
#: how long before a death a GPU fault is looked for (a hung collective waits out NCCL's and
#: servers' watchdogs: 5–10 min by default)
GPU_FAULT_LOOK_S = 1800.0
#: causes a GPU fault before the death explains better (an OOM kill explains itself)
FAULT_OVERRIDES = ("signal", "unknown", "timeout", "crash")


def attribute_gpu_fault(inc: Incident, xids: Sequence[dict[str, Any]]) -> bool:
    """Make a GPU fault (rows of ``gpu_faults_before.sql``, the earliest first) the incident's
    cause when nothing better explains the death; its first line joins the evidence."""
    if not xids or inc.cause not in FAULT_OVERRIDES or inc.ts is None:
        return False
    first = xids[0]
    codes = sorted({int(x["xid"]) for x in xids})
    gpus = sorted({str(x["bus_id"]) for x in xids if x["bus_id"]})
    before = (inc.ts - first["ts"]).total_seconds()
    when = f"{before / 60:.0f} min" if before >= 90 else f"{before:.0f} s"
    named = "; ".join(f"Xid {c} ({GPU_FAULT_XIDS.get(c, 'GPU fault')})" for c in codes)
    on = f" on GPU {', '.join(gpus)}" if gpus else ""
    inc.cause, inc.confidence, inc.killer, inc.scope = "gpu_fault", 0.85, None, None
    inc.cause_explanation = (
        f"the NVIDIA driver reported {named}{on}, the first {when} before the death: a GPU failed "
        "(hardware, driver or firmware) and the server died of it — not a memory shortage"
    )
    inc.evidence.insert(
        0,
        Evidence(
            kind="xid",
            ts=first["ts"],
            source_id=int(first["source_id"]),
            line_no=int(first["line_no"]),
            detail=str(first["message"] or ""),
            host=first["host"],
            unit=None,
            raw=dict(first),
        ),
    )
    return True


#: the unit's death that dates a failure whose own line has no time of its own
_DEATHS = ("unit_failed", "unit_start_failed", "unit_main_exited", "unit_failed_other")
#: how long after an undated failure line's lower bound its unit's death may still date it
UNDATED_DEATH_WITHIN = timedelta(seconds=60)


def _undated_until_death(
    items: Sequence[Evidence], offsets: dict[int, float], first: datetime, at_first: list[Evidence]
) -> datetime | None:
    """A first evidence whose line has no time of its own (a traceback's ``CUDA out of memory``
    takes the last stamped line's: a lower bound, seconds or a minute early) is dated by its
    unit's death that systemd stamps soon after it: the earliest within
    :data:`UNDATED_DEATH_WITHIN`. None when the first evidence has its own time."""
    if not at_first or any(e.raw.get("ts_inferred") != "previous" for e in at_first):
        return None
    units = {e.unit for e in at_first}
    deaths = [
        t
        for e in items
        if e.kind in _DEATHS
        and (e.unit in units or None in units)
        and (t := _adj(e, offsets)) is not None
        and first < t <= first + UNDATED_DEATH_WITHIN
    ]
    return min(deaths) if deaths else None


def kill_time(items: Sequence[Evidence], offsets: dict[int, float]) -> datetime | None:
    """The kill instant: the kernel's kill line when there is one, else the first evidence (one
    with no time of its own dated by its unit's death, :func:`_undated_until_death`)."""
    for kinds in (("oom_kill",), ("unit_oom_killed", "unit_main_exited"), tuple(PRIMARY_KINDS)):
        dated = [(t, e) for e in items if e.kind in kinds and (t := _adj(e, offsets)) is not None]
        times = [t for t, _ in dated]
        if times:
            first = min(times)
            at_first = [e for t, e in dated if t == first]
            death = _undated_until_death(items, offsets, first, at_first)
            if death is not None:
                return death
            if first.microsecond == 0:
                # a stamp in whole seconds (short-iso) is truncated: the same line stamped to the
                # microsecond by another source (export, dmesg) within that second is the time
                finer = [
                    t for t in times if t.microsecond and timedelta(0) < t - first < timedelta(seconds=1)
                ]
                if finer:
                    return min(finer)
            return first
    return None


#: how soon after a kill another unit's server, ready, is taken as its recovery when nothing
#: tells what the killed run served
GUESS_WITHIN = timedelta(hours=1)


def find_recovery(
    incident_unit: str | None,
    host: str | None,
    kill_ts: datetime,
    loads: Sequence[Load],
    killed_load: Load | None,
) -> tuple[Load | None, bool]:
    """The first load after the kill that brought service back: the same unit, or another unit
    serving the same model (same model path or port) — or, when neither the killed run's model
    nor its port is in the data (its log begins after its start), the first server of another
    unit ready on the host within :data:`GUESS_WITHIN` of the kill. Returns (load, is_fallback)."""
    model = killed_load.model_path if killed_load else None
    port = killed_load.port if killed_load else None
    unknown = model is None and port is None
    best: Load | None = None
    guess: Load | None = None
    for ld in loads:
        if ld.outcome != "ready" or ld.ready_ts is None or ld.start_ts is None:
            continue
        if not _host_match(host, ld.host):
            continue
        if ld.start_ts < kill_ts - timedelta(seconds=5) or ld.ready_ts <= kill_ts:
            continue
        same_unit = incident_unit is not None and ld.unit == incident_unit
        same_model = model is not None and ld.model_path == model
        same_port = port is not None and ld.port == port
        if not (same_unit or same_model or same_port):
            if (
                unknown
                and ld.start_ts - kill_ts <= GUESS_WITHIN
                and (guess is None or ld.ready_ts < (guess.ready_ts or ld.ready_ts))
            ):
                guess = ld  # only when nothing surer is found
            continue
        if best is None or ld.ready_ts < (best.ready_ts or ld.ready_ts):
            best = ld
    best = best or guess
    if best is None:
        return None, False
    return best, best.unit != incident_unit


def load_before(
    unit: str | None, kill_ts: datetime, loads: Sequence[Load], host: str | None = None
) -> Load | None:
    """The load of ``unit`` on ``host`` that was serving (or starting) when it was killed: the
    last to start before the kill. One that starts in the kill's very second is the restart
    (systemd's default RestartSec=100ms, and stamps in whole seconds) unless no load started
    before."""
    best = same_second = None
    second = kill_ts.replace(microsecond=0)
    for ld in loads:
        if ld.unit != unit or ld.start_ts is None or ld.start_ts > kill_ts or not _host_match(host, ld.host):
            continue
        if ld.start_ts >= second:
            same_second = same_second or ld
        elif best is None or (best.start_ts is not None and ld.start_ts > best.start_ts):
            best = ld
    return best or same_second


#: systemd's results of a failed start (the main process exited with an error, the start limit
#: was hit, the start timed out is a timeout of its own)
_START_RESULTS = {"exit-code", "start-limit-hit", "resources", "exec-condition", None}
#: a failure this long after a load's start may still be that start's
_START_LOOK = timedelta(hours=2)


#: evidence of a start that failed, named so when the unit's last start never became ready
#: (else dropped: a serving run's error exit or bare traceback is no evidence of its death)
_OF_FAILED_START = {"unit_error_exit": "unit_start_exit", "server_bare_exception": "server_start_error"}


def start_failures(evidence: Sequence[Evidence], loads: Sequence[Load]) -> list[Evidence]:
    """``evidence`` with systemd's failures of a server unit that never became ready since it
    started (``Failed with result 'exit-code'``, ``'start-limit-hit'``) made ``unit_start_failed``:
    a start that failed is an incident (a wrong model path, a missing file), where the same words
    of a oneshot, a timer's job or a unit that was serving are not. Each attempt's error exit
    (``unit_start_exit``: its attempts are counted by them) and the traceback its server wrote
    (``server_start_error``) join it."""
    out = []
    for ev in evidence:
        failed = ev.kind == "unit_failed_other" and ev.raw.get("result") in _START_RESULTS
        attempt = ev.kind in _OF_FAILED_START
        if (failed or attempt or ev.kind == "unit_start_limit_hit") and ev.ts is not None and ev.unit:
            last = _last_load_before(ev, loads)
            if last is not None and last.outcome != "ready":
                ev = Evidence(**{**ev.__dict__, "kind": _OF_FAILED_START.get(ev.kind, "unit_start_failed")})
            elif attempt:
                continue
        elif attempt:
            continue
        out.append(ev)
    return out


def _last_load_before(ev: Evidence, loads: Sequence[Load]) -> Load | None:
    assert ev.ts is not None
    mine = [
        ld
        for ld in loads
        if ld.unit == ev.unit
        and _host_match(ld.host, ev.host)
        and ld.start_ts is not None
        and ev.ts - _START_LOOK <= ld.start_ts <= ev.ts
    ]
    when = ev.ts
    return max(mine, key=lambda ld: ld.start_ts or when) if mine else None


def start_failure_words(items: Sequence[Evidence]) -> str:
    """The explanation of a unit that failed to start (``items``: its incident's evidence)."""
    tries = start_attempts(items)
    said = f"{tries} attempts ended" if tries > 1 else "its start ended"
    limit = any(start_limit(e) for e in items if e.kind == "unit_start_failed")
    gave_up = ", and systemd stopped restarting it at its start limit" if limit else ""
    return (
        f"the unit's server failed before it was ready: {said} with an error exit{gave_up} — a "
        f"start-up error (a wrong path or argument, a missing file), not a kill{_start_error(items, tries)}"
    )


def _start_error(items: Sequence[Evidence], tries: int) -> str:
    """The error a failed start's server wrote, when all its lines say the same (and how many
    attempts it ended); else that its output says which."""
    errors = attempt_errors(items, [e for e in items if e.kind == "server_start_error"])
    if len(errors) != 1:
        return "; its own output says which"
    text = errors[0].first.detail.strip()
    if len(text) > 200:
        text = text[:197] + "…"
    elif text.endswith(".") and not text.endswith(".."):
        text = text[:-1]  # (the sentence goes on after it)
    n = errors[0].attempts
    who = "it" if tries < 2 else ("every attempt" if n >= tries else f"{n} of them")
    return f": {who} ended with {text}"


#: a unit's failed starts this close are one failure to start
FAILED_STARTS_WITHIN = timedelta(hours=1)


def merge_failed_starts(
    clusters: list[list[Evidence]], loads: Sequence[Load], offsets: dict[int, float]
) -> list[list[Evidence]]:
    """A unit restarted into a configuration that fails at start-up (a CUDA OOM allocating the KV
    cache, a crash while loading), minutes apart, never ready: one incident, not one per attempt.
    A cluster joins the previous one of its unit and host when both attempts' loads never became
    ready and no load of the unit became ready between them."""
    out: list[list[Evidence]] = []
    last: dict[tuple[str | None, str | None], tuple[list[Evidence], datetime]] = {}
    for items in clusters:
        ts = kill_time(items, offsets)
        units = [e.unit for e in items if e.unit and not e.unit.endswith(".slice")]
        unit = _most_common(units)
        host = next((e.host for e in items if e.host), None)
        prev = last.get((host, unit))
        if (
            ts is not None
            and unit is not None
            and prev is not None
            and _failed_in_between(unit, host, prev[1], ts, loads)
        ):
            prev[0].extend(items)
            last[(host, unit)] = (prev[0], ts)
            continue
        out.append(list(items))
        if ts is not None:
            last[(host, unit)] = (out[-1], ts)
    return out


def _failed_in_between(
    unit: str, host: str | None, before: datetime, now: datetime, loads: Sequence[Load]
) -> bool:
    """Whether ``unit`` failed to start at ``before`` and again at ``now``, ready in between never."""
    if now - before > FAILED_STARTS_WITHIN:
        return False
    first, this = load_before(unit, before, loads, host), load_before(unit, now, loads, host)
    if first is None or this is None or first is this or "ready" in (first.outcome, this.outcome):
        return False
    return not any(
        ld.unit == unit
        and _host_match(ld.host, host)
        and ld.ready_ts is not None
        and before <= ld.ready_ts <= now
        for ld in loads
    )


def build_incidents(
    evidence: Sequence[Evidence],
    loads: Sequence[Load],
    offsets: dict[int, float] | None = None,
    merge_s: float = MERGE_S,
) -> list[Incident]:
    offsets = offsets or {}
    incidents: list[Incident] = []
    evidence = start_failures(evidence, loads)
    clusters = merge_failed_starts(cluster_evidence(evidence, offsets, merge_s), loads, offsets)
    for n, items in enumerate(clusters, start=1):
        cause, confidence, killer, scope, why = classify(items)
        ts = kill_time(items, offsets)
        hosts = [e.host for e in items if e.host]
        units = [e.unit for e in items if e.unit and not e.unit.endswith(".slice")]
        unit = _most_common(units)
        victims = victims_of(items)
        inc = Incident(
            incident_id=n,
            host=hosts[0] if hosts else None,
            ts=ts,
            unit=unit,
            cause=cause,
            confidence=confidence,
            killer=killer,
            scope=scope,
            victims=victims,
            evidence=list(items),
            cause_explanation=why,
        )
        chosen = inc.victim
        if chosen is not None:
            inc.oom_id = chosen.oom_id
            inc.anon_rss_kb = chosen.anon_rss_kb
            for ev in items:
                if ev.kind == "oom_kill" and ev.raw.get("oom_id") == chosen.oom_id:
                    inc.memcg_usage_kb = ev.raw.get("memcg_usage_kb")
                    inc.memcg_limit_kb = ev.raw.get("memcg_limit_kb")
                    break
            if inc.memcg_usage_kb is None:
                # a record cut by a rotation: its header part (the cgroup's usage and limit)
                # was read from the other file
                for ev in items:
                    if ev.kind == "oom_kill" and ev.raw.get("memcg_usage_kb") is not None:
                        inc.memcg_usage_kb = ev.raw.get("memcg_usage_kb")
                        inc.memcg_limit_kb = ev.raw.get("memcg_limit_kb")
                        break
        if ts is not None:
            inc.killed_load = load_before(unit, ts, loads, inc.host)
            recovery, is_other_unit = find_recovery(unit, inc.host, ts, loads, inc.killed_load)
            if recovery is not None and recovery.ready_ts is not None:
                inc.recovered_ts = recovery.ready_ts
                inc.downtime_s = (recovery.ready_ts - ts).total_seconds()
                inc.recovery_unit = recovery.unit
                inc.recovery_load = recovery
                killed = inc.killed_load
                inc.recovery_guessed = is_other_unit and (
                    killed is None or (killed.model_path is None and killed.port is None)
                )
                killed_spec = bool(inc.killed_load and inc.killed_load.speculative_algorithm)
                if is_other_unit and killed_spec and not recovery.speculative_algorithm:
                    inc.fallback_unit = recovery.unit
        incidents.append(inc)
    _count_repeats(incidents)
    return incidents


#: how far back a report looks for the same unit's earlier kills (a repeat, not a first)
REPEAT_WINDOW = timedelta(days=7)


def _count_repeats(incidents: list[Incident]) -> None:
    for inc in incidents:
        if inc.ts is None:
            continue
        inc.earlier_week = sorted(
            (
                (other.ts, other.cause)
                for other in incidents
                if other is not inc
                and other.unit == inc.unit
                and _host_match(other.host, inc.host)
                and other.ts is not None
                and timedelta(0) < inc.ts - other.ts <= REPEAT_WINDOW
            ),
            reverse=True,
        )
        inc.kills_last_hour = sum(
            1
            for other in incidents
            if other is not inc
            and other.unit == inc.unit
            and _host_match(other.host, inc.host)
            and other.ts is not None
            and timedelta(0) <= inc.ts - other.ts <= timedelta(hours=1)
        )


def _most_common(values: list[str]) -> str | None:
    if not values:
        return None
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return max(counts, key=lambda v: (counts[v], -values.index(v)))
