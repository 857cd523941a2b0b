"""The vectorised path of ``journal-short``: whole chunks in Arrow compute, Python only per
distinct stamp, per distinct identifier token and per line that needs routing.

Most lines of a journal or syslog file have one layout: ``<stamp> <host> <ident>[<pid>]:
<message>`` with a stamp of a fixed number of space-separated tokens (the file's mode). Such
lines are split by Arrow (``split_pattern`` with a bounded split count), stamps are parsed once
per distinct value (zone-offset ISO stamps and epoch seconds in Arrow, the rest by
:class:`~.short.StampParser`; with the fraction split off, so precise modes parse once per
second), and identifier tokens once per distinct value. Every other line — continuation
lines, header and catalog lines, host-less or padded-day lines, garbage — goes through the
per-line reference path in line order; lines that need routing (systemd, kernel,
systemd-oomd, earlyoom, inference-server candidates) are routed in line order with their
complete messages.

Inference servers' output is most of what such journals hold: the statistics and access lines
of a server's stream (one per identifier + pid, or unit) are stored by its engine's vectorised
pass (:meth:`postmortem.engines.Engine.fast_messages`, with the journal's time, host, unit and
pid), and only that stream's other lines are fed to its message-level stream one by one, in
line order (:class:`_FastEngine`). Lines of a candidate that cannot start a stream (none of the
engines' start markers) only count against its check budget. The result is the same as the
per-line path's (property tests check it, with server output, kernel, systemd and odd lines).
"""

from __future__ import annotations

import bisect
import functools
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from itertools import repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from ..base import LineChunk, Output, repeated
from .short import CATALOG, FULL, ISO, MONTH, UNIX, _unescape, meta_line, split_line
from .sink import EPOCH, MAX_MESSAGE_CHARS, SPECIAL_IDENTS, _schema

if TYPE_CHECKING:
    from collections.abc import Callable

    from .short import ShortState

_US = timedelta(microseconds=1)
#: stands for a missing time in an int64 copy of a time column
_NO_TS = -(1 << 63)
#: a routed line past its engine check budget (see :meth:`_Router.plan`)
_HELD = object()
#: a routed line of a server candidate that cannot start a stream: it only counts against its
#: check budget (see :func:`_cannot_start`)
_LIGHT = object()
#: a routed kernel line with a plain message: stored as its kernel_messages row in a block
#: unless an OOM record is open when its turn comes
_PLAIN = object()
#: a chunk of fewer lines (about: 40 bytes a line) goes through the per-line path (Arrow
#: setup costs more)
MIN_LINES = 64


class _Row(NamedTuple):
    """One journal_entries row as the sink routes it (the columns of :func:`~.sink._schema`)."""

    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    monotonic_s: float | None
    host: str | None
    ident: str | None
    pid: int | None
    unit: str | None
    priority: int | None
    transport: str | None
    boot_id: str | None
    message: str


class _Todo(NamedTuple):
    """A line to route: its stored row, or a marker (:data:`_HELD`, :data:`_LIGHT`,
    :data:`_PLAIN`) for a stored line materialised only when needed."""

    line_no: int
    pos: int  # position among the chunk's stored lines; -1: a per-line entry
    entry: Any  # a _Row or a marker


#: a _Todo from a (line_no, pos, entry) triple, at a plain tuple's cost (no Python-level
#: ``__new__``: the routed kernel lines of a journal are many)
_new_todo: Callable[[tuple[int, int, Any]], _Todo] = partial(tuple.__new__, _Todo)


@dataclass(slots=True)
class _Split:
    """Where the compiled pass (:func:`~.kernels.split_lines`) found each line's fields, per
    line of the chunk (NumPy arrays of the chunk's line count)."""

    buf: Any  # the chunk's bytes
    starts: Any  # where each line starts in ``buf``
    ends: Any  # and where it ends
    ok: Any  # a regular line (after :meth:`VectorShort._read_stamps`: with a time)
    stamp_end: Any
    host_end: Any
    itok_end: Any  # where the identifier token ends
    frac_us: Any  # the stamp's fraction of a second
    ts_us: Any  # the time, UTC microseconds (where ``ts_ok``)
    ts_ok: Any
    inferred_of: Any = None  # index into ``inferred`` of each line's stamp (-1: none)
    inferred: Any = None  # what was inferred of each distinct stamp (Arrow strings)


@dataclass(slots=True)
class _Tokens:
    """The chunk's distinct identifier tokens (``ident[pid]``), each read once."""

    of: Any  # token index of each line of the chunk (-1: not a regular line)
    ids: list[str | None] = field(default_factory=list)
    pids: list[int | None] = field(default_factory=list)
    units: list[str | None] = field(default_factory=list)
    limits: list[int] = field(default_factory=list)  # JournalSink.route_limit of each
    wants: list[bool] = field(default_factory=list)  # whether its lines need routing
    keys: list[Any] = field(default_factory=list)  # its routing key: unit or (identifier, pid)
    special: list[bool] = field(default_factory=list)  # its identifier is in SPECIAL_IDENTS
    #: its identifier or unit is named after an engine (JournalSink.names_engine)
    named: list[bool] = field(default_factory=list)


#: what an identifier token says, whatever the chunk: (identifier, pid, unit, routing key,
#: identifier in SPECIAL_IDENTS, named after an engine)
_TokenInfo = tuple[str | None, int | None, str | None, Any, bool, bool]


@dataclass(slots=True)
class _Cols:
    """The chunk's stored lines (the vector pass's rows), as Arrow columns, in line order."""

    ok_idx: Any  # each one's line index in the chunk (NumPy)
    tix: Any  # each one's identifier token (NumPy)
    line_no: Any
    ts: Any
    ts_raw: Any
    ts_inferred: Any
    host: Any
    ident: Any
    pid: Any
    unit: Any
    want: Any  # whether it needs routing
    message: Any  # rsyslog escapes undone
    raw_msgs: Any  # as in the file

    @property
    def m(self) -> int:
        return len(self.ok_idx)


