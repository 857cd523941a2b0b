"""The one small interface every log source implements.

A parser is a class with a registered ``name``, a :meth:`Parser.sniff` that scores the first
lines of a file, and a streaming :meth:`Parser.parse` that turns chunks of lines into
records (:mod:`postmortem.records`), :class:`TableBatch` blocks (for vectorised parsers) and
:class:`ParseIssue` values. Parsers are pure: no database, no files, no clock; everything they
need about the file comes in the :class:`ParseContext`.

Contract for input (after insights-core):

* present but unusable (a line the parser cannot read) → a :class:`ParseIssue` with the line
  number and an excerpt; the line counts as *unparsed*;
* recognised but carrying nothing to store (banners, blank lines, stack frames) → the parser
  calls :meth:`ParseContext.ignored`;
* anything the parser stores from → :meth:`ParseContext.parsed`.

Every physical line must end up in exactly one of the three; the store checks
``parsed + ignored + unparsed == lines`` after each file.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from ..timeutil import UTC, BootAnchors, ForwardLocalizer, YearInference

if TYPE_CHECKING:
    import pyarrow as pa

    from ..records import Record

EXCERPT_CHARS = 200


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short, printable excerpt of a line for a parse issue.

    >>> excerpt("x" * 300)[-2:]
    'x…'
    >>> excerpt("a\\x00b")
    'a\\\\x00b'
    """
    cut = text[:limit]
    cut = "".join(c if c.isprintable() or c == "\t" else f"\\x{ord(c):02x}" for c in cut)
    return cut + ("…" if len(text) > limit else "")


#: columns :func:`repeated` made, by value: each request slices the longest made so far
_REPEATED: dict[str | None, pa.Array[Any]] = {}


def repeated(value: str | None, k: int) -> pa.Array[Any]:
    """A string column of ``k`` copies of ``value`` (nulls for None): a slice of one made in
    Arrow, and kept, for the longest ``k`` asked so far. A Python list of ``k`` references
    cost 7 ms per 20,000 rows, ``pyarrow.repeat`` 1.5 ms per 24,000 (about 0.1 s over a
    2M-line server log's blocks), a slice about 1 µs.

    >>> repeated("gpu-a", 2).to_pylist(), repeated(None, 1).to_pylist()
    (['gpu-a', 'gpu-a'], [None])
    >>> repeated("gpu-a", 3).to_pylist(), len(repeated("gpu-a", 1))
    (['gpu-a', 'gpu-a', 'gpu-a'], 1)
    """
    import pyarrow as _pa

    made = _REPEATED.get(value)
    if made is None or len(made) < k:
        if len(_REPEATED) >= 256:
            _REPEATED.clear()
        made = _pa.repeat(_pa.scalar(value, _pa.string()), max(k, 1024))
        _REPEATED[value] = made
    return made.slice(0, k)


#: ASCII bytes rarely seen in logs, rarest first: :func:`holds` looks for the first of them that
#: a word has
_RARE = b"QXZJqxzjKVWYkvwy"
#: anchors :func:`holds` verifies before it hands the rest of the block to ``bytes.__contains__``
_ANCHOR_TRIES = 2048


def holds(data: bytes, word: bytes) -> bool:
    """``word in data``, faster for a word that holds a rare byte and is absent.

    CPython's substring search steps about a byte at a time past text full of the word's own
    common letters: ``" hit an exception"`` costs 2.1–2.3 ms over a 4 MB block of server log lines
    or journal text. Here the word's rarest byte (:data:`_RARE`) is found with ``memchr`` and
    each place it occurs is checked: 0.3–0.5 ms. After :data:`_ANCHOR_TRIES` such places the
    plain search takes the rest, so text full of that byte (a hex dump) costs at most about
    0.4 ms more than the plain search alone.

    >>> holds(b"Scheduler hit an exception: x", b" hit an exception"), holds(b"0x0 0x1", b"x1 ")
    (True, False)
    """
    at = next((word.find(bytes((c,))) for c in _RARE if c in word), -1)
    if at < 0:
        return word in data
    anchor = word[at : at + 1]
    pos = data.find(anchor)
    for _ in range(_ANCHOR_TRIES):
        if pos < 0:
            return False
        if pos >= at and data.startswith(word, pos - at):
            return True
        pos = data.find(anchor, pos + 1)
    return pos >= 0 and data.find(word, max(0, pos - at)) >= 0


