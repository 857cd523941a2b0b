"""``journalctl -o short*`` text and classic syslog files: one parser, ``journal-short``.

Every line is ``<stamp> [<host> ]<ident>[[<pid>]]: <message>``; the stamp is any of

=====================  ============================================  ====================
mode / writer          stamp                                         ``ts_inferred``
=====================  ============================================  ====================
short, RFC 3164        ``Mar 14 09:00:00`` (locale month, no year)   ``year``
short-precise          ``Mar 14 09:00:00.120000``                    ``year``
short-iso(-precise),   ``2025-03-14T09:00:00[.120000]+0000|+00:00``  NULL
RFC 3339 (rsyslog)
short-full, with-unit  ``Fri 2025-03-14 09:00:00 UTC``               NULL (``zone`` when
                                                                     the zone word is not
                                                                     known)
short-unix             ``1741942800.120000``                         NULL
short-monotonic/delta  ``[10800.120000]`` (seconds since boot)        ``boot`` (or ts NULL)
=====================  ============================================  ====================

Year-less stamps get their year from ``--year``, else a ``-- Logs begin at …`` header, else
``--since``, else the file's mtime, and roll over at New Year (:class:`~postmortem.timeutil.
YearInference`); zone-less ones are local time in ``--tz``. Continuation lines of a multi-line
message (indented to the message column) belong to the previous entry; rsyslog's ``#012``
escapes become newlines. ``with-unit`` prints the unit in place of the identifier: it is
stored as both. Header, boot-marker and ``journalctl -x`` catalog lines (``-- …``) are
recognised and ignored. For systemd (pid 1) lines the unit comes from the message text.

>>> text = '''-- Boot 3f1c2b9a8e7d4c6b9a1f2e3d4c5b6a79 --
... Mar 14 11:42:05 gpu-node-7 systemd[1]: llm-qwen.service: Failed with result 'oom-kill'.
... Mar 14 11:42:06 gpu-node-7 kernel: Mem-Info:
...                                    active_anon:1 inactive_anon:2'''
>>> from postmortem.parsers.base import TableBatch
>>> out, ctx = run_parser(JournalShortParser(), text, ParseContext(year=2025))
>>> [type(o).__name__ for o in out if not isinstance(o, TableBatch)][:1]
['UnitEvent']
>>> ev = out[0]; ev.unit, ev.action, ev.result, ev.ts.isoformat(), ev.ts_inferred
('llm-qwen.service', 'failed', 'oom-kill', '2025-03-14T11:42:05+00:00', 'year')
>>> rows = [r for o in out if isinstance(o, TableBatch) for r in o.data.to_pylist()]
>>> rows[1]["ident"], rows[1]["message"], rows[1]["boot_id"][:8]
('kernel', 'Mem-Info:\\nactive_anon:1 inactive_anon:2', '3f1c2b9a')
>>> ctx.parsed_lines, ctx.ignored_lines
(3, 1)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from typing import ClassVar

from ...lazyre import lazy_re
from ...records import JournalHeader
from ...timeutil import ForwardLocalizer, Inferred, YearInference, localize_abbrev, month_number, parse_iso
from .. import register
from ..base import Head, LineChunk, Output, ParseContext, Parser, run_parser
from .sink import EPOCH, JournalSink
from .systemd import is_unit_name

__all__ = ["JournalShortParser", "ParseContext", "StampParser", "run_parser"]

#: every table a journal parser may write
JOURNAL_TABLES = (
    "journal_entries",
    "unit_events",
    "boots",
    "oom_kills",
    "k8s_events",
    "containers",
    "journal_headers",
)
#: the structured modes (json, export, verbose) also name the containers whose output they carry
STRUCTURED_TABLES = JOURNAL_TABLES

_CACHE_MAX = 1 << 17
#: journalctl -x catalog lines start "-- " (older versions) or "░░ " (newer ones, e.g. v252)
CATALOG = "░░"
_HEADER_DATE = lazy_re(r"(?:Logs begin at|Journal begins at) \w+ (\d{4})-(\d\d)-(\d\d)")
#: the whole header: the first and last entries' wall times, each with its zone word
_HEADER_SPAN = lazy_re(
    r"^-- (?:Logs begin|Journal begins) at \S+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (\S+?)"
    r"(?:, ends? at \S+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (\S+?))?\. --$"
)
_BOOT_MARKER = lazy_re(r"^-- Boot ([0-9a-f]{32}) --$")
_TIME = lazy_re(r"\d\d:\d\d:\d\d$")

# stamp kinds
ISO, MONTH, FULL, UNIX, MONO = "iso", "month", "full", "unix", "mono"

Stamp = tuple[datetime | None, str, str | None, float | None, int, str]
# (ts, ts_raw, ts_inferred, monotonic_s, position after the stamp and its space, kind)


def _frac_us(text: str) -> int:
    return int(text[:6].ljust(6, "0"))


class StampParser:
    """Recognises and converts the stamp at the start of a line (with per-second caches).

    >>> p = StampParser(ParseContext(year=2025))
    >>> p.parse("2025-03-14T02:00:00.120000-0700 h x: m")[:3]
    (datetime.datetime(2025, 3, 14, 9, 0, 0, 120000, tzinfo=datetime.timezone.utc), '2025-03-14T02:00:00.120000-0700', None)
    >>> p.parse("Mar  4 09:00:00 h x: m")[0].isoformat(), p.parse("1741942800.5 h x: m")[0].isoformat()
    ('2025-03-04T09:00:00+00:00', '2025-03-14T09:00:00.500000+00:00')
    >>> p.parse("[ 8600.000000 < 8595.000000 >] h1 app[7]: line1")[3]
    8600.0
    >>> p.parse("garbage") is None
    True
    """

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.zone: tzinfo = ctx.zone
        self._iso: dict[str, tuple[datetime | None, str | None]] = {}
        self._month: dict[str, datetime | None] = {}
        self._full: dict[str, tuple[datetime, str | None]] = {}
        self._unix: dict[str, datetime] = {}
        self._months: dict[str, int | None] = {}
        self._years: YearInference | None = None
        self.header_date: tuple[int, int, int] | None = None
        #: a full date a year-less line carries in its message (a server logger's ``[2025-03-14 09:00:02]``):
        #: (year, month, day, line_no), found in the first chunk by :meth:`find_embedded_date`
        self.embedded_date: tuple[int, int, int, int] | None = None
        self.looked_for_dates = False
        self.boot_id: str | None = None
        #: boots seen after the first entry (``--boot-time`` describes the first one only)
        self.segment = 0
        self.seen_entry = False
        self._anchor_cache: dict[tuple[str | None, str | None], datetime | None] = {}
        #: zone-less wall-clock stamps, read in line order: the hour that repeats when clocks
        #: go back is told apart by its order (its times are never cached)
        self.forward = ForwardLocalizer(self.zone)

    def find_embedded_date(self, chunk: LineChunk) -> None:
        """Look once, in the first chunk, for a year-less line whose message starts with a full
        date of the same month and day (±1: the logger's zone against the host's) (a server logger's prefix ``[2025-03-14 09:00:02]``, a Python
        logging stamp): a better witness of the year than the file's mtime."""
        if self.looked_for_dates:
            return
        self.looked_for_dates = True
        self._find_header(chunk)
        for m in _EMBEDDED_DATE.finditer(chunk.data[: 1 << 20]):
            month = month_number(m.group(1).decode())
            y, mm, dd = int(m.group(3)), int(m.group(4)), int(m.group(5))
            if month == mm and abs(int(m.group(2)) - dd) <= 1 and 1970 <= y <= 9999:
                line_no = chunk.first_line_no + chunk.data.count(b"\n", 0, m.start())
                self.embedded_date = (y, mm, dd, line_no)
                return

    def _find_header(self, chunk: LineChunk) -> None:
        """The year of a ``-- Logs begin at …`` header that opens the file, read before any
        stamp is (the vector pass reads a chunk's stamps before its other lines)."""
        head = chunk.data[:512]
        if head.startswith((b"-- Logs begin at ", b"-- Journal begins at ")):
            m = _HEADER_DATE.search(head.split(b"\n", 1)[0].decode("utf-8", "replace"))
            if m:
                self.header_date = (int(m.group(1)), int(m.group(2)), int(m.group(3)))

    # ------------------------------------------------------------------ dispatch

    def parse(self, line: str) -> Stamp | None:
        c = line[:1]
        if c.isdigit():
            if line[4:5] == "-" and line[10:11] == "T":
                return self._parse_iso(line)
            sp = line.find(" ")
            tok = line[:sp] if sp > 0 else line
            if tok[-1:] in ("月", "월"):
                return self._parse_month(line)
            return self._parse_unix(line, sp)
        if c == "[":
            return self._parse_mono(line)
        if c.isalpha():
            if line[3:4] == " " and line[8:9] == "-" and line[4:8].isdigit():
                return self._parse_full(line)
            return self._parse_month(line)
        if c == " ":
            s = line.lstrip(" ")
            lead = len(line) - len(s)
            if lead <= 2 and ("月" in s[:3] or "월" in s[:3]):
                got = self._parse_month(s)
                if got is not None:
                    return got[0], got[1], got[2], got[3], got[4] + lead, got[5]
        return None

    # ------------------------------------------------------------------ kinds

    def _parse_iso(self, line: str) -> Stamp | None:
        end = line.find(" ", 19)
        if end < 0:
            return None
        raw = line[:end]
        us = -1
        key = raw
        if raw[19:20] in (".", ","):
            j = 20
            while j < len(raw) and raw[j].isdigit():
                j += 1
            if j == 20:
                return None
            us = _frac_us(raw[20:j])
            key = raw[:19] + raw[j:]
        hit = self._iso.get(key)
        if hit is None:
            if len(self._iso) > _CACHE_MAX:
                self._iso.clear()
            folded = False
            if len(key) == 19:
                try:
                    hit = (self.forward.localize(datetime.fromisoformat(key)), Inferred.ZONE)
                    folded = self.forward.folded
                except ValueError:
                    hit = (None, None)
            else:
                ts = parse_iso(key)
                hit = (ts, None)
            if not folded:
                self._iso[key] = hit
        ts, inferred = hit
        if ts is None:
            return None
        if us >= 0:
            ts = ts.replace(microsecond=us)
        return ts, raw, inferred, None, end + 1, ISO

    def _month_of(self, name: str) -> int | None:
        hit = self._months.get(name, -1)
        if hit == -1:
            hit = month_number(name)
            self._months[name] = hit
        return hit

    def _year_for(self, month: int, day: int) -> int:
        if self._years is None:
            ctx = self.ctx
            # the file's own word (its header, a dated message) beats --since, a guess from the
            # window asked for
            if ctx.year is None and self.header_date is not None:
                y, m, d = self.header_date
                self._years = YearInference(y if (month, day) >= (m, d) else y + 1)
                ctx.note(
                    f"year-less stamps: the first line's year, {self._years.base_year}, is from the "
                    "journal's header"
                )
            elif ctx.year is None and self.embedded_date is not None:
                # that line came at or after the first: a first month-day later than its own
                # means the file began before New Year
                y, m, d, line_no = self.embedded_date
                self._years = YearInference(y if (month, day) <= (m, d) else y - 1)
                ctx.note(
                    f"year-less stamps: the first line's year, {self._years.base_year}, is from the full "
                    f"date line {line_no} carries in its message"
                )
            else:
                self._years = ctx.year_inference(month, day)
        return self._years.year_for(month, day)

    def _parse_month(self, line: str) -> Stamp | None:
        i = line.find(" ")
        if i <= 0 or i > 12:
            return None
        j = i + 1
        while line[j : j + 1] == " ":
            j += 1
        k = line.find(" ", j)
        if k < 0 or k - j > 2 or not line[j:k].isdigit():
            return None
        t = k + 1
        key = line[: t + 8]
        if len(key) < t + 8:
            return None
        us = -1
        end = t + 8
        if line[end : end + 1] == ".":
            e = end + 1
            while line[e : e + 1].isdigit():
                e += 1
            us = _frac_us(line[end + 1 : e])
            end = e
        if line[end : end + 1] not in (" ", ""):
            return None
        ts = self._month.get(key, EPOCH)
        if ts is EPOCH:
            ts = None
            month = self._month_of(line[:i])
            clock = line[t : t + 8]
            if month is not None and _TIME.match(clock):
                day = int(line[j:k])
                try:
                    naive = datetime(  # noqa: DTZ001 - local wall clock, localised below
                        self._year_for(month, day),
                        month,
                        day,
                        int(clock[:2]),
                        int(clock[3:5]),
                        int(clock[6:8]),
                    )
                    ts = self.forward.localize(naive)
                except ValueError:
                    ts = None
            if len(self._month) > _CACHE_MAX:
                self._month.clear()
            if ts is None or not self.forward.folded:
                self._month[key] = ts
        if ts is None:
            return None
        if us >= 0:
            ts = ts.replace(microsecond=us)
        return ts, line[:end], Inferred.YEAR, None, end + 1, MONTH

    def _parse_full(self, line: str) -> Stamp | None:
        # Fri 2025-03-14 09:00:00[.120000] UTC
        if line[14:15] != " " or line[17:18] != ":":
            return None
        end = 23
        us = -1
        if line[23:24] == ".":
            e = 24
            while line[e : e + 1].isdigit():
                e += 1
            us = _frac_us(line[24:e])
            end = e
        if line[end : end + 1] != " ":
            return None
        zend = line.find(" ", end + 1)
        if zend < 0:
            return None
        word = line[end + 1 : zend]
        key = line[4:23] + " " + word
        hit = self._full.get(key)
        if hit is None:
            try:
                naive = datetime.fromisoformat(line[4:14] + "T" + line[15:23])
            except ValueError:
                return None
            utc, exact = localize_abbrev(naive, word, self.zone)
            hit = (utc, None if exact else Inferred.ZONE)
            if len(self._full) > _CACHE_MAX:
                self._full.clear()
            self._full[key] = hit
        ts, inferred = hit
        if us >= 0:
            ts = ts.replace(microsecond=us)
        return ts, line[:zend], inferred, None, zend + 1, FULL

    def _parse_unix(self, line: str, sp: int) -> Stamp | None:
        if sp <= 0:
            return None
        tok = line[:sp]
        sec, dot, frac = tok.partition(".")
        if not sec.isdigit() or (dot and not frac.isdigit()):
            return None
        base = self._unix.get(sec)
        if base is None:
            try:
                base = EPOCH + timedelta(seconds=int(sec))
            except OverflowError:
                return None
            if len(self._unix) > _CACHE_MAX:
                self._unix.clear()
            self._unix[sec] = base
        ts = base.replace(microsecond=_frac_us(frac)) if frac else base
        return ts, tok, None, None, sp + 1, UNIX

    def _parse_mono(self, line: str) -> Stamp | None:
        end = line.find("]")
        if end < 0 or end > 48:
            return None
        inner = line[1:end]
        lt = inner.find("<")
        if lt >= 0:
            inner = inner[:lt]
        try:
            mono = float(inner)
        except ValueError:
            return None
        if line[end + 1 : end + 2] != " ":
            return None
        ts, inferred = self.anchor(mono)
        return ts, line[: end + 1], inferred, mono, end + 2, MONO

    def stamp(self, raw: str) -> tuple[datetime | None, str | None, str | None]:
        """A stamp on its own (no message after it) → ``(ts, ts_inferred, kind)``; ts None if
        ``raw`` is not exactly one stamp."""
        st = self.parse(raw + " x")
        if st is None or st[1] != raw:
            return None, None, None
        return st[0], st[2], st[5]

    def anchor(self, mono: float) -> tuple[datetime | None, str | None]:
        """Wall-clock time of a monotonic stamp: the anchor of the boot named by the last
        ``-- Boot … --`` marker; else ``--boot-time`` (first boot of the file only); else, with
        no boot id, the only known boot of ``--host``; else None. A boot id without an anchor
        borrows no other boot's, and several candidate boots give NULL rather than a guess."""
        key = (self.boot_id, self.ctx.host)
        if key not in self._anchor_cache:
            anchors = self.ctx.anchors
            boot_ts: datetime | None = None
            given = self.ctx.boot_time if self.segment == 0 else None
            if self.boot_id:
                hit = [a for a in anchors.anchors if a.boot_id == self.boot_id]
                boot_ts = hit[0].boot_ts if hit else given
            elif given is not None:
                boot_ts = given
            elif self.segment:
                boot_ts = None  # a later boot without an id: nothing to anchor it
            else:
                # no boot id (journalctl does not announce the first boot): only a single
                # known boot of the host can be trusted; several → ts stays NULL
                host = self.ctx.host
                known = {a.boot_id for a in anchors.anchors if host is None or a.host in (None, host)}
                if len(known) == 1:
                    found = anchors.find(host=host)
                    boot_ts = found.boot_ts if found else None
            self._anchor_cache[key] = boot_ts
        boot_ts = self._anchor_cache[key]
        if boot_ts is None:
            return None, None
        return boot_ts + timedelta(microseconds=round(mono * 1_000_000)), Inferred.BOOT

    def new_boot(self, boot_id: str | None) -> None:
        """A ``-- Boot … --`` / ``-- Reboot --`` marker."""
        if self.seen_entry:
            self.segment += 1
        self.boot_id = boot_id
        self._anchor_cache.clear()


