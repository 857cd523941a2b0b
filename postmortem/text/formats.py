"""Formatters: the one place where durations, sizes, numbers and times become text.

Each is also a Jinja filter (:data:`FILTERS`). Where two sections of a report print the same
quantity differently, they use two named variants here, not two private helpers:

===================  =======================  =======================================
filter               733 s / 671088640 kB      used for
===================  =======================  =======================================
``human``            ``12 min 13 s``           sentences (summary, recommendations)
``duration``         ``12 min 13 s``           table cells (``—`` when unknown, tenths
                                               under 10 s, days past 48 h)
``seconds``          ``733 s (12 min 13 s)``   a budget to set (timeouts, load times)
``size_kb``          ``640 GiB``               kernel and systemd sizes (kB)
``size_mib``         ``640 GiB``               nvidia-smi and host-RAM sizes (MiB)
``num``              ``1,234`` / ``1,234.5``   table cells (``—`` when unknown)
``offset``           ``-0.38 ms``              clock offsets
===================  =======================  =======================================
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from decimal import ROUND_HALF_UP, Decimal
from typing import Any


def human(seconds: float | None) -> str:
    """``733`` → ``12 min 13 s``.

    >>> human(733), human(42), human(3600 * 5 + 60), human(None)
    ('12 min 13 s', '42 s', '5 h 1 min', 'an unknown time')
    """
    if seconds is None:
        return "an unknown time"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    m, sec = divmod(s, 60)
    if m < 60:
        return f"{m} min {sec} s" if sec else f"{m} min"
    h, m = divmod(m, 60)
    return f"{h} h {m} min" if m else f"{h} h"


def duration(seconds: float | None) -> str:
    """A table cell's duration: ``570`` → ``9 min 30 s``; ``None`` → ``—``.

    >>> duration(570), duration(5.5), duration(None), duration(-61), duration(86400 * 3)
    ('9 min 30 s', '5.5 s', '—', '-1 min 1 s', '3 d 0 h')
    """
    if seconds is None:
        return "—"
    s = float(seconds)
    if s < 0:
        return "-" + duration(-s)
    if s < 60:
        return f"{s:.0f} s" if s >= 10 or s == int(s) else f"{s:.1f} s"
    m, sec = divmod(round(s), 60)
    if m < 60:
        return f"{m} min {sec} s" if sec else f"{m} min"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(h, 24)
    return f"{d} d {h} h"


def seconds(value: float | None) -> str:
    """A budget in seconds with its reading: ``733`` → ``733 s (12 min 13 s)``.

    >>> seconds(733), seconds(600), seconds(90), seconds(None)
    ('733 s (12 min 13 s)', '600 s (10 min)', '90 s', '?')
    """
    if value is None:
        return "?"
    s = round(value)
    if s < 120:
        return f"{s} s"
    m, sec = divmod(s, 60)
    return f"{s} s ({m} min {sec} s)" if sec else f"{s} s ({m} min)"


def half_up(value: float, places: int = 0) -> str:
    """``value`` to ``places`` decimals, thousands separated, a half rounded away from zero as a
    reader rounds: a figure given as 34.5 GiB in one place is 35 GiB in another, never the 34
    of Python's round-half-to-even.

    >>> half_up(34.5), half_up(-34.5), half_up(2.25, 1), half_up(1234.4)
    ('35', '-35', '2.3', '1,234')
    """
    if not math.isfinite(value):
        return f"{value:,.{places}f}"
    exact = Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return f"{exact:,.{places}f}"


def size_kb(kb: float | None) -> str:
    """``671088640`` → ``640 GiB``; ``524288`` → ``512 MiB``; ``1610612`` → ``1.5 GiB``; a half
    rounded up (:func:`half_up`: 34.5 GiB → ``35 GiB``).

    >>> size_kb(671088640), size_kb(524288), size_kb(1610612), size_kb(None), size_kb(-20447 * 1024)
    ('640 GiB', '512 MiB', '1.5 GiB', '?', '-20 GiB')
    >>> size_kb(34.5 * 1024**2)
    '35 GiB'
    """
    if kb is None:
        return "?"
    mib = kb / 1024
    if abs(mib) < 1024:  # (a fall is negative: its unit is its size's)
        return f"{half_up(mib)} MiB"
    gib = mib / 1024
    return f"{half_up(gib)} GiB" if abs(gib) >= 10 else f"{half_up(gib, 1)} GiB"


def capfirst(text: str) -> str:
    """A sentence's first letter upper-cased — but for a name cased its own way (``vLLM``).

    >>> capfirst("the kernel killed it"), capfirst("vLLM's main process stopped"), capfirst("")
    ('The kernel killed it', "vLLM's main process stopped", '')
    """
    if len(text) > 1 and text[1].isupper():
        return text
    return text[:1].upper() + text[1:]


def size_kb_cell(kb: float | None) -> str:
    """:func:`size_kb` for a table's column, where rows are compared: a tenth of a GiB from 1 GiB
    up (eight ranks of 75.9, 75.8, … GiB stay told apart), whole MiB below (not "0.0 GiB").

    >>> size_kb_cell(79587328), size_kb_cell(671088640), size_kb_cell(1040384), size_kb_cell(2048)
    ('75.9 GiB', '640.0 GiB', '1,016 MiB', '2 MiB')
    """
    if kb is None:
        return "?"
    mib = kb / 1024
    return f"{mib:,.0f} MiB" if mib < 1024 else f"{mib / 1024:,.1f} GiB"


def size_mib(mib: float | None) -> str:
    """:func:`size_kb` of a size in MiB.

    >>> size_mib(143718), size_mib(None)
    ('140 GiB', '?')
    """
    return size_kb(mib * 1024) if mib is not None else "?"


def num(value: Any, digits: int = 0) -> str:
    """A table cell's number: thousands separated, ``digits`` decimals for a float, ``—`` for none.

    >>> num(1234), num(1234.56, 1), num(None), num("x")
    ('1,234', '1,234.6', '—', 'x')
    """
    if value is None:
        return "—"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def offset(value: float) -> str:
    """A clock offset: ``-0.00038`` → ``-0.38 ms``; ``7200`` → ``+7200.0 s (+2.0 h)``.

    >>> offset(-0.00038), offset(7200), offset(86400 * 3)
    ('-0.38 ms', '+7200.0 s (+2.0 h)', '+259200.0 s (+3.00 d)')
    """
    s = float(value)
    if abs(s) < 1:
        return f"{s * 1000:+.2f} ms"
    text = f"{s:+.1f} s"
    if abs(s) >= 3600:
        text += f" ({s / 3600:+.1f} h)" if abs(s) < 86400 * 2 else f" ({s / 86400:+.2f} d)"
    return text


def utc_time(ts: datetime | None) -> str:
    """``20:17:19`` (UTC), the time of day a sentence gives beside "UTC".

    >>> utc_time(datetime(2025, 5, 25, 20, 17, 19, tzinfo=UTC)), utc_time(None)
    ('20:17:19', '?')
    """
    return f"{ts.astimezone(UTC):%H:%M:%S}" if ts is not None else "?"


def utc_minute(ts: datetime | None) -> str:
    """``2025-05-25 20:17`` (UTC).

    >>> utc_minute(datetime(2025, 5, 25, 20, 17, 19, tzinfo=UTC))
    '2025-05-25 20:17'
    """
    return f"{ts.astimezone(UTC):%Y-%m-%d %H:%M}" if ts is not None else "?"


def clock(ts: datetime | None, zone: tzinfo) -> str:
    """``20:17:19 UTC``, or ``20:17:19 CEST (18:17:19 UTC)`` for another zone."""
    from ..timeutil import zone_name

    if ts is None:
        return "an unknown time"
    utc = ts.astimezone(UTC)
    if zone_name(zone) in ("UTC", "Etc/UTC"):
        return f"{utc:%H:%M:%S} UTC"
    local = ts.astimezone(zone)
    return f"{local:%H:%M:%S} {local.tzname()} ({utc:%H:%M:%S} UTC)"


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 process``, ``2 processes``.

    >>> plural(1, "process", "processes"), plural(3, "retraction")
    ('1 process', '3 retractions')
    """
    return f"{n} {word if n == 1 else (words or word + 's')}"


