"""``journalctl -o cat``: messages only, no timestamps: ``journal-cat``.

Every line is stored as an entry with ``ts`` NULL (the ingest summary says the file has no
timestamps); the analysis places them by their order in the file around a kill's own lines
(``postmortem/analysis/undated.py``). With no identifiers, routing works from the text:
systemd lifecycle sentences → ``unit_events``; a kernel OOM record (from its ``invoked
oom-killer`` / ``oom-kill:`` / kill line to the kill line) → the kernel stream; an engine's
lines (and later unclassified lines) → one stream of that engine.

>>> out, ctx = run_parser(JournalCatParser(), "llm-qwen.service: Failed with result 'oom-kill'.")
>>> out[0].unit, out[0].action, out[0].result, out[0].ts
('llm-qwen.service', 'failed', 'oom-kill', None)
>>> ctx.notes
['no timestamps (journalctl -o cat)']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import ClassVar

from .. import register
from ..base import Head, LineChunk, Output, ParseContext, Parser, run_parser
from . import systemd
from .short import CATALOG, JOURNAL_TABLES, StampParser
from .sink import JournalSink

__all__ = ["JournalCatParser", "run_parser"]

NOTE = "no timestamps (journalctl -o cat)"


@register
class JournalCatParser(Parser):
    """journalctl cat (see the module docstring)."""

    name = "journal-cat"
    description = "journalctl -o cat (messages only; no timestamps)"
    tables: ClassVar[tuple[str, ...]] = JOURNAL_TABLES
    priority = 10
    appendable = True

    def sniff(self, head: Head) -> int:
        stamps = StampParser(ParseContext(year=2000))
        units = stamped = lines = 0
        for line in head.lines:
            if not line:
                continue
            lines += 1
            if stamps.parse(line) is not None:
                stamped += 1
                continue
            lc = systemd.classify(line)
            if lc is not None and lc.unit is not None:
                units += 1
        if not lines or stamped > lines // 10:
            return 0
        # systemd's lifecycle sentences never appear in a program's own log: two of them
        # among unstamped lines mean journalctl -o cat (even when a server's lines dominate)
        return 0 if units == 0 else (45 if units == 1 else 92)

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        ctx.note(NOTE)
        sink = JournalSink(ctx)
        sink.cat_mode = True
        entry = sink.entry
        host = ctx.host
        for chunk in chunks:
            parsed = ignored = 0
            for line_no, line in chunk:
                if not line or line == "--" or line.startswith(("-- ", CATALOG)):
                    ignored += 1
                    continue
                entry(line_no, None, None, None, None, host, None, None, None, None, None, None, line)
                parsed += 1
            ctx.parsed(parsed)
            ctx.ignored(ignored)
            yield from sink.drain()
        yield from sink.close()
