# ruff: noqa: DTZ001 - wall-clock times, in no zone yet
"""The SGLang fast path's localising by hour equals zoneinfo's reading of each time (the Python
path's) and Arrow's where Arrow's tables reach (to 2037), and leaves every time in a DST gap or
a repeated hour to the Python path."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem.engines.sglang.fast import HOUR_US, localise

ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "America/St_Johns",
    "UTC",
]
_EPOCH = datetime(1970, 1, 1)


def _us(d: datetime) -> int:
    return (d - _EPOCH) // timedelta(microseconds=1)


def _odd_by_pep495(zone: ZoneInfo, us: int) -> bool:
    d = _EPOCH + timedelta(microseconds=us)
    return d.replace(tzinfo=zone, fold=0).utcoffset() != d.replace(tzinfo=zone, fold=1).utcoffset()


@settings(max_examples=200, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    # around the 2025 transitions of these zones, and spread over other years
    base=st.sampled_from([datetime(2025, 3, 9), datetime(2025, 3, 30), datetime(2025, 4, 6), datetime(2025, 10, 5),
                          datetime(2025, 10, 26), datetime(2025, 11, 2), datetime(1999, 6, 1), datetime(2040, 3, 25)]),
    offsets=st.lists(st.integers(0, 6 * HOUR_US), min_size=1, max_size=50),
    spread=st.booleans(),
)  # fmt: skip
def test_localise_equals_zoneinfo_and_arrow(
    zone: str, base: datetime, offsets: list[int], spread: bool
) -> None:
    us = np.array([_us(base) + o for o in offsets], dtype=np.int64)
    if spread:  # times years apart: the hours looked up one by one
        us[0] += 400 * 24 * 365 * HOUR_US // 10
    utc, odd = localise(us, zone)
    if zone == "UTC":
        assert odd is None and (utc == us).all()
        return
    assert odd is not None
    tz = ZoneInfo(zone)
    arrow = pc.cast(pc.assume_timezone(pa.array(us, pa.timestamp("us")), zone, ambiguous="earliest",
                                       nonexistent="earliest"), pa.int64()).to_numpy()  # fmt: skip
    for k in range(len(us)):
        if _odd_by_pep495(tz, int(us[k])):
            assert odd[k], "a time in a gap or a repeated hour must leave the fast path"
        if not odd[k]:
            d = _EPOCH + timedelta(microseconds=int(us[k]))
            offset = d.replace(tzinfo=tz).utcoffset()
            assert offset is not None
            assert utc[k] == us[k] - offset // timedelta(microseconds=1)
            if d.year < 2037:  # Arrow's zone tables end there (Berlin's DST in 2065: none)
                assert utc[k] == arrow[k]
    # only the hours holding such a time are left out
    hours = us // HOUR_US
    bad = {int(h) for h, k in zip(hours, range(len(us)), strict=True) if _odd_by_pep495(tz, int(us[k]))}
    assert all(odd[k] == (int(hours[k]) in bad) or odd[k] for k in range(len(us)))


def test_transition_hour_left_out_and_neighbours_kept() -> None:
    # Berlin, 2025-03-30: 02:00-03:00 does not exist
    us = np.array([_us(datetime(2025, 3, 30, h, 30)) for h in (1, 2, 3)], dtype=np.int64)
    utc, odd = localise(us, "Europe/Berlin")
    assert odd is not None and odd.tolist() == [False, True, False]
    assert (us - utc)[[0, 2]].tolist() == [HOUR_US, 2 * HOUR_US]
    # Lord Howe, 2025-04-06: half-hour change at 02:00 (repeats 01:30-02:00)
    us = np.array([_us(datetime(2025, 4, 6, 1, 10)), _us(datetime(2025, 4, 6, 1, 45))], dtype=np.int64)
    _utc, odd = localise(us, "Australia/Lord_Howe")
    assert odd is not None and odd.all()
