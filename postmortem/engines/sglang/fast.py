"""A vectorised path for the two line shapes that make up most of an SGLang log: batch
statistics (``[ts ranks] Decode batch …`` / ``Prefill batch …``) and uvicorn access lines.

For a block of lines (a log file's chunk, or the SGLang messages a journal captured),
:func:`fast_rows` / :func:`fast_messages` find the lines of those shapes whose every
``key: value`` pair has a column of its own and a plain value, and build their
``server_stats`` / ``http_requests`` rows as Arrow tables. The reading is one compiled pass
over the block's bytes (:func:`.kernels.scan`); Python only turns its output into Arrow
columns, reads distinct rank tags once each, and localises times.

The lines the fast path may take start ``[YYYY-MM-DD HH:MM:SS`` (ASCII digits), then an
optional ``.f`` (1–6 digits) and rank tags (``DP``, ``PP``, ``ATTN_CP``, ``MOE_DP``, ``TP``,
``EP`` with a number), ``"] "`` within the first 64 bytes, then ``Decode batch, `` / ``. ``,
``Prefill batch, `` / ``. `` or uvicorn's ``INFO: ``. Anything else — a key that goes to
``extra``, an unknown key, an odd value (integers: 1–16 ASCII digits; decimals: 1–15 digits
and at most one dot, read as the digits' integer over a power of ten, which IEEE division
rounds exactly as ``float()`` does), a wrapper in front of the prefix, a time-only prefix, a
``/health`` request (it moves the stream's phase), a ``\\r`` or newline inside the line, the
words `` hit an exception``, a wall-clock time in a DST gap or an impossible date — stays on
the Python path (:class:`~postmortem.engines.sglang.stream.SglangStream`), which is the
reference: tests check that both paths store the same rows.

A journal's messages come with their own time (the journal's, exact): :class:`Given` carries
it with the line numbers, host, unit and pid, and it wins over the prefix time, as in
:meth:`SglangStream.feed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as _pa
import pyarrow.compute as _pc

from ...parsers.base import LineChunk, repeated
from .batch import COLUMNS, KEYS
from .prefix import normalise_ranks

#: the engine column of every row this path writes
ENGINE = "sglang"
#: server_stats columns of other engines' statistics, which SGLang does not print
_NOT_SGLANGS = (
    ("swapped_req", _pa.int32()),
    ("preemptions", _pa.int64()),
    ("cpu_kv_usage", _pa.float64()),
    ("prefix_cache_hit_rate", _pa.float64()),
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# pyarrow.compute's stubs cannot follow the dynamic kernels used here
pa: Any = _pa
pc: Any = _pc

_INT_COLS = frozenset(
    COLUMNS.index(c)
    for c in (
        "running_req",
        "queue_req",
        "num_tokens",
        "new_seq",
        "new_token",
        "cached_token",
        "pending_token",
    )
)
_BOOL_COLS = frozenset({COLUMNS.index("cuda_graph")})
_INT, _FLOAT, _BOOL = 0, 1, 2
_KIND = [(_BOOL if ci in _BOOL_COLS else _INT if ci in _INT_COLS else _FLOAT) for ci in range(len(COLUMNS))]
_PA_TYPE = {_INT: pa.int64(), _FLOAT: pa.float64(), _BOOL: pa.bool_()}
_PHASES = pa.array(["", "decode", "prefill"], pa.string())

I64 = np.ndarray[Any, np.dtype[np.int64]]
Mask = np.ndarray[Any, np.dtype[np.bool_]]
U8 = np.ndarray[Any, np.dtype[np.uint8]]


@dataclass
class Given:
    """What a caller already knows about each message (a journal): one value per message.

    ``ts`` (``timestamp[us, UTC]``) wins over the prefix time; ``ts_raw`` / ``ts_inferred``
    are stored as given; ``host``, ``unit`` and ``pid`` are the stream's for that line."""

    line_no: pa.Array
    ts: pa.Array
    ts_raw: pa.Array
    ts_inferred: pa.Array
    host: pa.Array
    unit: pa.Array
    pid: pa.Array


@dataclass
class FastRows:
    """What the vectorised pass found in one block: the lines it can store, their times, and
    their rows as Arrow tables (each with the block positions of its rows, in no set order)."""

    mask: Mask  # lines the fast path can store
    ts_us: I64  # UTC microseconds of each line (where has_ts)
    has_ts: Mask
    blocks: list[tuple[str, pa.Table, I64]]  # (table name, rows, block position of each row)

    def ts_at(self, i: int) -> datetime | None:
        """The time of the fast line at block position ``i``."""
        if not self.has_ts[i]:
            return None
        return EPOCH + timedelta(microseconds=int(self.ts_us[i]))

    def tables(self, taken: Mask | None = None) -> list[tuple[str, pa.Table]]:
        """The tables, restricted to the lines ``taken`` (all fast lines when None)."""
        out = []
        for name, table, pos in self.blocks:
            if taken is None:
                out.append((name, table))
                continue
            keep = taken[pos]
            if keep.all():
                out.append((name, table))
            elif keep.any():
                out.append((name, table.filter(keep)))
        return out


