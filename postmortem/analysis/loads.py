"""``service_loads``: one row per server start, from the server's own lines, refined by the
journal when it is there.

Rows come from the named query ``service_loads`` (one time-ordered stream of server events,
``server_args`` configurations, health-endpoint requests, systemd lifecycle events and OOM
kills); :func:`derive_loads` is a pure function over them.

Rules (also in ``docs/schema_parts/servers.md``):

* **Streams.** Server rows are grouped by (host, unit), rows without a unit by source. The
  same line seen in two sources (the journal and the unit's own log file) counts once.
* **Start.** A ``server_args`` line starts a load; so does the first ``Init torch distributed
  begin``/``Load weight begin`` of a target model after the previous load finished (ready,
  failed or killed) or in another process (journal pid; a pid is one process, so at most one
  start). A log that begins in the middle of a startup
  starts a load at its first startup line. When the journal has the unit's ``Starting``
  (else ``Started``) event at most 15 minutes before the load's first server line, and after
  the previous load's first line, that is the start (``start_source`` ``systemd_starting`` /
  ``systemd_started``; a ``Started`` within 5 minutes of the same host's ``Starting`` of the
  unit is that start's, whatever other hosts or units started between); else the
  ``server_args`` line (``server_args``) or the first line (``first_line``). Loads that know
  their unit claim first; a unit-less server stream then claims an unclaimed start on its
  host, preferring one in its own source, then a unit named after its engine, then the latest.
* **Ready.** The ``The server is fired up and ready to roll!`` line (``ready_line``); without
  one, the first 200 answer on a health endpoint (``health_200``).
* **Health polls** = requests to ``/health``, ``/health_generate``, ``/v1/models`` (also
  ``/v1/models/<id>``) and ``/ping`` after the start and before ready, whatever their status.
  ``/get_model_info`` is not counted: a server's own warmup may call it.
* **Phases** (seconds). Weights: the longest ``Load weight end … elapsed=`` over the ranks,
  else ``Engine startup timings load_weight=`` (target), else last end − first begin; the
  same for the draft model. KV allocation: ``kv_cache_allocation=`` from the startup timings,
  else the target's first ``Memory pool end`` (or its last ``KV Cache is allocated``) minus the
  last ``Load weight end`` before it. CUDA graphs: per rank, the sum of ``elapsed`` over the
  role's capture-end lines (decode, verify, prefill, extend, piecewise), the largest rank;
  else the startup timings' ``cuda_graph`` entries; else last end − first begin (≤0.3.x print
  no end line: the target's capture then ends at the ``max_total_num_tokens=`` line).
* **Outcome.** ``ready``; ``killed`` when before ready a scheduler died with exit code −9, a
  SIGTERM or forced exit arrived, the unit was OOM-killed, stopped or its main process was
  killed, or an OOM kill names the unit; ``failed`` when before ready an exception, CUDA OOM,
  "Not enough memory", a scheduler death, a failed initialization or the unit's failure was
  logged; ``incomplete`` when the log ends (or the next start begins) with none of these.
  Only the load's host's systemd and OOM rows count, and the next start is the unit's next on
  that host: in a fleet store another host's rows of a unit of the same name change nothing.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..query import run_named_dicts
from ..store.db import Store
from .server_units import link_server_units

HEALTH_PATHS = ("/health", "/health_generate", "/v1/models", "/ping")
START_WINDOW = timedelta(minutes=15)

_BEGIN_KINDS = frozenset({"init_dist_begin", "load_weight_begin"})
_STARTUP_KINDS = frozenset(
    {
        "init_dist_begin",
        "init_dist_end",  # a log cut before its begin starts here
        "load_weight_begin",
        "load_weight_end",
        "kv_cache_allocated",
        "memory_pool_end",
        "cuda_graph_begin",
        "cuda_graph_end",
        "limits",
        "startup_timings",
        "uvicorn_running",
        "ready",
    }
)
_FAIL_KINDS = frozenset(
    {
        "exception",
        "cuda_oom",
        "not_enough_memory",
        "kv_oom",
        "cuda_graph_failed",
        "scheduler_dead",
        "subprocess_crashed",
        "initialization_failed",
        "sigquit",
        "watchdog",
    }
)
#: the server's own errors: a SIGKILL after one is the server tearing its process tree down
_OWN_FAILURE_KINDS = frozenset({"cuda_oom", "not_enough_memory", "kv_oom", "cuda_graph_failed", "watchdog"})
_KILL_KINDS = frozenset({"scheduler_killed", "forced_exit"})
#: asked to stop (systemctl stop, kill -TERM): not a failure of the load, and not a kill
_STOP_KINDS = frozenset({"sigterm"})
_GRAPH_TIMING_KEYS = {
    "target": ("prefill", "decode", "target_verify"),
    "draft": ("draft_prefill", "draft_decode", "draft_extend"),
}


@dataclass
class _Phase:
    begin_min: datetime | None = None
    end_max: datetime | None = None
    elapsed_max: float | None = None
    deferred_s: float | None = None


@dataclass
class _Load:
    host: str | None
    unit: str | None
    pid: int | None
    source_id: int | None
    first_ts: datetime | None
    first_line_no: int | None
    start_ts: datetime | None
    start_source: str
    start_line_no: int | None
    start_source_id: int | None = None  # the source start_line_no is in (None: source_id)
    model_path: str | None = None
    speculative_algorithm: str | None = None
    tp_size: int | None = None
    port: int | None = None
    engine: str | None = None
    has_config: bool = False
    ready_ts: datetime | None = None
    ready_line_no: int | None = None
    ready_source_id: int | None = None  # the source ready_line_no is in
    ready_source: str | None = None
    h200: tuple[datetime | None, int | None, int | None] | None = None  # ts, line, source
    polls: int = 0
    polls_at_200: int | None = None
    failed: bool = False
    killed: bool = False
    stopped: bool = False
    #: the server reported an error of its own (a CUDA OOM, too little memory, its watchdog)
    own_failure: bool = False
    #: an OOM killer (kernel, systemd-oomd, earlyoom) or a signal from outside (a rank dead of -9)
    killed_outside: bool = False
    weights: dict[str, _Phase] = field(default_factory=dict)
    lw_ends: list[datetime] = field(default_factory=list)
    kv_pool_end: datetime | None = None
    kv_alloc_last: datetime | None = None
    graph_sum: dict[tuple[str, str], float] = field(default_factory=dict)
    graph_span: dict[str, _Phase] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    limits_ts: datetime | None = None
    server_pid: int | None = None
    last_ts: datetime | None = None

    @property
    def done(self) -> bool:
        return self.ready_ts is not None or self.failed or self.killed or self.stopped

    @property
    def outcome(self) -> str:
        if self.ready_ts is not None or self.h200 is not None:
            return "ready"
        if self.killed and (self.killed_outside or not self.own_failure):
            # a SIGKILL after the server's own failure is its own teardown (a server kills its
            # process tree when a child fails): the load failed, nothing killed it
            return "killed"
        if self.failed:
            return "failed"
        if self.stopped:
            return "stopped"
        return "incomplete"


def _detail(row: dict[str, Any]) -> dict[str, Any]:
    text = row.get("detail")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _secs(a: datetime | None, b: datetime | None) -> float | None:
    if a is None or b is None:
        return None
    return max((b - a).total_seconds(), 0.0)


def _group_key(row: dict[str, Any], unit_hosts: dict[str, set[str]]) -> tuple[Any, ...]:
    unit = row["unit"]
    host = row["host"]
    if unit is not None:
        if host is None and len(unit_hosts.get(unit, ())) == 1:
            host = next(iter(unit_hosts[unit]))
        return ("unit", host, unit)
    return ("source", host, row["source_id"])


class _Builder:
    """Segments one server's stream (one group) into loads."""

    def __init__(self) -> None:
        self.loads: list[_Load] = []
        self.cur: _Load | None = None
        self.seen: dict[tuple[Any, ...], int] = {}

    def _new(self, row: dict[str, Any], source: str) -> _Load:
        load = _Load(
            host=row["host"],
            unit=row["unit"],
            pid=row["pid"],
            source_id=row["source_id"],
            first_ts=row["ts"],
            first_line_no=row["line_no"],
            start_ts=row["ts"],
            start_source=source,
            start_line_no=row["line_no"],
            engine=row.get("engine"),
        )
        self.loads.append(load)
        self.cur = load
        return load

    def _duplicate(self, row: dict[str, Any]) -> bool:
        ts = row["ts"]
        key = (
            row["origin"],
            row["kind"],
            row["role"],
            row["ranks"],
            ts.replace(microsecond=0) if ts is not None else None,
            row["path"],
            row["status"],
            row["exit_code"],
        )
        first: int = self.seen.setdefault(key, row["source_id"])
        return bool(first != row["source_id"])

    def add(self, row: dict[str, Any]) -> None:
        if self._duplicate(row):
            return
        origin = row["origin"]
        kind = row["kind"]
        cur = self.cur
        pid = row["pid"]
        other_process = cur is not None and pid is not None and cur.pid is not None and pid != cur.pid
        if origin == "config":
            load = self._new(row, "server_args")
            load.has_config = True
            load.model_path = row["model_path"]
            load.speculative_algorithm = row["speculative_algorithm"]
            load.tp_size = row["tp_size"]
            load.port = row["port"]
            return
        if origin == "http":
            if cur is None or cur.ready_ts is not None or other_process:
                return
            cur.polls += 1
            if row["status"] == 200 and cur.h200 is None:
                cur.h200 = (row["ts"], row["line_no"], row["source_id"])
                cur.polls_at_200 = cur.polls - 1
            return
        if kind in _STARTUP_KINDS:
            # (a vLLM worker's own begin is its server's load, begun by the API process's lines)
            begins = kind in _BEGIN_KINDS and row["role"] in (None, "target")
            if cur is None or ((cur.done or other_process) and begins):
                cur = self._new(row, "first_line")
            elif cur.done and cur.ready_ts is not None:
                return  # a stray startup line after ready (another rank, a reload)
        if cur is None:
            return
        if cur.pid is None and pid is not None:
            cur.pid = pid
        if cur.engine is None:
            cur.engine = row.get("engine")
        cur.last_ts = row["ts"] or cur.last_ts
        if cur.ready_ts is not None:
            return
        self._apply(cur, row)

    def _apply(self, cur: _Load, row: dict[str, Any]) -> None:
        kind = row["kind"]
        if kind in _KILL_KINDS:
            cur.killed = True
        elif kind in _STOP_KINDS:
            cur.stopped = True
        elif kind in _FAIL_KINDS:
            _failed(cur, row)
        else:
            handler = _PHASES.get(kind)
            if handler is not None:
                handler(cur, row, row["ts"], _model_role(row))


