#!/usr/bin/env python3
"""Generate a Kubernetes night of a vLLM pod, deterministically: ``sample_logs_k8s/`` (the
sample incident) and, for the tests, one night per cause with its ground truth.

The sample's story (node ``gpu-node-7``, 8× H100, clock in UTC, Kubernetes 1.31, containerd 2.0,
cgroup v2, vLLM 0.10.2): the StatefulSet pod ``inference/vllm-llama-0`` runs container ``vllm``
with ``limits.memory: 64Gi``. It is ready 5 minutes after its start; traffic grows, the engine
core's host RSS with it, and at 02:30:00 the container reaches its limit: the kernel kills the
engine core and, because kubelet sets ``memory.oom.group``, every process of the container.
containerd reports ``TaskOOM`` and the exit (137); kubelet restarts the container at once, and
the restarted server is ready 7 minutes later (its readiness probe passes).

Files: ``journal.txt`` (``journalctl -o short-iso``: kernel, kubelet, containerd),
``kubernetes/pods.json`` and ``kubernetes/events.json`` (``kubectl get … -o json`` after the
restart), ``var/log/pods/<ns>_<pod>_<uid>/vllm/{0,1}.log`` (the CRI log files of both runs).

Causes (``--cause``): ``oom_group`` (the sample), ``container_limit`` (one process killed: the
engine core; the API server exits 1 by itself), ``pod_limit`` (the pod's cgroup: a sidecar and a
memory-backed /dev/shm), ``node_oom`` (the node ran out; containerd says ``Error``), ``eviction``
(kubelet evicts the pod under node memory pressure; no kernel kill), ``probe_kill`` (the startup
probe kills a server still loading; no OOM at all).

Usage: ``python scripts/gen_k8s_sample.py [OUT_DIR] [--cause CAUSE]``
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

NODE = "gpu-node-7"
NS, POD, CTR = "inference", "vllm-llama-0", "vllm"
UID = "5d0c2a4e-7b1f-4c3a-9e8d-2f6a1b0c9d84"
UID2 = "a81f3c27-0d4e-4b9a-8c5f-7e2d6b1a0f93"  # the pod that replaces an evicted one
T0 = datetime(2026, 3, 20, 2, 0, 0, tzinfo=UTC)
KILL = T0 + timedelta(minutes=30)
LIMIT = 64 << 30
CAUSES = ("oom_group", "container_limit", "pod_limit", "node_oom", "eviction", "probe_kill")


def cid(n: int) -> str:
    return f"{n:02x}" * 32


@dataclass
class Truth:
    """What really happened (the facts a report must state)."""

    cause: str  # the incident's cause as postmortem names it
    k8s_cause: str
    unit: str
    kill: datetime
    recovered: datetime | None
    processes_killed: int
    limit_bytes: int | None
    files: list[str] = field(default_factory=list)


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"


def rfc(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def cri(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"


class Night:
    def __init__(self, cause: str) -> None:
        self.cause = cause
        self.journal: list[tuple[datetime, str]] = []
        self.logs: dict[str, list[str]] = {}
        self.events: list[dict[str, object]] = []

    def j(self, t: datetime, ident: str, msg: str) -> None:
        self.journal.append((t, f"{iso(t)} {NODE} {ident}: {msg}"))

    def kubelet(self, t: datetime, msg: str) -> None:
        self.j(t, "kubelet[1500]", f"I{t:%m%d %H:%M:%S}.{t.microsecond:06d}    1500 {msg}")

    def containerd(self, t: datetime, msg: str, level: str = "info") -> None:
        text = msg.replace('"', '\\"')
        self.j(
            t,
            "containerd[900]",
            f'time="{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}123Z" level={level} msg="{text}"',
        )

    def vllm(self, run: int, t: datetime, proc: str, level: str, where: str, msg: str) -> None:
        line = f"({proc}) {level} {t:%m-%d %H:%M:%S} [{where}] {msg}"
        self.logs.setdefault(str(run), []).append(f"{cri(t)} stdout F {line}")

    def event(self, t: datetime, reason: str, msg: str, kind: str = "Normal", count: int = 1,
              first: datetime | None = None, obj: str = "Pod", uid: str = UID) -> None:  # fmt: skip
        involved: dict[str, object] = (
            {"kind": "Pod", "namespace": NS, "name": POD, "uid": uid, "apiVersion": "v1",
             "fieldPath": f"spec.containers{{{CTR}}}"}
            if obj == "Pod" else {"kind": "Node", "name": NODE, "uid": NODE}
        )  # fmt: skip
        self.events.append(
            {
                "apiVersion": "v1", "kind": "Event", "count": count, "type": kind, "reason": reason,
                "message": msg, "eventTime": None, "firstTimestamp": rfc(first or t), "lastTimestamp": rfc(t),
                "involvedObject": involved, "source": {"component": "kubelet", "host": NODE},
                "metadata": {"name": f"{POD}.{len(self.events):016x}", "namespace": NS if obj == "Pod" else "default"},
                "reportingComponent": "kubelet", "reportingInstance": NODE,
            }
        )  # fmt: skip


def server(n: Night, run: int, start: datetime, load_s: float, pid: int = 1) -> datetime:
    """A vLLM start in the container's log; returns when it is ready."""
    api, core, worker = (
        f"APIServer pid={pid}",
        f"EngineCore_DP0 pid={pid + 120}",
        f"Worker_TP0 pid={pid + 250}",
    )
    args = "{'model': '/models/llama-3.3-70b', 'tensor_parallel_size': 8, 'gpu_memory_utilization': 0.92, 'max_num_seqs': 256, 'port': 8000}"
    n.vllm(
        run, start + timedelta(seconds=3), api, "INFO", "api_server.py:1805", "vLLM API server version 0.10.2"
    )
    n.vllm(run, start + timedelta(seconds=3), api, "INFO", "utils.py:328", f"non-default args: {args}")
    n.vllm(run, start + timedelta(seconds=10), core, "INFO", "core.py:654",
           "Initializing a V1 LLM engine (v0.10.2) with config: model='/models/llama-3.3-70b', tensor_parallel_size=8")  # fmt: skip
    w0 = start + timedelta(seconds=14)
    n.vllm(
        run, w0, worker, "INFO", "gpu_model_runner.py:2338", "Starting to load model /models/llama-3.3-70b..."
    )
    wl = load_s * 0.7
    if load_s > 10_000:
        return start + timedelta(days=1)  # never finishes loading (killed first)
    n.vllm(run, w0 + timedelta(seconds=wl), worker, "INFO", "gpu_model_runner.py:2392",
           f"Model loading took 17.6000 GiB and {wl:.6f} seconds")  # fmt: skip
    kv = w0 + timedelta(seconds=wl + load_s * 0.12)
    n.vllm(run, kv, core, "INFO", "kv_cache_utils.py:864", "GPU KV cache size: 2,104,832 tokens")
    g = kv + timedelta(seconds=load_s * 0.1)
    n.vllm(
        run,
        g,
        worker,
        "INFO",
        "gpu_model_runner.py:3118",
        "Graph capturing finished in 25 secs, took 1.20 GiB",
    )
    n.vllm(run, g + timedelta(seconds=1), core, "INFO", "core.py:218",
           f"init engine (profile, create kv cache, warmup model) took {load_s * 0.25:.2f} seconds")  # fmt: skip
    ready = g + timedelta(seconds=3)
    n.vllm(run, ready, api, "INFO", "api_server.py:1876", "Starting vLLM API server 0 on http://0.0.0.0:8000")
    n.logs[str(run)].append(f"{cri(ready)} stdout F ({api}) INFO:     Application startup complete.")
    return ready