def _np(a: Any) -> Any:
    return a.to_numpy(zero_copy_only=False)


#: one hour in microseconds: :func:`localise` finds the zone's offset once per wall-clock hour
HOUR_US = 3_600_000_000
_NAIVE_EPOCH = datetime(1970, 1, 1)  # noqa: DTZ001 - wall-clock times, in no zone yet


def localise(naive_us: I64, zone_key: str | None) -> tuple[I64, Mask | None]:
    """UTC microseconds of wall-clock times (naive microseconds) in ``zone_key``, and a mask of
    the times left to the Python path: those in an hour in which the zone's offset changes (a
    DST gap, or the hour that repeats when clocks go back, read there by the log's order).

    The offset is looked up once per distinct hour, not per time: Arrow's ``assume_timezone``
    cost 2.7 ms per 20,000 times, and the check for a gap or a repeat took three of them.

    >>> us = np.array([HOUR_US * 24 * 59 + HOUR_US * 2 + 5], dtype=np.int64)  # 1970-03-01 02:00
    >>> t, odd = localise(us, "Europe/Berlin")
    >>> int(us[0] - t[0]) // HOUR_US, odd.tolist()
    (1, [False])
    """
    if zone_key in (None, "UTC", "Etc/UTC") or not len(naive_us):
        return naive_us, None
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(zone_key)
    hours = naive_us // HOUR_US
    lo, hi = int(hours.min()), int(hours.max())
    if hi - lo < 1 << 16:  # a block's times span hours, not years: a table by hour
        index = hours - lo
        seen = np.zeros(hi - lo + 1, dtype=bool)
        seen[index] = True
        slots = np.flatnonzero(seen)
        keys = slots + lo
    else:
        keys, index = np.unique(hours, return_inverse=True)
        slots = np.arange(len(keys))
    offsets = np.zeros(int(slots[-1]) + 1, dtype=np.int64)
    odd = np.zeros(len(offsets), dtype=bool)
    for slot, h in zip(slots.tolist(), keys.tolist(), strict=True):
        offset = _hour_offset(zone, h)
        if offset is None:
            odd[slot] = True
        else:
            offsets[slot] = offset
    return naive_us - offsets[index], odd[index]


def _hour_offset(zone: Any, hour: int) -> int | None:
    """The zone's UTC offset (µs) throughout wall-clock hour ``hour`` (hours since 1970-01-01),
    or None when it is not one offset there: it changes within the hour, or a time there is
    in a gap or repeated (PEP 495: ``fold`` 0 and 1 then give different offsets), or the
    hour's times in UTC are beyond datetime's years (1-9999: the Python path reads no time
    there, and the loader could not read back one stored).

    >>> from zoneinfo import ZoneInfo
    >>> tokyo = ZoneInfo("Asia/Tokyo")
    >>> _hour_offset(tokyo, 0) // HOUR_US, _hour_offset(tokyo, -719162 * 24)  # 1970; 0001-01-01
    (9, None)
    """
    try:
        start = _NAIVE_EPOCH + timedelta(hours=hour)
        ends = (start, start + timedelta(microseconds=HOUR_US - 1))
        offsets = {d.replace(tzinfo=zone, fold=f).utcoffset() for d in ends for f in (0, 1)}
        offset = offsets.pop() if len(offsets) == 1 else None
        if offset is None:
            return None
        _utc = [d - offset for d in ends]  # (raises OverflowError beyond year 9999 or before 1)
    except (OverflowError, ValueError):  # beyond datetime's years
        return None
    return offset // timedelta(microseconds=1)


def fast_rows(
    chunk: LineChunk,
    *,
    zone_key: str | None,
    ts_inferred: str | None,
    host: str | None,
    unit: str | None,
) -> FastRows | None:
    """The vectorised pass over a log file's ``chunk`` (``None`` when nothing in it qualifies);
    prefix times are wall-clock times in ``zone_key``."""
    buf, starts, ends = chunk.buffer()
    return _Scan(
        buf,
        starts,
        ends,
        base=chunk.first_line_no,
        given=None,
        zone_key=zone_key,
        ts_inferred=ts_inferred,
        host=host,
        unit=unit,
        check_hit=chunk.contains(" hit an exception"),
    ).run()