def _model_role(row: dict[str, Any]) -> str:
    """Which model a startup line is of: the draft's (a speculative server's ``draft`` role), else
    the target's — vLLM's ``role`` is its process (``api``, ``engine``, ``worker``: vLLM 0.10+
    prints the weights and the graphs from the workers), not a model; its phases were read as
    no model's and the loads table showed none."""
    return "draft" if row["role"] == "draft" else "target"


def _failed(cur: _Load, row: dict[str, Any]) -> None:
    cur.failed = True
    # an error of its own (a CUDA OOM, too little memory for the pool, the watchdog); a rank
    # that died of a signal (exit code -9: an OOM killer) is a kill, not one
    if row.get("exit_code") is not None and int(row["exit_code"]) < 0:
        cur.killed_outside = True
    cur.own_failure = cur.own_failure or row["kind"] in _OWN_FAILURE_KINDS


def _ready(cur: _Load, row: dict[str, Any], ts: datetime | None, role: str) -> None:
    cur.ready_ts = ts
    cur.ready_line_no = row["line_no"]
    cur.ready_source_id = row["source_id"]
    cur.ready_source = "ready_line"


def _earliest(ph: _Phase, ts: datetime | None) -> None:
    if ts is not None and (ph.begin_min is None or ts < ph.begin_min):
        ph.begin_min = ts


