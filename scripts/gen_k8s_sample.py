#!/usr/bin/env python3
"""Generate a Kubernetes night of an inference pod, deterministically: ``sample_logs_k8s/`` (the
sample incident) and, for the tests, nights of every cause with their ground truth, in the forms
real nodes vary in (:class:`Variant`).

The sample's story (node ``gpu-node-7``, 8× H100, clock in UTC, Kubernetes 1.31, containerd 2.0,
cgroup v2, vLLM 0.10.2): the StatefulSet pod ``inference/vllm-llama-0`` runs container ``vllm``
with ``limits.memory: 64Gi``. It is ready 5 minutes after its start; traffic grows, the engine
core's host RSS with it, and at 02:30:00 the container reaches its limit: the kernel kills the
engine core and, because kubelet sets ``memory.oom.group``, every process of the container.
containerd reports ``TaskOOM`` and the exit (137); kubelet restarts the container at once, and
the restarted server is ready 7 minutes later.

Files: ``journal.txt`` (``journalctl -o short-iso``: kernel, kubelet, containerd; or
``journal.json``), ``kubernetes/pods.json`` (or ``pods.yaml``, or ``describe.txt``) and
``kubernetes/events.json`` (core/v1, or events.k8s.io/v1 YAML) after the restart,
``var/log/pods/<ns>_<pod>_<uid>/<container>/{0,1}.log`` (the CRI log files of both runs).

Causes: ``oom_group`` (the sample), ``container_limit`` (one process killed: the engine; the API
server exits 1 by itself), ``pod_limit`` (the pod's cgroup: a sidecar and a memory-backed
/dev/shm), ``node_oom`` (the node ran out; the runtime says ``Error``), ``eviction`` (kubelet
evicts the pod under node memory pressure; no kernel kill), ``probe_kill`` (the startup probe
kills a server still loading; no OOM at all).

Usage: ``python scripts/gen_k8s_sample.py [OUT_DIR] [--cause CAUSE] [--seed N]`` (a seed draws a
:class:`Variant`; without one, the sample's).
"""

from __future__ import annotations

import json
import os
import random
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

NODE = "gpu-node-7"
NS = "inference"
UID = "5d0c2a4e-7b1f-4c3a-9e8d-2f6a1b0c9d84"
UID2 = "a81f3c27-0d4e-4b9a-8c5f-7e2d6b1a0f93"  # the pod that replaces an evicted one
T0 = datetime(2026, 3, 20, 2, 0, 0, tzinfo=UTC)
KILL = T0 + timedelta(minutes=30)
LIMIT = 64 << 30
CAUSES = ("oom_group", "container_limit", "pod_limit", "node_oom", "eviction", "probe_kill")
CAUSE_OF = {
    "oom_group": "cgroup_oom",
    "container_limit": "cgroup_oom",
    "pod_limit": "cgroup_oom",
    "node_oom": "host_oom",
    "eviction": "eviction",
    "probe_kill": "probe_kill",
}


@dataclass(frozen=True)
class Variant:
    """What differs between real nodes and captures."""

    engine: str = "vllm"  # vllm | sglang
    driver: str = "systemd"  # cgroup driver: systemd | cgroupfs
    runtime: str = "containerd"  # containerd | cri-o
    qos: str = "guaranteed"  # guaranteed | burstable
    objects: str = "json"  # json | yaml | describe
    events: str = "v1"  # v1 (JSON) | events.k8s.io (YAML)
    journal: str = "short-iso"  # short-iso | json
    partial: bool = False  # long lines split into CRI P records

    @property
    def pod(self) -> str:
        return "vllm-llama-0" if self.engine == "vllm" else "sglang-qwen-0"

    @property
    def container(self) -> str:
        return self.engine

    @property
    def victim(self) -> str:
        return "VLLM::EngineCor" if self.engine == "vllm" else "sglang::schedul"


def draw(seed: int) -> Variant:
    """A variant drawn from ``seed``."""
    rng = random.Random(seed)
    return Variant(
        engine=rng.choice(("vllm", "sglang")),
        driver=rng.choice(("systemd", "cgroupfs")),
        runtime=rng.choice(("containerd", "cri-o")),
        qos=rng.choice(("guaranteed", "burstable")),
        objects=rng.choice(("json", "yaml", "describe")),
        events=rng.choice(("v1", "events.k8s.io")),
        journal=rng.choice(("short-iso", "json")),
        partial=rng.random() < 0.5,
    )


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


