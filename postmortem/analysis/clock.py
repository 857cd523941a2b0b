"""Clock offsets between sources.

The journal is the reference clock (UTC from the machine's realtime clock). Other sources are
placed on it by pairs of records that must be (nearly) simultaneous:

* the same message seen by two sources (a dmesg file and the journal's kernel copy, a server's
  log file and its stdout captured by journald) → the median difference, exactly;
* systemd starting a unit and its server printing its configuration a few seconds later →
  a time-zone-sized offset (a multiple of 15 minutes) when the log was written in another zone
  than ``--tz`` says;
* a journal's year-less stamps whose year came from a copied file's modification time, and the
  dated sources of the same night → a whole year (:func:`year_offsets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from .model import ClockOffset

ZONE_STEP_S = 900.0  # zones are whole quarter hours
START_DELAY_S = (0.0, 90.0)  # systemd start → the server's configuration line


def is_reference(fmt: str | None) -> bool:
    """A source format whose clock is the reference: the journal's (see :func:`reference_formats`)."""
    return bool(fmt) and str(fmt).startswith("journal") and not str(fmt).endswith("~inferred")


def reference_formats(formats: dict[int, str], exactness: Iterable[dict[str, Any]]) -> dict[int, str]:
    """Mark journal sources whose times were mostly inferred (year-less ``short``, zone-less
    renderings) as non-reference, so their offset is measured against exact ones."""
    out = dict(formats)
    for r in exactness:
        sid = int(r["source_id"])
        rows, exact = int(r["rows"]), int(r["exact"])
        if sid in out and rows and exact < 0.9 * rows:
            out[sid] = f"{out[sid]}~inferred"
    return out


def message_pair_offsets(rows: Iterable[dict[str, Any]], formats: dict[int, str]) -> list[ClockOffset]:
    """Offsets from identical messages (rows of ``kernel_message_pairs.sql`` and the like)."""
    out: list[ClockOffset] = []
    for r in rows:
        sid, ref = int(r["source_id"]), int(r["reference_source_id"])
        if is_reference(formats.get(sid)) or not is_reference(formats.get(ref)):
            continue
        off = float(r["offset_s"])
        if r.get("coarse") and abs(off) < 1.0:
            continue  # within the reference's whole-second stamps: no offset to tell
        out.append(
            ClockOffset(
                source_id=sid,
                reference_source_id=ref,
                offset_s=off,
                method="same messages",
                pairs=int(r["pairs"]),
                note=describe_offset(off),
            )
        )
    return out


def describe_offset(offset_s: float) -> str | None:
    """Why a source's clock might be off, in words, for offsets of a zone or a year.

    >>> describe_offset(31536000.0)
    'off by 365 d: a year-less rendering got the wrong year (pass --year)'
    >>> describe_offset(-7200.4)
    'off by -2 h: a zone-less rendering was read in the wrong zone (pass --tz)'
    """
    days = offset_s / 86400
    for year_days in (365, 366):
        rest = offset_s - year_days * 86400 * round(days / year_days)
        if abs(days) >= 300 and abs(rest) < 15 * 3600:
            hint = "a year-less rendering got the wrong year (pass --year"
            hint += " and --tz)" if abs(rest) > 120 else ")"
            return f"off by {round(days)} d: {hint}"
    hours = offset_s / 3600
    if abs(hours) >= 0.25 and abs(offset_s - round(offset_s / ZONE_STEP_S) * ZONE_STEP_S) < 120:
        return f"off by {hours:+.0f} h: a zone-less rendering was read in the wrong zone (pass --tz)".replace(
            "+", ""
        )
    if abs(offset_s) >= 2:
        return f"clock {offset_s:+.1f} s from the journal's"
    return None