def _latest(ph: _Phase, ts: datetime | None) -> None:
    if ts is not None and (ph.end_max is None or ts > ph.end_max):
        ph.end_max = ts


def _weights_begin(cur: _Load, row: dict[str, Any], ts: datetime | None, role: str) -> None:
    _earliest(cur.weights.setdefault(role, _Phase()), ts)


def _weights_end(cur: _Load, row: dict[str, Any], ts: datetime | None, role: str) -> None:
    ph = cur.weights.setdefault(role, _Phase())
    detail = _detail(row)
    if detail.get("deferred"):
        total = detail.get("overlap_total_s")
        ph.deferred_s = float(total) if isinstance(total, (int, float)) else row["elapsed_s"]
        return
    if ts is not None:
        _latest(ph, ts)
        cur.lw_ends.append(ts)
    el = row["elapsed_s"]
    if el is not None and (ph.elapsed_max is None or el > ph.elapsed_max):
        ph.elapsed_max = el


def _pool_end(cur: _Load, row: dict[str, Any], ts: datetime | None, role: str) -> None:
    if role == "target" and cur.kv_pool_end is None:
        cur.kv_pool_end = ts


def _kv_allocated(cur: _Load, row: dict[str, Any], ts: datetime | None, role: str) -> None:
    if role == "target" and cur.kv_pool_end is None and not cur.graph_span:
        cur.kv_alloc_last = ts


