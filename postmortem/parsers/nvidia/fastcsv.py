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
    """What the kernel needs to know of a header: the last cell's unit, and per stored column
    its slot, the kind of its cells, its converter and its cell."""

    def __init__(
        self, n: int, units: list[str], plan: list[tuple[int, int, Callable[[str], object]]]
    ) -> None:
        self.unit = np.frombuffer(units[-1].encode(), dtype=np.uint8).copy()
        #: (slot, kind, converter, cell) per stored column
        self.columns: list[tuple[int, int, Callable[[str], object], int]] = []
        self.ok = True
        for slot, cell, conv in plan:
            kind = _KIND_OF.get(conv)
            if kind is None or cell >= n:
                self.ok = False  # a converter the kernel does not know
                return
            self.columns.append((slot, kind, conv, cell))


def vector_rows(
    st: Any, chunk: LineChunk, start: int, pos: int | None, min_rows: int
) -> tuple[TableBatch, int, int | None] | None:
    """The regular ``--query-gpu`` rows of ``chunk`` from line ``start`` (at byte ``pos``, or
    None if not known) on, as one batch, with the line and byte after the last row taken; None
    when fewer than ``min_rows`` regular rows start there (the per-line path takes over)."""
    layout = st.layout
    p_ts = layout.get("ts")
    if p_ts < 0 or layout.n < 2 or st.failing:
        return None
    plan = layout.fast_plan()
    if not plan.ok:
        return None
    if pos is None:
        pos = int(chunk.buffer()[1][start])
    buf = np.frombuffer(chunk.data, dtype=np.uint8)
    rows = len(chunk) - start
    # each cell's spans side by side: a column's are read without a copy
    cells = (np.empty((layout.n, rows), dtype=np.int64), np.empty((layout.n, rows), dtype=np.int64))
    stamps = np.empty((rows, 2), dtype=np.int64)
    count, after = k.scan(buf, pos, rows, p_ts, plan.unit, cells, stamps)
    columns, cut = _read_columns(plan, buf, cells, count)
    if cut < min_rows:
        return None
    ts_start = cells[0][p_ts, :cut]
    ts_us, cut = _times(st, buf, ts_start, stamps, cut)
    if cut < min_rows:
        return None
    line0 = chunk.first_line_no + start
    batch = _batch(st, buf, columns, ts_start, ts_us, line0, cut)
    # rows left after a cut (a minute of the repeated hour, a too big integer) start where the
    # scan did not keep
    return batch, start + cut, after if cut == count else None


def _read_columns(plan: Plan, buf: Any, cells: tuple[Any, Any], count: int) -> tuple[list[Any], int]:
    """Each stored column read by the kernel, and how many rows all of them could read."""
    columns = []
    for slot, kind, conv, cell in plan.columns:
        starts = cells[0][cell, :count]
        out = (
            np.empty(count, dtype=np.uint8),
            np.empty(count, dtype=np.int64),
            np.empty(count, dtype=np.float64),
            np.empty(count, dtype=np.int64),
        )
        count = min(count, k.column(buf, starts, cells[1][cell, :count], kind, out))
        columns.append((slot, kind, conv, out))
    return columns, count


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


def _times(st: Any, buf: Any, ts_start: Any, stamps: Any, count: int) -> tuple[Any, int]:
    """Each row's UTC microseconds (one localisation per run of rows in the same minute) and
    how many rows have one: up to the first minute left to the per-line path."""
    minute = stamps[:count, 0]
    runs = np.concatenate(([0], np.flatnonzero(minute[1:] != minute[:-1]) + 1))
    bases = np.empty(len(runs), dtype=np.int64)
    for r, i in enumerate(runs.tolist()):
        s = int(ts_start[i])
        base = _minute_us(st, bytes(buf[s : s + 16]).decode("ascii"))
        if base is None:
            count, runs, bases = i, runs[:r], bases[:r]
            break
        bases[r] = base
    lengths = np.diff(np.append(runs, count))
    return np.repeat(bases, lengths) + stamps[:count, 1] * 1000, count


def _strings(buf: Any, s: Any, e: Any, valid: Any) -> Any:
    offsets, data = k.gather32(buf, np.ascontiguousarray(s), np.ascontiguousarray(e))
    bitmap = None
    if valid is not None and not valid.all():
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), len(s), [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)])


def _column(kind: int, typ: str, conv: Callable[[str], object], out: Any, count: int, buf: Any) -> Any:
    """One column as Arrow from the kernel's ``(status, ints, floats, ends)``."""
    status, ints, floats, ends = (a[:count] for a in out)
    valid = status == k.VALUE
    if kind in (k.INT, k.MIB):
        arr = to_arrow(ints.astype(np.int32) if typ == "int32" else ints, pa.type_for_alias(typ), valid)
    elif kind == k.NUM:
        arr = to_arrow(floats, pa.float64(), valid)
    else:
        arr = _strings(buf, ints, np.where(valid, ends, ints), valid)
    slow = np.flatnonzero(status == k.SLOW)
    if slow.size:
        arr = _fill_slow(arr, slow, conv, (ints, ends), buf)
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
    st: Any, buf: Any, columns: list[Any], ts_start: Any, ts_us: Any, line0: int, count: int
) -> TableBatch:
    ts_start = ts_start[:count]
    cols: dict[str, Any] = {
        "line_no": to_arrow(np.arange(line0, line0 + count, dtype=np.int64), pa.int64()),
        "ts": to_arrow(ts_us, pa.timestamp("us", tz="UTC")),
        "ts_raw": _strings(buf, ts_start, ts_start + 23, None),
        "ts_inferred": repeated(Inferred.ZONE, count),
        "host": repeated(st.ctx.host, count),
    }
    for name, typ in SLOT_TYPES:
        cols[name] = pa.nulls(count, typ)
    for slot, kind, conv, out in columns:
        name, typ = SLOT_TYPES[slot]
        cols[name] = _column(kind, typ, conv, out, count, buf)
    table = pa.table(cols)
    st.ctx.parsed(count)
    last_raw = bytes(buf[int(ts_start[-1]) : int(ts_start[-1]) + 23]).decode("ascii")
    st.last_raw = last_raw
    st.last_stamp = Stamp(EPOCH + timedelta(microseconds=int(ts_us[-1])), last_raw, Inferred.ZONE)
    return TableBatch("gpu_samples", table)
