"""Journal entries and their renderings: every ``journalctl -o`` mode the project reads, and
rsyslog files.

Formats follow /work/shared/reference/kernel-and-journal.md §1.3, §3 and the real renderings in
/work/shared/real-samples/journal/ (field names, cursor layout, the ``+0000``/``+00:00`` offset
change of v255, the ``-- Logs begin at …`` header of ≤ v249). Only export, json and verbose keep
the structured fields (``UNIT=``, ``_SYSTEMD_UNIT=``); the text modes show what a person sees.

>>> from datetime import UTC, datetime
>>> e = JEntry(datetime(2025, 3, 14, 9, 0, 0, 120000, tzinfo=UTC), "systemd", 1, "Started A.", {"UNIT": "a.service"})
>>> j = JournalStyle(host="gpu-node-7", zone="UTC", boot=datetime(2025, 3, 14, 6, tzinfo=UTC), systemd=255)
>>> render([e], "short", j)
['Mar 14 09:00:00 gpu-node-7 systemd[1]: Started A.']
>>> render([e], "short-iso", j)
['2025-03-14T09:00:00+00:00 gpu-node-7 systemd[1]: Started A.']
>>> render([e], "short-monotonic", j)
['[10800.120000] gpu-node-7 systemd[1]: Started A.']
>>> render([e], "syslog", JournalStyle("h", "UTC", e.ts, 219, syslog="el7"))
['Mar 14 09:00:00 h systemd: Started A.']
>>> render([e], "short", JournalStyle("h", "Europe/Berlin", e.ts, 246))[0]
'-- Logs begin at Fri 2025-03-14 10:00:00 CET, end at Fri 2025-03-14 10:00:00 CET. --'
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo


@dataclass
class JEntry:
    ts: datetime  # journald's receipt time (UTC)
    ident: str  # SYSLOG_IDENTIFIER
    pid: int | None
    message: str
    fields: dict[str, str] = field(default_factory=dict)
    transport: str = "journal"  # journal | kernel | stdout | syslog
    mono_source: int | None = None  # kernel entries: the kmsg stamp (µs since boot)


@dataclass(frozen=True)
class JournalStyle:
    host: str
    zone: str
    boot: datetime
    systemd: int
    syslog: str = "rfc3164"  # rsyslog's format for mode "syslog": rfc3164 | rfc3339 | el7
    kernel_stamp: bool = False  # rsyslog's kernel lines keep the dmesg stamp (imklog)
    boot_id: str = "0f3c1d2e4b5a69788796a5b4c3d2e1f0"
    machine_id: str = "5e4d3c2b1a0f9e8d7c6b5a4938271605"
    seqnum_id: str = "6237bb034695453f917a75b03a0a41ea"


def _mono_us(e: JEntry, j: JournalStyle) -> int:
    return round((e.ts - j.boot) / timedelta(microseconds=1))


def _rt_us(ts: datetime) -> int:
    return round(ts.timestamp() * 1_000_000)


def _offset(local: datetime, colon: bool) -> str:
    z = local.strftime("%z")
    return f"{z[:3]}:{z[3:]}" if colon else z


def _header(entries: list[JEntry], j: JournalStyle) -> list[str]:
    if not entries or j.systemd >= 250:
        return []
    tz = ZoneInfo(j.zone)
    first = entries[0].ts.astimezone(tz).strftime("%a %Y-%m-%d %H:%M:%S %Z")
    last = entries[-1].ts.astimezone(tz).strftime("%a %Y-%m-%d %H:%M:%S %Z")
    if j.systemd <= 246:
        return [f"-- Logs begin at {first}, end at {last}. --"]
    return [f"-- Journal begins at {first}, ends at {last}. --"]


def _short_stamp(e: JEntry, mode: str, j: JournalStyle) -> str:
    local = e.ts.astimezone(ZoneInfo(j.zone))
    if mode == "short":
        return local.strftime("%b %d %H:%M:%S")
    if mode == "short-precise":
        return local.strftime("%b %d %H:%M:%S") + f".{local.microsecond:06d}"
    if mode == "short-iso":
        return local.strftime("%Y-%m-%dT%H:%M:%S") + _offset(local, j.systemd >= 255)
    if mode == "short-full":
        return local.strftime("%a %Y-%m-%d %H:%M:%S %Z")
    if mode == "short-monotonic":
        us = _mono_us(e, j)
        return f"[{us // 1_000_000:5d}.{us % 1_000_000:06d}]"
    raise ValueError(mode)


def _who(e: JEntry, *, el7: bool = False) -> str:
    if e.transport == "kernel":
        return "kernel"
    if el7 and e.ident == "systemd":
        return "systemd"
    return f"{e.ident}[{e.pid}]" if e.pid is not None else e.ident


def _indented(prefix: str, message: str) -> list[str]:
    first, *more = message.split("\n")
    return [prefix + first] + [" " * len(prefix) + m for m in more]


def _syslog_line(e: JEntry, j: JournalStyle) -> list[str]:
    local = e.ts.astimezone(ZoneInfo(j.zone))
    if j.syslog == "rfc3339":
        stamp = local.strftime("%Y-%m-%dT%H:%M:%S") + f".{local.microsecond:06d}" + _offset(local, True)
    else:  # RFC 3164: space-padded day
        stamp = f"{local.strftime('%b')} {local.day:2d} {local.strftime('%H:%M:%S')}"
    msg = e.message
    if e.transport == "kernel" and j.kernel_stamp and e.mono_source is not None:
        us = e.mono_source
        msg = f"[{us // 1_000_000:5d}.{us % 1_000_000:06d}] {msg}"
    msg = msg.replace("\n", "#012")  # rsyslog's control-character escape
    return [f"{stamp} {j.host} {_who(e, el7=j.syslog == 'el7')}: {msg}"]


def _fields(e: JEntry, j: JournalStyle, seqnum: int) -> list[tuple[str, str]]:
    rt, mt = _rt_us(e.ts), _mono_us(e, j)
    xor = hashlib.sha1(f"{seqnum}{rt}".encode()).hexdigest()[:16]
    cursor = f"s={j.seqnum_id};i={seqnum:x};b={j.boot_id};m={mt:x};t={rt:x};x={xor}"
    head = [
        ("__CURSOR", cursor),
        ("__REALTIME_TIMESTAMP", str(rt)),
        ("__MONOTONIC_TIMESTAMP", str(mt)),
    ]
    if j.systemd >= 254:
        head += [("__SEQNUM", str(seqnum)), ("__SEQNUM_ID", j.seqnum_id)]
    head += [("_BOOT_ID", j.boot_id), ("_MACHINE_ID", j.machine_id), ("_HOSTNAME", j.host)]
    body: list[tuple[str, str]] = [("_TRANSPORT", e.transport)]
    if e.transport == "kernel":
        body += [("SYSLOG_FACILITY", "0"), ("SYSLOG_IDENTIFIER", "kernel")]
        if e.mono_source is not None:
            body.append(("_SOURCE_MONOTONIC_TIMESTAMP", str(e.mono_source)))
    else:
        body += [("SYSLOG_IDENTIFIER", e.ident), ("_PID", str(e.pid or 0))]
        if e.ident == "systemd":
            body += [("_COMM", "systemd"), ("_SYSTEMD_UNIT", "init.scope"), ("SYSLOG_FACILITY", "3")]
    body += list(e.fields.items())
    body.append(("MESSAGE", e.message))
    return head + body


def _export(entries: list[JEntry], j: JournalStyle) -> bytes:
    out = bytearray()
    for n, e in enumerate(entries, start=4_100_001):
        for name, value in _fields(e, j, n):
            raw = value.encode()
            if b"\n" in raw:
                out += name.encode() + b"\n" + len(raw).to_bytes(8, "little") + raw + b"\n"
            else:
                out += f"{name}={value}\n".encode()
        out += b"\n"
    return bytes(out)


def _verbose(e: JEntry, j: JournalStyle, seqnum: int) -> list[str]:
    local = e.ts.astimezone(ZoneInfo(j.zone))
    fields = _fields(e, j, seqnum)
    cursor = fields[0][1]
    lines = [
        local.strftime("%a %Y-%m-%d %H:%M:%S") + f".{local.microsecond:06d} {local.strftime('%Z')} [{cursor}]"
    ]
    for name, value in fields:
        if name.startswith("__"):
            continue
        lines += _indented(f"    {name}=", value)
    return lines


def render(entries: list[JEntry], mode: str, j: JournalStyle) -> list[str]:
    """Text renderings (every mode but export): the file's lines."""
    entries = sorted(entries, key=lambda e: e.ts)
    if mode == "syslog":
        return [line for e in entries for line in _syslog_line(e, j)]
    if mode == "json":
        return [
            json.dumps(dict(_fields(e, j, n)), ensure_ascii=False, separators=(",", ":"))
            for n, e in enumerate(entries, start=4_100_001)
        ]
    out = _header(entries, j)
    if mode == "cat":
        for e in entries:
            out += e.message.split("\n")
        return out
    if mode == "verbose":
        for n, e in enumerate(entries, start=4_100_001):
            out += _verbose(e, j, n)
        return out
    for e in entries:
        out += _indented(f"{_short_stamp(e, mode, j)} {j.host} {_who(e)}: ", e.message)
    return out


def render_bytes(entries: list[JEntry], mode: str, j: JournalStyle) -> bytes:
    if mode == "export":
        return _export(sorted(entries, key=lambda e: e.ts), j)
    return ("\n".join(render(entries, mode, j)) + "\n").encode()