def _graphs_begin(cur: _Load, row: dict[str, Any], ts: datetime | None, role: str) -> None:
    _earliest(cur.graph_span.setdefault(role, _Phase()), ts)


def _graphs_end(cur: _Load, row: dict[str, Any], ts: datetime | None, role: str) -> None:
    _latest(cur.graph_span.setdefault(role, _Phase()), ts)
    if row["elapsed_s"] is not None:
        key = (role, row["ranks"] or "")
        cur.graph_sum[key] = cur.graph_sum.get(key, 0.0) + float(row["elapsed_s"])


def _timings(cur: _Load, row: dict[str, Any], ts: datetime | None, role: str) -> None:
    cur.timings = _detail(row)


def _limits(cur: _Load, row: dict[str, Any], ts: datetime | None, role: str) -> None:
    if cur.limits_ts is None:
        cur.limits_ts = ts


def _uvicorn(cur: _Load, row: dict[str, Any], ts: datetime | None, role: str) -> None:
    server_pid = _detail(row).get("server_pid")
    if isinstance(server_pid, int):
        cur.server_pid = server_pid


#: what each startup line of a server tells its load: kind → handler(load, row, ts, role)
_PHASES: dict[str, Callable[[_Load, dict[str, Any], datetime | None, str], None]] = {
    "ready": _ready,
    "load_weight_begin": _weights_begin,
    "load_weight_end": _weights_end,
    "memory_pool_end": _pool_end,
    "kv_cache_allocated": _kv_allocated,
    "cuda_graph_begin": _graphs_begin,
    "cuda_graph_end": _graphs_end,
    "startup_timings": _timings,
    "limits": _limits,
    "uvicorn_started": _uvicorn,
}


def _weight_s(load: _Load, role: str) -> float | None:
    ph = load.weights.get(role)
    if ph is not None and ph.elapsed_max is not None:
        return ph.elapsed_max
    if role == "target":
        t = load.timings.get("load_weight")
        if isinstance(t, (int, float)):
            return float(t)
    if ph is None:
        return None
    if ph.begin_min is not None and ph.end_max is not None:
        return _secs(ph.begin_min, ph.end_max)
    return ph.deferred_s


