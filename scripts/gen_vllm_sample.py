#!/usr/bin/env python3
"""Generate ``sample_logs_vllm/``: a vLLM incident, deterministically.

The story (host ``gpu-node-3``, 8× H100 80 GB, clock in UTC, vLLM 0.10.2 V1 engine):

* 2026-03-18 13:00 — ``vllm-eagle.service`` (Llama-3.3-70B, TP 8, EAGLE-3 drafter with 4
  speculative tokens, ``MemoryMax=400G``) starts and is ready after about 4.5 minutes.
* From 13:10 traffic climbs: running requests rise to 256 (``--max-num-seqs``), the waiting
  queue grows, GPU KV-cache usage reaches 99 %, and the engine core's host RSS grows with the
  queued requests (the journal's earlyoom lines show host memory shrinking).
* 13:20:00 — the unit's cgroup reaches its limit; the kernel's memcg OOM killer kills the engine
  core (``VLLM::EngineCor``); the API server logs ``Engine core proc EngineCore_DP0 died
  unexpectedly``; systemd logs ``Failed with result 'oom-kill'`` (no automatic restart:
  ``Restart=no``).
* 13:21:00 — the operator starts ``vllm-plain.service`` (the same model without speculative
  decoding) on the same port; it is ready at 13:25:01.

Files: ``journal.txt`` (``journalctl -o short-iso``, the servers' stdout in it), ``dmesg.txt``
(``dmesg -T``), ``nvidia-smi-gpu.csv`` (``--query-gpu`` every 10 s).

Usage: ``python scripts/gen_vllm_sample.py sample_logs_vllm``
"""

from __future__ import annotations

import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

HOST = "gpu-node-3"
T0 = datetime(2026, 3, 18, 13, 0, 0, tzinfo=UTC)
KILL = T0 + timedelta(minutes=20)
LIMIT_KB = 400 * 1024 * 1024
GPUS = 8
TOTAL_MIB = 81559


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"


class Journal:
    def __init__(self) -> None:
        self.lines: list[tuple[datetime, str]] = []

    def add(self, t: datetime, ident: str, msg: str) -> None:
        self.lines.append((t, f"{iso(t)} {HOST} {ident}: {msg}"))

    def vllm(self, t: datetime, pid: int, proc: str, level: str, where: str, msg: str) -> None:
        self.add(t, f"vllm[{pid}]", f"({proc}) {level} {t:%m-%d %H:%M:%S} [{where}] {msg}")

    def text(self) -> str:
        return "\n".join(line for _, line in sorted(self.lines, key=lambda x: x[0])) + "\n"


def server(j: Journal, start: datetime, pid: int, spec: bool, load_s: float) -> datetime:
    """One vLLM server's start, as the journal has its stdout; returns when it is ready."""
    api, core, worker = (
        f"APIServer pid={pid}",
        f"EngineCore_DP0 pid={pid + 100}",
        f"Worker_TP0 pid={pid + 200}",
    )
    args = "{'model': '/models/llama-3.3-70b', 'tensor_parallel_size': 8, 'gpu_memory_utilization': 0.92, 'max_num_seqs': 256"
    if spec:
        args += ", 'speculative_config': {'method': 'eagle3', 'model': '/models/llama-3.3-70b-eagle3', 'num_speculative_tokens': 4}"
    j.vllm(
        start + timedelta(seconds=3), pid, api, "INFO", "api_server.py:1805", "vLLM API server version 0.10.2"
    )
    j.vllm(start + timedelta(seconds=3), pid, api, "INFO", "utils.py:328", f"non-default args: {args}}}")
    j.vllm(
        start + timedelta(seconds=10),
        pid,
        core,
        "INFO",
        "core.py:654",
        "Initializing a V1 LLM engine (v0.10.2) with config: model='/models/llama-3.3-70b', tensor_parallel_size=8",
    )
    w0 = start + timedelta(seconds=14)
    j.vllm(
        w0, pid, worker, "INFO", "gpu_model_runner.py:2338", "Starting to load model /models/llama-3.3-70b..."
    )
    wl = load_s * 0.7
    j.vllm(
        w0 + timedelta(seconds=wl),
        pid,
        worker,
        "INFO",
        "gpu_model_runner.py:2392",
        f"Model loading took {17.6 + (1.9 if spec else 0):.4f} GiB and {wl:.6f} seconds",
    )
    kv = w0 + timedelta(seconds=wl + load_s * 0.12)
    j.vllm(kv, pid, core, "INFO", "kv_cache_utils.py:864", "GPU KV cache size: 2,104,832 tokens")
    j.vllm(
        kv,
        pid,
        core,
        "INFO",
        "kv_cache_utils.py:868",
        "Maximum concurrency for 131,072 tokens per request: 16.06x",
    )
    g = kv + timedelta(seconds=load_s * 0.1)
    j.vllm(
        g,
        pid,
        worker,
        "INFO",
        "gpu_model_runner.py:3118",
        "Graph capturing finished in 25 secs, took 1.20 GiB",
    )
    j.vllm(
        g + timedelta(seconds=1),
        pid,
        core,
        "INFO",
        "core.py:218",
        f"init engine (profile, create kv cache, warmup model) took {load_s * 0.25:.2f} seconds",
    )
    ready = g + timedelta(seconds=3)
    j.vllm(ready, pid, api, "INFO", "api_server.py:1876", "Starting vLLM API server 0 on http://0.0.0.0:8000")
    j.add(ready, f"vllm[{pid}]", f"({api}) INFO:     Application startup complete.")
    return ready