class VectorShort:
    def __init__(self, state: ShortState) -> None:
        self.state = state
        self.layout: tuple[int, int] | None = None  # (tokens in the stamp, fraction position)
        self.tried = 0
        self.kind: str | None = None
        self._stamps: dict[str, tuple[int | None, str | None]] = {}
        #: each identifier token's info, kept from chunk to chunk (a journal's tokens repeat)
        self._token_info: dict[str, _TokenInfo] = {}

    # ------------------------------------------------------------------ layout

    def _learn(self, chunk: LineChunk) -> bool:
        """Take the layout from the first regular line of the file (with a scratch stamp
        parser: the file's own must see its stamps in line order)."""
        from ..base import ParseContext
        from .short import StampParser

        stamps = StampParser(ParseContext(year=2000, zone=self.state.ctx.zone))
        data = chunk.data
        head = data[: 64 << 10]
        lines = head.decode("utf-8", "replace").split("\n", 200)[:200]
        if len(head) < len(data) and len(lines) > 1:
            lines = lines[:-1]  # the last one may be cut
        for line in lines:
            c = line[:1]
            if not c or c in " \t-░":
                continue
            st = stamps.parse(line)
            if st is None:
                continue
            _ts, raw, _inferred, _mono, pos, kind = st
            host, itok, _ = split_line(line, pos)
            if kind not in (ISO, UNIX, MONTH, FULL) or host is None or itok is None:
                return False
            if "  " in raw:
                if kind != MONTH:
                    return False
                raw = " ".join(raw.split())  # a space-padded day
            frac = -1
            dot = raw.find(".")
            if dot > 0 and raw[dot + 1 : dot + 7].isdigit() and not raw[dot + 7 : dot + 8].isdigit():
                frac = dot
            if not raw[: frac if frac >= 0 else len(raw)].isascii():
                return False  # byte offsets must be character offsets up to the fraction
            self.layout = (raw.count(" ") + 1, frac)
            self.kind = kind
            return True
        return False

    # ------------------------------------------------------------------ one chunk

    def chunk(self, chunk: LineChunk) -> list[Output] | None:
        """Process one chunk (complete entry groups); None → use the per-line path.

        The stages: split the lines (:meth:`_split`), read the identifier tokens
        (:meth:`_tokens`) and the stamps the compiled pass left (:meth:`_read_stamps`), gather
        the stored lines' columns (:func:`_columns`), take the other lines through the per-line
        logic (:class:`_PerLine`), route what needs routing in line order (:class:`_Router`)
        and hand over the blocks (:meth:`_outputs`)."""
        if not self._ready(chunk):
            return None
        split = self._split(chunk)
        if split is None:
            return None
        tokens = self._tokens(split)
        if self.kind == MONTH and self._entries_left_out(chunk, split.ok):
            return None  # year inference must see those stamps in line order
        if not self._read_stamps(split):
            return None
        cols = _columns(chunk, split, tokens)
        rest = _PerLine(self.state, chunk, cols)
        rest.run(split.ok)
        patches = rest.complete()
        router = _Router(self.state.sink, cols, tokens, rest, patches)
        router.run(chunk)
        return self._outputs(cols, rest, router, patches)

    def _ready(self, chunk: LineChunk) -> bool:
        """Whether the file's layout is known and the chunk is worth the vector pass."""
        if self.layout is None and (self.tried > 3 or not self._learn(chunk)):
            self.tried += 1
            if self.tried > 3:
                self.state.vector = None  # not a regular file: per-line from now on
            return False
        return len(chunk.data) >= MIN_LINES * 40

    def _split(self, chunk: LineChunk) -> _Split | None:
        """The fields of each line (:func:`~.kernels.split_lines`); None when the chunk is
        mostly irregular or holds a boot marker."""
        import numpy as np

        from .kernels import split_lines

        assert self.layout is not None
        k, frac = self.layout
        buf, starts, ends = chunk.buffer()
        n = len(starts)
        s = _Split(
            buf=buf,
            starts=starts,
            ends=ends,
            ok=np.empty(n, dtype=bool),
            stamp_end=np.zeros(n, dtype=np.int64),
            host_end=np.zeros(n, dtype=np.int64),
            itok_end=np.zeros(n, dtype=np.int64),
            frac_us=np.empty(n, dtype=np.int64),
            ts_us=np.zeros(n, dtype=np.int64),
            ts_ok=np.empty(n, dtype=bool),
        )
        cand = np.empty(n, dtype=bool)
        month_pad, iso = self.kind == MONTH and k == 3, self.kind == ISO
        fields = (s.stamp_end, s.host_end, s.itok_end, s.frac_us, s.ts_us, s.ts_ok)
        count = split_lines(buf, starts, ends, k, frac, month_pad, iso, cand, s.ok, *fields)
        if count < n // 2:
            return None  # mostly irregular lines: the per-line path is as fast
        if _boot_marker(chunk, buf, starts, ends, s.ok):
            return None  # a boot marker switches the boot id in line order
        return s

    def _tokens(self, split: _Split) -> _Tokens:
        """Identifier tokens: each read once (:meth:`_token`), their routing limits at once."""
        import numpy as np
        import pyarrow.compute as pc

        from ..jit import spans_to_arrow

        tok_rows = np.flatnonzero(split.ok)
        spans = spans_to_arrow(split.buf, split.host_end[tok_rows] + 1, split.itok_end[tok_rows])
        di: Any = pc.dictionary_encode(spans)
        known = self._token_info
        if len(known) > 1 << 17:
            known.clear()
        infos = [known.get(t) or self._token(t) for t in di.dictionary.to_pylist()]
        tokens = _Tokens(of=np.full(len(split.ok), -1, dtype=np.int64))
        if infos:
            ids, pids, units, keys, special, named = (list(c) for c in zip(*infos, strict=True))
            limits = self.state.sink.route_limits(keys, special)
            tokens.ids, tokens.pids, tokens.units, tokens.keys = ids, pids, units, keys
            tokens.special, tokens.named, tokens.limits = special, named, limits
            tokens.wants = [lim != 0 for lim in limits]
        tokens.of[tok_rows] = di.indices.to_numpy(zero_copy_only=False)
        return tokens

    def _token(self, tok: str) -> _TokenInfo:
        ident, pid, unit = self.state.ident(tok)
        info = (
            ident,
            pid,
            unit,
            unit or (ident, pid),
            ident in SPECIAL_IDENTS,
            self.state.sink.names_engine(ident, unit),
        )
        self._token_info[tok] = info
        return info

    def _read_stamps(self, split: _Split) -> bool:
        """The stamps the compiled pass did not convert: once per distinct value, in order of
        first appearance (year inference). False: a stamp falls in a repeated hour."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from ..jit import gather_spans, large_strings

        assert self.layout is not None
        _k, frac = self.layout
        unread = np.flatnonzero(split.ok & ~split.ts_ok)
        if len(unread):
            offsets, keys_data = gather_spans(
                split.buf, split.starts[unread], split.stamp_end[unread], frac, 7
            )
            d: Any = pc.dictionary_encode(large_strings(offsets, keys_data))
            values = self._stamp_values(d.dictionary.to_pylist())
            if values is None:
                return False
            us_np, known, inferred = values
            idx = d.indices.to_numpy(zero_copy_only=False)
            split.ts_us[unread] = us_np[idx] + split.frac_us[unread]
            split.ts_ok[unread] = known[idx]
            if any(x is not None for x in inferred):
                split.inferred_of = np.full(len(split.ok), -1, dtype=np.int64)
                split.inferred_of[unread] = idx
                split.inferred = pa.array(inferred, pa.string())
        split.ok &= split.ts_ok
        return True

    def _stamp_values(self, keys: list[str]) -> tuple[Any, Any, list[str | None]] | None:
        """Each distinct stamp's time (UTC microseconds), whether it has one and what was
        inferred; None when one falls in the hour that repeats when clocks go back (one value
        can be two instants, told apart only in line order)."""
        import numpy as np

        stamps = self.state.stamps
        cache = self._stamps
        if len(cache) > 1 << 17:
            cache.clear()
        nu = len(keys)
        us_np = np.zeros(nu, dtype=np.int64)
        known = np.zeros(nu, dtype=bool)
        inferred: list[str | None] = [None] * nu
        last_folded = stamps.forward.last
        for q, u in enumerate(keys):
            hit = cache.get(u)
            if hit is None:
                stamps.forward.folded = False
                ts, inf, _kind = stamps.stamp(u)
                if stamps.forward.folded:
                    stamps.forward.last = last_folded
                    return None
                hit = cache[u] = ((ts - EPOCH) // _US if ts is not None else None, inf)
            us, inferred[q] = hit
            if us is not None:
                us_np[q] = us
                known[q] = True
        return us_np, known, inferred

    def _outputs(self, cols: _Cols, rest: _PerLine, router: _Router, patches: dict[int, str]) -> list[Output]:
        """Hand over the chunk's blocks: the plain kernel lines' rows, then its
        journal_entries (stored lines and per-line entries, in line order)."""
        import numpy as np
        import pyarrow as _pa
        import pyarrow.compute as _pc

        pa: Any = _pa
        pc: Any = _pc
        state = self.state
        sink = state.sink
        if router.plain_rows:
            sink.add_output(_kernel_rows(pa, np, router.plain_rows, cols, rest.boot))
        m = cols.m
        message = _patch(pa, pc, cols.message, patches, m) if patches else cols.message
        unit = _patch(pa, pc, cols.unit, router.unit_patches, m) if router.unit_patches else cols.unit
        schema = _schema()
        table = pa.Table.from_arrays(
            [
                cols.line_no,
                cols.ts,
                cols.ts_raw,
                cols.ts_inferred,
                pa.nulls(m, pa.float64()),
                cols.host,
                cols.ident,
                cols.pid,
                unit,
                pa.nulls(m, pa.int8()),
                pa.nulls(m, pa.string()),
                repeated(rest.boot, m),
                message,
            ],
            schema=schema,
        )
        if rest.extra:
            extra_cols = list(zip(*rest.extra.values(), strict=True))
            extra = pa.Table.from_arrays(
                [pa.array(col, type=f.type) for col, f in zip(extra_cols, schema, strict=True)], schema=schema
            )
            table = pa.concat_tables([table, extra]).sort_by("line_no")
        state.ctx.parsed(rest.parsed)
        state.ctx.ignored(rest.ignored)
        sink.add_table(table)
        out: list[Output] = list(rest.issues)
        out.extend(sink.drain(keep_last=False))
        return out

    @staticmethod
    def _entries_left_out(chunk: LineChunk, taken: Any) -> bool:
        """Whether lines the vector pass would leave out include entries (not continuation,
        header or blank lines)."""
        import numpy as np

        for i in np.flatnonzero(~taken).tolist():
            line = chunk.line(i)
            c = line[:1]
            if c == " ":
                if "月" in line[:5] or "월" in line[:5]:
                    return True
            elif c and c not in "\t-░":
                return True
        return False


def _columns(chunk: LineChunk, split: _Split, tokens: _Tokens) -> _Cols:
    """The stored lines' columns: messages gathered (rsyslog escapes undone), per-token
    fields taken, times and spans turned into Arrow arrays."""
    import numpy as np
    import pyarrow as _pa
    import pyarrow.compute as _pc

    from ..jit import spans_to_arrow, strings, to_arrow
    from .kernels import gather_messages

    pa: Any = _pa
    pc: Any = _pc
    buf = split.buf
    ok_idx = np.flatnonzero(split.ok)
    m = len(ok_idx)
    tix = tokens.of[ok_idx]
    tix_arr = to_arrow(tix, pa.int64())
    escaped = np.empty(m, dtype=bool)
    offsets, msg_data, n_escaped = gather_messages(
        buf, split.itok_end[ok_idx] + 1, split.ends[ok_idx], escaped
    )
    message = raw_msgs = strings(offsets, msg_data)
    if n_escaped:  # rsyslog's #012 / #011: a newline or a tab
        message = pc.replace_substring(pc.replace_substring(message, "#012", "\n"), "#011", "\t")
    if split.inferred_of is None:
        inferred = pa.nulls(m, pa.string())
    else:
        where = split.inferred_of[ok_idx]
        inferred = pc.take(split.inferred, to_arrow(where, pa.int64(), where >= 0))
    stamp_end = split.stamp_end[ok_idx]
    return _Cols(
        ok_idx=ok_idx,
        tix=tix,
        line_no=to_arrow(ok_idx + chunk.first_line_no, pa.int64()),
        ts=to_arrow(split.ts_us[ok_idx], pa.timestamp("us", tz="UTC")),
        ts_raw=spans_to_arrow(buf, split.starts[ok_idx], stamp_end),
        ts_inferred=inferred,
        host=spans_to_arrow(buf, stamp_end + 1, split.host_end[ok_idx]),
        ident=pc.take(pa.array(tokens.ids, pa.string()), tix_arr),
        pid=pc.take(pa.array(tokens.pids, pa.int32()), tix_arr),
        unit=pc.take(pa.array(tokens.units, pa.string()), tix_arr),
        want=pc.take(pa.array(tokens.wants, pa.bool_()), tix_arr),
        message=message,
        raw_msgs=raw_msgs,
    )


class _PerLine:
    """The lines the vector pass did not take, in line order, through the per-line logic:
    continuation lines (kept for the entry they continue), header, marker and catalog lines,
    and entries the vector pass could not split (kept as rows)."""

    def __init__(self, state: ShortState, chunk: LineChunk, cols: _Cols) -> None:
        self.state = state
        self.chunk = chunk
        self.cols = cols
        self.first = chunk.first_line_no
        self.boot = state.stamps.boot_id
        self.parsed = cols.m
        self.ignored = 0
        self.issues: list[Output] = []
        self.lines: list[str] = []  # the lines themselves
        self.extra: dict[int, _Row] = {}  # line index → per-line entry (in line order)
        self.cont: dict[int, list[str]] = {}  # entry line index → continuation texts
        self.msg_cols: dict[int, int] = {}  # entry line index → where its message starts
        self.ok_list: list[int] | None = None  # the stored lines' indices, when needed
        self.last_extra = -1  # line index of the last per-line entry
        self.last_break = -1  # line index of the last line that ends an entry (header, garbage)

    def run(self, ok: Any) -> None:
        import numpy as np

        rest = np.flatnonzero(~ok).tolist()
        chunk = self.chunk
        self.lines = [chunk.line(i) for i in rest]
        for i, line in zip(rest, self.lines, strict=True):
            self._line(i, line)
        if self.extra or self.ok_list is not None or self.cols.m:
            self.state.stamps.seen_entry = True

    def _line(self, i: int, line: str) -> None:
        c = line[:1]
        if c == " " or c == "\t":
            if not ("月" in line[:5] or "월" in line[:5]) or self.state.stamps.parse(line) is None:
                self._continuation(i, line)
                return
        elif (c == "-" and line.startswith("--")) or (c == "░" and line.startswith(CATALOG)):
            meta_line(self.first + i, line, self.state.stamps, self.state.sink)
            self.ignored += 1
            self.last_break = i  # a header, marker or catalog line ends the entry above
            return
        elif not c:
            self.ignored += 1
            return
        self._entry(i, line)

    def _stored(self) -> list[int]:
        if self.ok_list is None:
            self.ok_list = self.cols.ok_idx.tolist()
        return self.ok_list

    def _continuation(self, i: int, line: str) -> None:
        ok_list = self._stored()
        j = bisect.bisect_left(ok_list, i) - 1
        prev_ok = ok_list[j] if j >= 0 else -1
        prev = max(prev_ok, self.last_extra)
        if prev < 0 or prev < self.last_break:
            self.issues.append(
                self.state.ctx.issue(self.first + i, "continuation line before any entry", line)
            )
            return
        col = self.msg_cols.get(prev)
        if col is None:
            col = self.msg_cols[prev] = self._msg_col(prev)
        self.cont.setdefault(prev, []).append(line[col:] if not line[:col].strip() else line.lstrip())
        self.parsed += 1

    def _msg_col(self, index: int) -> int:
        """Where the message starts in line ``index`` (continuation lines are indented to it)."""
        q = bisect.bisect_left(self._stored(), index)
        line = self.chunk.line(index)
        return len(line) - len(self.cols.raw_msgs[q].as_py())

    def _entry(self, i: int, line: str) -> None:
        state = self.state
        st = state.stamps.parse(line)
        if st is None:
            self.issues.append(state.ctx.issue(self.first + i, "no journal/syslog timestamp", line))
            self.last_break = i
            return
        ts, raw, inf, mono, pos, _kind = st
        host, itok, mstart = split_line(line, pos)
        text = line[mstart:]
        if "#0" in text:
            text = _unescape(text)
        ident, pid, unit = state.ident(itok) if itok is not None else (None, None, None)
        host = host or state.ctx.host
        self.extra[i] = _Row(
            self.first + i, ts, raw, inf, mono, host, ident, pid, unit, None, None, self.boot, text
        )
        self.msg_cols[i] = mstart
        self.last_extra = i
        self.parsed += 1

    def complete(self) -> dict[int, str]:
        """Continuation lines complete their entries' messages: a per-line entry's row is
        replaced; returned, the stored lines' complete messages by position."""
        patches: dict[int, str] = {}
        if not self.cont:
            return patches
        ok_list = self._stored()
        for idx, texts in self.cont.items():
            row = self.extra.get(idx)
            q = bisect.bisect_left(ok_list, idx)
            base = row.message if row is not None else self.cols.message[q].as_py()
            full = "\n".join([base, *texts])[:MAX_MESSAGE_CHARS]
            if row is not None:
                self.extra[idx] = row._replace(message=full)
            else:
                patches[q] = full
        return patches