def _kv_s(load: _Load) -> float | None:
    t = load.timings.get("kv_cache_allocation")
    if isinstance(t, (int, float)):
        return float(t)
    end = load.kv_pool_end or load.kv_alloc_last
    if end is None:
        return None
    before = [ts for ts in load.lw_ends if ts <= end]
    return _secs(max(before), end) if before else None


def _graph_s(load: _Load, role: str) -> float | None:
    sums = [v for (r, _), v in load.graph_sum.items() if r == role]
    if sums:
        return round(max(sums), 3)
    graphs = load.timings.get("cuda_graph")
    if isinstance(graphs, dict):
        vals = [float(graphs[k]) for k in _GRAPH_TIMING_KEYS[role] if isinstance(graphs.get(k), (int, float))]
        if vals and sum(vals) > 0:
            return round(sum(vals), 3)
    span = load.graph_span.get(role)
    if span is not None:
        end = span.end_max
        if end is None and role == "target" and load.limits_ts is not None:
            end = load.limits_ts  # ≤0.3.x print no end line; the limits line follows the capture
        if end is not None and span.begin_min is not None and end >= span.begin_min:
            return _secs(span.begin_min, end)
    return None


@dataclass
class _UnitStart:
    host: str | None
    unit: str
    ts: datetime
    action: str
    source_id: int
    line_no: int
    claimed: bool = False


def _refine_with_units(
    loads: list[_Load], unit_rows: list[dict[str, Any]], oom_rows: list[dict[str, Any]]
) -> None:
    """Each load takes its unit's start (systemd's Starting/Started before its first line) and
    what the unit and the OOM killers say of how it ended before it was ready."""
    _claim_starts(loads, _unit_starts(unit_rows))
    for load in loads:
        if load.unit is None or load.start_ts is None or load.outcome == "ready":
            continue
        nxt = _next_start(loads, load)
        _unit_failures(load, unit_rows, nxt)
        for r in oom_rows:
            ts = r["ts"]
            if (
                r["unit"] == load.unit
                and _same_host(r["host"], load.host)
                and ts is not None
                and ts >= load.start_ts
                and (nxt is None or ts < nxt)
            ):
                load.killed = load.killed_outside = True


def _unit_starts(unit_rows: list[dict[str, Any]]) -> list[_UnitStart]:
    """Each start of a unit (a Started right after its Starting belongs to the same start)."""
    starts: list[_UnitStart] = []
    # the last start of each (host, unit): another host's (a fleet store) or unit's start
    # between a Starting and its Started does not part them
    last: dict[tuple[str | None, str], _UnitStart] = {}
    for r in unit_rows:
        if r["kind"] not in ("starting", "started") or r["ts"] is None or not r["unit"]:
            continue
        prev = last.get((r["host"], r["unit"]))
        if (
            r["kind"] == "started"
            and prev is not None
            and prev.action == "starting"
            and timedelta(0) <= r["ts"] - prev.ts <= timedelta(minutes=5)
        ):
            continue
        start = _UnitStart(r["host"], r["unit"], r["ts"], r["kind"], r["source_id"], r["line_no"])
        starts.append(start)
        last[(start.host, start.unit)] = start
    return starts


def _floors(loads: list[_Load]) -> dict[int, datetime]:
    """The previous load of the same stream bounds how early a start may be."""
    floors: dict[int, datetime] = {}
    streams: dict[Any, list[_Load]] = {}
    for ld in loads:
        if ld.first_ts is not None:
            streams.setdefault((ld.host, ld.unit, ld.source_id if ld.unit is None else None), []).append(ld)
    for group in streams.values():
        group.sort(key=_first_key)
        for before, after in itertools.pairwise(group):
            assert before.first_ts is not None
            floors[id(after)] = before.first_ts
    return floors