def retraction_words(events: int, requests: int) -> str:
    """How many retractions (the server's lines) and how many requests they retracted.

    >>> retraction_words(56, 307), retraction_words(1, 2), retraction_words(3, 0)
    ('56 retractions (307 requests retracted)', '1 retraction (2 requests retracted)', '3 retractions')
    """
    words = f"{events} retraction{'s' if events != 1 else ''}"
    if requests:
        words += f" ({requests} request{'s' if requests != 1 else ''} retracted)"
    return words


def percent(fraction: float) -> str:
    """``0.94`` → ``94%`` (as Python's ``:.0%``).

    >>> percent(0.943), percent(0.98)
    ('94%', '98%')
    """
    return f"{fraction:.0%}"


def fold(text: str) -> str:
    """Whitespace (line breaks included) folded to single spaces: a template's paragraph.

    >>> fold("  a\\n   b  c \\n")
    'a b c'
    """
    return " ".join(str(text).split())


def article(text: str) -> str:
    """``text`` after "a" or "an", as the number it starts with is said: "an 8 min load", "an
    11 GiB limit", "a 1 h 5 min load".

    >>> [article(t) for t in ("8 min 18 s", "11 GiB", "18,000 MiB", "1 h", "110 s", "80 GiB", "2 s")]
    ['an 8 min 18 s', 'an 11 GiB', 'an 18,000 MiB', 'a 1 h', 'a 110 s', 'an 80 GiB', 'a 2 s']
    """
    text = str(text)
    lead = re.match(r"\d[\d,]*", text)
    if lead is None:
        return f"{'an' if text[:1].lower() in ('a', 'e', 'i', 'o') else 'a'} {text}"
    group = lead.group(0).split(",")[0]  # "18,000": eighteen thousand
    return f"{'an' if group.startswith('8') or group in ('11', '18') else 'a'} {text}"


#: the Jinja filters (also registered by :func:`postmortem.text.templates.environment`)
FILTERS: dict[str, Callable[..., str]] = {
    "human": human,
    "duration": duration,
    "dur": duration,  # the name templates used before this module
    "seconds": seconds,
    "size_kb": size_kb,
    "capfirst": capfirst,
    "size_kb_cell": size_kb_cell,
    "size_mib": size_mib,
    "num": num,
    "offset": offset,
    "utc_time": utc_time,
    "utc_minute": utc_minute,
    "plural": plural,
    "percent": percent,
    "retraction_words": retraction_words,
    "fold": fold,
    "a": article,
}
