"""The SGLang vectorised path against the Python reference: the compiled value readers equal
``int()`` / ``float()`` / the ``True``/``False`` test wherever they claim a value, and a log
full of odd lines stores exactly what the per-line path stores."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest
from conftest import check_accounting
from hypothesis import given, settings
from hypothesis import strategies as st
from test_journal_sglang import _sglang_message
from test_sglang import _rows

from postmortem.parsers import get_parser
from postmortem.parsers.base import LineChunk, ParseContext
from postmortem.timeutil import get_zone

_VALUE = st.one_of(
    st.text(alphabet="0123456789", min_size=1, max_size=20),
    st.text(alphabet="0123456789.", min_size=0, max_size=18),
    st.from_regex(r"[0-9]{0,9}\.[0-9]{0,9}", fullmatch=True),
    st.text(alphabet="0123456789.-+eE _x٣ \t", min_size=0, max_size=12),
    st.sampled_from(["True", "False", "true", "Tru", "Falsey", "", ".", "5.", ".5", "0.810", "1e5"]),
)


def _python_int(s: str) -> int | None:
    try:
        return int(s)
    except ValueError:
        return None


def _python_float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def _plain(s: str, digits: int, dot: bool) -> bool:
    """What the compiled pass must read: ASCII digits (and one dot for floats)."""
    body = s.replace(".", "", 1) if dot else s
    return 1 <= len(body) <= digits and body.isascii() and body.isdigit() and len(s) <= 16


_LINE = "[2025-01-01 10:00:00 TP0] Decode batch, {a}#running-req: {i}, token usage: {f}, cuda graph: {b}{z}"


def _fast_values(line: str) -> tuple[int, float, bool] | None:
    """The running requests, token usage and CUDA-graph flag the compiled pass read from
    ``line`` (None: it left the line to the Python path)."""
    from postmortem.engines.sglang.fast import fast_rows

    fr = fast_rows(LineChunk.from_lines(1, [line]), zone_key="UTC", ts_inferred=None, host=None, unit=None)
    if fr is None or not fr.mask[0]:
        return None
    (table, rows, _pos), *_ = fr.blocks
    assert table == "server_stats"
    row = rows.to_pylist()[0]
    return row["running_req"], row["token_usage"], row["cuda_graph"]


@settings(max_examples=300, deadline=None)
@given(i=_VALUE, f=_VALUE, b=_VALUE, tail=st.sampled_from(["", ", #queue-req: 0", ", ", ",x", "\r"]))
def test_compiled_values_equal_python(i: str, f: str, b: str, tail: str) -> None:
    # each value between its key and the next pair (or the end): the pass reads it exactly as
    # int() / float() / the True-False test, or leaves the line to the Python path
    line = _LINE.format(a="", i=i, f=f, b=b, z=tail)
    got = _fast_values(line)
    readable = (
        _plain(i, 16, dot=False)
        and _plain(f, 15, dot=True)
        and b in ("True", "False")
        and tail in ("", ", #queue-req: 0", ", ")
    )
    assert (got is not None) == readable, line
    if got is not None:
        assert got == (_python_int(i), _python_float(f), b == "True"), line


def test_compiled_values_at_their_limits() -> None:
    def read(i: str, f: str, b: str = "True") -> tuple[int, float, bool] | None:
        return _fast_values(_LINE.format(a="", i=i, f=f, b=b, z=""))

    assert read("7", "0.5") == (7, 0.5, True)
    # 16 digits are an integer, 17 are not; a float has 15 digits at most, 16 characters in all
    assert read("1234567890123456", "123456789012345.") == (1234567890123456, 123456789012345.0, True)
    assert read("12345678901234567", "1") is None
    assert read("1", "1234567890123456") is None
    assert read("1", ".") is None and read("1", "1.2.3") is None and read("1", "") is None
    assert read("1", "5.") == (1, 5.0, True) and read("1", ".5") == (1, 0.5, True)
    assert read("1", "1", "False") == (1, 1.0, False)
    assert read("1", "1", "Tru") is None and read("1", "1", "Falsey") is None
    assert read("+1", "1") is None and read("1", "1e5") is None  # left to int() / float()


def _odd_log(n: int, seed: int, start: datetime) -> str:
    """An SGLang log file: the journal tests' message mix (every odd shape), prefixes in local
    time, a few lines without a prefix or with a wrapper."""
    rnd = random.Random(seed)
    t = start
    out = []
    for _ in range(n):
        t += timedelta(seconds=rnd.choice((0, 0, 1, 2)))
        local = t.strftime("%Y-%m-%d %H:%M:%S")
        msg = _sglang_message(rnd, local, f"{local}.{rnd.randint(0, 999):03d}")
        if rnd.random() < 0.02:
            msg = "sglang-1  | " + msg
        out.append(msg.replace("#012", "\n"))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    ("zone", "start", "seed"),
    [
        ("UTC", datetime(2025, 10, 26, 0, 30), 1),  # noqa: DTZ001 - wall clock
        ("Europe/Berlin", datetime(2025, 10, 26, 1, 30), 2),  # noqa: DTZ001 - the repeated hour
        ("Europe/Berlin", datetime(2025, 3, 30, 1, 30), 3),  # noqa: DTZ001 - the skipped hour
    ],
)
def test_odd_log_vectorised_equals_python(zone: str, start: datetime, seed: int) -> None:
    text = _odd_log(8000, seed, start)
    parser = get_parser("sglang")
    assert parser is not None
    results: list[Any] = []
    lines = text[:-1].split("\n")
    for fast in ("1", "0"):
        ctx = ParseContext(zone=get_zone(zone), zone_given=zone == "UTC", options={"sglang_fast": fast})
        chunks = [LineChunk.from_lines(1 + i, lines[i : i + 3000]) for i in range(0, len(lines), 3000)]
        out = list(parser.parse(chunks, ctx))
        check_accounting(ctx, out, len(lines))
        results.append((_rows(out), ctx.parsed_lines, ctx.ignored_lines, out))
    (fast_rows, fp, fi, fast_out), (slow_rows, sp, si, _) = results
    assert (fp, fi) == (sp, si)
    assert fast_rows.keys() == slow_rows.keys()
    for table in slow_rows:
        assert fast_rows[table] == slow_rows[table], table
    # the fast path did much of the work (wall-clock times in a DST gap stay per-line)
    fast_batch_rows = sum(o.data.num_rows for o in fast_out if getattr(o, "table", None) == "server_stats")
    assert fast_batch_rows > len(slow_rows["server_stats"]) // 4


def _both_paths(lines: list[str], zone: str) -> list[tuple[dict[str, list[tuple[Any, ...]]], int, int]]:
    """The rows and counts of both paths over one chunk of ``lines`` (long enough for the
    fast path)."""
    parser = get_parser("sglang")
    assert parser is not None
    results = []
    for fast in ("1", "0"):
        ctx = ParseContext(zone=get_zone(zone), zone_given=True, options={"sglang_fast": fast})
        out = list(parser.parse([LineChunk.from_lines(1, lines)], ctx))
        check_accounting(ctx, out, len(lines))
        results.append((_rows(out), ctx.parsed_lines, ctx.ignored_lines))
    return results


@pytest.mark.parametrize(
    ("zone", "stamp"),
    [
        ("Asia/Tokyo", "0001-01-01 00:00:01"),  # UTC: year 0
        ("Asia/Tokyo", "0001-01-01 05:10:00.5"),
        ("America/New_York", "9999-12-31 23:59:59"),  # UTC: year 10000
        ("America/New_York", "9999-12-31 22:10:00"),
    ],
)
def test_stamp_whose_utc_time_is_out_of_range(zone: str, stamp: str) -> None:
    # the Python path raised OverflowError (an ingest's "internal error"); the fast path
    # stored a time no datetime holds, which the loader then failed on
    line = (
        "[{} TP0] Decode batch, #running-req: 1, #token: {}, token usage: 0.50, cuda graph: True, "
        "gen throughput (token/s): 12.00, #queue-req: 0"
    )
    lines = [line.format(f"2025-01-01 10:{i // 60 % 60:02d}:{i % 60:02d}", i) for i in range(2200)]
    lines[1000] = line.format(stamp, 1000)
    (fast, *fast_counts), (slow, *slow_counts) = _both_paths(lines, zone)
    assert fast == slow and fast_counts == slow_counts
    assert [r[:2] for r in slow["parse_issues"]] == [(1001, "stamp is not a real date and time; ts is NULL")]
    assert next(r for r in slow["server_stats"] if r[0] == 1001)[1] is None