def _claim_starts(loads: list[_Load], starts: list[_UnitStart]) -> None:
    """A load claims its own unit's start; a load no unit is named for claims none (the unit a
    server's lines belong to is linked before, by evidence: analysis/server_units.py — a start
    of some unit minutes before is none: a login session, a oneshot, another server)."""
    floors = _floors(loads)
    for load in sorted(
        (ld for ld in loads if ld.first_ts is not None and ld.unit is not None), key=_first_key
    ):
        assert load.first_ts is not None
        floor = floors.get(id(load))
        cands = [
            s
            for s in starts
            if not s.claimed
            and s.ts <= load.first_ts
            and load.first_ts - s.ts <= START_WINDOW
            and (floor is None or s.ts > floor)
            and (load.host is None or s.host is None or s.host == load.host)
            and s.unit == load.unit
        ]
        if not cands:
            continue
        best = max(cands, key=lambda s: (s.source_id == load.source_id, s.ts))
        best.claimed = True
        load.host = load.host or best.host
        load.start_ts = best.ts
        load.start_source = f"systemd_{best.action}"
        load.start_line_no = best.line_no
        load.start_source_id = best.source_id


def _unit_failures(load: _Load, unit_rows: list[dict[str, Any]], nxt: datetime | None) -> None:
    """What systemd says of the load's unit between its start and the next: killed (an OOM
    killer's SIGKILL, a core dump), stopped, failed."""
    assert load.start_ts is not None
    for r in unit_rows:
        if r["unit"] != load.unit or r["ts"] is None or r["ts"] < load.start_ts:
            continue
        if nxt is not None and r["ts"] >= nxt:
            break
        if not _same_host(r["host"], load.host):
            continue
        kind = r["kind"]
        killed = kind == "oom_killed" or (kind == "main_exited" and (r["code"] or "") in ("killed", "dumped"))
        if killed:
            load.killed = True
            load.killed_outside = load.killed_outside or kind == "oom_killed"
        elif kind in ("stopping", "stopped") and not load.failed:
            load.stopped = True
        elif kind in ("failed", "main_exited"):
            load.failed = True


def _first_key(load: _Load) -> float:
    return load.first_ts.timestamp() if load.first_ts is not None else 0.0


def _start_key(load: _Load) -> tuple[bool, float, int, int]:
    ts = load.start_ts.timestamp() if load.start_ts is not None else 0.0
    return (load.start_ts is None, ts, load.source_id or 0, load.first_line_no or 0)


def _same_host(a: str | None, b: str | None) -> bool:
    """Rows of two hosts are apart; a row no host is known for may be either's."""
    return a is None or b is None or a == b


def _next_start(loads: list[_Load], load: _Load) -> datetime | None:
    """The next start of the load's unit on its host (a fleet's hosts start the same unit
    independently: another host's start does not end this load)."""
    later = [
        ld.start_ts
        for ld in loads
        if ld is not load
        and ld.unit == load.unit
        and _same_host(ld.host, load.host)
        and ld.start_ts is not None
        and load.start_ts is not None
        and ld.start_ts > load.start_ts
    ]
    return min(later) if later else None


