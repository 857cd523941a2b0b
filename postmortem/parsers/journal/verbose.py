"""``journalctl -o verbose``: ``journal-verbose``.

Each entry is a header ``Fri 2025-03-14 09:00:00.120000 UTC [s=…;i=…;b=…;m=…;t=…;x=…]`` (the
cursor: ``b`` boot id, ``m`` monotonic and ``t`` realtime µs in hex — ``t`` gives the exact
time whatever zone the header was rendered in) followed by ``    FIELD=value`` lines. A value
with newlines continues on the following lines (indented to the value column); a value that is
not printable shows as ``[N blob data]`` (kept as printed).

>>> text = '''Fri 2025-03-14 02:00:00.120000 PDT [s=62;i=1;b=3f1c2b9a8e7d4c6b9a1f2e3d4c5b6a79;m=283bcc0c0;t=63049a9d1f8c0;x=78]
...     _HOSTNAME=gpu-node-7
...     SYSLOG_IDENTIFIER=systemd
...     UNIT=llm-qwen.service
...     MESSAGE=Starting llm-qwen.service - Qwen3-235B server...'''
>>> out, ctx = run_parser(JournalVerboseParser(), text)
>>> out[0].unit, out[0].action, out[0].ts.isoformat(), out[0].ts_raw
('llm-qwen.service', 'starting', '2025-03-14T09:00:00.120000+00:00', 'Fri 2025-03-14 02:00:00.120000 PDT')
>>> ctx.parsed_lines
5
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import ClassVar

from ...lazyre import lazy_re
from ...timeutil import localize_abbrev
from .. import register
from ..base import Head, LineChunk, Output, ParseContext, Parser, run_parser
from .fields import WANTED, FieldMapper
from .short import _BOOT_MARKER, CATALOG, STRUCTURED_TABLES
from .sink import JournalSink

__all__ = ["JournalVerboseParser", "run_parser"]

HEADER = lazy_re(r"^(?:[A-Z][a-z]{2} )?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?) (\S+) \[([^\]]*)\]$")
_FIELD = lazy_re(r"^    ([A-Z0-9_]+)=(.*)$")


def _cursor(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(";"):
        k, sep, v = part.partition("=")
        if sep:
            out[k] = v
    return out


def _hex(value: str | None) -> int | None:
    if not value:
        return None
    try:
        return int(value, 16)
    except ValueError:
        return None


@register
class JournalVerboseParser(Parser):
    """journalctl verbose (see the module docstring)."""

    name = "journal-verbose"
    description = "journalctl -o verbose"
    tables: ClassVar[tuple[str, ...]] = STRUCTURED_TABLES
    priority = 10

    def sniff(self, head: Head) -> int:
        lines = [ln for ln in head.lines if ln and not ln.startswith(("-- ", CATALOG))]
        if len(lines) < 2 or not HEADER.match(lines[0]) or "[s=" not in lines[0]:
            return 0
        return 95 if _FIELD.match(lines[1]) else 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        sink = JournalSink(ctx)
        mapper = FieldMapper(ctx, sink)
        fields: dict[str, str] | None = None
        head: _Head | None = None
        last: str | None = None
        value_col = 0

        def finish() -> None:
            nonlocal fields, head
            if head is not None and fields is not None:
                line_no, raw, ts, rt, mono, boot = head
                if boot and "_BOOT_ID" not in fields:
                    fields["_BOOT_ID"] = boot
                mapper.add(line_no, fields, ts=ts, ts_raw=raw, realtime_us=rt, mono_us=mono)
            fields = None
            head = None

        for chunk in chunks:
            parsed = ignored = 0
            issues: list[Output] = []
            for line_no, line in chunk:
                if line.startswith("    ") and fields is not None:
                    m = _FIELD.match(line)
                    if m:
                        name = m.group(1)
                        last = name if name in WANTED else None
                        if last is not None:
                            fields[name] = m.group(2)
                        value_col = 5 + len(name)
                        parsed += 1
                        continue
                if line[:1] not in (" ", "\t") or fields is None:
                    m = HEADER.match(line) if line[:1].isalnum() else None
                    if m:
                        finish()
                        head = _entry_head(m, line_no, line, ctx)
                        fields = {}
                        last = None
                        parsed += 1
                        continue
                    if _meta_line(line, sink):
                        ignored += 1
                        continue
                    if fields is None:
                        issues.append(ctx.issue(line_no, "not a journalctl verbose entry", line))
                        continue
                if line[:1] not in (" ", "\t"):
                    issues.append(ctx.issue(line_no, "not a journalctl verbose field", line))
                    continue
                # a continuation line of the last field's value (indented to its value column)
                if last is not None:
                    text = line[value_col:] if not line[:value_col].strip() else line.lstrip()
                    fields[last] = fields[last] + "\n" + text
                parsed += 1
            ctx.parsed(parsed)
            ctx.ignored(ignored)
            yield from issues
            yield from sink.drain()
        finish()
        mapper.finish()
        yield from sink.close()


#: an entry's header line: line number, raw stamp text, time, realtime and monotonic µs, boot id
_Head = tuple[int, str, datetime | None, int | None, int | None, str | None]


def _entry_head(m: re.Match[str], line_no: int, line: str, ctx: ParseContext) -> _Head:
    """An entry's header from its matched header line; the cursor's realtime wins over the text."""
    cursor = _cursor(m.group(3))
    rt = _hex(cursor.get("t"))
    mono = _hex(cursor.get("m"))
    ts = None
    if rt is None:
        try:
            naive = datetime.fromisoformat(m.group(1))
        except ValueError:
            naive = None
        if naive is not None:
            ts = localize_abbrev(naive, m.group(2), ctx.zone)[0]
    return (line_no, line[: m.end(2)], ts, rt, mono, cursor.get("b"))


def _meta_line(line: str, sink: JournalSink) -> bool:
    """Whether ``line`` is a blank, ``--`` or catalog line (ignored); a boot marker switches the boot."""
    if not line or line.startswith(("--", CATALOG)):
        if line.startswith("-- Boot ") and _BOOT_MARKER.match(line):
            sink.new_boot()
        return True
    return False
