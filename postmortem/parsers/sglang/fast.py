"""A vectorised path for the two line shapes that make up most of an SGLang log: batch
statistics (``[ts ranks] Decode batch …`` / ``Prefill batch …``) and uvicorn access lines.

For a block of lines (a log file's chunk, or the SGLang messages a journal captured),
:func:`fast_rows` / :func:`fast_messages` find (in C: numpy over the block's bytes, Arrow
compute) the lines of those shapes whose every ``key: value`` pair has a column of its own and
a plain value, and build their ``sglang_batches`` / ``http_requests`` rows as Arrow tables. Anything else — a key that
goes to ``extra``, an unknown key, an odd value, a wrapper in front of the prefix, a time-only
prefix, a ``/health`` request (it moves the stream's phase), a ``\\r`` inside the line, a
wall-clock time in a DST gap or an impossible date — stays on the Python path
(:class:`~postmortem.parsers.sglang.stream.SglangStream`), which is the reference: tests check
that both paths store the same rows.

Batch bodies are read by *templates*, straight from the bytes (:class:`_Bytes`): the ``", "``
separators are found once per block, the lines of a block mostly share one key sequence, so
the keys of one line are read in Python and every other line is checked against them (8-byte
word compares); the values are converted column by column with SWAR digit arithmetic on
8-byte words — integers exactly as ``int()``, decimals as the digits' integer over a power of
ten, which IEEE division rounds exactly as ``float()`` does (up to 15 digits). Lines that fit
no template of their block, or hold a value these readers do not take, go to the Python path.

A journal's messages come with their own time (the journal's, exact): :class:`Given` carries
it with the line numbers, host, unit and pid, and it wins over the prefix time, as in
:meth:`SglangStream.feed`.
"""

from __future__ import annotations

import re
import threading
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

# The lines the fast path may take start ``[YYYY-MM-DD HH:MM:SS`` (ASCII digits), then an
# optional ``.fff`` and rank tags (``_TAIL``), ``"] "``, then ``Decode batch, `` / ``. ``,
# ``Prefill batch, `` / ``. `` or uvicorn's ``INFO: ``.
#: a prefix's text after the seconds: ``.fff`` and rank tags
_TAIL = re.compile(r"(\.[0-9]{1,6})?((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)[0-9]+)*)$", re.ASCII)
_STATUS_RE = r"^\d{3}$"
#: client and path tokens: printable ASCII without spaces (what ``\S+`` surely accepts)
_TOKEN_RE = r"^[\x21-\x7e]+$"
_METHOD_RE = r'^"[A-Z]+$'
_VERSION_RE = r'^HTTP/[\d.]+"$'
#: longest prefix (up to its "] ") the fast path looks at
_MAX_PREFIX = 64
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


_U64 = np.uint64
_M = 0xFFFFFFFFFFFFFFFF
_ASCII0 = _U64(0x3030303030303030)
_HIGH = _U64(0xF0F0F0F0F0F0F0F0)
_SIX = _U64(0x0606060606060606)
_THREES = _U64(0x3333333333333333)
_LOW4 = _U64(0x0F0F0F0F0F0F0F0F)
_LOW7 = _U64(0x7F7F7F7F7F7F7F7F)
_DOTS = _U64(0x2E2E2E2E2E2E2E2E)
#: a word's top ``k`` bytes (little-endian: the last ``k`` characters of 8)
_TOP = np.array([(_M << (8 * (8 - k))) & _M for k in range(9)], dtype=np.uint64)
#: a word's bottom ``k`` bytes (the first ``k`` characters)
_BOTTOM = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
_POW10 = np.array([10.0**i for i in range(23)], dtype=np.float64)
_POW10I = np.array([10**i for i in range(16)], dtype=np.uint64)
_TRUE = int.from_bytes(b"True", "little")