def derive_loads(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``service_loads`` rows (dicts, in start order) for the query's ``rows``."""
    unit_rows = [r for r in rows if r["origin"] == "unit"]
    oom_rows = [r for r in rows if r["origin"] == "oom"]
    sg_rows = [r for r in rows if r["origin"] in ("server", "config", "http")]
    unit_hosts: dict[str, set[str]] = {}
    for r in rows:
        if r["unit"] and r["host"]:
            unit_hosts.setdefault(r["unit"], set()).add(r["host"])
    builders: dict[tuple[Any, ...], _Builder] = {}
    for r in sg_rows:
        key = _group_key(r, unit_hosts)
        b = builders.get(key)
        if b is None:
            b = builders[key] = _Builder()
        b.add(r)
    loads = [ld for b in builders.values() for ld in b.loads]
    for ld in loads:
        if ld.host is None and ld.unit is not None and len(unit_hosts.get(ld.unit, ())) == 1:
            ld.host = next(iter(unit_hosts[ld.unit]))
    _refine_with_units(loads, unit_rows, oom_rows)
    out = []
    loads.sort(key=_start_key)
    for i, ld in enumerate(loads, start=1):
        ready_ts, ready_source, ready_line, polls = ld.ready_ts, ld.ready_source, ld.ready_line_no, ld.polls
        ready_sid = ld.ready_source_id
        if ready_ts is None and ld.h200 is not None:
            ready_ts, ready_line, ready_sid = ld.h200
            ready_source = "health_200"
            polls = ld.polls_at_200 or 0
        out.append(
            {
                "load_id": i,
                "host": ld.host,
                "unit": ld.unit,
                "pid": ld.pid if ld.pid is not None else ld.server_pid,
                "start_ts": ld.start_ts,
                "start_source": ld.start_source,
                "ready_ts": ready_ts,
                "ready_source": ready_source,
                "load_s": _secs(ld.start_ts, ready_ts),
                "weight_load_s": _weight_s(ld, "target"),
                "draft_weight_load_s": _weight_s(ld, "draft"),
                "kv_alloc_s": _kv_s(ld),
                "cuda_graph_s": _graph_s(ld, "target"),
                "draft_cuda_graph_s": _graph_s(ld, "draft"),
                "outcome": ld.outcome,
                "model_path": ld.model_path,
                "speculative_algorithm": ld.speculative_algorithm,
                "tp_size": ld.tp_size,
                "port": ld.port,
                "health_polls": polls,
                "source_id": ld.source_id,
                "start_line_no": ld.start_line_no,
                "start_source_id": ld.start_source_id if ld.start_source_id is not None else ld.source_id,
                "ready_line_no": ready_line,
                "ready_source_id": ready_sid if ready_sid is not None else ld.source_id,
                "engine": ld.engine,
            }
        )
    return out


COLUMNS = (
    "load_id",
    "host",
    "unit",
    "pid",
    "start_ts",
    "start_source",
    "ready_ts",
    "ready_source",
    "load_s",
    "weight_load_s",
    "draft_weight_load_s",
    "kv_alloc_s",
    "cuda_graph_s",
    "draft_cuda_graph_s",
    "outcome",
    "model_path",
    "speculative_algorithm",
    "tp_size",
    "port",
    "health_polls",
    "source_id",
    "start_line_no",
    "ready_line_no",
    "start_source_id",
    "engine",
    "ready_source_id",
)


def with_host(rows: list[dict[str, Any]], host: str | None) -> list[dict[str, Any]]:
    """``rows`` with ``host`` where they have none: the rows no host is known for in a store
    that names exactly one (:func:`postmortem.query.sole_host`), as ``export`` files them."""
    if host is not None:
        for r in rows:
            if r["host"] is None:
                r["host"] = host
    return rows


def derive_service_loads(store: Store, host: str | None = None) -> int:
    """Delete and refill ``service_loads``; returns the number of loads. ``host``: the store's
    only host (:func:`postmortem.query.sole_host`), given to the rows that name none.

    First the server lines no unit is named for are linked to theirs
    (:func:`postmortem.analysis.server_units.link_server_units`: their rows are updated). Then
    two statements (a DELETE and one INSERT of all rows); the caller's transaction, when there
    is one (``analysis.rebuild``), makes them atomic.
    """
    # a server's lines that name no unit take the unit the other sources tie them to
    link_server_units(store, host)
    loads = derive_loads(with_host(run_named_dicts(store, "service_loads"), host))
    store.con.execute("DELETE FROM service_loads")
    # (plain parameters: an Arrow table would make pyarrow import pandas, most of a second)
    store.insert_rows("service_loads", COLUMNS, [[load.get(c) for c in COLUMNS] for load in loads])
    return len(loads)
