"""The compiled pass of journal-short's vectorised path: the fields of regular lines.

A regular line is ``<stamp> <host> <ident>[<pid>]: <message>``, its stamp made of the file's
number of space-separated tokens (see :mod:`.vector`). :func:`split_lines` finds, per line,
where the stamp, host, identifier token and message are (single spaces separate them, as
``str.split(" ")`` would), checks the fraction of precise stamps, and converts ISO-8601
stamps with a zone offset (``2025-05-25T20:17:19+00:00``, ``…+0000``, ``…Z``) to UTC
microseconds exactly as ``datetime.fromisoformat`` reads them. Other stamps are left to
:class:`~.short.StampParser`, once per distinct value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..jit import I64, U8, U, digits, kernel, wall_clock


@kernel
def _iso_us(buf: U8, s: int, e: int, skip_at: int) -> tuple[bool, int]:
    """``YYYY-MM-DDTHH:MM:SS`` + ``Z`` / ``±HH:MM`` / ``±HHMM`` over ``buf[s:e]`` (the 7 bytes
    of a fraction at ``skip_at`` left out when ``skip_at >= 0``) → UTC microseconds of the
    whole second."""
    if e - s < 20:
        return False, 0
    _, real, secs = wall_clock(buf, s, 84)
    if not real:
        return False, 0
    z = s + 19
    if skip_at >= 0:
        if skip_at != z:
            return False, 0
        z += 7
    rest = e - z
    off = 0
    if rest == 1:
        if buf[U(z)] != 90:  # Z
            return False, 0
    elif rest == 5 or rest == 6:
        sign = buf[U(z)]
        if sign != 43 and sign != 45:
            return False, 0
        oh = digits(buf, z + 1, 2)
        if rest == 6:
            if buf[U(z + 3)] != 58:
                return False, 0
            om = digits(buf, z + 4, 2)
        else:
            om = digits(buf, z + 3, 2)
        if oh < 0 or om < 0 or oh > 23 or om > 59:
            return False, 0
        off = oh * 3600 + om * 60
        if sign == 45:
            off = -off
    else:
        return False, 0
    return True, (secs - off) * 1_000_000


@kernel
def split_lines(  # noqa: C901 - 17 > 15: listed in docs/dev/README.md
    buf: U8,
    starts: I64,
    ends: I64,
    k: int,
    frac: int,
    month_pad: bool,
    iso: bool,
    cand: Any,
    ok: Any,
    stamp_end: I64,
    host_end: I64,
    itok_end: I64,
    frac_us: I64,
    ts_us: I64,
    ts_ok: Any,
) -> int:
    """Per line: whether it splits into ``k`` stamp tokens, host, identifier token and message
    (``cand``), where the stamp, host and identifier token end (each next field starts one
    byte later), and whether it is a regular entry (``ok``: the identifier token ends with a
    colon and is more than that, the host does not, the fraction of a precise stamp is six
    digits). With ``iso``: the stamp's UTC time (``ts_ok``), fraction included. Returns the
    number of candidates."""
    n = len(starts)
    count = 0
    for i in range(n):
        s = starts[i]
        e = ends[i]
        cand[i] = False
        ok[i] = False
        ts_ok[i] = False
        frac_us[i] = 0
        # "Jan  1": RFC 3164 pads the day with a space, which is not a separator
        pad = -1
        if (
            month_pad
            and e - s > 6
            and buf[U(s + 3)] == 32
            and buf[U(s + 4)] == 32
            and 48 <= buf[U(s + 5)] <= 57
        ):
            pad = s + 4
        found = 0
        q = s
        p_stamp = -1
        p_host = -1
        p_itok = -1
        while q < e:
            if buf[U(q)] == 32 and q != pad:
                found += 1
                if found == k:
                    p_stamp = q
                elif found == k + 1:
                    p_host = q
                elif found == k + 2:
                    p_itok = q
                    break
            q += 1
        if p_itok < 0:
            continue
        cand[i] = True
        count += 1
        stamp_end[i] = p_stamp
        host_end[i] = p_host
        itok_end[i] = p_itok
        # identifier token: "x:" at least; the host must not end with a colon
        if p_itok - p_host < 3 or buf[U(p_itok - 1)] != 58:
            continue
        if p_host > p_stamp + 1 and buf[U(p_host - 1)] == 58:
            continue
        skip = -1
        if frac >= 0:
            f = s + frac
            if p_stamp - f < 7 or buf[U(f)] != 46:
                continue
            v = digits(buf, f + 1, 6)
            if v < 0:
                continue
            if f + 7 < p_stamp and (48 <= buf[U(f + 7)] <= 57 or buf[U(f + 7)] >= 128):
                continue  # a seventh digit (or a character that may be one)
            frac_us[i] = v
            skip = f
        ok[i] = True
        if iso:
            good, us = _iso_us(buf, s, p_stamp, skip)
            if good:
                ts_us[i] = us + frac_us[i]
                ts_ok[i] = True
    return count


@kernel
def gather_messages(buf: U8, starts: I64, ends: I64, escaped: Any) -> tuple[I64, U8, int]:
    """The messages ``buf[starts[r]:ends[r]]`` as Arrow ``large_string`` offsets and data, and
    which of them hold an rsyslog escape (``#011`` or ``#012``); returns their number too."""
    m = len(starts)
    offsets = np.empty(m + 1, dtype=np.int64)
    offsets[0] = 0
    total = 0
    for r in range(m):
        total += ends[r] - starts[r]
        offsets[r + 1] = total
    out = np.empty(total, dtype=np.uint8)
    count = 0
    for r in range(m):
        s = starts[r]
        size = ends[r] - s
        o = offsets[r]
        for x in range(size):
            out[U(o + x)] = buf[U(s + x)]
        # (a copy, then an or over every 4-byte window without a branch: LLVM vectorises both
        # loops even for the generic x86-64 target; the loop that tested as it copied did not)
        hit = False
        for x in range(size - 3):
            p = U(o + x)
            d = out[p + U(3)]
            hit |= (out[p] == 35) & (out[p + U(1)] == 48) & (out[p + U(2)] == 49) & ((d == 49) | (d == 50))
        escaped[r] = hit
        count += hit
    return offsets, out, count
