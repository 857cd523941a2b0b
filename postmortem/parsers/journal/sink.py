"""What every journal/syslog parser does with an entry once its fields are known.

:class:`JournalSink` stores the entry (a ``journal_entries`` row, emitted in Arrow blocks: most
lines of a journal are plain messages and must stay cheap), and routes it:

* ``systemd`` (pid 1 / user manager) messages → ``unit_events`` (:mod:`.systemd`);
* ``systemd-oomd`` / ``earlyoom`` kill lines → ``oom_kills`` (killer ``systemd-oomd`` /
  ``earlyoom``, ``scope`` NULL);
* kernel entries (``_TRANSPORT=kernel``, identifier ``kernel``) → the kernel module's
  ``KernelStream``, one per (host, boot), so OOM records in the journal land in ``oom_kills``;
* an inference server's output → its engine's message-level stream
  (:meth:`postmortem.engines.Engine.new_stream`), one per unit (or identifier + pid when no
  unit is known), with the journal's time, unit and pid: the first engine that claims a
  process's line (:meth:`~postmortem.engines.Engine.claims`) parses the rest of its lines;
* entries with both realtime and monotonic stamps → one ``boots`` row per boot id
  (boot time = median of realtime − monotonic, over a bounded sample);
* a container's output (see :mod:`.container`) → one ``containers`` row per container id,
  name and image, the first time the source shows it.

Routing of an entry is deferred until the next entry starts (text modes append continuation
lines to the message first). Streams never touch the line counters; the parsers count.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ...engines import Engine, EngineStream, engines
from ...records import Boot, Container, OomKill, UnitEvent, field_names
from ...timeutil import UTC
from ..base import Output, ParseContext, TableBatch
from ..kubernetes.node import NODE_IDENTS, NodeStream
from . import systemd

if TYPE_CHECKING:
    import pyarrow as pa

    from .container import ContainerRef

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: columns of journal_entries in row-tuple order (source_id is added by the store)
COLUMNS = (
    "line_no",
    "ts",
    "ts_raw",
    "ts_inferred",
    "monotonic_s",
    "host",
    "ident",
    "pid",
    "unit",
    "priority",
    "transport",
    "boot_id",
    "message",
)

#: identifiers whose messages are classified (everything else is offered to the engines only)
SPECIAL_IDENTS = frozenset({"systemd", "kernel", "systemd-oomd", "earlyoom"} | NODE_IDENTS)

#: lines of a process no engine has claimed yet offered to the engines before giving up on it
ENGINE_CHECK_BUDGET = 1000
#: check counters kept (one per identifier + pid, or unit) before they are reset
MAX_CHECK_KEYS = 100_000
#: samples of (realtime − monotonic) kept per boot (decimated when full)
BOOT_SAMPLES = 2048
#: longest message kept when continuation lines are appended
MAX_MESSAGE_CHARS = 1 << 20
#: containers remembered per source (as a ``containers`` row already written)
MAX_CONTAINERS = 10_000


_SCHEMA: list[pa.Schema] = []


def _schema() -> pa.Schema:
    if not _SCHEMA:
        import pyarrow as pa

        types = {
            "line_no": pa.int64(),
            "ts": pa.timestamp("us", tz="UTC"),
            "monotonic_s": pa.float64(),
            "pid": pa.int32(),
            "priority": pa.int8(),
        }
        _SCHEMA.append(pa.schema([pa.field(n, types.get(n, pa.string())) for n in COLUMNS]))
    return _SCHEMA[0]


class _BootAcc:
    __slots__ = ("count", "host", "line_no", "samples", "stride")

    def __init__(self, line_no: int, host: str | None) -> None:
        self.line_no = line_no
        self.host = host
        self.samples: list[int] = []
        self.stride = 1
        self.count = 0

    def add(self, offset_us: int) -> None:
        self.count += 1
        if self.count % self.stride:
            return
        self.samples.append(offset_us)
        if len(self.samples) >= BOOT_SAMPLES:
            self.samples = self.samples[::2]
            self.stride *= 2

    def median_us(self) -> int:
        data = sorted(self.samples)
        mid = len(data) // 2
        return data[mid] if len(data) % 2 else (data[mid - 1] + data[mid]) // 2


class JournalSink:
    """Collects one source's journal entries and the records derived from them."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.rows: list[tuple[Any, ...]] = []
        self.out: list[Output] = []
        self._pending: tuple[Any, ...] | None = None  # routing of the last entry
        self._pending_fields: dict[str, str] | None = None
        self._pending_kmono: float | None = None
        self._kernel: dict[tuple[str | None, str | None], Any] = {}
        self._kernel_boot: dict[str | None, str | None] = {}
        self._kernel_cls: Any = None
        self._kernel_checked = False
        self._streams: dict[Any, EngineStream] = {}
        self._checks: dict[Any, int] = {}
        self._engines: tuple[Engine, ...] = tuple(engines().values())
        self._boots: dict[str, _BootAcc] = {}
        self._desc_units: dict[str, str] = {}
        self._holdoff: dict[str, UnitEvent] = {}
        self._earlyoom_last: dict[tuple[str | None, int], datetime | None] = {}
        self._containers: set[tuple[str | None, str, str, str | None]] = set()
        self.cat_mode = False
        self._cat_kernel = False
        self._cat_stream: EngineStream | None = None
        self._node: NodeStream | None = None

    # ------------------------------------------------------------------ entries

    def entry(
        self,
        line_no: int,
        ts: datetime | None,
        ts_raw: str | None,
        ts_inferred: str | None,
        monotonic_s: float | None,
        host: str | None,
        ident: str | None,
        pid: int | None,
        unit: str | None,
        priority: int | None,
        transport: str | None,
        boot_id: str | None,
        message: str,
        fields: dict[str, str] | None = None,
        kernel_monotonic_s: float | None = None,
    ) -> None:
        """Store one entry (its routing runs when the next entry starts or at :meth:`close`)."""
        if self._pending is not None:
            self._route()
        if host is None:
            host = self.ctx.host
        lc = None
        if ident == "systemd" and transport != "kernel":
            lc = systemd.classify(message)
            if fields is not None:
                lc = systemd.apply_fields(lc, fields, message)
            if lc is not None and unit is None:
                unit = self._resolve_unit(lc)
        row = (
            line_no,
            ts,
            ts_raw,
            ts_inferred,
            monotonic_s,
            host,
            ident,
            pid,
            unit,
            priority,
            transport,
            boot_id,
            message,
        )
        self.rows.append(row)
        if lc is not None:
            self._unit_event(lc, row)
        elif transport == "kernel" or (transport is None and ident == "kernel") or ident in SPECIAL_IDENTS:
            self._pending = row
            self._pending_fields = fields
            self._pending_kmono = kernel_monotonic_s
        elif self.cat_mode:
            self._pending = row
        else:
            key = unit or (ident, pid)
            stream = self._streams.get(key)
            if stream is not None or self._checks.get(key, 0) < ENGINE_CHECK_BUDGET:
                self._pending = row

    def wants(self, ident: str | None, pid: int | None, unit: str | None) -> bool:
        """Whether a (text-mode) entry with these fields needs routing at all."""
        return self.route_limit(ident, pid, unit) != 0

    def route_limit(self, ident: str | None, pid: int | None, unit: str | None) -> int:
        """How many more entries with these fields need routing: -1 all, 0 none, else the
        engine check budget left for them."""
        return self.route_limits([unit or (ident, pid)], [ident in SPECIAL_IDENTS])[0]

    def route_limits(self, keys: list[Any], special: list[bool]) -> list[int]:
        """:meth:`route_limit` of many entries at once, by their keys (``unit or (identifier,
        pid)``) and whether their identifier is one of :data:`SPECIAL_IDENTS`."""
        if self.cat_mode:
            return [-1] * len(keys)
        streams, checks, budget = self._streams, self._checks, ENGINE_CHECK_BUDGET
        return [
            -1 if sp or key in streams else max(0, budget - checks.get(key, 0))
            for key, sp in zip(keys, special, strict=True)
        ]

    def engine_stream(self, ident: str | None, pid: int | None, unit: str | None) -> EngineStream | None:
        """The engine stream entries with these fields are fed to, if it exists already."""
        if ident in SPECIAL_IDENTS or self.cat_mode:
            return None
        return self._streams.get(unit or (ident, pid))

    def names_engine(self, ident: str | None, unit: str | None) -> bool:
        """Whether a unit or identifier is named after an engine (its lines are always routed)."""
        return any(e.names(unit) or e.names(ident) for e in self._engines)

    @property
    def start_markers(self) -> tuple[str, ...]:
        """Substrings one of which every line that can start an engine's stream contains
        (empty when an engine has no such pre-filter: then every line is a candidate)."""
        markers: list[str] = []
        for e in self._engines:
            if not e.start_markers:
                return ()
            markers.extend(m for m in e.start_markers if m not in markers)
        return tuple(markers)

    def no_engine(self, ident: str | None, pid: int | None, unit: str | None) -> bool:
        """Route an entry whose message cannot start an engine's stream (the caller checked:
        not named after an engine, none of :attr:`start_markers` in it): it only counts
        against its check budget, as in :meth:`_to_engine`. False: route it in full after all
        (its stream has started)."""
        key = unit or (ident, pid)
        if key in self._streams or not self._engines:
            return False
        if self._checks.get(key, 0) >= ENGINE_CHECK_BUDGET:
            return True
        if len(self._checks) > MAX_CHECK_KEYS:  # as in _to_engine
            self._checks.clear()
        self._checks[key] = self._checks.get(key, 0) + 1
        return True

    def no_engine_many(
        self, counts: list[tuple[str | None, int | None, str | None, int]], bound: int
    ) -> bool:
        """:meth:`no_engine` for ``count`` entries of each of several keys (identifier, pid,
        unit) at once, in any order: exact when none of the keys has a stream and the counters
        cannot be reset meanwhile — ``bound`` is how many keys the caller's lines may add.
        Returns False, having done nothing, when that is not so."""
        checks = self._checks
        if not self._engines or len(checks) + bound > MAX_CHECK_KEYS:
            return False
        keys = [unit or (ident, pid) for ident, pid, unit, _ in counts]
        if any(key in self._streams for key in keys):
            return False
        for key, (_, _, _, count) in zip(keys, counts, strict=True):
            checks[key] = min(ENGINE_CHECK_BUDGET, checks.get(key, 0) + count)
        return True

    def add_output(self, item: Output) -> None:
        """A record or table batch built by the caller (vectorised text path)."""
        self.out.append(item)

    def route_now(self, row: tuple[Any, ...]) -> str | None:
        """Route a complete entry at once, without storing it (the caller stores the row, in
        an Arrow block); returns the unit a systemd message names, for that row."""
        if self._pending is not None:
            self._route()
        if row[6] == "systemd" and row[10] != "kernel":
            # classified on its first line, as the per-line path does before continuation
            # lines arrive
            first = row[12].partition("\n")[0]
            lc = systemd.classify(first)
            if lc is None:
                return None
            unit = row[8] or self._resolve_unit(lc)
            self._unit_event(lc, (*row[:8], unit, *row[9:12], first))
            return unit
        self._pending = row
        self._route()
        return None

    def add_table(self, table: pa.Table) -> None:
        """A block of journal_entries rows built by the caller (vectorised text path)."""
        if table.num_rows:
            self.out.append(TableBatch("journal_entries", table))

    def flush_pending(self) -> None:
        if self._pending is not None:
            self._route()

    def extend_message(self, text: str) -> bool:
        """Append a continuation line to the last entry's message (text modes)."""
        if not self.rows:
            return False
        row = self.rows[-1]
        message = row[12]
        if len(message) + len(text) >= MAX_MESSAGE_CHARS:
            return True  # counted by the caller, not kept
        new = (*row[:12], f"{message}\n{text}")
        self.rows[-1] = new
        if self._pending is not None and self._pending[0] == row[0]:
            self._pending = new
        return True

    def container(self, line_no: int, ts: datetime | None, host: str | None, ref: ContainerRef) -> None:
        """A container's line: its ``containers`` row, the first time this source shows it."""
        if host is None:
            host = self.ctx.host
        key = (host, ref.container_id, ref.name, ref.image)
        if key in self._containers:
            return
        if len(self._containers) >= MAX_CONTAINERS:
            self._containers.clear()  # bounded: a later sighting writes a duplicate row at worst
        self._containers.add(key)
        self.out.append(
            Container(line_no, ts, host, ref.runtime, ref.container_id, ref.name, ref.image, ref.unit)
        )

    def boot_sample(
        self, boot_id: str, host: str | None, line_no: int, realtime_us: int, mono_us: int
    ) -> None:
        acc = self._boots.get(boot_id)
        if acc is None:
            acc = self._boots[boot_id] = _BootAcc(line_no, host)
        acc.add(realtime_us - mono_us)

    # ------------------------------------------------------------------ output

    def drain(self, keep_last: bool = True) -> Iterator[Output]:
        """Yield what is complete: derived records, then the entries as one Arrow block.

        The last entry stays (``keep_last``) so continuation lines can still be appended."""
        rows = self.rows
        if keep_last and rows:
            done, self.rows = rows[:-1], rows[-1:]
        else:
            done, self.rows = rows, []
        if self.out:
            out, self.out = self.out, []
            yield from out
        if done:
            yield self._batch(done)

    def close(self) -> Iterator[Output]:
        """Finish: route the last entry, flush streams, emit boots; then drain everything."""
        if self._pending is not None:
            self._route()
        for ev in self._holdoff.values():
            self.out.append(ev)
        self._holdoff.clear()
        for stream in self._kernel.values():
            self.out.extend(stream.close())
        self._kernel.clear()
        for st in self._streams.values():
            self.out.extend(st.close())
        self._streams.clear()
        if self._cat_stream is not None:
            self.out.extend(self._cat_stream.close())
            self._cat_stream = None
        for boot_id, acc in self._boots.items():
            if acc.samples:
                boot_ts = EPOCH + timedelta(microseconds=acc.median_us())
                self.out.append(Boot(acc.line_no, boot_id, acc.host, boot_ts, "journal"))
        self._boots.clear()
        yield from self.drain(keep_last=False)

    def _batch(self, rows: list[tuple[Any, ...]]) -> TableBatch:
        import pyarrow as pa

        schema = _schema()
        cols = list(zip(*rows, strict=True))
        arrays = [pa.array(col, type=f.type) for col, f in zip(cols, schema, strict=True)]
        return TableBatch("journal_entries", pa.Table.from_arrays(arrays, schema=schema))

    # ------------------------------------------------------------------ routing

    def _route(self) -> None:
        row = self._pending
        assert row is not None
        self._pending = None
        fields = self._pending_fields
        self._pending_fields = None
        kmono = self._pending_kmono
        self._pending_kmono = None
        ident = row[6]
        transport = row[10]
        if transport == "kernel" or (transport is None and ident == "kernel"):
            self._to_kernel(row, fields, kmono)
        elif ident == "systemd-oomd":
            self._oomd(row)
        elif ident == "earlyoom":
            self._earlyoom(row)
        elif ident in NODE_IDENTS:
            self._node = self._node or NodeStream()
            self.out.extend(self._node.feed(row[0], row[1], row[2], row[5], row[12]))
        elif self.cat_mode:
            self._route_cat(row)
        elif ident not in SPECIAL_IDENTS:
            self._to_engine(row)

    def _kernel_stream(self, host: str | None, boot_id: str | None) -> Any:
        if not self._kernel_checked:
            self._kernel_checked = True
            try:
                from .. import kernel
            except ImportError:  # pragma: no cover - the kernel module always exists
                kernel = None  # type: ignore[assignment]
            self._kernel_cls = getattr(kernel, "KernelStream", None)
        if self._kernel_cls is None:
            return None
        key = (host, boot_id)
        stream = self._kernel.get(key)
        if stream is None:
            if host in self._kernel_boot and self._kernel_boot[host] != boot_id:
                old = self._kernel.pop((host, self._kernel_boot[host]), None)
                if old is not None:
                    self.out.extend(old.close())
            self._kernel_boot[host] = boot_id
            stream = self._kernel[key] = self._kernel_cls(self.ctx)
        return stream

    def kernel_stream(self, host: str | None, boot_id: str | None) -> Any:
        """The kernel stream entries of ``host`` in boot ``boot_id`` are fed to (created, and an
        earlier boot's closed, as routing an entry would); None without the kernel module."""
        if self._pending is not None:
            self._route()
        return self._kernel_stream(host, boot_id)

    def new_boot(self, host: str | None = None) -> None:
        """A ``-- Boot … --`` / ``-- Reboot --`` marker: close the kernel streams of ``host``."""
        for key in [k for k in self._kernel if host is None or k[0] == host]:
            self.out.extend(self._kernel.pop(key).close())
            self._kernel_boot.pop(key[0], None)

    def _to_kernel(self, row: tuple[Any, ...], fields: dict[str, str] | None, kmono: float | None) -> None:
        stream = self._kernel_stream(row[5], row[11])
        if stream is None:
            return
        self.out.extend(
            stream.feed(
                row[0],
                row[12],
                ts=row[1],
                ts_raw=row[2],
                ts_inferred=row[3],
                monotonic_s=kmono if kmono is not None else row[4],
                host=row[5],
                level=row[9],
                boot_id=row[11],
            )
        )

    def _claiming(self, message: str, unit: str | None, ident: str | None) -> Engine | None:
        for engine in self._engines:
            if engine.claims(message, unit, ident):
                return engine
        return None

    def _to_engine(self, row: tuple[Any, ...]) -> None:
        unit = row[8]
        ident = row[6]
        pid = row[7]
        key = unit or (ident, pid)
        stream = self._streams.get(key)
        message = row[12]
        if stream is None:
            if self._checks.get(key, 0) >= ENGINE_CHECK_BUDGET:
                return
            engine = self._claiming(message, unit, ident)
            if engine is None:
                if len(self._checks) > MAX_CHECK_KEYS:  # bounded: many short-lived processes
                    self._checks.clear()
                self._checks[key] = self._checks.get(key, 0) + 1
                return
            self._checks.pop(key, None)
            # (a text mode's process names no unit: `build` links it to the unit the other
            # sources name, analysis/server_units.py — a unit started just before its first
            # line may be a oneshot's, which only the lines after it tell)
            unit = unit or self.ctx.unit
            stream = self._streams[key] = engine.new_stream(self.ctx, host=row[5], unit=unit, pid=pid)
        self.out.extend(
            stream.feed(
                row[0],
                message,
                ts=row[1],
                ts_raw=row[2],
                ts_inferred=row[3],
                host=row[5],
                unit=unit or stream.unit,
                pid=pid,
            )
        )

    # ------------------------------------------------------------------ systemd

    def _resolve_unit(self, lc: systemd.Lifecycle) -> str:
        if lc.unit:
            if lc.description and len(self._desc_units) < 10000:
                self._desc_units[lc.description] = lc.unit
            return lc.unit
        desc = lc.description or ""
        known = self._desc_units.get(desc)
        lc.unit = known or desc
        return lc.unit

    def _unit_event(self, lc: systemd.Lifecycle, row: tuple[Any, ...]) -> None:
        unit = lc.unit or row[8]
        ev = UnitEvent(
            line_no=row[0],
            ts=row[1],
            ts_raw=row[2],
            ts_inferred=row[3],
            host=row[5],
            unit=unit,
            action=lc.action,
            code=lc.code,
            status=lc.status,
            result=lc.result,
            restart_count=lc.restart_count,
            cpu_s=lc.cpu_s,
            memory_peak_bytes=lc.memory_peak_bytes,
            wall_s=lc.wall_s,
            message=row[12],
            description=lc.description,
        )
        held = self._holdoff.pop(unit, None)
        if held is not None:
            close = (
                lc.action == "restart_scheduled"
                and lc.restart_count is not None
                and _within(held.ts, ev.ts, 2.0)
            )
            if not close:
                self.out.append(held)
        if lc.action == "restart_scheduled" and lc.restart_count is None:
            self._holdoff[unit] = ev  # the counter sentence may follow: keep one row
            return
        self.out.append(ev)

    # ------------------------------------------------------------------ userspace OOM killers

    def _kill(self, row: tuple[Any, ...], killer: str, **kw: Any) -> OomKill:
        base: dict[str, Any] = dict.fromkeys(_OOM_FIELDS)
        base.update(
            line_no=row[0],
            oom_id=self.ctx.make_id(row[0]),
            ts=row[1],
            ts_raw=row[2],
            ts_inferred=row[3],
            monotonic_s=row[4],
            host=row[5],
            killer=killer,
            message=row[12],
        )
        base.update(kw)
        return OomKill(**base)

    def _oomd(self, row: tuple[Any, ...]) -> None:
        cgroup = systemd.oomd_kill(row[12])
        if cgroup is not None:
            self.out.append(
                self._kill(row, "systemd-oomd", cgroup=cgroup, unit=systemd.unit_from_cgroup(cgroup))
            )

    def _earlyoom(self, row: tuple[Any, ...]) -> None:
        kill = systemd.earlyoom_kill(row[12])
        if kill is None:
            return
        key = (row[5], kill.pid)
        if key in self._earlyoom_last and _within(self._earlyoom_last[key], row[1], 60.0):
            return  # SIGTERM then SIGKILL to the same process: one kill
        if len(self._earlyoom_last) > 10000:
            self._earlyoom_last.clear()
        self._earlyoom_last[key] = row[1]
        self.out.append(
            self._kill(
                row,
                "earlyoom",
                victim_pid=kill.pid,
                victim_comm=kill.name,
                victim_uid=kill.uid,
                oom_score_adj=kill.oom_score_adj,
                vm_rss_kb=kill.vm_rss_mib * 1024 if kill.vm_rss_mib is not None else None,
            )
        )

    # ------------------------------------------------------------------ journalctl -o cat

    def _route_cat(self, row: tuple[Any, ...]) -> None:
        """No identifiers: classify by content. systemd sentences → unit_events; an OOM record
        (from its first kernel line to the kill line) → the kernel stream; an engine's lines (and
        every later unclassified line) → one stream of the first engine that claims a line."""
        message = row[12]
        lc = systemd.classify(message)
        if lc is not None:
            self._cat_kernel = False
            self._resolve_unit(lc)
            self._unit_event(lc, row)
            return
        if systemd.oomd_kill(message) is not None:
            self._oomd(row)
            return
        if systemd.earlyoom_kill(message) is not None:
            self._earlyoom(row)
            return
        engine = next((e for e in self._engines if e.looks_like(message)), None)
        if not self._cat_kernel and engine is None and _starts_kernel_record(message):
            self._cat_kernel = True
        if self._cat_kernel and engine is None:
            self._to_kernel(row, None, None)
            if "Killed process " in message or message.startswith("oom_reaper: "):
                self._cat_kernel = False  # the record ends at its kill (or reaper) line
            return
        self._cat_kernel = False
        if self._cat_stream is None:
            if engine is None:
                return
            self._cat_stream = engine.new_stream(self.ctx, host=row[5], unit=self.ctx.unit, pid=None)
        self.out.extend(self._cat_stream.feed(row[0], message, ts=None, host=row[5]))


_OOM_FIELDS = tuple(n for n in field_names(OomKill) if n not in ("line_no", "oom_id", "killer", "message"))


def _starts_kernel_record(message: str) -> bool:
    return (
        " invoked oom-killer: " in message
        or message.startswith(("oom-kill:", "Out of memory: ", "Memory cgroup out of memory: "))
        or message.startswith(("Killed process ", "oom_reaper: "))
    )


def _within(a: datetime | None, b: datetime | None, seconds: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs((b - a).total_seconds()) <= seconds
