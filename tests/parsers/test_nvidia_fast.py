"""The compiled --query-gpu pass (parsers/nvidia/kernels.py + fastcsv.py) against the per-line
parser, which stays the reference: the same rows, parse issues, notes and line numbers, on
generated loops with odd cells and rows dropped in, and on real nvidia-smi output."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import parse_text, serialise

import postmortem.parsers.nvidia.query_csv as qc

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

REAL = Path(__file__).resolve().parents[3] / "shared" / "real-samples" / "nvidia"

HEAD = (
    "timestamp, index, uuid, pci.bus_id, name, driver_version, memory.total [MiB], memory.used [MiB], "
    "utilization.gpu [%], temperature.gpu, power.draw [W], pstate, memory.free [MiB]"
)

# per column: cells of every shape the converters know, plain and odd
ODD = {
    1: ["0", "7", " 3", "0x1", "12345678901", "-", "[N/A]", "", "07"],
    2: ["GPU-abc", " GPU-x ", "[N/A]", "N/A", "-", "Not Supported", "Unknown Error", "ÄGPU"],
    3: [
        "00000000:18:00.0",
        "0000:9b:00.0",
        "9B:00.0",
        "GPU0000:03:00.0",
        "00000000:18:00.9",
        "x",
        "",
        "[N/A]",
    ],
    4: ["NVIDIA H200", "[N/A]", "NVIDIA, H200", "Tesla  T4", "N/A"],
    5: ["570.86.15", "610.57.04 [Deprecated; use KMD]", "[N/A]", "-"],
    6: ["143771 MiB", "143771MiB", "143771", "143771 MB", "143771  MiB", "1.5 GiB", "[N/A]", "-", "13583..."],
    7: ["0 MiB", "99999999999999999999 MiB", "12 MB", "MiB", " 5 MiB"],
    8: [
        "0 %",
        "100 %",
        "5",
        "-3 C",
        "1e3 %",
        "5. %",
        ".5 %",
        "-0 %",
        "N5",
        "[5]",
        "E",
        "12345678901234567 %",
    ],
    9: ["40", "38C", "-3", "+5", "0.000001", "1.25", "inf", "nan", "1_0", "[Not Supported]"],
    10: ["300.25 W", "76.10 W", "[N/A]", "N/A", "0.1 W", "-0.0 W", "3.14159265358979 W", "12 W W"],
    11: ["P0", "P8", "[N/A]", "-", "P"],
    12: ["43220 MiB", "[N/A]", "N/A", "43220", "4322", "43220 MiB"],
}
PLAIN = [
    "0",
    "GPU-00000000-1111-2222-3333-444444444440",
    "00000000:18:00.0",
    "NVIDIA H200",
    "570.86.15",
    "143771 MiB",
    "100000 MiB",
    "5 %",
    "40",
    "300.25 W",
    "P0",
    "43220 MiB",
]
ODD_ROWS = [
    "",
    "timestamp, index, memory.used [MiB]",  # another run appended: the layout switches
    "2026/03/08 01:10:00.000, 0, 5 MiB",
    "Thu Jan 15 10:00:00 UTC 2026",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    "# a comment, with a comma",
    "2026/02/30 10:00:00.000, 0, x",
    "garbage",
    "2026/03/08 01:00:00.000, 0, GPU-1, 00000000:18:00.0, NVIDIA H200, [Unknown Error]",
]


def _stamp(n: int, hour: int) -> str:
    sec = n // 4
    return f"2026/11/01 {hour + sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.{n * 7 % 1000:03d}"


def _loop(rows: int, hour: int, odd_cells: dict[int, tuple[int, str]], odd_rows: dict[int, str]) -> str:
    out = [HEAD]
    for n in range(rows):
        if n in odd_rows:
            out.append(odd_rows[n])
        cells = [_stamp(n, hour), *PLAIN]
        if n in odd_cells:
            col, value = odd_cells[n]
            cells[col] = value
        out.append(", ".join(cells))
    return "\n".join(out) + "\n"


def _same(text: str | bytes, tz: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, fctx = parse_text("nvidia-smi-csv", text, tz=tz)
    with monkeypatch.context() as m:
        m.setattr(qc, "VECTOR_MIN_ROWS", 10**9)
        slow, sctx = parse_text("nvidia-smi-csv", text, tz=tz)
    assert sorted(serialise(fast)) == sorted(serialise(slow))
    assert (fctx.parsed_lines, fctx.ignored_lines, fctx.notes) == (
        sctx.parsed_lines,
        sctx.ignored_lines,
        sctx.notes,
    )


odd_cell = st.tuples(st.integers(1, 12), st.integers(0, 8)).map(
    lambda t: (t[0], ODD[t[0]][t[1] % len(ODD[t[0]])])
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cells=st.dictionaries(st.integers(0, 899), odd_cell, max_size=40),
    rows=st.dictionaries(st.integers(0, 899), st.sampled_from(ODD_ROWS), max_size=4),
    hour=st.sampled_from([0, 1, 5]),
    tz=st.sampled_from(["UTC", "America/New_York", "Asia/Kolkata"]),
)
def test_fast_path_equals_per_line_path(
    cells: dict[int, tuple[int, str]],
    rows: dict[int, str],
    hour: int,
    tz: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # hour 0/1 in New York crosses 2026-11-01's repeated hour, which the per-line path reads
    text = _loop(900, hour, cells, rows)
    fast, _ = parse_text("nvidia-smi-csv", text, tz=tz)
    if not rows and not cells and tz == "UTC":
        assert any(type(o).__name__ == "TableBatch" for o in fast)
    _same(text, tz, monkeypatch)


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_line_endings_and_bytes(ending: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _loop(600, 3, {10: (4, "NVIDIA Ä100"), 20: (4, "bad\udcff")}, {}).replace("\n", ending)
    _same(text.encode("utf-8", "surrogateescape"), "UTC", monkeypatch)


@pytest.mark.parametrize(
    "name", ["04_query_gpu_csv_lms_loop.txt", "08_query_gpu_csv_loop_H100NVL_memory_ramp.txt"]
)
def test_real_loops(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = REAL / name
    if not path.exists():
        pytest.skip(f"{path}: no real samples here")
    head, *body = path.read_text(encoding="utf-8").splitlines()
    rows = [ln for ln in body if ln.strip() and not ln.endswith(",")]
    cut = [ln for ln in body if ln.endswith(",")]  # the loop was stopped mid-row: kept last
    text = "\n".join([head, *(rows * (600 // len(rows) + 1)), *cut]) + "\n"
    fast, _ = parse_text("nvidia-smi-csv", text, tz="Europe/Berlin")
    assert any(type(o).__name__ == "TableBatch" for o in fast)
    _same(text, "Europe/Berlin", monkeypatch)


def test_every_odd_cell_in_one_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each odd cell on rows of its own, far enough apart for the fast path to take blocks."""
    cells = {}
    n = 0
    for col, values in ODD.items():
        for value in values:
            cells[n] = (col, value)
            n += 3
    text = _loop(max(n, 900), 5, cells, {})
    fast, _ = parse_text("nvidia-smi-csv", text, tz="UTC")
    assert any(type(o).__name__ == "TableBatch" for o in fast)
    _same(text, "UTC", monkeypatch)