@dataclass(frozen=True, slots=True)
class ParseIssue:
    """A line (or a file-level condition) the parser could not use.

    ``unparsed=True`` means the line at ``line_no`` was not stored at all and counts against
    the line accounting; ``unparsed=False`` is a warning about a line that was stored (for
    example one report per file of unknown batch keys).
    """

    line_no: int
    reason: str
    excerpt: str
    unparsed: bool = True


@dataclass(frozen=True, slots=True)
class TableBatch:
    """A block of rows for one table, produced by a vectorised parser (an Arrow table whose
    columns are a subset of the table's columns, without ``source_id``)."""

    table: str
    data: pa.Table


#: what a parser yields (a string alias: the records module is imported only when a file is
#: parsed, not by every command that touches the parsers' types)
Output: TypeAlias = "Record | ParseIssue | TableBatch"


class LineChunk:
    """Consecutive physical lines of a file: ``first_line_no`` is 1-based.

    The lines are kept as one block — text, or the UTF-8 bytes as read (``data``; then the
    text is decoded only if a parser asks for it). :attr:`lines` (a list), :meth:`arrow` (an
    Arrow string array) and :meth:`buffer` (bytes and line offsets, for compiled kernels) are
    computed on demand so Python parsers and vectorised parsers both pay only for what they
    use. Line terminators are removed (``\\n`` and a ``\\r`` before it); a lone ``\\r`` inside a
    line (progress bars) is kept.

    >>> chunk = LineChunk(10, "a\\nb")
    >>> list(chunk)
    [(10, 'a'), (11, 'b')]
    >>> len(chunk), LineChunk(1, data=b"x\\ny\\nz").lines
    (2, ['x', 'y', 'z'])
    """

    __slots__ = (
        "_arrow", "_buffer", "_data", "_len", "_lines", "_newlines", "_text", "entry_end", "first_line_no"
    )  # fmt: skip

    def __init__(
        self,
        first_line_no: int,
        text: str | None = None,
        lines: list[str] | None = None,
        *,
        data: bytes | None = None,
        count: int | None = None,
        newlines: Any = None,
    ) -> None:
        """``text``, or ``data``: valid UTF-8 (the reader replaced what was not); ``count``:
        the number of lines, when the caller knows it; ``newlines``: the offsets of ``data``'s
        newlines (numpy ``int64``), when the caller found them (:meth:`buffer` needs them)."""
        if text is None and data is None:
            raise ValueError("a LineChunk needs text or data")
        self.first_line_no = first_line_no
        self._len = count
        self._text = text
        self._data = data
        self._lines = lines
        self._arrow: pa.Array | None = None  # type: ignore[type-arg]
        self._buffer: tuple[Any, Any, Any] | None = None
        self._newlines = newlines
        #: the reader cut the file here because the next line starts an entry (it is neither
        #: indented nor blank; see ``iter_lines(entries=True)``)
        self.entry_end = False

    @classmethod
    def from_lines(cls, first_line_no: int, lines: Sequence[str]) -> LineChunk:
        return cls(first_line_no, "\n".join(lines), list(lines))

    @property
    def text(self) -> str:
        if self._text is None:
            assert self._data is not None
            self._text = self._data.decode("utf-8", "replace")
        return self._text

    @property
    def data(self) -> bytes:
        """The lines as UTF-8 bytes, joined by newlines."""
        if self._data is None:
            assert self._text is not None
            self._data = self._text.encode("utf-8", "surrogatepass")
        return self._data

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.text.split("\n")
        return self._lines

    def __len__(self) -> int:
        if self._len is None:
            if self._lines is not None:
                self._len = len(self._lines)
            elif self._data is not None:
                self._len = self._data.count(b"\n") + 1
            else:
                self._len = self.text.count("\n") + 1
        return self._len

    def __iter__(self) -> Iterator[tuple[int, str]]:
        return enumerate(self.lines, start=self.first_line_no)

    def buffer(self) -> tuple[Any, Any, Any]:
        """The lines as UTF-8 bytes (a numpy ``uint8`` array, lines joined by newlines) and the
        start and end offset of each line (numpy ``int64``), for compiled kernels."""
        if self._buffer is None:
            import numpy as np

            data = np.frombuffer(self.data, dtype=np.uint8)
            breaks = np.flatnonzero(data == 10) if self._newlines is None else self._newlines
            self._newlines = None
            starts = np.empty(len(breaks) + 1, dtype=np.int64)
            starts[0] = 0
            starts[1:] = breaks + 1
            ends = np.empty(len(breaks) + 1, dtype=np.int64)
            ends[:-1] = breaks
            ends[-1] = len(data)
            self._buffer = (data, starts, ends)
        return self._buffer

    def line(self, index: int) -> str:
        """Line ``index`` (0-based within the chunk), decoded alone."""
        if self._lines is not None:
            return self._lines[index]
        _, starts, ends = self.buffer()
        return self.data[int(starts[index]) : int(ends[index])].decode("utf-8", "replace")

    def contains(self, word: str) -> bool:
        """Whether any line holds ``word``."""
        if self._text is None:
            return holds(self.data, word.encode())
        return word in self._text

    def arrow(self) -> pa.Array:  # type: ignore[type-arg]
        """The lines as an Arrow ``large_string`` array (split in C, no Python objects)."""
        if self._arrow is None:
            import pyarrow as _pa
            import pyarrow.compute as _pc

            pa: Any = _pa  # the stubs cannot follow binary → string splits
            pc: Any = _pc
            if self._lines is not None:
                self._arrow = pa.array(self._lines, type=pa.large_string())
            elif self._data is not None:
                block = pa.array([self._data], type=pa.large_binary())
                self._arrow = pc.split_pattern(block, b"\n").flatten().cast(pa.large_string())
            else:
                block = pa.array([self.text], type=pa.large_string())
                self._arrow = pc.split_pattern(block, "\n").flatten()
        return self._arrow


