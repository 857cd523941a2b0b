"""The single home of time inference.

Everything postmortem stores is UTC (``TIMESTAMPTZ``), with the raw text kept beside it and a
flag saying what was inferred. This module knows how to get there from what logs actually
print:

* zone-less local times (server logs, nvidia-smi, ``dmesg -T``, syslog) → :func:`localize`
* year-less times (journalctl ``short``, RFC 3164 syslog) → :class:`YearInference`
* boot-relative seconds (dmesg, ``/dev/kmsg``, ``short-monotonic``) → :class:`BootAnchors`
* what a user types for ``--since`` / ``--until`` → :func:`parse_when`

>>> parse_when("2025-05-25 20:00", get_zone("UTC")).isoformat()
'2025-05-25T20:00:00+00:00'
>>> localize(datetime(2025, 5, 25, 20, 17, 19), get_zone("Europe/Berlin")).isoformat()
'2025-05-25T18:17:19+00:00'
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import UsageError
from .lazyre import lazy_re

__all__ = [
    "UTC",
    "BootAnchors",
    "Inferred",
    "YearInference",
    "epoch_seconds",
    "get_zone",
    "localize",
    "localize_abbrev",
    "month_number",
    "parse_iso",
    "parse_when",
    "zone_name",
]


#: a source's note: its zone-less stamps were read in a zone nobody named — ``ZONE_ASSUMED
#: Etc/UTC, this machine's zone (no --tz given)`` (the reports of its host say so at the top)
ZONE_ASSUMED = "zone-less stamps read in"


class Inferred:
    """Values of the ``ts_inferred`` column: what had to be assumed to get a UTC time.

    NULL means the source printed an absolute instant (with its zone or as epoch time).
    """

    ZONE = "zone"  # zone-less local time; --tz (or the machine's zone) applied
    YEAR = "year"  # year-less; --year / --since / file mtime, rolled over at New Year
    BOOT = "boot"  # boot-relative seconds converted with a boot anchor
    MTIME = "mtime"  # no time at all in the record; the file's modification time
    PREVIOUS = "previous"  # the line has no stamp; it took the previous line's time
    DATE = "date"  # time of day only; the date came from an earlier line, --since or the mtime
    GIVEN = "given"  # given on the command line (--at)
    FILENAME = "filename"  # no time in the record; the date and time in the file's name
    MINUTE = "minute"  # dmesg -e/-H: the minute printed, its seconds counted from the deltas after it
    WITNESS = "witness"  # a MINUTE stamp given its seconds by another source's line of the same kill


#: a date and time in a file name: ``nvidia-smi-20250611-032130.txt``, ``smi_2025-06-11T03-21-30Z.log``
_NAME_STAMP = lazy_re(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})[T_-]?(\d{2})[-_:]?(\d{2})[-_:]?(\d{2})(Z)?(?!\d)")


def name_stamp(path: str, zone: tzinfo) -> datetime | None:
    """The instant a file's name carries (its local time in ``zone``, or UTC with a ``Z``), or None.

    >>> name_stamp("/logs/nvidia-smi-20250611-032130.txt", UTC).isoformat()
    '2025-06-11T03:21:30+00:00'
    >>> name_stamp("smi_2025-06-11T03-21-30Z.log", get_zone("Asia/Tokyo")).isoformat()
    '2025-06-11T03:21:30+00:00'
    >>> name_stamp("gpu-12345678901234.csv", UTC) is None, name_stamp("nvidia-smi.txt", UTC) is None
    (True, True)
    """
    m = _NAME_STAMP.search(os.path.basename(path))
    if m is None:
        return None
    try:
        y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
        naive = datetime(y, mo, d, h, mi, sec)  # noqa: DTZ001 - localised below
    except ValueError:
        return None
    if not 1990 <= naive.year <= 2200:
        return None
    return naive.replace(tzinfo=UTC) if m.group(7) else localize(naive, zone)


# --------------------------------------------------------------------------- zones


def _local_zone_name() -> str | None:
    tz = os.environ.get("TZ")
    if tz and not tz.lstrip(":").startswith("/"):
        return tz.lstrip(":")
    return zone_name_of_file(tz.lstrip(":") if tz else "/etc/localtime")


def zone_name_of_file(path: str, zoneinfo_dir: str = "/usr/share/zoneinfo") -> str | None:
    """The IANA name of a zone file (``/etc/localtime``, ``TZ=:/path``): the zoneinfo file a
    symlink points to; for a copied file, Debian's ``/etc/timezone`` (when the file is
    ``/etc/localtime``), else the zoneinfo file with the same bytes; None when none says."""
    try:
        target = os.readlink(path)
    except OSError:
        target = ""
    marker = "zoneinfo/"
    if marker in target:
        return target.split(marker, 1)[1]
    if path == "/etc/localtime":
        try:
            named = Path("/etc/timezone").read_text(encoding="utf-8").strip()
        except OSError:
            named = ""
        if named:
            return named
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    for root, dirs, files in os.walk(zoneinfo_dir):
        dirs[:] = sorted(d for d in dirs if d not in ("posix", "right"))
        for name in sorted(files):
            full = os.path.join(root, name)
            try:
                if os.path.getsize(full) == len(data) and Path(full).read_bytes() == data:
                    rel = os.path.relpath(full, zoneinfo_dir)
                    if "/" in rel or rel in ("UTC", "GMT", "UCT", "Zulu"):
                        return rel
            except OSError:
                continue
    return None


@lru_cache(maxsize=64)
def get_zone(name: str | None = None) -> tzinfo:
    """Return the IANA zone ``name`` (``None``: the machine's zone).

    >>> get_zone("UTC")
    zoneinfo.ZoneInfo(key='UTC')
    >>> get_zone("Mars/Olympus")
    Traceback (most recent call last):
    ...
    postmortem.errors.UsageError: unknown time zone 'Mars/Olympus' (use an IANA name such as UTC or Europe/Berlin)
    """
    if name is None:
        tz = os.environ.get("TZ", "")
        name = _local_zone_name() or "UTC"
        if name in ("UTC0", "GMT0", "UTC+0", "GMT+0"):  # POSIX spellings of UTC
            name = "UTC"
        if tz and name == tz.lstrip(":"):
            try:
                return get_zone(name)
            except UsageError:
                raise UsageError(
                    f"TZ={tz!r} (the environment) is not an IANA time zone; pass --tz with one "
                    "(such as UTC or Europe/Berlin)"
                ) from None
    if name in ("Z", "utc"):
        name = "UTC"
    try:
        if not name or name.startswith(("/", ".")) or ".." in name:
            raise ZoneInfoNotFoundError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, IsADirectoryError) as exc:
        raise UsageError(
            f"unknown time zone {name!r} (use an IANA name such as UTC or Europe/Berlin)"
        ) from exc


def zone_name(zone: tzinfo) -> str:
    key = getattr(zone, "key", None)
    return str(key) if key else str(zone)


def localize(naive: datetime, zone: tzinfo) -> datetime:
    """Interpret a zone-less wall-clock time in ``zone`` and return it in UTC.

    Ambiguous times (the repeated hour when clocks go back) take the first occurrence, as
    syslog readers conventionally do; non-existent times (the skipped hour) are shifted forward.

    >>> z = get_zone("America/Los_Angeles")
    >>> localize(datetime(2025, 3, 14, 2, 0), z).isoformat()
    '2025-03-14T09:00:00+00:00'
    """
    if naive.tzinfo is not None:
        return naive.astimezone(UTC)
    aware = naive.replace(tzinfo=zone)
    back = aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None)
    if back != naive:  # a time in the spring-forward gap: use the later offset
        aware = naive.replace(tzinfo=zone, fold=1)
    return aware.astimezone(UTC)


class ForwardLocalizer:
    """:func:`localize` for a log whose times only move forward: in the hour that repeats when
    clocks go back, a time that read as its first occurrence would fall well before the log's
    last ambiguous time is its second occurrence.

    >>> z = get_zone("America/Los_Angeles")
    >>> f = ForwardLocalizer(z)
    >>> [f.localize(datetime(2025, 11, 2, h, m)).strftime("%H:%M") for h, m in ((1, 10), (1, 59), (1, 5), (1, 30), (2, 0))]
    ['08:10', '08:59', '09:05', '09:30', '10:00']
    """

    #: lines of several processes interleave a little out of order: a time this much before the
    #: last is still read as the first occurrence
    SLACK = timedelta(minutes=2)

    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone
        #: the latest time read in the repeated hour (None before the first)
        self.last: datetime | None = None
        #: whether the last :meth:`localize` call read a time of the repeated hour
        self.folded = False

    def localize(self, naive: datetime) -> datetime:
        first = localize(naive, self.zone)
        second = naive.replace(tzinfo=self.zone, fold=1).astimezone(UTC)
        self.folded = second != first
        if not self.folded:
            return first  # not in the repeated hour
        last = self.last
        ts = (
            second
            if last is not None and first < last - self.SLACK and second >= last - self.SLACK
            else first
        )
        self.last = ts if last is None else max(last, ts)
        return ts


# zone abbreviations that name one offset wherever they are used (hours east of UTC); others
# (IST, CST in China, BST, …) are resolved only through the zone the viewer used (--tz)
_ABBREV_HOURS: dict[str, float] = {
    "UTC": 0, "GMT": 0, "UT": 0, "Z": 0, "WET": 0, "WEST": 1, "CET": 1, "CEST": 2, "MET": 1,
    "MEST": 2, "EET": 2, "EEST": 3, "MSK": 3, "EST": -5, "EDT": -4, "CDT": -5, "MST": -7,
    "MDT": -6, "PST": -8, "PDT": -7, "AKST": -9, "AKDT": -8, "HST": -10, "JST": 9, "KST": 9,
    "HKT": 8, "AWST": 8, "ACST": 9.5, "ACDT": 10.5, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
}  # fmt: skip


def localize_abbrev(naive: datetime, word: str, zone: tzinfo) -> tuple[datetime, bool]:
    """A wall-clock time printed with a zone word (``%Z``: ``UTC``, ``PDT``, ``+03``) → UTC.

    Returns ``(utc, exact)``. The word is first matched against what ``zone`` (the viewer's
    ``--tz``) calls that instant — this also picks the right side of a DST fold — then against
    numeric offsets and unambiguous abbreviations; failing all, the time is localised in
    ``zone`` and ``exact`` is False.

    >>> la = get_zone("America/Los_Angeles")
    >>> localize_abbrev(datetime(2025, 11, 2, 1, 30), "PST", la)[0].isoformat()
    '2025-11-02T09:30:00+00:00'
    >>> localize_abbrev(datetime(2025, 3, 14, 2, 0), "PDT", UTC)
    (datetime.datetime(2025, 3, 14, 9, 0, tzinfo=datetime.timezone.utc), True)
    >>> localize_abbrev(datetime(2025, 3, 14, 2, 0), "+0530", UTC)[0].isoformat()
    '2025-03-13T20:30:00+00:00'
    >>> localize_abbrev(datetime(2025, 3, 14, 2, 0), "XYZ", UTC)[1]
    False
    """
    for fold in (0, 1):
        aware = naive.replace(tzinfo=zone, fold=fold)
        if aware.tzname() == word:
            return aware.astimezone(UTC), True
    hours: float | None = None
    if word[:1] in "+-" and word[1:].isdigit() and len(word) in (3, 5):
        hours = int(word[1:3]) + (int(word[3:5]) / 60 if len(word) == 5 else 0)
        hours = hours if word[0] == "+" else -hours
    else:
        hours = _ABBREV_HOURS.get(word)
    if hours is None:
        return localize(naive, zone), False
    return (naive - timedelta(hours=hours)).replace(tzinfo=UTC), True


# --------------------------------------------------------------------------- parsing

_ISO_CACHE_SIZE = 1 << 16


@lru_cache(maxsize=_ISO_CACHE_SIZE)
def _parse_iso_cached(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def parse_iso(text: str, zone: tzinfo | None = None) -> datetime | None:
    """Parse ISO-8601 (``+0000``, ``+00:00``, ``Z``, ``,`` or ``.`` fractions) to UTC.

    A value without an offset is interpreted in ``zone`` (``None``: returns ``None``).

    >>> parse_iso("2026-12-02T13:30:19,104016+00:00").isoformat()
    '2026-12-02T13:30:19.104016+00:00'
    >>> parse_iso("2025-03-14T02:00:00-0700").isoformat()
    '2025-03-14T09:00:00+00:00'
    >>> parse_iso("yesterday") is None
    True
    """
    dt = _parse_iso_cached(text)
    if dt is None:
        return None
    if dt.tzinfo is None:
        if zone is None:
            return None
        return localize(dt, zone)
    return dt.astimezone(UTC)


def epoch_seconds(value: float) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=round(value * 1_000_000))


# Month names as journalctl/syslog print them in the locales operators use. Keys are lower-case,
# without a trailing dot.
_MONTHS: dict[str, int] = {}
_MONTH_TABLE = {
    "en": "jan feb mar apr may jun jul aug sep oct nov dec",
    "fr": "janv févr mars avr mai juin juil août sept oct nov déc",
    "fr2": "jan fév mar avr mai jui jul aoû sep oct nov déc",
    "de": "jan feb mär apr mai jun jul aug sep okt nov dez",
    "de2": "jän feb mrz apr mai jun jul aug sep okt nov dez",
    "es": "ene feb mar abr may jun jul ago sep oct nov dic",
    "es2": "ene feb mar abr may jun jul ago sept oct nov dic",
    "it": "gen feb mar apr mag giu lug ago set ott nov dic",
    "pt": "jan fev mar abr mai jun jul ago set out nov dez",
    "nl": "jan feb mrt apr mei jun jul aug sep okt nov dec",
    "ru": "янв фев мар апр мая июн июл авг сен окт ноя дек",
    "ru2": "янв февр март апр май июнь июль авг сент окт нояб дек",
    "ru3": "янв фев мар апр май июн июл авг сен окт ноя дек",
    "pl": "sty lut mar kwi maj cze lip sie wrz paź lis gru",
    "lt": "saus vas kov bal geg birž liep rugp rugs spal lapkr gruod",
}
for _names in _MONTH_TABLE.values():
    for _i, _name in enumerate(_names.split(), start=1):
        _MONTHS.setdefault(_name, _i)
for _i in range(1, 13):  # zh_CN / ja_JP: "5月", "12月"; ko_KR: "5월"
    _MONTHS[f"{_i}月"] = _i
    _MONTHS[f"{_i:02d}月"] = _i
    _MONTHS[f"{_i}월"] = _i


def month_number(name: str) -> int | None:
    """Month number for a (possibly localised) abbreviated month name.

    >>> [month_number(m) for m in ("May", "mai", "Mär", "дек", "5月", "avr.", "xyz")]
    [5, 5, 3, 12, 5, 4, None]
    """
    key = name.strip().rstrip(".").lower()
    hit = _MONTHS.get(key)
    if hit is None and len(key) > 3:
        hit = _MONTHS.get(key[:3])
    return hit


@dataclass
class YearInference:
    """Assigns years to year-less timestamps in one file, rolling over at New Year.

    ``base_year`` is the year of the first timestamp (from ``--year``, else the year of
    ``--since``, else derived from the file's modification time by :meth:`from_mtime`).

    >>> y = YearInference(2025)
    >>> [y.year_for(m, d) for m, d in ((12, 30), (12, 31), (1, 1), (1, 2))]
    [2025, 2025, 2026, 2026]
    """

    base_year: int
    _year: int = field(init=False)
    _last: tuple[int, int] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._year = self.base_year

    @classmethod
    def from_mtime(cls, mtime: datetime, first_month: int | None) -> YearInference:
        """The last line of a log is usually close to its mtime: a first month later in the
        year than the mtime's month means the file started the year before."""
        year = mtime.year
        if first_month is not None and first_month > mtime.month:
            year -= 1
        return cls(year)

    def year_for(self, month: int, day: int) -> int:
        """The year of the next stamp. A step back of six months or more is New Year; a
        December line right after a rollover (January or February) is out of order, from before
        it, and leaves the file's course as it was; any other step forward is the same year (a
        dmesg of a long uptime).

        >>> y = YearInference(2025)
        >>> [y.year_for(m, 1) for m in (12, 1, 12, 1, 2)]  # an out-of-order December
        [2025, 2026, 2025, 2026, 2026]
        >>> y = YearInference(2026)
        >>> [y.year_for(m, 1) for m in (3, 10, 12)]  # months apart, forward
        [2026, 2026, 2026]

        A file that begins on 29 February is of a leap year: the latest one up to the year
        guessed (a file copied since, its mtime a later year's, had no line dated at all).

        >>> y = YearInference(2026)
        >>> [y.year_for(2, 29), y.year_for(3, 1), y.base_year]
        [2024, 2024, 2024]
        """
        if self._last is None and (month, day) == (2, 29) and not _leap(self._year):
            while not _leap(self._year):
                self._year -= 1
            self.base_year = self._year
        if self._last is not None:
            last_month = self._last[0]
            if month < last_month and last_month - month >= 6:
                self._year += 1
            elif month >= 11 and last_month <= 2 and self._year > self.base_year:
                return self._year - 1  # (out of order: the course stays January's)
        self._last = (month, day)
        return self._year


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


@dataclass(frozen=True)
class BootAnchor:
    boot_id: str | None
    host: str | None
    boot_ts: datetime  # UTC wall-clock time of monotonic zero
    method: str


@dataclass
class BootAnchors:
    """Wall-clock times of boots, used to turn boot-relative seconds into UTC.

    >>> a = BootAnchors([BootAnchor("b1", "h", datetime(2025, 5, 25, 18, 0, tzinfo=UTC), "journal")])
    >>> a.to_wall(120.5, host="h").isoformat()
    '2025-05-25T18:02:00.500000+00:00'
    """

    anchors: list[BootAnchor] = field(default_factory=list)

    def add(self, anchor: BootAnchor) -> None:
        self.anchors.append(anchor)

    def find(self, *, boot_id: str | None = None, host: str | None = None) -> BootAnchor | None:
        if boot_id:
            for a in self.anchors:
                if a.boot_id == boot_id:
                    return a
        candidates = [a for a in self.anchors if host is None or a.host in (None, host)]
        if not candidates:
            return None
        # without a boot id the most recent boot is the one whose dmesg buffer survived
        return max(candidates, key=lambda a: a.boot_ts)

    def to_wall(
        self, monotonic_s: float, *, boot_id: str | None = None, host: str | None = None
    ) -> datetime | None:
        anchor = self.find(boot_id=boot_id, host=host)
        if anchor is None:
            return None
        return anchor.boot_ts + timedelta(microseconds=round(monotonic_s * 1_000_000))


@lru_cache(maxsize=4096)
def parse_dmesg_ctime(text: str, zone: tzinfo, forward: ForwardLocalizer | None = None) -> datetime | None:
    """``dmesg -T`` stamp text (``%a %b %e %H:%M:%S %Y``, month names in any locale that
    :func:`month_number` knows; the weekday is not checked) in ``zone`` → UTC.

    >>> parse_dmesg_ctime("Wed Dec  2 13:30:19 2026", get_zone("UTC")).isoformat()
    '2026-12-02T13:30:19+00:00'
    >>> parse_dmesg_ctime("Mi Dez  2 13:30:19 2026", get_zone("Europe/Berlin")).isoformat()
    '2026-12-02T12:30:19+00:00'
    >>> parse_dmesg_ctime("Wed Foo 31 13:30:19 2026", get_zone("UTC")) is None
    True
    """
    parts = text.split()
    if len(parts) != 5:
        return None
    month = month_number(parts[1])
    hms = parts[3].split(":")
    if month is None or len(hms) != 3 or not parts[2].isdigit() or not parts[4].isdigit():
        return None
    try:
        naive = datetime(int(parts[4]), month, int(parts[2]), int(hms[0]), int(hms[1]), int(hms[2]))  # noqa: DTZ001
    except ValueError:
        return None
    return forward.localize(naive) if forward is not None else localize(naive, zone)


def boot_relative(boot_ts: datetime, seconds: float) -> datetime:
    """``boot_ts`` plus boot-relative ``seconds``, rounded to the microsecond.

    >>> boot_relative(datetime(2026, 12, 2, 13, 27, 47, tzinfo=UTC), 152.104816).isoformat()
    '2026-12-02T13:30:19.104816+00:00'
    """
    return boot_ts + timedelta(microseconds=round(seconds * 1_000_000))


def pick_boot(
    anchors: BootAnchors,
    boot_time: datetime | None,
    *,
    boot_id: str | None,
    host: str | None,
    not_after: datetime | None = None,
) -> datetime | None:
    """The boot time to add kernel (dmesg/kmsg) seconds to, best first: the anchor of that very
    boot id; else ``--boot-time``; else, when no boot id is known, the latest boot of the host
    (of the only host known, when the source names none) that started no later than
    ``not_after`` (the file's mtime: a boot after the capture cannot be its boot). A boot id
    without an anchor never borrows another boot's.

    >>> b1 = BootAnchor("b1", "h", datetime(2026, 1, 1, tzinfo=UTC), "journal")
    >>> b2 = BootAnchor("b2", "h", datetime(2026, 1, 5, tzinfo=UTC), "journal")
    >>> a = BootAnchors([b1, b2])
    >>> pick_boot(a, None, boot_id="b1", host=None).day, pick_boot(a, None, boot_id=None, host="h").day
    (1, 5)
    >>> pick_boot(a, None, boot_id="b9", host="h") is None
    True
    >>> pick_boot(BootAnchors([b1, BootAnchor("b3", "g", b2.boot_ts, "journal")]), None,
    ...           boot_id=None, host=None) is None
    True
    >>> pick_boot(a, None, boot_id=None, host="h", not_after=datetime(2026, 1, 3, tzinfo=UTC)).day
    1
    """
    if boot_id:
        for a in anchors.anchors:
            if a.boot_id == boot_id:
                return a.boot_ts
        return boot_time
    if boot_time is not None:
        return boot_time
    if host is None and len({a.host for a in anchors.anchors}) > 1:
        return None
    candidates = [
        a
        for a in anchors.anchors
        if (host is None or a.host in (None, host)) and (not_after is None or a.boot_ts <= not_after)
    ]
    return max(a.boot_ts for a in candidates) if candidates else None


# --------------------------------------------------------------------------- --since / --until

_REL_UNITS = {
    "us": 1e-6,
    "usec": 1e-6,
    "ms": 1e-3,
    "msec": 1e-3,
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 7 * 86400,
    "week": 7 * 86400,
    "weeks": 7 * 86400,
    "M": 30.44 * 86400,
    "month": 30.44 * 86400,
    "months": 30.44 * 86400,
    "y": 365.25 * 86400,
    "year": 365.25 * 86400,
    "years": 365.25 * 86400,
}
_REL_PART = lazy_re(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]+)")
_REL_WHOLE = lazy_re(r"^([+-])?\s*((?:\d+(?:\.\d+)?\s*[a-zA-Z]+\s*)+)(ago|left)?$")


def _relative_seconds(body: str) -> float | None:
    total = 0.0
    pos = 0
    for m in _REL_PART.finditer(body):
        if body[pos : m.start()].strip():
            return None
        unit = m.group(2)
        factor = _REL_UNITS.get(unit) if unit == "M" else _REL_UNITS.get(unit.lower())
        if factor is None:
            return None
        total += float(m.group(1)) * factor
        pos = m.end()
    if body[pos:].strip():
        return None
    return total


def parse_when(text: str, zone: tzinfo, now: datetime | None = None) -> datetime:
    """:func:`_parse_when`, with a time off the calendar (``@1e20``, ``+25:00``, year 0) a
    usage error rather than a crash."""
    try:
        return _parse_when(text, zone, now)
    except (OverflowError, ValueError) as exc:
        raise UsageError(f"time out of range: {text!r} ({exc})") from None


def _parse_when(text: str, zone: tzinfo, now: datetime | None = None) -> datetime:
    """Parse a ``--since``/``--until`` value the way ``journalctl`` does; return UTC.

    Accepts ``now``, ``today``, ``yesterday``, ``tomorrow``, ``@EPOCH``, relative values
    (``-2h``, ``-30min``, ``+1d``, ``1 day ago``, ``2h 30min ago``), a date alone
    (midnight), and absolute times with or without an offset (zone-less ones in ``zone``).

    >>> now = datetime(2025, 5, 26, 12, 0, tzinfo=UTC)
    >>> utc = get_zone("UTC")
    >>> [parse_when(v, utc, now).isoformat() for v in ("-2h", "1 day ago", "yesterday")]
    ['2025-05-26T10:00:00+00:00', '2025-05-25T12:00:00+00:00', '2025-05-25T00:00:00+00:00']
    >>> parse_when("2025-05-25T20:00:00+02:00", utc).isoformat()
    '2025-05-25T18:00:00+00:00'
    >>> parse_when("soon", utc)
    Traceback (most recent call last):
    ...
    postmortem.errors.UsageError: cannot understand the time 'soon' (try '2025-05-25 20:00', '-2h', 'yesterday' or an ISO-8601 time)
    """
    raw = text.strip()
    now = (now or datetime.now(UTC)).astimezone(UTC)
    low = raw.lower()
    if low == "now":
        return now
    if low in ("today", "yesterday", "tomorrow"):
        local_today = now.astimezone(zone).date()
        shift = {"today": 0, "yesterday": -1, "tomorrow": 1}[low]
        day = local_today + timedelta(days=shift)
        return localize(datetime(day.year, day.month, day.day), zone)  # noqa: DTZ001
    if raw.startswith("@"):
        try:
            return epoch_seconds(float(raw[1:]))
        except ValueError:
            pass
    m = _REL_WHOLE.match(raw)
    if m:
        seconds = _relative_seconds(m.group(2))
        if seconds is not None:
            sign = -1 if (m.group(1) == "-" or m.group(3) == "ago") else 1
            if m.group(1) is None and m.group(3) is None:
                sign = 0  # "2h" alone is not a time
            if sign:
                return now + timedelta(seconds=sign * seconds)
    iso = parse_iso(raw, zone)
    if iso is not None:
        return iso
    try:
        # free-form times only: not on every start-up, and not in the single-file collector
        from dateutil import parser as dateutil_parser
    except ImportError:
        raise UsageError(
            f"cannot understand the time {text!r} here (free-form times need python-dateutil): use "
            "'2025-05-25 20:00', '-2h', 'yesterday' or an ISO-8601 time"
        ) from None
    try:
        parsed = dateutil_parser.parse(raw, default=datetime(now.year, 1, 1))  # noqa: DTZ001
    except (ValueError, OverflowError) as exc:
        raise UsageError(
            f"cannot understand the time {text!r} (try '2025-05-25 20:00', '-2h', 'yesterday' "
            "or an ISO-8601 time)"
        ) from exc
    return localize(parsed, zone) if parsed.tzinfo is None else parsed.astimezone(UTC)


def check_range(since: datetime | None, until: datetime | None) -> None:
    if since is not None and until is not None and since > until:
        raise UsageError(f"--since ({since.isoformat()}) is after --until ({until.isoformat()}); swap them")


#: the longest duration an option takes: a century (beyond it, times leave the calendar)
MAX_DURATION_S = 100 * 366 * 86400.0


def parse_duration(text: str, *, allow_zero: bool = False) -> float:
    """``30min`` → 1800.0; ``2h 30m`` → 9000.0 (finite, at most a century). A bare number is
    refused: ``--window 30`` meant minutes to whoever typed it and seconds to the parser.

    >>> parse_duration("30min"), parse_duration("90s"), parse_duration("1h 30min")
    (1800.0, 90.0, 5400.0)
    >>> parse_duration("30")
    Traceback (most recent call last):
    ...
    postmortem.errors.UsageError: a duration needs a unit: '30' (try 30min, 30s, 2h)
    """
    value = _duration(text, allow_zero=allow_zero)
    if not value <= MAX_DURATION_S:  # also NaN
        raise UsageError(f"duration out of range: {text!r} (at most 100 years)")
    return value


def _duration(text: str, *, allow_zero: bool) -> float:
    raw = text.strip()
    try:
        value = float(raw)
    except ValueError:
        seconds = _relative_seconds(raw)
        if seconds is None or (seconds <= 0 and not (allow_zero and seconds == 0)):
            raise UsageError(f"cannot understand the duration {text!r} (try 30min, 2h, 900s)") from None
        return seconds
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"duration must be positive, got {text!r}")
    if value == 0 or not value <= MAX_DURATION_S:
        return value  # zero needs no unit; out of range is said as such by the caller
    raise UsageError(f"a duration needs a unit: {text!r} (try {raw}min, {raw}s, 2h)")


