"""CRI log files (``/var/log/pods/<ns>_<pod>_<uid>/<container>/<n>.log``): partial records joined.

A container runtime writes each line a container prints as ``<RFC 3339 time> <stream> <F|P>
<text>``; a line longer than its buffer (16 KiB in containerd), or a read that ended without a
newline (CRI-O), is cut into ``P`` (partial) records ended by an ``F`` one, per stream. The
engines' parsers read one record at a time, so :func:`join_partials` puts each logical line
back together before they see it: the joined line (the first record's time and stream, tag
``F``) takes the first record's line number, and the records it took in become blank lines
(counted as ignored). Files that do not start with a CRI record pass through untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

from ...engines import Engine, EngineStream, engines
from ...lazyre import lazy_re
from ...timeutil import parse_iso
from .. import register
from ..base import Head, LineChunk, Output, ParseContext, Parser

CRI_RECORD = lazy_re(
    r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})) "
    r"(?P<stream>stdout|stderr) (?P<tag>[FP])(?::\S*)? ?"
)
#: a logical line longer than this is passed on in pieces (as the runtime wrote it)
MAX_JOINED = 1 << 20
#: lines held back waiting for the end of a partial line that crosses chunks
MAX_HELD_LINES = 1 << 16


def _join(lines: list[str], final: bool) -> int:
    """Join the partial records of ``lines`` in place; returns how many trailing lines belong
    to a logical line not yet ended (0 when ``final``: then it is passed on as far as it goes)."""
    open_at: dict[str, int] = {}  # stream → index of its first pending record
    parts: dict[str, list[str]] = {}
    size: dict[str, int] = {}
    for i, line in enumerate(lines):
        m = CRI_RECORD.match(line)
        if m is None:
            continue
        stream, text = m.group("stream"), line[m.end() :]
        if stream not in open_at:
            if m.group("tag") == "F":
                continue
            open_at[stream], parts[stream], size[stream] = i, [text], len(text)
            continue
        parts[stream].append(text)
        size[stream] += len(text)
        lines[i] = ""
        if m.group("tag") == "F" or size[stream] > MAX_JOINED:
            first = open_at.pop(stream)
            head = CRI_RECORD.match(lines[first])
            assert head is not None
            lines[first] = f"{head.group('ts')} {stream} F " + "".join(parts.pop(stream))
    if final or not open_at:
        for stream, first in open_at.items():  # the file ends inside a line: keep what there is
            head = CRI_RECORD.match(lines[first])
            assert head is not None
            lines[first] = f"{head.group('ts')} {stream} P " + "".join(parts[stream])
        return 0
    return len(lines) - min(open_at.values())


def join_partials(chunks: Iterable[LineChunk]) -> Iterator[LineChunk]:
    """The chunks of a file with CRI partial records joined (other files unchanged).

    >>> c = LineChunk.from_lines(1, ["2026-01-15T10:00:05.1Z stdout P ab", "2026-01-15T10:00:05.2Z stdout F cd",
    ...                              "2026-01-15T10:00:06Z stdout F ef"])
    >>> [x.lines for x in join_partials([c])]
    [['2026-01-15T10:00:05.1Z stdout F abcd', '', '2026-01-15T10:00:06Z stdout F ef']]
    """
    it = iter(chunks)
    first = next(it, None)
    if first is None:
        return
    if not len(first) or not CRI_RECORD.match(first.line(0)):
        yield first
        yield from it
        return
    held: list[str] = []
    held_from = first.first_line_no
    for c in chain([first], it):
        if not held:
            held_from = c.first_line_no
        held.extend(c.lines)
        keep = _join(held, final=len(held) > MAX_HELD_LINES)
        done = held[: len(held) - keep]
        if done:
            yield LineChunk.from_lines(held_from, done)
        held = held[len(held) - keep :]
        held_from += len(done)
    if held:
        _join(held, final=True)
        yield LineChunk.from_lines(held_from, held)


def _record_text(line: str) -> str | None:
    m = CRI_RECORD.match(line)
    return line[m.end() :] if m else None


def engine_of(lines: Iterable[str], unit: str | None) -> Engine | None:
    """The engine whose server wrote these CRI records (its lines, or a unit named after it)."""
    texts = [t for t in map(_record_text, lines) if t is not None]
    for engine in engines().values():
        if any(engine.looks_like(t) for t in texts[:200]):
            return engine
    return next((e for e in engines().values() if unit and e.names(unit.rsplit("/", 1)[-1])), None)


@register
class CriLog(Parser):
    """A container's CRI log file whose records an inference engine wrote: the records' text
    goes through the engine's message-level stream with the record's exact time and the unit
    the file's path names (``k8s:<namespace>/<pod>/<container>``)."""

    name = "k8s-cri"
    description = "CRI log files of an engine's container (/var/log/pods/…/<n>.log, P records joined)"
    tables = ("server_configs", "server_events", "server_stats", "http_requests", "cuda_ooms")
    priority = 50
    appendable = True

    def sniff(self, head: Head) -> int:
        lines = [ln for ln in head.lines[:50] if ln.strip()]
        if not lines or sum(1 for ln in lines if CRI_RECORD.match(ln)) * 2 < len(lines):
            return 0
        return 95 if engine_of(lines, None) is not None else 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        stream: EngineStream | None = None
        for chunk in join_partials(chunks):
            if stream is None:
                engine = engine_of(chunk.lines, ctx.unit)
                if engine is None:
                    ctx.ignored(len(chunk))
                    continue
                stream = engine.new_stream(ctx, host=ctx.host, unit=ctx.unit, pid=None)
            yield from self._chunk(chunk, stream, ctx)
        if stream is not None:
            yield from stream.close()

    @staticmethod
    def _chunk(chunk: LineChunk, stream: EngineStream, ctx: ParseContext) -> Iterator[Output]:
        for line_no, line in chunk:
            m = CRI_RECORD.match(line)
            if m is None:
                if line.strip():
                    yield ctx.issue(line_no, "not a CRI log record", line)
                else:
                    ctx.ignored()
                continue
            ts = parse_iso(m.group("ts"), ctx.zone)
            yield from stream.feed(
                line_no, line[m.end() :], ts=ts, ts_raw=m.group("ts"), host=ctx.host, unit=ctx.unit
            )
            ctx.parsed()