@dataclass(frozen=True)
class Head:
    """What :meth:`Parser.sniff` sees: the path, the first bytes and the first lines."""

    path: str
    data: bytes
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class ParseContext:
    """Everything a parser may know about the file it reads; it also keeps the line counts."""

    source_id: int = 1
    path: str = "<memory>"
    host: str | None = None
    zone: tzinfo = UTC
    zone_given: bool = False
    year: int | None = None
    mtime: datetime | None = None
    since: datetime | None = None
    boot_time: datetime | None = None
    at: datetime | None = None
    unit: str | None = None
    columns: list[str] | None = None
    anchors: BootAnchors = field(default_factory=BootAnchors)
    options: dict[str, str] = field(default_factory=dict)
    parsed_lines: int = 0
    ignored_lines: int = 0
    notes: list[str] = field(default_factory=list)
    #: zone-less stamps of this file in order, across the hour the clocks go back (made on use)
    _forward: ForwardLocalizer | None = field(default=None, repr=False, compare=False)

    def forward(self) -> ForwardLocalizer:
        """The file's :class:`~postmortem.timeutil.ForwardLocalizer` for its zone: a file's
        stamps in the repeated hour are read in order, the second time round as the second."""
        if self._forward is None or self._forward.zone is not self.zone:
            self._forward = ForwardLocalizer(self.zone)
        return self._forward

    def parsed(self, n: int = 1) -> None:
        self.parsed_lines += n

    def ignored(self, n: int = 1) -> None:
        self.ignored_lines += n

    def note(self, text: str) -> None:
        """A sentence for the ingest summary (e.g. 'no timestamps: journalctl -o cat')."""
        if text not in self.notes:
            self.notes.append(text)

    def issue(self, line_no: int, reason: str, text: str, *, unparsed: bool = True) -> ParseIssue:
        return ParseIssue(line_no, reason, excerpt(text), unparsed)

    def make_id(self, line_no: int) -> int:
        """A store-wide unique id for an event that starts at ``line_no`` of this source."""
        return (self.source_id << 32) | line_no

    def year_inference(self, first_month: int | None = None, first_day: int = 15) -> YearInference:
        """Year for year-less stamps: ``--year``, else the year of ``--since`` — unless that puts
        the first line over half a year after it (a file that begins on Dec 29 read with
        ``--since`` on Jan 1 began the year before) or over half a year before it while the next
        year puts it within a month after (``--since`` on Dec 31, a file from Jan 1) — else
        mtime (the choice is noted on the source: a wrong year is the first thing to check).

        >>> from datetime import datetime
        >>> jan1 = ParseContext(since=datetime(2026, 1, 1, 1, tzinfo=UTC))
        >>> [jan1.year_inference(m, d).base_year for m, d in ((12, 29), (1, 1), (3, 1), (4, 31), (13, 1))]
        [2025, 2026, 2026, 2026, 2026]
        >>> nov28 = ParseContext(since=datetime(2026, 11, 28, tzinfo=UTC))
        >>> dec31 = ParseContext(since=datetime(2026, 12, 31, 23, tzinfo=UTC))
        >>> nov28.year_inference(5, 28).base_year, dec31.year_inference(1, 1).base_year
        (2026, 2027)
        """
        if self.year is not None:
            years, why = YearInference(self.year), "--year"
        elif self.since is not None:
            local = self.since.astimezone(self.zone).replace(tzinfo=None)
            year = local.year
            if first_month is not None and 1 <= first_month <= 12:
                year = _year_near(local, first_month, first_day)
            why = (
                "the year of --since" if year == local.year else "--since (the first line is nearest it then)"
            )
            years = YearInference(year)
        else:
            mtime = self.mtime or datetime.now(UTC)
            years = YearInference.from_mtime(mtime.astimezone(self.zone), first_month)
            why = "the file's modification time (give --year if the file was copied)"
        self.note(f"year-less stamps: the first line's year, {years.base_year}, is from {why}")
        return years