# --------------------------------------------------------------------------- monitoring tools' stamps

_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_CTIME_RE = lazy_re(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),? +"
    r"(?:([A-Za-z]{3}) +(\d{1,2})|(\d{1,2}) +([A-Za-z]{3}))"
    r" +(\d{1,2}):(\d\d):(\d\d)(?: +(AM|PM))?(?: +([A-Z]{1,5}|[+-]\d{4}))? +(\d{4})"
)


def parse_ctime(text: str) -> tuple[datetime, str | None] | None:
    """A ctime-style stamp → (naive wall-clock time, zone word as printed or ``None``).

    nvidia-smi (table, ``-q``, XML) prints ``Fri Apr 17 00:13:48 2026`` (no zone); ``date``
    prints ``Wed Feb  5 14:07:58 UTC 2025`` (en_US) or ``Wed  5 Feb 14:07:58 CET 2025`` (en_GB).
    Use :func:`zone_for_word` and :func:`localize` to get UTC.

    >>> parse_ctime("Fri Apr 17 00:13:48 2026")
    (datetime.datetime(2026, 4, 17, 0, 13, 48), None)
    >>> parse_ctime("Wed Feb  5 14:07:58 UTC 2025")
    (datetime.datetime(2025, 2, 5, 14, 7, 58), 'UTC')
    >>> parse_ctime("Wed  5 Feb 02:07:58 PM CET 2025")
    (datetime.datetime(2025, 2, 5, 14, 7, 58), 'CET')
    >>> parse_ctime("Fri Apr 31 00:13:48 2026") is None
    True
    """
    m = _CTIME_RE.fullmatch(text.strip())
    if m is None:
        return None
    mon_name, day = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    month = month_number(mon_name)
    if month is None:
        return None
    hour = int(m.group(5))
    if m.group(8):
        if hour > 12:
            return None
        hour = hour % 12 + (12 if m.group(8) == "PM" else 0)
    try:
        naive = datetime(int(m.group(10)), month, int(day), hour, int(m.group(6)), int(m.group(7)))  # noqa: DTZ001
    except ValueError:
        return None
    return naive, m.group(9)