class _Router:
    """The chunk's lines that need routing (systemd, kernel, systemd-oomd, earlyoom, server
    candidates and streams), routed in line order with their complete messages; an engine's
    fast lines through :class:`_FastEngine`."""

    def __init__(
        self, sink: Any, cols: _Cols, tokens: _Tokens, rest: _PerLine, patches: dict[int, str]
    ) -> None:
        self.sink = sink
        self.cols = cols
        self.tokens = tokens
        self.rest = rest
        self.patches = patches
        self.boot = rest.boot
        self.first = rest.first
        self.fast: _FastEngine | None = None
        self.plain_rows: list[int] = []  # kernel lines stored as a block (see _PLAIN)
        self.unit_patches: dict[int, str] = {}  # position → the unit a systemd message names
        self._ts_np: Any = None  # the times as microseconds (pyarrow's tz-aware to_pylist is slow)
        self._hosts: dict[int, Any] | None = None  # position → host, for the plain kernel lines

    def run(self, chunk: LineChunk) -> None:
        import numpy as np
        import pyarrow.compute as pc

        routed: Any = pc.indices_nonzero(self.cols.want).to_numpy()
        held: dict[int, Any] = {}  # server candidates' lines past their check budget
        if len(routed) and any(lim > 0 for lim in self.tokens.limits):
            routed, held = _past_budget(np, routed, self.cols.tix, self.tokens.limits)
        if len(routed) or held:
            self.fast = _FastEngine.build(
                self.sink,
                np.concatenate([routed, *held.values()]) if held else routed,
                self.tokens,
                self.cols,
                self.patches,
                chunk.contains(" hit an exception"),
                lambda pos: self.route([_Todo(0, pos, self.row(pos))], settled=True),
            )
            if self.fast is not None:
                routed = routed[~self.fast.taken_of(routed)]
        if len(routed) or self.rest.extra or held:
            self.route(self.plan(routed, held))
        if self.fast is not None:
            self.fast.finish()
            self.fast = None

    def plan(self, routed: Any, held: dict[int, Any]) -> list[_Todo]:
        """What to route, in line order: complete rows, and markers for lines that may need
        no row (:data:`_LIGHT`, :data:`_PLAIN`, :data:`_HELD`)."""
        import numpy as np
        import pyarrow as _pa
        import pyarrow.compute as _pc

        pa: Any = _pa
        pc: Any = _pc
        cols, tokens, sink = self.cols, self.tokens, self.sink
        light = None
        if len(routed) and any(lim > 0 for lim in tokens.limits):
            light = _cannot_start(pa, pc, np, sink, cols.message, cols.tix, routed, tokens)
            # keys whose every routed line here is such a line: counted at once — unless a
            # line of this chunk's per-line path (host-less, odd) may start a stream first
            markers = sink.start_markers
            if light is not None and not any(m in line for line in self.rest.lines for m in markers):
                bulk = _bulk_checks(sink, np, cols.tix[routed], light, tokens)
                if bulk is not None:
                    routed, light = routed[~bulk], light[~bulk]
        plain = _plain_kernel(pa, pc, np, cols.message, cols.tix, routed, tokens.ids, self.patches)
        materialise = np.ones(len(routed), dtype=bool)  # routed as complete rows
        lanes: list[tuple[Any, Any]] = []
        for mask, marker in ((light, _LIGHT), (plain, _PLAIN)):
            if mask is not None and mask.any():
                materialise &= ~mask
                positions = routed[mask]
                lanes.append((positions, marker))
                if marker is _PLAIN:  # a kernel line goes to its host's stream
                    hosts = pc.take(cols.host, pa.array(positions)).to_pylist()
                    self._hosts = dict(zip(positions.tolist(), hosts, strict=True))
        lanes.extend((positions, _HELD) for positions in held.values())
        todo = self.rows(routed[materialise])
        if lanes:
            ln_np = cols.line_no.to_numpy()
            for positions, marker in lanes:
                todo.extend(
                    map(_new_todo, zip(ln_np[positions].tolist(), positions.tolist(), repeat(marker)))
                )
        todo.extend(_Todo(row.line_no, -1, row) for row in self.rest.extra.values())
        todo.sort(key=attrgetter("line_no"))
        return todo

    def times(self, positions: Any) -> list[Any]:
        """The stored lines' times at ``positions``, as datetimes."""
        if self._ts_np is None:
            import pyarrow as pa
            import pyarrow.compute as pc

            self._ts_np = pc.fill_null(self.cols.ts.cast(pa.int64()), _NO_TS).to_numpy()
        return [None if u == _NO_TS else EPOCH + _US * u for u in self._ts_np[positions].tolist()]

    def rows(self, positions: Any) -> list[_Todo]:
        """The stored lines at ``positions`` as complete rows to route."""
        import pyarrow as pa
        import pyarrow.compute as pc

        c = self.cols
        rp = pa.array(positions)
        ln, raw, inf, host, ident, pid, unit, msg = (
            pc.take(col, rp).to_pylist()
            for col in (c.line_no, c.ts_raw, c.ts_inferred, c.host, c.ident, c.pid, c.unit, c.message)
        )
        ts = self.times(positions)
        boot, patches = self.boot, self.patches
        return [
            _Todo(
                ln[q],
                pos,
                _Row(
                    ln[q],
                    ts[q],
                    raw[q],
                    inf[q],
                    None,
                    host[q],
                    ident[q],
                    pid[q],
                    unit[q],
                    None,
                    None,
                    boot,
                    patches.get(pos, msg[q]),
                ),
            )
            for q, pos in enumerate(positions.tolist())
        ]

    def row(self, q: int) -> _Row:
        """One stored line as a row (scalar access: cheaper than :meth:`rows` for one)."""
        import numpy as np

        c = self.cols
        return _Row(
            c.line_no[q].as_py(),
            self.times(np.array([q]))[0],
            c.ts_raw[q].as_py(),
            c.ts_inferred[q].as_py(),
            None,
            c.host[q].as_py(),
            c.ident[q].as_py(),
            c.pid[q].as_py(),
            c.unit[q].as_py(),
            None,
            None,
            self.boot,
            self.patches.get(q, c.message[q].as_py()),
        )

    def route(self, todo: list[_Todo], settled: bool = False) -> None:
        """Route ``todo`` in order; ``settled``: the fast lines before them are (the fast path
        feeding a line back)."""
        sink, hosts, boot, plain_rows = self.sink, self._hosts, self.boot, self.plain_rows
        fast = None if settled else self.fast
        # a run of plain kernel lines of one host: its kernel stream, and whether it is idle, are
        # those of the run's first line (storing a plain line as a row changes neither; asking
        # three calls a line took 0.1 s of a 2M-line journal's 100,000 kernel lines)
        idle_host: object = _NO_HOST
        for _ln, pos, entry in todo:
            if entry is _PLAIN:  # (inline: most routed lines of a journal are such lines)
                assert hosts is not None
                host = hosts[pos]
                if idle_host is not _NO_HOST and host == idle_host:
                    plain_rows.append(pos)
                    continue
                stream = sink.kernel_stream(host, boot)
                if stream is None:
                    continue
                if stream.idle():
                    plain_rows.append(pos)
                    idle_host = host
                    continue
                entry = self.row(pos)
            elif entry is _LIGHT or entry is _HELD:
                entry = self._candidate(pos, entry is _LIGHT, fast)
                if entry is None:
                    continue
            idle_host = _NO_HOST  # (routing a line may change the streams)
            if pos < 0 and not sink.wants(entry.ident, entry.pid, entry.unit):
                continue
            if fast is not None:
                if fast.defer(pos):
                    continue
                fast.before(pos, entry, self.cols.ok_idx, self.first)
            unit = sink.route_now(entry)
            if unit is not None:
                self._named_unit(pos, entry, unit)

    def _candidate(self, pos: int, light: bool, fast: _FastEngine | None) -> _Row | None:
        """Materialised only when needed: a candidate's line no engine can claim (``light``:
        only its check counts), or one past its check budget (routed only if its stream has
        started, or the budget came back)."""
        tokens = self.tokens
        t = int(self.cols.tix[pos])
        ident, pid, unit = tokens.ids[t], tokens.pids[t], tokens.units[t]
        if light:
            if self.sink.no_engine(ident, pid, unit):
                return None
        elif self.sink.route_limit(ident, pid, unit) == 0:
            return None
        if fast is not None and fast.defer(pos):
            return None
        return self.row(pos)

    def _named_unit(self, pos: int, entry: _Row, unit: str) -> None:
        """Store the unit a systemd message names in its row."""
        if pos >= 0:
            self.unit_patches[pos] = unit
        else:
            extra = self.rest.extra
            i = entry.line_no - self.first
            extra[i] = extra[i]._replace(unit=unit)