def split_ident(tok: str) -> tuple[str, int | None, str | None]:
    """``python3[5150]:`` → ``('python3', 5150, None)``; ``foo.service[7]:`` → unit too.

    >>> split_ident("python3[5150]:"), split_ident("kernel:"), split_ident("a.service[7]:")
    (('python3', 5150, None), ('kernel', None, None), ('a.service', 7, 'a.service'))
    """
    t = tok[:-1]
    pid: int | None = None
    if t.endswith("]"):
        lb = t.rfind("[")
        if lb > 0 and t[lb + 1 : -1].isdigit():
            pid = int(t[lb + 1 : -1])
            t = t[:lb]
    return t, pid, (t if is_unit_name(t) else None)


def split_line(line: str, pos: int) -> tuple[str | None, str | None, int]:
    """After the stamp: ``(host, ident token with its colon, message start)``.

    >>> split_line("X h python3[1]: hi", 2), split_line("X kernel: hi", 2), split_line("X h -- MARK --", 2)
    (('h', 'python3[1]:', 16), (None, 'kernel:', 10), ('h', None, 4))
    """
    sp = line.find(" ", pos)
    tok = line[pos:sp] if sp >= 0 else line[pos:]
    after = sp + 1 if sp >= 0 else len(line)
    if tok.endswith(":"):
        return None, tok, after
    sp2 = line.find(" ", after)
    itok = line[after:sp2] if sp2 >= 0 else line[after:]
    if itok.endswith(":") and len(itok) > 1:
        return tok, itok, (sp2 + 1 if sp2 >= 0 else len(line))
    return tok, None, after