def traffic(n: Night, run: int, start: datetime, end: datetime, pid: int = 1) -> None:
    t, i = start, 0
    while t < end:
        frac = (t - start) / (end - start)
        running, waiting = min(256, int(140 + 160 * frac)), max(0, int(400 * frac - 60))
        n.vllm(run, t, f"APIServer pid={pid}", "INFO", "loggers.py:123",
               f"Engine 000: Avg prompt throughput: {3100 + i % 7 * 40:.1f} tokens/s, Avg generation throughput: "
               f"{2400 + i % 5 * 30:.1f} tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, "
               f"GPU KV cache usage: {min(99.0, 60 + 40 * frac):.1f}%, Prefix cache hit rate: 41.2%")  # fmt: skip
        t += timedelta(seconds=10)
        i += 1


def cgroup(level: str, ctr: str) -> str:
    pod = f"/kubepods.slice/kubepods-pod{UID.replace('-', '_')}.slice"
    return pod if level == "pod" else f"{pod}/cri-containerd-{ctr}.scope"


def kernel(n: Night, ctr: str) -> int:
    """The kernel's OOM record of the cause; returns how many processes it killed."""
    group = n.cause in ("oom_group", "pod_limit")
    glob = n.cause == "node_oom"
    task = cgroup("container", ctr)
    oom = cgroup("pod", ctr) if n.cause == "pod_limit" else task
    k = KILL
    lines = [
        "VLLM::EngineCor invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=-997",
        "CPU: 41 PID: 121 Comm: VLLM::EngineCor Not tainted 6.8.0-60-generic #63-Ubuntu",
    ]
    if not glob:
        lim = LIMIT // 1024 + (8 << 20 if n.cause == "pod_limit" else 0)
        lines.append(f"memory: usage {lim}kB, limit {lim}kB, failcnt 1841")
    lines += [
        "Tasks state (memory values in pages):",
        "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name",
        "[ 881101]     0 881101  9961472  1310720  1300000    10720        0    10485760        0          -997 python3",
        "[ 881221]     0 881221 41943040 15204352 15200000     4352        0   125829120        0          -997 VLLM::EngineCor",
        "[ 881350]     0 881350 20971520   262144   260000     2144        0     4194304        0          -997 VLLM::Worker_TP",
    ]
    constraint = "CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom" if glob else (
        f"CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-{ctr}.scope,mems_allowed=0-1,oom_memcg={oom}"
    )  # fmt: skip
    lines.append(f"oom-kill:constraint={constraint},task_memcg={task},task=VLLM::EngineCor,pid=881221,uid=0")
    prefix = "Out of memory" if glob else "Memory cgroup out of memory"
    lines.append(f"{prefix}: Killed process 881221 (VLLM::EngineCor) total-vm:167772160kB, anon-rss:60800000kB, "
                 "file-rss:17408kB, shmem-rss:0kB, UID:0 pgtables:122880kB oom_score_adj:-997")  # fmt: skip
    killed = 1
    if group:
        lines.append(
            f"Tasks in {oom if n.cause == 'oom_group' else task} are going to be killed due to memory.oom.group set"
        )
        for pid, comm, rss in ((881101, "python3", 5200000), (881350, "VLLM::Worker_TP", 1040000)):
            lines.append(f"Memory cgroup out of memory: Killed process {pid} ({comm}) total-vm:39845888kB, "
                         f"anon-rss:{rss}kB, file-rss:42880kB, shmem-rss:0kB, UID:0 pgtables:10240kB oom_score_adj:-997")  # fmt: skip
            killed += 1
    for i, line in enumerate(lines):
        n.j(k + timedelta(microseconds=i * 40), "kernel", line)
    return killed