#: no run of idle plain kernel lines (:meth:`_Router.route`)
_NO_HOST = object()


def _past_budget(np: Any, routed: Any, tix_all: Any, limits: list[int]) -> tuple[Any, dict[int, Any]]:
    """The routed lines within their token's engine check budget, and per token those past
    it (each line's rank among its token's lines, in line order)."""
    tix = tix_all[routed]
    lim_of = np.array(limits, dtype=np.int64)
    # only the lines of tokens with a budget are ranked (most routed lines are a stream's)
    budgeted = np.flatnonzero(lim_of[tix] > 0)
    sub = tix[budgeted]
    order = np.argsort(sub, kind="stable")
    sorted_tix = sub[order]
    starts_at = np.searchsorted(sorted_tix, sorted_tix, side="left")
    rank = np.empty(len(sub), dtype=np.int64)
    rank[order] = np.arange(len(sub)) - starts_at
    beyond = np.zeros(len(tix), dtype=bool)
    beyond[budgeted[rank >= lim_of[sub]]] = True
    held: dict[int, Any] = {}
    if beyond.any():
        for t in np.unique(tix[beyond]).tolist():
            held[t] = routed[beyond & (tix == t)]
        routed = routed[~beyond]
    return routed, held


def _patch(pa: Any, pc: Any, col: Any, patches: dict[int, str], m: int) -> Any:
    import numpy as np

    mask = np.zeros(m, dtype=bool)
    order = sorted(patches)
    mask[order] = True
    return pc.replace_with_mask(col, pa.array(mask), pa.array([patches[i] for i in order], col.type))


