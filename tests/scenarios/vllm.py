"""A vLLM server's log, by version: the line writers the generated nights and the fixed vLLM
matrix (``tests/test_vllm_matrix.py``) share.

Formats follow /work/shared/reference/vllm.md (§1 envelope and process prefixes, §2 version and
arguments, §3 start-up phases, §4 statistics, §6 CUDA OOM, §7 deaths). Six versions that differ
where a reader cares: 0.4.3 (V0, engine in the API server, ``file.py:N]``), 0.6.6 (V0 with its
engine in its own process), 0.8.5 (V1, ``[file.py:N]``, no prefix on the engine core), 0.10.2
(``(APIServer pid=…)``/``(EngineCore_DP0 pid=…)``, process titles ``VLLM::…``), 0.20.1
(``(EngineCore pid=…)`` without colour, ``Starting vLLM server on``) and 0.31.0 (the prefix in
the logger's format: uvicorn lines and tracebacks bare).

What a vLLM log never says, unlike SGLang's: the year (``MM-DD HH:MM:SS``), sub-seconds, and the
time of uvicorn's lines (``INFO:     Application startup complete.``, access lines).

>>> from datetime import UTC, datetime
>>> prefix(_v("0.10.2"), "engine", 4242)
'\\x1b[1;36m(EngineCore_DP0 pid=4242)\\x1b[0;0m '
>>> log = VllmLog("0.20.1", "UTC", tp=2)
>>> log.pids(4241, 4242, [4243, 4244])
>>> log.stats(datetime(2026, 1, 15, 10, 0, tzinfo=UTC), 5, 2, 41.0)
>>> log.lines[-1].text[:80]
'(APIServer pid=4241) INFO 01-15 10:00:00 [loggers.py:259] Engine 000: Avg prompt'
>>> death_message(_v("0.6.6"), "worker", 4243, -9)
('api', 'Worker VllmWorkerProcess pid 4243 died, exit code: -9', 'ERROR')
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from .sglang import SLine

#: versions whose lines differ where a reader cares (envelope, prefixes, config, stats, death)
VERSIONS = ("0.4.3", "0.6.6", "0.8.5", "0.10.2", "0.20.1", "0.31.0")
SITE = "/usr/local/lib/python3.12/dist-packages"


def _v(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


# ----------------------------------------------------------------------------- line writers


def prefix(v: tuple[int, ...], who: str, pid: int, rank: int = 0) -> str:
    """The ``(Name pid=N) `` a process puts before its lines (§1.2): ``api``, ``engine`` or
    ``worker`` (a TP rank's own process)."""
    if who == "api":
        name = "APIServer" if v >= (0, 10, 1) else None
    elif who == "engine":
        name = "EngineCore" if v >= (0, 18) else ("EngineCore_DP0" if v >= (0, 10, 2) else None)
    elif v < (0, 6, 5) or (v < (0, 8) and who == "worker"):
        name = "VllmWorkerProcess"
    else:
        name = f"Worker_TP{rank}" if v >= (0, 10, 2) else f"VllmWorker rank={rank}"
    if name is None:
        return ""
    text = f"({name} pid={pid}) "
    return f"\x1b[1;36m{text[:-1]}\x1b[0;0m " if v <= (0, 17, 1) else text


def envelope_line(
    v: tuple[int, ...], local: datetime, who: str, pid: int, msg: str, level: str = "INFO", where: str = ""
) -> str:
    """One line of vLLM's logger: ``[prefix]LEVEL MM-DD HH:MM:SS [file.py:N] msg`` (``file.py:N]``
    up to 0.7.3); ``local`` is the process's local time."""
    where = where or ("core.py:100" if v >= (0, 8) else "llm_engine.py:100")
    place = f"[{where}]" if v >= (0, 8) else f"{where}]"
    return f"{prefix(v, who, pid)}{level} {local:%m-%d %H:%M:%S} {place} {msg}"


def uvicorn_line(v: tuple[int, ...], pid: int, msg: str) -> str:
    """uvicorn's own line (no time): prefixed by the API server's wrapper 0.10.1–0.30."""
    pre = prefix(v, "api", pid) if (0, 10, 1) <= v < (0, 31) else ""
    return f"{pre}INFO:     {msg}"


def stats_message(v: tuple[int, ...], running: int, queued: int, kv: float) -> str:
    """The periodic statistics line (§4): V0's (``Pending``) or V1's (``Engine 000: … Waiting``)."""
    if v < (0, 7):
        return (
            f"Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: 1500.0 tokens/s, Running: {running} "
            f"reqs, Swapped: 0 reqs, Pending: {queued} reqs, GPU KV cache usage: {kv:.1f}%, CPU KV cache usage: 0.0%."
        )
    return (
        f"Engine 000: Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: 1500.0 tokens/s, "
        f"Running: {running} reqs, Waiting: {queued} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 9.0%"
    )


def death_message(v: tuple[int, ...], role: str, victim_pid: int, code: int) -> tuple[str, str, str] | None:
    """(who writes it, message, level) of the line a server prints when one of its processes
    was killed from outside (§7.3), or None when it prints none: ``role`` is the killed process,
    ``worker`` (a TP rank's own process) or ``engine`` (the engine's process)."""
    if role == "worker":
        if v < (0, 8):
            return "api", f"Worker VllmWorkerProcess pid {victim_pid} died, exit code: {code}", "ERROR"
        said = f" (exit code: {code})" if v >= (0, 26) else ""
        return "engine", f"Worker proc VllmWorker-0 died unexpectedly{said}, shutting down executor.", "ERROR"
    if role != "engine" or v < (0, 6, 2) or (0, 8) <= v < (0, 10, 1):
        return None  # the process itself, or V1's engine core before vllm PR #21728: nothing said
    if v < (0, 8):
        return "api", "MQLLMEngine is already dead, terminating server process", "CRITICAL"
    if v < (0, 20):
        return "api", "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.", "ERROR"
    return "api", "Engine core process EngineCore_DP0 died unexpectedly.", "ERROR"


def torch_oom(v: tuple[int, ...], rng: random.Random, total_gib: float, req: float) -> str:
    """PyTorch's CUDA OOM sentence (``torch.cuda.OutOfMemoryError`` before torch 2.5, vLLM 0.6.4)."""
    name = "torch.OutOfMemoryError" if v >= (0, 6, 4) else "torch.cuda.OutOfMemoryError"
    free = rng.uniform(0.2, 2.0)
    return (
        f"{name}: CUDA out of memory. Tried to allocate {req:.2f} GiB. GPU 0 has a total capacity of "
        f"{total_gib:.2f} GiB of which {free:.2f} GiB is free. Including non-PyTorch memory, this process has "
        f"{total_gib - free:.2f} GiB memory in use. Of the allocated memory {total_gib - free - 3.1:.2f} GiB is "
        "allocated by PyTorch, and 2.71 GiB is reserved by PyTorch but unallocated."
    )


# ----------------------------------------------------------------------------- a server's log


@dataclass
class VllmLog:
    """One server's stream (its unit's stdout), in the order written; ``pid`` is the API
    server's (the unit's main process), ``engine``/``workers`` its children's."""

    version: str
    zone: str  # the process's local zone (vLLM stamps local time, no zone)
    tp: int
    lines: list[SLine] = field(default_factory=list)
    pid: int = 0
    engine: int = 0
    workers: list[int] = field(default_factory=list)

    @property
    def v(self) -> tuple[int, ...]:
        return _v(self.version)

    def pids(self, main: int, engine: int, workers: list[int]) -> None:
        self.pid, self.engine, self.workers = main, engine, list(workers)

    def _who_pid(self, who: str) -> int:
        if who == "engine":
            return self.engine if self.v >= (0, 6, 2) else self.pid
        if who == "worker":
            return self.workers[0] if self.workers else self.engine
        return self.pid

    def worker_who(self) -> str:
        """Who writes rank 0's lines: its own process (V1, TP > 1), else the engine's."""
        return "worker" if self.v >= (0, 8) and self.tp > 1 else "engine"

    def add(self, ts: datetime, msg: str, who: str = "api", level: str = "INFO", where: str = "") -> None:
        local = ts.astimezone(ZoneInfo(self.zone))
        text = envelope_line(self.v, local, who, self._who_pid(who), msg, level, where)
        self.lines.append(SLine(ts, text, None, self.pid))

    def bare(self, ts: datetime, text: str, who: str = "api") -> None:
        """A line printed past the logger (a traceback to stderr): prefixed by the stream's
        wrapper up to 0.30 (``prefix`` is empty where the process has none), bare since."""
        pre = prefix(self.v, who, self._who_pid(who)) if self.v < (0, 31) else ""
        self.lines.append(SLine(ts, pre + text, None, self.pid, timed=False))

    def uvicorn(self, ts: datetime, msg: str) -> None:
        self.lines.append(SLine(ts, uvicorn_line(self.v, self.pid, msg), None, self.pid, timed=False))

    # ----------------------------------------------------------------- start-up (§2, §3)

    def version_lines(self, ts: datetime, model: str, tp: int, port: int) -> None:
        v = self.v
        if v >= (0, 15):
            self.add(ts, f"vLLM server version {self.version}, serving model {model}", where="utils.py:233")
        else:
            self.add(ts, f"vLLM API server version {self.version}", where="api_server.py:712")
        if v >= (0, 9):
            args = f"{{'model_tag': '{model}', 'port': {port}, 'model': '{model}', 'tensor_parallel_size': {tp}}}"
            self.add(ts, f"non-default args: {args}", where="utils.py:253")
        else:
            self.add(
                ts,
                f"args: Namespace(host=None, port={port}, model='{model}', tensor_parallel_size={tp}, "
                "gpu_memory_utilization=0.9, max_num_seqs=256)",
                where="api_server.py:713",
            )

    def engine_init(self, ts: datetime, model: str, tp: int) -> None:
        v = self.v
        kind = "" if v < (0, 7, 1) else ("V1 " if v >= (0, 8) else "V0 ")
        art = "a" if kind else "an"
        config = (
            f"model='{model}', speculative_config=None, tokenizer='{model}', dtype=torch.bfloat16, "
            f"max_seq_len=32768, tensor_parallel_size={tp}, pipeline_parallel_size=1, enforce_eager=False"
        )
        self.add(ts, f"Initializing {art} {kind}LLM engine (v{self.version}) with config: {config}", "engine")

    def load_begin(self, ts: datetime, model: str) -> None:
        if self.v >= (0, 5, 3):
            self.add(
                ts, f"Starting to load model {model}...", self.worker_who(), where="model_runner.py:1030"
            )

    def load_end(self, ts: datetime, secs: float, gib: float) -> None:
        v, who = self.v, self.worker_who()
        if v < (0, 8):
            self.add(ts, f"Loading model weights took {gib:.4f} GB", who, where="model_runner.py:1041")
            return
        self.add(ts, f"Loading weights took {secs * 0.9:.2f} seconds", who, where="default_loader.py:262")
        if v >= (0, 14):
            text = f"Model loading took {round(gib, 2)} GiB memory and {secs:.6f} seconds"
        elif v >= (0, 11, 1):
            text = f"Model loading took {gib:.4f} GiB memory and {secs:.6f} seconds"
        else:
            text = f"Model loading took {gib:.4f} GiB and {secs:.6f} seconds"
        self.add(ts, text, who, where="gpu_model_runner.py:1770")

    def kv(self, ts: datetime, tokens: int, gib: float) -> None:
        v = self.v
        if v < (0, 8):
            if v >= (0, 6, 5):
                self.add(ts, "Memory profiling takes 4.21 seconds", "engine", where="worker.py:265")
            self.add(
                ts, f"# GPU blocks: {tokens // 16}, # CPU blocks: 4096", "engine", where="executor_base.py:92"
            )
            if v >= (0, 6, 3):
                self.add(
                    ts,
                    "Maximum concurrency for 32768 tokens per request: 9.41x",
                    "engine",
                    where="executor_base.py:97",
                )
            return
        if v >= (0, 9, 1):
            self.add(
                ts, f"Available KV cache memory: {gib:.2f} GiB", self.worker_who(), where="gpu_worker.py:359"
            )
        conc = "Maximum concurrency for 32,768 tokens per request: 9.41x"
        if v >= (0, 28):
            self.add(
                ts, f"GPU KV cache size: {tokens:,} tokens, {conc}", "engine", where="kv_cache_utils.py:1711"
            )
            return
        self.add(ts, f"GPU KV cache size: {tokens:,} tokens", "engine", where="kv_cache_utils.py:1711")
        self.add(ts, conc, "engine", where="kv_cache_utils.py:1715")

    def graph_begin(self, ts: datetime) -> None:
        v = self.v
        if v < (0, 6, 4):
            text = (
                "Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model is "
                "not static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI."
            )
        elif v < (0, 8):
            text = (
                "Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is not "
                "static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI."
            )
        else:
            return  # V1: a tqdm bar only
        self.add(ts, text, "engine", where="model_runner.py:1404")

    def graph_end(self, ts: datetime, secs: float, gib: float) -> None:
        took = f", took {gib:.2f} GiB" if self.v >= (0, 6, 4) else "."
        self.add(
            ts,
            f"Graph capturing finished in {secs:.0f} secs{took}",
            self.worker_who(),
            where="model_runner.py:1530",
        )

    def init_engine(self, ts: datetime, secs: float) -> None:
        v = self.v
        if v < (0, 6, 5):
            return
        unit = "s" if v >= (0, 20) else "seconds"
        text = f"init engine (profile, create kv cache, warmup model) took {secs:.2f} {unit}"
        self.add(ts, text, "engine", where="core.py:91" if v >= (0, 8) else "llm_engine.py:431")

    def ready(self, ts: datetime, port: int, own_s: float) -> None:
        """vLLM's own ready line ``own_s`` before uvicorn's (its routes), then uvicorn's start-up."""
        v, url = self.v, f"http://0.0.0.0:{port}"
        own = ts - _td(own_s)
        if v >= (0, 18):
            self.add(own, f"Starting vLLM server on {url}", where="api_server.py:623")
        elif v >= (0, 9, 1):
            self.add(own, f"Starting vLLM API server 0 on {url}", where="api_server.py:1837")
        elif v >= (0, 7, 3):
            self.add(own, f"Starting vLLM API server on {url}", where="api_server.py:1028")
        if v >= (0, 5, 2):
            self.add(own, "Available routes are:", where="launcher.py:28")
            for route in ("/health", "/v1/models", "/v1/chat/completions"):
                self.add(
                    own,
                    f"Route: {route}, Methods: {'POST' if 'chat' in route else 'GET'}",
                    where="launcher.py:36",
                )
        self.uvicorn(ts, f"Started server process [{self.pid}]")
        self.uvicorn(ts, "Waiting for application startup.")
        self.uvicorn(ts, "Application startup complete.")
        if v < (0, 7, 3):
            self.uvicorn(ts, f"Uvicorn running on {url} (Press CTRL+C to quit)")

    # ----------------------------------------------------------------- serving (§4)

    def stats(self, ts: datetime, running: int, queued: int, kv: float) -> None:
        where = "loggers.py:259" if self.v >= (0, 8) else "metrics.py:351"
        self.add(
            ts,
            stats_message(self.v, running, queued, kv),
            "api" if self.v >= (0, 8) else "engine",
            where=where,
        )

    def access(self, ts: datetime, client: str) -> None:
        self.uvicorn(ts, f'{client} - "POST /v1/chat/completions HTTP/1.1" 200 OK')

    # ----------------------------------------------------------------- deaths (§6, §7)

    def death(self, ts: datetime, role: str, victim_pid: int, code: int) -> bool:
        """The line about a process killed from outside; False when the version prints none."""
        said = death_message(self.v, role, victim_pid, code)
        if said is None:
            return False
        who, msg, level = said
        self.add(
            ts,
            msg,
            who,
            level,
            where="multiproc_worker_utils.py:120" if self.v < (0, 8) else "core_client.py:565",
        )
        return True

    def shutdown(self, ts: datetime) -> None:
        """The API server shutting down after its engine died, or on SIGTERM."""
        if (0, 6, 2) <= self.v < (0, 23):
            self.add(ts, "Shutting down FastAPI HTTP server.", where="launcher.py:80")
        for msg in ("Shutting down", "Waiting for application shutdown.", "Application shutdown complete."):
            self.uvicorn(ts, msg)
        self.uvicorn(ts, f"Finished server process [{self.pid}]")

    def _traceback(self, ts: datetime, who: str, frames: list[tuple[str, int, str, str]], last: str) -> None:
        """A traceback logged by ``logger.exception``: every line in the envelope (§1.1)."""
        self.add(ts, "Traceback (most recent call last):", who, "ERROR")
        for path, line, fn, code in frames:
            self.add(ts, f'  File "{path}", line {line}, in {fn}', who, "ERROR")
            self.add(ts, f"    {code}", who, "ERROR")
        self.add(ts, last, who, "ERROR")

    def cuda_oom(self, ts: datetime, rng: random.Random, total_gib: float) -> None:
        """A CUDA OOM while serving: the engine's fatal error and its traceback, the API
        server's report that the engine is dead."""
        v = self.v
        oom = torch_oom(v, rng, total_gib, rng.uniform(0.5, 4))
        if v >= (0, 8):
            self.add(ts, "EngineCore encountered a fatal error.", "engine", "ERROR", where="core.py:710")
            frames = [
                (f"{SITE}/vllm/v1/engine/core.py", 701, "run_engine_core", "engine_core.run_busy_loop()"),
                (
                    f"{SITE}/vllm/v1/worker/gpu_model_runner.py",
                    1421,
                    "execute_model",
                    "model_output = self.model(",
                ),
            ]
            self._traceback(ts, "engine", frames, oom)
            self.add(
                ts + _td(0.05), "AsyncLLM output_handler failed.", "api", "ERROR", where="async_llm.py:480"
            )
            self.add(
                ts + _td(0.05),
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
                "for the root cause.",
                "api",
                "ERROR",
                where="async_llm.py:480",
            )
            return
        self.add(ts, "Engine background task failed", "engine", "ERROR", where="async_llm_engine.py:58")
        frames = [
            (
                f"{SITE}/vllm/engine/async_llm_engine.py",
                48,
                "_log_task_completion",
                "return_value = task.result()",
            ),
            (
                f"{SITE}/vllm/worker/model_runner.py",
                1450,
                "execute_model",
                "hidden_or_intermediate_states = model_executable(",
            ),
        ]
        self._traceback(ts, "engine", frames, oom)
        if v >= (0, 6, 2):
            self.add(
                ts + _td(0.05), "MQLLMEngine is already dead, terminating server process", "api", "CRITICAL"
            )

    def startup_cuda_oom(self, ts: datetime, rng: random.Random, total_gib: float) -> None:
        """A CUDA OOM while allocating the KV cache: the engine fails to start."""
        v = self.v
        oom = torch_oom(v, rng, total_gib, rng.uniform(6, 20))
        frames = [
            (
                f"{SITE}/vllm/v1/engine/core.py" if v >= (0, 8) else f"{SITE}/vllm/engine/llm_engine.py",
                78,
                "__init__",
                "self._initialize_kv_caches()",
            ),
            (f"{SITE}/vllm/worker/cache_engine.py", 88, "_allocate_kv_cache", "torch.zeros("),
        ]
        if v >= (0, 8):
            self.add(ts, "EngineCore failed to start.", "engine", "ERROR", where="core.py:700")
            self._traceback(ts, "engine", frames, oom)
            procs = " Failed core proc(s): {'EngineCore_DP0': 1}" if v >= (0, 9) else ""
            self.bare(ts + _td(0.4), "Traceback (most recent call last):")
            self.bare(
                ts + _td(0.4),
                f"RuntimeError: Engine core initialization failed. See root cause above.{procs}",
            )
            return
        who = "engine" if v >= (0, 6, 2) else "api"
        self.bare(ts, "Traceback (most recent call last):", who)
        for path, line, fn, code in frames:
            self.bare(ts, f'  File "{path}", line {line}, in {fn}', who)
            self.bare(ts, f"    {code}", who)
        self.bare(ts, oom, who)
        if v >= (0, 6, 2):
            self.bare(
                ts + _td(0.4),
                "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
            )

    def config_error(self, ts: datetime, model: str) -> None:
        """``vllm serve`` of a model path that holds no model: the API server's traceback."""
        for text in (
            "Traceback (most recent call last):",
            '  File "/usr/local/bin/vllm", line 8, in <module>',
            "    sys.exit(main())",
            f'  File "{SITE}/transformers/utils/hub.py", line 456, in cached_files',
            "    raise OSError(",
            f"OSError: {model} does not appear to have a file named config.json.",
        ):
            self.bare(ts, text)


def _td(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)
