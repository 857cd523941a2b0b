"""``journalctl -o export`` streams (and binary journals read through it): ``journal-export``.

The Journal Export Format: entries separated by a blank line; ``NAME=value\\n`` for printable
single-line UTF-8 values, else ``NAME\\n`` + the value's length as a 64-bit little-endian
integer + the raw bytes + ``\\n``. Parsed as bytes; values are decoded as UTF-8 with U+FFFD for
bad bytes. Line accounting counts every ``\\n`` of the stream, including those inside binary
values (they belong to their entry). ``postmortem ingest`` reads binary ``*.journal`` files by
running ``journalctl --file=X -o export`` and feeding this parser.

>>> import struct
>>> msg = b"bad \\xff bytes\\nsecond line"
>>> data = (b"__REALTIME_TIMESTAMP=1741943205120000\\n__MONOTONIC_TIMESTAMP=11205120000\\n"
...         b"_BOOT_ID=3f1c2b9a8e7d4c6b9a1f2e3d4c5b6a79\\n_PID=5150\\nSYSLOG_IDENTIFIER=python3\\n"
...         b"MESSAGE\\n" + struct.pack("<Q", len(msg)) + msg + b"\\n\\n")
>>> out, ctx = run_parser(JournalExportParser(), data)
>>> row = [o for o in out if isinstance(o, TableBatch)][0].data.to_pylist()[0]
>>> row["message"], row["pid"], row["ts"].isoformat()
('bad � bytes\\nsecond line', 5150, '2025-03-14T09:06:45.120000+00:00')
>>> ctx.parsed_lines, ctx.ignored_lines   # 6 field lines + 1 newline inside MESSAGE; 1 blank
(8, 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import ClassVar

from ...lazyre import lazy_re
from .. import register
from ..base import BytesParser, Head, Output, ParseContext, TableBatch, run_parser
from .fields import WANTED_BYTES, FieldMapper
from .short import STRUCTURED_TABLES
from .sink import JournalSink

__all__ = ["JournalExportParser", "TableBatch", "run_parser"]

_NAME = lazy_re(rb"[A-Z0-9_]+")
#: a binary field longer than this is taken as corruption, not data
MAX_BINARY_FIELD = 64 << 20


class _State:
    """Parsing state carried across byte blocks."""

    __slots__ = (
        "entry_line",
        "entry_lines",
        "fields",
        "ignored",
        "issues",
        "line_no",
        "message_line",
        "open",
        "parsed",
    )

    def __init__(self) -> None:
        self.line_no = 1  # number of the next physical line
        self.fields: dict[str, str] = {}
        self.entry_line = 0
        #: the line of the entry's MESSAGE field (0: none yet): what a citation points at, so
        #: that the line quoted in a report is the message, not the entry's __CURSOR line
        self.message_line = 0
        self.entry_lines = 0
        self.parsed = 0
        self.ignored = 0
        self.issues: list[Output] = []
        #: the bytes consumed last did not end with a newline (a line of the current entry is
        #: still open: it counts when its newline comes, or once at the end of the stream)
        self.open = False


@register
class JournalExportParser(BytesParser):
    """The journal export format (see the module docstring); also binary ``*.journal`` files."""

    name = "journal-export"
    description = "journalctl -o export streams and binary journal files (via journalctl)"
    tables: ClassVar[tuple[str, ...]] = STRUCTURED_TABLES
    priority = 10

    def sniff(self, head: Head) -> int:
        data = head.data
        first = data.split(b"\n", 1)[0]
        if first.startswith((b"__CURSOR=", b"__REALTIME_TIMESTAMP=", b"__SEQNUM=")):
            return 95
        names = 0
        for line in head.lines[:40]:
            eq = line.find("=")
            if eq > 0 and _NAME.fullmatch(line[:eq].encode()):
                names += 1
            elif line and not (eq < 0 and _NAME.fullmatch(line.encode())):
                return 0
        return 80 if names >= 3 and ("\nMESSAGE=" in head.text or "\nMESSAGE\n" in head.text) else 0

    def parse_bytes(self, blocks: Iterable[bytes], ctx: ParseContext) -> Iterator[Output]:
        sink = JournalSink(ctx)
        mapper = FieldMapper(ctx, sink, has_null=False)
        st = _State()
        pending = b""
        for block in blocks:
            data = pending + block if pending else block
            pos = self._consume(data, st, mapper, ctx, final=False)
            pending = data[pos:]
            yield from self._flush(st, ctx, sink)
        if pending:
            self._consume(pending, st, mapper, ctx, final=True)
        if st.open:  # the stream ended inside an entry's line
            st.entry_lines += 1
            st.line_no += 1
        self._end_entry(st, mapper)
        mapper.finish()
        yield from self._flush(st, ctx, sink)
        yield from sink.close()

    @staticmethod
    def _flush(st: _State, ctx: ParseContext, sink: JournalSink) -> Iterator[Output]:
        ctx.parsed(st.parsed)
        ctx.ignored(st.ignored)
        st.parsed = st.ignored = 0
        if st.issues:
            issues, st.issues = st.issues, []
            yield from issues
        yield from sink.drain()

    @staticmethod
    def _end_entry(st: _State, mapper: FieldMapper) -> None:
        if st.entry_lines:
            if st.fields:
                mapper.add(st.message_line or st.entry_line, st.fields)
            st.parsed += st.entry_lines
        st.fields = {}
        st.entry_lines = 0
        st.message_line = 0

    def _consume(  # noqa: C901 - 21 > 15: listed in docs/dev/README.md
        self, data: bytes, st: _State, mapper: FieldMapper, ctx: ParseContext, *, final: bool
    ) -> int:
        """Consume complete lines/fields of ``data``; return where the unconsumed rest starts.
        With ``final``, the rest of the stream is ``data`` (a last line may lack its newline;
        a binary value may be truncated). Lines are counted by their newline bytes; a last
        line without one is counted at the end of the stream (``st.open``)."""
        pos = 0
        n = len(data)
        wanted = WANTED_BYTES
        fields = st.fields
        while pos < n:
            nl = data.find(b"\n", pos)
            if nl < 0:
                if not final:
                    return pos
                nl = n  # last line without a newline
            # a line ending "\r\n" (an export saved through a Windows tool): "\r" is never part
            # of a text field (journald writes a value with control bytes as a binary field)
            cr = 1 if data[nl - 1 : nl] == b"\r" and nl > pos else 0
            if nl - cr == pos:  # blank line: the entry ends
                self._end_entry(st, mapper)
                fields = st.fields
                st.ignored += 1
                st.line_no += 1
                st.open = False
                pos = nl + 1
                continue
            eq = data.find(b"=", pos, nl - cr)
            if eq > pos:
                if not st.entry_lines and not st.open:
                    st.entry_line = st.line_no
                name = data[pos:eq]
                if name in wanted:
                    fields[name.decode()] = data[eq + 1 : nl - cr].decode("utf-8", "replace")
                    if name == b"MESSAGE":
                        st.message_line = st.line_no
                if nl < n:
                    st.entry_lines += 1
                    st.line_no += 1
                    st.open = False
                else:
                    st.open = True
                pos = nl + 1
                continue
            name = data[pos : nl - cr]
            if not _NAME.fullmatch(name):
                st.issues.append(
                    ctx.issue(st.line_no, "not an export field", name.decode("utf-8", "replace"))
                )
                st.line_no += 1
                st.open = False
                pos = nl + 1
                continue
            if nl == n:  # final: a field name and nothing after it
                st.issues.append(
                    ctx.issue(
                        st.line_no, f"field {name.decode()} without a value at the end", "", unparsed=False
                    )
                )
                if not st.entry_lines:
                    st.entry_line = st.line_no
                st.open = True
                return n
            # binary field: NAME \n <u64 le length> <bytes> \n
            if nl + 9 > n and not final:
                return pos
            size = int.from_bytes(data[nl + 1 : nl + 9], "little") if nl + 9 <= n else -1
            if size > MAX_BINARY_FIELD:
                st.issues.append(
                    ctx.issue(st.line_no, f"binary field {name.decode()} too long ({size} bytes)", "")
                )
                st.line_no += 1
                st.open = False
                pos = nl + 1
                continue
            end = nl + 9 + size
            if (size < 0 or end >= n) and not final:
                return pos
            if not st.entry_lines and not st.open:
                st.entry_line = st.line_no
            if size < 0 or end >= n:  # truncated at the end of the stream
                value = data[nl + 9 : n] if size >= 0 else b""
                st.issues.append(
                    ctx.issue(
                        st.line_no,
                        f"binary field {name.decode()} truncated at the end of the stream",
                        "",
                        unparsed=False,
                    )
                )
                stop = n
            else:
                value = data[nl + 9 : end]
                if data[end : end + 1] != b"\n":
                    st.issues.append(
                        ctx.issue(
                            st.line_no,
                            f"binary field {name.decode()} not followed by a newline",
                            "",
                            unparsed=False,
                        )
                    )
                stop = end + 1
            if name in wanted:
                fields[name.decode()] = value.decode("utf-8", "replace")
                if name == b"MESSAGE":
                    st.message_line = st.line_no
            lines = data.count(b"\n", nl, stop)  # the name's newline and those inside the value
            st.entry_lines += lines
            st.line_no += lines
            st.open = data[stop - 1 : stop] != b"\n"
            pos = stop
        return pos