def start_pair_offsets(
    rows: Sequence[dict[str, Any]],
    formats: dict[int, str],
    known: set[int],
    zones: dict[int, str | None] | None = None,
) -> list[ClockOffset]:
    """Zone-sized offsets of server log files from (systemd start, configuration line) pairs.

    The journal is the reference; one rendered without a zone (``short``, ``short-precise``)
    still is for a log read in the same zone (``zones``: each source's): the zone they were
    both read in cannot be what sets them hours apart, so the log was written in another one
    (a container's UTC beside the host's local journal).

    >>> from datetime import UTC, datetime, timedelta
    >>> t = datetime(2025, 5, 25, 18, 41, 3, tzinfo=UTC)
    >>> rows = [{"source_id": 5, "line_no": 1, "server_ts": t + timedelta(hours=2, seconds=3),
    ...          "reference_source_id": 1, "unit_ts": t, "unit": "a.service"}]
    >>> off = start_pair_offsets(rows, {1: "journal-export", 5: "llm-log"}, set())[0]
    >>> off.offset_s, off.method
    (7200.0, 'unit start vs server_args')
    """
    by_source: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        sid = int(r["source_id"])
        if sid in known or is_reference(formats.get(sid)):
            continue
        if not _reference_for(int(r["reference_source_id"]), sid, formats, zones or {}):
            continue
        by_source.setdefault(sid, []).append(r)
    out: list[ClockOffset] = []
    for sid, pairs in sorted(by_source.items()):
        lines: dict[int, list[float]] = {}
        ref = int(pairs[0]["reference_source_id"])
        for r in pairs:
            d = (r["server_ts"] - r["unit_ts"]).total_seconds()
            lines.setdefault(int(r["line_no"]), []).append(d)
        best_c, best_n = 0.0, 0
        candidates = sorted({round(d / ZONE_STEP_S) * ZONE_STEP_S for ds in lines.values() for d in ds})
        for c in [0.0, *candidates]:
            n = sum(
                1
                for ds in lines.values()
                if any(START_DELAY_S[0] - 5 <= d - c <= START_DELAY_S[1] for d in ds)
            )
            if n > best_n or (n == best_n and abs(c) < abs(best_c)):
                best_c, best_n = c, n
        if best_n == 0 or best_c == 0.0:
            continue
        hours = best_c / 3600
        out.append(
            ClockOffset(
                source_id=sid,
                reference_source_id=ref,
                offset_s=best_c,
                method="unit start vs server_args",
                pairs=best_n,
                note=(
                    f"this log's clock reads {abs(hours):g} h {'ahead of' if hours > 0 else 'behind'} "
                    "the journal: it was written in another time zone than --tz; set tz for it in "
                    "postmortem.toml ([[sources]]) or rerun with the right --tz"
                ),
            )
        )
    return out


def _reference_for(ref: int, sid: int, formats: dict[int, str], zones: dict[int, str | None]) -> bool:
    """Whether source ``ref`` is the clock source ``sid`` is measured against: an exact journal,
    or — for a server's own log, not another journal — a journal whose stamps were read in the
    same zone as ``sid``'s. (Two files of one split journal are one clock: a start in one and
    the server's line in the other, an hour on, is a later start's, not a zone.)

    >>> zones = {1: "Europe/Paris", 5: "Europe/Paris", 6: "UTC"}
    >>> formats = {1: "journal-short~inferred", 5: "server-log", 6: "server-log", 7: "journal-short~inferred"}
    >>> [_reference_for(1, sid, formats, {**zones, 7: "Europe/Paris"}) for sid in (5, 6, 7)]
    [True, False, False]
    """
    fmt = formats.get(ref)
    if is_reference(fmt):
        return True
    zone, own = zones.get(ref), formats.get(sid)
    if not fmt or not own or not str(fmt).startswith("journal") or str(own).startswith("journal"):
        return False
    return zone is not None and zone == zones.get(sid)