def zone_for_word(word: str | None) -> tzinfo | None:
    """The zone a printed zone word pins down: ``UTC``/``GMT``/``Z`` and numeric offsets.

    Abbreviations such as ``CET`` or ``EST`` are ambiguous: ``None`` (use ``--tz``).

    >>> zone_for_word("UTC"), zone_for_word("CEST")
    (datetime.timezone.utc, None)
    >>> str(zone_for_word("-0700"))
    'UTC-07:00'
    """
    if not word:
        return None
    if word in ("UTC", "GMT", "Z", "UT"):
        return UTC
    if len(word) == 5 and word[0] in "+-" and word[1:].isdigit():
        from datetime import timezone

        minutes = int(word[1:3]) * 60 + int(word[3:5])
        return timezone(timedelta(minutes=minutes if word[0] == "+" else -minutes))
    return None


def parse_slash_stamp(text: str) -> datetime | None:
    """nvidia-smi ``--query-gpu timestamp`` (``YYYY/MM/DD HH:MM:SS.mmm``, local, zone-less) → naive.

    Sliced by position (it is parsed once per CSV row); anything else → ``None``.

    >>> parse_slash_stamp("2024/01/16 14:44:16.977")
    datetime.datetime(2024, 1, 16, 14, 44, 16, 977000)
    >>> parse_slash_stamp("2024/01/16 14:44:16"), parse_slash_stamp("2024/13/16 14:44:16.977")
    (datetime.datetime(2024, 1, 16, 14, 44, 16), None)
    """
    n = len(text)
    if n < 19 or text[4] != "/" or text[7] != "/" or text[10] != " " or text[13] != ":":
        return None
    try:
        micro = 0
        if n > 19:
            if text[19] != "." or n > 26 or not text[20:].isdigit():
                return None
            micro = int(text[20:].ljust(6, "0"))
        return datetime(  # noqa: DTZ001
            int(text[0:4]),
            int(text[5:7]),
            int(text[8:10]),
            int(text[11:13]),
            int(text[14:16]),
            int(text[17:19]),
            micro,
        )
    except ValueError:
        return None


