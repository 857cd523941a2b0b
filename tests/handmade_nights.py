"""Nights written by hand, each with its ground truth, for what the scenario generator does not
vary (QA brief 3).

- :func:`two_hosts`: one build of two hosts read with ``--tz America/Chicago``. ``gh200-a``: a
  journal rendered ``short-precise`` (no zone, no year) in the host's zone, and an SGLang log
  stamped in UTC (zone-less, five hours ahead); ``sglang-gh.service`` is killed at its cgroup
  limit at 14:00:00 UTC, systemd restarts it and it is fired up at 14:04:40.6 UTC. ``rhel8-b``:
  RHEL 8's ``/var/log/messages`` (kernel 4.18 wording, rsyslog ``#012``) with vLLM 0.6.3's lines
  in it, whose unit only a start under its Description and the OOM kill of its pid name;
  ``vllm-old.service`` is killed host-wide at 14:20:00 UTC with 200 requests running and 12
  queued, the operator restarts it and it is ready at 14:28:08 UTC.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

CHICAGO = ZoneInfo("America/Chicago")
D = timedelta


def T(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


#: the truth of :func:`two_hosts`
GH200_KILL = T("2026-06-10 14:00:00")
GH200_READY = T("2026-06-10 14:04:40.600")
RHEL_KILL = T("2026-06-10 14:20:00")
RHEL_READY = T("2026-06-10 14:28:08")


def _short(ts: datetime) -> str:
    local = ts.astimezone(CHICAGO)
    return f"{local:%b} {local.day:2d} {local:%H:%M:%S}.{local.microsecond:06d}"


def _syslog(ts: datetime) -> str:
    local = ts.astimezone(CHICAGO)
    return f"{local:%b} {local.day:2d} {local:%H:%M:%S}"


def _write(path: Path, lines: list[tuple[datetime, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(text + "\n" for _, text in sorted(lines, key=lambda x: x[0])))


def _gh200(root: Path) -> None:
    host, unit = "gh200-a", "sglang-gh.service"
    start, kill = T("2026-06-10 13:00:00"), GH200_KILL
    journal: list[tuple[datetime, str]] = []
    server: list[tuple[datetime, str]] = []

    def j(ts: datetime, ident: str, msg: str) -> None:
        journal.append((ts, f"{_short(ts)} {host} {ident}: {msg}"))

    def sg(ts: datetime, msg: str, tp: bool = True) -> None:
        server.append((ts, f"[{ts:%Y-%m-%d %H:%M:%S}{' TP0' if tp else ''}] {msg}"))

    def run(t0: datetime) -> datetime:
        sg(t0, "server_args=ServerArgs(model_path='/models/Llama-3.1-70B-FP8', tp_size=1, "
               "mem_fraction_static=0.85, max_running_requests=128, port=30000, host='0.0.0.0')", tp=False)  # fmt: skip
        sg(t0 + D(seconds=4), "Load weight begin. avail mem=94.50 GB")
        sg(t0 + D(seconds=190), "Load weight end. elapsed=186.00 s, type=LlamaForCausalLM, quant=fp8, "
                                "avail mem=26.10 GB, mem usage=68.40 GB.")  # fmt: skip
        sg(t0 + D(seconds=192), "KV Cache is allocated. #tokens: 201248, KV size: 12.74 GB")
        sg(
            t0 + D(seconds=193),
            "Capture cuda graph begin. This can take up to several minutes. avail mem=12.93 GB",
        )
        sg(
            t0 + D(seconds=255),
            "Capture cuda graph end. Time elapsed: 62.00 s. mem usage=1.31 GB. avail mem=11.62 GB.",
        )
        up = t0 + D(seconds=257)
        sg(up, "INFO:     Application startup complete.", tp=False)
        sg(up, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", tp=False)
        sg(up + D(seconds=15), "The server is fired up and ready to roll!", tp=False)
        return up

    j(start - D(seconds=0.01), "systemd[1]", f"Starting {unit} - SGLang GH200...")
    j(start, "systemd[1]", f"Started {unit} - SGLang GH200.")
    t, i = run(start + D(seconds=3)) + D(seconds=60), 0
    while t < kill:
        sg(t, f"Decode batch, #running-req: {min(128, 20 + i)}, #token: {50000 + 300 * i}, token usage: "
              f"{min(0.99, 0.2 + 0.002 * i):.2f}, cuda graph: True, gen throughput (token/s): 900.00, "
              f"#queue-req: {max(0, i - 100)}")  # fmt: skip
        t, i = t + D(seconds=10), i + 1
    record = [
        "sglang::schedul invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
        "CPU: 40 PID: 7100 Comm: sglang::schedul Not tainted 6.8.0-1013-nvidia-64k #14-Ubuntu",
        "memory: usage 419430400kB, limit 419430400kB, failcnt 3311",
        "Tasks state (memory values in pages):",
        "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name",
        "[   7000]   998  7000   155648   102400   101000     1400        0     9961472        0             0 python3",
        "[   7100]   998  7100  6553600  6001000  6000000     1000        0   104857600        0             0 sglang::schedul",
        f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg=/system.slice/{unit},"
        f"task_memcg=/system.slice/{unit},task=sglang::schedul,pid=7100,uid=998",
        "Memory cgroup out of memory: Killed process 7100 (sglang::schedul) total-vm:419430400kB, "
        "anon-rss:384000000kB, file-rss:64000kB, shmem-rss:0kB, UID:998 pgtables:102400kB oom_score_adj:0",
    ]  # fmt: skip
    for n, line in enumerate(record):
        j(kill + D(microseconds=n), "kernel", line)
    j(
        kill + D(seconds=0.1),
        "systemd[1]",
        f"{unit}: A process of this unit has been killed by the OOM killer.",
    )
    j(kill + D(seconds=0.4), "systemd[1]", f"{unit}: Main process exited, code=killed, status=9/KILL")
    j(kill + D(seconds=0.41), "systemd[1]", f"{unit}: Failed with result 'oom-kill'.")
    j(kill + D(seconds=5.5), "systemd[1]", f"{unit}: Scheduled restart job, restart counter is at 1.")
    j(kill + D(seconds=5.51), "systemd[1]", f"Stopped {unit} - SGLang GH200.")
    j(kill + D(seconds=5.59), "systemd[1]", f"Starting {unit} - SGLang GH200...")
    j(kill + D(seconds=5.6), "systemd[1]", f"Started {unit} - SGLang GH200.")
    run(kill + D(seconds=8.6))
    _write(root / "gh200-a" / "journal.txt", journal)
    _write(root / "gh200-a" / "sglang-gh.log", server)


def _rhel8(root: Path) -> None:
    host, unit = "rhel8-b", "vllm-old.service"
    start, kill = T("2026-06-10 13:30:00"), RHEL_KILL
    lines: list[tuple[datetime, str]] = []

    def m(ts: datetime, ident: str, msg: str) -> None:
        lines.append((ts, f"{_syslog(ts)} {host} {ident}: {msg}"))

    def v(ts: datetime, pid: int, src: str, msg: str) -> None:
        m(ts, f"vllm[{pid}]", f"INFO {ts.astimezone(CHICAGO):%m-%d %H:%M:%S} {src}] {msg}")

    def run(t0: datetime, pid: int) -> datetime:
        v(t0, pid, "api_server.py:528", "vLLM API server version 0.6.3.post1")
        v(t0, pid, "api_server.py:529", "args: Namespace(host=None, port=8000, model='/models/mixtral-8x7b', "
                                        "tensor_parallel_size=2, gpu_memory_utilization=0.9, max_num_seqs=256)")  # fmt: skip
        v(t0 + D(seconds=9), pid, "llm_engine.py:237", "Initializing an LLM engine (v0.6.3.post1) with config: "
                                                       "model='/models/mixtral-8x7b', tensor_parallel_size=2")  # fmt: skip
        v(t0 + D(seconds=120), pid, "model_runner.py:1067", "Loading model weights took 43.5000 GB")
        v(
            t0 + D(seconds=135),
            pid,
            "distributed_gpu_executor.py:57",
            "# GPU blocks: 11000, # CPU blocks: 4096",
        )
        v(t0 + D(seconds=180), pid, "model_runner.py:1523", "Graph capturing finished in 40 secs.")
        up = t0 + D(seconds=185)
        m(up, f"vllm[{pid}]", "INFO:     Application startup complete.")
        return up

    def stats(t: datetime, until: datetime, pid: int, running: int, pending: int) -> None:
        while t < until:
            v(t, pid, "metrics.py:351", f"Avg prompt throughput: 500.0 tokens/s, Avg generation throughput: "
                                        f"1500.0 tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: "
                                        f"{pending} reqs, GPU KV cache usage: 97.5%, CPU KV cache usage: 0.0%.")  # fmt: skip
            t += D(seconds=10)

    m(start, "systemd[1]", "Started vLLM Mixtral (old).")
    stats(run(start + D(seconds=2), 2100) + D(seconds=30), kill, 2100, 200, 12)
    record = [
        "python3 invoked oom-killer: gfp_mask=0x6200ca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
        "CPU: 5 PID: 2100 Comm: python3 Kdump: loaded Not tainted 4.18.0-553.8.1.el8_10.x86_64 #1",
        "Mem-Info:",
        "active_anon:53632000 inactive_anon:1327714 isolated_anon:0#012 active_file:43 inactive_file:127 isolated_file:40",
        "Tasks state (memory values in pages):",
        "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
        "[    806]     0   806    18651      230   188416        0         -1000 sshd",
        "[   2100]   991  2100 60000000 52428800 422183936        0             0 python3",
        "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
        f"task_memcg=/system.slice/{unit},task=python3,pid=2100,uid=991",
        "Out of memory: Killed process 2100 (python3) total-vm:240000000kB, anon-rss:209600000kB, "
        "file-rss:115200kB, shmem-rss:0kB, UID:991 pgtables:412289kB oom_score_adj:0",
    ]  # fmt: skip
    for line in record:
        m(kill, "kernel", line)
    m(kill + D(seconds=1), "systemd[1]", f"{unit}: Main process exited, code=killed, status=9/KILL")
    m(kill + D(seconds=1), "systemd[1]", f"{unit}: Failed with result 'signal'.")
    op = T("2026-06-10 14:25:00")
    m(
        op,
        "sudo[9001]",
        f"   admin : TTY=pts/0 ; PWD=/root ; USER=root ; COMMAND=/bin/systemctl restart {unit}",
    )
    m(op + D(seconds=1), "systemd[1]", "Started vLLM Mixtral (old).")
    up = run(op + D(seconds=3), 9100)
    stats(up + D(seconds=30), up + D(minutes=5), 9100, 50, 0)
    _write(root / "rhel8-b" / "messages", lines)


def two_hosts(root: Path) -> Path:
    """Write :func:`two_hosts`' night under ``root``; returns ``root``."""
    _gh200(root)
    _rhel8(root)
    return root