def same_zone_offsets(rows: Iterable[dict[str, Any]], found: dict[int, ClockOffset]) -> list[ClockOffset]:
    """A zone-less source read in the wrong zone shares the error with every other zone-less
    source read in the same zone (nvidia-smi CSV beside a server's log): give them its offset.

    >>> found = {6: ClockOffset(6, 1, 25200.0, "unit start vs server_args", 2)}
    >>> rows = [{"source_id": 6, "tz": "America/Los_Angeles"}, {"source_id": 4, "tz": "America/Los_Angeles"},
    ...         {"source_id": 9, "tz": "UTC"}]
    >>> [(o.source_id, o.offset_s) for o in same_zone_offsets(rows, found)]
    [(4, 25200.0)]
    """
    rows = list(rows)
    by_zone: dict[str, ClockOffset] = {}
    for r in rows:
        off = found.get(int(r["source_id"]))
        if off is not None and off.method == "unit start vs server_args" and r["tz"]:
            by_zone.setdefault(str(r["tz"]), off)
    out = []
    for r in rows:
        sid = int(r["source_id"])
        zone_off = by_zone.get(str(r["tz"]))
        if sid in found or zone_off is None:
            continue
        out.append(
            ClockOffset(
                sid,
                zone_off.reference_source_id,
                zone_off.offset_s,
                "same zone as another source",
                zone_off.pairs,
                f"read in {r['tz']} like source {zone_off.source_id}, whose clock is off by "
                f"{zone_off.offset_s / 3600:+g} h: pass the host's --tz",
            )
        )
    return out


#: a dated source's span and a year-guessed one's overlap when they come this close
YEAR_SLACK = timedelta(hours=2)
#: how many years a copied file's modification time may be later than its lines (logs of an
#: old night copied off a host, or out of an archive, today), and one year earlier (a night
#: over New Year's): the moves :func:`year_offsets` tries, the nearest first on a tie
YEAR_MOVES = (-1, 1, *range(-2, -11, -1))


def _years_later(ts: datetime, years: int) -> datetime:
    try:
        return ts.replace(year=ts.year + years)
    except ValueError:  # 29 February
        return ts.replace(year=ts.year + years, day=28)


def year_offsets(rows: Sequence[dict[str, Any]], known: set[int]) -> list[ClockOffset]:
    """Year-less stamps whose year came from the file's modification time (a copied file's
    mtime is a year on, a New Year's night) and that overlap no dated source of their host,
    while moved a year earlier or later they do: the year the dated sources say (rows of
    ``year_spans.sql``; ``known``: sources that already have an offset).

    >>> from datetime import UTC, datetime
    >>> t = datetime(2025, 1, 1, 0, 40, tzinfo=UTC)
    >>> rows = [
    ...     {"source_id": 1, "host": "h", "first_ts": t.replace(year=2026), "last_ts": t.replace(year=2026),
    ...      "yearless": True, "year_from_mtime": True, "path": "j"},
    ...     {"source_id": 2, "host": None, "first_ts": t, "last_ts": t, "yearless": False,
    ...      "year_from_mtime": False, "path": "s"}]
    >>> [(o.source_id, round(o.offset_s / 86400), o.method) for o in year_offsets(rows, set())]
    [(1, 365, 'the year of the dated sources')]

    A night copied two years later (a 2024 night read in 2026):

    >>> rows[0]["first_ts"] = rows[0]["last_ts"] = t.replace(year=2027)
    >>> [round(o.offset_s / 86400) for o in year_offsets(rows, set())]
    [730]
    """
    dated = [r for r in rows if not r["yearless"]]
    out: list[ClockOffset] = []
    for r in rows:
        if not r["year_from_mtime"] or int(r["source_id"]) in known:
            continue
        mine = [d for d in dated if r["host"] is None or d["host"] is None or d["host"] == r["host"]]

        def meets(years: int, r: dict[str, Any] = r, mine: list[dict[str, Any]] = mine) -> list[int]:
            lo, hi = _years_later(r["first_ts"], years), _years_later(r["last_ts"], years)
            return [
                int(d["source_id"])
                for d in mine
                if lo - YEAR_SLACK <= d["last_ts"] and d["first_ts"] <= hi + YEAR_SLACK
            ]

        if not mine or meets(0):
            continue
        best = max(YEAR_MOVES, key=lambda k: len(meets(k)))  # (max keeps the first of a tie)
        witnesses = meets(best)
        if not witnesses:
            continue
        offset = (r["first_ts"] - _years_later(r["first_ts"], best)).total_seconds()
        out += _anchored_with(rows, r, offset, known, best)
        out.append(
            ClockOffset(
                source_id=int(r["source_id"]),
                reference_source_id=witnesses[0],
                offset_s=offset,
                method="the year of the dated sources",
                pairs=len(witnesses),
                years=best,
                note=f"its year-less stamps took the year of the file's modification time; the dated "
                f"sources of the same night put it {abs(best)} year{'s' if abs(best) > 1 else ''} {'earlier' if best < 0 else 'later'}",
            )
        )
    return out


