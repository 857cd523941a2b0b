"""The compiled pass of the ``--query-gpu`` CSV fast path: one loop over a block's bytes.

For each line from a given one on, :func:`scan` splits the row on ``", "`` and reads every
stored cell into its column — integers, MiB values, decimals with a unit, text — exactly as
the per-line converters of :mod:`.common` (``integer``, ``mib``, ``number``, ``text_value``,
``normalise_bus_id``, ``driver_text``) read them, and stops at the first row the per-line
path would treat differently: a header, a banner, a date line, a failure message, a short or
cut row, an error cell, a byte outside printable ASCII, a timestamp not ``YYYY/MM/DD HH:MM:SS.mmm``. A cell
whose value it cannot read exactly (``1e3``, a lower-case bus id, a driver version with a
note) is marked :data:`SLOW` and converted afterwards by the Python converter itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..jit import I64, U8, U, days_from_civil, digits, kernel, valid_date

# what a stored cell holds, after the per-line converter of its field
SKIP, INT, MIB, NUM, TEXT, BUS, DRIVER = 0, 1, 2, 3, 4, 5, 6
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


@kernel
def _at(buf: U8, pos: int, end: int, word: U8) -> bool:
    n = len(word)
    if end - pos < n:
        return False
    for k in range(n):  # noqa: SIM110 - compiled: a plain loop
        if buf[U(pos + k)] != word[U(k)]:
            return False
    return True


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
    if e - s == 3 and _at(buf, s, e, _NA):
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
    if e - 3 >= s and _at(buf, e - 3, e, _MIB):
        e -= 3
        while e > s and buf[U(e - 1)] == 32:
            e -= 1
    elif e - 3 >= s and _at(buf, e - 3, e, _MB):
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
        if _at(buf, p, e, word):
            return True
    return False


@kernel
def _failure_words(buf: U8, s: int, e: int) -> bool:
    """Words that make the per-line path try a line starting with a letter as a failure."""
    return _has(buf, s, e, _UNABLE) or _has(buf, s, e, _FAILED) or _has(buf, s, e, _NVML)


@kernel
def _row_bytes(buf: U8, s: int, e: int) -> bool:
    """Printable ASCII, a first byte the per-line path reads as a row (no banner mark; a
    letter only without the words of a failure, as a row with a timestamp is no header), no
    trailing space or comma, and no error cell."""
    if e <= s:
        return False
    c0 = buf[U(s)]
    if c0 == 61 or c0 == 35 or c0 == 42 or c0 == 126:
        return False
    if ((65 <= c0 <= 90) or (97 <= c0 <= 122)) and _failure_words(buf, s, e):
        return False
    last = buf[U(e - 1)]
    if last == 32 or last == 44:
        return False
    for p in range(s, e):
        b = buf[U(p)]
        if b < 32 or b > 126:
            return False
        if b == 69 and _at(buf, p, e, _ERR):
            return False
        if b == 91 and _at(buf, p, e, _UNKNOWN):
            return False
    return True


@kernel
def _split(buf: U8, s: int, e: int, cs: I64, ce: I64) -> bool:
    """The cells of ``s:e`` split on ``", "`` into ``cs``/``ce``: exactly ``len(cs)`` of them."""
    n = len(cs)
    k = 0
    start = s
    p = s
    while p < e - 1:
        if buf[U(p)] == 44 and buf[U(p + 1)] == 32:
            if k >= n - 1:
                return False
            cs[U(k)] = start
            ce[U(k)] = p
            k += 1
            start = p + 2
            p += 2
        else:
            p += 1
    cs[U(k)] = start
    ce[U(k)] = e
    return k == n - 1


@kernel
def _last_ok(buf: U8, s: int, e: int, unit: U8) -> bool:
    """The last cell is complete: it ends with the header's unit, or is a null token (a cell
    without a unit is complete whenever it is not empty, which the row's bytes ensure)."""
    if len(unit) == 0:
        return True
    if e - len(unit) >= s and _at(buf, e - len(unit), e, unit):
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
def scan(
    buf: U8,
    starts: I64,
    ends: I64,
    begin: int,
    p_ts: int,
    kinds: I64,
    cols: I64,
    unit: U8,
    out: Any,
    stamps: I64,
) -> int:
    """Read the rows of lines ``begin…`` into the column arrays (row ``i`` of line
    ``begin + i``) until the first irregular one; returns how many were read.

    ``kinds[j]`` is cell ``j``'s kind (:data:`SKIP` if not stored) and ``cols[j]`` its column
    in ``out``: the arrays ``(status, ints, floats, ends)``, one row per line (see
    :func:`_cell`). ``stamps`` gets, per row, the timestamp cell's
    start, its minute and its milliseconds (three values a row)."""
    n = len(kinds)
    status, ints, floats, spans = out
    cs = np.empty(n, dtype=np.int64)
    ce = np.empty(n, dtype=np.int64)
    for i in range(begin, len(starts)):
        s = starts[U(i)]
        e = ends[U(i)]
        if not _row_bytes(buf, s, e) or not _split(buf, s, e, cs, ce):
            return i - begin
        if not _last_ok(buf, cs[U(n - 1)], ce[U(n - 1)], unit):
            return i - begin
        ok, minute, ms = _stamp(buf, cs[U(p_ts)], ce[U(p_ts)])
        if not ok:
            return i - begin
        row = i - begin
        stamps[U(3 * row)] = cs[U(p_ts)]
        stamps[U(3 * row + 1)] = minute
        stamps[U(3 * row + 2)] = ms
        for j in range(n):
            if kinds[U(j)] != SKIP:
                c = U(cols[U(j)])
                r = U(row)
                got, ints[r, c], floats[r, c], spans[r, c] = _cell(buf, cs[U(j)], ce[U(j)], kinds[U(j)])
                if got == TOO_BIG:
                    return row
                status[r, c] = got
    return len(starts) - begin


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