def _unescape(message: str) -> str:
    return message.replace("#012", "\n").replace("#011", "\t")


@dataclass
class _SniffTally:
    """What :meth:`JournalShortParser.sniff` counted over the head's lines."""

    ok: int = 0
    tried: int = 0
    journal_like: int = 0
    header: bool = False
    hosts: Counter[str | None] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)

    def count(self, line: str, st: Stamp | None) -> None:
        """Count one line that had a chance to be a short line; ``st`` is its stamp or None."""
        if st is None:
            return
        if st[5] == ISO and "," in st[1]:
            return  # dmesg --time-format iso
        host, itok, _ = split_line(line, st[4])
        if itok is None:
            return
        self.ok += 1
        self.hosts[host] += 1
        self.kinds[st[5]] += 1
        if host is None and (itok == "kernel:" or (itok.endswith("]:") and "[" in itok)):
            self.journal_like += 1

    def score(self) -> int:
        """The sniff score from the counts."""
        if not self.ok:
            return 95 if self.header and not self.tried else 0
        share = self.ok / self.tried
        if self.kinds.most_common(1)[0][0] == MONO and not self._mono_fits():
            return 0
        if share < 0.5:
            return 0
        score = 70 + int(20 * share)
        return min(98, score + (8 if self.header else 0))

    def _mono_fits(self) -> bool:
        # dmesg lines ("[ 1.2] usb 1-1: …") are not "[stamp] host ident:"; without host
        # names (--no-hostname) most lines still name an "ident[pid]:" or "kernel:"
        top_host, top_n = self.hosts.most_common(1)[0]
        if top_host is None:
            return self.journal_like * 10 >= self.tried * 6
        return top_n / self.ok >= 0.8


