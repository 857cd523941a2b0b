#!/usr/bin/env python3
"""Generate ``sample_logs/``: one realistic incident, deterministically.

The story (host ``dflash-train``, 8× H200, clock in UTC):

* 2025-05-25 18:41 — ``sglang-k26-eagle3.service`` (Kimi K2.6, TP 8, EAGLE-3 draft) is restarted
  and loads in about 11.5 minutes. The unit runs with ``MemoryMax=640G``, ``OOMPolicy=kill``
  (so ``memory.oom.group=1``) and ``Restart=on-failure``.
* From 19:50 traffic climbs: KV-cache token usage reaches 0.98, the scheduler retracts requests,
  the queue grows and the schedulers' host RSS with it (earlyoom's periodic ``mem avail`` lines in
  the journal show host RAM shrinking; GPU memory is flat — the KV pool is static).
* 20:17:19 — the unit's cgroup reaches its 640 GiB limit. The kernel's memcg OOM killer picks the
  TP0 scheduler (``sglang::schedul``) and, because of ``memory.oom.group``, kills every process of
  the unit. systemd logs ``Main process exited, code=killed, status=9/KILL`` and
  ``Failed with result 'oom-kill'``, then schedules a restart.
* 20:19:40 — the operator stops the restarting unit (its weights were loading again) and at
  20:20:02 starts the plain autoregressive ``sglang-k26.service`` on the same port, polling
  ``/v1/models`` every 15 s; it is ready 570 s later (20:29:32).

Files, in the formats the real tools write:

* ``journal.export`` — ``journalctl -o export --since '2025-05-25 18:00'`` (systemd 255)
* ``dmesg.txt`` — ``dmesg`` (boot-relative stamps; anchored through the journal's boot id)
* ``sglang-k26-eagle3.log``, ``sglang-k26.log`` — ``StandardOutput=append:`` files (SGLang 0.5.10)
* ``nvidia-smi-gpu.csv`` — ``nvidia-smi --query-gpu=… --format=csv -l 5``
* ``nvidia-smi-apps.csv`` — ``nvidia-smi --query-compute-apps=… --format=csv -l 15``
* ``nvidia-smi-20250525-201802.txt`` — the default table the operator saved after the kill

Usage: ``python scripts/gen_sample_logs.py sample_logs``
"""

from __future__ import annotations

import hashlib
import random
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

HOST = "dflash-train"
BOOT_ID = "7d2f1c9e4b8a4f06a1e3c5d7b9f02468"
MACHINE_ID = "3b1e5f7a9c2d4e6f8a0b1c3d5e7f9a2b"
SEQNUM_ID = "a4c8e2f60b1d4a3c9e7f5b2d8c6a4e10"
BOOT_TS = datetime(2025, 5, 20, 6, 12, 31, 402117, tzinfo=UTC)
MODEL = "/models/Kimi-K2.6"
DRAFT = "/models/Kimi-K2.6-EAGLE3"
PORT = 30000
GPUS = 8
GPU_TOTAL_MIB = 143771
UUIDS = [
    f"GPU-{hashlib.md5(f'gpu{i}'.encode()).hexdigest()[:8]}-"
    f"{hashlib.md5(f'gpu{i}b'.encode()).hexdigest()[:4]}-4{i}a1-9c0e-"
    f"{hashlib.md5(f'gpu{i}c'.encode()).hexdigest()[:12]}"
    for i in range(GPUS)
]
BUS_IDS = [
    "00000000:18:00.0",
    "00000000:2A:00.0",
    "00000000:3A:00.0",
    "00000000:5D:00.0",
    "00000000:9A:00.0",
    "00000000:AB:00.0",
    "00000000:BA:00.0",
    "00000000:DB:00.0",
]

EAGLE_UNIT = "sglang-k26-eagle3.service"
EAGLE_DESC = "SGLang Kimi K2.6 EAGLE-3 (TP8)"
PLAIN_UNIT = "sglang-k26.service"
PLAIN_DESC = "SGLang Kimi K2.6 (TP8)"

KILL_TS = datetime(2025, 5, 25, 20, 17, 19, 604211, tzinfo=UTC)
EAGLE_START = datetime(2025, 5, 25, 18, 41, 3, 118402, tzinfo=UTC)
RESTART_TS = KILL_TS + timedelta(seconds=60, microseconds=402113)
OPERATOR_STOP = datetime(2025, 5, 25, 20, 19, 40, 512400, tzinfo=UTC)
PLAIN_START = datetime(2025, 5, 25, 20, 20, 2, 4211, tzinfo=UTC)
PLAIN_READY = PLAIN_START + timedelta(seconds=570)

rng = random.Random(20250525)


def us(dt: datetime) -> int:
    return int((dt - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1))


def mono_us(dt: datetime) -> int:
    return int((dt - BOOT_TS) / timedelta(microseconds=1))


# ----------------------------------------------------------------------------- journal export


@dataclass(order=True)
class Entry:
    ts: datetime
    seq: int
    fields: list[tuple[str, str]] = field(compare=False)


class Journal:
    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._n = 0

    def add(self, ts: datetime, fields: list[tuple[str, str]]) -> None:
        self._n += 1
        self.entries.append(Entry(ts, self._n, fields))

    def systemd(
        self,
        ts: datetime,
        message: str,
        unit: str | None = None,
        *,
        message_id: str | None = None,
        priority: int = 6,
        extra: list[tuple[str, str]] | None = None,
        code_func: str = "unit_log_",
    ) -> None:
        f = [
            ("_PID", "1"),
            ("_UID", "0"),
            ("_GID", "0"),
            ("_COMM", "systemd"),
            ("_EXE", "/usr/lib/systemd/systemd"),
            ("_CMDLINE", "/sbin/init"),
            ("_CAP_EFFECTIVE", "1ffffffffff"),
            ("_SELINUX_CONTEXT", "unconfined\n"),
            ("_SYSTEMD_CGROUP", "/init.scope"),
            ("_SYSTEMD_UNIT", "init.scope"),
            ("_SYSTEMD_SLICE", "-.slice"),
            ("SYSLOG_FACILITY", "3"),
            ("SYSLOG_IDENTIFIER", "systemd"),
            ("_TRANSPORT", "journal"),
            ("PRIORITY", str(priority)),
            ("CODE_FILE", "src/core/unit.c"),
            ("CODE_FUNC", code_func),
        ]
        if unit:
            f += [("UNIT", unit), ("INVOCATION_ID", hashlib.md5(f"{unit}{ts.date()}".encode()).hexdigest())]
        if message_id:
            f.append(("MESSAGE_ID", message_id))
        f += extra or []
        f.append(("MESSAGE", message))
        self.add(ts, f)

    def kernel(self, ts: datetime, message: str, priority: int = 6) -> None:
        f = [
            ("_TRANSPORT", "kernel"),
            ("SYSLOG_FACILITY", "0"),
            ("SYSLOG_IDENTIFIER", "kernel"),
            ("PRIORITY", str(priority)),
            ("_SOURCE_MONOTONIC_TIMESTAMP", str(mono_us(ts))),
            ("MESSAGE", message),
        ]
        # journald reads kmsg a little later than the kernel wrote it
        self.add(ts + timedelta(microseconds=380), f)

    def syslog(
        self,
        ts: datetime,
        ident: str,
        pid: int,
        message: str,
        *,
        priority: int = 6,
        unit: str | None = None,
        comm: str | None = None,
        exe: str | None = None,
        uid: int = 0,
        facility: int = 3,
        transport: str = "syslog",
    ) -> None:
        f = [
            ("_TRANSPORT", transport),
            ("PRIORITY", str(priority)),
            ("SYSLOG_FACILITY", str(facility)),
            ("SYSLOG_IDENTIFIER", ident),
        ]
        if transport == "syslog":
            f.append(("SYSLOG_PID", str(pid)))
        f += [("_PID", str(pid)), ("_UID", str(uid)), ("_GID", str(uid)), ("_COMM", comm or ident)]
        if exe:
            f.append(("_EXE", exe))
        if unit:
            f += [
                ("_SYSTEMD_CGROUP", f"/system.slice/{unit}"),
                ("_SYSTEMD_UNIT", unit),
                ("_SYSTEMD_SLICE", "system.slice"),
            ]
        f.append(("MESSAGE", message))
        self.add(ts, f)

    def render_export(self) -> bytes:
        out = bytearray()
        for seqnum, e in enumerate(sorted(self.entries), start=4182113):
            rt, mt = us(e.ts), mono_us(e.ts)
            xor = hashlib.sha1(f"{seqnum}{rt}".encode()).hexdigest()[:16]
            cursor = f"s={SEQNUM_ID};i={seqnum:x};b={BOOT_ID};m={mt:x};t={rt:x};x={xor}"
            head = [
                ("__CURSOR", cursor),
                ("__REALTIME_TIMESTAMP", str(rt)),
                ("__MONOTONIC_TIMESTAMP", str(mt)),
                ("__SEQNUM", str(seqnum)),
                ("__SEQNUM_ID", SEQNUM_ID),
                ("_BOOT_ID", BOOT_ID),
                ("_MACHINE_ID", MACHINE_ID),
                ("_HOSTNAME", HOST),
            ]
            for name, value in head + e.fields:
                raw = value.encode()
                if b"\n" in raw or any(b < 32 and b != 9 for b in raw):
                    out += name.encode() + b"\n" + len(raw).to_bytes(8, "little") + raw + b"\n"
                else:
                    out += f"{name}={value}\n".encode()
            out += b"\n"
        return bytes(out)


