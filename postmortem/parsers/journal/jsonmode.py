"""``journalctl -o json`` and its framings: ``journal-json``.

One object per entry: ``json`` (one per line; ≤v239 spaced ``{ "K" : "v" }``), ``json-seq``
(RS 0x1E before each object), ``json-sse`` (``data: {…}`` + blank line) and ``json-pretty``
(an object over several lines, from ``{`` to ``}``). All values are strings; a value that is
not UTF-8 is an array of byte values (decoded with U+FFFD for bad bytes); a repeated field is
an array (the first value is used); a value longer than 4096 bytes is ``null`` (stored as an
empty message, and the ingest summary says so).

>>> line = ('{"__REALTIME_TIMESTAMP":"1741952525842000","__MONOTONIC_TIMESTAMP":"20525842000",'
...         '"_BOOT_ID":"3f1c2b9a8e7d4c6b9a1f2e3d4c5b6a79","_HOSTNAME":"gpu-node-7","_PID":"1",'
...         '"SYSLOG_IDENTIFIER":"systemd","UNIT":"llm-qwen.service","PRIORITY":"4",'
...         '"MESSAGE":"llm-qwen.service: Failed with result \\'oom-kill\\'."}')
>>> out, ctx = run_parser(JournalJsonParser(), line)
>>> ev, boot = out[0], out[1]
>>> ev.unit, ev.action, ev.result, ev.ts.isoformat()
('llm-qwen.service', 'failed', 'oom-kill', '2025-03-14T11:42:05.842000+00:00')
>>> boot.boot_ts.isoformat(), boot.method
('2025-03-14T06:00:00+00:00', 'journal')
>>> out[2].data.to_pylist()[0]["priority"], ctx.parsed_lines
(4, 1)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from .. import register
from ..base import Head, LineChunk, Output, ParseContext, Parser, run_parser
from .fields import WANTED, FieldMapper
from .short import CATALOG, STRUCTURED_TABLES
from .sink import JournalSink

__all__ = ["JournalJsonParser", "run_parser"]

_MAX_PRETTY_LINES = 100_000


def _value(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, list) and v:
        if all(isinstance(b, int) and 0 <= b < 256 for b in v):
            return bytes(v).decode("utf-8", "replace")
        return _value(v[0])
    if v is None:
        return None
    return str(v)


def _fields(obj: dict[str, Any]) -> dict[str, str]:
    """The fields journal parsers read, as strings (byte arrays decoded, first of repeated)."""
    out: dict[str, str] = {}
    for k in WANTED.intersection(obj):
        v = obj[k]
        s = v if v.__class__ is str else _value(v)
        if s is not None:
            out[k] = s
    return out


@register
class JournalJsonParser(Parser):
    """journalctl json, json-seq, json-sse and json-pretty (see the module docstring)."""

    name = "journal-json"
    description = "journalctl -o json / json-seq / json-sse / json-pretty"
    tables: ClassVar[tuple[str, ...]] = STRUCTURED_TABLES
    priority = 10

    def sniff(self, head: Head) -> int:
        for line in head.lines[:8]:
            s = line.lstrip("\x1e")
            if s.startswith("data: "):
                s = s[6:]
            if not s.strip():
                continue
            if s.startswith("{") and ('"__CURSOR"' in s or '"__REALTIME_TIMESTAMP"' in s or '"MESSAGE"' in s):
                return 95
            if s == "{":
                text = head.text
                return 95 if '"__CURSOR" : ' in text or '"__REALTIME_TIMESTAMP" : ' in text else 0
            return 0
        return 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        sink = JournalSink(ctx)
        mapper = FieldMapper(ctx, sink)
        loads = json.loads
        pretty: list[str] | None = None
        pretty_start = 0
        for chunk in chunks:
            parsed = ignored = 0
            issues: list[Output] = []
            for line_no, line in chunk:
                if pretty is not None:
                    pretty.append(line)
                    if line == "}" or len(pretty) > _MAX_PRETTY_LINES:
                        n = len(pretty)
                        obj = _load(loads, "\n".join(pretty))
                        pretty = None
                        if obj is None:
                            issues.append(
                                ctx.issue(pretty_start, f"invalid json-pretty object ({n} lines)", "{")
                            )
                            ignored += n - 1
                        else:
                            mapper.add(pretty_start, _fields(obj))
                            parsed += n
                    continue
                s = line
                if s[:1] == "\x1e":
                    s = s.lstrip("\x1e")
                elif s[:6] == "data: ":
                    s = s[6:]
                if not s.strip():
                    ignored += 1
                    continue
                if s == "{":
                    pretty = [s]
                    pretty_start = line_no
                    continue
                if s[:1] != "{":
                    if s.startswith(("-- ", "id: ", "event: ", CATALOG)) or s == "--":
                        ignored += 1
                    else:
                        issues.append(ctx.issue(line_no, "not a journal JSON object", line))
                    continue
                obj = _load(loads, s)
                if obj is None:
                    issues.append(ctx.issue(line_no, "invalid JSON", line))
                    continue
                mapper.add(line_no, _fields(obj))
                parsed += 1
            ctx.parsed(parsed)
            ctx.ignored(ignored)
            yield from issues
            yield from sink.drain()
        if pretty is not None:
            n = len(pretty)
            obj = _load(loads, "\n".join(pretty).rstrip().rstrip(",") + "\n}")
            if obj is None:
                yield ctx.issue(pretty_start, f"truncated json-pretty object ({n} lines)", "{")
                ctx.ignored(n - 1)
            else:
                mapper.add(pretty_start, _fields(obj))
                ctx.parsed(n)
        mapper.finish()
        yield from sink.close()


def _load(loads: Any, text: str) -> dict[str, Any] | None:
    try:
        obj = loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None