@register
class JournalShortParser(Parser):
    """journalctl short, short-precise, short-iso(-precise), short-full, with-unit, short-unix,
    short-monotonic/delta, and rsyslog/syslog files (RFC 3164 / RFC 3339). See the module
    docstring for the stamps and the inference flags."""

    entry_cut = True  # see :func:`entry_groups`

    name = "journal-short"
    description = "journalctl -o short* text and classic syslog files (/var/log/messages, syslog)"
    tables: ClassVar[tuple[str, ...]] = JOURNAL_TABLES
    priority = 10
    appendable = True

    def sniff(self, head: Head) -> int:
        stamps = StampParser(ParseContext(year=2000))
        tally = _SniffTally()
        for line in head.lines:
            if not line or line.startswith(CATALOG):
                continue
            if line.startswith("-- "):
                tally.header = tally.header or line.startswith(
                    ("-- Logs begin at ", "-- Journal begins at ", "-- Boot ")
                )
                continue
            if line[0] in " \t" and "月" not in line[:5] and "월" not in line[:5]:
                continue
            tally.tried += 1
            tally.count(line, stamps.parse(line))
        return tally.score()

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        state = ShortState(ctx)

        def looked_at(src: Iterable[LineChunk]) -> Iterator[LineChunk]:
            for chunk in src:
                state.stamps.find_embedded_date(chunk)  # the first chunk as read, whole
                yield chunk

        for group in entry_groups(looked_at(chunks)):
            yield from state.chunk(group)
        yield from state.close()