def _boot_marker(chunk: LineChunk, buf: Any, starts: Any, ends: Any, regular: Any) -> bool:
    """Whether a line that is not a regular entry is a ``-- Boot … --`` or ``-- Reboot --``
    marker."""
    import numpy as np

    rest = np.flatnonzero(~regular)
    rest = rest[ends[rest] > starts[rest]]
    for i in rest[buf[starts[rest]] == 45].tolist():
        line = chunk.line(i)
        if line.startswith("-- Boot ") or line == "-- Reboot --":
            return True
    return False


def _plain_kernel(
    pa: Any,
    pc: Any,
    np: Any,
    message: Any,
    tix: Any,
    positions: Any,
    ids: list[str | None],
    patches: dict[int, str],
) -> Any:
    """Of the stored lines at ``positions``, the kernel lines whose message is plain (see
    :data:`~postmortem.parsers.kernel.stream.NOT_PLAIN`): a kernel stream with no open OOM
    record only stores them as rows. None when there are none."""
    from ..kernel.stream import NOT_PLAIN

    kernel = np.array([i == "kernel" for i in ids], dtype=bool)
    rows = kernel[tix[positions]]
    if not rows.any():
        return None
    q = np.flatnonzero(rows)
    msgs = pc.take(message, pa.array(positions[q]))
    busy = pc.fill_null(pc.match_substring_regex(msgs, NOT_PLAIN), True).to_numpy(zero_copy_only=False)
    rows[q[busy]] = False
    if patches:
        rows &= ~np.isin(positions, np.fromiter(patches, dtype=np.int64, count=len(patches)))
    return rows


