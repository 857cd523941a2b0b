"""The compiled pass of the SGLang fast path: one loop over a block's bytes.

For each line (or journal message) it reads the prefix ``[YYYY-MM-DD HH:MM:SS[.f] ranks] ``
and then a ``Decode batch`` / ``Prefill batch`` body (every ``key: value`` pair into its
column) or a uvicorn access line, and says which lines it read completely
(:data:`DECODE`, :data:`PREFILL`, :data:`ACCESS`; :data:`OTHER` for the rest). The rules are
those of :mod:`.fast`'s docstring; values are read exactly as ``int()``, ``float()`` and the
``True``/``False`` test read them, or the line is left to the Python path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...parsers.jit import I64, U8, U, digits, kernel, wall_clock, word_at

OTHER, DECODE, PREFILL, ACCESS = 0, 1, 2, 3
INT, FLOAT, BOOL = 0, 1, 2

#: access-line spans per line: client, method, path, version (start, end each), status
ACCESS_FIELDS = 9
#: longest prefix (up to its "] ") a line may have
MAX_PREFIX = 64
#: longest text between the seconds and the "] " (fraction and rank tags)
MAX_TAIL = 24

_POW10 = np.array([10.0**i for i in range(23)], dtype=np.float64)

_DECODE = np.frombuffer(b"Decode batch", dtype=np.uint8)
_PREFILL = np.frombuffer(b"Prefill batch", dtype=np.uint8)
_INFO = np.frombuffer(b"INFO: ", dtype=np.uint8)
_HIT = np.frombuffer(b" hit an exception", dtype=np.uint8)
_HEALTH = np.frombuffer(b"/health", dtype=np.uint8)
_HTTP = np.frombuffer(b"HTTP/", dtype=np.uint8)
#: rank tags a prefix may carry (the _TAIL pattern of .fast)
_TAGS = [b"DP", b"PP", b"ATTN_CP", b"MOE_DP", b"TP", b"EP"]
_TAG_BYTES = np.frombuffer(b"".join(_TAGS), dtype=np.uint8)
_TAG_OFFS = np.cumsum([0, *(len(t) for t in _TAGS)]).astype(np.int64)


def key_table(keys: dict[str, int], kinds: list[int]) -> tuple[U8, I64, I64, I64]:
    """The batch keys for the kernel: their bytes, offsets, column and the column's kind."""
    names = list(keys)
    data = np.frombuffer(b"".join(k.encode() for k in names), dtype=np.uint8).copy()
    offs = np.cumsum([0, *(len(k.encode()) for k in names)]).astype(np.int64)
    cols = np.array([keys[k] for k in names], dtype=np.int64)
    return data, offs, cols, np.array(kinds, dtype=np.int64)


@kernel
def _has(buf: U8, start: int, end: int, word: U8) -> bool:
    n = len(word)
    first = word[U(0)]
    for p in range(start, end - n + 1):
        if buf[U(p)] == first:
            ok = True
            for k in range(1, n):
                if buf[U(p + k)] != word[U(k)]:
                    ok = False
                    break
            if ok:
                return True
    return False


@kernel
def _tail(buf: U8, p: int, e: int, tag_bytes: U8, tag_offs: I64) -> tuple[bool, int]:
    """``(\\.[0-9]{1,6})?((?: (DP|PP|ATTN_CP|MOE_DP|TP|EP)[0-9]+)*)`` over ``buf[p:e]`` exactly:
    (matched, end of the fraction: the rank tags follow)."""
    frac_end = p
    if p < e and buf[U(p)] == 46:
        q = p + 1
        while q < e and q - p <= 6 and 48 <= buf[U(q)] <= 57:
            q += 1
        if q == p + 1 or q - p > 7:
            return False, p
        frac_end = q
    q = frac_end
    while q < e:
        if buf[U(q)] != 32:
            return False, p
        q += 1
        found = False
        for t in range(len(tag_offs) - 1):
            a, b = tag_offs[t], tag_offs[t + 1]
            size = b - a
            if e - q < size + 1:
                continue
            same = True
            for k in range(size):
                if buf[U(q + k)] != tag_bytes[U(a + k)]:
                    same = False
                    break
            if same and 48 <= buf[U(q + size)] <= 57:
                q += size
                found = True
                break
        if not found:
            return False, p
        while q < e and 48 <= buf[U(q)] <= 57:
            q += 1
    return True, frac_end