def _pattern(text: str) -> tuple[Any, Any, Any]:
    """(digit positions, literal positions, literal values) of 8 characters: ``d`` a digit,
    ``.`` anything, other characters themselves."""
    digits = literal = value = 0
    for i, c in enumerate(text):
        if c == "d":
            digits |= 0xFF << (8 * i)
        elif c != ".":
            literal |= 0xFF << (8 * i)
            value |= ord(c) << (8 * i)
    return _U64(digits), _U64(literal), _U64(value)


#: ``[YYYY-MM-DD HH:MM:SS`` in three words
_DATED = [_pattern("[dddd-dd"), _pattern("-dd dd:d"), _pattern("d:dd....")]
_FALSE = int.from_bytes(b"False", "little")


_SCRATCH = threading.local()


def _scratch(size: int) -> Any:
    """A reusable byte buffer of at least ``size`` bytes (fresh pages cost more than copying)."""
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None or len(buf) < size:
        buf = _SCRATCH.buf = np.empty(max(size, 1 << 20) * 5 // 4 // 8 * 8 + 8, dtype=np.uint8)
    return buf[:size]


def _eight_digits(x: Any) -> Any:
    """Whether each word is eight ASCII digits (simdjson's test)."""
    return ((x & _HIGH) | (((x + _SIX) & _HIGH) >> _U64(4))) == _THREES


def _parse_eight(x: Any) -> Any:
    """Eight ASCII digits (the first in the lowest byte) → their value (simdjson's SWAR)."""
    x = ((x & _LOW4) * _U64(2561)) >> _U64(8)
    x = ((x & _U64(0x00FF00FF00FF00FF)) * _U64(6553601)) >> _U64(16)
    return ((x & _U64(0x0000FFFF0000FFFF)) * _U64(42949672960001)) >> _U64(32)


def _distinct(words: list[Any], n: int) -> tuple[Any, Any]:
    """Distinct rows of up to three words per row (np.unique along an axis is slow): distinct
    values of one mixed word, checked against the words themselves."""
    if not words:
        return np.zeros((1, 1), dtype=np.uint64), np.zeros(n, dtype=np.int64)
    mixed = words[0].copy()
    for w in words[1:]:
        mixed = mixed * _U64(0x9E3779B97F4A7C15) + w
    _, first, inverse = np.unique(mixed, return_index=True, return_inverse=True)
    keys = np.stack(words, axis=1)
    uniq = keys[first]
    if len(words) > 1 and not (uniq[inverse] == keys).all():  # a collision: do it the slow way
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    return uniq, inverse.reshape(-1)


class _Bytes:
    """The bytes of a string array, with 8-byte loads at any offset (numpy, no copies of
    strings): batch bodies are read from here rather than split into Arrow strings."""

    def __init__(self, arr: Any) -> None:
        n = len(arr)
        bufs = arr.buffers()
        offs = np.frombuffer(bufs[1], dtype=np.int32, count=n + 1, offset=arr.offset * 4).astype(np.int64)
        lo, hi = int(offs[0]), int(offs[-1])
        size = hi - lo
        words = (size + 32) // 8 + 2
        buf = _scratch(words * 8)
        buf[:16] = 0
        buf[16 + size :] = 0
        if size:
            buf[16 : 16 + size] = np.frombuffer(bufs[2], dtype=np.uint8, count=size, offset=lo)
        self.buf = buf
        # a word at every byte offset (numpy reads unaligned words with one gather)
        self.unaligned = np.ndarray(shape=(len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
        self.shift = 16 - lo  # absolute data offset → index in buf
        self.start = offs[:-1]
        self.end = offs[1:]
        self._seps: Any = None

    def byte_at(self, pos: Any) -> Any:
        return self.buf[pos + self.shift]

    def text(self, start: int, end: int) -> str:
        return bytes(self.buf[start + self.shift : end + self.shift]).decode("utf-8", "replace")

    def load(self, pos: Any) -> Any:
        """The 8 bytes from ``pos`` on, as little-endian words."""
        return self.unaligned[pos + self.shift]

    def seps(self) -> Any:
        """Every ``", "`` (its byte offset), in order."""
        if self._seps is None:
            body = self.buf[16 : len(self.buf) - 16]
            comma = np.flatnonzero(body[:-1] == 44)
            self._seps = comma[body[comma + 1] == 32] + (16 - self.shift)
        return self._seps

    def dated(self, start: Any) -> Any:
        """Whether the text from ``start`` begins ``[YYYY-MM-DD HH:MM:SS`` (ASCII digits)."""
        ok = np.ones(len(start), dtype=bool)
        for w, (digits, literal, value) in enumerate(_DATED):
            x = self.load(start + 8 * w)
            ok &= _eight_digits((x & digits) | (_ASCII0 & ~digits)) & ((x & literal) == value)
        return ok

    def tails(self, start: Any, size: int) -> tuple[list[str], list[str | None], list[bool], Any]:
        """The ``size`` bytes from each ``start`` (a prefix's fraction and rank tags), read once
        per distinct value: (fraction texts, normalised rank tags, valid, index of each)."""
        if size > 24:
            return [""], [None], [False], np.zeros(len(start), dtype=np.int64)
        words = [self.load(start + 8 * w) & _BOTTOM[min(8, size - 8 * w)] for w in range((size + 7) // 8)]
        uniq, inverse = _distinct(words, len(start))
        fracs: list[str] = []
        ranks: list[str | None] = []
        ok: list[bool] = []
        for row in uniq.tolist():
            text = b"".join(int(v).to_bytes(8, "little") for v in row)[:size].decode("utf-8", "replace")
            mt = _TAIL.match(text)
            if mt is None:
                fracs.append("")
                ranks.append(None)
                ok.append(False)
                continue
            fracs.append(mt.group(1) or "")
            r = mt.group(2)
            ranks.append(normalise_ranks(r) if r else None)
            ok.append(True)
        return fracs, ranks, ok, inverse.reshape(-1)

    def has(self, start: Any, end: Any, word: bytes) -> Any:
        """Whether the text from ``start`` (ending at ``end``) begins with ``word``."""
        ok = end - start >= len(word)
        for w in range(0, len(word), 8):
            part = word[w : w + 8]
            want = _U64(int.from_bytes(part, "little"))
            ok &= (self.load(start + w) & _BOTTOM[len(part)]) == want
        return ok

    def _digits(self, start: Any, end: Any) -> tuple[Any, Any]:
        """The text from ``start`` to ``end`` (0–16 characters) as an unsigned integer, and
        whether it is all ASCII digits."""
        n = end - start
        lo_n = np.minimum(n, 8)
        hi_n = np.clip(n - 8, 0, 8)
        keep_lo, keep_hi = _TOP[lo_n], _TOP[hi_n]
        x_lo = (self.load(end - 8) & keep_lo) | (_ASCII0 & ~keep_lo)
        x_hi = (self.load(end - 16) & keep_hi) | (_ASCII0 & ~keep_hi)
        good = _eight_digits(x_lo) & _eight_digits(x_hi) & (n >= 0) & (n <= 16)
        return _parse_eight(x_hi) * _U64(100_000_000) + _parse_eight(x_lo), good

    def ints(self, start: Any, end: Any) -> tuple[Any, Any]:
        """``int(text)`` for 1–16 ASCII digits (anything else is not good)."""
        n = end - start
        if not len(n) or int(n.max()) <= 8:
            keep = _TOP[np.clip(n, 0, 8)]
            x = (self.load(end - 8) & keep) | (_ASCII0 & ~keep)
            return _parse_eight(x).astype(np.int64), _eight_digits(x) & (n >= 1) & (n <= 8)
        v, good = self._digits(start, end)
        good &= end > start
        return v.astype(np.int64), good

    def floats(self, start: Any, end: Any) -> tuple[Any, Any]:
        """``float(text)`` for digits with at most one dot, 1–15 digits: the digits as one
        integer divided by a power of ten — exact (both are exact doubles, and IEEE division
        rounds correctly), so equal to ``float()``."""
        n = end - start
        if len(n) and int(n.max()) > 8:
            return self._long_floats(start, end)
        # up to 8 characters: one word; the dot is found, cut out, and the rest are digits
        keep = _TOP[np.clip(n, 0, 8)]
        w = self.load(end - 8) & keep
        y = w ^ _DOTS
        z = ~(((y & _LOW7) + _LOW7) | y | _LOW7) & keep
        b = np.bitwise_count((z & (~z + _U64(1))) - _U64(1)).astype(np.int64) >> 3  # 8: none
        x = w | (_ASCII0 & ~keep)
        cut = ((x & _BOTTOM[np.minimum(b, 8)]) << _U64(8)) | (x & ~_BOTTOM[np.minimum(b + 1, 8)]) | _U64(0x30)
        has_dot = b < 8
        x = np.where(has_dot, cut, x)
        frac = np.where(has_dot, 7 - b, 0)
        good = _eight_digits(x) & (n >= 1 + has_dot) & (n <= 8)
        return _parse_eight(x).astype(np.float64) / _POW10[frac], good

    def _long_floats(self, start: Any, end: Any) -> tuple[Any, Any]:
        n = end - start
        lo_n = np.clip(n, 0, 8)
        hi_n = np.clip(n - 8, 0, 8)
        # find the dot: zero bytes of (text XOR "........"), only within the text
        y_lo = (self.load(end - 8) & _TOP[lo_n]) ^ _DOTS
        y_hi = (self.load(end - 16) & _TOP[hi_n]) ^ _DOTS
        z_lo = ~(((y_lo & _LOW7) + _LOW7) | y_lo | _LOW7)
        z_hi = ~(((y_hi & _LOW7) + _LOW7) | y_hi | _LOW7)
        dots = np.bitwise_count(z_lo) + np.bitwise_count(z_hi)
        # the dot's offset: lowest marked byte of the high word, else of the low word
        tz_hi = np.bitwise_count((z_hi & (~z_hi + _U64(1))) - _U64(1)).astype(np.int64) >> 3
        tz_lo = np.bitwise_count((z_lo & (~z_lo + _U64(1))) - _U64(1)).astype(np.int64) >> 3
        dot = np.where(z_hi != 0, end - 16 + tz_hi, np.where(z_lo != 0, end - 8 + tz_lo, end))
        has_dot = dot < end
        ip, ok_i = self._digits(start, dot)
        fp, ok_f = self._digits(np.minimum(dot + 1, end), end)
        frac = end - np.minimum(dot + 1, end)
        digits = n - has_dot
        good = (dots <= 1) & ok_i & ok_f & (n <= 16) & (digits >= 1) & (digits <= 15)
        frac = np.where(good, frac, 0)
        whole = ip * _POW10I[frac] + fp
        return whole.astype(np.float64) / _POW10[frac], good

    def bools(self, start: Any, end: Any) -> tuple[Any, Any]:
        """``True`` / ``False`` exactly."""
        n = end - start
        w = self.load(start)
        true = (n == 4) & ((w & _BOTTOM[4]) == _U64(_TRUE))
        false = (n == 5) & ((w & _BOTTOM[5]) == _U64(_FALSE))
        return true, true | false


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
        self._ts19_col: Any = None

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
        raw = _Bytes(arr)
        cand &= raw.dated(raw.start)
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
        for e in np.unique(ends[cand]).tolist():
            idx = np.flatnonzero(cand & (ends == e))
            at = raw.start[idx] + e + 2  # the message after the prefix
            end = raw.end[idx]
            decode = raw.has(at, end, b"Decode batch")
            prefill = np.zeros(len(idx), dtype=bool)
            info = np.zeros(len(idx), dtype=bool)
            rest = np.flatnonzero(~decode)
            if len(rest):
                prefill[rest] = raw.has(at[rest], end[rest], b"Prefill batch")
                rest = rest[~prefill[rest]]
                if len(rest):
                    info[rest] = raw.has(at[rest], end[rest], b"INFO: ")
            if not (decode.any() or prefill.any() or info.any()):
                continue
            shared = self._shared(raw, idx, int(e))
            if shared is None:
                continue
            good = shared[0]
            for is_kind, hlen in ((decode, 12), (prefill, 13)):
                # the header's ", " or ". " (both are followed by the pairs)
                sep = raw.byte_at(np.minimum(at + hlen, end - 1))
                space = raw.byte_at(np.minimum(at + hlen + 1, end - 1))
                rows = np.flatnonzero(
                    good & is_kind & ((sep == 44) | (sep == 46)) & (space == 32) & (end > at + hlen + 1)
                )
                if len(rows):
                    self._batches(raw, idx, rows, int(e), hlen, shared[1:])
            rows = np.flatnonzero(good & info)
            if len(rows):
                self._access(idx, rows, int(e), shared[1:])
        if not self.blocks:
            return None
        mask = np.zeros(n, dtype=bool)
        for _name, _table, pos in self.blocks:
            mask[pos] = True
        return FastRows(mask, self.ts_us, self.has_ts, self.blocks)

    # ------------------------------------------------------------------ prefix, time

    def _shared(self, raw: _Bytes, idx: I64, e: int) -> tuple[Mask, Any, Any, Any] | None:
        """For the lines ``idx`` whose prefix ends at ``e``: which of them have a usable prefix
        and time, and per line (aligned with ``idx``) its normalised rank tags, UTC time and
        ``ts_raw`` (None for the last two when the caller gave them)."""
        fracs, ranks, tail_ok, inverse = raw.tails(raw.start[idx] + 20, e - 20)
        good = np.asarray(tail_ok, dtype=bool)[inverse]
        ranks_col = pc.take(pa.array(ranks, pa.string()), pa.array(inverse))
        g = self.given
        if g is not None:
            us = _np(pc.fill_null(pc.cast(pc.take(g.ts, pa.array(idx)), pa.int64()), 0))
            ts = raw_col = None
        else:
            ts19 = pc.take(self._ts19(), pa.array(idx))
            raw_col = (
                ts19
                if not any(fracs)
                else pc.binary_join_element_wise(
                    ts19, pc.take(pa.array(fracs, pa.string()), pa.array(inverse)), ""
                )
            )
            naive, valid = _naive_times(raw_col)
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
        return good, ranks_col, ts, raw_col

    def _ts19(self) -> Any:
        if self._ts19_col is None:
            self._ts19_col = _slice(self.arr, 1, 20)
        return self._ts19_col

    def _common(self, idx: I64, rows: I64, shared: tuple[Any, Any, Any]) -> dict[str, Any]:
        ranks, ts, raw = shared
        take = pa.array(rows)
        k = len(rows)
        pos = idx[rows]
        g = self.given
        if g is not None:
            gt = pa.array(pos)
            return {
                "line_no": pc.take(g.line_no, gt),
                "ts": pc.take(g.ts, gt),
                "ts_raw": pc.take(g.ts_raw, gt),
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
        self, raw: _Bytes, idx: I64, rows: I64, e: int, hlen: int, shared: tuple[Any, Any, Any]
    ) -> None:
        """Batch lines ``idx[rows]`` (``Decode batch`` / ``Prefill batch``, then ``", "`` or
        ``". "``): their ``key: value`` pairs, by template, read from the bytes."""
        pos = idx[rows]
        line_end = raw.end[pos]
        first = raw.start[pos] + e + 2 + hlen + 2  # the first pair
        seps = raw.seps()
        a = np.searchsorted(seps, first)
        b = np.searchsorted(seps, line_end - 1)  # a ", " that ends inside the line
        count = b - a + 1
        phase = "decode" if hlen == 12 else "prefill"
        for m in np.unique(count).tolist():
            sel = np.flatnonzero(count == m)
            ps = np.empty((len(sel), m), dtype=np.int64)
            pe = np.empty((len(sel), m), dtype=np.int64)
            ps[:, 0] = first[sel]
            if m > 1:
                between = seps[a[sel][:, None] + np.arange(m - 1)]
                ps[:, 1:] = between + 2
                pe[:, :-1] = between
            pe[:, -1] = line_end[sel]
            self._templates(raw, ps, pe, rows[sel], idx, phase, shared)

    def _templates(
        self,
        raw: _Bytes,
        ps: Any,
        pe: Any,
        rows: I64,
        idx: I64,
        phase: str,
        shared: tuple[Any, Any, Any],
    ) -> None:
        """Lines ``rows`` whose pairs start at ``ps`` and end at ``pe`` (one column per pair):
        the key sequence of one line is read in Python, every other line is checked against it."""
        todo = np.arange(len(rows))
        for _ in range(MAX_TEMPLATES):
            if not len(todo):
                return
            r0 = int(todo[0])
            keys = _template([raw.text(int(ps[r0, j]), int(pe[r0, j])) for j in range(ps.shape[1])])
            if keys is None:
                todo = todo[1:]
                continue
            tps, tpe = ps[todo], pe[todo]
            match = np.ones(len(todo), dtype=bool)
            for j, key in enumerate(keys):
                if key == _TRAIL:
                    match &= tpe[:, j] == tps[:, j]
                else:
                    match &= raw.has(tps[:, j], tpe[:, j], (key + ": ").encode())
            hit = todo[match]
            todo = todo[~match]
            if len(hit):
                self._template_rows(raw, ps[hit], pe[hit], keys, rows[hit], idx, phase, shared)

    def _template_rows(
        self,
        raw: _Bytes,
        ps: Any,
        pe: Any,
        keys: list[str],
        rows: I64,
        idx: I64,
        phase: str,
        shared: tuple[Any, Any, Any],
    ) -> None:
        """Lines whose keys match the template: convert the values (exactly as ``int()``,
        ``float()`` and the ``True``/``False`` test do); a line with any odd value is left out."""
        k = len(rows)
        ok = np.ones(k, dtype=bool)
        data: dict[int, Any] = {}
        for j, key in enumerate(keys):
            if key == _TRAIL:
                continue
            ci = KEYS[key][0]
            start = ps[:, j] + len(key) + 2
            end = pe[:, j]
            kind = _KIND[ci]
            if kind == _INT:
                vals, good = raw.ints(start, end)
            elif kind == _FLOAT:
                vals, good = raw.floats(start, end)
            else:
                vals, good = raw.bools(start, end)
            ok &= good
            data[ci] = vals  # a later pair with the same column wins, as in parse_batch
        if not ok.any():
            return
        if not ok.all():
            rows = rows[ok]
            data = {ci: vals[ok] for ci, vals in data.items()}
        k = len(rows)
        cols_out = self._common(idx, rows, shared)
        cols_out["phase"] = pa.array([phase] * k, pa.string())
        for ci, name in enumerate(COLUMNS):
            if ci in data:
                cols_out[name] = pa.array(data[ci], _PA_TYPE[_KIND[ci]])
            else:
                cols_out[name] = pa.nulls(k, _PA_TYPE[_KIND[ci]])
        cols_out["extra"] = pa.nulls(k, pa.string())
        cols_out["iteration"] = pa.nulls(k, pa.int64())
        self.blocks.append(("sglang_batches", pa.table(cols_out), idx[rows]))

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