def meta_line(line_no: int, line: str, stamps: StampParser, sink: JournalSink) -> None:
    """A ``-- …`` line: boot markers switch the boot; a journal header gives the year, and its
    times are kept (a ``journal_headers`` row)."""
    if line.startswith(("-- Logs begin at ", "-- Journal begins at ")):
        header = journal_header(line_no, line, stamps.zone)
        if header is not None:
            sink.add_output(header)
    if line.startswith("-- Boot "):
        m = _BOOT_MARKER.match(line)
        if m:
            stamps.new_boot(m.group(1))
            sink.new_boot()
    elif line == "-- Reboot --":
        stamps.new_boot(None)
        sink.new_boot()
    elif stamps.header_date is None and line.startswith(("-- Logs begin at ", "-- Journal begins at ")):
        m = _HEADER_DATE.search(line)
        if m:
            stamps.header_date = (int(m.group(1)), int(m.group(2)), int(m.group(3)))


def journal_header(line_no: int, line: str, zone: tzinfo) -> JournalHeader | None:
    """The times of a ``-- Journal begins at …, ends at … --`` header (zone words as
    ``short-full`` stamps read them: ``ts_inferred`` ``zone`` when ``zone`` had to be assumed).

    >>> from datetime import UTC
    >>> h = journal_header(1, "-- Journal begins at Tue 2026-08-04 20:37:31 CEST, ends at "
    ...                       "Tue 2026-08-04 21:47:31 CEST. --", UTC)
    >>> h.begins_ts.isoformat(), h.ends_ts.isoformat(), h.ts_inferred
    ('2026-08-04T18:37:31+00:00', '2026-08-04T19:47:31+00:00', None)
    >>> journal_header(1, "-- Logs begin at Thu 2025-05-01 12:00:00 UTC. --", UTC).ends_ts is None
    True
    """
    m = _HEADER_SPAN.match(line)
    if m is None:
        return None
    try:
        begins, exact = localize_abbrev(datetime.fromisoformat(m.group(1)), m.group(2), zone)
        ends: datetime | None = None
        if m.group(3):
            ends, exact_end = localize_abbrev(datetime.fromisoformat(m.group(3)), m.group(4), zone)
            exact = exact and exact_end
    except ValueError:
        return None  # (an impossible date: no header to go by)
    return JournalHeader(line_no, begins, ends, None if exact else Inferred.ZONE)