@kernel
def _access(buf: U8, at: int, e: int, out: Any, row: int, bounds: I64) -> bool:  # noqa: C901 - 22 > 15: listed in docs/dev/README.md
    """A uvicorn access line after ``INFO:``: ``client - "METHOD path HTTP/v" status …``."""
    p = at
    while p < e and (buf[U(p)] == 32 or buf[U(p)] == 9 or buf[U(p)] == 11 or buf[U(p)] == 12):
        p += 1  # (a carriage return or newline is not skipped: the line is not read)
    # six space-separated tokens (the sixth runs to the next space or the end)
    t = 0
    s = p
    q = p
    while t < 5:
        while q < e and buf[U(q)] != 32:
            q += 1
        if q >= e:
            return False
        bounds[U(2 * t)] = s
        bounds[U(2 * t + 1)] = q
        t += 1
        q += 1
        s = q
    while q < e and buf[U(q)] != 32:
        q += 1
    bounds[U(10)] = s
    bounds[U(11)] = q
    # client and path: printable ASCII, no space
    for k in (0, 3):
        a, b = bounds[U(2 * k)], bounds[U(2 * k + 1)]
        if b <= a:
            return False
        for x in range(a, b):
            if buf[U(x)] < 33 or buf[U(x)] > 126:
                return False
    if bounds[U(3)] - bounds[U(2)] != 1 or buf[U(bounds[U(2)])] != 45:
        return False
    a, b = bounds[U(4)], bounds[U(5)]  # "METHOD
    if b - a < 2 or buf[U(a)] != 34:
        return False
    for x in range(a + 1, b):
        if buf[U(x)] < 65 or buf[U(x)] > 90:
            return False
    a, b = bounds[U(6)], bounds[U(7)]
    if word_at(buf, a, b, _HEALTH):
        return False
    a, b = bounds[U(8)], bounds[U(9)]  # HTTP/1.1"
    if b - a < 7 or not word_at(buf, a, b, _HTTP) or buf[U(b - 1)] != 34:
        return False
    for x in range(a + 5, b - 1):
        if not (48 <= buf[U(x)] <= 57 or buf[U(x)] == 46):
            return False
    a, b = bounds[U(10)], bounds[U(11)]
    if b - a != 3:
        return False
    status = digits(buf, a, 3)
    if status < 0:
        return False
    for x in range(b, e):  # the rest is not read: it must not hide a carriage return or newline
        if buf[U(x)] == 13 or buf[U(x)] == 10:
            return False
    out[U(0), U(row)] = bounds[U(0)]
    out[U(1), U(row)] = bounds[U(1)]
    out[U(2), U(row)] = bounds[U(4)] + 1
    out[U(3), U(row)] = bounds[U(5)]
    out[U(4), U(row)] = bounds[U(6)]
    out[U(5), U(row)] = bounds[U(7)]
    out[U(6), U(row)] = bounds[U(8)] + 5
    out[U(7), U(row)] = bounds[U(9)] - 1
    out[U(8), U(row)] = status
    return True


@kernel
def _key_at(buf: U8, ps: int, e: int, guess: int, key_bytes: U8, key_offs: I64) -> int:
    """The known key at ``ps``, followed by ``": "`` (``guess``, the previous line's key at
    this pair, tried first); -1 for none."""
    for probe in range(len(key_offs)):
        k = guess if probe == 0 else probe - 1
        if k < 0 or (probe > 0 and k == guess):
            continue
        a = key_offs[U(k)]
        size = key_offs[U(k + 1)] - a
        if e - ps < size + 2 or buf[U(ps + size)] != 58 or buf[U(ps + size + 1)] != 32:
            continue
        same = True
        for x in range(size):
            if buf[U(ps + x)] != key_bytes[U(a + x)]:
                same = False
                break
        if same:
            return k
    return -1


@kernel
def _pairs(  # noqa: C901 - 18 > 15: listed in docs/dev/README.md
    buf: U8,
    first: int,
    e: int,
    row: int,
    key_bytes: U8,
    key_offs: I64,
    key_cols: I64,
    col_kind: I64,
    fvals: Any,
    ivals: Any,
    present: Any,
    last_key: I64,
) -> bool:
    """The ``key: value, key: value`` body from ``first`` to ``e`` into the row's columns.

    Pairs are separated by ``", "``; a value ends at the first comma (one not followed by a
    space belongs to the value, which then reads as nothing valid). Every byte of the body
    is looked at, so a line with a carriage return or newline in it is never read.

    ``present`` comes all false (a zeroed array): a line that is not read leaves the marks
    of its pairs read so far for :func:`scan` to clear (clearing each row's marks first, 15
    strided writes a line, cost about 20 ns a batch line)."""
    ps = first
    j = 0
    while True:
        if ps == e and j > 0:
            return True  # a trailing ", "
        guess = last_key[j] if j < len(last_key) else -1
        hit = _key_at(buf, ps, e, guess, key_bytes, key_offs)
        if hit < 0:
            return False
        if j < len(last_key):
            last_key[j] = hit
        # the value, read while it is scanned for its end (the first comma), with no second
        # pass and no call (the pairs were 11 % of a server log's ingest CPU, perf): an
        # integer is 1-16 ASCII digits (int()'s value), a float 1-15 digits with at most one
        # dot and 16 characters in all (the digits as an integer over a power of ten: both
        # exact doubles, and IEEE division rounds once, so float()'s value), a flag exactly
        # True or False; anything else leaves the line to the Python path
        p = ps + key_offs[hit + 1] - key_offs[hit] + 2
        vs = p
        col = key_cols[hit]
        kind = col_kind[col]
        if kind == 2:
            if (
                e - p >= 4
                and buf[U(p)] == 84
                and buf[U(p + 1)] == 114
                and buf[U(p + 2)] == 117
                and buf[U(p + 3)] == 101
            ):
                ivals[U(col), U(row)] = 1
                p += 4
            elif (
                e - p >= 5
                and buf[U(p)] == 70
                and buf[U(p + 1)] == 97
                and buf[U(p + 2)] == 108
                and buf[U(p + 3)] == 115
                and buf[U(p + 4)] == 101
            ):
                ivals[U(col), U(row)] = 0
                p += 5
            else:
                return False
            if p < e and buf[U(p)] != 44:
                return False
        else:
            v = 0
            count = 0
            frac = -1
            while p < e:
                c = buf[U(p)]
                if c == 44:
                    break
                if 48 <= c <= 57:
                    v = v * 10 + (c - 48)
                    count += 1
                    if frac >= 0:
                        frac += 1
                elif c == 46 and kind == 1 and frac < 0:
                    frac = 0
                else:
                    return False
                p += 1
            if p - vs > 16 or count < 1 or count > (16 if kind == 0 else 15):
                return False
            if kind == 0:
                ivals[U(col), U(row)] = v
            else:
                fvals[U(col), U(row)] = float(v) if frac <= 0 else float(v) / _POW10[frac]
        last = p >= e
        if not last and (p + 1 >= e or buf[U(p + 1)] != 32):
            return False  # a comma inside the value
        present[U(col), U(row)] = True  # a later pair with the same column wins, as in parse_batch
        if last:
            return True
        ps = p + 2
        j += 1