def traffic(j: Journal, rng: random.Random, start: datetime, end: datetime, pid: int) -> None:
    api = f"APIServer pid={pid}"
    t, i = start, 0
    while t < end:
        frac = (t - start) / (end - start)
        running = min(256, int(120 + 200 * frac))
        waiting = max(0, int(400 * frac - 150))
        kv = min(99.4, 55 + 50 * frac)
        gen = 2100 + rng.uniform(-80, 80)
        j.vllm(
            t,
            pid,
            api,
            "INFO",
            "loggers.py:123",
            f"Engine 000: Avg prompt throughput: {rng.uniform(800, 1200):.1f} tokens/s, Avg generation throughput: "
            f"{gen:.1f} tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: {kv:.1f}%, "
            "Prefix cache hit rate: 18.4%",
        )
        mal = 2.6 - 0.4 * frac
        j.vllm(
            t,
            pid,
            api,
            "INFO",
            "metrics.py:96",
            f"SpecDecoding metrics: Mean acceptance length: {mal:.2f}, Accepted throughput: {gen * 0.55:.2f} tokens/s, "
            f"Drafted throughput: {gen:.2f} tokens/s, Accepted: {int(gen * 5.5)} tokens, Drafted: {int(gen * 10)} tokens, "
            "Per-position acceptance rate: 0.742, 0.551, 0.410, 0.302, Avg Draft acceptance rate: 50.1%",
        )
        if i % 3 == 0:
            j.add(
                t,
                f"vllm[{pid}]",
                f'({api}) INFO:     10.20.0.{7 + i % 5}:{40000 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
            )
        avail = 1_900_000 - 400_000 * frac
        if i % 3 == 0:
            j.add(
                t,
                "earlyoom[811]",
                f"mem avail: {int(avail):7d} of 2063588 MiB ({avail / 20635.88:5.2f}%), swap free:    0 of    0 MiB ( 0.00%)",
            )
        t += timedelta(seconds=10)
        i += 1


def kernel(kill: datetime) -> list[str]:
    def k(msg: str) -> str:
        return f"[{kill:%a %b %d %H:%M:%S %Y}] {msg}"

    usage = LIMIT_KB
    return [
        k("VLLM::EngineCor invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0"),
        k("CPU: 33 PID: 4200 Comm: VLLM::EngineCor Not tainted 6.8.0-60-generic #63-Ubuntu"),
        k(f"memory: usage {usage}kB, limit {LIMIT_KB}kB, failcnt 2210"),
        k("swap: usage 0kB, limit 9007199254740988kB, failcnt 0"),
        k("Tasks state (memory values in pages):"),
        k(
            "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name"
        ),
        k(
            "[   4100]   998  4100  9961472  2097152  2090000     7152        0    18350080        0             0 python3"
        ),
        k(
            "[   4200]   998  4200 52428800 98304000 98250000    54000        0   805306368        0             0 VLLM::EngineCor"
        ),
        k(
            "[   4300]   998  4300 20971520  1048576  1040000     8576        0     9437184        0             0 VLLM::Worker_TP"
        ),
        k(
            "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,"
            "oom_memcg=/system.slice/vllm-eagle.service,task_memcg=/system.slice/vllm-eagle.service,"
            "task=VLLM::EngineCor,pid=4200,uid=998"
        ),
        k(
            "Memory cgroup out of memory: Killed process 4200 (VLLM::EngineCor) total-vm:209715200kB, "
            "anon-rss:393000000kB, file-rss:216000kB, shmem-rss:0kB, UID:998 pgtables:786432kB oom_score_adj:0"
        ),
    ]