# ----------------------------------------------------------------------------- SGLang log


class SglangLog:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, ts: datetime, msg: str, ranks: str = "") -> None:
        stamp = ts.strftime("%Y-%m-%d %H:%M:%S")
        self.lines.append(f"[{stamp}{' ' + ranks if ranks else ''}] {msg}")

    def raw(self, text: str) -> None:
        self.lines.append(text)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def server_args(spec: bool, mfs: float, bs: int) -> str:
    draft = f"'{DRAFT}'" if spec else "None"
    algo = "'EAGLE3'" if spec else "None"
    return (
        f"server_args=ServerArgs(model_path='{MODEL}', tokenizer_path='{MODEL}', tokenizer_mode='auto', "
        "skip_tokenizer_init=False, load_format='auto', model_loader_extra_config='{}', trust_remote_code=True, "
        "context_length=None, is_embedding=False, enable_multimodal=None, revision=None, "
        "model_impl='auto', host='0.0.0.0', port=30000, skip_server_warmup=False, warmups=None, "
        f"nccl_port=None, dtype='auto', quantization=None, kv_cache_dtype='auto', mem_fraction_static={mfs}, "
        f"max_running_requests=None, max_queued_requests=9223372036854775807, max_total_tokens=None, "
        "chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', "
        "schedule_conservativeness=1.0, page_size=1, hybrid_kvcache_ratio=None, device='cuda', "
        "tp_size=8, pp_size=1, max_micro_batch_size=None, stream_interval=1, stream_output=False, "
        "random_seed=1027715234, watchdog_timeout=300, dist_timeout=None, download_dir=None, "
        "base_gpu_id=0, gpu_id_step=1, sleep_on_idle=False, log_level='info', log_level_http=None, "
        "log_requests=False, log_requests_level=2, show_time_cost=False, enable_metrics=True, "
        "decode_log_interval=40, api_key=None, served_model_name='kimi-k2.6', chat_template=None, "
        "reasoning_parser='kimi_k2', tool_call_parser='kimi_k2', dp_size=1, load_balance_method='round_robin', "
        "dist_init_addr=None, nnodes=1, node_rank=0, json_model_override_args='{}', lora_paths=None, "
        "attention_backend='flashinfer', sampling_backend='flashinfer', grammar_backend='xgrammar', "
        f"speculative_algorithm={algo}, speculative_draft_model_path={draft}, "
        f"speculative_num_steps={3 if spec else None}, speculative_eagle_topk={1 if spec else None}, "
        f"speculative_num_draft_tokens={4 if spec else None}, speculative_accept_threshold_single=1.0, "
        "speculative_accept_threshold_acc=1.0, speculative_token_map=None, ep_size=1, "
        f"enable_ep_moe=False, cuda_graph_max_bs={bs}, cuda_graph_bs=None, disable_cuda_graph=False, "
        "enable_torch_compile=False, torch_compile_max_bs=32, enable_mixed_chunk=False, "
        "enable_dp_attention=False, triton_attention_num_kv_splits=8, num_continuous_decode_steps=1, "
        "enable_memory_saver=False, allow_auto_truncate=False, enable_custom_logit_processor=False, "
        "enable_hierarchical_cache=False, hicache_ratio=2.0, flashinfer_mla_disable_ragged=False, "
        "warmup_requests=None, disaggregation_mode='null')"
    )