def pod_object(
    n: Night, truth: Truth, runs: list[tuple[str, datetime, datetime | None]]
) -> dict[str, object]:
    """The Pod after the incident: its last run and the termination before it."""
    last = runs[-1]
    prev = runs[-2] if len(runs) > 1 else None
    reason = {"node_oom": "Error", "probe_kill": "Error", "container_limit": "OOMKilled"}.get(
        n.cause, "OOMKilled"
    )
    code = 1 if n.cause == "container_limit" else 137
    spec: dict[str, object] = {
        "name": CTR, "image": "vllm/vllm-openai:v0.10.2",
        "resources": {"limits": {"memory": "64Gi", "nvidia.com/gpu": "8"}, "requests": {"memory": "64Gi", "nvidia.com/gpu": "8"}},
        "startupProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10,
                         "failureThreshold": 30 if n.cause == "probe_kill" else 60},
        "readinessProbe": {"httpGet": {"path": "/v1/models", "port": 8000}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10, "timeoutSeconds": 5},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }  # fmt: skip
    containers: list[dict[str, object]] = [spec]
    if n.cause == "pod_limit":
        containers.append(
            {"name": "metrics-sidecar", "image": "busybox", "resources": {"limits": {"memory": "8Gi"}}}
        )
    status: dict[str, object] = {
        "name": CTR, "containerID": f"containerd://{last[0]}", "restartCount": len(runs) - 1,
        "ready": last[2] is not None, "started": True,
        "state": {"running": {"startedAt": rfc(last[1])}},
    }  # fmt: skip
    if n.cause == "probe_kill":
        status["state"] = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off 20s restarting failed container={CTR} pod={POD}_{NS}({UID})",
            }
        }
    if prev is not None:
        status["lastState"] = {"terminated": {"exitCode": code, "reason": reason, "startedAt": rfc(prev[1]),
                                              "finishedAt": rfc(truth.kill), "containerID": f"containerd://{prev[0]}"}}  # fmt: skip
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": POD, "namespace": NS, "uid": UID2 if n.cause == "eviction" else UID,
                     "ownerReferences": [{"kind": "StatefulSet", "name": "vllm-llama", "apiVersion": "apps/v1"}]},
        "spec": {"nodeName": NODE, "containers": containers,
                 "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]},
        "status": {"phase": "Running", "qosClass": "Guaranteed" if n.cause != "pod_limit" else "Burstable",
                   "containerStatuses": [status]},
    }  # fmt: skip