def gpu_csv(rng: random.Random, start: datetime, end: datetime, ready: datetime) -> str:
    out = ["timestamp, index, memory.total [MiB], memory.used [MiB], utilization.gpu [%]"]
    t = start
    while t <= end:
        for g in range(GPUS):
            if t < KILL:
                used = 74210 + g * 3
            elif t < KILL + timedelta(seconds=6):
                used = 74210
            elif t < ready - timedelta(minutes=3):
                used = 4
            else:
                used = min(
                    74210, int(4 + 74206 * (t - (ready - timedelta(minutes=3))) / timedelta(minutes=3))
                )
            util = 0 if KILL <= t < ready else int(rng.uniform(88, 99))
            out.append(
                f"{t:%Y/%m/%d %H:%M:%S}.{(g * 7) % 1000:03d}, {g}, {TOTAL_MIB} MiB, {used} MiB, {util} %"
            )
        t += timedelta(seconds=10)
    return "\n".join(out) + "\n"


def main(out_dir: str) -> None:
    rng = random.Random(20260318)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    j = Journal()
    j.add(
        T0 - timedelta(seconds=1),
        "systemd[1]",
        "Starting vllm-eagle.service - vLLM Llama-3.3-70B EAGLE-3 (TP8)...",
    )
    j.add(T0, "systemd[1]", "Started vllm-eagle.service - vLLM Llama-3.3-70B EAGLE-3 (TP8).")
    ready = server(j, T0, 4100, True, 260.0)
    traffic(j, rng, ready + timedelta(minutes=5), KILL - timedelta(seconds=4), 4100)
    j.add(
        KILL,
        "kernel",
        "Memory cgroup out of memory: Killed process 4200 (VLLM::EngineCor) total-vm:209715200kB, anon-rss:393000000kB, file-rss:216000kB, shmem-rss:0kB, UID:998 pgtables:786432kB oom_score_adj:0",
    )
    j.vllm(
        KILL + timedelta(seconds=1),
        4100,
        "APIServer pid=4100",
        "ERROR",
        "core_client.py:564",
        "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
    )
    j.add(
        KILL + timedelta(milliseconds=400),
        "systemd[1]",
        "vllm-eagle.service: A process of this unit has been killed by the OOM killer.",
    )
    j.add(
        KILL + timedelta(seconds=3),
        "systemd[1]",
        "vllm-eagle.service: Main process exited, code=exited, status=1/FAILURE",
    )
    j.add(
        KILL + timedelta(seconds=3, milliseconds=2),
        "systemd[1]",
        "vllm-eagle.service: Failed with result 'oom-kill'.",
    )
    op = KILL + timedelta(seconds=60)
    j.add(
        op,
        "sudo[5120]",
        "     ops : TTY=pts/2 ; PWD=/home/ops ; USER=root ; COMMAND=/usr/bin/systemctl start vllm-plain.service",
    )
    j.add(
        op + timedelta(seconds=1), "systemd[1]", "Starting vllm-plain.service - vLLM Llama-3.3-70B (TP8)..."
    )
    j.add(
        op + timedelta(seconds=1, milliseconds=30),
        "systemd[1]",
        "Started vllm-plain.service - vLLM Llama-3.3-70B (TP8).",
    )
    ready2 = server(j, op + timedelta(seconds=1), 6100, False, 235.0)
    traffic(j, rng, ready2 + timedelta(seconds=30), ready2 + timedelta(minutes=5), 6100)
    (out / "journal.txt").write_text(j.text(), encoding="utf-8")
    (out / "dmesg.txt").write_text("\n".join(kernel(KILL)) + "\n", encoding="utf-8")
    (out / "nvidia-smi-gpu.csv").write_text(
        gpu_csv(rng, KILL - timedelta(minutes=12), ready2 + timedelta(minutes=2), ready2), encoding="utf-8"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sample_logs_vllm")