def startup(
    log: SglangLog,
    t0: datetime,
    *,
    spec: bool,
    weight_s: float,
    graph_s: float,
    draft_graph_s: float = 0.0,
    stop_at: datetime | None = None,
) -> dict[str, datetime]:
    """A 0.5.10 startup sequence; returns the times of its phases. Stops early at ``stop_at``."""
    marks: dict[str, datetime] = {}
    t = t0 + timedelta(seconds=2.1)
    mfs = 0.88 if spec else 0.9
    log.add(t, server_args(spec, mfs, 256 if spec else 320))
    marks["server_args"] = t
    t += timedelta(seconds=4.6)
    for r in range(GPUS):
        log.add(t, "Init torch distributed begin.", f"TP{r}")
    t += timedelta(seconds=3.2)
    log.add(t, "Init torch distributed ends. elapsed=3.18 s, mem usage=1.21 GB", "TP0")
    t += timedelta(seconds=0.6)
    for r in range(GPUS):
        log.add(t, "Load weight begin. avail mem=138.38 GB", f"TP{r}")
    marks["load_begin"] = t
    if stop_at is not None and stop_at < t + timedelta(seconds=weight_s):
        shards = int((stop_at - t).total_seconds() / weight_s * 64)
        log.raw(
            f"Loading safetensors checkpoint shards:  {shards * 100 // 64}% Completed | {shards}/64 "
            f"[{int((stop_at - t).total_seconds()) // 60:02d}:{int((stop_at - t).total_seconds()) % 60:02d}<"
            "05:41,  1.71s/it]"
        )
        return marks
    log.raw(
        "Loading safetensors checkpoint shards: 100% Completed | 64/64 "
        f"[{int(weight_s) // 60:02d}:{int(weight_s) % 60:02d}<00:00,  {weight_s / 64:.2f}s/it]"
    )
    t += timedelta(seconds=weight_s)
    for r in range(GPUS):
        log.add(
            t + timedelta(milliseconds=30 * r),
            f"Load weight end. elapsed={weight_s:.2f} s, type=DeepseekV3ForCausalLM, quant=compressed-tensors, "
            "avail mem=63.67 GB, mem usage=74.71 GB.",
            f"TP{r}",
        )
    marks["load_end"] = t
    if spec:
        t += timedelta(seconds=1.4)
        for r in range(GPUS):
            log.add(t, "Load weight begin. avail mem=63.67 GB", f"TP{r}")
        t += timedelta(seconds=9.87)
        for r in range(GPUS):
            log.add(
                t,
                "Load weight end. elapsed=9.87 s, type=LlamaForCausalLMEagle3, "
                "avail mem=62.24 GB, mem usage=1.43 GB.",
                f"TP{r}",
            )
        marks["draft_load_end"] = t
    t += timedelta(seconds=2.3)
    tokens = 1842688 if spec else 2101248
    kv = 40.11 if spec else 45.74
    for r in range(GPUS):
        log.add(t, f"KV Cache is allocated. #tokens: {tokens}, KV size: {kv:.2f} GB", f"TP{r}")
    avail = 62.24 - kv if spec else 63.67 - kv
    log.add(t, f"Memory pool end. avail mem={avail:.2f} GB", "TP0")
    marks["kv"] = t
    if spec:
        t += timedelta(seconds=0.8)
        for r in range(GPUS):
            log.add(t, "KV Cache is allocated. #tokens: 1842688, KV size: 0.63 GB", f"TP{r}")
        avail -= 0.63
        log.add(t, f"Memory pool end. avail mem={avail:.2f} GB", "TP0")
    t += timedelta(seconds=1.1)
    log.add(
        t, f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail:.2f} GB", "TP0"
    )
    bss = [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256] + (
        [] if spec else [288, 320]
    )
    log.add(t, f"Capture cuda graph bs {bss}", "TP0")
    marks["graph_begin"] = t
    t += timedelta(seconds=graph_s)
    log.raw(
        f"Capturing batches (bs=1 avail_mem={avail - 2.31:.2f} GB): 100%|██████████| "
        f"{len(bss)}/{len(bss)} [{int(graph_s) // 60:02d}:{int(graph_s) % 60:02d}<00:00,  "
        f"{len(bss) / graph_s:.2f}it/s]"
    )
    log.add(
        t,
        f"Capture cuda graph end. Time elapsed: {graph_s:.2f} s. mem usage=2.31 GB. "
        f"avail mem={avail - 2.31:.2f} GB.",
        "TP0",
    )
    avail -= 2.31
    marks["graph_end"] = t
    if spec:
        t += timedelta(seconds=0.4)
        log.add(t, f"Capture draft cuda graph begin. avail mem={avail:.2f} GB", "TP0")
        t += timedelta(seconds=draft_graph_s)
        log.add(
            t,
            f"Capture draft cuda graph end. Time elapsed: {draft_graph_s:.2f} s. mem usage=0.52 GB. "
            f"avail mem={avail - 0.52:.2f} GB.",
            "TP0",
        )
        avail -= 0.52
        t += timedelta(seconds=0.3)
        log.add(t, f"Capture draft extend cuda graph begin. avail mem={avail:.2f} GB", "TP0")
        t += timedelta(seconds=draft_graph_s / 2)
        log.add(
            t,
            f"Capture draft extend cuda graph end. Time elapsed: {draft_graph_s / 2:.2f} s. "
            f"mem usage=0.21 GB. avail mem={avail - 0.21:.2f} GB.",
            "TP0",
        )
        avail -= 0.21
        marks["draft_graph_end"] = t
    t += timedelta(seconds=1.2)
    log.add(
        t,
        f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        f"max_running_requests={1024 if spec else 2048}, context_len=262144, "
        f"available_gpu_mem={avail:.2f} GB",
        "TP0",
    )
    return marks


def finish_startup(log: SglangLog, ready: datetime, pid: int) -> None:
    """uvicorn start, warmup and the ready line, ending exactly at ``ready``."""
    up = ready - timedelta(seconds=19.4)
    log.add(up, f"INFO:     Started server process [{pid}]")
    log.add(up, "INFO:     Waiting for application startup.")
    log.add(up, "INFO:     Application startup complete.")
    log.add(up, f"INFO:     Uvicorn running on http://0.0.0.0:{PORT} (Press CTRL+C to quit)")
    log.add(up + timedelta(seconds=1.0), 'INFO:     127.0.0.1:41772 - "GET /get_model_info HTTP/1.1" 200 OK')
    log.add(
        up + timedelta(seconds=1.3),
        "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0, cuda graph: False, "
        "input throughput (token/s): 0.00",
        "TP0",
    )
    log.add(ready - timedelta(seconds=0.4), 'INFO:     127.0.0.1:41772 - "POST /generate HTTP/1.1" 200 OK')
    log.add(ready, "The server is fired up and ready to roll!")


def traffic(
    log: SglangLog,
    start: datetime,
    end: datetime,
    *,
    spec: bool,
    ramp: bool,
    samples: list[tuple[datetime, float, int, int]] | None = None,
    base_usage: float = 0.35,
) -> None:
    """Decode/prefill batch lines and chat-completion access lines between start and end.

    With ``ramp`` the load climbs towards KV-pool exhaustion near ``end``.
    """
    out = log
    log = SglangLog()
    t = start
    total = (end - start).total_seconds()
    token_cap = 1842688 if spec else 2101248
    step = 0
    while t < end:
        frac = (t - start).total_seconds() / total if total else 0
        if ramp:
            usage = min(0.99, base_usage + (0.98 - base_usage) * min(1.0, frac * 1.35))
            queue = 0 if frac < 0.45 else int(4 + 310 * (frac - 0.45) ** 1.6)
        else:
            usage = base_usage + 0.08 * rng.random()
            queue = 0
        running = int(40 + 180 * usage)
        tokens = int(usage * token_cap)
        if samples is not None:
            samples.append((t, usage, running, queue))
        accept = 2.31 + 0.25 * rng.random() if spec else None
        if step % 3 == 0:
            new = rng.choice((1, 1, 2, 3))
            log.add(
                t,
                f"Prefill batch, #new-seq: {new}, #new-token: {new * rng.randint(900, 4096)}, "
                f"#cached-token: {rng.randint(0, 3) * 1024}, token usage: {usage:.2f}, "
                f"#running-req: {running}, #queue-req: {queue}, cuda graph: False, "
                f"input throughput (token/s): {rng.uniform(9000, 21000):.2f}",
                "TP0",
            )
        thr = running * (14.5 if spec else 10.8) * (1 - 0.4 * max(0, usage - 0.9) * 10)
        spec_part = f"accept len: {accept:.2f}, accept rate: {(accept - 1) / 3:.2f}, " if spec else ""
        log.add(
            t + timedelta(milliseconds=400),
            f"Decode batch, #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, "
            f"{spec_part}cuda graph: True, gen throughput (token/s): {thr:.2f}, #queue-req: {queue}",
            "TP0",
        )
        if ramp and usage >= 0.97 and step % 2 == 0:
            n = rng.randint(2, 9)
            log.add(
                t + timedelta(milliseconds=700),
                f"KV cache pool is full. Retract requests. #retracted_reqs: {n}, "
                f"#new_tokens_gained: {n * rng.randint(2500, 9000)}, #new_token_ratio: "
                f"{0.38 + 0.05 * rng.random():.4f} -> {0.55 + 0.05 * rng.random():.4f}",
                "TP0",
            )
        for _ in range(rng.choice((1, 1, 2))):
            ip = f"10.20.{rng.choice((4, 4, 5))}.{rng.randint(10, 250)}"
            log.add(
                t + timedelta(milliseconds=rng.randint(50, 3900)),
                f'INFO:     {ip}:{rng.randint(30000, 65000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
            )
        t += timedelta(seconds=4)
        step += 1
    log.lines.sort(key=_line_time)
    out.lines.extend(log.lines)


def _line_time(line: str) -> str:
    # every line of a block sorted with this carries a stamp
    return line[1:20]


def graceful_stop(log: SglangLog, t: datetime, remaining: int = 0) -> None:
    log.add(
        t,
        "SIGTERM received. signum=15 frame=<frame at 0x7f3a2c1d8e40, file "
        "'/usr/lib/python3.12/selectors.py', line 468, code select>. Draining requests and shutting down...",
    )
    log.add(
        t + timedelta(seconds=1.8),
        f"Gracefully exiting... Remaining number of requests {remaining}. "
        "Remaining requests remaining_rids=[].",
    )
    log.add(t + timedelta(seconds=2.1), "INFO:     Shutting down")
    log.add(t + timedelta(seconds=2.2), "INFO:     Waiting for application shutdown.")
    log.add(t + timedelta(seconds=2.2), "INFO:     Application shutdown complete.")
    log.add(t + timedelta(seconds=2.3), f"INFO:     Finished server process [{rng.randint(40000, 60000)}]")