def night(cause: str, out_dir: str | Path) -> Truth:
    """Write one night of ``cause`` under ``out_dir``; return its truth."""
    n = Night(cause)
    out = Path(out_dir)
    c0, c1 = cid(0xA1), cid(0xB2)
    unit = f"k8s:{NS}/{POD}/{CTR}"
    n.containerd(
        T0 - timedelta(seconds=2),
        f'RunPodSandbox for &PodSandboxMetadata{{Name:{POD},Uid:{UID},Namespace:{NS},Attempt:0,}} returns sandbox id "{cid(0x5A)}"',
    )
    n.containerd(
        T0 - timedelta(seconds=1),
        f'CreateContainer within sandbox "{cid(0x5A)}" for container &ContainerMetadata{{Name:{CTR},Attempt:0,}} returns container id "{c0}"',
    )
    n.containerd(T0, f'StartContainer for "{c0}" returns successfully')
    ready0 = server(n, 0, T0, 300.0)
    traffic(n, 0, ready0 + timedelta(seconds=30), KILL - timedelta(seconds=2))
    truth = Truth({"oom_group": "cgroup_oom", "container_limit": "cgroup_oom", "pod_limit": "cgroup_oom",
                   "node_oom": "host_oom", "eviction": "eviction", "probe_kill": "probe_kill"}[cause],
                  cause, unit, KILL, None, 0, LIMIT if cause in ("oom_group", "container_limit") else None)  # fmt: skip
    kill = KILL
    if cause == "probe_kill":
        # a rollout restarts the container; the new run's load outlasts the startup probe's
        # budget (30 × 10 s) and kubelet kills it: the kill is kubelet's decision
        kill = ready0 + timedelta(minutes=5) + timedelta(seconds=300)
        truth.kill = kill
    if cause in ("oom_group", "container_limit", "pod_limit", "node_oom"):
        truth.processes_killed = kernel(n, c0)
        n.containerd(KILL + timedelta(milliseconds=30), f'TaskOOM event container_id:"{c0}"')
        if cause == "node_oom":
            n.kubelet(
                KILL + timedelta(milliseconds=200),
                'oom_watcher_linux.go:69] "Got sys oom event" event="&{Pid:881221 ProcessName:VLLM::EngineCor TimeOfDeath:2026-03-20 02:30:00 +0000 UTC ContainerName:/ VictimContainerName:/ Constraint:CONSTRAINT_NONE}"',
            )
            n.event(
                KILL + timedelta(seconds=1),
                "SystemOOM",
                "System OOM encountered, victim process: VLLM::EngineCor, pid: 881221",
                "Warning",
                obj="Node",
            )
        if cause == "container_limit":
            n.vllm(0, KILL + timedelta(seconds=1), "APIServer pid=1", "ERROR", "core_client.py:564",
                   "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.")  # fmt: skip
        code = 1 if cause == "container_limit" else 137
        at = KILL + timedelta(seconds=2 if cause == "container_limit" else 0, milliseconds=120)
        n.containerd(
            at,
            f'TaskExit event container_id:"{c0}" id:"{c0}" pid:881101 exit_status:{code} exited_at:{{seconds:{int(at.timestamp())} nanos:120000000}}',
        )
        n.kubelet(
            at + timedelta(seconds=1),
            f'kubelet.go:2465] "SyncLoop (PLEG): event for pod" pod="{NS}/{POD}" event={{"ID":"{UID}","Type":"ContainerDied","Data":"{c0}"}}',
        )
        restart = at + timedelta(seconds=2)
        n.containerd(
            restart - timedelta(seconds=1),
            f'CreateContainer within sandbox "{cid(0x5A)}" for container &ContainerMetadata{{Name:{CTR},Attempt:1,}} returns container id "{c1}"',
        )
        n.event(restart, "Pulled", 'Container image "vllm/vllm-openai:v0.10.2" already present on machine')
        n.event(restart, "Created", f"Created container: {CTR}")
        n.event(restart, "Started", f"Started container {CTR}")
        ready1 = server(n, 1, restart, 420.0)
        n.kubelet(
            ready1 + timedelta(seconds=4),
            f'kubelet.go:2542] "SyncLoop (probe)" probe="readiness" status="ready" pod="{NS}/{POD}"',
        )
        truth.recovered = ready1
        runs = [(c0, T0, ready0), (c1, restart, ready1)]
    elif cause == "eviction":
        for i, what in enumerate(("attempting to reclaim", "must evict pod(s) to reclaim")):
            n.kubelet(
                KILL - timedelta(seconds=20 - i),
                f'eviction_manager.go:366] "Eviction manager: {what}" resourceName="memory"',
            )
        n.event(
            KILL - timedelta(seconds=20),
            "EvictionThresholdMet",
            "Attempting to reclaim memory",
            "Warning",
            obj="Node",
        )
        n.kubelet(
            KILL - timedelta(seconds=2),
            f'kuberuntime_container.go:809] "Killing container with a grace period" pod="{NS}/{POD}" podUID="{UID}" containerName="{CTR}" containerID="containerd://{c0}" gracePeriod=30',
        )
        n.event(
            KILL - timedelta(seconds=2),
            "Evicted",
            f"The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. Container {CTR} was using 61Gi, request is 32Gi, has larger consumption of memory. ",
            "Warning",
        )
        n.containerd(
            KILL,
            f'TaskExit event container_id:"{c0}" id:"{c0}" pid:881101 exit_status:137 exited_at:{{seconds:{int(KILL.timestamp())} nanos:0}}',
        )
        n.kubelet(
            KILL + timedelta(seconds=1),
            f'eviction_manager.go:616] "Eviction manager: pod is evicted successfully" pod="{NS}/{POD}"',
        )
        truth.kill = KILL - timedelta(seconds=2)  # kubelet's decision: the eviction
        restart = KILL + timedelta(seconds=40)
        n.containerd(
            restart - timedelta(seconds=1),
            f'RunPodSandbox for &PodSandboxMetadata{{Name:{POD},Uid:{UID2},Namespace:{NS},Attempt:0,}} returns sandbox id "{cid(0x6B)}"',
        )
        n.containerd(
            restart - timedelta(seconds=1),
            f'CreateContainer within sandbox "{cid(0x6B)}" for container &ContainerMetadata{{Name:{CTR},Attempt:0,}} returns container id "{c1}"',
        )
        ready1 = server(n, 1, restart, 400.0)
        truth.recovered = ready1
        runs = [(c1, restart, ready1)]
    else:  # probe_kill: a rollout restarts the container; its load outlasts the startup probe
        roll = ready0 + timedelta(minutes=5)
        traffic(n, 0, ready0 + timedelta(seconds=30), roll - timedelta(seconds=2))
        n.containerd(
            roll - timedelta(seconds=1),
            f'CreateContainer within sandbox "{cid(0x5A)}" for container &ContainerMetadata{{Name:{CTR},Attempt:1,}} returns container id "{c1}"',
        )
        server(n, 1, roll, 99_999.0)
        for k in range(1, 31):
            t = roll + timedelta(seconds=10 * k)
            n.kubelet(
                t,
                f'prober.go:107] "Probe failed" probeType="Startup" pod="{NS}/{POD}" podUID="{UID}" containerName="{CTR}" probeResult="failure" output="Get \\"http://10.4.7.12:8000/health\\": dial tcp 10.4.7.12:8000: connect: connection refused"',
            )
        n.event(
            kill,
            "Unhealthy",
            'Startup probe failed: Get "http://10.4.7.12:8000/health": dial tcp 10.4.7.12:8000: connect: connection refused',
            "Warning",
            30,
            roll + timedelta(seconds=10),
        )
        n.kubelet(
            kill,
            f'kuberuntime_manager.go:1077] "Message for Container of pod" containerName="{CTR}" containerStatusID={{"Type":"containerd","ID":"{c1}"}} pod="{NS}/{POD}" containerMessage="Container {CTR} failed startup probe, will be restarted"',
        )
        n.event(kill, "Killing", f"Container {CTR} failed startup probe, will be restarted")
        n.kubelet(
            kill,
            f'kuberuntime_container.go:809] "Killing container with a grace period" pod="{NS}/{POD}" podUID="{UID}" containerName="{CTR}" containerID="containerd://{c1}" gracePeriod=30',
        )
        n.containerd(
            kill + timedelta(seconds=30),
            f'TaskExit event container_id:"{c1}" id:"{c1}" pid:881101 exit_status:137 exited_at:{{seconds:{int(kill.timestamp()) + 30} nanos:0}}',
        )
        n.kubelet(
            kill + timedelta(seconds=31),
            f'kubelet.go:2465] "SyncLoop (PLEG): event for pod" pod="{NS}/{POD}" event={{"ID":"{UID}","Type":"ContainerDied","Data":"{c1}"}}',
        )
        n.kubelet(
            kill + timedelta(seconds=32),
            f'kuberuntime_manager.go:1100] "Back-off restarting failed container" err="back-off 10s restarting failed container={CTR} pod={POD}_{NS}({UID})"',
        )
        n.event(
            kill + timedelta(seconds=32),
            "BackOff",
            f"Back-off restarting failed container {CTR} in pod {POD}_{NS}({UID})",
            "Warning",
        )
        runs = [(c0, T0, ready0), (c1, roll, None)]
    write(n, out, pod_object(n, truth, runs), truth)
    return truth