@dataclass
class DayInference:
    """Dates for time-of-day-only stamps (``nvidia-smi dmon -o T``), rolling over at midnight.

    ``start`` is the local date of the first stamp. :meth:`from_end` derives it from a time known
    to be at or after the last stamp (the file's mtime): a first time of day later than the
    mtime's means the capture started the day before (captures are assumed < 24 h).

    >>> d = DayInference(date(2025, 12, 31))
    >>> [d.date_for(t).isoformat() for t in (86000, 86399, 5, 10)]
    ['2025-12-31', '2025-12-31', '2026-01-01', '2026-01-01']
    >>> DayInference.from_end(datetime(2026, 1, 1, 0, 1), 86000).start.isoformat()
    '2025-12-31'
    """

    start: date
    _day: date = field(init=False)
    _last: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._day = self.start

    @classmethod
    def from_end(cls, end_local: datetime, first_second_of_day: int) -> DayInference:
        end_tod = end_local.hour * 3600 + end_local.minute * 60 + end_local.second
        day = end_local.date()
        if first_second_of_day > end_tod:
            day -= timedelta(days=1)
        return cls(day)

    def date_for(self, second_of_day: int) -> date:
        """``second_of_day`` (0–86399) of the next stamp; a jump back of > 12 h is a new day."""
        if self._last is not None and self._last - second_of_day > 43200:
            self._day += timedelta(days=1)
        self._last = second_of_day
        return self._day