def _year_near(since: datetime, month: int, day: int) -> int:
    """The year of a year-less first line (month, day) read with ``--since`` (naive local)."""
    half = timedelta(days=183)

    def at(y: int) -> datetime:
        return datetime(y, month, min(max(day, 1), 28))  # noqa: DTZ001 - (local, like since)

    y = since.year
    if at(y) > since + half:
        return y - 1
    if at(y) < since - half and at(y + 1) <= since + timedelta(days=31):
        return y + 1
    return y


InputKind = Literal["lines", "bytes"]


class Parser(abc.ABC):
    """Base class of all parsers. Subclasses set ``name``, ``description`` and ``tables``.

    ``input_kind = "bytes"`` parsers (journal export) get raw ``bytes`` blocks instead of
    :class:`LineChunk` objects and must still account for every ``\\n``-terminated line.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    tables: ClassVar[tuple[str, ...]]
    input_kind: ClassVar[InputKind] = "lines"
    #: run before other sources when a directory is ingested (boot anchors, units)
    priority: ClassVar[int] = 50
    #: a grown file may be parsed from its first new line: every line stands alone. False for
    #: formats whose lines need the ones before them (a CSV's header, a multi-line kernel OOM
    #: record, an export entry, a table snapshot): a grown file of those is parsed again whole
    appendable: ClassVar[bool] = False
    #: the reader cuts blocks before a line that starts an entry (not indented, not blank)
    #: where it can, and marks such chunks ``entry_end`` (parsers of multi-line entries)
    entry_cut: ClassVar[bool] = False
    #: the reader finds each chunk's newlines for :meth:`LineChunk.buffer` as it counts them
    #: (one pass over marks it has anyway). False for a parser that rarely asks: a chunk finds
    #: them itself when asked (the ``--query-gpu`` fast path reads its rows from the bytes)
    line_offsets: ClassVar[bool] = True

    @abc.abstractmethod
    def sniff(self, head: Head) -> int:
        """Score 0–100: how sure this parser is that the file is its format."""

    @abc.abstractmethod
    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        """Stream records, table batches and parse issues from ``chunks``."""


class BytesParser(Parser):
    input_kind: ClassVar[InputKind] = "bytes"

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        raise TypeError(f"{self.name} reads bytes: use parse_bytes")

    @abc.abstractmethod
    def parse_bytes(self, blocks: Iterable[bytes], ctx: ParseContext) -> Iterator[Output]:
        """Stream outputs from raw byte blocks."""


def chunks_of(lines: Iterable[str], first_line_no: int = 1, size: int = 4096) -> Iterator[LineChunk]:
    """Group an iterable of lines into :class:`LineChunk` objects (tests, sub-parsers)."""
    buf: list[str] = []
    start = first_line_no
    for line in lines:
        buf.append(line)
        if len(buf) >= size:
            yield LineChunk.from_lines(start, buf)
            start += len(buf)
            buf = []
    if buf:
        yield LineChunk.from_lines(start, buf)


def run_parser(
    parser: Parser, text: str | bytes, ctx: ParseContext | None = None
) -> tuple[list[Output], ParseContext]:
    """Parse a whole text in memory (tests and doctests); returns outputs and the context."""
    ctx = ctx or ParseContext()
    if isinstance(parser, BytesParser):
        data = text.encode() if isinstance(text, str) else text
        return list(parser.parse_bytes([data], ctx)), ctx
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not text:
        return [], ctx
    text = text.replace("\r\n", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return list(parser.parse([LineChunk(1, text)], ctx)), ctx