def write(n: Night, out: Path, pod: dict[str, object], truth: Truth) -> None:
    out.mkdir(parents=True, exist_ok=True)
    journal = "\n".join(line for _, line in sorted(n.journal, key=lambda x: x[0])) + "\n"
    (out / "journal.txt").write_text(journal, encoding="utf-8")
    k8s = out / "kubernetes"
    k8s.mkdir(exist_ok=True)
    (k8s / "pods.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod]}, indent=4) + "\n", encoding="utf-8"
    )
    (k8s / "events.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": n.events}, indent=4) + "\n", encoding="utf-8"
    )
    uid = UID2 if n.cause == "eviction" else UID
    for run, lines in n.logs.items():
        pod_uid = UID if (n.cause == "eviction" and run == "0") else uid
        d = out / "var/log/pods" / f"{NS}_{POD}_{pod_uid}" / CTR
        d.mkdir(parents=True, exist_ok=True)
        name = "0.log" if n.cause == "eviction" else f"{run}.log"
        (d / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    truth.files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def main(argv: list[str]) -> None:
    out = argv[0] if argv and not argv[0].startswith("--") else "sample_logs_k8s"
    cause = argv[argv.index("--cause") + 1] if "--cause" in argv else "oom_group"
    if cause not in CAUSES:
        raise SystemExit(f"Error: --cause must be one of {', '.join(CAUSES)}")
    night(cause, out)


if __name__ == "__main__":
    main(sys.argv[1:])