def fast_messages(
    messages: pa.Array,
    given: Given,
    *,
    rows: Mask | None = None,
    maybe_hit: bool = True,
) -> FastRows | None:
    """The vectorised pass over SGLang messages captured by a journal (``None`` when nothing
    qualifies). ``rows``: the messages to look at (all when None; the others are not SGLang
    messages of a stream). ``maybe_hit``: whether any message may hold the words
    `` hit an exception`` (False skips that search). The pass always checks each message for
    carriage returns and newlines itself."""
    from ...parsers.jit import string_buffers

    buf, starts, ends = string_buffers(messages)
    return _Scan(
        buf,
        starts,
        ends,
        base=0,
        given=given,
        zone_key=None,
        ts_inferred=None,
        host=None,
        unit=None,
        check_hit=maybe_hit,
        rows=rows,
    ).run()


_KEY_TABLE: list[tuple[Any, Any, Any, Any]] = []


def _keys() -> tuple[Any, Any, Any, Any]:
    """The batch keys as the kernel reads them (bytes, offsets, column, column kind)."""
    if not _KEY_TABLE:
        from .kernels import key_table

        _KEY_TABLE.append(key_table({k: spec[0] for k, spec in KEYS.items()}, _KIND))
    return _KEY_TABLE[0]


class _Scan:
    """One block of lines through the compiled pass."""

    def __init__(
        self,
        buf: U8,
        starts: I64,
        ends: I64,
        *,
        base: int,
        given: Given | None,
        zone_key: str | None,
        ts_inferred: str | None,
        host: str | None,
        unit: str | None,
        check_hit: bool,
        rows: Mask | None = None,
    ) -> None:
        self.buf = buf
        self.starts = starts
        self.ends = ends
        self.n = len(starts)
        self.base = base
        self.given = given
        self.zone_key = zone_key
        self.ts_inferred = ts_inferred
        self.host = host
        self.unit = unit
        self.check_hit = check_hit
        self.rows = rows

    def _times(self, fast: Any, date_ok: Any, naive: Any) -> tuple[Any, I64]:
        """The lines' times (µs since the epoch) and which lines keep the fast path: with the
        times a journal gave, or the stamps' own, localised (a stamp in a DST gap leaves it)."""
        from ...parsers.jit import to_arrow

        g = self.given
        ts_us = np.zeros(len(fast), dtype=np.int64)
        if g is not None:
            ts_us[fast] = _np(pc.cast(pc.filter(g.ts, to_arrow(fast, pa.bool_())), pa.int64()))
            return fast, ts_us
        fast &= date_ok
        idx = np.flatnonzero(fast)
        ts_us[idx], odd = localise(naive[idx], self.zone_key)
        if odd is not None:
            fast[idx[odd]] = False
        return fast, ts_us

    def run(self) -> FastRows | None:
        from ...parsers.jit import to_arrow
        from .kernels import ACCESS_FIELDS, scan

        n = self.n
        if not n:
            return None
        rows = np.ones(n, dtype=bool) if self.rows is None else np.ascontiguousarray(self.rows, dtype=bool)
        g = self.given
        if g is not None:
            rows = rows & _np(pc.is_valid(g.ts))
        if not rows.any():
            return None
        kind = np.zeros(n, dtype=np.int8)
        naive = np.zeros(n, dtype=np.int64)
        date_ok = np.zeros(n, dtype=bool)
        raw_end = np.zeros(n, dtype=np.int64)
        close_at = np.zeros(n, dtype=np.int64)
        ncols = len(COLUMNS)
        batch_pos = np.empty(n, dtype=np.int64)
        fvals = np.empty((ncols, n), dtype=np.float64)
        ivals = np.empty((ncols, n), dtype=np.int64)
        present = np.zeros((ncols, n), dtype=bool)  # scan marks the pairs read
        access_pos = np.empty(n, dtype=np.int64)
        access = np.empty((ACCESS_FIELDS, n), dtype=np.int64)
        key_bytes, key_offs, key_cols, col_kind = _keys()
        nb, na = scan(
            self.buf,
            self.starts,
            self.ends,
            rows,
            self.check_hit,
            key_bytes,
            key_offs,
            key_cols,
            col_kind,
            kind,
            naive,
            date_ok,
            raw_end,
            close_at,
            batch_pos,
            fvals,
            ivals,
            present,
            access_pos,
            access,
        )
        if not nb and not na:
            return None
        fast, ts_us = self._times(kind > 0, date_ok, naive)
        if not fast.any():
            return None
        blocks: list[tuple[str, Any, I64]] = []
        if nb:
            pos = batch_pos[:nb]
            keep = fast[pos]
            sel: Any = slice(0, nb) if keep.all() else np.flatnonzero(keep)
            pos = pos[sel]
            if len(pos):
                cols = self._common(pos, ts_us, raw_end)
                cols["ranks"] = self._ranks(raw_end[pos], close_at[pos])
                cols["phase"] = pc.take(_PHASES, to_arrow(kind[pos], pa.int8()))
                _stat_columns(cols, present, fvals, ivals, sel, len(pos))
                cols["extra"] = pa.nulls(len(pos), pa.string())
                cols["iteration"] = pa.nulls(len(pos), pa.int64())
                cols["engine"] = repeated(ENGINE, len(pos))
                for name, typ in _NOT_SGLANGS:
                    cols[name] = pa.nulls(len(pos), typ)
                blocks.append(("server_stats", pa.table(cols), pos))
        if na:
            pos = access_pos[:na]
            keep = fast[pos]
            sel = slice(0, na) if keep.all() else np.flatnonzero(keep)
            pos = pos[sel]
            if len(pos):
                f = access[:, sel]
                cols = self._common(pos, ts_us, raw_end)
                cols["client"] = self._text(f[0], f[1])
                cols["method"] = self._text(f[2], f[3])
                cols["path"] = self._text(f[4], f[5])
                cols["http_version"] = self._text(f[6], f[7])
                cols["status"] = to_arrow(f[8].astype(np.int16), pa.int16())
                cols["engine"] = repeated(ENGINE, len(pos))
                blocks.append(("http_requests", pa.table(cols), pos))
        if not blocks:
            return None
        return FastRows(fast, ts_us, fast.copy(), blocks)

    def _text(self, starts: I64, ends: I64) -> Any:
        from ...parsers.jit import spans_to_arrow

        return spans_to_arrow(self.buf, starts, ends)

    def _common(self, pos: I64, ts_us: I64, raw_end: I64) -> dict[str, Any]:
        """The columns every fast row has: where it is from, its time and stream."""
        from ...parsers.jit import to_arrow

        k = len(pos)
        g = self.given
        if g is not None:
            take = to_arrow(pos, pa.int64())
            return {
                "line_no": _take(g.line_no, take),
                "ts": _take(g.ts, take),
                "ts_raw": _take(g.ts_raw, take),
                "host": _take(g.host, take),
                "unit": _take(g.unit, take),
                "pid": _take(g.pid, take),
                "ts_inferred": _take(g.ts_inferred, take),
            }
        return {
            "line_no": to_arrow(pos + self.base, pa.int64()),
            "ts": to_arrow(ts_us[pos], pa.timestamp("us", tz="UTC")),
            "ts_raw": self._text(self.starts[pos] + 1, raw_end[pos]),
            "host": repeated(self.host, k),
            "unit": repeated(self.unit, k),
            "pid": pa.nulls(k, pa.int32()),
            "ts_inferred": repeated(self.ts_inferred, k),
        }

    def _ranks(self, starts: I64, ends: I64) -> Any:
        """The rank tags (after the fraction, up to the prefix's ``]``), normalised once per
        distinct text."""
        d = pc.dictionary_encode(self._text(starts, ends))
        names = [normalise_ranks(t) if t else None for t in d.dictionary.to_pylist()]
        return pc.take(pa.array(names, pa.string()), d.indices)


def _take(values: Any, at: Any) -> Any:
    """``pc.take(values, at)``; a column of nulls (a journal's unit, pid and most often its
    inferred-time column) is made, not taken: Arrow's take costs as much over nulls as over
    strings (0.1 ms per 24,000 rows)."""
    if values.null_count == len(values):
        return pa.nulls(len(at), values.type)
    return pc.take(values, at)


def _stat_columns(cols: dict[str, Any], present: Any, fvals: Any, ivals: Any, sel: Any, n: int) -> None:
    """The statistics columns of the rows ``sel`` (null where no line of them had the field)."""
    from ...parsers.jit import to_arrow

    for ci, name in enumerate(COLUMNS):
        have = present[ci, sel]
        kind_ = _KIND[ci]
        if not have.any():
            cols[name] = pa.nulls(n, _PA_TYPE[kind_])
            continue
        # a copy: a view would keep the whole block's matrix alive while the rows wait for
        # their insert
        values = (fvals if kind_ == _FLOAT else ivals)[ci, sel].copy()
        cols[name] = to_arrow(values, _PA_TYPE[kind_], have)