#: a syslog-stamped line (``Mar 14 09:00:02 host ident[pid]: …``) whose message starts with a
#: dated stamp (``[2025-03-14 09:00:02]``, ``2025-03-14 09:00:02,123``): month name, day, then year,
#: month, day of the inner stamp
_EMBEDDED_DATE = lazy_re(
    rb"^([A-Z][a-z]{2}) +(\d{1,2}) \d\d:\d\d:\d\d(?:\.\d+)? [^\n]{1,200}?: \[?(\d{4})-(\d\d)-(\d\d)[ T]\d\d:\d\d",
    re.MULTILINE,
)

#: an entry group (a stamped line and its continuation lines) longer than this is not carried
#: to the next chunk whole: its later continuation lines are counted but not appended
MAX_CARRY = 8 << 20


def entry_groups(chunks: Iterable[LineChunk]) -> Iterator[LineChunk]:
    """Chunks regrouped so that no entry is split: the last line that is neither indented nor
    blank (and the lines after it) move to the front of the next chunk — unless lines are
    missing between the two chunks (an overlong line the reader dropped): then they stay
    apart, so that every line keeps its own line number.

    >>> groups = entry_groups([LineChunk(1, "a\\nb"), LineChunk(3, "  c\\nd"), LineChunk(6, "e")])
    >>> [(g.text, g.first_line_no) for g in groups]
    [('a', 1), ('b\\n  c', 2), ('d', 4), ('e', 6)]
    """
    carry: bytes | None = None
    carry_first = 0
    carry_lines = 0
    for chunk in chunks:
        if carry is None and chunk.entry_end:
            yield chunk  # the reader cut it before an entry: nothing of it continues
            continue
        data = chunk.data
        first = chunk.first_line_no
        lines = len(chunk)
        if carry is not None:
            if first == carry_first + carry_lines:
                data = carry + b"\n" + data
                first = carry_first
                lines += carry_lines
            else:
                yield LineChunk(carry_first, data=carry, count=carry_lines)
            carry = None
        pos = data.rfind(b"\n")
        while pos >= 0 and data[pos + 1 : pos + 2] in (b" ", b"\t", b"\n", b""):
            pos = data.rfind(b"\n", 0, pos)
        if pos < 0:
            if len(data) < MAX_CARRY:
                carry, carry_first, carry_lines = data, first, lines
                continue
            yield LineChunk(first, data=data, count=lines)
            continue
        carry = data[pos + 1 :]
        carry_lines = carry.count(b"\n") + 1
        carry_first = first + lines - carry_lines
        yield LineChunk(first, data=data[:pos], count=lines - carry_lines)
    if carry is not None:
        yield LineChunk(carry_first, data=carry, count=carry_lines)


