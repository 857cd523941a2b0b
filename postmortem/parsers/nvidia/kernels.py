"""The compiled pass of the ``--query-gpu`` CSV fast path.

:func:`scan` goes once over a block's bytes from a given line on: it splits each row on
``", "`` and reads its timestamp, and stops at the first line the per-line path would treat
differently — a header, a banner, a date line, a failure message, a short or cut row, an
error cell, a byte outside printable ASCII, a timestamp not ``YYYY/MM/DD HH:MM:SS.mmm``.
:func:`column` then reads each stored column (integers, MiB values, decimals with a unit,
text) exactly as the per-line converters of :mod:`.common` (``integer``, ``mib``, ``number``,
``text_value``, ``normalise_bus_id``, ``driver_text``) read them; a cell whose value it cannot
read exactly (``1e3``, a lower-case bus id, a driver version with a note) is marked
:data:`SLOW` and converted afterwards by the Python converter itself, and an integer too big
for its column ends the block there (the per-line path takes that row).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..jit import I64, U8, U, days_from_civil, digits, kernel, valid_date, word_at

# what a stored cell holds, after the per-line converter of its field
INT, MIB, NUM, TEXT, BUS, DRIVER = 1, 2, 3, 4, 5, 6
# how a cell was read: NULL (the converter gives None), VALUE, SLOW (left to the converter),
# TOO_BIG (an integer its column cannot hold: the row is left to the per-line path)
NULL, VALUE, SLOW, TOO_BIG = 0, 1, 2, 3

#: decimals of up to this many digits are read as integer / 10**k, which IEEE division rounds
#: exactly as ``float()`` does (both operands exact below 2**53 and 10**22)
MAX_DIGITS = 15

_POW10 = np.array([10.0**i for i in range(MAX_DIGITS + 1)], dtype=np.float64)
_ERR = np.frombuffer(b"ERR!", dtype=np.uint8)
_UNKNOWN = np.frombuffer(b"[Unknown Error]", dtype=np.uint8)
_MIB = np.frombuffer(b"MiB", dtype=np.uint8)
_MB = np.frombuffer(b" MB", dtype=np.uint8)
_NA = np.frombuffer(b"N/A", dtype=np.uint8)
_UNABLE = np.frombuffer(b"Unable to determine", dtype=np.uint8)
_FAILED = np.frombuffer(b"NVIDIA-SMI has failed", dtype=np.uint8)
_NVML = np.frombuffer(b"NVML", dtype=np.uint8)
#: text_value's null words (common._NULL_TEXT) but "-" and "N/A", tested on their own
_WORDS = [b"ERR!", b"Unknown Error", b"Not Found", b"Not Supported"]
_WORD_BYTES = np.frombuffer(b"".join(_WORDS), dtype=np.uint8)
_WORD_OFFS = np.cumsum([0, *(len(w) for w in _WORDS)]).astype(np.int64)
#: bytes :func:`_line` has nothing to do with (printable ASCII but the comma and the first
#: bytes of ``ERR!`` and ``[Unknown Error]``): 1 for the others. One load and one test a byte
#: where five comparisons were: the pass over the bench's CSV took 0.55x as long
_STOPS = np.array([0 if 32 <= b <= 126 and b not in b",E[" else 1 for b in range(256)], dtype=np.uint8)


@kernel
def _is_digit(b: int) -> bool:
    return 48 <= b <= 57


@kernel
def _all_digits(buf: U8, s: int, e: int) -> bool:
    if e <= s:
        return False
    for p in range(s, e):  # noqa: SIM110 - compiled: a plain loop
        if not _is_digit(buf[U(p)]):
            return False
    return True


@kernel
def _strip(buf: U8, s: int, e: int) -> tuple[int, int]:
    """The span without its spaces at either end (the rows hold no other whitespace)."""
    while s < e and buf[U(s)] == 32:
        s += 1
    while e > s and buf[U(e - 1)] == 32:
        e -= 1
    return s, e


@kernel
def _null_token(buf: U8, s: int, e: int) -> bool:
    """``_is_null`` of query_csv: empty, ``N/A``, ``-`` or ``[…]`` (``s:e`` stripped)."""
    if e == s:
        return True
    if e - s == 1 and buf[U(s)] == 45:
        return True
    if e - s == 3 and word_at(buf, s, e, _NA):
        return True
    return bool(buf[U(s)] == 91 and buf[U(e - 1)] == 93)


@kernel
def _int_cell(buf: U8, s: int, e: int, longest: int) -> tuple[int, int]:
    """``integer``: digits (after stripping) → the number; anything else → None."""
    s, e = _strip(buf, s, e)
    if not _all_digits(buf, s, e):
        return NULL, 0
    if e - s > longest:
        return TOO_BIG, 0
    return VALUE, digits(buf, s, e - s)


@kernel
def _mib_cell(buf: U8, s: int, e: int) -> tuple[int, int]:
    """``mib``: ``123``, ``123 MiB``, ``123MiB``, ``123 MB`` → 123; anything else → None."""
    s, e = _strip(buf, s, e)
    if e - 3 >= s and word_at(buf, e - 3, e, _MIB):
        e -= 3
        while e > s and buf[U(e - 1)] == 32:
            e -= 1
    elif e - 3 >= s and word_at(buf, e - 3, e, _MB):
        e -= 3
    if not _all_digits(buf, s, e):
        return NULL, 0
    if e - s > 18:
        return TOO_BIG, 0
    return VALUE, digits(buf, s, e - s)


@kernel
def _decimal(buf: U8, s: int, e: int) -> tuple[bool, float]:
    """``-?[0-9]+(\\.[0-9]+)?`` of at most :data:`MAX_DIGITS` digits, as ``float()`` reads it."""
    neg = s < e and buf[U(s)] == 45
    if neg:
        s += 1
    mant = 0
    count = 0
    dot = -1
    for p in range(s, e):
        b = buf[U(p)]
        if _is_digit(b):
            mant = mant * 10 + (b - 48)
            count += 1
        elif b == 46 and dot < 0 and p > s and p < e - 1:
            dot = p
        else:
            return False, 0.0
    if count == 0 or count > MAX_DIGITS:
        return False, 0.0
    value = mant / _POW10[U(e - dot - 1)] if dot >= 0 else float(mant)
    return True, -value if neg else value


@kernel
def _num_cell(buf: U8, s: int, e: int) -> tuple[int, float]:
    """``number``: a decimal with an optional unit (``300.25 W``, ``0 %``, ``38C``)."""
    s, e = _strip(buf, s, e)
    if e == s:
        return NULL, 0.0
    c0 = buf[U(s)]
    if (c0 == 91 or c0 == 78 or c0 == 69 or c0 == 45) and not (e - s > 1 and _is_digit(buf[U(s + 1)])):
        return NULL, 0.0
    for p in range(s, e):
        if buf[U(p)] == 32:  # "value unit": the value is the text before the first space
            ok, v = _decimal(buf, s, p)
            return (VALUE, v) if ok else (SLOW, 0.0)
    cut = e
    while cut > s and not _is_digit(buf[U(cut - 1)]):
        cut -= 1
    if cut == s:
        return NULL, 0.0
    ok, v = _decimal(buf, s, cut)
    return (VALUE, v) if ok else (SLOW, 0.0)


@kernel
def _null_word(buf: U8, s: int, e: int) -> bool:
    for w in range(len(_WORD_OFFS) - 1):
        ws = _WORD_OFFS[U(w)]
        if e - s == _WORD_OFFS[U(w + 1)] - ws:
            same = True
            for k in range(e - s):
                if buf[U(s + k)] != _WORD_BYTES[U(ws + k)]:
                    same = False
                    break
            if same:
                return True
    return False


@kernel
def _text_cell(buf: U8, s: int, e: int) -> tuple[int, int, int]:
    """``text_value``: the stripped text, or None for a null token."""
    s, e = _strip(buf, s, e)
    if _null_token(buf, s, e) or _null_word(buf, s, e):
        return NULL, s, s
    return VALUE, s, e


@kernel
def _upper_hex(b: int) -> bool:
    return _is_digit(b) or 65 <= b <= 70


@kernel
def _bus_cell(buf: U8, s: int, e: int) -> tuple[int, int, int]:
    """``normalise_bus_id``: a bus id already in its normal form ``00000000:9B:00.0`` is kept;
    any other non-empty text is left to the converter."""
    s, e = _strip(buf, s, e)
    if e == s:
        return NULL, s, s
    if e - s != 16 or buf[U(s + 8)] != 58 or buf[U(s + 11)] != 58 or buf[U(s + 14)] != 46:
        return SLOW, s, e
    for k in range(14):
        if k != 8 and k != 11 and not _upper_hex(buf[U(s + k)]):
            return SLOW, s, e
    f = buf[U(s + 15)]
    return (VALUE, s, e) if 48 <= f <= 55 else (SLOW, s, e)


@kernel
def _driver_cell(buf: U8, s: int, e: int) -> tuple[int, int, int]:
    """``driver_text``: ``text_value``, and a note after the version left to the converter."""
    kind, s, e = _text_cell(buf, s, e)
    if kind == VALUE:
        for p in range(s, e - 1):
            if buf[U(p)] == 32 and buf[U(p + 1)] == 91:
                return SLOW, s, e
    return kind, s, e


@kernel
def _has(buf: U8, s: int, e: int, word: U8) -> bool:
    for p in range(s, e - len(word) + 1):  # noqa: SIM110 - compiled: a plain loop
        if word_at(buf, p, e, word):
            return True
    return False


@kernel
def _failure_words(buf: U8, s: int, e: int) -> bool:
    """Words that make the per-line path try a line starting with a letter as a failure."""
    return _has(buf, s, e, _UNABLE) or _has(buf, s, e, _FAILED) or _has(buf, s, e, _NVML)


@kernel
def _ends_ok(buf: U8, s: int, e: int) -> bool:
    """A first byte the per-line path reads as a row (no banner mark; a letter only without
    the words of a failure, as a row with a timestamp is no header) and no trailing space or
    comma."""
    if e <= s:
        return False
    c0 = buf[U(s)]
    if c0 == 61 or c0 == 35 or c0 == 42 or c0 == 126:
        return False
    if ((65 <= c0 <= 90) or (97 <= c0 <= 122)) and _failure_words(buf, s, e):
        return False
    last = buf[U(e - 1)]
    return bool(last != 32 and last != 44)


@kernel
def _line(buf: U8, s: int, cs: I64, ce: I64) -> tuple[int, bool]:
    """The end of the line at ``s`` (its newline or the buffer's end) and whether it is a row
    of ``len(cs)`` cells split on ``", "`` into ``cs``/``ce``, in printable ASCII, without an
    error cell; stops early (at a false answer) on anything else."""
    n = len(cs)
    end = len(buf)
    k = 0
    start = s
    p = s
    while p < end:
        b = buf[U(p)]
        if _STOPS[U(b)] == 0:
            p += 1
            continue
        if b == 10:
            break
        if (
            b < 32
            or b > 126
            or (b == 69 and word_at(buf, p, end, _ERR))
            or (b == 91 and word_at(buf, p, end, _UNKNOWN))
        ):
            return p, False
        if b == 44 and p + 1 < end and buf[U(p + 1)] == 32:
            if k == n - 1:
                return p, False
            cs[U(k)] = start
            ce[U(k)] = p
            k += 1
            start = p + 2
            p += 1
        p += 1
    cs[U(k)] = start
    ce[U(k)] = p
    return p, k == n - 1 and _ends_ok(buf, s, p)


@kernel
def _last_ok(buf: U8, s: int, e: int, unit: U8) -> bool:
    """The last cell is complete: it ends with the header's unit, or is a null token (a cell
    without a unit is complete whenever it is not empty, which the row's bytes ensure)."""
    if len(unit) == 0:
        return True
    if e - len(unit) >= s and word_at(buf, e - len(unit), e, unit):
        return True
    s, e = _strip(buf, s, e)
    return _null_token(buf, s, e)


@kernel
def _stamp(buf: U8, s: int, e: int) -> tuple[bool, int, int]:
    """``YYYY/MM/DD HH:MM:SS.mmm`` at ``s:e``: its minute (days since 1970 × 1440 + minutes
    of the day) and its milliseconds within the minute."""
    if e - s != 23 or buf[U(s + 4)] != 47 or buf[U(s + 7)] != 47 or buf[U(s + 10)] != 32:
        return False, 0, 0
    if buf[U(s + 13)] != 58 or buf[U(s + 16)] != 58 or buf[U(s + 19)] != 46:
        return False, 0, 0
    y = digits(buf, s, 4)
    mo = digits(buf, s + 5, 2)
    d = digits(buf, s + 8, 2)
    hh = digits(buf, s + 11, 2)
    mi = digits(buf, s + 14, 2)
    ss = digits(buf, s + 17, 2)
    ms = digits(buf, s + 20, 3)
    if y < 0 or mo < 0 or d < 0 or hh < 0 or mi < 0 or ss < 0 or ms < 0:
        return False, 0, 0
    if not valid_date(y, mo, d) or hh > 23 or mi > 59 or ss > 59:
        return False, 0, 0
    return True, days_from_civil(y, mo, d) * 1440 + hh * 60 + mi, ss * 1000 + ms


@kernel
def _cell(buf: U8, s: int, e: int, kind: int) -> tuple[int, int, float, int]:
    """One stored cell: how it was read, its integer (or its span's start), its decimal, and
    its span's end. A cell left to the converter gives its whole span."""
    iv, fv, b = 0, 0.0, 0
    if kind == INT:
        st, iv = _int_cell(buf, s, e, 9)
    elif kind == MIB:
        st, iv = _mib_cell(buf, s, e)
    elif kind == NUM:
        st, fv = _num_cell(buf, s, e)
    elif kind == TEXT:
        st, iv, b = _text_cell(buf, s, e)
    elif kind == BUS:
        st, iv, b = _bus_cell(buf, s, e)
    else:
        st, iv, b = _driver_cell(buf, s, e)
    if st == SLOW:  # the converter reads the cell as printed
        iv, b = s, e
    return st, iv, fv, b


@kernel
def scan(buf: U8, pos: int, rows: int, p_ts: int, unit: U8, cells: Any, stamps: Any) -> tuple[int, int]:
    """Split up to ``rows`` lines from byte ``pos`` on into their cells until the first
    irregular line; returns how many were read and where the next line starts.

    ``cells`` (two arrays, cells × rows) gets the start and end of every cell; ``stamps``
    (rows × 2) the timestamp's minute (days since 1970 × 1440 + minutes of the day) and its
    milliseconds within the minute. The stored cells are then read by :func:`column`."""
    starts, ends = cells
    n = starts.shape[0]
    cs = np.empty(n, dtype=np.int64)
    ce = np.empty(n, dtype=np.int64)
    for row in range(rows):
        e, ok = _line(buf, pos, cs, ce)
        if not ok or not _last_ok(buf, cs[U(n - 1)], ce[U(n - 1)], unit):
            return row, pos
        ok, minute, ms = _stamp(buf, cs[U(p_ts)], ce[U(p_ts)])
        if not ok:
            return row, pos
        r = U(row)
        stamps[r, 0] = minute
        stamps[r, 1] = ms
        for j in range(n):
            starts[U(j), r] = cs[U(j)]
            ends[U(j), r] = ce[U(j)]
        pos = e + 1
    return rows, pos


@kernel
def _numbers(buf: U8, starts: I64, ends: I64, kind: int, out: Any) -> int:
    """:func:`column` for integers, MiB values and numbers. The plain shapes — digits, for a
    number an optional ``.`` and digits, then the cell's end or a space and a unit (for MiB
    values only `` MiB``) — are read in the loop, without calls (numba does not inline them,
    and a call passing the buffer costs about 5 ns a cell); the others by :func:`_cell`."""
    status, ints, floats, span_ends = out
    longest = 9 if kind == INT else 18 if kind == MIB else MAX_DIGITS
    for row in range(len(starts)):
        r = U(row)
        s = starts[r]
        e = ends[r]
        mant = 0
        dot = -1
        p = s
        while p < e:
            b = buf[U(p)]
            if 48 <= b <= 57:
                mant = mant * 10 + (b - 48)
            elif b == 46 and dot < 0 and p > s and kind == NUM:
                dot = p
            elif b != 32 or kind == INT or p == s or p == e - 1:
                p = s  # not plain
                break
            else:
                break
            p += 1
        places = p - dot - 1 if dot >= 0 else 0
        tail = e - p  # 0, or the unit with its space
        plain = s < p <= s + longest + (dot >= 0) and places != 0 if dot >= 0 else s < p <= s + longest
        if plain and kind == MIB and tail:
            plain = tail == 4 and buf[U(p + 1)] == 77 and buf[U(p + 2)] == 105 and buf[U(p + 3)] == 66
        if plain:
            status[r] = VALUE
            ints[r] = mant
            floats[r] = mant / _POW10[U(places)]
            continue
        got, ints[r], floats[r], span_ends[r] = _cell(buf, s, e, kind)
        if got == TOO_BIG:
            return row
        status[r] = got
    return len(starts)


@kernel
def _plain_text(buf: U8, s: int, e: int) -> bool:
    """Text ``text_value`` keeps as it is: no space at either end, not a null token (they all
    start with ``[``, ``-``, ``N``, ``E`` or ``U``)."""
    if e <= s:
        return False
    c0 = buf[U(s)]
    return bool(
        c0 != 32 and c0 != 91 and c0 != 45 and c0 != 78 and c0 != 69 and c0 != 85 and buf[U(e - 1)] != 32
    )


@kernel
def column(buf: U8, starts: I64, ends: I64, kind: int, out: Any) -> int:
    """Read one stored column's cells (their spans ``starts``/``ends``) into ``out``: the
    arrays ``(status, ints, floats, span_ends)`` (see :func:`_cell`). Returns how many rows
    were read: all, or up to the first integer too big for its column. Plain cells are read
    in the loop, the others by :func:`_cell`."""
    if kind in (INT, MIB, NUM):
        return _numbers(buf, starts, ends, kind, out)
    status, ints, floats, span_ends = out
    for row in range(len(starts)):
        r = U(row)
        s = starts[r]
        e = ends[r]
        if kind == TEXT and _plain_text(buf, s, e):
            status[r] = VALUE
            ints[r] = s
            span_ends[r] = e
        else:
            status[r], ints[r], floats[r], span_ends[r] = _cell(buf, s, e, kind)
    return len(starts)


@kernel
def gather32(buf: U8, starts: I64, ends: I64) -> tuple[np.ndarray, U8]:
    """The spans as one buffer with Arrow ``string`` (32-bit) offsets."""
    n = len(starts)
    offsets = np.empty(n + 1, dtype=np.int32)
    offsets[0] = 0
    total = 0
    for i in range(n):
        total += ends[U(i)] - starts[U(i)]
        offsets[U(i + 1)] = total
    out = np.empty(total, dtype=np.uint8)
    for i in range(n):
        o = offsets[U(i)]
        s = starts[U(i)]
        for k in range(ends[U(i)] - s):
            out[U(o + k)] = buf[U(s + k)]
    return offsets, out