# ----------------------------------------------------------------------------- kernel OOM record


@dataclass
class Task:
    pid: int
    name: str
    total_vm: int
    rss_anon: int
    rss_file: int
    rss_shmem: int
    pgtables: int
    uid: int = 1001
    adj: int = 0

    @property
    def rss(self) -> int:
        return self.rss_anon + self.rss_file + self.rss_shmem


EAGLE_MAIN_PID = 48190
SCHED_PIDS = list(range(48213, 48221))
DETOK_PID = 48221
LIMIT_KB = 640 * 1024 * 1024  # MemoryMax=640G


def oom_tasks() -> list[Task]:
    tasks = [Task(EAGLE_MAIN_PID, "python3", 9_841_223, 2_190_311, 61_223, 1_024, 24_117_248)]
    for i, pid in enumerate(SCHED_PIDS):
        anon = 19_893_101 - i * 41_377 + (i % 3) * 9_113
        tasks.append(
            Task(
                pid,
                "sglang::schedul",
                71_254_331 + i * 1711,
                anon,
                189_442 + i * 511,
                262_144,
                171_999_232 + i * 4096,
            )
        )
    tasks.append(Task(DETOK_PID, "sglang::detoken", 5_991_402, 803_554, 48_001, 1_024, 9_011_200))
    return tasks


def oom_record(t: datetime) -> list[tuple[datetime, str, int]]:
    """(time, message, priority) of each printk record of the memcg OOM kill at ``t``."""
    victim = SCHED_PIDS[0]
    tasks = oom_tasks()
    by_pid = {x.pid: x for x in tasks}
    out: list[tuple[datetime, str, int]] = []
    clock = [t - timedelta(microseconds=2_400)]

    def rec(msg: str, prio: int = 4, gap: int = 7) -> None:
        clock[0] += timedelta(microseconds=gap)
        out.append((clock[0], msg, prio))

    rec(
        "sglang::schedul invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
        "oom_score_adj=0",
        4,
        0,
    )
    rec(f"CPU: 87 PID: {victim} Comm: sglang::schedul Not tainted 6.8.0-60-generic #63-Ubuntu", 4, 21)
    rec("Hardware name: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 04/12/2024")
    rec("Call Trace:")
    for frame in (
        " <TASK>",
        " dump_stack_lvl+0x76/0xa0",
        " dump_stack+0x10/0x20",
        " dump_header+0x47/0x1f0",
        " oom_kill_process+0x118/0x280",
        " ? oom_evaluate_task+0x143/0x1e0",
        " out_of_memory+0x103/0x350",
        " mem_cgroup_out_of_memory+0x145/0x170",
        " try_charge_memcg+0x6d6/0x7d0",
        " ? __pfx_lru_add_fn+0x10/0x10",
        " __mem_cgroup_charge+0x44/0xa0",
        " alloc_anon_folio+0x1f7/0x410",
        " do_anonymous_page+0x7e/0x390",
        " __handle_mm_fault+0x92a/0xaf0",
        " handle_mm_fault+0x18a/0x380",
        " do_user_addr_fault+0x169/0x670",
        " exc_page_fault+0x83/0x1b0",
        " asm_exc_page_fault+0x27/0x30",
    ):
        rec(frame, 4, 3)
    rec("RIP: 0033:0x7f9e41a8c3ba", 4, 2)
    rec(
        "Code: 00 00 48 8b 15 61 4c 1a 00 f7 d8 64 89 02 48 c7 c0 ff ff ff ff c3 66 2e 0f 1f 84 00 00 00 00 "
        "00 90 f3 0f 1e fa 48 89 f8 48 83 fa 20 72 25 <c5> fe 6f 06 48 83 fa 40 0f 87 b5 00 00 00 c5 fe 6f",
        4,
        2,
    )
    rec("RSP: 002b:00007f9b5effc8a8 EFLAGS: 00010206", 4, 1)
    rec("RAX: 00007f6d1c400000 RBX: 00007f9b5effc970 RCX: 00007f6d1c400000", 4, 1)
    rec("RDX: 0000000000200000 RSI: 00007f70aa600000 RDI: 00007f6d1c400000", 4, 1)
    rec("RBP: 0000000000200000 R08: 0000000000000000 R09: 0000000000000001", 4, 1)
    rec("R10: 0000000000000022 R11: 0000000000000246 R12: 00007f70aa600000", 4, 1)
    rec("R13: 00007f6d1c400000 R14: 0000000000000000 R15: 00007f9b5effca40", 4, 1)
    rec(" </TASK>", 4, 2)
    rec(f"memory: usage {LIMIT_KB}kB, limit {LIMIT_KB}kB, failcnt 18734", 6, 4)
    rec("swap: usage 0kB, limit 9007199254740988kB, failcnt 0", 6, 2)
    rec("Memory cgroup stats for /system.slice/sglang-k26-eagle3.service:", 6, 3)
    anon_total = sum(x.rss_anon for x in tasks) * 4096
    file_total = sum(x.rss_file for x in tasks) * 4096
    for key, val in (
        ("anon", anon_total),
        ("file", file_total + 6_983_213_056),
        ("kernel", 9_311_752_192),
        ("kernel_stack", 52_133_888),
        ("pagetables", 1_591_386_112),
        ("sec_pagetables", 0),
        ("percpu", 12_345_344),
        ("sock", 4_096),
        ("vmalloc", 1_417_216),
        ("shmem", 2_199_552_000),
        ("zswap", 0),
        ("zswapped", 0),
        ("file_mapped", 5_020_581_888),
        ("file_dirty", 0),
        ("file_writeback", 0),
        ("swapcached", 0),
        ("anon_thp", 394_264_576_000),
        ("file_thp", 0),
        ("shmem_thp", 0),
        ("inactive_anon", anon_total - 1_048_576),
        ("active_anon", 1_048_576),
        ("inactive_file", 3_411_247_104),
        ("active_file", file_total + 3_571_965_952),
        ("unevictable", 0),
        ("slab_reclaimable", 6_112_722_944),
        ("slab_unreclaimable", 1_402_806_272),
        ("slab", 7_515_529_216),
        ("workingset_refault_anon", 0),
        ("workingset_refault_file", 4_911_218),
        ("workingset_activate_anon", 0),
        ("workingset_activate_file", 1_094_227),
        ("workingset_restore_anon", 0),
        ("workingset_restore_file", 881_230),
        ("workingset_nodereclaim", 0),
        ("pgscan", 88_121_994),
        ("pgsteal", 61_225_341),
        ("pgscan_kswapd", 0),
        ("pgscan_direct", 88_121_994),
        ("pgscan_khugepaged", 0),
        ("pgsteal_kswapd", 0),
        ("pgsteal_direct", 61_225_341),
        ("pgsteal_khugepaged", 0),
        ("pgfault", 1_209_331_877),
        ("pgmajfault", 40_112),
        ("pgrefill", 7_110_221),
        ("pgactivate", 9_881_340),
        ("pgdeactivate", 7_010_112),
        ("pglazyfree", 0),
        ("pglazyfreed", 0),
        ("zswpin", 0),
        ("zswpout", 0),
        ("zswpwb", 0),
        ("thp_fault_alloc", 188_113),
        ("thp_collapse_alloc", 0),
        ("thp_swpout", 0),
        ("thp_swpout_fallback", 0),
    ):
        rec(f"{key} {val}", 6, 1)
    rec("Tasks state (memory values in pages):", 6, 2)
    rec(
        "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents "
        "oom_score_adj name",
        6,
        1,
    )
    for x in tasks:
        rec(
            f"[{x.pid:7d}] {x.uid:5d} {x.pid:5d} {x.total_vm:8d} {x.rss:8d} {x.rss_anon:8d} {x.rss_file:8d} "
            f"{x.rss_shmem:9d} {x.pgtables:8d} {0:8d}         {x.adj:5d} {x.name}",
            6,
            2,
        )
    rec(
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,"
        "oom_memcg=/system.slice/sglang-k26-eagle3.service,task_memcg=/system.slice/sglang-k26-eagle3.service,"
        f"task=sglang::schedul,pid={victim},uid=1001",
        6,
        5,
    )

    def kill_line(x: Task) -> str:
        return (
            f"Memory cgroup out of memory: Killed process {x.pid} ({x.name}) total-vm:{x.total_vm * 4}kB, "
            f"anon-rss:{x.rss_anon * 4}kB, file-rss:{x.rss_file * 4}kB, shmem-rss:{x.rss_shmem * 4}kB, "
            f"UID:{x.uid} pgtables:{x.pgtables // 1024}kB oom_score_adj:{x.adj}"
        )

    # the victim's kill line is the one this record stands for
    assert clock[0] < t
    out.append((t, kill_line(by_pid[victim]), 3))
    clock[0] = t
    rec(
        "Tasks in /system.slice/sglang-k26-eagle3.service are going to be killed due to memory.oom.group set",
        6,
        31,
    )
    for x in tasks:
        if x.pid == victim:
            continue
        rec(kill_line(x), 3, 9)
    return out