class ShortState:
    """Per-file state of journal-short: the vectorised path for regular lines, the per-line
    path (the reference) for everything else."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.sink = JournalSink(ctx)
        self.stamps = StampParser(ctx)
        self.idents: dict[str, tuple[str, int | None, str | None]] = {}
        from .vector import VectorShort

        self.vector: VectorShort | None = VectorShort(self)

    def ident(self, itok: str) -> tuple[str, int | None, str | None]:
        hit = self.idents.get(itok)
        if hit is None:
            if len(self.idents) > 100_000:
                self.idents.clear()
            hit = self.idents[itok] = split_ident(itok)
        return hit

    def chunk(self, chunk: LineChunk) -> Iterator[Output]:
        if self.vector is not None:
            done = self.vector.chunk(chunk)
            if done is not None:
                yield from done
                return
        yield from self.python_chunk(chunk)

    def python_chunk(self, chunk: LineChunk) -> Iterator[Output]:
        """The per-line path: every line of ``chunk`` in order."""
        ctx, sink, stamps = self.ctx, self.sink, self.stamps
        entry = sink.entry
        parsed = ignored = 0
        issues: list[Output] = []
        # chunks start at an entry (entry_groups): nothing before them can be continued
        msg_col, have = 0, False
        for line_no, line in chunk:
            c = line[:1]
            if c == " " or c == "\t":
                if have and not ("月" in line[:5] or "월" in line[:5]):
                    text = line[msg_col:] if not line[:msg_col].strip() else line.lstrip()
                    sink.extend_message(text)
                    parsed += 1
                    continue
                st = stamps.parse(line)
                if st is None:
                    if have:
                        sink.extend_message(line.lstrip())
                        parsed += 1
                    else:
                        issues.append(ctx.issue(line_no, "continuation line before any entry", line))
                    continue
            elif (c == "-" and line.startswith("--")) or (c == "░" and line.startswith(CATALOG)):
                meta_line(line_no, line, stamps, sink)
                ignored += 1
                have = False  # a header, marker or catalog line ends the entry above
                continue
            elif not c:
                ignored += 1
                continue
            else:
                st = stamps.parse(line)
                if st is None:
                    issues.append(ctx.issue(line_no, "no journal/syslog timestamp", line))
                    have = False
                    continue
            ts, raw, inferred, mono, pos, _kind = st
            host, itok, mstart = split_line(line, pos)
            message = line[mstart:]
            if "#0" in message:
                message = _unescape(message)
            if itok is None:
                ident = pid = unit = None
            else:
                ident, pid, unit = self.ident(itok)
            entry(
                line_no, ts, raw, inferred, mono, host, ident, pid, unit, None, None, stamps.boot_id, message
            )
            msg_col = mstart
            have = True
            stamps.seen_entry = True
            parsed += 1
        ctx.parsed(parsed)
        ctx.ignored(ignored)
        sink.flush_pending()
        yield from issues
        yield from sink.drain(keep_last=False)

    def close(self) -> Iterator[Output]:
        yield from self.sink.close()
