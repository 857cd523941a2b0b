"""The shared compiled helpers (``postmortem.parsers.jit``) against plain Python."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem.parsers.jit import gather_spans, large_strings, spans_to_arrow, to_arrow, wall_clock


def _buf(data: bytes) -> np.ndarray:  # type: ignore[type-arg]
    return np.frombuffer(data, dtype=np.uint8)


def test_gather_spans_with_and_without_a_cut() -> None:
    data = b"2025-03-14T09:00:00.120000+00:00 x Mar 14 09:00:00.5 y"
    buf = _buf(data)
    starts = np.array([0, 35, 10], dtype=np.int64)
    ends = np.array([32, len(data), 10], dtype=np.int64)  # the last span is empty
    offsets, out = gather_spans(buf, starts, ends, -1, 0)
    assert large_strings(offsets, out).to_pylist() == [data[0:32].decode(), data[35:].decode(), ""]
    # the fraction left out (7 bytes from offset 19): what a dictionary of stamps is keyed by
    offsets, out = gather_spans(buf, starts[:1], ends[:1], 19, 7)
    assert large_strings(offsets, out).to_pylist() == ["2025-03-14T09:00:00+00:00"]
    assert spans_to_arrow(buf, starts[1:2], ends[1:2]).to_pylist() == ["Mar 14 09:00:00.5 y"]


_STAMP = st.tuples(
    st.text(alphabet="0123456789", min_size=4, max_size=4),
    st.text(alphabet="0123456789", min_size=2, max_size=2),
    st.text(alphabet="0123456789", min_size=2, max_size=2),
    st.text(alphabet="0123456789", min_size=2, max_size=2),
    st.text(alphabet="0123456789", min_size=2, max_size=2),
    st.text(alphabet="0123456789x", min_size=2, max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(parts=_STAMP, sep=st.sampled_from(["T", " ", "_"]))
def test_wall_clock_reads_what_datetime_reads(parts: tuple[str, ...], sep: str) -> None:
    y, mo, d, hh, mi, ss = parts
    text = f"{y}-{mo}-{d}{sep}{hh}:{mi}:{ss}"
    shaped, real, secs = wall_clock(_buf(text.encode()), 0, ord("T"))
    assert shaped == (sep == "T" and ss.isdigit())
    try:
        want = datetime(int(y), int(mo), int(d), int(hh), int(mi), int(ss), tzinfo=UTC)
    except ValueError:
        want = None
    assert real == (shaped and want is not None)
    if real:
        assert want is not None and secs == int(want.timestamp())


def test_to_arrow_without_copies_or_pandas() -> None:
    import pyarrow as pa

    values = np.array([3, 1, 2], dtype=np.int64)
    arr = to_arrow(values, pa.int64(), np.array([True, False, True]))
    assert arr.to_pylist() == [3, None, 2]
    assert to_arrow(np.array([1, 0, 1], dtype=np.int64), pa.bool_()).to_pylist() == [True, False, True]


def test_kernels_refuse_default_arguments() -> None:
    # a call leaving a default out takes numba's slow dispatch path (~150 µs a call)
    import pytest

    from postmortem.parsers.jit import kernel

    def with_default(x: int, y: int = 1) -> int:
        return x + y

    with pytest.raises(TypeError, match="default arguments"):
        kernel(with_default)


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(st.text(alphabet="#0123ab", max_size=12).map(str.encode), min_size=1, max_size=8),
    gap=st.binary(max_size=3),
)
def test_gather_messages_finds_rsyslog_escapes_as_python_does(messages: list[bytes], gap: bytes) -> None:
    """The journal's message copy (a copy, then a branch-free or over 4-byte windows) against
    plain Python: the same bytes, and "#011"/"#012" found only inside a message (never across
    the gap between two, nor cut short at a message's end)."""
    from postmortem.parsers.journal.kernels import gather_messages

    data, starts, ends = b"", [], []
    for m in messages:
        starts.append(len(data))
        data += m
        ends.append(len(data))
        data += gap
    escaped = np.zeros(len(messages), dtype=np.bool_)
    offsets, out, count = gather_messages(
        _buf(data), np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64), escaped
    )
    want = [b"#011" in m or b"#012" in m for m in messages]
    assert [bytes(out[offsets[i] : offsets[i + 1]]) for i in range(len(messages))] == messages
    assert escaped.tolist() == want
    assert count == sum(want)


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(
        st.sampled_from([b"\n", b"a", b"\x8a", b"\x0b", b"\x00", b"\xff", b"\n\n", b"x" * 9]), max_size=60
    ),
    spare=st.integers(-3, 3),
)
def test_newline_offsets_are_numpy_s(data: list[bytes], spare: int) -> None:
    from postmortem.parsers.jit import newline_offsets

    buf = np.frombuffer(b"".join(data), dtype=np.uint8)
    want = np.flatnonzero(buf == 10)
    out = np.empty(max(0, len(want) + spare), dtype=np.int64)
    got = newline_offsets(buf, out)
    if spare < 0 and len(want):
        assert got == -1  # too small for them all: said, not cut short
    else:
        assert got == len(want) and out[:got].tolist() == want.tolist()
