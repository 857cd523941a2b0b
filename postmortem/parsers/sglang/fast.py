"""A vectorised path for the two line shapes that make up most of an SGLang log: batch
statistics (``[ts ranks] Decode batch …`` / ``Prefill batch …``) and uvicorn access lines.

For a chunk of lines, :func:`fast_rows` finds (with Arrow compute, in C) the lines of those
shapes whose every ``key: value`` pair has a column of its own and a plain value, and builds
their ``sglang_batches`` / ``http_requests`` rows as Arrow tables. Anything else — a key that
goes to ``extra``, an unknown key, an odd value, a wrapper in front of the prefix, a time-only
prefix, a ``/health`` request (it moves the stream's phase), a wall-clock time in a DST gap —
stays on the Python path (:class:`~postmortem.parsers.sglang.stream.SglangStream`), which is
the reference: a test checks that both paths store the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as _pa
import pyarrow.compute as _pc

from ..base import LineChunk
from .batch import COLUMNS, KEYS
from .prefix import normalise_ranks

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# pyarrow.compute's stubs cannot follow the dynamic kernels used here
pa: Any = _pa
pc: Any = _pc

#: the text before the first "] " of a line: a dated SGLang prefix, optional ms and rank tags
PREFIX_RE = r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*$"
_STATUS_RE = r"^\d{3}$"
_METHOD_RE = r'^"[A-Z]+$'
_VERSION_RE = r'^HTTP/[\d.]+"$'

_KEY_NAMES = list(KEYS)
_KEY_COLUMN = np.array([KEYS[k][0] for k in _KEY_NAMES], dtype=np.int64)
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
_ARROW_TYPE = {True: pa.int64(), False: pa.float64()}


@dataclass
class FastRows:
    """What the vectorised pass found in one chunk."""

    mask: np.ndarray[Any, np.dtype[np.bool_]]  # lines the fast path can store
    ts_us: np.ndarray[Any, np.dtype[np.int64]]  # UTC microseconds of each line (where has_ts)
    has_ts: np.ndarray[Any, np.dtype[np.bool_]]
    batches: pa.Table | None  # rows for the fast batch lines, indexed by ``batch_pos``
    batch_pos: np.ndarray[Any, np.dtype[np.int64]]
    http: pa.Table | None
    http_pos: np.ndarray[Any, np.dtype[np.int64]]

    def ts_at(self, i: int) -> datetime | None:
        """The time of the fast line at chunk position ``i``."""
        if not self.has_ts[i]:
            return None
        return EPOCH + timedelta(microseconds=int(self.ts_us[i]))

    def tables(self, taken: np.ndarray[Any, np.dtype[np.bool_]]) -> list[tuple[str, pa.Table]]:
        out = []
        for name, table, pos in (
            ("sglang_batches", self.batches, self.batch_pos),
            ("http_requests", self.http, self.http_pos),
        ):
            if table is None or not len(pos):
                continue
            keep = taken[pos]
            if keep.all():
                out.append((name, table))
            elif keep.any():
                out.append((name, table.filter(pa.array(keep))))
        return out


def _localise(naive: pa.Array, zone_key: str | None) -> tuple[pa.Array, pa.Array | None]:
    """UTC timestamps, and a mask of the values in a DST gap (left to the Python path)."""
    if zone_key in (None, "UTC", "Etc/UTC"):
        return pc.assume_timezone(naive, "UTC"), None
    early = pc.assume_timezone(naive, zone_key, ambiguous="earliest", nonexistent="earliest")
    late = pc.assume_timezone(naive, zone_key, ambiguous="earliest", nonexistent="latest")
    return pc.cast(early, pa.timestamp("us", tz="UTC")), pc.not_equal(early, late)


def _scatter(n: int, rows: np.ndarray, values: pa.Array, kind: str) -> pa.Array:
    valid = np.zeros(n, dtype=bool)
    valid[rows] = True
    if kind == "bool":
        data_b = np.zeros(n, dtype=bool)
        data_b[rows] = pc.equal(values, "True").to_numpy(zero_copy_only=False)
        return pa.array(data_b, mask=~valid)
    if kind == "int":
        data_i = np.zeros(n, dtype=np.int64)
        data_i[rows] = pc.cast(values, pa.int64()).to_numpy(zero_copy_only=False)
        return pa.array(data_i, mask=~valid)
    data_f = np.zeros(n, dtype=np.float64)
    data_f[rows] = pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False)
    return pa.array(data_f, mask=~valid)


def _batch_values(body: pa.Array) -> tuple[list[pa.Array], np.ndarray]:
    """Column arrays for ``body`` (one per :data:`COLUMNS`) and a mask of the bodies the fast
    path cannot take (unknown keys, odd values, an empty body)."""
    n = len(body)
    bad = np.zeros(n, dtype=bool)
    body = pc.utf8_rtrim(pc.utf8_rtrim_whitespace(body), characters=",")  # str.rstrip().rstrip(",")
    bad |= pc.equal(body, "").to_numpy(zero_copy_only=False)
    parts = pc.split_pattern(body, pattern=", ")
    parent = pc.list_parent_indices(parts).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(parts)
    kv = pc.split_pattern(flat, pattern=": ", max_splits=1)
    two = pc.equal(pc.list_value_length(kv), 2).to_numpy(zero_copy_only=False)
    bad[parent[~two]] = True
    pairs = np.flatnonzero(two)
    kv = pc.take(kv, pa.array(pairs))
    parent = parent[pairs]
    keys = pc.list_element(kv, 0)
    vals = pc.list_element(kv, 1)
    idx = pc.index_in(keys, value_set=pa.array(_KEY_NAMES, type=keys.type))
    known = pc.is_valid(idx).to_numpy(zero_copy_only=False)
    bad[parent[~known]] = True
    col_of = np.full(len(keys), -1, dtype=np.int64)
    idx_np = pc.fill_null(idx, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    col_of[known] = _KEY_COLUMN[idx_np[known]]
    arrays: list[pa.Array] = []
    for ci in range(len(COLUMNS)):
        sel = np.flatnonzero(col_of == ci)
        if not len(sel):
            arrays.append(pa.nulls(n, pa.bool_() if ci in _BOOL_COLS else _ARROW_TYPE[ci in _INT_COLS]))
            continue
        v = pc.take(vals, pa.array(sel))
        if ci in _BOOL_COLS:
            ok = pc.is_in(v, value_set=pa.array(["True", "False"], type=v.type)).to_numpy(
                zero_copy_only=False
            )
            kind = "bool"
        elif ci in _INT_COLS:
            ok = pc.fill_null(pc.utf8_is_digit(v), False).to_numpy(zero_copy_only=False)
            kind = "int"
        else:  # digits with at most one dot ("0.81"); anything else stays on the Python path
            ok = pc.fill_null(pc.utf8_is_digit(pc.replace_substring(v, ".", "", max_replacements=1)), False)
            ok = ok.to_numpy(zero_copy_only=False)
            kind = "float"
        rows = parent[sel]
        bad[rows[~ok]] = True
        if not ok.all():
            rows = rows[ok]
            v = pc.filter(v, pa.array(ok))
        arrays.append(_scatter(n, rows, v, kind))
    return arrays, bad


def _slice(a: Any, start: int, stop: int = 1 << 30) -> Any:
    """Byte slice of a string array (the fast path only slices after ASCII text; the result is
    checked to be UTF-8 again)."""
    return pc.binary_slice(a.cast(pa.binary()), start, stop).cast(pa.string())


def _elem(lists: Any, i: int, n: int) -> Any:
    """Element ``i`` of each list (null where the list is shorter)."""
    lens = pc.list_value_length(lists)
    ok = pc.greater(lens, i)
    padded = pc.if_else(ok, lists, pa.array([[""] * (i + 1)] * n, lists.type) if n else lists)
    return pc.if_else(ok, pc.list_element(padded, i), pa.scalar(None, lists.type.value_type))


def fast_rows(
    chunk: LineChunk,
    *,
    zone_key: str | None,
    ts_inferred: str | None,
    host: str | None,
    unit: str | None,
) -> FastRows | None:
    """The vectorised pass over ``chunk`` (``None`` when nothing in it qualifies)."""
    arr = chunk.arrow().cast(pa.string())
    n = len(arr)
    ends = pc.find_substring(arr, "] ").to_numpy(zero_copy_only=False)
    lengths = np.unique(ends[ends >= 20])
    if not len(lengths):
        return None
    ctx = _Group(chunk.first_line_no, zone_key, ts_inferred, host, unit)
    for length in lengths.tolist():
        sel = ends == length
        ctx.add(pc.filter(arr, pa.array(sel)), np.flatnonzero(sel), int(length))
    if not ctx.ts_pos:
        return None
    mask = np.zeros(n, dtype=bool)
    batch_pos = np.concatenate(ctx.batch_pos) if ctx.batch_pos else np.zeros(0, np.int64)
    http_pos = np.concatenate(ctx.http_pos) if ctx.http_pos else np.zeros(0, np.int64)
    mask[batch_pos] = True
    mask[http_pos] = True
    ts_us = np.zeros(n, dtype=np.int64)
    has_ts = np.zeros(n, dtype=bool)
    for pos, us in zip(ctx.ts_pos, ctx.ts_us, strict=True):
        ts_us[pos] = us
        has_ts[pos] = True
    batches = _sorted(ctx.batches)
    http = _sorted(ctx.http)
    return FastRows(mask, ts_us, has_ts, batches, np.sort(batch_pos), http, np.sort(http_pos))


def _sorted(tables: list[Any]) -> Any:
    if not tables:
        return None
    t = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    return t if len(tables) == 1 else t.take(pc.sort_indices(t["line_no"]))


class _Group:
    """Lines of one chunk whose prefix ends at the same offset (one or two per file)."""

    def __init__(
        self, base: int, zone_key: str | None, ts_inferred: str | None, host: str | None, unit: str | None
    ):
        self.base = base
        self.zone_key = zone_key
        self.ts_inferred = ts_inferred
        self.host = host
        self.unit = unit
        self.batches: list[Any] = []
        self.http: list[Any] = []
        self.batch_pos: list[np.ndarray[Any, np.dtype[np.int64]]] = []
        self.http_pos: list[np.ndarray[Any, np.dtype[np.int64]]] = []
        self.ts_pos: list[np.ndarray[Any, np.dtype[np.int64]]] = []
        self.ts_us: list[np.ndarray[Any, np.dtype[np.int64]]] = []

    def add(self, lines: Any, idx: np.ndarray[Any, np.dtype[np.int64]], length: int) -> None:
        prefix = _slice(lines, 0, length)
        msg = _slice(lines, length + 2)
        ok = pc.match_substring_regex(prefix, PREFIX_RE).to_numpy(zero_copy_only=False)
        is_decode = ok & pc.starts_with(msg, "Decode batch").to_numpy(zero_copy_only=False)
        is_prefill = ok & pc.starts_with(msg, "Prefill batch").to_numpy(zero_copy_only=False)
        is_info = ok & pc.starts_with(msg, "INFO: ").to_numpy(zero_copy_only=False)
        keep = is_decode | is_prefill | is_info
        if not keep.any():
            return
        if not keep.all():
            sel = pa.array(keep)
            prefix, msg, idx = pc.filter(prefix, sel), pc.filter(msg, sel), idx[keep]
            is_decode, is_prefill, is_info = is_decode[keep], is_prefill[keep], is_info[keep]
        m = len(idx)
        # "[YYYY-MM-DD HH:MM:SS" + ".fff" + " RANKS"
        ts19 = _slice(prefix, 1, 20)
        if length > 20:
            tail = pc.split_pattern(_slice(prefix, 20), pattern=" ", max_splits=1)
            frac = pc.list_element(tail, 0)
            ranks_text = pc.fill_null(_elem(tail, 1, m), "")
            ts_text = pc.binary_join_element_wise(ts19, frac, "")
        else:
            ranks_text = pa.array([""] * m, pa.string())
            ts_text = ts19
        ts, gap = _localise(pc.cast(ts_text, pa.timestamp("us")), self.zone_key)
        good = np.ones(m, dtype=bool)
        if gap is not None:
            good = ~pc.fill_null(gap, False).to_numpy(zero_copy_only=False)
        self.ts_pos.append(idx[good])
        self.ts_us.append(pc.cast(ts, pa.int64()).to_numpy(zero_copy_only=False)[good])
        shared = (ts, ts_text, ranks_text)

        for is_kind, start in ((is_decode, 12), (is_prefill, 13)):
            rows = np.flatnonzero(is_kind & good)
            if len(rows):
                self._batches(msg, rows, start, idx, shared)
        rows = np.flatnonzero(is_info & good)
        if len(rows):
            self._access(msg, rows, idx, shared)

    def _common(
        self, rows: np.ndarray[Any, np.dtype[np.int64]], idx: np.ndarray, shared: tuple[Any, Any, Any]
    ) -> dict[str, Any]:
        ts, ts_text, ranks_text = shared
        take = pa.array(rows)
        rt = pc.take(ranks_text, take)
        uniq = pc.unique(rt).to_pylist()
        norm = pa.array([normalise_ranks(u) if u else None for u in uniq], pa.string())
        k = len(rows)
        return {
            "line_no": pa.array(idx[rows] + self.base, pa.int64()),
            "ts": pc.take(ts, take),
            "ts_raw": pc.take(ts_text, take),
            "host": pa.nulls(k, pa.string()) if self.host is None else pa.array([self.host] * k, pa.string()),
            "unit": pa.nulls(k, pa.string()) if self.unit is None else pa.array([self.unit] * k, pa.string()),
            "pid": pa.nulls(k, pa.int32()),
            "ranks": pc.take(norm, pc.index_in(rt, value_set=pa.array(uniq, rt.type))),
            "ts_inferred": pa.nulls(k, pa.string())
            if self.ts_inferred is None
            else pa.array([self.ts_inferred] * k, pa.string()),
        }

    def _batches(
        self, msg: Any, rows: Any, start: int, idx: np.ndarray, shared: tuple[Any, Any, Any]
    ) -> None:
        rest = _slice(pc.take(msg, pa.array(rows)), start)
        head2 = _slice(rest, 0, 2)
        fine = pc.or_(pc.equal(head2, ". "), pc.equal(head2, ", ")).to_numpy(zero_copy_only=False)
        values, bad = _batch_values(_slice(rest, 2))
        fine &= ~bad
        if not fine.any():
            return
        if not fine.all():
            f = pa.array(fine)
            rows = rows[fine]
            values = [pc.filter(v, f) for v in values]
        cols = self._common(rows, idx, shared)
        cols["phase"] = pa.array(["decode" if start == 12 else "prefill"] * len(rows), pa.string())
        for name, v in zip(COLUMNS, values, strict=True):
            cols[name] = v
        cols["extra"] = pa.nulls(len(rows), pa.string())
        cols["iteration"] = pa.nulls(len(rows), pa.int64())
        self.batches.append(pa.table(cols))
        self.batch_pos.append(idx[rows])

    def _access(self, msg: Any, rows: Any, idx: np.ndarray, shared: tuple[Any, Any, Any]) -> None:
        text = pc.utf8_ltrim_whitespace(_slice(pc.take(msg, pa.array(rows)), 5))
        tok = pc.split_pattern(text, pattern=" ", max_splits=6)
        six = pc.greater_equal(pc.list_value_length(tok), 6).to_numpy(zero_copy_only=False)
        if not six.all():
            rows = rows[six]
            tok = pc.filter(tok, pa.array(six))
        if not len(rows):
            return
        client, dash, method, path, version, status = (pc.list_element(tok, i) for i in range(6))
        fine = (
            pc.equal(dash, "-").to_numpy(zero_copy_only=False)
            & pc.match_substring_regex(method, _METHOD_RE).to_numpy(zero_copy_only=False)
            & pc.match_substring_regex(version, _VERSION_RE).to_numpy(zero_copy_only=False)
            & pc.match_substring_regex(status, _STATUS_RE).to_numpy(zero_copy_only=False)
            & ~pc.starts_with(path, "/health").to_numpy(zero_copy_only=False)
        )
        if not fine.any():
            return
        if not fine.all():
            f = pa.array(fine)
            rows = rows[fine]
            client, method, path, version, status = (
                pc.filter(x, f) for x in (client, method, path, version, status)
            )
        cols = self._common(rows, idx, shared)
        del cols["ranks"]
        cols["client"] = client
        cols["method"] = _slice(method, 1)
        cols["path"] = path
        cols["http_version"] = _slice(version, 5, -1)
        cols["status"] = pc.cast(status, pa.int16())
        self.http.append(pa.table(cols))
        self.http_pos.append(idx[rows])
