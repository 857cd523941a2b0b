"""A vectorised path for the two line shapes that make up most of an SGLang log: batch
statistics (``[ts ranks] Decode batch …`` / ``Prefill batch …``) and uvicorn access lines.

For a block of lines (a log file's chunk, or the SGLang messages a journal captured),
:func:`fast_rows` / :func:`fast_messages` find (with Arrow compute, in C) the lines of those
shapes whose every ``key: value`` pair has a column of its own and a plain value, and build
their ``sglang_batches`` / ``http_requests`` rows as Arrow tables. Anything else — a key that
goes to ``extra``, an unknown key, an odd value, a wrapper in front of the prefix, a time-only
prefix, a ``/health`` request (it moves the stream's phase), a ``\\r`` inside the line, a
wall-clock time in a DST gap or an impossible date — stays on the Python path
(:class:`~postmortem.parsers.sglang.stream.SglangStream`), which is the reference: tests check
that both paths store the same rows.

Batch bodies are read by *templates*: the lines of a block mostly share one key sequence, so
the keys of one line are read in Python and every other line is checked against them (one
``starts_with`` per pair); the values are then cut at fixed offsets and converted column by
column. Lines that fit no template of their block go to the Python path.

A journal's messages come with their own time (the journal's, exact): :class:`Given` carries
it with the line numbers, host, unit and pid, and it wins over the prefix time, as in
:meth:`SglangStream.feed`.
"""

from __future__ import annotations

import re
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

#: the start of a line the fast path may take: a dated prefix (optional fraction, rank tags),
#: then a batch header or uvicorn's ``INFO:``
HEAD_RE = (
    r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*\] "
    r"(?:Decode batch[,.] |Prefill batch[,.] |INFO: )"
)
#: a prefix's text after the seconds: ``.fff`` and rank tags
_TAIL = re.compile(r"(\.\d{1,6})?((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)$")
_STATUS_RE = r"^\d{3}$"
#: client and path tokens: printable ASCII without spaces (what ``\S+`` surely accepts)
_TOKEN_RE = r"^[\x21-\x7e]+$"
_METHOD_RE = r'^"[A-Z]+$'
_VERSION_RE = r'^HTTP/[\d.]+"$'
#: longest prefix (up to its "] ") the fast path looks at
_MAX_PREFIX = 64
#: the longest header after the prefix: "Prefill batch, "
_HEADER = 15
#: templates tried per group of batch lines (same kind, header and number of pairs)
MAX_TEMPLATES = 12
_BIG = 1 << 30

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
_NP_TYPE = {_INT: np.int64, _FLOAT: np.float64, _BOOL: np.bool_}
_PA_TYPE = {_INT: pa.int64(), _FLOAT: pa.float64(), _BOOL: pa.bool_()}
_TRAIL = ""  # a template's empty last pair: the body ended with ", "

I64 = np.ndarray[Any, np.dtype[np.int64]]
Mask = np.ndarray[Any, np.dtype[np.bool_]]


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
                out.append((name, table.filter(pa.array(keep))))
        return out


def _np(a: Any) -> Any:
    return a.to_numpy(zero_copy_only=False)


def _slice(a: Any, start: int, stop: int = _BIG) -> Any:
    """Byte slice of a string array (only ever cut after ASCII text; the result is checked to
    be UTF-8 again)."""
    return pc.binary_slice(a.cast(pa.binary()), start, stop).cast(pa.string())


def _localise(naive: Any, zone_key: str | None) -> tuple[Any, Any | None]:
    """UTC timestamps, and a mask of the values in a DST gap (left to the Python path)."""
    if zone_key in (None, "UTC", "Etc/UTC"):
        return pc.assume_timezone(naive, "UTC"), None
    early = pc.assume_timezone(naive, zone_key, ambiguous="earliest", nonexistent="earliest")
    late = pc.assume_timezone(naive, zone_key, ambiguous="earliest", nonexistent="latest")
    return pc.cast(early, pa.timestamp("us", tz="UTC")), pc.not_equal(early, late)