class SlashStampReader:
    """``parse_slash_stamp`` + :func:`localize` for a stream of stamps in one zone, fast: the
    UTC time of each local minute is computed once (zone offsets change on minute boundaries).

    >>> read = SlashStampReader(get_zone("Europe/Berlin"))
    >>> read("2026/01/15 10:00:00.123").isoformat(), read("2026/01/15 10:00:59.9").isoformat()
    ('2026-01-15T09:00:00.123000+00:00', '2026-01-15T09:00:59.900000+00:00')
    >>> read("2026/13/15 10:00:00.123") is None, read("2026/01/15 10:00:61.000") is None
    (True, True)

    The hour the clocks go back comes twice: a loop's stamps in it are read in order, the
    second time round as the second hour (:class:`ForwardLocalizer`).

    >>> [read(s).strftime("%H:%M") for s in ("2025/10/26 02:59:55.0", "2025/10/26 02:00:00.0", "2025/10/26 03:00:00.0")]
    ['00:59', '01:00', '02:00']
    """

    __slots__ = ("_forward", "_minutes", "zone")

    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone
        self._minutes: dict[str, datetime | None] = {}
        self._forward = ForwardLocalizer(zone)

    def __call__(self, text: str) -> datetime | None:
        n = len(text)
        if n < 19 or text[16] != ":":
            return None
        key = text[:16]
        base = self._minutes.get(key, 0)
        if base == 0:
            naive = parse_slash_stamp(key + ":00")
            base = self._forward.localize(naive) if naive is not None else None
            if len(self._minutes) > 4096:
                self._minutes.clear()
            if not self._forward.folded:  # a minute of the repeated hour is read afresh each time
                self._minutes[key] = base
        if base is None:
            return None
        sec = text[17:19]
        if not sec.isdigit() or int(sec) > 59:
            return None
        micro = 0
        if n > 19:
            frac = text[20:]
            if text[19] != "." or not frac.isdigit() or len(frac) > 6:
                return None
            micro = int(frac.ljust(6, "0"))
        return base + timedelta(seconds=int(sec), microseconds=micro)  # type: ignore[operator]