def _kernel_rows(pa: Any, np: Any, rows: list[int], cols: _Cols, boot: str | None) -> Any:
    """The kernel_messages rows of the plain kernel lines at ``rows`` (as the kernel stream
    would store them: no level, sequence number or monotonic time in text modes)."""
    from ..base import TableBatch
    from ..kernel.stream import BATCH_SCHEMA

    take = pa.array(np.array(rows, dtype=np.int64))
    k = len(rows)
    table = pa.Table.from_arrays(
        [
            cols.line_no.take(take),
            cols.ts.take(take),
            cols.ts_raw.take(take),
            cols.ts_inferred.take(take),
            pa.nulls(k, pa.float64()),
            cols.host.take(take),
            repeated(boot, k),
            pa.nulls(k, pa.int8()),
            pa.nulls(k, pa.int64()),
            cols.message.take(take),
        ],
        schema=BATCH_SCHEMA,
    )
    return TableBatch("kernel_messages", table)


def _bulk_checks(sink: Any, np: Any, tix: Any, light: Any, tokens: _Tokens) -> Any:
    """Of the routed lines (their identifier tokens ``tix``), those that only count against
    their key's engine check budget (``light``) where every routed line of that key in this
    chunk is such a line: the counts are added at once (:meth:`JournalSink.no_engine_many`)
    and the lines need no routing one by one. None when nothing was counted."""
    ids, pids, units, limits = tokens.ids, tokens.pids, tokens.units, tokens.limits
    key_of = tokens.keys
    busy: set[Any] = {key_of[t] for t in np.unique(tix[~light]).tolist()}
    uniq, counts = np.unique(tix[light], return_counts=True)
    todo: list[tuple[Any, Any, Any, int]] = []
    chosen: list[int] = []
    for t, count in zip(uniq.tolist(), counts.tolist(), strict=True):
        if key_of[t] not in busy:
            todo.append((ids[t], pids[t], units[t], count))
            chosen.append(t)
    if not chosen:
        return None
    # keys with several tokens: all their tokens' lines are light here, count them once each
    bound = sum(1 for lim in limits if lim > 0)
    if not sink.no_engine_many(todo, bound):
        return None
    return light & np.isin(tix, np.array(chosen, dtype=np.int64))