#: the truth of :func:`node_oom_neighbour`: the victim and what it held (kB)
NEIGHBOUR_KILL = T("2026-05-10 03:10:00")
NEIGHBOUR_RSS_KB = 251_600_000  # anon-rss of the killed python (the etl container's only process)


def _vllm_pod_log(path: Path, start: datetime, end: datetime) -> None:
    """A V1 vLLM's CRI log (the API server's statistics every 10 s from start + 4 min to end)."""
    lines = [
        (start, "(APIServer pid=1) INFO {:%m-%d %H:%M:%S} [api_server.py:1805] vLLM API server version 0.10.2"),
        (start + D(seconds=1), "(APIServer pid=1) INFO {:%m-%d %H:%M:%S} [utils.py:328] non-default args: "
                               "{{'model': '/models/qwen2.5-72b', 'tensor_parallel_size': 8}}"),
        (start + D(seconds=200), "(APIServer pid=1) INFO {:%m-%d %H:%M:%S} [api_server.py:1876] Starting vLLM API "
                                 "server 0 on http://0.0.0.0:8000"),
        (start + D(seconds=200), "(APIServer pid=1) INFO:     Application startup complete."),
    ]  # fmt: skip
    ts = start + D(seconds=240)
    while ts <= end:
        lines.append((ts, "(APIServer pid=1) INFO {:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: Avg prompt "
                          "throughput: 900.0 tokens/s, Avg generation throughput: 2000.0 tokens/s, Running: 30 "
                          "reqs, Waiting: 0 reqs, GPU KV cache usage: 40.0%, Prefix cache hit rate: 18.4%"))  # fmt: skip
        ts += D(seconds=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{t:%Y-%m-%dT%H:%M:%S.%f}123Z stdout F {text.format(t)}\n" for t, text in lines))


def node_oom_neighbour(root: Path, serving_log: bool = False) -> Path:
    """A Kubernetes node runs out of RAM at 03:10:00 UTC (a global OOM: ``CONSTRAINT_NONE``)
    and the kernel kills a neighbour's process, ``python`` of the BestEffort pod
    ``batch/etl-28571234-x7k2p`` (240 GiB), not the vLLM pod's engine core beside it (200 GiB),
    which goes on serving. The task table is the whole node's: the vLLM pod's processes are in
    it. Writes ``journal.txt`` (kernel, containerd, kubelet) and ``kubernetes/events.json`` (the
    node's ``SystemOOM``) under ``root``; with ``serving_log``, the vLLM pod's log too, its
    statistics going on for 20 minutes after the kill."""
    host = "gpu-node-9"
    vuid, vcid = "11111111-2222-4333-8444-555555555555", "c0" * 32
    euid, ecid = "99999999-8888-4777-8666-555555555555", "e1" * 32
    kill = NEIGHBOUR_KILL
    lines: list[tuple[datetime, str]] = []

    def j(ts: datetime, ident: str, msg: str) -> None:
        lines.append((ts, f"{ts:%Y-%m-%dT%H:%M:%S}.{ts.microsecond // 1000:03d}+0000 {host} {ident}: {msg}"))

    def ctd(ts: datetime, msg: str) -> None:
        j(ts, "containerd[900]", f'time="{ts:%Y-%m-%dT%H:%M:%S.%f}123Z" level=info msg="{msg}"')

    def sandbox(ts: datetime, ns: str, pod: str, uid: str, name: str, cid: str, sid: str) -> None:
        ctd(ts, f'RunPodSandbox for &PodSandboxMetadata{{Name:{pod},Uid:{uid},Namespace:{ns},Attempt:0,}} '
                f'returns sandbox id \\"{sid}\\"')  # fmt: skip
        ctd(ts + D(seconds=1), f'CreateContainer within sandbox \\"{sid}\\" for container '
                               f'&ContainerMetadata{{Name:{name},Attempt:0,}} returns container id \\"{cid}\\"')  # fmt: skip

    sandbox(T("2026-05-10 00:00:00"), "inference", "vllm-0", vuid, "vllm", vcid, "5b" * 32)
    sandbox(T("2026-05-10 03:00:00"), "batch", "etl-28571234-x7k2p", euid, "etl", ecid, "6c" * 32)
    ecg = (
        f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{euid.replace('-', '_')}.slice/"
        f"cri-containerd-{ecid}.scope"
    )
    record = [
        "python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=1000",
        "CPU: 7 PID: 301777 Comm: python Not tainted 6.8.0-60-generic #63-Ubuntu",
        "Mem-Info:",
        "active_anon:500012345 inactive_anon:12000 isolated_anon:0",
        "Tasks state (memory values in pages):",
        "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name",
        "[ 201101]     0 201101  9961472  1310720  1300000    10720        0    10485760        0           937 python3",
        "[ 201190]     0 201190 61943040 52428800 52400000    28800        0   425829120        0           937 VLLM::EngineCor",
        "[ 301777]  1000 301777 70000000 62914560 62900000    14560        0   505829120        0          1000 python",
        f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=cri-containerd-{ecid}.scope,mems_allowed=0-1,"
        f"global_oom,task_memcg={ecg},task=python,pid=301777,uid=1000",
        "Out of memory: Killed process 301777 (python) total-vm:280000000kB, anon-rss:251600000kB, "
        "file-rss:58240kB, shmem-rss:0kB, UID:1000 pgtables:493974kB oom_score_adj:1000",
    ]  # fmt: skip
    for n, line in enumerate(record):
        j(kill + D(microseconds=n), "kernel", line)
    ctd(kill + D(seconds=0.2), f'TaskExit event container_id:\\"{ecid}\\" id:\\"{ecid}\\" pid:301777 '
                               "exit_status:137 exited_at:{seconds:1778382600 nanos:200000000}")  # fmt: skip
    j(kill + D(seconds=1), "kubelet[1500]", f'I0510 03:10:01.000000    1500 kubelet.go:2465] "SyncLoop (PLEG): event '
                                            f'for pod" pod="batch/etl-28571234-x7k2p" event={{"ID":"{euid}",'
                                            f'"Type":"ContainerDied","Data":"{ecid}"}}')  # fmt: skip
    _write(root / "journal.txt", lines)
    event = {
        "apiVersion": "v1", "kind": "Event", "count": 1, "type": "Warning", "reason": "SystemOOM",
        "message": "System OOM encountered, victim process: python, pid: 301777",
        "firstTimestamp": "2026-05-10T03:10:00Z", "lastTimestamp": "2026-05-10T03:10:00Z",
        "involvedObject": {"kind": "Node", "name": host, "uid": host},
        "source": {"component": "kubelet", "host": host}, "metadata": {"name": f"{host}.1", "namespace": "default"},
    }  # fmt: skip
    (root / "kubernetes").mkdir(parents=True, exist_ok=True)
    (root / "kubernetes" / "events.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [event]})
    )
    if serving_log:
        pod = root / "var" / "log" / "pods" / f"inference_vllm-0_{vuid}" / "vllm" / "0.log"
        _vllm_pod_log(pod, T("2026-05-10 00:00:03"), kill + D(minutes=20))
    return root


#: the truth of :func:`stuck_worker`
STUCK_KILL = T("2026-06-02 02:00:00")
STUCK_PID = 5300


def stuck_worker(root: Path, holder: int = STUCK_PID) -> Path:
    """``vllm-b.service`` (vLLM 0.10.2, journal ``short-iso``) is killed host-wide at 02:00:00
    UTC. Its API server exits; the stop's SIGTERM times out, systemd SIGKILLs the worker (pid
    5300), which outlives it (``Processes still around after final SIGKILL``): stuck in the
    driver, it holds GPU 0's memory to the end of the data (02:30), as nvidia-smi's
    ``--query-compute-apps`` loop lists it; GPUs 1–3 are freed at 02:01:40, after the SIGKILL.
    Nothing restarts the unit. ``holder``: the pid nvidia-smi lists (the kernel's victim, 5200,
    for a kill whose process the driver keeps)."""
    host, unit = "gpu-g4", "vllm-b.service"
    start, kill = T("2026-06-02 01:00:00"), STUCK_KILL
    lines: list[tuple[datetime, str]] = []

    def j(ts: datetime, ident: str, msg: str) -> None:
        lines.append((ts, f"{ts:%Y-%m-%dT%H:%M:%S}.{ts.microsecond // 1000:03d}+0000 {host} {ident}: {msg}"))

    def v(ts: datetime, proc: str, pid: int, msg: str) -> None:
        j(ts, "vllm[5100]", f"({proc} pid={pid}) INFO {ts:%m-%d %H:%M:%S} [x.py:1] {msg}")

    j(start, "systemd[1]", f"Started {unit} - vLLM B.")
    v(start + D(seconds=2), "APIServer", 5100, "vLLM API server version 0.10.2")
    v(start + D(seconds=2), "APIServer", 5100, "non-default args: {'model': '/models/qwen2.5-72b', "
                                               "'tensor_parallel_size': 4}")  # fmt: skip
    v(
        start + D(seconds=150),
        "Worker_TP0",
        STUCK_PID,
        "Model loading took 34.1000 GiB and 138.000000 seconds",
    )
    j(start + D(seconds=200), "vllm[5100]", "(APIServer pid=5100) INFO:     Application startup complete.")
    t = start + D(seconds=230)
    while t < kill:
        v(t, "APIServer", 5100, "Engine 000: Avg prompt throughput: 900.0 tokens/s, Avg generation throughput: "
                                "2000.0 tokens/s, Running: 100 reqs, Waiting: 0 reqs, GPU KV cache usage: 60.0%")  # fmt: skip
        t += D(seconds=10)
    record = [
        "VLLM::EngineCor invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
        "Mem-Info:",
        "Tasks state (memory values in pages):",
        "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name",
        "[   5100]   998  5100  9961472  1310720  1300000    10720        0    10485760        0             0 python3",
        "[   5200]   998  5200 61943040 120000000 119990000    10000        0   925829120        0             0 VLLM::EngineCor",
        f"[   {STUCK_PID}]   998  {STUCK_PID} 20971520   262144   260000     2144        0     4194304        0             0 VLLM::Worker_TP",
        f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,"
        f"task_memcg=/system.slice/{unit},task=VLLM::EngineCor,pid=5200,uid=998",
        "Out of memory: Killed process 5200 (VLLM::EngineCor) total-vm:247772160kB, anon-rss:479960000kB, "
        "file-rss:40000kB, shmem-rss:0kB, UID:998 pgtables:904130kB oom_score_adj:0",
    ]  # fmt: skip
    for n, line in enumerate(record):
        j(kill + D(microseconds=n), "kernel", line)
    sd = "systemd[1]"
    j(kill + D(seconds=0.1), sd, f"{unit}: A process of this unit has been killed by the OOM killer.")
    j(kill + D(seconds=0.8), "vllm[5100]", f"(APIServer pid=5100) ERROR {kill:%m-%d %H:%M:%S} [core_client.py:564] "
                                           "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.")  # fmt: skip
    j(kill + D(seconds=3), sd, f"{unit}: Main process exited, code=exited, status=1/FAILURE")
    j(kill + D(seconds=93), sd, f"{unit}: State 'stop-sigterm' timed out. Killing.")
    j(
        kill + D(seconds=93.001),
        sd,
        f"{unit}: Killing process {STUCK_PID} (VLLM::Worker_TP) with signal SIGKILL.",
    )
    j(kill + D(seconds=183), sd, f"{unit}: Processes still around after final SIGKILL. Entering failed mode.")
    j(kill + D(seconds=183.001), sd, f"{unit}: Failed with result 'oom-kill'.")
    _write(root / "journal.txt", lines)
    gpus = ["timestamp, index, memory.total [MiB], memory.used [MiB], utilization.gpu [%]"]
    apps = ["timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]"]
    ts = kill - D(minutes=10)
    while ts <= kill + D(minutes=30):
        for g in range(4):
            used = 74210 if ts < kill + D(seconds=95) or g == 0 else 500
            gpus.append(f"{ts:%Y/%m/%d %H:%M:%S}.000, {g}, 81559 MiB, {used} MiB, 0 %")
        if ts >= kill:
            apps.append(f"{ts:%Y/%m/%d %H:%M:%S}.000, GPU-0000, {holder}, VLLM::Worker_TP, 73700 MiB")
        ts += D(seconds=10)
    (root / "nvidia-smi-gpu.csv").write_text("\n".join(gpus) + "\n")
    (root / "nvidia-smi-apps.csv").write_text("\n".join(apps) + "\n")
    return root


#: the truth of :func:`docker_logs`
DOCKER_CID = "8c1d4e7f90ab12cd34ef5678901a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c"
DOCKER_KILL = T("2026-04-02 02:30:00")
DOCKER_RESTART = T("2026-04-02 02:30:02.600")
DOCKER_READY = T("2026-04-02 02:33:25.100")


def _vllm_start(t0: datetime, api: int, core: int, worker: int) -> list[tuple[datetime, str]]:
    """A vLLM 0.10.2 start (V1), ready 201 s after ``t0``."""
    out: list[tuple[datetime, str]] = []

    def add(dt: float, proc: str, pid: int, src: str, msg: str) -> None:
        ts = t0 + D(seconds=dt)
        out.append((ts, f"({proc} pid={pid}) INFO {ts:%m-%d %H:%M:%S} [{src}] {msg}"))

    add(0, "APIServer", api, "api_server.py:1805", "vLLM API server version 0.10.2")
    add(0.1, "APIServer", api, "utils.py:328", "non-default args: {'model': '/models/qwen2.5-72b', "
                                              "'tensor_parallel_size': 4, 'max_num_seqs': 256}")  # fmt: skip
    add(7, "EngineCore_DP0", core, "core.py:654", "Initializing a V1 LLM engine (v0.10.2) with config: "
                                                 "model='/models/qwen2.5-72b', tensor_parallel_size=4")  # fmt: skip
    add(11, "Worker_TP0", worker, "gpu_model_runner.py:2338", "Starting to load model /models/qwen2.5-72b...")
    add(
        163,
        "Worker_TP0",
        worker,
        "gpu_model_runner.py:2392",
        "Model loading took 34.1000 GiB and 152.000000 seconds",
    )
    add(183, "EngineCore_DP0", core, "kv_cache_utils.py:864", "GPU KV cache size: 1,104,832 tokens")
    add(
        198,
        "Worker_TP0",
        worker,
        "gpu_model_runner.py:3118",
        "Graph capturing finished in 15 secs, took 1.10 GiB",
    )
    add(201, "APIServer", api, "api_server.py:1876", "Starting vLLM API server 0 on http://0.0.0.0:8000")
    out.append((t0 + D(seconds=201), f"(APIServer pid={api}) INFO:     Application startup complete."))
    return out


def docker_logs(root: Path) -> Path:
    """vLLM in a Docker container (default json-file log driver), saved with ``docker logs -t``
    (``vllm-qwen.log``), beside the host's journal as ``short-iso`` text, which carries no
    container fields: the container is known by its scope, ``docker-<id>.scope``, alone. At
    02:30:00 UTC the kernel kills the engine core at the container's 200 GiB limit (``docker run
    --memory``) with 256 requests running; Docker's restart policy starts the same container
    again at 02:30:02.6 and it is ready at 02:33:25.1."""
    host, cid, kill = "gpu-d1", DOCKER_CID, DOCKER_KILL
    start = T("2026-04-02 01:00:00.500")
    server = _vllm_start(start + D(seconds=1.5), 1, 180, 250)
    t, i = server[-1][0] + D(seconds=60), 0
    while t < kill:
        server.append((t, f"(APIServer pid=1) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: Avg prompt "
                          f"throughput: 900.0 tokens/s, Avg generation throughput: 2000.0 tokens/s, Running: "
                          f"{min(256, 60 + i)} reqs, Waiting: 0 reqs, GPU KV cache usage: 60.0%"))  # fmt: skip
        t, i = t + D(seconds=10), i + 1
    server.append((kill + D(seconds=0.8), f"(APIServer pid=1) ERROR {kill:%m-%d %H:%M:%S} [core_client.py:564] "
                                          "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."))  # fmt: skip
    server.append((kill + D(seconds=1.2), "(APIServer pid=1) INFO:     Shutting down"))
    server += _vllm_start(DOCKER_RESTART + D(seconds=1.5), 1, 180, 250)
    path = root / "vllm-qwen.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(f"{ts:%Y-%m-%dT%H:%M:%S.%f}123Z {text}\n" for ts, text in sorted(server, key=lambda x: x[0]))
    )
    lines: list[tuple[datetime, str]] = []

    def j(ts: datetime, ident: str, msg: str) -> None:
        lines.append((ts, f"{ts:%Y-%m-%dT%H:%M:%S}.{ts.microsecond // 1000:03d}+0000 {host} {ident}: {msg}"))

    scope = f"docker-{cid}.scope"
    j(start, "systemd[1]", f"Started {scope} - libcontainer container {cid}.")
    record = [
        "VLLM::EngineCor invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
        "memory: usage 209715200kB, limit 209715200kB, failcnt 5121",
        "Tasks state (memory values in pages):",
        "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name",
        "[  91000]     0 91000  9961472  1048576  1040000     8576        0    18350080        0             0 python3",
        "[  91180]     0 91180 52428800 50331648 50300000    31648        0   405306368        0             0 VLLM::EngineCor",
        f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset={scope},mems_allowed=0-1,"
        f"oom_memcg=/system.slice/{scope},task_memcg=/system.slice/{scope},task=VLLM::EngineCor,pid=91180,uid=0",
        "Memory cgroup out of memory: Killed process 91180 (VLLM::EngineCor) total-vm:209715200kB, "
        "anon-rss:201200000kB, file-rss:126592kB, shmem-rss:0kB, UID:0 pgtables:395806kB oom_score_adj:0",
    ]  # fmt: skip
    for n, line in enumerate(record):
        j(kill + D(microseconds=n), "kernel", line)
    j(
        kill + D(seconds=0.05),
        "systemd[1]",
        f"{scope}: A process of this unit has been killed by the OOM killer.",
    )
    j(kill + D(seconds=1.9), "dockerd[1302]", f'time="2026-04-02T02:30:01.901234567Z" level=info msg="ignoring event" '
                                              f'container={cid} module=libcontainerd namespace=moby '
                                              'topic=/tasks/delete type="*events.TaskDelete"')  # fmt: skip
    j(kill + D(seconds=2.0), "systemd[1]", f"{scope}: Deactivated successfully.")
    j(DOCKER_RESTART, "systemd[1]", f"Started {scope} - libcontainer container {cid}.")
    _write(root / "journal.txt", lines)
    return root