def rfc(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc1123(t: datetime) -> str:
    return t.strftime("%a, %d %b %Y %H:%M:%S +0000")


class Night:
    def __init__(self, cause: str, v: Variant) -> None:
        self.cause = cause
        self.v = v
        self.journal: list[tuple[datetime, str, int, str]] = []  # time, ident, pid, message
        self.logs: dict[str, list[str]] = {}
        self.events: list[dict[str, Any]] = []
        self.exited: datetime | None = None  # when the killed container's last process ended

    # ------------------------------------------------------------------ node journal
    def j(self, t: datetime, ident: str, pid: int, msg: str) -> None:
        self.journal.append((t, ident, pid, msg))

    def kubelet(self, t: datetime, msg: str) -> None:
        self.j(t, "kubelet", 1500, f"I{t:%m%d %H:%M:%S}.{t.microsecond:06d}    1500 {msg}")

    def runtime_line(self, t: datetime, msg: str, fields: str = "") -> None:
        text = msg.replace('"', '\\"')
        if self.v.runtime == "containerd":
            self.j(
                t,
                "containerd",
                900,
                f'time="{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}123Z" level=info msg="{text}"',
            )
        else:
            self.j(
                t,
                "crio",
                1200,
                f'time="{t:%Y-%m-%d %H:%M:%S}.{t.microsecond:06d}123Z" level=info msg="{text}"{fields}',
            )

    def sandbox(self, t: datetime, uid: str, sb: str) -> None:
        if self.v.runtime == "containerd":
            self.runtime_line(
                t,
                f'RunPodSandbox for &PodSandboxMetadata{{Name:{self.v.pod},Uid:{uid},Namespace:{NS},Attempt:0,}} returns sandbox id "{sb}"',
            )

    def created(self, t: datetime, sb: str, attempt: int, c: str) -> None:
        v = self.v
        if v.runtime == "containerd":
            self.runtime_line(
                t,
                f'CreateContainer within sandbox "{sb}" for container &ContainerMetadata{{Name:{v.container},Attempt:{attempt},}} returns container id "{c}"',
            )
        else:
            self.runtime_line(
                t,
                "Started container",
                f" PID=4242 containerID={c} description={NS}/{v.pod}/{v.container} id=x name=/runtime.v1.RuntimeService/StartContainer sandboxID={sb}",
            )

    def task_oom(self, t: datetime, c: str) -> None:
        if self.v.runtime == "containerd":
            self.runtime_line(t, f'TaskOOM event container_id:"{c}"')

    def task_exit(self, t: datetime, c: str, code: int) -> None:
        if self.v.runtime == "containerd":
            self.runtime_line(
                t,
                f'TaskExit event container_id:"{c}" id:"{c}" pid:881101 exit_status:{code} exited_at:{{seconds:{int(t.timestamp())} nanos:{t.microsecond * 1000}}}',
            )

    def pleg(self, t: datetime, uid: str, c: str, what: str = "ContainerDied") -> None:
        self.kubelet(
            t,
            f'kubelet.go:2465] "SyncLoop (PLEG): event for pod" pod="{NS}/{self.v.pod}" event={{"ID":"{uid}","Type":"{what}","Data":"{c}"}}',
        )

    # ------------------------------------------------------------------ the container's log
    def cri(self, run: int, t: datetime, text: str, stream: str = "stdout") -> None:
        if self.v.runtime == "containerd":
            stamp = (t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123").rstrip("0").rstrip(".") + "Z"
        else:
            stamp = t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123+00:00"
        out = self.logs.setdefault(str(run), [])
        pieces = (
            [text[i : i + 96] for i in range(0, len(text), 96)]
            if self.v.partial and len(text) > 96
            else [text]
        )
        for i, piece in enumerate(pieces):
            out.append(f"{stamp} {stream} {'F' if i == len(pieces) - 1 else 'P'} {piece}")

    def event(self, t: datetime, reason: str, msg: str, kind: str = "Normal", count: int = 1,
              first: datetime | None = None, obj: str = "Pod", uid: str = UID) -> None:  # fmt: skip
        involved: dict[str, Any] = (
            {"kind": "Pod", "namespace": NS, "name": self.v.pod, "uid": uid, "apiVersion": "v1",
             "fieldPath": f"spec.containers{{{self.v.container}}}"}
            if obj == "Pod" else {"kind": "Node", "name": NODE, "uid": NODE}
        )  # fmt: skip
        self.events.append(
            {
                "t": t,
                "first": first or t,
                "count": count,
                "type": kind,
                "reason": reason,
                "message": msg,
                "obj": involved,
            }
        )


# ---------------------------------------------------------------------- the servers
def server(n: Night, run: int, start: datetime, load_s: float) -> datetime:
    """A server's start in the container's log; returns when it is ready (a day on: never)."""
    return (vllm_start if n.v.engine == "vllm" else sglang_start)(n, run, start, load_s)


def vllm_start(n: Night, run: int, start: datetime, load_s: float) -> datetime:
    def say(t: datetime, proc: str, where: str, msg: str, level: str = "INFO") -> None:
        n.cri(run, t, f"({proc}) {level} {t:%m-%d %H:%M:%S} [{where}] {msg}")

    api, core, worker = "APIServer pid=1", "EngineCore_DP0 pid=121", "Worker_TP0 pid=251"
    args = "{'model': '/models/llama-3.3-70b', 'tensor_parallel_size': 8, 'gpu_memory_utilization': 0.92, 'max_num_seqs': 256, 'port': 8000}"
    say(start + timedelta(seconds=3), api, "api_server.py:1805", "vLLM API server version 0.10.2")
    say(start + timedelta(seconds=3), api, "utils.py:328", f"non-default args: {args}")
    say(
        start + timedelta(seconds=10),
        core,
        "core.py:654",
        "Initializing a V1 LLM engine (v0.10.2) with config: model='/models/llama-3.3-70b', tensor_parallel_size=8",
    )
    w0 = start + timedelta(seconds=14)
    say(w0, worker, "gpu_model_runner.py:2338", "Starting to load model /models/llama-3.3-70b...")
    if load_s > 10_000:
        return start + timedelta(days=1)
    wl = load_s * 0.7
    say(
        w0 + timedelta(seconds=wl),
        worker,
        "gpu_model_runner.py:2392",
        f"Model loading took 17.6000 GiB and {wl:.6f} seconds",
    )
    kv = w0 + timedelta(seconds=wl + load_s * 0.12)
    say(kv, core, "kv_cache_utils.py:864", "GPU KV cache size: 2,104,832 tokens")
    g = kv + timedelta(seconds=load_s * 0.1)
    say(g, worker, "gpu_model_runner.py:3118", "Graph capturing finished in 25 secs, took 1.20 GiB")
    say(
        g + timedelta(seconds=1),
        core,
        "core.py:218",
        f"init engine (profile, create kv cache, warmup model) took {load_s * 0.25:.2f} seconds",
    )
    ready = g + timedelta(seconds=3)
    say(ready, api, "api_server.py:1876", "Starting vLLM API server 0 on http://0.0.0.0:8000")
    n.cri(run, ready, f"({api}) INFO:     Application startup complete.")
    return ready


def sglang_start(n: Night, run: int, start: datetime, load_s: float) -> datetime:
    def say(t: datetime, msg: str, tp: str | None = " TP0") -> None:
        n.cri(run, t, f"[{t:%Y-%m-%d %H:%M:%S}{tp or ''}] {msg}")

    say(start + timedelta(seconds=4), "server_args=ServerArgs(model_path='/models/qwen3-235b', tokenizer_path='/models/qwen3-235b', "
        "tp_size=8, mem_fraction_static=0.85, max_running_requests=256, port=30000, host='0.0.0.0', disable_cuda_graph=False)", None)  # fmt: skip
    say(start + timedelta(seconds=9), "Load weight begin. avail mem=78.50 GB")
    if load_s > 10_000:
        return start + timedelta(days=1)
    w = start + timedelta(seconds=9 + load_s * 0.7)
    say(
        w,
        f"Load weight end. elapsed={load_s * 0.7:.2f} s, type=Qwen3MoeForCausalLM, quant=fp8, avail mem=22.10 GB, mem usage=56.40 GB.",
    )
    say(w + timedelta(seconds=2), "KV Cache is allocated. #tokens: 1402880, KV size: 12.40 GB")
    say(
        w + timedelta(seconds=3),
        "Capture cuda graph begin. This can take up to several minutes. avail mem=9.60 GB",
    )
    g = w + timedelta(seconds=3 + load_s * 0.25)
    say(
        g,
        f"Capture cuda graph end. Time elapsed: {load_s * 0.25:.2f} s. mem usage=1.10 GB. avail mem=8.50 GB.",
    )
    ready = g + timedelta(seconds=4)
    say(ready, "INFO:     Application startup complete.", None)
    say(ready, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", None)
    say(ready + timedelta(seconds=2), "The server is fired up and ready to roll!", None)
    return ready + timedelta(seconds=2)  # after its warm-up request: serving


def traffic(n: Night, run: int, start: datetime, end: datetime) -> None:
    t, i = start, 0
    while t < end:
        frac = (t - start) / (end - start)
        running, waiting = min(256, int(140 + 160 * frac)), max(0, int(400 * frac - 60))
        if n.v.engine == "vllm":
            n.cri(run, t, f"(APIServer pid=1) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: Avg prompt throughput: "
                  f"{3100 + i % 7 * 40:.1f} tokens/s, Avg generation throughput: {2400 + i % 5 * 30:.1f} tokens/s, Running: "
                  f"{running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: {min(99.0, 60 + 40 * frac):.1f}%, "
                  "Prefix cache hit rate: 41.2%")  # fmt: skip
        else:
            n.cri(run, t, f"[{t:%Y-%m-%d %H:%M:%S} TP0] Decode batch, #running-req: {running}, #token: {running * 3000}, "
                  f"token usage: {min(0.99, 0.6 + 0.4 * frac):.2f}, cuda graph: True, gen throughput (token/s): "
                  f"{2400 + i % 5 * 30:.2f}, #queue-req: {waiting}")  # fmt: skip
        t += timedelta(seconds=10)
        i += 1


# ---------------------------------------------------------------------- the kernel
def cgroup(v: Variant, level: str, ctr: str) -> str:
    uid_ = UID.replace("-", "_")
    if v.driver == "systemd":
        qos = "/kubepods-burstable.slice" if v.qos == "burstable" else ""
        pod = f"/kubepods.slice{qos}/kubepods{'-burstable' if v.qos == 'burstable' else ''}-pod{uid_}.slice"
        leaf = f"cri-containerd-{ctr}.scope" if v.runtime == "containerd" else f"crio-{ctr}.scope"
    else:
        pod = f"/kubepods{'/burstable' if v.qos == 'burstable' else ''}/pod{UID}"
        leaf = ctr if v.runtime == "containerd" else f"crio-{ctr}"
    return pod if level == "pod" else f"{pod}/{leaf}"


def kernel(n: Night, ctr: str) -> int:
    """The kernel's OOM record of the cause; returns how many processes it killed."""
    v = n.v
    group = n.cause in ("oom_group", "pod_limit")
    glob = n.cause == "node_oom"
    task = cgroup(v, "container", ctr)
    oom = cgroup(v, "pod", ctr) if n.cause == "pod_limit" else task
    adj = -997 if v.qos == "guaranteed" else 968
    lines = [
        f"{v.victim} invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj={adj}",
        f"CPU: 41 PID: 121 Comm: {v.victim} Not tainted 6.8.0-60-generic #63-Ubuntu",
    ]
    if not glob:
        lim = LIMIT // 1024 + (8 << 20 if n.cause == "pod_limit" else 0)
        lines.append(f"memory: usage {lim}kB, limit {lim}kB, failcnt 1841")
    lines += [
        "Tasks state (memory values in pages):",
        "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name",
        f"[ 881101]     0 881101  9961472  1310720  1300000    10720        0    10485760        0      {adj:>8} python3",
        f"[ 881221]     0 881221 41943040 15204352 15200000     4352        0   125829120        0      {adj:>8} {v.victim}",
        f"[ 881350]     0 881350 20971520   262144   260000     2144        0     4194304        0      {adj:>8} python3",
    ]
    leaf = task.rsplit("/", 1)[1]
    constraint = "CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom" if glob else (
        f"CONSTRAINT_MEMCG,nodemask=(null),cpuset={leaf},mems_allowed=0-1,oom_memcg={oom}"
    )  # fmt: skip
    lines.append(f"oom-kill:constraint={constraint},task_memcg={task},task={v.victim},pid=881221,uid=0")
    prefix = "Out of memory" if glob else "Memory cgroup out of memory"
    lines.append(f"{prefix}: Killed process 881221 ({v.victim}) total-vm:167772160kB, anon-rss:60800000kB, "
                 f"file-rss:17408kB, shmem-rss:0kB, UID:0 pgtables:122880kB oom_score_adj:{adj}")  # fmt: skip
    killed = 1
    if group:
        lines.append(
            f"Tasks in {oom if n.cause == 'oom_group' else task} are going to be killed due to memory.oom.group set"
        )
        for pid, rss in ((881101, 5200000), (881350, 1040000)):
            lines.append(f"Memory cgroup out of memory: Killed process {pid} (python3) total-vm:39845888kB, "
                         f"anon-rss:{rss}kB, file-rss:42880kB, shmem-rss:0kB, UID:0 pgtables:10240kB oom_score_adj:{adj}")  # fmt: skip
            killed += 1
    for line in lines:
        n.j(KILL, "kernel", 0, line)  # one record: its lines share the instant
    return killed


# ---------------------------------------------------------------------- the night
def night(cause: str, out_dir: str | Path, variant: Variant | None = None) -> Truth:
    """Write one night of ``cause`` under ``out_dir``; return its truth."""
    v = variant or Variant()
    n = Night(cause, v)
    c0, c1 = cid(0xA1), cid(0xB2)
    sb = cid(0x5A)
    truth = Truth(CAUSE_OF[cause], cause, f"k8s:{NS}/{v.pod}/{v.container}", KILL, None, 0,
                  LIMIT if cause in ("oom_group", "container_limit") else None)  # fmt: skip
    n.sandbox(T0 - timedelta(seconds=2), UID, sb)
    n.created(T0 - timedelta(seconds=1), sb, 0, c0)
    ready0 = server(n, 0, T0, 300.0)
    if cause == "probe_kill":
        runs = _probe_kill(n, truth, ready0, (c0, c1, sb))
    elif cause == "eviction":
        traffic(n, 0, ready0 + timedelta(seconds=30), KILL - timedelta(seconds=2))
        runs = _eviction(n, truth, (c0, c1))
    else:
        traffic(n, 0, ready0 + timedelta(seconds=30), KILL - timedelta(seconds=2))
        runs = _oom(n, truth, (c0, c1, sb))
        runs.insert(0, (c0, T0, ready0))
    write(n, Path(out_dir), pod_object(n, truth, runs), truth)
    return truth


def _oom(n: Night, truth: Truth, ids: tuple[str, str, str]) -> list[tuple[str, datetime, datetime | None]]:
    c0, c1, sb = ids
    v = n.v
    truth.processes_killed = kernel(n, c0)
    n.task_oom(KILL + timedelta(milliseconds=30), c0)
    if n.cause == "node_oom":
        n.kubelet(
            KILL + timedelta(milliseconds=200),
            f'oom_watcher_linux.go:69] "Got sys oom event" event="&{{Pid:881221 ProcessName:{v.victim} ContainerName:/ VictimContainerName:/ Constraint:CONSTRAINT_NONE}}"',
        )
        n.event(
            KILL + timedelta(seconds=1),
            "SystemOOM",
            f"System OOM encountered, victim process: {v.victim}, pid: 881221",
            "Warning",
            obj="Node",
        )
    if n.cause == "container_limit":
        if v.engine == "vllm":
            n.cri(
                0,
                KILL + timedelta(seconds=1),
                f"(APIServer pid=1) ERROR {KILL:%m-%d %H:%M:%S} [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
            )
        else:
            n.cri(
                0,
                KILL + timedelta(seconds=1),
                f"[{KILL:%Y-%m-%d %H:%M:%S}] Rank 0 scheduler is dead. Please check if there are relevant logs.",
            )
    code = 1 if n.cause == "container_limit" else 137
    at = KILL + timedelta(seconds=2 if n.cause == "container_limit" else 0, milliseconds=120)
    n.task_exit(at, c0, code)
    n.pleg(at + timedelta(seconds=1), UID, c0)
    restart = at + timedelta(seconds=2)
    n.created(restart - timedelta(seconds=1), sb, 1, c1)
    n.event(restart, "Pulled", f'Container image "{image(v)}" already present on machine')
    n.event(restart, "Created", f"Created container: {v.container}")
    n.event(restart, "Started", f"Started container {v.container}")
    ready1 = server(n, 1, restart, 420.0)
    n.kubelet(
        ready1 + timedelta(seconds=4),
        f'kubelet.go:2542] "SyncLoop (probe)" probe="readiness" status="ready" pod="{NS}/{v.pod}"',
    )
    truth.recovered = ready1
    return [(c1, restart, ready1)]


def _eviction(n: Night, truth: Truth, ids: tuple[str, str]) -> list[tuple[str, datetime, datetime | None]]:
    c0, c1 = ids
    v = n.v
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
        f'kuberuntime_container.go:809] "Killing container with a grace period" pod="{NS}/{v.pod}" podUID="{UID}" containerName="{v.container}" containerID="{v.runtime}://{c0}" gracePeriod=30',
    )
    n.event(
        KILL - timedelta(seconds=2),
        "Evicted",
        f"The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. Container {v.container} was using 61Gi, request is 32Gi, has larger consumption of memory. ",
        "Warning",
    )
    n.task_exit(KILL, c0, 137)
    n.pleg(KILL + timedelta(milliseconds=500), UID, c0)
    n.kubelet(
        KILL + timedelta(seconds=1),
        f'eviction_manager.go:616] "Eviction manager: pod is evicted successfully" pod="{NS}/{v.pod}"',
    )
    truth.kill = KILL - timedelta(seconds=2)  # kubelet's decision: the eviction
    restart = KILL + timedelta(seconds=40)
    sb2 = cid(0x6B)
    n.sandbox(restart - timedelta(seconds=1), UID2, sb2)
    n.created(restart - timedelta(seconds=1), sb2, 0, c1)
    ready1 = server(n, 1, restart, 400.0)
    truth.recovered = ready1
    return [(c1, restart, ready1)]


def _probe_kill(
    n: Night, truth: Truth, ready0: datetime, ids: tuple[str, str, str]
) -> list[tuple[str, datetime, datetime | None]]:
    """A rollout restarts the container; the new run's load outlasts the startup probe's budget
    (30 × 10 s) and kubelet kills it: the kill is kubelet's decision."""
    c0, c1, sb = ids
    v = n.v
    roll = ready0 + timedelta(minutes=5)
    traffic(n, 0, ready0 + timedelta(seconds=30), roll - timedelta(seconds=2))
    n.created(roll - timedelta(seconds=1), sb, 1, c1)
    server(n, 1, roll, 99_999.0)
    port = 8000 if v.engine == "vllm" else 30000
    refused = (
        f'Get \\"http://10.4.7.12:{port}/health\\": dial tcp 10.4.7.12:{port}: connect: connection refused'
    )
    for k in range(1, 31):
        n.kubelet(
            roll + timedelta(seconds=10 * k),
            f'prober.go:107] "Probe failed" probeType="Startup" pod="{NS}/{v.pod}" podUID="{UID}" containerName="{v.container}" probeResult="failure" output="{refused}"',
        )
    kill = roll + timedelta(seconds=300)
    n.event(
        kill,
        "Unhealthy",
        "Startup probe failed: " + refused.replace('\\"', '"'),
        "Warning",
        30,
        roll + timedelta(seconds=10),
    )
    n.kubelet(
        kill,
        f'kuberuntime_manager.go:1077] "Message for Container of pod" containerName="{v.container}" containerStatusID={{"Type":"{v.runtime}","ID":"{c1}"}} pod="{NS}/{v.pod}" containerMessage="Container {v.container} failed startup probe, will be restarted"',
    )
    n.event(kill, "Killing", f"Container {v.container} failed startup probe, will be restarted")
    n.kubelet(
        kill,
        f'kuberuntime_container.go:809] "Killing container with a grace period" pod="{NS}/{v.pod}" podUID="{UID}" containerName="{v.container}" containerID="{v.runtime}://{c1}" gracePeriod=30',
    )
    n.exited = kill + timedelta(seconds=30)  # SIGKILL after the grace period
    n.task_exit(n.exited, c1, 137)
    n.pleg(kill + timedelta(seconds=31), UID, c1)
    n.kubelet(
        kill + timedelta(seconds=32),
        f'kuberuntime_manager.go:1100] "Back-off restarting failed container" err="back-off 10s restarting failed container={v.container} pod={v.pod}_{NS}({UID})"',
    )
    n.event(
        kill + timedelta(seconds=32),
        "BackOff",
        f"Back-off restarting failed container {v.container} in pod {v.pod}_{NS}({UID})",
        "Warning",
    )
    truth.kill = kill
    return [(c0, T0, ready0), (c1, roll, None)]


def image(v: Variant) -> str:
    return "vllm/vllm-openai:v0.10.2" if v.engine == "vllm" else "lmsysorg/sglang:v0.5.2-cu126"


def pod_object(n: Night, truth: Truth, runs: list[tuple[str, datetime, datetime | None]]) -> dict[str, Any]:
    """The Pod after the incident: its last run and the termination before it."""
    v = n.v
    last = runs[-1]
    prev = runs[-2] if len(runs) > 1 else None
    reason = {"node_oom": "Error", "probe_kill": "Error"}.get(n.cause, "OOMKilled")
    code = 1 if n.cause == "container_limit" else 137
    port = 8000 if v.engine == "vllm" else 30000
    mem = {"memory": "64Gi", "nvidia.com/gpu": "8"}
    spec: dict[str, Any] = {
        "name": v.container, "image": image(v),
        "resources": {"limits": mem, "requests": mem if v.qos == "guaranteed" else {"memory": "32Gi", "nvidia.com/gpu": "8"}},
        "startupProbe": {"httpGet": {"path": "/health", "port": port}, "periodSeconds": 10,
                         "failureThreshold": 30 if n.cause == "probe_kill" else 60},
        "readinessProbe": {"httpGet": {"path": "/v1/models", "port": port}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/health", "port": port}, "periodSeconds": 10, "timeoutSeconds": 5},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }  # fmt: skip
    containers: list[dict[str, Any]] = [spec]
    if n.cause == "pod_limit":
        containers.append(
            {"name": "metrics-sidecar", "image": "busybox", "resources": {"limits": {"memory": "8Gi"}}}
        )
    status: dict[str, Any] = {
        "name": v.container, "containerID": f"{v.runtime}://{last[0]}", "restartCount": len(runs) - 1,
        "ready": last[2] is not None, "started": True,
        "state": {"running": {"startedAt": rfc(last[1])}},
    }  # fmt: skip
    if n.cause == "probe_kill":
        status["state"] = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off 20s restarting failed container={v.container} pod={v.pod}_{NS}({UID})",
            }
        }
    if prev is not None:
        status["lastState"] = {"terminated": {"exitCode": code, "reason": reason, "startedAt": rfc(prev[1]),
                                              "finishedAt": rfc(n.exited or truth.kill), "containerID": f"{v.runtime}://{prev[0]}"}}  # fmt: skip
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": v.pod, "namespace": NS, "uid": UID2 if n.cause == "eviction" else UID,
                     "ownerReferences": [{"kind": "StatefulSet", "name": v.pod.rsplit("-", 1)[0], "apiVersion": "apps/v1"}]},
        "spec": {"nodeName": NODE, "containers": containers,
                 "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]},
        "status": {"phase": "Running", "qosClass": "Guaranteed" if v.qos == "guaranteed" and n.cause != "pod_limit" else "Burstable",
                   "containerStatuses": [status]},
    }  # fmt: skip


# ---------------------------------------------------------------------- writing
def journal_text(n: Night) -> tuple[str, str]:
    """The node's journal: (file name, text) in the variant's mode."""
    entries = sorted(n.journal, key=lambda e: e[0])
    if n.v.journal == "json":
        lines = []
        for t, ident, pid, msg in entries:
            us = str(int(t.timestamp() * 1_000_000))
            obj = {"__REALTIME_TIMESTAMP": us, "_HOSTNAME": NODE, "SYSLOG_IDENTIFIER": ident, "MESSAGE": msg,
                   "PRIORITY": "6", "_BOOT_ID": "0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f6"}  # fmt: skip
            if ident == "kernel":
                obj["_TRANSPORT"] = "kernel"
            else:
                obj.update({"_PID": str(pid), "_TRANSPORT": "stdout", "_SYSTEMD_UNIT": f"{ident}.service"})
            lines.append(json.dumps(obj))
        return "journal.json", "\n".join(lines) + "\n"
    out = []
    for t, ident, pid, msg in entries:
        who = "kernel" if ident == "kernel" else f"{ident}[{pid}]"
        out.append(f"{t.strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3]}+0000 {NODE} {who}: {msg}")
    return "journal.txt", "\n".join(out) + "\n"


def event_objects(n: Night) -> tuple[str, str]:
    """The events: core/v1 JSON, or events.k8s.io/v1 YAML documents."""
    if n.v.events == "v1":
        items = [
            {"apiVersion": "v1", "kind": "Event", "count": e["count"], "type": e["type"], "reason": e["reason"],
             "message": e["message"], "eventTime": None, "firstTimestamp": rfc(e["first"]), "lastTimestamp": rfc(e["t"]),
             "involvedObject": e["obj"], "source": {"component": "kubelet", "host": NODE},
             "metadata": {"name": f"{n.v.pod}.{i:016x}", "namespace": NS if e["obj"]["kind"] == "Pod" else "default"},
             "reportingComponent": "kubelet", "reportingInstance": NODE}
            for i, e in enumerate(n.events)
        ]  # fmt: skip
        return "events.json", json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": items}, indent=4
        ) + "\n"
    import yaml

    docs = [
        {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": f"{n.v.pod}.{i:016x}", "namespace": NS},
         "regarding": e["obj"], "reason": e["reason"], "note": e["message"], "type": e["type"],
         "deprecatedSource": {"component": "kubelet", "host": NODE}, "deprecatedFirstTimestamp": rfc(e["first"]),
         "deprecatedLastTimestamp": rfc(e["t"]), "deprecatedCount": e["count"], "eventTime": None,
         "reportingController": "kubelet", "reportingInstance": NODE}
        for i, e in enumerate(n.events)
    ]  # fmt: skip
    return "events.yaml", yaml.safe_dump_all(docs, sort_keys=False)