def _cannot_start(
    pa: Any,
    pc: Any,
    np: Any,
    sink: Any,
    message: Any,
    tix_all: Any,
    positions: Any,
    tokens: _Tokens,
) -> Any:
    """Of the stored lines at ``positions``, those of server candidates (not streams yet) that
    cannot start a stream: not named after an engine, and none of the engines' start markers
    in the message (what their ``looks_like`` needs)."""
    markers = sink.start_markers
    if not markers:
        return None
    flags = [
        lim > 0 and not sp and not named
        for lim, sp, named in zip(tokens.limits, tokens.special, tokens.named, strict=True)
    ]
    rows = np.array(flags, dtype=bool)[tix_all[positions]]
    if not rows.any():
        return None
    q = np.flatnonzero(rows)
    msgs = pc.take(message, pa.array(positions[q]))
    maybe = pc.match_substring_regex(msgs, any_of(markers))
    rows[q[pc.fill_null(maybe, True).to_numpy(zero_copy_only=False)]] = False
    return rows


@functools.lru_cache(maxsize=8)
def any_of(words: tuple[str, ...]) -> str:
    """A regular expression (RE2's syntax, as Arrow's ``match_substring_regex`` reads it) that
    matches where any of ``words`` occurs: one search of the messages instead of one per word
    and their ORs (17 Arrow calls a chunk for the nine start markers, 1.2 ms).

    >>> print(any_of(("[", "a.b", "INFO ")))
    \\x{5B}|a\\x{2E}b|INFO\\x{20}
    """
    return "|".join(
        "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):X}}}" for c in w) for w in words
    )


