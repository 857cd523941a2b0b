"""The fast path of ``--query-gpu`` CSV loops: whole blocks of regular rows from bytes to an
Arrow ``gpu_samples`` table.

:func:`.kernels.scan` reads a block's rows in one compiled pass (the rules are in its module's
docstring); Python then localises each distinct minute once (the per-line reader's own
:class:`~postmortem.timeutil.SlashStampReader`), converts the few cells the kernel left to the
per-line converters, and wraps the columns in Arrow without copying them. Rows in the hour
the clocks go back stay on the per-line path, which reads them in order. Tests check that
both paths give the same rows, issues and line numbers.

Imported only when a block of at least ``VECTOR_MIN_ROWS`` rows comes (it loads numba).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as _pa
import pyarrow.compute as _pc

from ...timeutil import Inferred, localize, parse_slash_stamp
from ..base import LineChunk, TableBatch, repeated
from ..jit import to_arrow
from . import kernels as k
from .common import Stamp, driver_text, integer, mib, normalise_bus_id, number, text_value

pa: Any = _pa  # the stubs' overloads do not know compute on string arrays
pc: Any = _pc

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)

#: the gpu_samples value columns after ``host``, in order, with their Arrow types
SLOT_TYPES = (
    ("gpu_index", "int32"),
    ("gpu_uuid", "string"),
    ("bus_id", "string"),
    ("name", "string"),
    ("mem_used_mib", "int64"),
    ("mem_total_mib", "int64"),
    ("mem_free_mib", "int64"),
    ("mem_reserved_mib", "int64"),
    ("util_gpu_pct", "float64"),
    ("util_mem_pct", "float64"),
    ("temp_c", "float64"),
    ("power_w", "float64"),
    ("pstate", "string"),
    ("driver_version", "string"),
)

_KIND_OF: dict[Callable[[str], object], int] = {
    integer: k.INT,
    mib: k.MIB,
    number: k.NUM,
    text_value: k.TEXT,
    normalise_bus_id: k.BUS,
    driver_text: k.DRIVER,
}


class Plan:
    """What the kernel needs to know of a header: each cell's kind and column, the last
    cell's unit, and per column its slot and converter."""

    def __init__(
        self, n: int, units: list[str], plan: list[tuple[int, int, Callable[[str], object]]]
    ) -> None:
        self.kinds = np.zeros(n, dtype=np.int64)
        self.cols = np.zeros(n, dtype=np.int64)
        self.unit = np.frombuffer(units[-1].encode(), dtype=np.uint8).copy()
        self.columns: list[tuple[int, int, Callable[[str], object]]] = []
        self.ok = True
        for col, (slot, cell, conv) in enumerate(plan):
            kind = _KIND_OF.get(conv)
            if kind is None or self.kinds[cell] != k.SKIP:
                self.ok = False  # a converter the kernel does not know, or a cell read twice
                return
            self.kinds[cell] = kind
            self.cols[cell] = col
            self.columns.append((slot, kind, conv))


def vector_rows(
    st: Any, chunk: LineChunk, first: int, start: int, min_rows: int
) -> tuple[TableBatch, int] | None:
    """The regular ``--query-gpu`` rows of ``chunk`` from line ``start`` on, as one batch, and
    the index after the last row taken; None when fewer than ``min_rows`` regular rows start
    there (the per-line path takes over)."""
    layout = st.layout
    p_ts = layout.get("ts")
    if p_ts < 0 or layout.n < 2 or st.failing:
        return None
    plan = layout.fast_plan()
    if not plan.ok:
        return None
    buf, starts, ends = chunk.buffer()
    rows = len(starts) - start
    # one row of values per line (a line's cells are written side by side: 30 % faster than
    # one row per column)
    width = max(len(plan.columns), 1)
    out = (
        np.empty((rows, width), dtype=np.uint8),
        np.empty((rows, width), dtype=np.int64),
        np.empty((rows, width), dtype=np.float64),
        np.empty((rows, width), dtype=np.int64),
    )
    stamps = np.empty(3 * rows, dtype=np.int64)
    count = k.scan(buf, starts, ends, start, p_ts, plan.kinds, plan.cols, plan.unit, out, stamps)
    if count < min_rows:
        return None
    at = stamps[: 3 * count].reshape(count, 3)
    ts_us, count = _times(st, buf, at, count)
    if count < min_rows:
        return None
    return _batch(st, plan, buf, out, at, ts_us, first + start, count), start + count