def _anchored_with(
    rows: Sequence[dict[str, Any]], moved: dict[str, Any], offset: float, known: set[int], years: int
) -> list[ClockOffset]:
    """Sources whose kernel lines took their boot from ``moved``'s clock (the same lines in a
    dmesg file and in that journal): they move with it."""
    return [
        ClockOffset(
            source_id=int(d["source_id"]),
            reference_source_id=int(moved["source_id"]),
            offset_s=offset,
            method="the year of the dated sources",
            pairs=1,
            note=f"its boot was dated by {moved['path']}, which was a year off",
            years=years,
        )
        for d in rows
        if d.get("anchored")
        and int(d["source_id"]) not in known
        and (moved["host"] is None or d["host"] is None or d["host"] == moved["host"])
        and moved["first_ts"] - YEAR_SLACK <= d["last_ts"]
        and d["first_ts"] <= moved["last_ts"] + YEAR_SLACK
    ]


def unconfirmed_years(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sources (rows of ``year_spans.sql``) whose year-less stamps took the year of the
    file's modification time and that no dated source of their host overlaps: the year is a
    guess, which the terminal says (a copied file's year is the copy's)."""
    dated = [r for r in rows if not r["yearless"]]
    out = []
    for r in rows:
        if not r["year_from_mtime"]:
            continue
        meets = [
            d
            for d in dated
            if (r["host"] is None or d["host"] is None or d["host"] == r["host"])
            and r["first_ts"] - YEAR_SLACK <= d["last_ts"]
            and d["first_ts"] <= r["last_ts"] + YEAR_SLACK
        ]
        if not meets:
            out.append(r)
    return out


def merge_offsets(*groups: Iterable[ClockOffset]) -> dict[int, ClockOffset]:
    """One offset per source: exact message pairs win over start pairs."""
    out: dict[int, ClockOffset] = {}
    for group in groups:
        for off in group:
            have = out.get(off.source_id)
            if (
                have is None
                or (have.method != "same messages" and off.method == "same messages")
                or (have.method == off.method == "same messages" and off.pairs > have.pairs)
            ):
                out[off.source_id] = off
    return out


SHIFT_MIN_S = 600.0


def is_zone_or_year(off: ClockOffset) -> bool:
    """Offsets worth correcting in the store: a wrong zone or a wrong year (not a clock drifting by
    seconds, which only the matching tolerates).

    >>> is_zone_or_year(ClockOffset(1, 2, 31536000.0, "same messages", 3))
    True
    >>> is_zone_or_year(ClockOffset(1, 2, 42.0, "same messages", 3))
    False
    """
    if abs(off.offset_s) < SHIFT_MIN_S:
        return False
    if off.method in ("unit start vs server_args", "same zone as another source"):
        return True
    note = describe_offset(off.offset_s) or ""
    return "wrong year" in note or "wrong zone" in note