class _FastEngine:
    """The statistics and access lines of one engine's streams, stored by the engine's
    vectorised path (:meth:`postmortem.engines.Engine.fast_messages`) with the journal's time,
    host, unit and pid.

    Streams that existed when the chunk began have all their fast lines set aside at once;
    a candidate's lines are set aside from the moment its stream starts (within the chunk).
    The other lines of those streams are still fed one by one in line order (the reference
    path); before each of them (and at the end of the chunk) the fast lines that precede it
    are settled: while the stream cannot take fast lines (a traceback's message is open, a
    death line waits for its exit code, another process spoke last) they are fed too, the
    rest only move the stream's time (the stream's ``note_given``). A stream fed from
    several identifier tokens in one chunk (one unit, several pids) stays per-line.

    Positions are those of the chunk's stored lines (the vector pass's rows)."""

    def __init__(
        self,
        engine: str,
        sink: Any,
        fr: Any,
        tix: Any,
        tokens: _Tokens,
        existing: dict[int, Any],
        candidates: set[int],
        ts_col: Any,
        slow: Any,
    ) -> None:
        import numpy as np

        self._np = np
        self.engine = engine
        self.sink = sink
        self.fr = fr
        self.tix = tix  # identifier token of each stored line
        self.ids, self.pids, self.units = tokens.ids, tokens.pids, tokens.units
        self.candidates = candidates
        self.ts_col = ts_col
        self.slow = slow
        self.accepted = fr.mask  # lines the fast path can store
        self.taken = np.zeros(len(tix), dtype=bool)  # lines it keeps
        self.streams: list[Any] = []
        self.stream_pid: list[int | None] = []
        self.tok_stream: dict[int, int] = {}  # token → stream index
        self.index: dict[int, int] = {}  # id(stream) → stream index
        self.pending: list[list[int]] = []  # lines set aside one by one, per stream
        self.pend: list[Any] = []  # lines set aside, per stream (sorted)
        self.ptr: list[int] = []  # settled so far, per stream
        for t, st in existing.items():
            s = self._register(t, st)
            mine = self.accepted & (tix == t)
            self.taken |= mine
            self.pend[s] = np.flatnonzero(mine)

    def _register(self, t: int, st: Any) -> int:
        s = len(self.streams)
        self.streams.append(st)
        self.stream_pid.append(self.pids[t] if self.pids[t] is not None else st.pid)
        self.tok_stream[t] = s
        self.index[id(st)] = s
        self.pending.append([])
        self.pend.append(None)
        self.ptr.append(0)
        return s

    @classmethod
    def build(
        cls,
        sink: Any,
        routed_pos: Any,
        tokens: _Tokens,
        cols: _Cols,
        patches: dict[int, str],
        maybe_hit: bool,
        slow: Any,
    ) -> _FastEngine | None:
        import numpy as np
        import pyarrow as _pa

        from ...engines import engines

        engine = next((e for e in engines().values() if e.fast_messages() is not None), None)
        if engine is None:
            return None
        fast = engine.fast_messages()
        pa: Any = _pa
        ids, pids, units, limits = tokens.ids, tokens.pids, tokens.units, tokens.limits
        if sink.cat_mode:
            return None
        # one token per stream (several → pids may alternate)
        eligible = [lim != 0 and not sp for lim, sp in zip(limits, tokens.special, strict=True)]
        shared = Counter(key for key, ok in zip(tokens.keys, eligible, strict=True) if ok)
        existing: dict[int, Any] = {}
        usable = np.zeros(len(limits), dtype=bool)
        candidates: set[int] = set()
        for t, (key, ok, lim) in enumerate(zip(tokens.keys, eligible, limits, strict=True)):
            if not ok:
                continue
            if lim == -1:
                st = sink.engine_stream(ids[t], pids[t], units[t])
                if st is None or st.engine != engine.name:
                    continue
                existing[t] = st
            if shared[key] == 1:
                usable[t] = True
                if lim != -1:
                    candidates.add(t)
        if not usable.any():
            return None
        tix_all = cols.tix
        m = len(tix_all)
        offered = np.zeros(m, dtype=bool)
        offered[routed_pos] = True
        offered &= usable[tix_all]
        if patches:
            offered[np.fromiter(patches, dtype=np.int64, count=len(patches))] = False
        if not offered.any():
            return None
        given = fast.Given(
            line_no=cols.line_no,
            ts=cols.ts,
            ts_raw=cols.ts_raw,
            ts_inferred=cols.ts_inferred,
            host=cols.host,
            unit=pa.nulls(m, pa.string()),  # set when the tables are handed over
            pid=pa.nulls(m, pa.int32()),
        )
        fr = fast.fast_messages(cols.message, given, rows=offered, maybe_hit=maybe_hit)
        if fr is None:
            return None
        return cls(engine.name, sink, fr, tix_all, tokens, existing, candidates, cols.ts, slow)

    def taken_of(self, positions: Any) -> Any:
        """Which of the stored lines at ``positions`` the fast path keeps for now."""
        return self.taken[positions]

    def _stream_of_candidate(self, t: int) -> int | None:
        s = self.tok_stream.get(t)
        if s is not None:
            return s
        if t not in self.candidates:
            return None
        st = self.sink.engine_stream(self.ids[t], self.pids[t], self.units[t])
        if st is None or st.engine != self.engine:
            return None
        return self._register(t, st)

    def defer(self, pos: int) -> bool:
        """A candidate's line that the fast path can store, its stream started: set it aside."""
        if pos < 0 or not self.accepted[pos]:
            return False
        t = int(self.tix[pos])
        if t not in self.candidates:
            return False
        s = self._stream_of_candidate(t)
        if s is None:
            return False
        self.taken[pos] = True
        self.pending[s].append(pos)
        return True

    def before(self, pos: int, entry: _Row, ok_idx: Any, first: int) -> None:
        """Settle the fast lines of ``entry``'s stream that come before it."""
        st = self.sink.engine_stream(entry.ident, entry.pid, entry.unit)
        if st is None:
            return
        s = self.index.get(id(st))
        if s is None:
            return
        np = self._np
        upto = pos if pos >= 0 else int(np.searchsorted(ok_idx, entry.line_no - first))
        self._settle(s, upto)

    def finish(self) -> None:
        """Settle every stream's remaining fast lines and hand over the tables (with each
        line's unit and pid as the stream gives them)."""
        import pyarrow as _pa
        import pyarrow.compute as _pc

        from ..base import TableBatch

        pa: Any = _pa
        pc: Any = _pc
        for s in range(len(self.streams)):
            self._settle(s, 1 << 62)
        if not self.tok_stream:
            return
        n_tok = max(self.tok_stream) + 1
        unit_tok: list[str | None] = [None] * n_tok
        pid_tok: list[int | None] = [None] * n_tok
        for t, s in self.tok_stream.items():
            unit_tok[t] = self.units[t] or self.streams[s].unit
            pid_tok[t] = self.stream_pid[s]
        units = pa.array(unit_tok, pa.string())
        pids = pa.array(pid_tok, pa.int32())
        for table, data, pos in self.fr.blocks:
            keep = self.taken[pos]
            if not keep.any():
                continue
            if not keep.all():
                data = data.filter(pa.array(keep))
                pos = pos[keep]
            tok = pa.array(self.tix[pos])
            data = data.set_column(data.schema.get_field_index("unit"), "unit", pc.take(units, tok))
            data = data.set_column(data.schema.get_field_index("pid"), "pid", pc.take(pids, tok))
            self.sink.add_output(TableBatch(table, data))

    def _settle(self, s: int, upto: int) -> None:
        np = self._np
        if self.pending[s]:  # lines set aside one by one since the last settling
            more = np.array(self.pending[s], dtype=np.int64)
            self.pend[s] = more if self.pend[s] is None else np.concatenate([self.pend[s], more])
            self.pending[s] = []
        pend = self.pend[s]
        if pend is None:
            return
        i = self.ptr[s]
        j = int(np.searchsorted(pend, upto))
        if j <= i:
            return
        self.ptr[s] = j
        st = self.streams[s]
        pid = self.stream_pid[s]
        while i < j and not st.accepts_fast_lines_of(pid):
            p = int(pend[i])
            self.taken[p] = False
            self.slow(p)
            i += 1
        if i < j:
            st.note_given(EPOCH + _US * self.ts_col[int(pend[j - 1])].value, pid)