def _minute_us(st: Any, key: str) -> int | None:
    """UTC microseconds of the local minute ``YYYY/MM/DD HH:MM``, read by the per-line reader;
    None for a minute of the hour the clocks go back (its times depend on the rows' order)."""
    naive = parse_slash_stamp(key + ":00")
    if naive is None:
        return None
    zone = st.read_stamp.zone
    if naive.replace(tzinfo=zone, fold=1).astimezone(UTC) != localize(naive, zone):
        return None
    ts = st.read_stamp(key + ":00")
    if ts is None:
        return None
    return int((ts - EPOCH) // _US)


def _times(st: Any, buf: Any, at: Any, count: int) -> tuple[Any, int]:
    """Each row's UTC microseconds (one localisation per run of rows in the same minute) and
    how many rows have one: up to the first minute left to the per-line path."""
    minute = at[:, 1]
    runs = np.concatenate(([0], np.flatnonzero(minute[1:] != minute[:-1]) + 1))
    bases = np.empty(len(runs), dtype=np.int64)
    for r, i in enumerate(runs.tolist()):
        s = int(at[i, 0])
        base = _minute_us(st, bytes(buf[s : s + 16]).decode("ascii"))
        if base is None:
            count, runs, bases = i, runs[:r], bases[:r]
            break
        bases[r] = base
    lengths = np.diff(np.append(runs, count))
    return np.repeat(bases, lengths) + at[:count, 2] * 1000, count


def _strings(buf: Any, s: Any, e: Any, valid: Any) -> Any:
    offsets, data = k.gather32(buf, np.ascontiguousarray(s), np.ascontiguousarray(e))
    bitmap = None
    if valid is not None and not valid.all():
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), len(s), [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)])


def _column(
    kind: int, typ: str, conv: Callable[[str], object], status: Any, vals: list[Any], buf: Any
) -> Any:
    """One column from the kernel's output: ``status`` and the strided ``ints``, ``floats``
    and ``ends`` of its cells (only those its kind needs are copied out)."""
    valid = status == k.VALUE
    if kind in (k.INT, k.MIB):
        ints = vals[0].astype(np.int32) if typ == "int32" else np.ascontiguousarray(vals[0])
        arr = to_arrow(ints, pa.type_for_alias(typ), valid)
    elif kind == k.NUM:
        arr = to_arrow(np.ascontiguousarray(vals[1]), pa.float64(), valid)
    else:
        arr = _strings(buf, vals[0], np.where(valid, vals[2], vals[0]), valid)
    slow = np.flatnonzero(status == k.SLOW)
    if slow.size:
        arr = _fill_slow(arr, slow, conv, (vals[0], vals[2]), buf)
    return arr


def _fill_slow(arr: Any, slow: Any, conv: Callable[[str], object], spans: tuple[Any, Any], buf: Any) -> Any:
    """The cells the kernel left, converted by the per-line converter (once per distinct text)."""
    seen: dict[str, object] = {}
    values = []
    for a, b in zip(spans[0][slow].tolist(), spans[1][slow].tolist(), strict=True):
        text = bytes(buf[a:b]).decode("utf-8")
        if text not in seen:
            seen[text] = conv(text)
        values.append(seen[text])
    mask = np.zeros(len(arr), dtype=bool)
    mask[slow] = True
    return pc.replace_with_mask(arr, to_arrow(mask, pa.bool_()), pa.array(values, arr.type))


def _batch(
    st: Any, plan: Plan, buf: Any, out: Any, at: Any, ts_us: Any, line0: int, count: int
) -> TableBatch:
    ts_start = at[:count, 0]
    cols: dict[str, Any] = {
        "line_no": to_arrow(np.arange(line0, line0 + count, dtype=np.int64), pa.int64()),
        "ts": to_arrow(ts_us, pa.timestamp("us", tz="UTC")),
        "ts_raw": _strings(buf, ts_start, ts_start + 23, None),
        "ts_inferred": repeated(Inferred.ZONE, count),
        "host": repeated(st.ctx.host, count),
    }
    for name, typ in SLOT_TYPES:
        cols[name] = pa.nulls(count, typ)
    for col, (slot, kind, conv) in enumerate(plan.columns):
        name, typ = SLOT_TYPES[slot]
        status = np.ascontiguousarray(out[0][:count, col])
        cols[name] = _column(kind, typ, conv, status, [a[:count, col] for a in out[1:]], buf)
    table = pa.table(cols)
    st.ctx.parsed(count)
    last_raw = bytes(buf[int(ts_start[-1]) : int(ts_start[-1]) + 23]).decode("ascii")
    st.last_raw = last_raw
    st.last_stamp = Stamp(EPOCH + timedelta(microseconds=int(ts_us[-1])), last_raw, Inferred.ZONE)
    return TableBatch("gpu_samples", table)
