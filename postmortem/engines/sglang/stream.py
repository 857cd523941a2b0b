"""The message-level SGLang parser: one :class:`SglangStream` per log stream.

The file parser (:class:`postmortem.engines.sglang.SglangParser`) feeds it every physical
line; the journal parser feeds it the messages of an SGLang unit with the journal's ``ts``,
``unit`` and ``pid``. The stream keeps only the state a multi-line record needs (an open
traceback, a ``Rank N scheduler is dead`` line waiting for its ``Exit code:``), the per-rank
counters that tell a draft model's phases from the target's, and the last time seen.

Time rule: a ``ts`` given to :meth:`SglangStream.feed` (journal, exact UTC) wins, and the
SGLang prefix text is kept as ``ts_raw`` when no ``ts_raw`` is given. Otherwise the prefix time
is local wall-clock time in ``ctx.zone`` (``ts_inferred='zone'`` unless the operator gave the
zone); a ``docker logs -t`` or journald ISO stamp in front of the line is exact and wins over
it. Time-only prefixes (0.2.14–0.3.3) take their date from the previous dated line, else from
``--since``, else from the file's mtime (a first time of day later than the mtime's means the
day before), and roll over at midnight (``ts_inferred='date'``); ``MM-DD`` prefixes take the
year like syslog (``'year'``). Lines without a time of their own (traceback lines, old uvicorn
lines, progress output) take the previous line's (``'previous'``, ``ts_raw`` NULL).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import date, datetime, tzinfo
from functools import partial
from typing import Any, ClassVar

from ...parsers.base import Output, ParseContext, ParseIssue, excerpt
from ...records import CudaOom, HttpRequest, ServerConfig, ServerEvent, ServerStats
from ...timeutil import UTC, DayInference, ForwardLocalizer, Inferred, YearInference, parse_iso
from ..torch_oom import has_oom, parse_oom
from . import messages as M
from .args import (
    algorithm,
    as_bool,
    as_float,
    as_int,
    as_str,
    cuda_graph_max_bs,
    literal,
    parse_server_args,
)
from .batch import parse_batch
from .prefix import (
    GLUED_RE,
    LEGACY_GPU_RE,
    LEVEL_SOURCE_RE,
    PREFIX_RE,
    is_foreign,
    normalise_ranks,
    strip_wrappers,
)

PARSED, IGNORED, UNPARSED = 0, 1, 2
#: the engine column of every row this stream writes
ENGINE = "sglang"
_UNKNOWN = "?"  # speculative algorithm not known (no server_args line seen)
_FRAMES, _MESSAGE = 0, 1
_MAX_TB_LINES = 5000
_MAX_CONT_CHARS = 8000
_EVENT_MESSAGE_CHARS = 2000

#: function names in traceback frames → the phase they belong to (strongest first)
_PHASE_RANK = {"cuda_graph": 4, "kv_pool": 3, "weights": 2, "runtime": 1}
_CAPTURE_FUNCS = frozenset(
    {
        "capture",
        "capture_one_batch_size",
        "init_cuda_graphs",
        "init_device_graphs",
        "init_piecewise_cuda_graphs",
        "capture_one_shape",
        "warmup_and_capture",
    }
)
_KV_FUNCS = frozenset(
    {
        "init_memory_pool",
        "_create_buffers",
        "profile_max_num_token",
        "init_kv_cache",
        "configure_kv_cache",
        "_init_pools",
        "init_cache_with_memory_pool",
    }
)
_WEIGHT_FUNCS = frozenset(
    {
        "load_model",
        "load_weights",
        "get_model",
        "load_weights_and_postprocess",
        "_load_weights",
        "load_model_weights",
        "init_weights",
        "_initialize_model",
    }
)
#: ``terminate called after throwing an instance of 'c10::DistBackendError'``, then ``  what():  …``
_TERMINATE = "terminate called after throwing an instance of "
#: the ``who`` of such an abort's exception event
CPP_ABORT = "C++ runtime"

_RUNTIME_FUNCS = frozenset(
    {
        "forward_extend",
        "forward_decode",
        "forward_idle",
        "forward_mixed",
        "run_batch",
        "event_loop_normal",
        "event_loop_overlap",
        "event_loop_pp",
        "forward_batch_generation",
        "process_batch_result",
        "forward_batch_speculative_generation",
        "forward_thread_func",  # the overlap scheduler's forward thread (0.4.x)
        "forward_thread_func_",
    }
)


def frame_phase(path: str, func: str) -> str | None:
    """The startup/runtime phase a traceback frame shows.

    >>> frame_phase("/sglang/srt/model_executor/cuda_graph_runner.py", "__init__")
    'cuda_graph'
    >>> frame_phase("/sglang/srt/model_executor/model_runner.py", "init_memory_pool")
    'kv_pool'
    >>> frame_phase("/sglang/srt/model_executor/cuda_graph_runner.py", "replay") is None
    True
    """
    if (
        func in _CAPTURE_FUNCS
        or func.startswith("capture_")
        or ("cuda_graph_runner" in path and func == "__init__")
    ):
        return "cuda_graph"
    if func in _KV_FUNCS or ("memory_pool" in path and func == "__init__"):
        return "kv_pool"
    if func in _WEIGHT_FUNCS or "model_loader" in path or "weight_utils" in path:
        return "weights"
    if func in _RUNTIME_FUNCS:
        return "runtime"
    return None


def _message_phase(text: str) -> str | None:
    if M.GRAPH_FAILED.search(text):
        return "cuda_graph"
    if "Not enough memory" in text:
        return "kv_pool"
    if "Try to lower your batch size" in text or M.ALLOC_REQ_SLOTS in text:
        return "runtime"
    return None


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.lstrip("-").isdigit() else None


def _f(text: str | None) -> float | None:
    return float(text) if text is not None else None


Meta = tuple[datetime | None, str | None, str | None, str | None, str | None, int | None, str | None]


class _Traceback:
    __slots__ = (
        "chain",
        "cont",
        "cont_chars",
        "exc_line_no",
        "exc_text",
        "in_chain",
        "line_no",
        "lines",
        "meta",
        "phase",
        "state",
        "state_phase",
        "who",
    )

    def __init__(self, line_no: int, meta: Meta, who: str | None, state_phase: str | None) -> None:
        self.line_no = line_no
        self.meta = meta
        self.who = who
        self.state = _FRAMES
        self.state_phase = state_phase
        self.exc_text: str | None = None
        self.exc_line_no: int | None = None
        self.cont: list[str] = []
        self.cont_chars = 0
        self.chain: list[str] = []
        self.in_chain = False
        self.phase: str | None = None
        self.lines = 0


class _RankState:
    __slots__ = ("draft_loaded", "graph_target_done", "kv", "lw_begin", "pool")

    def __init__(self) -> None:
        self.lw_begin = 0
        self.draft_loaded = False
        self.kv: dict[str, int] = {}
        self.pool = 0
        self.graph_target_done = False


class SglangStream:
    """Parses SGLang messages one at a time; yields records and warnings, never counts lines.

    After each :meth:`feed`, :attr:`status` says what happened to that line (``PARSED``,
    ``IGNORED`` or ``UNPARSED``) for the caller's accounting. With ``strict=True`` (the file
    parser) an unusable line yields a counting :class:`ParseIssue`; otherwise (the journal,
    whose entry is stored anyway) foreign text is silently skipped and a malformed SGLang line
    yields a warning (``unparsed=False``). Feed every message of the stream, not only those
    :func:`looks_like_sglang` accepts: traceback lines carry no prefix
    (:attr:`expects_continuation` is True while one is open).

    >>> from postmortem.parsers.base import ParseContext
    >>> s = SglangStream(ParseContext(unit="sglang.service"))
    >>> [r.kind for r in s.feed(7, "[2026-01-15 10:00:00 TP0] Load weight begin. avail mem=77.43 GB")]
    ['load_weight_begin']
    >>> list(s.feed(8, "[2026-01-15 10:00:01] INFO:     127.0.0.1:4 - \\"GET /health HTTP/1.1\\" 503 "
    ...                "Service Unavailable"))[0].status
    503
    """

    PARSED, IGNORED, UNPARSED = PARSED, IGNORED, UNPARSED
    engine: ClassVar[str] = ENGINE

    def __init__(
        self,
        ctx: ParseContext,
        *,
        host: str | None = None,
        unit: str | None = None,
        pid: int | None = None,
        strict: bool = False,
    ) -> None:
        self.ctx = ctx
        self.host = host if host is not None else ctx.host
        self.unit = unit if unit is not None else ctx.unit
        self.pid = pid
        self.strict = strict
        self.status = IGNORED
        self._out: list[Output] = []
        zone: tzinfo = ctx.zone
        self._zone = zone
        self._utc = getattr(zone, "key", None) == "UTC" or zone is UTC
        self._forward = ForwardLocalizer(zone)
        self._zone_flag: str | None = Inferred.ZONE  # zone-less stamps, read in a zone given or not
        # current line
        self._ts: datetime | None = None
        self._ts_raw: str | None = None
        self._ts_inf: str | None = None
        self._host = self.host
        self._unit = self.unit
        self._pid = pid
        self._ranks: str | None = None
        self._reason = "not an SGLang log line"
        # time state
        self._prev_ts: datetime | None = None
        self._cache_text: str | None = None
        self._cache: tuple[datetime | None, str | None] = (None, None)
        self._last_date: date | None = None
        self._last_sod: int | None = None
        self._days: DayInference | None = None
        self._years: YearInference | None = None
        # startup state
        self._spec: str | None = _UNKNOWN
        self._rs: dict[str, _RankState] = {}
        self._phase: str | None = None
        self._ready = False
        self._fatal = False
        self._last_pid: int | None = None
        # multi-line state
        self._tb: _Traceback | None = None
        self._dead: tuple[int, Meta, str, int | None] | None = None
        # one warning per file
        self._warned: set[str] = set()

    # ------------------------------------------------------------------ public API
    @property
    def expects_continuation(self) -> bool:
        return self._tb is not None or self._dead is not None

    @property
    def accepts_fast_lines(self) -> bool:
        """True when a prefixed batch/access line would not change the stream's state (no
        pending death line, no traceback whose exception line is already in): the file parser
        may then store such lines with its vectorised path."""
        return self._dead is None and (self._tb is None or self._tb.state == _FRAMES)

    def note_time(self, ts: datetime | None, ts_raw: str | None) -> None:
        """Lines stored elsewhere (the vectorised path) still set "the previous line's time"."""
        if ts is not None:
            self._prev_ts = ts
            self._note_date(ts)
            self._days = None

    def accepts_fast_lines_of(self, pid: int | None) -> bool:
        """Like :attr:`accepts_fast_lines`, for journal lines of process ``pid``: a line of
        another process than the last one starts a new process (the Python path must see it)."""
        if pid is None:
            pid = self.pid
        return self.accepts_fast_lines and (pid is None or self._last_pid in (None, pid))

    def note_given(self, ts: datetime, pid: int | None) -> None:
        """Lines of process ``pid`` stored elsewhere with a given (journal) time, ``ts`` the
        last one's: the state they leave is what :meth:`feed` with ``ts=`` would leave."""
        if pid is None:
            pid = self.pid
        if pid is not None:
            self._last_pid = pid
        self._prev_ts = ts
        self._note_date(ts)

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
        """Parse one message; returns what it yields (records of earlier lines may come too)."""
        out = self._out = []
        self.status = self.feed_line(line_no, message, ts, ts_raw, ts_inferred, host, unit, pid)
        return iter(out)

    def close(self) -> Iterator[Output]:
        """End of the stream: flush an open traceback or pending scheduler-death line."""
        out = self._out = []
        self._flush_pending()
        return iter(out)

    # ------------------------------------------------------------------ line level
    def feed_line(
        self,
        line_no: int,
        line: str,
        ts: datetime | None,
        ts_raw: str | None,
        ts_inferred: str | None,
        host: str | None,
        unit: str | None,
        pid: int | None,
    ) -> int:
        """Like :meth:`feed`, appending outputs to ``self._out`` and returning the status."""
        self._g_ts = ts
        self._g_raw = ts_raw
        self._g_inf = ts_inferred
        self._host = host if host is not None else self.host
        self._unit = unit if unit is not None else self.unit
        if pid is None:
            pid = self.pid
        if pid is not None and pid != self._last_pid:
            if self._last_pid is not None:
                self._new_process()
            self._last_pid = pid
        self._pid = pid
        if not line or line.isspace():
            return IGNORED
        if "\n" in line:  # a journal entry with continuation lines
            best = IGNORED
            for sub in line.split("\n"):
                st = self.feed_line(line_no, sub, ts, ts_raw, ts_inferred, host, unit, pid)
                if st == PARSED:
                    best = PARSED
            return best
        if "\r" in line:
            best = UNPARSED
            reason = self._reason = "not an SGLang log line"
            for seg in line.split("\r"):
                if not seg or seg.isspace():
                    continue
                st = self._segment(line_no, seg)
                if st < best:
                    best = st
                elif st == UNPARSED:
                    reason = self._reason
            if best == UNPARSED:
                self._reason = reason
                return self._unusable(line_no, line)
            return best
        st = self._segment(line_no, line)
        if st == UNPARSED:
            return self._unusable(line_no, line)
        return st

    def _unusable(self, line_no: int, line: str) -> int:
        reason = self._reason
        if self.strict:
            self._out.append(ParseIssue(line_no, reason, excerpt(line), True))
            return UNPARSED
        if reason != "not an SGLang log line":
            self._out.append(ParseIssue(line_no, reason, excerpt(line), False))
        return UNPARSED

    def _segment(self, line_no: int, text: str) -> int:
        self._reason = "not an SGLang log line"
        given_ts = self._g_ts
        if text[0] != "[" or text.startswith("[rank"):
            w = strip_wrappers(text)
            text = w.rest
            if w.host is not None and self._host is None:
                self._host = w.host
            if w.pid is not None and self._pid is None:
                self._pid = w.pid
            if w.ts_text is not None and given_ts is None:
                exact = parse_iso(w.ts_text)
                if exact is not None:
                    self._g_ts, self._g_raw, self._g_inf = exact, w.ts_text, None
            if not text or text.isspace():
                return IGNORED
        m = PREFIX_RE.match(text) if text[0] == "[" else None
        if m is None and "[" in text:
            if text.startswith("[gpu"):
                lm = LEGACY_GPU_RE.match(text)
                if lm is not None:
                    self._time_previous()
                    return self._prefixed(line_no, text[lm.end() :], f"GPU{lm.group('gpu')}")
            g = GLUED_RE.search(text)
            if g is not None:
                text = text[g.start() :]
                m = PREFIX_RE.match(text)
        if m is not None:
            self._time_prefix(m.group("ts"), line_no)
            r = m.group("ranks")
            return self._prefixed(line_no, text[m.end() :], normalise_ranks(r) if r else None)
        self._time_previous()
        return self._unprefixed(line_no, text)

    # ------------------------------------------------------------------ time
    def _time_prefix(self, text: str, line_no: int) -> None:
        if self._g_ts is not None:
            self._ts = self._g_ts
            self._ts_raw = self._g_raw if self._g_raw is not None else text
            self._ts_inf = self._g_inf
            self._note_date(self._g_ts)
        else:
            if text == self._cache_text:
                self._ts, self._ts_inf = self._cache
            else:
                self._ts, self._ts_inf = self._parse_prefix_time(text)
                self._cache_text = text
                self._cache = (self._ts, self._ts_inf)
            if self._ts is None and len(text) >= 19 and text[4] == "-":
                # a full stamp that is no real date or time (month 13, hour 25): the line is
                # kept, without a time, and said so
                self._out.append(
                    ParseIssue(line_no, "stamp is not a real date and time; ts is NULL", excerpt(text), False)
                )
            self._ts_raw = text
        self._prev_ts = self._ts

    def _time_previous(self) -> None:
        if self._g_ts is not None:
            self._ts, self._ts_raw, self._ts_inf = self._g_ts, self._g_raw, self._g_inf
            self._prev_ts = self._g_ts
            return
        self._ts = self._prev_ts
        self._ts_raw = None
        self._ts_inf = Inferred.PREVIOUS if self._prev_ts is not None else None

    def _note_date(self, ts: datetime) -> None:
        local = ts.astimezone(self._zone)
        self._last_date = local.date()
        self._last_sod = local.hour * 3600 + local.minute * 60 + local.second

    def _localize(self, naive: datetime) -> datetime:
        return naive.replace(tzinfo=UTC) if self._utc else self._forward.localize(naive)

    def _parse_prefix_time(self, text: str) -> tuple[datetime | None, str | None]:
        n = len(text)
        try:
            if n >= 19 and text[4] == "-":
                micro = int(text[20:].ljust(6, "0")[:6]) if n > 20 else 0
                naive = datetime(  # noqa: DTZ001
                    int(text[0:4]),
                    int(text[5:7]),
                    int(text[8:10]),
                    int(text[11:13]),
                    int(text[14:16]),
                    int(text[17:19]),
                    micro,
                )
                self._last_date = naive.date()
                self._last_sod = naive.hour * 3600 + naive.minute * 60 + naive.second
                self._days = None
                return self._localize(naive), self._zone_flag
            if n >= 8 and text[2] == ":":
                h, mi, s = int(text[0:2]), int(text[3:5]), int(text[6:8])
                micro = int(text[9:].ljust(6, "0")[:6]) if n > 9 else 0
                sod = h * 3600 + mi * 60 + s
                days = self._days
                if days is None:
                    days = self._days = self._day_inference(sod)
                    if days is None:
                        return None, None
                day = days.date_for(sod)
                naive = datetime(day.year, day.month, day.day, h, mi, s, micro)  # noqa: DTZ001
                return self._localize(naive), Inferred.DATE
            if n >= 14 and text[2] == "-":
                month, dom = int(text[0:2]), int(text[3:5])
                if self._years is None:
                    self._years = self.ctx.year_inference(month, dom)
                year = self._years.year_for(month, dom)
                naive = datetime(  # noqa: DTZ001
                    year, month, dom, int(text[6:8]), int(text[9:11]), int(text[12:14])
                )
                return self._localize(naive), Inferred.YEAR
        except (ValueError, OverflowError):  # (Overflow: its UTC time is before year 1 or after 9999)
            return None, None
        return None, None

    def _day_inference(self, first_sod: int) -> DayInference | None:
        if self._last_date is not None:
            days = DayInference(self._last_date)
            if self._last_sod is not None:
                days.date_for(self._last_sod)
            return days
        if self.ctx.since is not None:
            return DayInference(self.ctx.since.astimezone(self._zone).date())
        if self.ctx.mtime is not None:
            end = self.ctx.mtime.astimezone(self._zone).replace(tzinfo=None)
            return DayInference.from_end(end, first_sod)
        return None

    def _meta(self) -> Meta:
        return (self._ts, self._ts_raw, self._ts_inf, self._host, self._unit, self._pid, self._ranks)

    # ------------------------------------------------------------------ prefixed / unprefixed
    def _prefixed(self, line_no: int, msg: str, ranks: str | None) -> int:
        tb = self._tb
        if tb is not None and (tb.state == _MESSAGE or " hit an exception" in msg):
            self._finish_tb()
        if self._dead is not None:
            if msg.startswith("Exit code: "):
                return self._finish_dead(msg)
            self._finish_dead(None)
        if msg[:1] in "DIWEC" and (msg[:1] != "D" or msg.startswith("DEBUG ")):
            lm = LEVEL_SOURCE_RE.match(msg)
            if lm is not None:
                msg = msg[lm.end() :]
        self._ranks = ranks
        st = self._message(line_no, msg)
        return IGNORED if st is None else st

    def _unprefixed(self, line_no: int, text: str) -> int:
        self._ranks = None
        if text.startswith(_TERMINATE):
            # a C++ exception nothing caught (PyTorch's NCCL watchdog): the process aborts;
            # its ``what():`` line, next, says why
            self._open_tb(line_no, CPP_ABORT)
            self._tb_exception(line_no, text[len(_TERMINATE) :].strip().strip("'"))
            return PARSED
        if self._tb is not None:
            return self._tb_line(line_no, text)
        if text.startswith(("frame #", "Exception raised from ")):
            return IGNORED  # a C++ backtrace (PyTorch's), with or before its exception
        if self._dead is not None:
            if text.startswith("Exit code: "):
                return self._finish_dead(text)
            self._finish_dead(None)
        c = text[0]
        if c == " " or c == "\t":
            return IGNORED  # an orphan frame or continuation
        if text.startswith(M.TRACEBACK):
            self._open_tb(line_no, None)
            return PARSED
        st = self._message(line_no, text)
        if st is not None:
            return st
        if text.startswith("Message: '") and text.endswith("'"):
            st = self._message(line_no, text[10:-1])  # a '--- Logging error ---' block
            return IGNORED if st is None else st
        if is_foreign(text):
            return IGNORED
        m = M.EXCEPTION_LINE.match(text)
        if m is not None:
            self._open_tb(line_no, None)
            tb = self._tb
            assert tb is not None
            tb.exc_text, tb.exc_line_no, tb.state = text, line_no, _MESSAGE
            return PARSED
        return UNPARSED

    # ------------------------------------------------------------------ messages
    def _message(self, line_no: int, msg: str) -> int | None:
        """One message through the table of patterns (:data:`_RULES`), first match that takes it."""
        for starts, needle, head, handler in _RULES_BY_FIRST.get(msg[:1], _RULES_ANYWHERE):
            if starts:
                if not msg.startswith(starts):
                    continue
            elif needle not in (msg[:head] if head else msg):
                continue
            st = handler(self, line_no, msg)
            if st is not None:
                return st
        if has_oom(msg):
            if self._tb is None and M.EXCEPTION_LINE.match(msg):
                # a traceback's last line whose frames were lost (a cut excerpt, a pasted
                # tail): the exception and its CUDA OOM, as for a whole traceback
                self._open_tb(line_no, None)
                self._tb_exception(line_no, msg)
                return PARSED
            self._cuda_oom(line_no, msg, self._meta(), self._phase_now())
            return PARSED
        return None

    def _plain(self, line_no: int, msg: str, *, kind: str, phase: str | None) -> int:
        """An event with no numbers: ``phase`` is a phase, or ``@now`` / ``@current``."""
        if phase == "@now":
            phase = self._phase_now()
        elif phase == "@current":
            phase = self._phase
        self._ev(line_no, kind, msg, phase=phase)
        return PARSED

    def _quoted(self, line_no: int, msg: str) -> int | None:
        """``Message: '…'`` (a ``--- Logging error ---`` block) holds the message."""
        return self._message(line_no, msg[10:-1]) if msg.endswith("'") else None

    def _rank_error(self, line_no: int, msg: str) -> int | None:
        return self._message(line_no, msg[14:])  # ``RuntimeError: Rank …``

    def _hicache(self, line_no: int, msg: str) -> int | None:
        if "for hierarchical KV cache" not in msg:
            return None
        m = M.HICACHE_ALLOC.match(msg)
        if m is None:
            return self._malformed("Allocating … host memory for hierarchical KV cache")
        self._ev(line_no, "hicache_host_alloc", msg, phase=self._phase_now(), usage=float(m["gb"]))
        return PARSED

    def _pool_end(self, line_no: int, msg: str) -> int:
        m = M.MEM_POOL_END.match(msg)
        if m is None:
            return self._malformed("Memory pool end")
        role = self._pool_role()
        self._phase = "kv_pool"
        self._ev(line_no, "memory_pool_end", msg, role=role, phase="kv_pool", avail=float(m["avail"]))
        return PARSED

    def _profiled(self, line_no: int, msg: str) -> int | None:
        m = M.PROFILED.match(msg)
        if m is None:
            return None
        detail = {"max_total_tokens": int(m["req"])}
        self._ev(line_no, "profiled_tokens", msg, phase="kv_pool", tokens=int(m["prof"]), detail=detail)
        return PARSED

    def _ready_line(self, line_no: int, msg: str) -> int:
        self._ready = True
        self._phase = "runtime"
        self._ev(line_no, "ready", msg, phase="warmup")
        return PARSED

    def _startup_timings(self, line_no: int, msg: str) -> int:
        m = M.STARTUP_TIMINGS.match(msg)
        if m is None:
            return self._malformed("Engine startup timings")
        t = M.timings(m["body"])
        e2e = t.get("scheduler_e2e", t.get("tokenizer_e2e"))
        elapsed = e2e if isinstance(e2e, float) else None
        self._ev(line_no, "startup_timings", msg, phase="warmup", elapsed=elapsed, detail=t)
        return PARSED

    def _exception_in(self, line_no: int, msg: str) -> int | None:
        """``Exception in <who>:`` (older releases), its traceback or exception inline."""
        m = M.EXCEPTION_OLD.match(msg)
        if m is None:
            return None
        rest = m["rest"].strip()
        self._open_tb(line_no, m["who"])
        if rest and not rest.startswith(M.TRACEBACK):
            self._tb_exception(line_no, rest)
        return PARSED

    def _hit_exception(self, line_no: int, msg: str) -> int | None:
        m = M.HIT_EXCEPTION.match(msg)
        if m is None:
            return None
        self._open_tb(line_no, m["who"])
        inline = m["tb"].strip()
        if inline and not inline.startswith(M.TRACEBACK):
            self._tb_exception(line_no, inline)
        return PARSED

    def _exit_code(self, line_no: int, msg: str) -> int | None:
        m = M.EXIT_CODE.match(msg)
        if m is None:
            return None
        code = int(m["code"])
        self._ev(line_no, self._death_kind(code), msg, phase=self._phase, exit_code=code)
        return PARSED

    def _init_dist(self, line_no: int, msg: str) -> int:
        if " begin" in msg[:30]:
            self._phase = "init"
            self._ev(line_no, "init_dist_begin", msg, phase="init")
            return PARSED
        m = M.INIT_DIST_END.match(msg)
        if m is None:
            return self._malformed("Init torch distributed")
        elapsed, usage = _f(m["elapsed"]), _f(m["usage"])
        self._ev(line_no, "init_dist_end", msg, phase="init", elapsed=elapsed, usage=usage)
        return PARSED

    def _init_failed(self, line_no: int, msg: str) -> int:
        self._fatal = True
        self._ev(line_no, "initialization_failed", msg, phase=self._phase)
        if "Traceback" in msg:
            self._open_tb(line_no, "warmup")
        return PARSED

    def _sigquit_launch(self, line_no: int, msg: str) -> int:
        self._fatal = self._fatal or not self._ready
        self._ev(line_no, "sigquit", msg, phase=self._phase_now(), detail={"form": "launch"})
        return PARSED

    def _sigquit_running(self, line_no: int, msg: str) -> int:
        m = M.SIGQUIT_RUNNING.match(msg)
        detail = {"form": "running", "signum": _int_or_none(m["signum"]) if m else None}
        self._ev(line_no, "sigquit", msg, phase=self._phase_now(), detail=detail)
        return PARSED

    def _rank_died(self, line_no: int, msg: str) -> int | None:
        """``Rank N scheduler died with exit code …`` (or the older ``… is dead``)."""
        m = M.RANK_DIED_NEW.match(msg)
        if m is not None:
            code = int(m["code"])
            self._fatal = True
            detail = {"rank": int(m["rank"])}
            self._ev(
                line_no, self._death_kind(code), msg, phase=self._phase_now(), exit_code=code, detail=detail
            )
            return PARSED
        m = M.RANK_DEAD_OLD.match(msg)
        if m is None:
            return None
        self._fatal = True
        self._dead = (line_no, self._meta(), msg, int(m["rank"]))  # its ``Exit code:`` follows
        return PARSED

    def _subprocess(self, line_no: int, msg: str) -> int | None:
        m = M.SUBPROCESS_CRASH.match(msg)
        if m is None:
            return None
        code, name = int(m["code"]), m["name"]
        kind = self._death_kind(code) if name.startswith("scheduler") else "subprocess_crashed"
        if not self._ready:
            self._fatal = True
        detail = {"subprocess": name, "subprocess_pid": int(m["pid"])}
        self._ev(line_no, kind, msg, phase=self._phase_now(), exit_code=code, detail=detail)
        return PARSED

    def _proc_terminated(self, line_no: int, msg: str) -> int | None:
        m = M.PROC_TERMINATED.match(msg)
        if m is None:
            return None
        code = int(m["code"])
        self._fatal = True
        detail = {"subprocess_pid": int(m["pid"])}
        self._ev(line_no, self._death_kind(code), msg, phase=self._phase_now(), exit_code=code, detail=detail)
        return PARSED

    def _graceful(self, line_no: int, msg: str) -> int:
        m = M.GRACEFUL_EXIT.match(msg)
        detail = {"remaining_requests": int(m["n"])} if m else None
        self._ev(line_no, "graceful_exit", msg, phase=self._phase_now(), detail=detail)
        return PARSED

    def _watchdog_old(self, line_no: int, msg: str) -> int:
        m = M.WATCHDOG_OLD.match(msg)
        elapsed = _f(m["t"]) if m else None
        detail = {"who": "Scheduler", "soft": False}
        self._ev(line_no, "watchdog", msg, phase=self._phase_now(), elapsed=elapsed, detail=detail)
        return PARSED

    def _watchdog_new(self, line_no: int, msg: str) -> int | None:
        m = M.WATCHDOG_NEW.match(msg)
        if m is None:
            return None
        detail = {"who": m["who"], "soft": m["soft"] == "True"}
        self._ev(line_no, "watchdog", msg, phase=self._phase_now(), elapsed=float(m["t"]), detail=detail)
        return PARSED

    def _kill_tree(self, line_no: int, msg: str) -> int:
        m = M.KILL_TREE.match(msg)
        detail = (
            {
                "parent_pid": _int_or_none(m["ppid"]),
                "include_parent": m["inc"] == "True",
                "pid": int(m["pid"]),
            }
            if m
            else None
        )
        self._ev(line_no, "kill_process_tree", msg, phase=self._phase_now(), detail=detail)
        return PARSED

    def _health(self, line_no: int, msg: str) -> int:
        m = M.HEALTH_FAILED.match(msg)
        elapsed = _f(m["s"]) if m else None
        self._ev(line_no, "health_check_failed", msg, phase=self._phase_now(), elapsed=elapsed)
        return PARSED

    def _phase_now(self) -> str | None:
        return "runtime" if self._ready else self._phase

    @staticmethod
    def _death_kind(code: int) -> str:
        return "scheduler_killed" if code == -9 else "scheduler_dead"

    def _malformed(self, what: str) -> int:
        self._reason = f"malformed {what} line"
        return UNPARSED

    def _warn_once(self, key: str, line_no: int, reason: str, text: str) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        self._out.append(ParseIssue(line_no, reason, excerpt(text), False))

    # ------------------------------------------------------------------ records
    def _ev(
        self,
        line_no: int,
        kind: str,
        msg: str,
        *,
        role: str | None = None,
        phase: str | None = None,
        avail: float | None = None,
        usage: float | None = None,
        elapsed: float | None = None,
        tokens: int | None = None,
        exit_code: int | None = None,
        detail: dict[str, Any] | None = None,
        meta: Meta | None = None,
    ) -> None:
        ts, raw, inf, host, unit, pid, ranks = meta or self._meta()
        if len(msg) > _EVENT_MESSAGE_CHARS:
            msg = msg[:_EVENT_MESSAGE_CHARS] + "…"
        self._out.append(
            ServerEvent(
                line_no,
                ts,
                raw,
                inf,
                host,
                unit,
                pid,
                ranks,
                kind,
                role,
                phase,
                avail,
                usage,
                elapsed,
                tokens,
                exit_code,
                msg,
                json.dumps(detail) if detail else None,
                engine=ENGINE,
            )
        )

    def _batch(self, line_no: int, msg: str) -> int:
        b = parse_batch(msg)
        if b is None:
            return self._malformed("batch")
        v = b.values
        extra = b.extra
        if b.unknown:
            self._warn_once(
                "keys",
                line_no,
                f"unknown {b.phase} batch keys: {', '.join(b.unknown)} (kept in extra; reported once per file)",
                msg,
            )
        if b.bad:
            self._warn_once(
                "values",
                line_no,
                f"unexpected batch values for: {', '.join(b.bad)} (kept in extra; reported once per file)",
                msg,
            )
        self._out.append(
            ServerStats(
                line_no,
                self._ts,
                self._ts_raw,
                self._host,
                self._unit,
                self._pid,
                self._ranks,
                b.phase,
                v[0],
                v[1],
                v[2],
                v[3],
                v[4],
                v[5],
                v[6],
                v[7],
                v[8],
                v[9],
                v[10],
                v[11],
                json.dumps(extra) if extra else None,
                self._ts_inf,
                b.iteration,
                v[12],
                v[13],
                v[14],
                engine=ENGINE,
            )
        )
        return PARSED

    def _uvicorn(self, line_no: int, msg: str) -> int | None:
        text = msg[msg.index(":") + 1 :].lstrip()
        if ' - "' in text:
            m = M.ACCESS.match(text)
            if m is None:
                return self._malformed("uvicorn access")
            status = int(m["status"])
            healthy = status == 200 and m["path"].split("?", 1)[0] in ("/health", "/health_generate")
            if healthy and not self._ready and self._phase == "warmup":
                self._phase = "runtime"  # serving, even without a ready line
            self._out.append(
                HttpRequest(
                    line_no,
                    self._ts,
                    self._ts_raw,
                    self._host,
                    self._unit,
                    self._pid,
                    m["client"],
                    m["method"],
                    m["path"],
                    m["http"],
                    status,
                    self._ts_inf,
                    engine=ENGINE,
                )
            )
            return PARSED
        if text.startswith(("Started server process", "Finished server process")):
            m = M.UVICORN_PROCESS.match(text)
            if m is None:
                return IGNORED
            server_pid = int(m["pid"])
            meta = self._meta()
            if meta[5] is None:
                meta = (*meta[:5], server_pid, meta[6])
            kind = "uvicorn_started" if m["what"] == "Started" else "uvicorn_finished"
            self._ev(
                line_no, kind, text, phase=self._phase_now(), detail={"server_pid": server_pid}, meta=meta
            )
            return PARSED
        if text.startswith("Uvicorn running on"):
            m = M.UVICORN_RUNNING.match(text)
            url = m["url"] if m else None
            port = None
            if url:
                tail = url.rstrip("/").rsplit(":", 1)
                if len(tail) == 2 and tail[1].isdigit():
                    port = int(tail[1])
            if not self._ready:
                self._phase = "warmup"
            self._ev(
                line_no, "uvicorn_running", text, phase=self._phase_now(), detail={"url": url, "port": port}
            )
            return PARSED
        if text.startswith("Exception in ASGI application"):
            self._open_tb(line_no, "ASGI")
            return PARSED
        if text.startswith("Shutting down"):
            self._ev(line_no, "uvicorn_shutdown", text, phase=self._phase_now())
            return PARSED
        return IGNORED

    # ------------------------------------------------------------------ startup
    def _rank(self) -> _RankState:
        key = self._ranks or ""
        st = self._rs.get(key)
        if st is None:
            if len(self._rs) >= 4096:  # bounded whatever the input
                self._rs.clear()
            st = self._rs[key] = _RankState()
        return st

    def _reset_start(self) -> None:
        self._rs.clear()
        self._phase = "init"
        self._ready = False
        self._fatal = False

    def _new_process(self) -> None:
        self._flush_pending()
        self._reset_start()
        self._spec = _UNKNOWN

    def _server_args(self, line_no: int, msg: str) -> int:
        if msg.startswith("server_args="):
            body = msg[12:]
        elif msg.startswith("server_args: "):
            body = msg[13:]
        else:
            return IGNORED
        parsed = parse_server_args(body)
        if parsed is None:
            return self._malformed("server_args")
        fields, form = parsed
        self._reset_start()

        def get(name: str) -> Any:
            return literal(fields.get(name))

        spec = algorithm(get("speculative_algorithm"))
        self._spec = spec
        tp = as_int(get("tp_size"))
        self._out.append(
            ServerConfig(
                line_no,
                self._ts,
                self._ts_raw,
                self._ts_inf,
                self._host,
                self._unit,
                self._pid,
                as_str(get("model_path")),
                as_str(get("served_model_name")),
                tp,
                as_int(get("dp_size")),
                as_int(get("ep_size")),
                as_float(get("mem_fraction_static")),
                spec,
                as_str(get("speculative_draft_model_path")),
                as_int(get("speculative_num_steps")),
                as_int(get("speculative_eagle_topk")),
                as_int(get("speculative_num_draft_tokens")),
                cuda_graph_max_bs(fields),
                as_int(get("max_running_requests")),
                as_int(get("context_length")),
                as_int(get("chunked_prefill_size")),
                as_int(get("port")),
                body,
                as_int(get("pp_size")),
                as_int(get("max_total_tokens")),
                as_str(get("quantization")),
                as_str(get("kv_cache_dtype")),
                as_bool(get("disable_cuda_graph")),
                as_float(get("watchdog_timeout")),
                form,
                engine=ENGINE,
            )
        )
        detail = {"model_path": as_str(get("model_path")), "speculative_algorithm": spec, "tp_size": tp}
        self._ev(
            line_no, "server_args", msg[:300] + ("…" if len(msg) > 300 else ""), phase="init", detail=detail
        )
        return PARSED

    def _load_weight(self, line_no: int, msg: str) -> int | None:
        if msg.startswith("Load weight begin"):
            m = M.LOAD_BEGIN.match(msg)
            if m is None:
                return self._malformed("Load weight begin")
            if self._ready or self._fatal:
                self._reset_start()
            st = self._rank()
            st.lw_begin += 1
            role = "draft" if st.lw_begin >= 2 and self._spec is not None else "target"
            self._phase = "weights"
            self._ev(line_no, "load_weight_begin", msg, role=role, phase="weights", avail=float(m["avail"]))
            return PARSED
        if msg.startswith("Load weight end"):
            m = M.LOAD_END.match(msg)
            if m is not None:
                st = self._rank()
                cls = m["type"].strip()
                draft = M.DRAFT_CLASS.search(cls) is not None or (st.lw_begin >= 2 and self._spec is not None)
                if draft:
                    st.draft_loaded = True
                self._phase = "kv_pool"
                detail: dict[str, Any] = {"type": cls}
                if m["dtype"]:
                    detail["dtype"] = m["dtype"]
                if m["quant"]:
                    detail["quant"] = m["quant"].rstrip(", ")[6:]
                self._ev(
                    line_no,
                    "load_weight_end",
                    msg,
                    role="draft" if draft else "target",
                    phase="weights",
                    avail=float(m["avail"]),
                    usage=_f(m["usage"]),
                    elapsed=_f(m["elapsed"]),
                    detail=detail,
                )
                return PARSED
            m = M.LOAD_END_DEFERRED.match(msg)
            if m is not None:
                st = self._rank()
                role = "draft" if st.draft_loaded and st.lw_begin >= 2 else "target"
                self._ev(
                    line_no,
                    "load_weight_end",
                    msg,
                    role=role,
                    phase="weights",
                    elapsed=float(m["elapsed"]),
                    detail={
                        "deferred": True,
                        "capture_overlap_s": _f(m["overlap"]),
                        "overlap_total_s": _f(m["total"]),
                    },
                )
                return PARSED
            return self._malformed("Load weight end")
        return None

    def _kv_alloc(self, line_no: int, msg: str) -> int | None:
        m = M.KV_ALLOC.match(msg)
        if m is None:
            pm = M.POST_CAPTURE_KV.match(msg)
            if pm is None:
                if msg.startswith("Post-capture KV sizing"):
                    return IGNORED
                if "KV Cache is allocated" in msg or "KV Cache VA upper bound" in msg:
                    return self._malformed("KV Cache")
                return None
            self._ev(
                line_no,
                "kv_cache_allocated",
                msg,
                role="target",
                phase="kv_pool",
                avail=float(pm["avail"]),
                usage=float(pm["kv"]),
                tokens=int(pm["tokens"]),
                detail={"post_capture": True, "dtype": pm["dtype"]},
            )
            return PARSED
        label = m["label"] or ""
        kv = _f(m["kv"])
        k, v = _f(m["k"]), _f(m["v"])
        usage = kv if kv is not None else round((k or 0.0) + (v or 0.0), 2)
        tokens = int(m["tokens"].replace(",", "")) if m["tokens"] else None
        detail: dict[str, Any] = {}
        if label:
            detail["label"] = label
        if m["dtype"]:
            detail["dtype"] = m["dtype"].strip()
        if k is not None:
            detail["k_gb"], detail["v_gb"] = k, v
        if m["what"] != "is allocated":
            self._ev(
                line_no, "kv_cache_va_bound", msg, phase="kv_pool", usage=usage, tokens=tokens, detail=detail
            )
            return PARSED
        st = self._rank()
        n = st.kv[label] = st.kv.get(label, 0) + 1
        role = "draft" if n >= 2 and (st.draft_loaded or self._spec not in (None, _UNKNOWN)) else "target"
        self._phase = "kv_pool"
        self._ev(
            line_no,
            "kv_cache_allocated",
            msg,
            role=role,
            phase="kv_pool",
            usage=usage,
            tokens=tokens,
            avail=_f(m["avail"]),
            detail=detail or None,
        )
        return PARSED

    def _pool_role(self) -> str:
        st = self._rank()
        st.pool += 1
        return (
            "draft" if st.pool >= 2 and (st.draft_loaded or self._spec not in (None, _UNKNOWN)) else "target"
        )

    def _graph(self, line_no: int, msg: str) -> int | None:
        if msg.startswith(("Capture target ", "Capture draft ")) and " graph " in msg[:48]:
            m = M.GRAPH_BEGIN_NEW.match(msg) if " begin." in msg[:60] else None
            if m is not None:
                self._phase = "cuda_graph"
                self._ev(
                    line_no,
                    "cuda_graph_begin",
                    msg,
                    role=m["role"],
                    phase="cuda_graph",
                    avail=_f(m["avail"]),
                    detail={"graph": m["graph"], "label": m["label"]},
                )
                return PARSED
            m = M.GRAPH_END_NEW.match(msg)
            if m is not None:
                if m["role"] == "target":
                    self._rank().graph_target_done = True
                self._ev(
                    line_no,
                    "cuda_graph_end",
                    msg,
                    role=m["role"],
                    phase="cuda_graph",
                    avail=_f(m["avail"]),
                    usage=_f(m["usage"]),
                    elapsed=float(m["elapsed"]),
                    detail={"graph": m["graph"], "label": m["label"]},
                )
                return PARSED
        m = M.GRAPH_BEGIN_OLD.match(msg)
        if m is not None:
            what = m["what"]
            role, graph = self._old_graph_role(what)
            self._phase = "cuda_graph"
            detail: dict[str, Any] = {"graph": graph}
            if m["step"]:
                detail["step"] = int(m["step"])
            self._ev(
                line_no,
                "cuda_graph_begin",
                msg,
                role=role,
                phase="cuda_graph",
                avail=_f(m["avail"]),
                detail=detail,
            )
            return PARSED
        m = M.GRAPH_END_OLD.match(msg)
        if m is not None:
            what = m["what"]
            role, graph = self._old_graph_role(what)
            if role == "target" and graph != "piecewise":
                self._rank().graph_target_done = True
            detail = {"graph": graph}
            if m["step"]:
                detail["step"] = int(m["step"])
            self._ev(
                line_no,
                "cuda_graph_end",
                msg,
                role=role,
                phase="cuda_graph",
                avail=_f(m["avail"] or m["avail2"]),
                usage=_f(m["usage"] or m["usage2"]),
                elapsed=float(m["elapsed"]),
                detail=detail,
            )
            return PARSED
        if M.GRAPH_FAILED.match(msg):
            self._fatal = True
            self._ev(line_no, "cuda_graph_failed", msg, phase="cuda_graph")
            if has_oom(msg):
                self._cuda_oom(line_no, msg, self._meta(), "cuda_graph")
            return PARSED
        if msg.startswith(("Capture cuda graph bs", "Capture cuda graph num tokens", "Capture piecewise")):
            return IGNORED
        if " begin" in msg[:60] or " end" in msg[:60]:
            return self._malformed("CUDA graph capture")
        return None

    def _old_graph_role(self, what: str) -> tuple[str, str]:
        low = what.lower()
        if low.startswith("draft extend"):
            return "draft", "extend"
        if low.startswith("draft"):
            return "draft", "decode"
        if low.startswith("piecewise"):
            return "target", "piecewise"
        st = self._rank()
        if st.draft_loaded and st.graph_target_done:
            return "draft", "decode"  # 0.4.3 printed the draft's capture with the target's words
        return "target", "decode"

    def _limits(self, line_no: int, msg: str) -> int:
        pairs = dict(M.LIMITS_PAIR.findall(msg))
        total = pairs.pop("max_total_num_tokens", None)
        if total is None or not total.isdigit():
            return self._malformed("max_total_num_tokens")
        avail = pairs.pop("available_gpu_mem", None) or pairs.pop("available_cpu_mem", None)
        detail: dict[str, Any] = {}
        for key, value in pairs.items():
            detail[key] = (
                None if value == "None" else (int(value) if value.lstrip("-").isdigit() else float(value))
            )
        if not self._ready:
            self._phase = "warmup"
        self._ev(
            line_no,
            "limits",
            msg,
            phase="warmup",
            tokens=int(total),
            avail=_f(avail),
            detail=detail or None,
        )
        return PARSED

    def _retract(self, line_no: int, msg: str) -> int:
        m = M.RETRACT.match(msg)
        detail: dict[str, Any] | None = None
        if m is not None:
            detail = {"retracted_reqs": int(m["n"])}
            if m["gained"]:
                detail["new_tokens_gained"] = int(m["gained"])
            if m["old"]:
                detail["new_token_ratio"] = [float(m["old"]), float(m["new"])]
        self._ev(line_no, "retract", msg, phase="runtime", detail=detail)
        return PARSED

    # ------------------------------------------------------------------ errors
    def _cuda_oom(self, line_no: int, text: str, meta: Meta, phase: str | None) -> None:
        o = parse_oom(text)
        ts, raw, inf, host, unit, pid, ranks = meta
        first = text.split("\n", 1)[0]
        if len(first) > _EVENT_MESSAGE_CHARS:
            first = first[:_EVENT_MESSAGE_CHARS] + "…"
        self._ev(
            line_no,
            "cuda_oom",
            first,
            phase=phase,
            meta=meta,
            detail={"tried_mib": o.tried_mib, "free_mib": o.free_mib, "gpu": o.gpu} if o else None,
        )
        if o is not None:
            self._out.append(
                CudaOom(
                    line_no,
                    ts,
                    raw,
                    host,
                    unit,
                    pid,
                    ranks,
                    o.gpu,
                    o.tried_mib,
                    o.total_mib,
                    o.free_mib,
                    o.allocated_mib,
                    o.reserved_mib,
                    phase,
                    first,
                    inf,
                    o.private_pool_mib,
                    o.process_mib,
                    o.device,
                    engine=ENGINE,
                )
            )

    def _open_tb(self, line_no: int, who: str | None) -> None:
        if self._tb is not None:
            self._finish_tb()
        self._tb = _Traceback(line_no, self._meta(), who, self._phase_now())

    def _tb_exception(self, line_no: int, text: str) -> None:
        tb = self._tb
        assert tb is not None
        if tb.exc_text is not None:
            tb.chain.append(tb.exc_text[:300])
            if len(tb.chain) > 8:
                del tb.chain[0]
        tb.exc_text = text
        tb.exc_line_no = line_no
        tb.state = _MESSAGE
        tb.in_chain = False
        tb.cont = []
        tb.cont_chars = 0

    def _tb_line(self, line_no: int, text: str) -> int:
        tb = self._tb
        assert tb is not None
        if tb.who == CPP_ABORT and tb.exc_text is not None and text.lstrip().startswith("what():"):
            tb.exc_text = f"{tb.exc_text}: {text.lstrip()[7:].strip()}"
            return PARSED
        tb.lines += 1
        if tb.lines > _MAX_TB_LINES:
            self._finish_tb()
            return self._unprefixed(line_no, text)
        c = text[0]
        if c == " " or c == "\t":
            if tb.state == _MESSAGE:
                self._tb_cont(text)
                return IGNORED
            if 'File "' in text[:12]:
                m = M.FRAME.match(text)
                if m is not None:
                    phase = frame_phase(m["path"], m["func"])
                    if phase is not None and _PHASE_RANK[phase] > _PHASE_RANK.get(tb.phase or "", 0):
                        tb.phase = phase
            return IGNORED
        if text.startswith(M.TRACEBACK):
            if tb.state == _MESSAGE and not tb.in_chain:
                self._finish_tb()
                self._open_tb(line_no, None)
                return PARSED
            tb.state = _FRAMES
            return IGNORED
        if text.startswith(M.CHAIN_MARKERS):
            tb.in_chain = True
            return IGNORED
        if tb.state == _FRAMES:
            self._tb_exception(line_no, text)
            return PARSED
        if text.startswith("Message: '") or (self._dead is None and text.startswith("Exit code: ")):
            self._finish_tb()
            return self._unprefixed(line_no, text)
        self._tb_cont(text)
        return IGNORED

    @staticmethod
    def _tb_cont_add(tb: _Traceback, text: str) -> None:
        if tb.cont_chars < _MAX_CONT_CHARS:
            tb.cont.append(text[: _MAX_CONT_CHARS - tb.cont_chars])
            tb.cont_chars += len(text)

    def _tb_cont(self, text: str) -> None:
        tb = self._tb
        assert tb is not None
        self._tb_cont_add(tb, text)

    def _finish_tb(self) -> None:
        tb = self._tb
        if tb is None:
            return
        self._tb = None
        text = tb.exc_text
        line_no = tb.exc_line_no or tb.line_no
        if text is None:
            text = "Traceback (incomplete: no exception line)"
        full = text + (" " + " ".join(tb.cont) if tb.cont else "")
        phase = tb.phase or _message_phase(full) or tb.state_phase
        m = M.EXCEPTION_LINE.match(text)
        detail: dict[str, Any] = {"header_line_no": tb.line_no}
        if tb.who:
            detail["who"] = tb.who
        if m is not None:
            detail["exception"] = m["type"]
        if tb.chain:
            detail["chain"] = tb.chain[-3:]
        meta = tb.meta
        if not self._ready:
            self._fatal = True
        self._ev(line_no, "exception", text, phase=phase, detail=detail, meta=meta)
        if has_oom(full):
            self._cuda_oom(line_no, full, meta, phase)
        if "Not enough memory. Please try to increase --mem-fraction-static" in full:
            nm = M.NOT_ENOUGH_MEMORY.search(full)
            mfs = nm["mfs"] if nm else None
            self._ev(
                line_no,
                "not_enough_memory",
                text,
                phase="kv_pool",
                meta=meta,
                detail={"mem_fraction_static": float(mfs)} if mfs else None,
            )
        if "out of memory. Try to lower your batch size" in full or M.ALLOC_REQ_SLOTS in full:
            self._ev(line_no, "kv_oom", text, phase="runtime", meta=meta)
        died = M.RANK_DIED_NEW.search(text)
        if died is not None:
            code = int(died["code"])
            self._ev(
                line_no,
                self._death_kind(code),
                text,
                phase=phase,
                exit_code=code,
                meta=meta,
                detail={"rank": int(died["rank"])},
            )

    def _finish_dead(self, exit_line: str | None) -> int:
        dead = self._dead
        if dead is None:
            return IGNORED
        self._dead = None
        line_no, meta, msg, rank = dead
        code = None
        if exit_line is not None:
            m = M.EXIT_CODE.match(exit_line)
            code = int(m["code"]) if m else None
        kind = self._death_kind(code) if code is not None else "scheduler_dead"
        self._ev(line_no, kind, msg, phase=self._phase, exit_code=code, detail={"rank": rank}, meta=meta)
        return PARSED

    def _flush_pending(self) -> None:
        if self._tb is not None:
            self._finish_tb()
        if self._dead is not None:
            self._finish_dead(None)


