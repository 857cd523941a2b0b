"""An SGLang server's log, by version, and the envelopes other tools wrap its lines in.

Formats follow /work/shared/reference/sglang.md (§1 prefix and rank tags, §2 start-up phases,
§3 batch statistics, §4 errors): four versions that differ where parsers care — 0.4.6.post1
(``TP0`` always, ``Decode batch.``, no ``cuda graph`` field), 0.5.2 (``TP`` only when TP > 1,
trailing ``", "``), 0.5.10 (``Decode batch,``, ``elapsed=`` in ``Load weight end``,
``Subprocess … crashed`` on a runtime SIGKILL), 0.5.17 (milliseconds, new CUDA-graph lines,
``Engine startup timings``).

>>> from datetime import UTC, datetime
>>> log = SglangLog("0.5.10", "UTC", tp=2)
>>> log.add(datetime(2026, 1, 15, 10, 0, tzinfo=UTC), "Load weight begin. avail mem=77.43 GB", rank=1)
>>> log.add(datetime(2026, 1, 15, 10, 0, 1, tzinfo=UTC), "The server is fired up and ready to roll!")
>>> [x.text for x in log.lines]
['[2026-01-15 10:00:00 TP1] Load weight begin. avail mem=77.43 GB', '[2026-01-15 10:00:01] The server is fired up and ready to roll!']
>>> SglangLog("0.4.6.post1", "UTC", tp=1).decode(5, 100, 0.5, 12.0, 2)
'Decode batch. #running-req: 5, #token: 100, token usage: 0.50, gen throughput (token/s): 12.00, #queue-req: 2'
>>> envelope(log.lines[0], "cri", "UTC", pid=4242)
'2026-01-15T10:00:00.000000000Z stdout F [2026-01-15 10:00:00 TP1] Load weight begin. avail mem=77.43 GB'
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

SITE = "/usr/local/lib/python3.12/dist-packages"


def _v(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.replace(".post", ".").split("."))[:3]


@dataclass
class SLine:
    ts: datetime  # UTC
    text: str  # as SGLang (or Python) wrote it
    rank: int | None = None  # the scheduler rank that wrote it (None: the main process)
    pid: int = 0  # the server's main pid (journald attributes a unit's stdout to it)
    timed: bool = True  # the line carries its own time (uvicorn's and tracebacks' under vLLM do not)


@dataclass
class SglangLog:
    version: str
    zone: str  # the process's local zone (SGLang stamps local time)
    tp: int
    lines: list[SLine] = field(default_factory=list)
    pid: int = 0  # the main pid of the run writing now

    @property
    def v(self) -> tuple[int, ...]:
        return _v(self.version)

    def stamp(self, ts: datetime) -> str:
        local = ts.astimezone(ZoneInfo(self.zone))
        text = local.strftime("%Y-%m-%d %H:%M:%S")
        if self.v >= (0, 5, 17):
            text += f".{local.microsecond // 1000:03d}"
        return text

    def tag(self, rank: int | None) -> str:
        if rank is None:
            return ""
        if self.v <= (0, 4, 6) or self.tp > 1:
            return f" TP{rank}"
        return ""

    def add(self, ts: datetime, msg: str, rank: int | None = None) -> None:
        self.lines.append(SLine(ts, f"[{self.stamp(ts)}{self.tag(rank)}] {msg}", rank, self.pid))

    def raw(self, ts: datetime, text: str, rank: int | None = None) -> None:
        self.lines.append(SLine(ts, text, rank, self.pid))

    # ----------------------------------------------------------------- messages by version

    def load_end(self, arch: str, secs: float, avail: float, usage: float) -> str:
        if self.v >= (0, 5, 10):
            return f"Load weight end. elapsed={secs:.2f} s, type={arch}, avail mem={avail:.2f} GB, mem usage={usage:.2f} GB."
        return f"Load weight end. type={arch}, dtype=torch.bfloat16, avail mem={avail:.2f} GB, mem usage={usage:.2f} GB."

    def kv_alloc(self, tokens: int, k: float) -> str:
        dtype = "dtype: torch.bfloat16, " if self.v >= (0, 5, 13) else ""
        return f"KV Cache is allocated. {dtype}#tokens: {tokens}, K size: {k:.2f} GB, V size: {k:.2f} GB"

    def graph_begin(self, avail: float) -> str:
        if self.v >= (0, 5, 14):
            return (
                "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, "
                f"bs=[1, 2, 4, 8, 16, 32, 64, 128, 256], avail mem={avail:.2f} GB"
            )
        return f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail:.2f} GB"

    def graph_end(self, secs: float, usage: float, avail: float) -> str:
        if self.v >= (0, 5, 14):
            return f"Capture target decode CUDA graph end. elapsed={secs:.2f} s, mem usage={usage:.2f} GB, avail mem={avail:.2f} GB."
        if self.v <= (0, 4, 6):
            return f"Capture cuda graph end. Time elapsed: {secs:.2f} s. avail mem={avail:.2f} GB. mem usage={usage:.2f} GB."
        return f"Capture cuda graph end. Time elapsed: {secs:.2f} s. mem usage={usage:.2f} GB. avail mem={avail:.2f} GB."

    def limits(self, tokens: int, avail: float) -> str:
        text = (
            f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            f"max_running_requests=2048, context_len=131072"
        )
        return text + (f", available_gpu_mem={avail:.2f} GB" if self.v >= (0, 4, 7) else "")

    def decode(self, running: int, tokens: int, usage: float, thr: float, queued: int) -> str:
        graph = "cuda graph: True, " if self.v > (0, 4, 6) else ""
        body = (
            f"#running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, {graph}"
            f"gen throughput (token/s): {thr:.2f}, #queue-req: {queued}"
        )
        if self.v >= (0, 5, 10):
            return f"Decode batch, {body}"
        return f"Decode batch. {body}" + (", " if (0, 4, 9) <= self.v <= (0, 5, 8) else "")

    def prefill(self, new: int, new_tokens: int, cached: int, usage: float, running: int, queued: int) -> str:
        body = (
            f"#new-seq: {new}, #new-token: {new_tokens}, #cached-token: {cached}, token usage: {usage:.2f}, "
            f"#running-req: {running}, #queue-req: {queued}"
        )
        if self.v >= (0, 5, 17):
            return f"Prefill batch, {body}, #pending-token: 0, cuda graph: False, input throughput (token/s): 8123.40"
        if self.v >= (0, 5, 10):
            return f"Prefill batch, {body}, cuda graph: False, input throughput (token/s): 8123.40"
        return f"Prefill batch. {body}" + (", " if (0, 4, 9) <= self.v <= (0, 5, 8) else "")

    def sigquit(self, launch: bool) -> str:
        if launch or self.v < (0, 5, 3):
            return "Received sigquit from a child process. It usually means the child failed."
        return "SIGQUIT received. signum=None, frame=None. It usually means one child failed."


def server_args(model: str, tp: int, port: int, mfs: float) -> str:
    return (
        f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', "
        f"trust_remote_code=True, host='0.0.0.0', port={port}, dtype='auto', kv_cache_dtype='auto', "
        f"mem_fraction_static={mfs}, max_running_requests=None, max_queued_requests=None, "
        f"chunked_prefill_size=8192, tp_size={tp}, pp_size=1, dp_size=1, served_model_name='{model.rsplit('/', 1)[1]}', "
        "speculative_algorithm=None, speculative_draft_model_path=None, cuda_graph_max_bs=256, "
        "watchdog_timeout=300, log_level='info', decode_log_interval=40)"
    )


def cuda_oom_traceback(where: str, rng: random.Random, total_gib: float) -> list[str]:
    """The un-prefixed lines after ``Scheduler hit an exception: Traceback …``."""
    sched = f"{SITE}/sglang/srt/managers/scheduler.py"
    if where == "kv":
        frames = [
            (
                sched,
                2710,
                "run_scheduler_process",
                "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)",
            ),
            (
                f"{SITE}/sglang/srt/model_executor/model_runner.py",
                1532,
                "init_memory_pool",
                "self.token_to_kv_pool = MHATokenToKVPool(",
            ),
            (f"{SITE}/sglang/srt/mem_cache/memory_pool.py", 512, "_create_buffers", "torch.zeros("),
        ]
        req = rng.uniform(6, 20)
    else:
        frames = [
            (sched, 2710, "run_scheduler_process", "scheduler.event_loop_overlap()"),
            (sched, 884, "event_loop_overlap", "batch_result = self.run_batch(batch)"),
            (
                f"{SITE}/sglang/srt/model_executor/model_runner.py",
                1710,
                "forward_extend",
                "return self.model.forward(",
            ),
        ]
        req = rng.uniform(0.5, 4)
    out = ["Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out += [f'  File "{path}", line {line}, in {fn}', f"    {code}"]
    free = rng.uniform(0.2, 2.0)
    out.append(
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {req:.2f} GiB. GPU 0 has a total "
        f"capacity of {total_gib:.2f} GiB of which {free:.2f} GiB is free. Including non-PyTorch memory, this "
        f"process has {total_gib - free:.2f} GiB memory in use. Of the allocated memory {total_gib - free - 3.1:.2f} GiB "
        "is allocated by PyTorch, and 2.71 GiB is reserved by PyTorch but unallocated. If reserved but unallocated "
        "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
        "See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )
    return out


def config_error_traceback(model: str) -> list[str]:
    """What ``python -m sglang.launch_server`` prints when the model path is wrong (no prefix)."""
    return [
        "Traceback (most recent call last):",
        '  File "<frozen runpy>", line 198, in _run_module_as_main',
        '  File "<frozen runpy>", line 88, in _run_code',
        f'  File "{SITE}/sglang/launch_server.py", line 14, in <module>',
        "    server_args = prepare_server_args(sys.argv[1:])",
        f'  File "{SITE}/transformers/utils/hub.py", line 456, in cached_files',
        "    raise OSError(",
        f"OSError: {model} does not appear to have a file named config.json.",
    ]


# ----------------------------------------------------------------------------- envelopes

_LOGGER = {None: "sglang.srt.entrypoints.http_server", "sched": "sglang.srt.managers.scheduler"}


def envelope(line: SLine, kind: str, zone: str, *, pid: int) -> str:
    """``line`` as it lands in a file through another tool: ``plain`` (as written), ``pylogging``
    (the application's own logging format replaces SGLang's), ``cri`` (a CRI pod log, UTC
    RFC 3339 with nanoseconds), ``docker`` (``docker logs -t``: UTC RFC 3339 with nanoseconds), ``ray`` (an ANSI-coloured actor
    prefix), ``supervisor`` (a
    launcher re-logging each line with its own loguru-style stamp)."""
    if kind == "plain":
        return line.text
    local = line.ts.astimezone(ZoneInfo(zone))
    if kind == "cri":
        utc = line.ts.astimezone(ZoneInfo("UTC"))
        return f"{utc.strftime('%Y-%m-%dT%H:%M:%S')}.{utc.microsecond:06d}000Z stdout F {line.text}"
    if kind == "docker":  # ``docker logs -t``
        utc = line.ts.astimezone(ZoneInfo("UTC"))
        return f"{utc.strftime('%Y-%m-%dT%H:%M:%S')}.{utc.microsecond:06d}000Z {line.text}"
    if kind == "ray":
        who = "SchedulerActor" if line.rank is not None else "ServerActor"
        return f"\x1b[36m({who} pid={pid}, ip=10.0.4.17)\x1b[0m {line.text}"
    if kind == "supervisor":
        stamp = local.strftime("%Y-%m-%d %H:%M:%S") + f".{local.microsecond // 1000:03d}"
        return f"{stamp} | INFO     | launcher:pump:61 - {line.text}"
    if kind == "pylogging":
        text = line.text
        if text.startswith("[") and "] " in text:
            text = text.split("] ", 1)[1]  # the dictConfig's format has no SGLang prefix
        logger = _LOGGER["sched" if line.rank is not None else None]
        stamp = local.strftime("%Y-%m-%d %H:%M:%S") + f",{local.microsecond // 1000:03d}"
        if not line.text.startswith("["):
            return line.text  # traceback lines are printed as they are
        return f"{stamp} - {logger} - INFO - {text}"
    raise ValueError(kind)


def advance(ts: datetime, seconds: float) -> datetime:
    return ts + timedelta(seconds=seconds)
