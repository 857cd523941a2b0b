"""The message-level vLLM parser: one per process stream (a file, or a unit's lines inside a
journal/docker/CRI capture). It turns lines into the engine-neutral records (engine ``vllm``):
``server_configs``, ``server_events`` (startup phases, readiness, errors, deaths),
``server_stats`` (V0/V1 statistics with speculative-decoding acceptance), ``http_requests``
(uvicorn access lines) and ``cuda_ooms``.

>>> from postmortem.parsers.base import ParseContext
>>> s = VllmStream(ParseContext(year=2026))
>>> for i, line in enumerate([
...     "INFO 05-25 20:03:11 [api_server.py:1] vLLM API server version 0.8.5",
...     "INFO 05-25 20:03:11 [api_server.py:2] non-default args: {'model': '/m/q', 'tensor_parallel_size': 2}",
...     "(VllmWorker rank=0 pid=7) INFO 05-25 20:04:00 [gpu_model_runner.py:3] Model loading took 15.2 GiB and 40.5 seconds",
...     "INFO 05-25 20:04:30 [loggers.py:4] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 900.5 tokens/s, Running: 12 reqs, Waiting: 3 reqs, GPU KV cache usage: 81.0%, Prefix cache hit rate: 5.0%",
... ], 1):
...     _ = s.feed_line(i, line)
>>> out = list(s.close())
>>> [type(r).__name__ for r in out]
['ServerConfig', 'ServerEvent', 'ServerEvent', 'ServerStats']
>>> out[0].model_path, out[0].tp_size, out[0].engine_version, out[2].kind, out[2].elapsed_s, out[2].ranks
('/m/q', 2, '0.8.5', 'load_weight_end', 40.5, 'TP0')
>>> out[3].running_req, out[3].queue_req, out[3].token_usage, out[3].ts.isoformat()
(12, 3, 0.81, '2026-05-25T20:04:30+00:00')
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, ClassVar

from ...lazyre import lazy_re
from ...parsers.base import Output, ParseContext
from ...records import CudaOom, HttpRequest, ServerConfig, ServerEvent, ServerStats
from ...timeutil import Inferred, YearInference, parse_iso
from ..pytext import EXCEPTION_LINE, TRACEBACK
from ..torch_oom import has_oom, parse_oom
from .config import parse_config, settings
from .lines import Parts, pid_of, split_line
from .messages import (
    ACCESS_RE,
    ARGS_NEW_RE,
    ARGS_OLD_RE,
    BANNER_VERSION_RE,
    ENGINE_INIT_RE,
    EVENTS,
    FOREIGN_RE,
    PREEMPT_RE,
    PREFIX_HIT_V0_RE,
    SPEC_V0_RE,
    SPEC_V1_MAL_RE,
    SPEC_V1_POS_RE,
    SPEC_V1_RATE_RE,
    UVICORN_KINDS,
    V0_STATS_RE,
    V1_HEAD_RE,
    V1_PART_RE,
    VERSION_RE,
)

ENGINE = "vllm"
PARSED, IGNORED, UNPARSED = 1, 2, 3
_RANK_TAG = lazy_re(r"(DP|PP|PCP|TP|DCP|EP)(\d+)")
_MESSAGE_CHARS = 2000
#: a death's exit code that says SIGKILL (the kernel's OOM killer, or kill -9)
SIGKILL = -9


def _ranks(proc: str | None) -> str | None:
    """``Worker_DP0_TP1`` → ``DP0 TP1``; ``VllmWorker rank=2`` → ``TP2``."""
    if not proc:
        return None
    if "rank=" in proc:
        return "TP" + proc.rsplit("rank=", 1)[1].strip()
    tags = _RANK_TAG.findall(proc)
    return " ".join(f"{a}{b}" for a, b in tags) or None


def _role(proc: str | None) -> str | None:
    if not proc:
        return None
    low = proc.lower()
    if "api" in low:
        return "api"
    if "engine" in low:
        return "engine"
    return "worker" if "worker" in low else None


#: the start-up phase a vLLM line begins (a CUDA OOM is told by the phase it came in)
_PHASE_AFTER = {
    "load_weight_begin": "weights",
    "memory_profile": "kv_pool",
    "kv_memory": "kv_pool",
    "kv_cache_allocated": "kv_pool",
    "cuda_graph_begin": "cuda_graph",
}
#: … and the phase a line ends: its own event keeps the phase it closes
_PHASE_NEXT = {"load_weight_end": "kv_pool"}
#: how far ahead of its API server's version and args lines an engine core's configuration
#: line may come and still be their echo (one start), not a run of its own: a restart's
#: version line comes seconds later, after the new process's imports
ENGINE_AHEAD = timedelta(seconds=5)


class VllmStream:
    """vLLM lines of one stream → records (see the module docstring). ``feed_line`` reads a
    line of vLLM's own file and says whether it was parsed; :meth:`feed` takes a message inside
    another capture that dated it."""

    engine: ClassVar[str] = ENGINE

    def __init__(
        self, ctx: ParseContext, *, host: str | None = None, unit: str | None = None, pid: int | None = None
    ) -> None:
        self.ctx = ctx
        self.host = host if host is not None else ctx.host
        self.unit = unit if unit is not None else ctx.unit
        self.pid = pid
        #: the lines come from one journal stream: its pid (the unit's main process, which
        #: journald credits with every child's stdout) is their process
        self._journal = False
        self._out: list[Output] = []
        self._years: YearInference | None = None
        self._ts: datetime | None = None
        self._ts_raw: str | None = None
        self._ts_inf: str | None = None
        self._version: str | None = None
        self._configured = False  # this run's configuration was recorded
        self._ready = False
        self._phase = "startup"
        self._held: ServerStats | None = None  # a statistics line waiting for its spec metrics
        #: an engine core's configuration that came before any API line of its run: held until
        #: the next line tells whether the API server's version and args lines follow
        self._ahead: list[Output] = []
        self._ahead_ts: datetime | None = None
        self._oom_seen = False
        #: the line of a bare traceback's header, until its exception line ends it
        self._tb_line: int | None = None

    # ------------------------------------------------------------------ entry points
    def feed(
        self,
        line_no: int,
        message: str,
        *,
        ts: datetime | None = None,
        ts_raw: str | None = None,
        ts_inferred: str | None = None,
        host: str | None = None,
        unit: str | None = None,
        pid: int | None = None,
    ) -> Iterator[Output]:
        """A message from another capture (journal, docker), dated by it."""
        self.host = host or self.host
        self.unit = unit or self.unit
        self.pid = pid or self.pid
        self._journal = self._journal or pid is not None  # (only a journal gives one)
        parts = split_line(message)
        if ts is not None:
            self._ts, self._ts_raw, self._ts_inf = ts, ts_raw, ts_inferred
        else:
            self._date(parts)
        self._handle(line_no, parts)
        out, self._out = self._out, []
        yield from out

    def feed_line(self, line_no: int, line: str) -> int:
        """A line of vLLM's own file (or of ``docker logs``/a CRI file of it): parsed, ignored
        (data that is not vLLM's: NCCL, tracebacks, tqdm) or unparsed."""
        if not line.strip():
            return IGNORED
        parts = split_line(line)
        if parts.host:
            self.host = self.host or parts.host
        self._date(parts)
        return self._handle(line_no, parts)

    def close(self) -> Iterator[Output]:
        self._release_ahead()
        self._flush()
        out, self._out = self._out, []
        yield from out

    # ------------------------------------------------------------------ time
    def _date(self, p: Parts) -> None:
        if p.wrapper_ts is not None:
            ts = parse_iso(p.wrapper_ts, self.ctx.zone)
            if ts is not None:
                self._ts, self._ts_raw, self._ts_inf = ts, p.wrapper_ts, None
                return
        if p.mmdd is not None and p.clock is not None:
            month, day = int(p.mmdd[:2]), int(p.mmdd[3:])
            if self._years is None:
                self._years = self.ctx.year_inference(month, day)
            year = self._years.year_for(month, day)
            hh, mm, ss = (int(x) for x in p.clock.split(":"))
            try:
                naive = datetime(year, month, day, hh, mm, ss)  # noqa: DTZ001 - localised next
            except ValueError:
                return
            self._ts = self.ctx.forward().localize(naive)
            self._ts_raw, self._ts_inf = f"{p.mmdd} {p.clock}", Inferred.YEAR
        elif self._ts is not None and self._ts_inf != Inferred.PREVIOUS:
            self._ts_inf = Inferred.PREVIOUS  # uvicorn and traceback lines print no time

    # ------------------------------------------------------------------ dispatch
    def _handle(self, line_no: int, p: Parts) -> int:
        msg = p.message
        if self._ahead and not self._joins_ahead(msg):
            self._release_ahead()
        if self._held is not None and not self._spec(msg):
            self._flush()
        if p.uvicorn is not None:
            return self._uvicorn(line_no, p)
        if p.level is None:
            return self._bare(line_no, p)
        if msg.startswith(("Avg prompt throughput", "Running:", "Engine 0", "Engines Aggregated")) or (
            msg[:1].isdigit() and " Engines Aggregated: " in msg[:24]
        ):
            return self._stats(line_no, p)
        if self._spec(msg):
            return self._spec_line(msg)
        for handler in (self._config, self._version_line, self._event, self._oom, self._preempt):
            status = handler(line_no, p)
            if status:
                return status
        return PARSED  # vLLM's envelope: its line, of a kind not stored as its own record

    def _bare(self, line_no: int, p: Parts) -> int:
        """A line without vLLM's envelope: a traceback's, a tqdm bar's, NCCL's, a print."""
        if has_oom(p.message) and not self._oom_seen:
            self._tb_line = None
            return self._oom(line_no, p) or IGNORED
        if p.message.startswith(TRACEBACK):
            self._tb_line = line_no
            return IGNORED
        if self._tb_line is not None and not self._ready and EXCEPTION_LINE.match(p.message):
            return self._exception(line_no, p)
        for kind, pattern in EVENTS:  # multiprocessing's own copy of a death, unprefixed
            if kind in ("initialization_failed", "scheduler_dead") and pattern.search(p.message):
                return self._event(line_no, p) or IGNORED
        if p.proc is not None or FOREIGN_RE.match(p.message) or not p.message.strip():
            return IGNORED
        return IGNORED if len(p.message) < 2000 else UNPARSED

    def _exception(self, line_no: int, p: Parts) -> int:
        """The exception line that ends a bare traceback before the server was ready: the
        process's own (``vllm serve``'s), as a start-up failure's cause (a missing model file, a
        wrong argument) — a request's, once it serves, is not the server's."""
        m = EXCEPTION_LINE.match(p.message)
        assert m is not None and self._tb_line is not None
        detail = {"header_line_no": self._tb_line, "who": "main process", "exception": m["type"]}
        self._tb_line = None
        return self._ev(line_no, p, "exception", detail=detail, phase=self._phase)

    # ------------------------------------------------------------------ records
    def _meta(self, p: Parts | None = None) -> tuple[Any, ...]:
        pid = (p.pid if p is not None else None) or self.pid
        if self._journal and self.pid is not None:
            pid = self.pid  # (the child's own pid goes in an event's detail: process_pid)
        return self._ts, self._ts_raw, self._ts_inf, self.host, self.unit, pid

    def _ev(
        self, line_no: int, p: Parts, kind: str, *, detail: dict[str, Any] | None = None, **cols: Any
    ) -> int:
        ts, raw, inf, host, unit, pid = self._meta(p)
        msg = p.message if len(p.message) <= _MESSAGE_CHARS else p.message[:_MESSAGE_CHARS] + "…"
        if p.pid is not None and p.pid != pid:
            detail = {**(detail or {}), "process_pid": p.pid}
        self._out.append(
            ServerEvent(
                line_no,
                ts,
                raw,
                inf,
                host,
                unit,
                pid,
                _ranks(p.proc),
                kind,
                _role(p.proc),
                cols.get("phase"),
                None,
                cols.get("usage"),
                cols.get("elapsed"),
                cols.get("tokens"),
                cols.get("exit_code"),
                msg,
                json.dumps(detail) if detail else None,
                engine=ENGINE,
            )
        )
        return PARSED

    def _version_line(self, line_no: int, p: Parts) -> int:
        m = VERSION_RE.match(p.message) or BANNER_VERSION_RE.search(p.message)
        if m is None:
            return 0
        self._version = m.groupdict().get("v1") or m.groupdict().get("v2") or m.groupdict().get("v")
        self._new_run()
        return PARSED

    def _new_run(self) -> None:
        self._configured = self._ready = self._oom_seen = False
        self._phase = "startup"

    def _config(self, line_no: int, p: Parts) -> int:
        m = ARGS_NEW_RE.match(p.message) or ARGS_OLD_RE.match(p.message)
        engine_line = None if m else ENGINE_INIT_RE.match(p.message)
        if m is None and engine_line is None:
            return 0
        if engine_line is not None:
            self._version = self._version or engine_line.group("version")
            if self._configured:
                return PARSED  # the engine core's echo of a configuration already read
        body = m.group("args") if m else engine_line.group("config")  # type: ignore[union-attr]
        parsed = parse_config(body)
        if parsed is None:
            self._out.append(
                self.ctx.issue(line_no, "vLLM configuration not understood", p.message, unparsed=False)
            )
            return PARSED
        if self._configured:
            self._new_run()  # a new args line without a version line: a restart
        if m is not None:
            self._ahead.clear()  # the engine core's line printed ahead of these args: their echo
        mark = len(self._out)
        args, form = parsed
        cols = settings(args)
        ts, raw, inf, host, unit, pid = self._meta(p)
        self._out.append(
            ServerConfig(
                line_no,
                ts,
                raw,
                inf,
                host,
                unit,
                pid,
                cols["model_path"],
                cols["served_model_name"],
                cols["tp_size"],
                cols["dp_size"],
                None,
                cols["mem_fraction_static"],
                cols["speculative_algorithm"],
                cols["speculative_draft_model_path"],
                None,
                None,
                cols["speculative_num_draft_tokens"],
                None,
                cols["max_running_requests"],
                cols["context_length"],
                cols["chunked_prefill_size"],
                cols["port"],
                body,
                cols["pp_size"],
                None,
                cols["quantization"],
                cols["kv_cache_dtype"],
                cols["disable_cuda_graph"],
                None,
                form,
                engine=ENGINE,
                engine_version=self._version,
            )
        )
        self._configured = True
        detail = {k: cols[k] for k in ("model_path", "speculative_algorithm", "tp_size")}
        status = self._ev(line_no, p, "server_args", phase="init", detail=detail)
        if engine_line is not None:
            # (not a new list: the file parser holds ``_out`` and drains it after each line)
            self._ahead, self._ahead_ts = self._out[mark:], self._ts
            del self._out[mark:]
        return status

    def _joins_ahead(self, msg: str) -> bool:
        """Whether a line is the API server's version or args line of the run whose engine
        core's configuration was held: one start, its lines interleaved (seed 161803, n0)."""
        if not (VERSION_RE.match(msg) or ARGS_NEW_RE.match(msg) or ARGS_OLD_RE.match(msg)):
            return False
        held, now = self._ahead_ts, self._ts
        return held is None or now is None or timedelta(0) <= now - held <= ENGINE_AHEAD

    def _release_ahead(self) -> None:
        """The held engine configuration is its run's own (no API args came right after it)."""
        self._out.extend(self._ahead)
        self._ahead = []

    def _event(self, line_no: int, p: Parts) -> int:
        for kind, pattern in EVENTS:
            m = pattern.search(p.message)
            if m is not None:
                return self._matched(line_no, p, kind, m.groupdict())
        return 0

    def _matched(self, line_no: int, p: Parts, kind: str, g: dict[str, Any]) -> int:
        code = _exit_code(g)
        if kind == "scheduler_dead" and code == SIGKILL:
            kind = "scheduler_killed"
        tokens = None
        if g.get("tokens") and len(g["tokens"]) <= 18:
            tokens = int(g["tokens"].replace(",", ""))
        elif g.get("blocks") and len(g["blocks"]) <= 16:
            tokens = int(g["blocks"]) * 16  # V0 counts 16-token blocks
        # after the weights come the memory profile and the KV cache's allocation
        # (``_initialize_kv_caches``): an OOM there is not the weights' (seed 24680, n37)
        self._phase = _PHASE_AFTER.get(kind, self._phase)
        phase = "runtime" if self._ready else self._phase
        self._phase = _PHASE_NEXT.get(kind, self._phase)
        detail: dict[str, Any] = {
            k: v for k, v in g.items() if v is not None and k in ("conc", "len", "compile", "addr", "model")
        }
        if kind.startswith("scheduler_") and pid_of(g.get("pid")) is not None:
            detail["subprocess_pid"] = pid_of(
                g.get("pid")
            )  # V0's "Worker … pid N died", "Process … (PID: N)"
        return self._ev(
            line_no,
            p,
            kind,
            detail=detail or None,
            elapsed=float(g["s"]) if g.get("s") else None,
            usage=float(g["gib"]) if g.get("gib") else None,
            tokens=tokens,
            exit_code=code,
            phase=phase,
        )

    def _oom(self, line_no: int, p: Parts) -> int:
        if not has_oom(p.message):
            return 0
        o = parse_oom(p.message)
        if o is None:
            return 0
        self._oom_seen = True
        phase = "runtime" if self._ready else self._phase
        ts, raw, inf, host, unit, pid = self._meta(p)
        self._out.append(
            CudaOom(
                line_no,
                ts,
                raw,
                host,
                unit,
                pid,
                _ranks(p.proc),
                o.gpu,
                o.tried_mib,
                o.total_mib,
                o.free_mib,
                o.allocated_mib,
                o.reserved_mib,
                phase,
                p.message[:_MESSAGE_CHARS],
                inf,
                o.private_pool_mib,
                o.process_mib,
                o.device,
                engine=ENGINE,
            )
        )
        return self._ev(line_no, p, "cuda_oom", phase=phase)

    def _preempt(self, line_no: int, p: Parts) -> int:
        m = PREEMPT_RE.match(p.message)
        if m is None:
            return 0
        detail = {"mode": m.group("mode").lower(), "total": int(m.group("total"))}
        return self._ev(line_no, p, "retract", detail=detail, phase="runtime")

    def _uvicorn(self, line_no: int, p: Parts) -> int:
        text = p.uvicorn or ""
        m = ACCESS_RE.match(text)
        if m is not None:
            ts, raw, inf, host, unit, pid = self._meta(p)
            self._out.append(
                HttpRequest(
                    line_no,
                    ts,
                    raw,
                    host,
                    unit,
                    pid,
                    m.group("client"),
                    m.group("method"),
                    m.group("path"),
                    m.group("http"),
                    int(m.group("status")),
                    inf,
                    engine=ENGINE,
                )
            )
            return PARSED
        for start, kind in UVICORN_KINDS.items():
            if text.startswith(start):
                if kind == "ready":
                    self._ready = True
                return self._ev(line_no, p, kind, phase="runtime" if kind == "ready" else None)
        return PARSED

    # ------------------------------------------------------------------ statistics
    def _stats(self, line_no: int, p: Parts) -> int:
        values, extra = _stats_values(p.message)
        if values is None:
            self._out.append(
                self.ctx.issue(line_no, "vLLM statistics line not understood", p.message, unparsed=False)
            )
            return PARSED
        ts, raw, inf, host, unit, pid = self._meta(p)
        self._held = ServerStats(
            line_no, ts, raw, host, unit, pid, _ranks(p.proc), "decode",
            values.get("running"), values.get("waiting"), None, values.get("kv"), values.get("gen"),
            values.get("prompt"), None, None, None, None, None, None,
            json.dumps(extra) if extra else None, inf, engine=ENGINE,
        )  # fmt: skip
        self._ready = True  # statistics are printed only while serving
        return PARSED

    @staticmethod
    def _spec(msg: str) -> bool:
        return msg.startswith(("SpecDecoding metrics: ", "Speculative metrics: "))

    def _spec_line(self, msg: str) -> int:
        accept_len = rate = None
        m0 = SPEC_V0_RE.match(msg)
        if m0 is not None:
            rate = _num(m0.group("rate"))
        else:
            mal, r = SPEC_V1_MAL_RE.search(msg), SPEC_V1_RATE_RE.search(msg)
            accept_len = _num(mal.group("mal")) if mal else None
            pct = _num(r.group("rate")) if r else None
            rate = round(pct / 100, 4) if pct is not None else None
        if self._held is not None:
            extra = json.loads(self._held.extra) if self._held.extra else {}
            pos = SPEC_V1_POS_RE.search(msg)
            if pos:
                extra["per_position_acceptance"] = [_num(x) for x in pos.group("pos").split(", ")]
            self._held = replace(
                self._held,
                accept_len=accept_len,
                accept_rate=rate,
                extra=json.dumps(extra) if extra else None,
            )
            self._flush()
        return PARSED

    def _flush(self) -> None:
        if self._held is not None:
            self._out.append(self._held)
            self._held = None


def _num(text: str | None) -> float | None:
    if text is None or text == "nan":
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _count(value: str | float | None) -> int | None:
    """A count of requests as printed, or None when it cannot be one (a column is 32 bits)."""
    if value is None:
        return None
    v = float(value)
    return int(v) if 0 <= v < 1 << 31 else None


def _code(text: str) -> int | None:
    """An exit code as printed (a process's status fits in 32 bits; anything else is not one)."""
    return int(text) if len(text.lstrip("-")) <= 10 and abs(int(text)) < 1 << 31 else None


def _exit_code(g: dict[str, Any]) -> int | None:
    code = g.get("code")
    if code not in (None, "None"):
        return _code(code)
    procs = g.get("procs")
    if procs:  # {'EngineCore_DP0': -9}: the first nonzero code
        codes = [c for c in (_code(x) for x in re.findall(r":\s*(-?\d+)", procs)) if c is not None]
        return next((c for c in codes if c), codes[0] if codes else None)
    return None


def _stats_values(msg: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """A statistics line's values: running, waiting, kv (0–1), gen, prompt; and the rest."""
    m = V0_STATS_RE.match(msg)
    if m is not None:
        v0_extra = {"swapped": _count(m.group("swapped")), "cpu_kv_usage": float(m.group("cpu_kv")) / 100}
        return {
            "running": _count(m.group("running")),
            "waiting": _count(m.group("pending")),
            "kv": round(float(m.group("gpu_kv")) / 100, 4),
            "gen": float(m.group("gen_tps")),
            "prompt": float(m.group("prompt_tps")),
        }, v0_extra
    if PREFIX_HIT_V0_RE.match(msg):
        return None, {}
    h = V1_HEAD_RE.match(msg)
    if h is None:
        return None, {}
    found: dict[str, float] = {}
    body = h.group("body").rstrip(".").replace(" reqs GPU KV", " reqs, GPU KV")
    for part in body.split(", "):
        pm = V1_PART_RE.match(part.strip())
        if pm is not None:
            found[pm.group("key")] = float(pm.group("val"))
    kv = next((v for k, v in found.items() if k.endswith("KV cache usage")), None)
    values = {
        "running": _count(found.get("Running")),
        "waiting": _count(found.get("Waiting")),
        "kv": round(kv / 100, 4) if kv is not None else None,
        "gen": found.get("Avg generation throughput"),
        "prompt": found.get("Avg prompt throughput"),
    }
    extra: dict[str, Any] = {}
    if "Prefix cache hit rate" in found:
        extra["prefix_cache_hit_rate"] = found["Prefix cache hit rate"] / 100
    if "Preemptions" in found:
        extra["preemptions"] = _count(found["Preemptions"])
    if h.group("engine"):
        extra["engine_index"] = int(h.group("engine"))
    if values["running"] is None:
        return None, {}
    return values, extra