# ---------------------------------------------------------------------- the table of messages
_Handler = Callable[[SglangStream, int, str], "int | None"]
#: (prefixes, or else a needle, looked for in the first ``head`` characters or all (0)), handler
_Rule = tuple[tuple[str, ...], str, int, _Handler]


def _plain(kind: str, phase: str | None) -> _Handler:
    return partial(SglangStream._plain, kind=kind, phase=phase)


def _at(prefix: str | tuple[str, ...], handler: _Handler) -> _Rule:
    return (prefix if isinstance(prefix, tuple) else (prefix,), "", 0, handler)


def _in(needle: str, handler: _Handler, head: int = 0) -> _Rule:
    return ((), needle, head, handler)


S = SglangStream
#: every message SGLang writes that the stream reads, in the order they are tried; a handler
#: that returns None passes the message on. CUDA OOMs anywhere in a message come last.
_RULES: tuple[_Rule, ...] = (
    _at(("Decode batch", "Prefill batch"), S._batch),
    _at(M.UVICORN_LEVELS, S._uvicorn),
    _at("Load weight ", S._load_weight),
    _in("KV Cache ", S._kv_alloc, head=48),
    _at("Post-capture KV sizing", S._kv_alloc),
    _at("Capture ", S._graph),
    _at("Allocating ", S._hicache),
    _at("Memory pool end", S._pool_end),
    _at("Mamba Cache is allocated", _plain("mamba_cache_allocated", "kv_pool")),
    _at("Message: '", S._quoted),
    _at("max_total_num_tokens=", S._limits),
    _at("max_total_tokens=", S._profiled),
    _at("server_args", S._server_args),
    _at(M.READY, S._ready_line),
    _at("Testing retraction", S._retract),
    _at(M.UNBALANCED, _plain("memory_unbalanced", "@current")),
    _at("Engine startup timings", S._startup_timings),
    _at("Exception in ", S._exception_in),
    _at("Exit code: ", S._exit_code),
    _at(("Init torch distributed", "Init nccl"), S._init_dist),
    _at("Initialization failed", S._init_failed),
    _in(" hit an exception", S._hit_exception),
    # errors and deaths
    _at("KV cache pool is full", S._retract),
    _at(("Decode out of memory happened", "decode out of memory happened"), S._retract),
    _at("Received sigquit", S._sigquit_launch),
    _at("Rank ", S._rank_died),
    _at("RuntimeError: Rank ", S._rank_error),
    _at("SIGQUIT received", S._sigquit_running),
    _at("SIGTERM received", _plain("sigterm", "@now")),
    _at("Signal SIGTERM received", _plain("forced_exit", "@now")),
    _at("Subprocess ", S._subprocess),
    _at("Scheduler or DataParallelController", S._proc_terminated),
    _at("Gracefully exiting", S._graceful),
    _at("Watchdog timeout", S._watchdog_old),
    _at("kill_process_tree called", S._kill_tree),
    _at("token_to_kv_pool_allocator memory leak", _plain("kv_leak", "@now")),
    _at("Health check failed", S._health),
    _in(" watchdog timeout (", S._watchdog_new),
    _in("out of memory. Try to lower your batch size", _plain("kv_oom", "runtime")),
    _in(M.ALLOC_REQ_SLOTS, _plain("kv_oom", "runtime")),
    _in(
        "Not enough memory. Please try to increase --mem-fraction-static",
        _plain("not_enough_memory", "kv_pool"),
    ),
)
del S
#: the rules a message can match, by its first character (a needle rule can match any)
_RULES_ANYWHERE: tuple[_Rule, ...] = tuple(r for r in _RULES if not r[0])
_RULES_BY_FIRST: dict[str, tuple[_Rule, ...]] = {
    c: tuple(r for r in _RULES if not r[0] or any(p[:1] == c for p in r[0]))
    for c in {p[:1] for r in _RULES for p in r[0]}
}
