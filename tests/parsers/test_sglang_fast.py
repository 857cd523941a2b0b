"""The SGLang vectorised path against the Python reference: the byte-level value readers equal
``int()`` / ``float()`` / the ``True``/``False`` test wherever they claim a value, and a log
full of odd lines stores exactly what the per-line path stores."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest
from conftest import check_accounting
from hypothesis import given, settings
from hypothesis import strategies as st
from test_journal_sglang import _sglang_message
from test_sglang import _rows

from postmortem.parsers import get_parser
from postmortem.parsers.base import LineChunk, ParseContext
from postmortem.parsers.sglang.fast import _Bytes
from postmortem.timeutil import get_zone

_VALUE = st.one_of(
    st.text(alphabet="0123456789", min_size=1, max_size=20),
    st.text(alphabet="0123456789.", min_size=0, max_size=18),
    st.from_regex(r"[0-9]{0,9}\.[0-9]{0,9}", fullmatch=True),
    st.text(alphabet="0123456789.-+eE _x٣ \t", min_size=0, max_size=12),
    st.sampled_from(["True", "False", "true", "Tru", "Falsey", "", ".", "5.", ".5", "0.810", "1e5"]),
)
_FILL = st.text(alphabet="ab:, .0123456789", max_size=20)


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
    """What the readers must accept: ASCII digits (and one dot for floats)."""
    body = s.replace(".", "", 1) if dot else s
    return 1 <= len(body) <= digits and body.isascii() and body.isdigit() and len(s) <= 16


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.tuples(_FILL, _VALUE, _FILL), min_size=1, max_size=12))
def test_byte_readers_equal_python(values: list[tuple[str, str, str]]) -> None:
    # each value sits inside a line, between random neighbours (the readers mask around it)
    lines = [f"{a}{v}{b}" for a, v, b in values]
    raw = _Bytes(pa.array(lines))
    starts, ends = [], []
    for i, (a, v, _b) in enumerate(values):
        s = int(raw.start[i]) + len(a.encode())
        starts.append(s)
        ends.append(s + len(v.encode()))
    import numpy as np

    start, end = np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)
    ints, ok_i = raw.ints(start, end)
    floats, ok_f = raw.floats(start, end)
    bools, ok_b = raw.bools(start, end)
    for q, (_a, v, _b) in enumerate(values):
        if ok_i[q]:
            assert _python_int(v) == int(ints[q]), v
        assert bool(ok_i[q]) == _plain(v, 16, dot=False), v
        if ok_f[q]:
            want = _python_float(v)
            assert want is not None and want == float(floats[q]), (v, floats[q])
        assert bool(ok_f[q]) == _plain(v, 15, dot=True), v
        assert bool(ok_b[q]) == (v in ("True", "False")), v
        if ok_b[q]:
            assert bool(bools[q]) == (v == "True")


def test_byte_readers_at_the_edges_of_the_buffer() -> None:
    import numpy as np

    lines = ["7", "x: 12345678901234", "0.5"]
    raw = _Bytes(pa.array(lines))
    start = np.array([0, int(raw.start[1]) + 3, int(raw.start[2])], dtype=np.int64)
    end = np.array([1, int(raw.end[1]), int(raw.end[2])], dtype=np.int64)
    ints, ok = raw.ints(start, end)
    assert ok.tolist() == [True, True, False] and ints[:2].tolist() == [7, 12345678901234]
    floats, ok = raw.floats(start, end)
    assert ok.tolist() == [True, True, True] and floats.tolist() == [7.0, 12345678901234.0, 0.5]


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
    fast_batch_rows = sum(o.data.num_rows for o in fast_out if getattr(o, "table", None) == "sglang_batches")
    assert fast_batch_rows > len(slow_rows["sglang_batches"]) // 4