def describe(n: Night, pod: dict[str, Any], captured: datetime) -> str:
    """``kubectl describe pod`` of the Pod, with its Events table aged from ``captured``."""
    spec, st = pod["spec"]["containers"][0], pod["status"]["containerStatuses"][0]
    out = [f"Name:             {pod['metadata']['name']}", f"Namespace:        {NS}", f"Node:             {NODE}/10.4.7.12",
           "Status:           Running", f"Controlled By:    StatefulSet/{pod['metadata']['ownerReferences'][0]['name']}",
           "Containers:", f"  {spec['name']}:", f"    Container ID:  {st['containerID']}", f"    Image:         {spec['image']}"]  # fmt: skip
    state = st["state"]
    if "running" in state:
        out += [
            "    State:          Running",
            f"      Started:      {rfc1123(_t(state['running']['startedAt']))}",
        ]
    else:
        out += ["    State:          Waiting", f"      Reason:       {state['waiting']['reason']}"]
    last = st.get("lastState", {}).get("terminated")
    if last:
        out += ["    Last State:     Terminated", f"      Reason:       {last['reason']}", f"      Exit Code:    {last['exitCode']}",
                f"      Started:      {rfc1123(_t(last['startedAt']))}", f"      Finished:     {rfc1123(_t(last['finishedAt']))}"]  # fmt: skip
    lim, req = spec["resources"]["limits"], spec["resources"]["requests"]
    out += [f"    Ready:          {'True' if st['ready'] else 'False'}", f"    Restart Count:  {st['restartCount']}",
            "    Limits:", f"      memory:          {lim['memory']}", "    Requests:", f"      memory:          {req['memory']}"]  # fmt: skip
    sp = spec["startupProbe"]
    out.append(
        f"    Startup:    http-get http://:{sp['httpGet']['port']}/health delay=0s timeout=1s period={sp['periodSeconds']}s #success=1 #failure={sp['failureThreshold']}"
    )
    out += ["    Mounts:", "      /dev/shm from dshm (rw)", "Volumes:", "  dshm:", "    Type:       EmptyDir (a temporary directory that shares a pod's lifetime)",
            "    Medium:     Memory", "    SizeLimit:  16Gi", f"QoS Class:        {pod['status']['qosClass']}", "Events:",
            "  Type     Reason     Age   From     Message", "  ----     ------     ----  ----     -------"]  # fmt: skip
    for e in n.events:
        if e["obj"]["kind"] != "Pod":
            continue
        age = _age(captured - e["t"])
        if e["count"] > 1:
            age += f" (x{e['count']} over {_age(captured - e['first'])})"
        out.append(f"  {e['type']:<8} {e['reason']:<10} {age}  kubelet  {e['message']}")
    return "\n".join(out) + "\n"