def reaper_lines(t: datetime) -> list[tuple[datetime, str, int]]:
    out = []
    tasks = {x.pid: x for x in oom_tasks()}
    for i, pid in enumerate([SCHED_PIDS[0], SCHED_PIDS[3], SCHED_PIDS[5]]):
        x = tasks[pid]
        out.append(
            (
                t + timedelta(seconds=2, microseconds=51_113 + 733 * i),
                f"oom_reaper: reaped process {pid} ({x.name}), now anon-rss:0kB, file-rss:0kB, "
                f"shmem-rss:{x.rss_shmem * 4}kB",
                6,
            )
        )
    return out


# ----------------------------------------------------------------------------- dmesg


def dmesg_boot_lines() -> list[tuple[float, str]]:
    lines = [
        (
            0.0,
            "Linux version 6.8.0-60-generic (buildd@lcy02-amd64-054) (x86_64-linux-gnu-gcc-13 (Ubuntu "
            "13.3.0-6ubuntu2~24.04) 13.3.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #63-Ubuntu SMP "
            "PREEMPT_DYNAMIC Tue Apr 15 19:04:15 UTC 2025 (Ubuntu 6.8.0-60.63-generic 6.8.12)",
        ),
        (
            0.0,
            "Command line: BOOT_IMAGE=/vmlinuz-6.8.0-60-generic root=UUID=5f0c2e1d-7a4b-4c38-9e61-2b8d0a3f9c17 ro "
            "iommu=pt pci=realloc=off",
        ),
        (0.0, "KERNEL supported cpus:"),
        (0.0, "  Intel GenuineIntel"),
        (0.0, "BIOS-provided physical RAM map:"),
        (0.0, "DMI: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 04/12/2024"),
        (0.000001, "tsc: Detected 2000.000 MHz processor"),
        (
            0.41,
            "Memory: 2112836420K/2147145984K available (22528K kernel code, 4433K rwdata, 14248K rodata, "
            "4816K init, 17676K bss, 34309564K reserved, 0K cma-reserved)",
        ),
        (1.92, "smpboot: Allowing 224 CPUs, 0 hotplug CPUs"),
        (
            4.402118,
            "systemd[1]: systemd 255.4-1ubuntu8.6 running in system mode (+PAM +AUDIT +SELINUX +APPARMOR "
            "+IMA +SMACK +SECCOMP +GCRYPT -GNUTLS +OPENSSL +ACL +BLKID +CURL +ELFUTILS +FIDO2 +IDN2 -IDN "
            "+IPTC +KMOD +LIBCRYPTSETUP +LIBFDISK +PCRE2 -PWQUALITY +P11KIT +QRENCODE +TPM2 +BZIP2 +LZ4 "
            "+XZ +ZLIB +ZSTD -BPF_FRAMEWORK -XKBCOMMON +UTMP +SYSVINIT default-hierarchy=unified)",
        ),
        (4.40215, "systemd[1]: Detected architecture x86-64."),
        (9.881233, "nvidia: loading out-of-tree module taints kernel."),
        (9.881240, "nvidia: module license 'NVIDIA' taints kernel."),
        (10.101772, "nvidia-nvlink: Nvlink Core is being initialized, major device number 508"),
    ]
    for i, bus in enumerate(BUS_IDS):
        short = bus[4:].lower()
        lines.append((10.2 + 0.01 * i, f"nvidia {short}: enabling device (0000 -> 0002)"))
    lines += [
        (10.61, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.133.20  Fri Feb 28 13:55:29 UTC 2025"),
        (
            10.74,
            "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  570.133.20  "
            "Fri Feb 28 13:29:54 UTC 2025",
        ),
        (10.98, "[drm] [nvidia-drm] [GPU ID 0x00001800] Loading driver"),
        (
            14.225,
            "EXT4-fs (nvme0n1p2): mounted filesystem 5f0c2e1d-7a4b-4c38-9e61-2b8d0a3f9c17 r/w with ordered "
            "data mode. Quota mode: none.",
        ),
        (18.72, "mlx5_core 0000:1a:00.0: Port module event: module 0, Cable plugged"),
        (
            19.003,
            "bnxt_en 0000:c1:00.0 eno1np0: NIC Link is Up, 25000 Mbps full duplex, Flow control: ON - receive & transmit",
        ),
        (
            231.884612,
            "nvidia_uvm: module uses symbols nvUvmInterfaceDisableAccessCntr from proprietary module nvidia, "
            "inheriting taint.",
        ),
        (232.003114, "nvidia-uvm: Loaded the UVM driver, major device number 506."),
    ]
    return lines


def fmt_dmesg(mono_s: float, msg: str) -> str:
    sec = int(mono_s)
    usec = round((mono_s - sec) * 1e6)
    if usec == 1_000_000:
        sec, usec = sec + 1, 0
    return f"[{sec:5d}.{usec:06d}] {msg}"


# ----------------------------------------------------------------------------- GPU telemetry


def gpu_used_mib(t: datetime, i: int) -> tuple[int, int, float]:
    """(used MiB, util %, power W) of GPU ``i`` at ``t`` according to the story."""
    jitter = (i * 37) % 11
    # eagle3 instance 1 serving until the kill
    if t < KILL_TS:
        return 129_431 + jitter * 3, 94 + (i % 4), 612.0 + 9 * (i % 5)
    # memory freed within one sample of the kill
    if t < KILL_TS + timedelta(seconds=3):
        return 129_431 + jitter * 3, 0, 131.0
    restart_load = RESTART_TS + timedelta(seconds=11)
    if t < restart_load:
        return 0, 0, 78.0 + i % 3
    if t < OPERATOR_STOP + timedelta(seconds=4):
        frac = (t - restart_load).total_seconds() / 680
        return int(1_870 + 76_500 * frac) + jitter, 3, 121.0
    plain_load = PLAIN_START + timedelta(seconds=12)
    if t < plain_load:
        return 0, 0, 77.0 + i % 3
    weights_end = PLAIN_START + timedelta(seconds=419)
    if t < weights_end:
        frac = (t - plain_load).total_seconds() / (weights_end - plain_load).total_seconds()
        return int(1_870 + 74_640 * frac) + jitter, 2 + (i % 2), 119.0 + i
    kv_t = weights_end + timedelta(seconds=8)
    if t < kv_t:
        return 76_510 + jitter, 5, 140.0
    graph_end = PLAIN_START + timedelta(seconds=527)
    if t < graph_end:
        return 123_350 + jitter, 41, 260.0
    if t < PLAIN_READY:
        return 125_887 + jitter, 12, 190.0
    return 125_901 + jitter * 2, 71 + (i % 5), 540.0 + 7 * (i % 4)


def gpu_csv(start: datetime, end: datetime, step_s: int) -> str:
    head = (
        "timestamp, index, uuid, pci.bus_id, name, memory.total [MiB], memory.reserved [MiB], "
        "memory.used [MiB], memory.free [MiB], utilization.gpu [%], utilization.memory [%], "
        "temperature.gpu, power.draw [W], pstate"
    )
    lines = [head]
    t = start
    while t <= end:
        for i in range(GPUS):
            ts = t + timedelta(milliseconds=3 * i + rng.randint(0, 2))
            used, util, power = gpu_used_mib(ts, i)
            reserved = 551
            free = GPU_TOTAL_MIB - reserved - used
            temp = 38 + util // 4 + i % 3
            lines.append(
                f"{ts.strftime('%Y/%m/%d %H:%M:%S')}.{ts.microsecond // 1000:03d}, {i}, {UUIDS[i]}, {BUS_IDS[i]}, "
                f"NVIDIA H200, {GPU_TOTAL_MIB} MiB, {reserved} MiB, {used} MiB, {free} MiB, {util} %, "
                f"{max(0, util - 30) if util else 0} %, {temp}, {power + rng.uniform(-3, 3):.2f} W, "
                "P0"
            )
        t += timedelta(seconds=step_s)
    return "\n".join(lines) + "\n"


def apps_csv(start: datetime, end: datetime, step_s: int) -> str:
    lines = ["timestamp, gpu_uuid, gpu_bus_id, pid, process_name, used_gpu_memory [MiB]"]
    t = start
    while t <= end:
        ts = t + timedelta(milliseconds=rng.randint(10, 60))
        stamp = f"{ts.strftime('%Y/%m/%d %H:%M:%S')}.{ts.microsecond // 1000:03d}"
        if ts < KILL_TS:
            pids = SCHED_PIDS
        elif RESTART_TS + timedelta(seconds=11) < ts < OPERATOR_STOP + timedelta(seconds=4):
            pids = list(range(51024, 51032))
        elif ts > PLAIN_START + timedelta(seconds=12):
            pids = list(range(52311, 52319))
        else:
            pids = []
        for i, pid in enumerate(pids):
            used, _, _ = gpu_used_mib(ts, i)
            if used == 0:
                continue
            lines.append(
                f"{stamp}, {UUIDS[i]}, {BUS_IDS[i]}, {pid}, sglang::scheduler_TP{i}, {used - 542} MiB"
            )
        t += timedelta(seconds=step_s)
    return "\n".join(lines) + "\n"


def smi_table(t: datetime) -> str:
    rows = []
    for i in range(GPUS):
        used, util, power = gpu_used_mib(t, i)
        rows.append(
            f"|   {i}  NVIDIA H200                    On  |   {BUS_IDS[i]} Off |                    0 |\n"
            f"| N/A   {33 + i % 3}C    P0            {int(power):3d}W /  700W |"
            f"{used:8d}MiB / {GPU_TOTAL_MIB}MiB |      {util}%      Default |\n"
            "|                                         |                        |             Disabled |\n"
            "+-----------------------------------------+------------------------+----------------------+"
        )
    return (
        f"{t.strftime('%a %b %e %H:%M:%S %Y')}       \n"
        "+-----------------------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 570.133.20             Driver Version: 570.133.20     CUDA Version: 12.8     |\n"
        "|-----------------------------------------+------------------------+----------------------+\n"
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
        "|                                         |                        |               MIG M. |\n"
        "|=========================================+========================+======================|\n"
        + "\n".join(rows)
        + "\n"
        "                                                                                         \n"
        "+-----------------------------------------------------------------------------------------+\n"
        "| Processes:                                                                              |\n"
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |\n"
        "|        ID   ID                                                               Usage      |\n"
        "|=========================================================================================|\n"
        "|  No running processes found                                                             |\n"
        "+-----------------------------------------------------------------------------------------+\n"
    )


# ----------------------------------------------------------------------------- assembling


def build(out: Path) -> None:  # noqa: C901 - 17 > 15: listed in docs/dev/README.md
    out.mkdir(parents=True, exist_ok=True)
    j = Journal()
    eagle = SglangLog()
    plain = SglangLog()

    # --- history in the SGLang log files (before the journal export window) -----------------
    for day, weight_s, graph_s, stop in (
        (
            datetime(2025, 5, 12, 9, 30, 11, 0, tzinfo=UTC),
            431.0,
            101.6,
            datetime(2025, 5, 15, 8, 58, 40, tzinfo=UTC),
        ),
        (
            datetime(2025, 5, 15, 9, 0, 2, 0, tzinfo=UTC),
            447.0,
            103.9,
            datetime(2025, 5, 20, 6, 9, 55, tzinfo=UTC),
        ),
    ):
        marks = startup(plain, day, spec=False, weight_s=weight_s, graph_s=graph_s)
        ready = marks["graph_end"] + timedelta(seconds=21.7)
        finish_startup(plain, ready, 30000 + day.day)
        traffic(plain, ready + timedelta(minutes=3), ready + timedelta(minutes=40), spec=False, ramp=False)
        graceful_stop(plain, stop)
    boot_eagle = datetime(2025, 5, 20, 6, 14, 2, 0, tzinfo=UTC)
    marks = startup(eagle, boot_eagle, spec=True, weight_s=462.0, graph_s=118.2, draft_graph_s=21.4)
    finish_startup(eagle, marks["draft_graph_end"] + timedelta(seconds=22.3), 3317)
    traffic(
        eagle, boot_eagle + timedelta(minutes=20), boot_eagle + timedelta(minutes=55), spec=True, ramp=False
    )
    graceful_stop(eagle, EAGLE_START - timedelta(seconds=6.2))

    # --- the journal window -------------------------------------------------------------------
    t0 = datetime(2025, 5, 25, 18, 0, 0, tzinfo=UTC)
    # background noise: cron, earlyoom periodic report, journald, nvidia-persistenced
    host_total = 2_063_588
    for minute in range(0, 160):
        t = t0 + timedelta(minutes=minute, seconds=17, microseconds=118_000 + 311 * minute)
        if minute % 15 == 0:
            j.syslog(
                t - timedelta(seconds=16),
                "CRON",
                61000 + minute,
                "(root) CMD (/usr/local/sbin/gpu-healthcheck >/dev/null 2>&1)",
                unit="cron.service",
                comm="cron",
                exe="/usr/sbin/cron",
            )
        # host RAM available: eagle3's cgroup grows from ~505G towards its 640G limit
        if t < EAGLE_START:
            used_by_unit = 611_000
        elif t < KILL_TS:
            serving = (t - EAGLE_START).total_seconds()
            if serving < 760:
                used_by_unit = int(93_000 + serving * 480)
            else:
                load = max(0.0, (t - datetime(2025, 5, 25, 19, 50, tzinfo=UTC)).total_seconds()) / 1639
                used_by_unit = int(505_000 + 148_000 * min(1.0, load) ** 1.7 + (serving - 760) * 3)
        elif t < RESTART_TS + timedelta(seconds=10):
            used_by_unit = 0
        elif t < OPERATOR_STOP:
            used_by_unit = 41_000
        elif t < PLAIN_START:
            used_by_unit = 0
        else:
            used_by_unit = min(560_000, int((t - PLAIN_START).total_seconds() * 980))
        avail = host_total - 247_311 - used_by_unit - (minute % 7) * 113
        j.syslog(
            t,
            "earlyoom",
            1893,
            f"mem avail: {avail:7d} of {host_total:7d} MiB ({100 * avail / host_total:5.2f}%), "
            f"swap free:    0 of    0 MiB ( 0.00%)",
            unit="earlyoom.service",
            comm="earlyoom",
            exe="/usr/bin/earlyoom",
            uid=0,
            transport="stdout",
        )
    for k in range(0, 150, 30):
        t = t0 + timedelta(minutes=k, seconds=41, microseconds=9_000)
        j.syslog(
            t,
            "nvidia-persistenced",
            2211,
            "device 0000:18:00.0 - persistence mode enabled.",
            unit="nvidia-persistenced.service",
            priority=5,
        )

    # operator restarts eagle3 at 18:40 (config reload) — journal side
    stop_t = EAGLE_START - timedelta(seconds=6.2)
    j.syslog(
        stop_t - timedelta(seconds=1.1),
        "sudo",
        47_901,
        "     ops : TTY=pts/1 ; PWD=/home/ops ; USER=root ; "
        "COMMAND=/usr/bin/systemctl restart sglang-k26-eagle3.service",
        priority=5,
        facility=10,
        comm="sudo",
        exe="/usr/bin/sudo",
    )
    j.systemd(
        stop_t,
        f"Stopping {EAGLE_UNIT} - {EAGLE_DESC}...",
        EAGLE_UNIT,
        message_id="de5b426a63be47a7b6ac3eaac82e2f6f",
        code_func="job_emit_start_message",
    )
    j.systemd(
        stop_t + timedelta(seconds=2.6),
        f"{EAGLE_UNIT}: Deactivated successfully.",
        EAGLE_UNIT,
        message_id="7ad2d189f7e94e70a38c781354912448",
        code_func="unit_log_success",
    )
    j.systemd(
        stop_t + timedelta(seconds=2.61),
        f"Stopped {EAGLE_UNIT} - {EAGLE_DESC}.",
        EAGLE_UNIT,
        message_id="9d1aaa27d60140bd96365438aad20286",
        code_func="job_emit_done_message",
    )
    j.systemd(
        stop_t + timedelta(seconds=2.612),
        f"{EAGLE_UNIT}: Consumed 3d 11h 52min 8.114s CPU time, 603.4G memory peak, 0B memory swap peak.",
        EAGLE_UNIT,
        message_id="ae8f7b866b0347b9af31fe1c80b127c0",
        code_func="unit_log_resources",
        extra=[("CPU_USAGE_NSEC", "302328114000000"), ("MEMORY_PEAK", str(int(603.4 * 2**30)))],
    )
    j.systemd(
        EAGLE_START,
        f"Starting {EAGLE_UNIT} - {EAGLE_DESC}...",
        EAGLE_UNIT,
        message_id="7d4958e842da4a758f6c1cdc7b36dcc5",
        code_func="job_emit_start_message",
    )
    j.systemd(
        EAGLE_START + timedelta(milliseconds=41),
        f"Started {EAGLE_UNIT} - {EAGLE_DESC}.",
        EAGLE_UNIT,
        message_id="39f53479d3a045ac8e11786248231fbf",
        code_func="job_emit_done_message",
    )

    # eagle3 instance 1: loads, then serves with a climbing load
    marks = startup(eagle, EAGLE_START, spec=True, weight_s=455.0, graph_s=117.4, draft_graph_s=21.9)
    ready1 = marks["draft_graph_end"] + timedelta(seconds=21.8)
    finish_startup(eagle, ready1, EAGLE_MAIN_PID)
    samples: list[tuple[datetime, float, int, int]] = []
    serve_from = ready1 + timedelta(seconds=8)
    ramp_from = datetime(2025, 5, 25, 19, 50, 3, tzinfo=UTC)
    traffic(eagle, serve_from, ramp_from, spec=True, ramp=False, base_usage=0.31)
    traffic(
        eagle,
        ramp_from,
        KILL_TS - timedelta(seconds=1.2),
        spec=True,
        ramp=True,
        samples=samples,
        base_usage=0.39,
    )
    # the last thing SGLang wrote: everything in the cgroup was SIGKILLed together (oom.group)

    # kernel OOM record: journal copy and dmesg copy
    record = oom_record(KILL_TS)
    for ts, msg, prio in record:
        j.kernel(ts, msg, prio)
    for ts, msg, prio in reaper_lines(KILL_TS):
        j.kernel(ts, msg, prio)
    after = KILL_TS + timedelta(microseconds=1_900)
    for unit in (EAGLE_UNIT, "system.slice"):
        j.systemd(
            after,
            f"{unit}: A process of this unit has been killed by the OOM killer.",
            unit,
            message_id="fe6faa94e7774663a0da52717891d8ef",
            priority=5,
            code_func="unit_log_oom",
        )
        after += timedelta(microseconds=58)
    j.systemd(
        KILL_TS + timedelta(milliseconds=41),
        f"{EAGLE_UNIT}: Main process exited, code=killed, status=9/KILL",
        EAGLE_UNIT,
        message_id="98e322203f7a4ed290d09fe03c09fe15",
        priority=5,
        code_func="service_sigchld_event",
        extra=[("EXIT_CODE", "killed"), ("EXIT_STATUS", "9")],
    )
    j.systemd(
        KILL_TS + timedelta(milliseconds=43),
        f"{EAGLE_UNIT}: Failed with result 'oom-kill'.",
        EAGLE_UNIT,
        message_id="d9b373ed55a64feb8242e02dbe79a49c",
        priority=4,
        code_func="unit_log_failure",
        extra=[("UNIT_RESULT", "oom-kill")],
    )
    j.systemd(
        KILL_TS + timedelta(milliseconds=44),
        f"{EAGLE_UNIT}: Consumed 9h 12min 44.361s CPU time, 640.0G memory peak, 0B memory swap peak.",
        EAGLE_UNIT,
        message_id="ae8f7b866b0347b9af31fe1c80b127c0",
        code_func="unit_log_resources",
        extra=[("CPU_USAGE_NSEC", "33164361000000"), ("MEMORY_PEAK", str(640 * 2**30))],
    )
    j.systemd(
        RESTART_TS,
        f"{EAGLE_UNIT}: Scheduled restart job, restart counter is at 1.",
        EAGLE_UNIT,
        message_id="5eb03494b6584870a536b337290809b3",
        code_func="unit_log_restart",
        extra=[("N_RESTARTS", "1")],
    )
    j.systemd(
        RESTART_TS + timedelta(microseconds=880),
        f"Stopped {EAGLE_UNIT} - {EAGLE_DESC}.",
        EAGLE_UNIT,
        message_id="9d1aaa27d60140bd96365438aad20286",
        code_func="job_emit_done_message",
    )
    j.systemd(
        RESTART_TS + timedelta(microseconds=1_310),
        f"Starting {EAGLE_UNIT} - {EAGLE_DESC}...",
        EAGLE_UNIT,
        message_id="7d4958e842da4a758f6c1cdc7b36dcc5",
        code_func="job_emit_start_message",
    )
    j.systemd(
        RESTART_TS + timedelta(milliseconds=39),
        f"Started {EAGLE_UNIT} - {EAGLE_DESC}.",
        EAGLE_UNIT,
        message_id="39f53479d3a045ac8e11786248231fbf",
        code_func="job_emit_done_message",
    )

    # eagle3 instance 2 (automatic restart) loads weights until the operator stops it
    startup(eagle, RESTART_TS, spec=True, weight_s=455.0, graph_s=117.4, stop_at=OPERATOR_STOP)
    graceful_stop(eagle, OPERATOR_STOP + timedelta(milliseconds=210))
    ssh = OPERATOR_STOP - timedelta(seconds=52.3)
    j.syslog(
        ssh,
        "sshd",
        52_011,
        "Accepted publickey for ops from 10.20.0.15 port 51822 ssh2: ED25519 "
        "SHA256:q3Vt1mJ0kFz8rX2bN6yW4sLc9dPe7uHa5oGiTfKxYwM",
        facility=4,
        unit="ssh.service",
        comm="sshd",
        exe="/usr/sbin/sshd",
        transport="syslog",
    )
    j.syslog(
        ssh + timedelta(milliseconds=140),
        "sshd",
        52_011,
        "pam_unix(sshd:session): session opened for user ops(uid=1000) by ops(uid=0)",
        facility=10,
        unit="ssh.service",
        comm="sshd",
        exe="/usr/sbin/sshd",
    )
    j.syslog(
        OPERATOR_STOP - timedelta(seconds=1.2),
        "sudo",
        52_100,
        "     ops : TTY=pts/0 ; PWD=/home/ops ; USER=root ; COMMAND=/usr/bin/systemctl stop "
        "sglang-k26-eagle3.service",
        priority=5,
        facility=10,
        comm="sudo",
        exe="/usr/bin/sudo",
    )
    j.systemd(
        OPERATOR_STOP,
        f"Stopping {EAGLE_UNIT} - {EAGLE_DESC}...",
        EAGLE_UNIT,
        message_id="de5b426a63be47a7b6ac3eaac82e2f6f",
        code_func="job_emit_start_message",
    )
    done = OPERATOR_STOP + timedelta(seconds=2.7)
    j.systemd(
        done,
        f"{EAGLE_UNIT}: Deactivated successfully.",
        EAGLE_UNIT,
        message_id="7ad2d189f7e94e70a38c781354912448",
        code_func="unit_log_success",
    )
    j.systemd(
        done + timedelta(microseconds=300),
        f"Stopped {EAGLE_UNIT} - {EAGLE_DESC}.",
        EAGLE_UNIT,
        message_id="9d1aaa27d60140bd96365438aad20286",
        code_func="job_emit_done_message",
    )
    j.systemd(
        done + timedelta(microseconds=520),
        f"{EAGLE_UNIT}: Consumed 14min 31.902s CPU time, 44.1G memory peak, 0B memory swap peak.",
        EAGLE_UNIT,
        message_id="ae8f7b866b0347b9af31fe1c80b127c0",
        code_func="unit_log_resources",
    )

    # the fallback: plain autoregressive service on the same port
    j.syslog(
        PLAIN_START - timedelta(seconds=0.9),
        "sudo",
        52_180,
        "     ops : TTY=pts/0 ; PWD=/home/ops ; USER=root ; COMMAND=/usr/bin/systemctl start sglang-k26.service",
        priority=5,
        facility=10,
        comm="sudo",
        exe="/usr/bin/sudo",
    )
    j.systemd(
        PLAIN_START,
        f"Starting {PLAIN_UNIT} - {PLAIN_DESC}...",
        PLAIN_UNIT,
        message_id="7d4958e842da4a758f6c1cdc7b36dcc5",
        code_func="job_emit_start_message",
    )
    j.systemd(
        PLAIN_START + timedelta(milliseconds=37),
        f"Started {PLAIN_UNIT} - {PLAIN_DESC}.",
        PLAIN_UNIT,
        message_id="39f53479d3a045ac8e11786248231fbf",
        code_func="job_emit_done_message",
    )
    marks = startup(plain, PLAIN_START, spec=False, weight_s=406.3, graph_s=102.8)
    # uvicorn comes up after the graphs; the operator's 15 s poll of /v1/models
    ready = PLAIN_READY
    tail = SglangLog()
    finish_startup(tail, ready, 52290)
    poll = PLAIN_START + timedelta(seconds=15)
    while poll <= PLAIN_READY:
        # only the polls after uvicorn started reach the server; earlier ones are refused
        if poll >= ready - timedelta(seconds=19.4):
            status = "200 OK" if poll >= ready else "503 Service Unavailable"
            tail.add(
                poll + timedelta(milliseconds=120),
                f"INFO:     127.0.0.1:{47000 + int((poll - PLAIN_START).total_seconds())} - "
                f'"GET /v1/models HTTP/1.1" {status}',
            )
        poll += timedelta(seconds=15)
    tail.lines.sort(key=_line_time)
    plain.lines.extend(tail.lines)
    traffic(
        plain,
        PLAIN_READY + timedelta(seconds=40),
        datetime(2025, 5, 25, 20, 40, tzinfo=UTC),
        spec=False,
        ramp=False,
        base_usage=0.22,
    )

    # --- write files --------------------------------------------------------------------------
    (out / "journal.export").write_bytes(j.render_export())
    eagle_text = eagle.text()
    (out / "sglang-k26-eagle3.log").write_text(eagle_text, encoding="utf-8")
    (out / "sglang-k26.log").write_text(plain.text(), encoding="utf-8")

    dmesg = [fmt_dmesg(s, m) for s, m in dmesg_boot_lines()]
    for ts, msg, _ in record + reaper_lines(KILL_TS):
        dmesg.append(fmt_dmesg(mono_us(ts) / 1e6, msg))
    dmesg.append(
        fmt_dmesg(
            mono_us(OPERATOR_STOP + timedelta(seconds=3)) / 1e6,
            "nvidia-uvm: uvm_channel_pool_destroy: channel pool 0 teardown",
        )
    )
    (out / "dmesg.txt").write_text("\n".join(dmesg) + "\n", encoding="utf-8")

    (out / "nvidia-smi-gpu.csv").write_text(
        gpu_csv(
            datetime(2025, 5, 25, 19, 45, 0, 212_000, tzinfo=UTC),
            datetime(2025, 5, 25, 20, 40, tzinfo=UTC),
            5,
        ),
        encoding="utf-8",
    )
    (out / "nvidia-smi-apps.csv").write_text(
        apps_csv(datetime(2025, 5, 25, 19, 45, 2, tzinfo=UTC), datetime(2025, 5, 25, 20, 40, tzinfo=UTC), 15),
        encoding="utf-8",
    )
    snap = datetime(2025, 5, 25, 20, 18, 2, tzinfo=UTC)
    (out / "nvidia-smi-20250525-201802.txt").write_text(smi_table(snap), encoding="utf-8")
    (out / "README.md").write_text(README, encoding="utf-8")


README = """# Sample incident: EAGLE-3 service OOM-killed on dflash-train

Generated by `scripts/gen_sample_logs.py` (deterministic; `make samples` rewrites it). The host
clock is UTC. Files are in the formats the real tools write:

| File | Written by |
|---|---|
| `journal.export` | `journalctl -o export --since '2025-05-25 18:00'` (systemd 255) |
| `dmesg.txt` | `dmesg` (boot-relative stamps, kernel 6.8) |
| `sglang-k26-eagle3.log` | the EAGLE-3 unit's `StandardOutput=append:` file (SGLang 0.5.10) |
| `sglang-k26.log` | the autoregressive unit's log file |
| `nvidia-smi-gpu.csv` | `nvidia-smi --query-gpu=timestamp,index,uuid,pci.bus_id,name,memory.total,memory.reserved,memory.used,memory.free,utilization.gpu,utilization.memory,temperature.gpu,power.draw,pstate --format=csv -l 5` |
| `nvidia-smi-apps.csv` | `nvidia-smi --query-compute-apps=timestamp,gpu_uuid,gpu_bus_id,pid,process_name,used_gpu_memory --format=csv -l 15` |
| `nvidia-smi-20250525-201802.txt` | `nvidia-smi` run by the operator after the kill |

What happened is for `postmortem build` to tell; the generator's docstring has the script.
"""


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "sample_logs")
    build(out)


if __name__ == "__main__":
    main()