def _naive_times(text: Any) -> tuple[Any, Mask]:
    """``YYYY-MM-DD HH:MM:SS[.ffffff]`` → naive timestamps, and a mask of the valid ones
    (Python's ``datetime`` is the judge: no year 0, no hour 24, no Feb 30)."""
    try:
        ts = pc.cast(text, pa.timestamp("us"))
        good = ~_np(pc.starts_with(text, "0000"))
        return ts, good
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    d = pc.dictionary_encode(text)
    values: list[int | None] = []
    for s in d.dictionary.to_pylist():
        try:
            dt = datetime.fromisoformat(s)
            values.append((dt.replace(tzinfo=UTC) - EPOCH) // timedelta(microseconds=1))
        except ValueError:
            values.append(None)
    us = pc.take(pa.array(values, pa.int64()), d.indices)
    return pc.cast(us, pa.timestamp("us")), _np(pc.is_valid(us))


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
    text = chunk.text
    scan = _Scan(
        chunk.arrow().cast(pa.string()),
        base=chunk.first_line_no,
        given=None,
        zone_key=zone_key,
        ts_inferred=ts_inferred,
        host=host,
        unit=unit,
        maybe_cr="\r" in text,
        maybe_hit=" hit an exception" in text,
    )
    return scan.run()


def fast_messages(
    messages: pa.Array,
    given: Given,
    *,
    rows: Mask | None = None,
    maybe_cr: bool = True,
    maybe_hit: bool = True,
    maybe_nl: bool = True,
) -> FastRows | None:
    """The vectorised pass over SGLang messages captured by a journal (``None`` when nothing
    qualifies). ``rows``: the messages to look at (all when None; the others are not SGLang
    messages of a stream). ``maybe_cr`` / ``maybe_hit`` / ``maybe_nl``: whether any message
    may hold a ``\\r``, the words `` hit an exception`` or a newline (False skips those scans)."""
    scan = _Scan(
        messages.cast(pa.string()),
        base=0,
        given=given,
        zone_key=None,
        ts_inferred=None,
        host=None,
        unit=None,
        maybe_cr=maybe_cr,
        maybe_hit=maybe_hit,
        maybe_nl=maybe_nl,
        rows=rows,
    )
    return scan.run()


class _Scan:
    """One block of lines through the vectorised pass."""

    def __init__(
        self,
        arr: Any,
        *,
        base: int,
        given: Given | None,
        zone_key: str | None,
        ts_inferred: str | None,
        host: str | None,
        unit: str | None,
        maybe_cr: bool,
        maybe_hit: bool,
        maybe_nl: bool = False,
        rows: Mask | None = None,
    ) -> None:
        self.arr = arr
        self.n = len(arr)
        self.base = base
        self.given = given
        self.zone_key = zone_key
        self.ts_inferred = ts_inferred
        self.host = host
        self.unit = unit
        self.maybe_cr = maybe_cr
        self.maybe_hit = maybe_hit
        self.maybe_nl = maybe_nl
        self.rows = rows
        self.blocks: list[tuple[str, Any, I64]] = []
        self.ts_us = np.zeros(self.n, dtype=np.int64)
        self.has_ts = np.zeros(self.n, dtype=bool)

    def run(self) -> FastRows | None:
        n = self.n
        if not n:
            return None
        arr = self.arr
        ends = _np(pc.fill_null(pc.find_substring(arr, "] "), -1))
        cand = (ends >= 20) & (ends <= _MAX_PREFIX)
        if self.rows is not None:
            cand &= self.rows
        if not cand.any():
            return None
        width = int(ends[cand].max()) + 2 + _HEADER
        head = _slice(arr, 0, width)
        cand &= _np(pc.fill_null(pc.match_substring_regex(head, HEAD_RE), False))
        if self.maybe_cr:
            cand &= ~_np(pc.fill_null(pc.match_substring(arr, "\r"), True))
        if self.maybe_nl:
            cand &= ~_np(pc.fill_null(pc.match_substring(arr, "\n"), True))
        if self.maybe_hit:
            cand &= ~_np(pc.fill_null(pc.match_substring(arr, " hit an exception"), True))
        if self.given is not None:
            cand &= _np(pc.is_valid(self.given.ts))
        if not cand.any():
            return None
        parts = None
        for e in np.unique(ends[cand]).tolist():
            idx = np.flatnonzero(cand & (ends == e))
            h = head if len(idx) == n else pc.take(head, pa.array(idx))
            kind = _np(pc.binary_slice(h.cast(pa.binary()), e + 2, e + 3).cast(pa.string()))
            shared = self._shared(h, idx, int(e))
            if shared is None:
                continue
            good, ts_col, raw_col, ranks_col = shared
            batch = good & ((kind == "D") | (kind == "P"))
            if batch.any():
                if parts is None:
                    parts = pc.split_pattern(arr, ", ")
                for k, hlen in (("D", 12), ("P", 13)):
                    rows = np.flatnonzero(good & (kind == k))
                    if len(rows):
                        sep = _np(
                            pc.binary_slice(
                                pc.take(h, pa.array(rows)).cast(pa.binary()), e + 2 + hlen, e + 3 + hlen
                            ).cast(pa.string())
                        )
                        for sep_ch in (",", "."):
                            sub = rows[sep == sep_ch]
                            if len(sub):
                                self._batches(
                                    parts, idx, sub, int(e), hlen, sep_ch, (ts_col, raw_col, ranks_col)
                                )
            rows = np.flatnonzero(good & (kind == "I"))
            if len(rows):
                self._access(idx, rows, int(e), (ts_col, raw_col, ranks_col))
        if not self.blocks:
            return None
        mask = np.zeros(n, dtype=bool)
        for _name, _table, pos in self.blocks:
            mask[pos] = True
        return FastRows(mask, self.ts_us, self.has_ts, self.blocks)

    # ------------------------------------------------------------------ prefix, time

    def _shared(self, h: Any, idx: I64, e: int) -> tuple[Mask, Any, Any, Any] | None:
        """For the lines ``idx`` (their heads ``h``) whose prefix ends at ``e``: the lines whose
        time is usable, and per line its UTC time, ``ts_raw`` and normalised rank tags."""
        tail = _slice(h, 20, e)
        d = pc.dictionary_encode(tail)
        fracs: list[str | None] = []
        ranks: list[str | None] = []
        tail_ok: list[bool] = []
        for t in d.dictionary.to_pylist():
            mt = _TAIL.match(t)
            if mt is None:
                fracs.append("")
                ranks.append(None)
                tail_ok.append(False)
                continue
            fracs.append(mt.group(1) or "")
            r = mt.group(2)
            ranks.append(normalise_ranks(r) if r else None)
            tail_ok.append(True)
        ranks_col = pc.take(pa.array(ranks, pa.string()), d.indices)
        good = _np(pc.take(pa.array(tail_ok, pa.bool_()), d.indices))
        g = self.given
        if g is not None:
            take = pa.array(idx)
            ts = pc.take(g.ts, take)
            raw = pc.take(g.ts_raw, take)
        else:
            ts19 = _slice(h, 1, 20)
            raw = (
                ts19
                if not any(fracs)
                else pc.binary_join_element_wise(ts19, pc.take(pa.array(fracs, pa.string()), d.indices), "")
            )
            naive, valid = _naive_times(raw)
            good &= valid
            ts, gap = _localise(naive, self.zone_key)
            if gap is not None:
                good &= ~_np(pc.fill_null(gap, True))
        us = _np(pc.fill_null(pc.cast(ts, pa.int64()), 0))
        sel = idx[good]
        self.ts_us[sel] = us[good]
        self.has_ts[sel] = True
        if not good.any():
            return None
        return good, ts, raw, ranks_col

    def _common(self, idx: I64, rows: I64, shared: tuple[Any, Any, Any]) -> dict[str, Any]:
        ts, raw, ranks = shared
        take = pa.array(rows)
        k = len(rows)
        pos = idx[rows]
        g = self.given
        if g is not None:
            gt = pa.array(pos)
            return {
                "line_no": pc.take(g.line_no, gt),
                "ts": pc.take(ts, take),
                "ts_raw": pc.take(raw, take),
                "host": pc.take(g.host, gt),
                "unit": pc.take(g.unit, gt),
                "pid": pc.take(g.pid, gt),
                "ranks": pc.take(ranks, take),
                "ts_inferred": pc.take(g.ts_inferred, gt),
            }
        return {
            "line_no": pa.array(pos + self.base, pa.int64()),
            "ts": pc.take(ts, take),
            "ts_raw": pc.take(raw, take),
            "host": _const(self.host, k),
            "unit": _const(self.unit, k),
            "pid": pa.nulls(k, pa.int32()),
            "ranks": pc.take(ranks, take),
            "ts_inferred": _const(self.ts_inferred, k),
        }

    # ------------------------------------------------------------------ batch lines

    def _batches(
        self, parts: Any, idx: I64, rows: I64, e: int, hlen: int, sep: str, shared: tuple[Any, Any, Any]
    ) -> None:
        """Batch lines ``idx[rows]`` (header ``Decode batch`` / ``Prefill batch`` then ``sep``)."""
        flat = parts.values
        offs = np.asarray(parts.offsets)
        pos = idx[rows]
        start = offs[pos]
        count = offs[pos + 1] - start
        if sep == ",":
            # part 0 is the prefix and header; the pairs follow
            first = None
            start = start + 1
            count = count - 1
        else:
            # part 0 is the prefix, the header and the first pair
            first = _slice(pc.take(flat, pa.array(start)), e + 2 + hlen + 2)
        phase = "decode" if hlen == 12 else "prefill"
        for m in np.unique(count).tolist():
            if m <= 0:
                continue
            sel = np.flatnonzero(count == m)
            self._templates(flat, first, start, sel, int(m), rows, idx, phase, shared)

    def _templates(
        self,
        flat: Any,
        first: Any,
        start: I64,
        sel: I64,
        m: int,
        rows: I64,
        idx: I64,
        phase: str,
        shared: tuple[Any, Any, Any],
    ) -> None:
        """Lines ``sel`` (positions in ``rows``) with ``m`` pairs each, by template."""

        def pair(j: int, which: I64) -> Any:
            if first is not None and j == 0:
                return pc.take(first, pa.array(which))
            return pc.take(flat, pa.array(start[which] + j))

        todo = sel
        for _ in range(MAX_TEMPLATES):
            if not len(todo):
                return
            r0 = todo[:1]
            keys = _template([pair(j, r0)[0].as_py() for j in range(m)])
            if keys is None:
                todo = todo[1:]
                continue
            match = np.ones(len(todo), dtype=bool)
            cols: list[Any] = []
            for j, key in enumerate(keys):
                p = pair(j, todo)
                if key == _TRAIL:
                    match &= _np(pc.equal(p, ""))
                else:
                    match &= _np(pc.starts_with(p, key + ": "))
                cols.append(p)
            hit = todo[match]
            todo = todo[~match]
            self._template_rows(hit, match, keys, cols, rows, idx, phase, shared)

    def _template_rows(
        self,
        hit: I64,
        match: Mask,
        keys: list[str],
        cols: list[Any],
        rows: I64,
        idx: I64,
        phase: str,
        shared: tuple[Any, Any, Any],
    ) -> None:
        k = len(hit)
        fm = None if match.all() else pa.array(match)
        ok = np.ones(k, dtype=bool)
        data: dict[int, Any] = {}
        for key, p in zip(keys, cols, strict=True):
            if key == _TRAIL:
                continue
            ci = KEYS[key][0]
            v = _slice(p if fm is None else pc.filter(p, fm), len(key) + 2)
            kind = _KIND[ci]
            if kind == _INT:
                good = pc.and_(pc.ascii_is_decimal(v), pc.less_equal(pc.binary_length(v), 18))
            elif kind == _FLOAT:
                good = pc.ascii_is_decimal(pc.replace_substring(v, ".", "", max_replacements=1))
            else:
                good = pc.is_in(v, value_set=pa.array(["True", "False"], pa.string()))
            good_np = _np(pc.fill_null(good, False))
            ok &= good_np
            if not good_np.all():
                v = pc.if_else(good, v, "1" if kind != _BOOL else "True")
            vals = _np(pc.equal(v, "True")) if kind == _BOOL else _np(pc.cast(v, _PA_TYPE[kind]))
            data[ci] = vals  # a later pair with the same column wins, as in parse_batch
        if not ok.any():
            return
        if not ok.all():
            hit = hit[ok]
            data = {ci: vals[ok] for ci, vals in data.items()}
        k = len(hit)
        cols_out = self._common(idx, rows[hit], shared)
        cols_out["phase"] = pa.array([phase] * k, pa.string()) if k else pa.array([], pa.string())
        for ci, name in enumerate(COLUMNS):
            if ci in data:
                cols_out[name] = pa.array(data[ci], _PA_TYPE[_KIND[ci]])
            else:
                cols_out[name] = pa.nulls(k, _PA_TYPE[_KIND[ci]])
        cols_out["extra"] = pa.nulls(k, pa.string())
        cols_out["iteration"] = pa.nulls(k, pa.int64())
        self.blocks.append(("sglang_batches", pa.table(cols_out), idx[rows[hit]]))

    # ------------------------------------------------------------------ access lines

    def _access(self, idx: I64, rows: I64, e: int, shared: tuple[Any, Any, Any]) -> None:
        lines = pc.take(self.arr, pa.array(idx[rows]))
        text = pc.utf8_ltrim_whitespace(_slice(lines, e + 2 + 5))
        tok = pc.split_pattern(text, pattern=" ", max_splits=6)
        six = _np(pc.greater_equal(pc.list_value_length(tok), 6))
        if not six.all():
            rows = rows[six]
            tok = pc.filter(tok, pa.array(six))
        if not len(rows):
            return
        client, dash, method, path, version, status = (pc.list_element(tok, i) for i in range(6))
        fine = (
            _np(pc.equal(dash, "-"))
            & _np(pc.match_substring_regex(client, _TOKEN_RE))
            & _np(pc.match_substring_regex(path, _TOKEN_RE))
            & _np(pc.match_substring_regex(method, _METHOD_RE))
            & _np(pc.match_substring_regex(version, _VERSION_RE))
            & _np(pc.match_substring_regex(status, _STATUS_RE))
            & ~_np(pc.starts_with(path, "/health"))
        )
        if not fine.any():
            return
        if not fine.all():
            f = pa.array(fine)
            rows = rows[fine]
            client, method, path, version, status = (
                pc.filter(x, f) for x in (client, method, path, version, status)
            )
        cols = self._common(idx, rows, shared)
        del cols["ranks"]
        cols["client"] = client
        cols["method"] = _slice(method, 1)
        cols["path"] = path
        cols["http_version"] = _slice(version, 5, -1)
        cols["status"] = pc.cast(status, pa.int16())
        self.blocks.append(("http_requests", pa.table(cols), idx[rows]))


def _template(pairs: list[str]) -> list[str] | None:
    """The keys of one line's pairs, if every key has a column (the last pair may be empty:
    a trailing ``", "``); None when the line cannot be a template."""
    keys: list[str] = []
    last = len(pairs) - 1
    for j, p in enumerate(pairs):
        if j == last and p == "" and j > 0:
            keys.append(_TRAIL)
            continue
        key, sep, _ = p.partition(": ")
        if not sep or key not in KEYS:
            return None
        keys.append(key)
    return keys


def _const(value: str | None, k: int) -> Any:
    return pa.nulls(k, pa.string()) if value is None else pa.array([value] * k, pa.string())