def _t(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _age(d: timedelta) -> str:
    s = int(d.total_seconds())
    return f"{s // 60}m{s % 60}s" if s % 60 else f"{s // 60}m"


def write(n: Night, out: Path, pod: dict[str, Any], truth: Truth) -> None:
    out.mkdir(parents=True, exist_ok=True)
    name, text = journal_text(n)
    (out / name).write_text(text, encoding="utf-8")
    k8s = out / "kubernetes"
    k8s.mkdir(exist_ok=True)
    ev_name, ev_text = event_objects(n)
    (k8s / ev_name).write_text(ev_text, encoding="utf-8")
    if n.v.objects == "json":
        (k8s / "pods.json").write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod]}, indent=4) + "\n",
            encoding="utf-8",
        )
    elif n.v.objects == "yaml":
        import yaml

        (k8s / "pods.yaml").write_text(
            yaml.safe_dump({"apiVersion": "v1", "items": [pod], "kind": "List"}, sort_keys=False),
            encoding="utf-8",
        )
    else:
        captured = max(e["t"] for e in n.events) + timedelta(seconds=60)
        path = k8s / "describe.txt"
        path.write_text(describe(n, pod, captured), encoding="utf-8")
        os.utime(path, (captured.timestamp(), captured.timestamp()))
    for run, lines in n.logs.items():
        pod_uid = UID2 if n.cause == "eviction" and run == "1" else UID
        d = out / "var/log/pods" / f"{NS}_{n.v.pod}_{pod_uid}" / n.v.container
        d.mkdir(parents=True, exist_ok=True)
        fname = "0.log" if n.cause == "eviction" else f"{run}.log"
        (d / fname).write_text("\n".join(lines) + "\n", encoding="utf-8")
    truth.files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def main(argv: list[str]) -> None:
    out = argv[0] if argv and not argv[0].startswith("--") else "sample_logs_k8s"
    cause = argv[argv.index("--cause") + 1] if "--cause" in argv else "oom_group"
    if cause not in CAUSES:
        raise SystemExit(f"Error: --cause must be one of {', '.join(CAUSES)}")
    variant = draw(int(argv[argv.index("--seed") + 1])) if "--seed" in argv else None
    night(cause, out, variant)


if __name__ == "__main__":
    main(sys.argv[1:])