@kernel
def scan(  # noqa: C901 - 22 > 15: listed in docs/dev/README.md
    buf: U8,
    starts: I64,
    ends: I64,
    rows: Any,
    check_hit: bool,
    key_bytes: U8,
    key_offs: I64,
    key_cols: I64,
    col_kind: I64,
    kind: Any,
    naive_us: I64,
    date_ok: Any,
    raw_end: I64,
    close_at: I64,
    batch_pos: I64,
    fvals: Any,
    ivals: Any,
    present: Any,
    access_pos: I64,
    access: Any,
) -> tuple[int, int]:
    """Classify and read every line ``i`` with ``rows[i]``: ``kind[i]`` says what it is (OTHER:
    left to the Python path). For the others: the prefix's wall-clock time as naive
    microseconds (``date_ok``: a real date), where ``ts_raw`` ends (after the fraction; the
    rank tags follow) and where the prefix's ``]`` is. Batch lines become rows of the
    column-major ``fvals`` / ``ivals`` / ``present`` (row ``r`` is line ``batch_pos[r]``),
    access lines rows of ``access`` (line ``access_pos[r]``). Returns the numbers of batch and
    access rows. ``present`` must come all false."""
    n = len(starts)
    decode, prefill, info, hit_words = _DECODE, _PREFILL, _INFO, _HIT
    last_key = np.full(64, -1, dtype=np.int64)
    bounds = np.empty(12, dtype=np.int64)
    nb = 0
    na = 0
    for i in range(n):
        kind[i] = 0
        if not rows[i]:
            continue
        s = starts[i]
        e = ends[i]
        if e - s < 22:
            continue
        # the first "] " ends the prefix
        close = -1
        lim = min(e - 1, s + MAX_PREFIX + 1)
        for p in range(s, lim):
            if buf[U(p)] == 93 and buf[U(p + 1)] == 32:
                close = p - s
                break
        if close < 20 or close > MAX_PREFIX or close - 20 > MAX_TAIL:
            continue
        # [YYYY-MM-DD HH:MM:SS
        if buf[U(s)] != 91:
            continue
        shaped, real, secs = wall_clock(buf, s + 1, 32)
        if not shaped:
            continue
        if check_hit and _has(buf, s, e, hit_words):
            continue  # an exception report
        ok, frac_end = _tail(buf, s + 20, s + close, _TAG_BYTES, _TAG_OFFS)
        if not ok:
            continue
        at = s + close + 2
        k = 0
        if word_at(buf, at, e, decode):
            hlen = 12
            k = 1
        elif word_at(buf, at, e, prefill):
            hlen = 13
            k = 2
        elif word_at(buf, at, e, info):
            k = 3
        else:
            continue
        if k == 3:
            if not _access(buf, at + 5, e, access, na, bounds):
                continue
            access_pos[na] = i
            na += 1
        else:
            h = at + hlen
            if h + 1 >= e or (buf[U(h)] != 44 and buf[U(h)] != 46) or buf[U(h + 1)] != 32:
                continue
            if not _pairs(
                buf, h + 2, e, nb, key_bytes, key_offs, key_cols, col_kind, fvals, ivals, present, last_key
            ):
                for c in range(present.shape[0]):  # the marks of the pairs it read: row nb is reused
                    present[U(c), U(nb)] = False
                continue
            batch_pos[nb] = i
            nb += 1
        us = 0
        if frac_end > s + 20:
            places = 0
            for p in range(s + 21, frac_end):
                us = us * 10 + (buf[U(p)] - 48)
                places += 1
            while places < 6:
                us *= 10
                places += 1
        date_ok[i] = real
        naive_us[i] = secs * 1_000_000 + us if real else 0
        raw_end[i] = frac_end
        close_at[i] = s + close
        kind[i] = k
    return nb, na
