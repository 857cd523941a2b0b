"""The message-level kernel API: :class:`KernelStream`.

File-level parsers (``dmesg``, ``kmsg``) and the journal/syslog parsers hand it one kernel
message at a time, already stripped of their own transport prefix; it yields the
``kernel_messages`` row plus the OOM (``oom_kills``, ``oom_tasks``) and NVIDIA Xid
(``gpu_xids``) records that complete. It never touches the context's line counters: the caller
counts its own lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa

from ...lazyre import lazy_re
from ...records import GpuXid, KernelMessage
from ...timeutil import Inferred, boot_relative, pick_boot
from ..base import Output, ParseContext, TableBatch
from .oom import OomAssembler

#: seconds since boot beyond any uptime (a century): such a stamp is damaged, not a time
MAX_UPTIME_S = 100 * 365.25 * 86400

# "[  517.923918] " at the start of a kernel message copied by klogd/imklog into syslog,
# optionally followed by a caller id ("[    T1234] ", CONFIG_PRINTK_CALLER)
_INNER_STAMP = lazy_re(r"\[\s*(\d+\.\d+)\](?: ?\[\s*[TC]\d+\])? ?")
_KMSG_ESCAPE = lazy_re(r"(?:\\x[0-9a-fA-F]{2})+")

_XID = lazy_re(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?\): "
    r"(?P<xid>\d+)(?:, pid=(?P<pid>'?<unknown>'?|\d+), name=(?P<name>[^,]*))?(?:, (?P<msg>.*))?$"
)
_FALLEN_SINGLE = lazy_re(
    r"NVRM:\s+GPU (?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\.\d:\s+"
    r"(?P<msg>GPU has fallen off the bus\.?)"
)
_FALLEN_FIRST = lazy_re(
    r"NVRM:\s+The NVIDIA GPU (?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\.\d"
)
_FALLEN_LAST = "fallen off the bus and is not responding to commands"
#: an Xid 79 line and the driver's sentence about the same GPU this close together are one event
_FALLEN_DEDUP_S = 60.0

#: what makes a kernel message more than its ``kernel_messages`` row (a regular expression
#: for Arrow): the words :meth:`KernelStream.record` looks for (OOM records, NVIDIA messages),
#: escapes and embedded newlines that :meth:`KernelStream.feed` decodes, an embedded dmesg stamp
NOT_PLAIN = r"oom|ill|Task|emory|tgid|NVRM|#012|\\x|\n|^\["

#: how much of a file's end :func:`last_stamp` reads
_TAIL_BYTES = 256 * 1024
_TAIL_STAMP = lazy_re(rb"^(?:<\d+>)?\[\s*(\d+\.\d+)\]|^\d+,\d+,(\d+),", re.MULTILINE)
#: leading bytes of the compressed formats a file may be read through
_COMPRESSED = (b"\x1f\x8b", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd", b"BZh")


def last_stamp(path: str) -> float | None:
    """The largest seconds-since-boot stamp (``[ 1234.5678]``, or kmsg's microseconds) in the
    last lines of the file at ``path``; None when it is no plain file or they carry none.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("wb", delete=False) as f:
    ...     _ = f.write(b"[    0.000000] Linux version 6.8\\n[194537.431000] Out of memory\\n")
    >>> last_stamp(f.name); os.unlink(f.name)
    194537.431
    """
    try:
        with Path(path).open("rb") as f:
            if f.read(6).startswith(_COMPRESSED):
                return None
            size = f.seek(0, 2)
            f.seek(max(0, size - _TAIL_BYTES))
            tail = f.read()
    except OSError:
        return None
    best: float | None = None
    for m in _TAIL_STAMP.finditer(tail):
        v = float(m.group(1)) if m.group(1) else int(m.group(2)) / 1e6
        best = v if best is None else max(best, v)
    return best


#: rows per ``kernel_messages`` TableBatch in batched mode
BATCH_ROWS = 65536
BATCH_SCHEMA = pa.schema(
    [  # type: ignore[arg-type]  # pyarrow-stubs: pa.field(…, timestamp) is typed as object
        pa.field("line_no", pa.int64()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("ts_raw", pa.string()),
        pa.field("ts_inferred", pa.string()),
        pa.field("monotonic_s", pa.float64()),
        pa.field("host", pa.string()),
        pa.field("boot_id", pa.string()),
        pa.field("level", pa.int8()),
        pa.field("seq", pa.int64()),
        pa.field("message", pa.string()),
    ]
)


def normalise_bus_id(text: str) -> str:
    """``dddd:bb:dd`` in lower case from any PCI bus id form (Xid, nvidia-smi, lspci).

    >>> [normalise_bus_id(b) for b in ("0000:9B:00", "00000000:9B:00.0", "b3:00", "0018:01:00")]
    ['0000:9b:00', '0000:9b:00', '0000:b3:00', '0018:01:00']
    """
    bus = text.strip().lower()
    if "." in bus:
        bus = bus.split(".", 1)[0]
    parts = bus.split(":")
    if len(parts) == 2:
        parts.insert(0, "0")
    if len(parts) != 3:
        return bus
    try:
        return f"{int(parts[0], 16):04x}:{int(parts[1], 16):02x}:{int(parts[2], 16):02x}"
    except ValueError:
        return bus


def unescape_kmsg(text: str) -> str:
    """Undo /dev/kmsg escaping (``\\xNN`` for control bytes, bytes ≥ 0x7f and ``\\``).

    >>> unescape_kmsg("Mem-Info:\\\\x0a active_file:1"), unescape_kmsg("caf\\\\xc3\\\\xa9")
    ('Mem-Info:\\n active_file:1', 'café')
    """

    def repl(m: re.Match[str]) -> str:
        raw = bytes(int(m.group(0)[i + 2 : i + 4], 16) for i in range(0, len(m.group(0)), 4))
        return raw.decode("utf-8", "replace")

    return _KMSG_ESCAPE.sub(repl, text)


class KernelStream:
    """Kernel messages → ``kernel_messages`` rows, OOM records and NVIDIA Xids.

    ``feed`` takes one message as its transport delivered it: it may hold embedded newlines
    (journald multi-line ``MESSAGE``), rsyslog ``#012`` escapes or /dev/kmsg ``\\xNN``
    escapes, and may start with a dmesg stamp (``[  517.923918] ``, as klogd/imklog copy
    it into syslog) — then ``monotonic_s`` comes from that stamp unless the caller gave one,
    while the wall ``ts`` stays the caller's. The stored message is the decoded text without
    that stamp. When ``ts`` is ``None`` and ``monotonic_s`` is known, ``ts`` is computed from a
    boot anchor (:func:`postmortem.timeutil.pick_boot`) with ``ts_inferred='boot'``.

    >>> from postmortem.parsers.base import ParseContext
    >>> ks = KernelStream(ParseContext())
    >>> out = list(ks.feed(7, "[ 3449.257924] Out of memory: Killed process 4242 (python3) "
    ...     "total-vm:6424316kB, anon-rss:13128kB, file-rss:4kB, shmem-rss:0kB",
    ...     ts=None, ts_raw=None, ts_inferred=None, monotonic_s=None, host="h"))
    >>> [type(o).__name__ for o in out]
    ['KernelMessage', 'OomKill']
    >>> out[0].monotonic_s, out[0].message[:13], out[1].victim_pid, out[1].anon_rss_kb, out[1].scope
    (3449.257924, 'Out of memory', 4242, 13128, 'global')
    >>> list(ks.close())
    []

    ``batch=True`` (for file-level parsers and other callers with many kernel lines) collects
    the ``kernel_messages`` rows into :class:`~postmortem.parsers.base.TableBatch` blocks of
    :data:`BATCH_ROWS` rows instead of yielding one ``KernelMessage`` each; ``close()``
    yields the last block. The other records are yielded as they complete either way.
    """

    def __init__(self, ctx: ParseContext, *, batch: bool = False) -> None:
        self.ctx = ctx
        self.oom = OomAssembler(ctx)
        # batched mode: one list per kernel_messages column
        self._cols: tuple[list[object], ...] | None = tuple([] for _ in BATCH_SCHEMA) if batch else None
        self._boots: dict[tuple[str | None, str | None], datetime | None] = {}
        self._fallen: dict[str, float] = {}  # bus id → clock of the last Xid 79 (dedup)
        self._fallen_bus: str | None = None  # "The NVIDIA GPU …" seen, waiting for its last line

    # ------------------------------------------------------------------ public API
    def feed(
        self,
        line_no: int,
        message: str,
        *,
        ts: datetime | None,
        ts_raw: str | None,
        ts_inferred: str | None,
        monotonic_s: float | None,
        host: str | None,
        level: int | None = None,
        boot_id: str | None = None,
        seq: int | None = None,
    ) -> Iterator[Output]:
        """One kernel message → its ``KernelMessage`` and any records it completes."""
        if message.startswith("["):
            m = _INNER_STAMP.match(message)
            if m is not None:
                if monotonic_s is None:
                    monotonic_s = float(m.group(1))
                message = message[m.end() :]
        if "#012" in message:
            message = message.replace("#012", "\n")
        if "\\x" in message:
            message = unescape_kmsg(message)
        if "\n" in message:
            lines: Sequence[tuple[int, str]] = [(line_no, part) for part in message.split("\n")]
        else:
            lines = ((line_no, message),)
        return iter(
            self.record(
                line_no, message, lines, ts, ts_raw, ts_inferred, monotonic_s, host, level, boot_id, seq
            )
        )

    def idle(self) -> bool:
        """Whether a plain message (one :data:`NOT_PLAIN` does not match) would become only its
        ``kernel_messages`` row now: no OOM record is waiting for more lines."""
        ev = self.oom.event
        return ev is None or (bool(ev.kills) and ev.group_cgroup is None)

    def close(self) -> Iterator[Output]:
        """End of input: yield what an unfinished OOM record holds (and the last batch)."""
        yield from self.oom.close()
        if self._cols is not None and self._cols[0]:
            yield self._batch()

    def _batch(self) -> TableBatch:
        cols = self._cols
        assert cols is not None
        arrays = [pa.array(col, type=f.type) for col, f in zip(cols, BATCH_SCHEMA, strict=True)]
        for col in cols:
            col.clear()
        return TableBatch(KernelMessage.TABLE, pa.Table.from_arrays(arrays, schema=BATCH_SCHEMA))

    # ------------------------------------------------------------------ for file parsers
    def record(
        self,
        line_no: int,
        message: str,
        lines: Sequence[tuple[int, str]],
        ts: datetime | None,
        ts_raw: str | None,
        ts_inferred: str | None,
        monotonic_s: float | None,
        host: str | None,
        level: int | None,
        boot_id: str | None,
        seq: int | None,
    ) -> list[Output]:
        """One decoded record whose text lines (``(physical line_no, text)``) are given; returns
        its ``KernelMessage`` followed by the records it completes."""
        if monotonic_s is not None and not 0 <= monotonic_s < MAX_UPTIME_S:
            monotonic_s = None  # (no host has been up that long: a damaged stamp dates nothing)
        if ts is None and monotonic_s is not None:
            key = (boot_id, host)
            boot = self._boots[key] if key in self._boots else self._boot(key)
            if boot is not None:
                ts = boot_relative(boot, monotonic_s)
                ts_inferred = Inferred.BOOT
        cols = self._cols
        out: list[Output]
        if cols is None:
            out = [
                KernelMessage(
                    line_no, ts, ts_raw, ts_inferred, monotonic_s, host, boot_id, level, seq, message
                )
            ]
        else:
            c_line, c_ts, c_raw, c_inf, c_mono, c_host, c_boot, c_level, c_seq, c_msg = cols
            c_line.append(line_no)
            c_ts.append(ts)
            c_raw.append(ts_raw)
            c_inf.append(ts_inferred)
            c_mono.append(monotonic_s)
            c_host.append(host)
            c_boot.append(boot_id)
            c_level.append(level)
            c_seq.append(seq)
            c_msg.append(message)
            out = [self._batch()] if len(c_line) >= BATCH_ROWS else []
        oom = self.oom
        for no, text in lines:
            if "NVRM" in text:
                out.extend(self._nvrm(no, text, ts, ts_raw, ts_inferred, monotonic_s, host))
            # might_open(), inlined: this runs for every kernel line
            if (
                "oom" in text
                or "ill" in text
                or "Task" in text
                or "emory" in text
                or "tgid" in text
                or ((ev := oom.event) is not None and (not ev.kills or ev.group_cgroup is not None))
            ):
                out.extend(oom.line(no, text, ts, ts_raw, ts_inferred, monotonic_s, host))
        return out

    # ------------------------------------------------------------------ helpers
    def _boot(self, key: tuple[str | None, str | None]) -> datetime | None:
        ctx = self.ctx
        not_after = ctx.mtime
        if not_after is not None and not key[0] and ctx.boot_time is None and Path(ctx.path).is_file():
            # a boot picked by the file's mtime must have started early enough for the file's
            # last stamp too (a previous boot's dmesg, copied after a reboot, is not of the
            # current boot because its first lines would fit it); when that stamp cannot be
            # read ahead (a compressed file), the build picks the boot with every stamp known
            last = last_stamp(ctx.path)
            if last is None:
                self._boots[key] = None
                return None
            try:
                not_after -= timedelta(seconds=last)
            except OverflowError:  # (a stamp of millions of years: a damaged file)
                self._boots[key] = None
                return None
        boot = self._boots[key] = pick_boot(
            ctx.anchors, ctx.boot_time, boot_id=key[0], host=key[1], not_after=not_after
        )
        if boot is None:
            ctx.note(
                "boot-relative kernel stamps and no boot time known: ts stays NULL until a journal of "
                "that boot is ingested — with boot ids (-o export or json) or the same OOM or Xid "
                "kernel lines — and the build is run, or --boot-time gives that boot's start (uptime -s)"
            )
        return boot

    def _nvrm(
        self,
        line_no: int,
        text: str,
        ts: datetime | None,
        ts_raw: str | None,
        ts_inferred: str | None,
        monotonic_s: float | None,
        host: str | None,
    ) -> Iterator[Output]:
        s = text.strip()
        at = s.find("NVRM:")
        if at < 0:
            return
        if at:
            s = s[at:]
        clock = monotonic_s if monotonic_s is not None else (ts.timestamp() if ts is not None else None)
        if s.startswith("NVRM: Xid"):
            m = _XID.match(s)
            if m is None:
                yield self.ctx.issue(line_no, "NVIDIA Xid line not understood", s, unparsed=False)
                return
            xid_bus = normalise_bus_id(m.group("bus"))
            xid = int(m.group("xid"))
            pid_text = m.group("pid")
            name = m.group("name")
            if xid == 79 and clock is not None:
                self._fallen[xid_bus] = clock
            yield GpuXid(
                line_no=line_no,
                ts=ts,
                ts_raw=ts_raw,
                ts_inferred=ts_inferred,
                monotonic_s=monotonic_s,
                host=host,
                bus_id=xid_bus,
                xid=xid,
                pid=int(pid_text) if pid_text is not None and pid_text.isdigit() else None,
                process_name=name if name and name != "<unknown>" else None,
                message=(m.group("msg") or "").strip(),
            )
            return
        bus: str | None = None
        detail: str | None = None
        if "fallen off the bus" in s:
            m = _FALLEN_SINGLE.match(s)
            if m is not None:
                bus, detail = normalise_bus_id(m.group("bus")), m.group("msg")
            elif _FALLEN_LAST in s and self._fallen_bus is not None:
                bus, detail = (
                    self._fallen_bus,
                    "GPU has fallen off the bus and is not responding to commands.",
                )
                self._fallen_bus = None
        elif "The NVIDIA GPU" in s:
            m = _FALLEN_FIRST.match(s)
            self._fallen_bus = normalise_bus_id(m.group("bus")) if m is not None else None
            return
        if bus is None or detail is None:
            return
        last = self._fallen.get(bus)
        if last is not None and clock is not None and abs(clock - last) <= _FALLEN_DEDUP_S:
            return  # the driver's sentence after an Xid 79 line for the same GPU
        if clock is not None:
            self._fallen[bus] = clock
        yield GpuXid(
            line_no=line_no,
            ts=ts,
            ts_raw=ts_raw,
            ts_inferred=ts_inferred,
            monotonic_s=monotonic_s,
            host=host,
            bus_id=bus,
            xid=79,
            pid=None,
            process_name=None,
            message=detail,
        )
