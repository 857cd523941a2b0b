"""NVIDIA parsers: real samples with values checked by hand, one case per failure branch, the
8-GPU loop, sniffing, bus ids and property tests."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    REAL_SAMPLES,
    check_accounting,
    count_lines,
    issues_of,
    make_context,
    needs_real_samples,
    records_of,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postmortem.parsers.base import Head, Parser, run_parser
from postmortem.parsers.nvidia import (
    DcgmExporter,
    NvidiaDmon,
    NvidiaPmon,
    NvidiaSmiCsv,
    NvidiaSmiQ,
    NvidiaSmiTable,
    NvidiaSmiXml,
    normalise_bus_id,
    xid_bus_id,
)
from postmortem.parsers.nvidia.query_csv import GUESS_LISTS
from postmortem.records import GpuEvent, GpuProcess, GpuSample, GpuXid

NV = REAL_SAMPLES / "nvidia"
PARSERS: dict[str, Parser] = {
    p.name: p
    for p in (
        NvidiaSmiCsv(),
        NvidiaSmiTable(),
        NvidiaSmiQ(),
        NvidiaSmiXml(),
        NvidiaDmon(),
        NvidiaPmon(),
        DcgmExporter(),
    )
}


def parse(name: str, text: str | bytes, **ctx: Any) -> tuple[list[Any], Any]:
    ctx.setdefault("mtime", "2026-01-01T00:00:00+00:00")
    data = text.encode() if isinstance(text, str) else text
    out, context = run_parser(PARSERS[name], data, make_context(**ctx))
    check_accounting(context, out, count_lines(data))
    return out, context


def head_of(path: Path) -> Head:
    data = path.read_bytes()[: 64 << 10]
    return Head(str(path), data, data.decode("utf-8", "replace").split("\n")[:64])


def sample(name: str) -> Path:
    hits = sorted(NV.glob(f"{name}*"))
    assert len(hits) == 1, name
    return hits[0]


def mem(out: list[Any]) -> list[tuple[Any, Any, Any]]:
    """(gpu index or bus id, used MiB, total MiB) per sample."""
    return [
        (s.gpu_index if s.gpu_index is not None else s.bus_id, s.mem_used_mib, s.mem_total_mib)
        for s in records_of(out, GpuSample)
    ]


def procs(out: list[Any]) -> list[tuple[Any, ...]]:
    return [(p.pid, p.process_name, p.used_mib, p.process_type) for p in records_of(out, GpuProcess)]


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


# --------------------------------------------------------------------------- real samples

real = needs_real_samples()

EXPECTED_FORMAT = {
    "01": "nvidia-smi-table",
    "02": "nvidia-smi-table",
    "03": "nvidia-smi-table",
    "04": "nvidia-smi-csv",
    "05": "nvidia-dmon",
    "06": "nvidia-smi-q",
    "07": "nvidia-dmon",
    "08": "nvidia-smi-csv",
    "09": "nvidia-smi-table",
    "10": "nvidia-smi-xml",
    "11": "nvidia-smi-xml",
    "15": "nvidia-smi-csv",
    "16": "nvidia-smi-csv",
    "17": "nvidia-pmon",
    "18": "nvidia-dmon",
    "19": "nvidia-smi-table",
    "20": "nvidia-smi-table",
    "36": "nvidia-smi-q",
}


@real
@pytest.mark.parametrize("prefix", sorted(EXPECTED_FORMAT))
def test_real_sample_sniffed_by_one_parser(prefix: str) -> None:
    scores = {name: p.sniff(head_of(sample(prefix))) for name, p in PARSERS.items()}
    best = max(scores, key=lambda n: scores[n])
    assert best == EXPECTED_FORMAT[prefix]
    assert scores[best] >= 90
    assert all(s == 0 for n, s in scores.items() if n != best), scores


@real
def test_dmesg_capture_is_not_claimed() -> None:
    head = head_of(sample("12_dmesg"))
    assert {name: p.sniff(head) for name, p in PARSERS.items()} == dict.fromkeys(PARSERS, 0)


@real
def test_01_table_8xh200() -> None:
    out, _ = parse("nvidia-smi-table", sample("01").read_bytes(), tz="UTC")
    buses = ["8D", "91", "95", "99", "AB", "AF", "B3", "B7"]
    assert mem(out) == [(i, 0, 143771) for i in range(8)]
    samples = records_of(out, GpuSample)
    assert [s.bus_id for s in samples] == [f"00000000:{b}:00.0" for b in buses]
    assert {s.ts for s in samples} == {utc(2026, 4, 17, 0, 13, 48)}
    assert [s.temp_c for s in samples] == [29, 27, 28, 27, 28, 27, 28, 28]
    assert [s.power_w for s in samples] == [76, 76, 76, 76, 76, 76, 75, 74]
    assert {s.driver_version for s in samples} == {"570.133.20"}
    assert {s.ts_inferred for s in samples} == {"zone"}
    assert procs(out) == []
    assert issues_of(out) == []


@real
def test_02_table_a100_550() -> None:
    out, _ = parse("nvidia-smi-table", sample("02").read_bytes(), tz="UTC")
    assert mem(out) == [(0, 1, 40960)]
    [s] = records_of(out, GpuSample)
    assert (s.bus_id, s.name, s.power_w, s.util_gpu_pct) == (
        "00000000:81:00.0",
        "NVIDIA A100-SXM4-40GB",
        52,
        0,
    )
    assert s.ts == utc(2025, 2, 5, 14, 7, 58)


@real
def test_03_table_l40s_580_with_process() -> None:
    out, _ = parse("nvidia-smi-table", sample("03").read_bytes(), tz="UTC")
    assert mem(out) == [(0, 803, 46068)]
    assert procs(out) == [(5997, "python", 794, "C")]
    [p] = records_of(out, GpuProcess)
    assert (p.gpu_index, p.bus_id, p.truncated) == (0, "00000000:8D:00.0", False)


@real
def test_04_csv_lms_loop() -> None:
    out, _ = parse("nvidia-smi-csv", sample("04").read_bytes(), tz="UTC")
    rows = records_of(out, GpuSample)
    assert [(s.mem_used_mib, s.mem_total_mib, s.mem_free_mib) for s in rows] == [
        (21, 23028, 22494),
        (7, 23028, 22508),
        (7, 23028, 22508),
        (7, 23028, 22508),
        (21, 23028, 22494),
    ]
    assert [s.temp_c for s in rows] == [25, 24, 23, 26, 25]
    assert rows[0].ts == datetime(2024, 1, 16, 14, 44, 16, 977000, tzinfo=UTC)
    assert rows[-1].ts_raw == "2024/01/16 14:44:17.095"
    assert {s.pstate for s in rows} == {"P8"}
    assert {s.gpu_index for s in rows} == {None}


@real
def test_05_dmon_mutc_with_date_time() -> None:
    out, _ = parse("nvidia-dmon", sample("05").read_bytes(), tz="UTC")
    rows = records_of(out, GpuSample)
    assert mem(out) == [(0, used, None) for used in (239, 74, 7, 478, 67, 7)]
    assert [s.ts for s in rows] == [utc(2024, 1, 4, 13, 54, sec) for sec in range(35, 41)]
    assert [s.util_gpu_pct for s in rows] == [6, 0, 3, 13, 0, 3]


@real
def test_06_q_text_a100_535() -> None:
    out, _ = parse("nvidia-smi-q", sample("06").read_bytes(), tz="UTC")
    [s] = records_of(out, GpuSample)
    assert (s.mem_used_mib, s.mem_total_mib, s.mem_reserved_mib, s.mem_free_mib) == (4, 40960, 620, 40334)
    assert (s.bus_id, s.gpu_uuid) == ("00000000:2F:00.0", "GPU-faae5314-b87e-87c0-400b-b7cfb9e7b310")
    assert (s.power_w, s.temp_c, s.util_gpu_pct, s.pstate, s.driver_version) == (
        52.45,
        22,
        0,
        "P0",
        "535.129.03",
    )
    assert s.ts == utc(2024, 1, 4, 14, 45, 46)
    assert procs(out) == []


@real
def test_07_dmon_fb_8gpu_no_time() -> None:
    out, ctx = parse("nvidia-dmon", sample("07").read_bytes(), at="2026-01-15T10:00:00+00:00")
    assert mem(out) == [(i, 4, None) for i in range(8)] * 2
    assert {(s.ts, s.ts_inferred) for s in records_of(out, GpuSample)} == {(utc(2026, 1, 15, 10), "given")}
    assert any("without -o DT" in n for n in ctx.notes)


@real
def test_08_csv_memory_ramp_truncated_last_line() -> None:
    out, _ = parse("nvidia-smi-csv", sample("08").read_bytes(), tz="UTC")
    rows = records_of(out, GpuSample)
    assert len(rows) == 105
    assert rows[0].mem_used_mib == 1
    assert rows[0].ts == datetime(2026, 2, 25, 10, 4, 37, 416000, tzinfo=UTC)
    by_raw = {s.ts_raw: s.mem_used_mib for s in rows}
    assert by_raw["2026/02/25 10:04:52.426"] == 2900
    assert by_raw["2026/02/25 10:04:53.426"] == 37660
    assert by_raw["2026/02/25 10:05:27.433"] == 81874
    assert by_raw["2026/02/25 10:06:20.442"] == 90098
    assert {s.mem_total_mib for s in rows} == {95830}
    last = rows[-1]
    assert (last.ts_raw, last.mem_used_mib, last.mem_total_mib, last.util_gpu_pct) == (
        "2026/02/25 10:06:21.442",
        None,
        95830,
        99,
    )
    [warning] = issues_of(out)
    assert warning.line_no == 106
    assert not warning.unparsed
    assert "short CSV row" in warning.reason
    times = [s.ts for s in rows]
    assert times == sorted(times)
    assert len(set(times)) == len(times)


@real
def test_09_table_2xh100() -> None:
    out, _ = parse("nvidia-smi-table", sample("09").read_bytes(), tz="UTC")
    assert mem(out) == [(0, 0, 81559), (1, 0, 81559)]
    assert [s.bus_id for s in records_of(out, GpuSample)] == ["00000000:AB:00.0", "00000000:BA:00.0"]


@real
def test_10_xml_v12_quadro() -> None:
    out, _ = parse("nvidia-smi-xml", sample("10").read_bytes(), tz="UTC")
    [s] = records_of(out, GpuSample)
    assert (s.mem_used_mib, s.mem_total_mib, s.mem_reserved_mib, s.mem_free_mib) == (1, 5120, 66, 5051)
    assert (s.power_w, s.temp_c, s.pstate, s.driver_version) == (4.61, 34, "P8", "525.125.06")
    assert (s.bus_id, s.gpu_uuid, s.name) == (
        "00000000:17:00.0",
        "GPU-396caaed-39ca-3199-2e68-717cdb786ec6",
        "Quadro P2000",
    )
    assert s.ts == utc(2023, 9, 20, 9, 37, 38)
    assert procs(out) == []


@real
def test_11_xml_v13_rtx4000_with_processes() -> None:
    out, _ = parse("nvidia-smi-xml", sample("11").read_bytes(), tz="UTC")
    [s] = records_of(out, GpuSample)
    assert (s.mem_used_mib, s.mem_total_mib, s.mem_reserved_mib, s.mem_free_mib) == (3534, 20475, 460, 16482)
    assert (s.power_w, s.util_mem_pct, s.driver_version) == (8.81, 37, "595.84")
    assert procs(out) == [
        (1842, "cosmic-comp", 410, "G"),
        (3190, "/usr/bin/code", 451, "G"),
        (4937, "python", 160, "C"),
        (34626, "/usr/lib/chromium/chromium", 183, "C+G"),
    ]
    assert {p.gpu_uuid for p in records_of(out, GpuProcess)} == {"GPU-37037c3f-65c8-ec4d-24a9-420204ad8026"}


@real
def test_15_csv_212_fields_h200() -> None:
    out, _ = parse("nvidia-smi-csv", sample("15").read_bytes(), tz="UTC")
    [s] = records_of(out, GpuSample)
    assert (s.mem_used_mib, s.mem_total_mib, s.mem_reserved_mib, s.mem_free_mib) == (
        32362,
        143771,
        614,
        110796,
    )
    assert (s.gpu_index, s.bus_id, s.name, s.driver_version) == (
        0,
        "00000000:83:00.0",
        "NVIDIA H200",
        "590.48.01",
    )
    assert (s.power_w, s.temp_c, s.util_gpu_pct, s.util_mem_pct, s.pstate) == (627.40, 52, 100, 7, "P0")
    assert issues_of(out) == []


@real
def test_16_compute_apps_h200() -> None:
    out, _ = parse("nvidia-smi-csv", sample("16").read_bytes(), tz="UTC")
    assert procs(out) == [
        (10291, "/root/tools/memhog", 2566, None),
        (10293, "/root/tools/memhog", 1542, None),
        (10309, "./gpu_burn", 28234, None),
    ]
    assert {(p.bus_id, p.gpu_uuid) for p in records_of(out, GpuProcess)} == {
        ("00000000:83:00.0", "GPU-00000000-0000-0000-0000-000000000000")
    }


@real
def test_17_pmon() -> None:
    out, _ = parse("nvidia-pmon", sample("17").read_bytes(), tz="UTC")
    rows = records_of(out, GpuProcess)
    assert len(rows) == 15
    assert [(p.pid, p.process_name) for p in rows[:3]] == [
        (10291, "memhog"),
        (10293, "memhog"),
        (10309, "gpu_burn"),
    ]
    assert {p.used_mib for p in rows} == {None}
    assert {p.process_type for p in rows} == {"C"}


@real
def test_18_dmon_default_columns() -> None:
    out, _ = parse("nvidia-dmon", sample("18").read_bytes(), tz="UTC")
    rows = records_of(out, GpuSample)
    assert [s.power_w for s in rows] == [630, 628, 629, 632, 630]
    assert [s.temp_c for s in rows] == [53, 53, 53, 54, 54]
    assert mem(out) == [(0, None, None)] * 5  # default dmon prints no memory


@real
def test_19_table_mig_h200() -> None:
    out, _ = parse("nvidia-smi-table", sample("19").read_bytes(), tz="UTC")
    assert mem(out) == [(0, 16959, 143771)]
    [s] = records_of(out, GpuSample)
    assert s.util_gpu_pct is None  # N/A under MIG
    assert procs(out) == [
        (12249, "/root/tools/memhog", 2194, "C"),
        (12250, "/root/tools/memhog", 1170, "C"),
        (12267, "./gpu_burn", 13526, "C"),
    ]


@real
def test_20_table_610_kmd_header() -> None:
    out, _ = parse("nvidia-smi-table", sample("20").read_bytes(), tz="UTC")
    assert mem(out) == [(0, 815, 8192)]
    [s] = records_of(out, GpuSample)
    assert (s.name, s.driver_version, s.pstate, s.util_gpu_pct) == (
        "NVIDIA GeForce RTX 2080 ...",
        "610.57.04",
        "P2",
        8,
    )
    assert procs(out) == [
        (1720, "/usr/bin/gnome-shell", 173, "G"),
        (4556, "/usr/bin/Xwayland", 3, "G"),
        (28511, "ffmpeg", 230, "C"),
        (28512, "ffmpeg", 370, "C"),
    ]


@real
def test_36_q_text_h200_590_with_processes() -> None:
    out, _ = parse("nvidia-smi-q", sample("36").read_bytes(), tz="UTC")
    [s] = records_of(out, GpuSample)
    assert (s.mem_used_mib, s.mem_total_mib, s.mem_reserved_mib, s.mem_free_mib) == (
        32362,
        143771,
        614,
        110796,
    )
    assert (s.power_w, s.temp_c, s.util_gpu_pct, s.util_mem_pct, s.driver_version) == (
        627.32,
        52,
        100,
        7,
        "590.48.01",
    )
    assert s.ts == utc(2026, 7, 3, 22, 11, 9)
    assert procs(out) == [
        (10291, "/root/tools/memhog", 2566, "C"),
        (10293, "/root/tools/memhog", 1542, "C"),
        (10309, "./gpu_burn", 28234, "C"),
    ]


@real
def test_real_samples_local_zone() -> None:
    out, _ = parse("nvidia-smi-csv", sample("04").read_bytes(), tz="Europe/Berlin")
    assert records_of(out, GpuSample)[0].ts == datetime(2024, 1, 16, 13, 44, 16, 977000, tzinfo=UTC)


# --------------------------------------------------------------------------- the 8-GPU loop


def loop_capture(gpus: int, intervals: int) -> str:
    head = "timestamp, index, uuid, pci.bus_id, memory.total [MiB], memory.used [MiB], memory.free [MiB]"
    rows = [head]
    for k in range(intervals):
        for g in range(gpus):
            ms = 100 + 2 * g  # rows of one interval differ by a few ms; GPU order is index order
            rows.append(
                f"2026/01/15 10:{k // 12:02d}:{5 * (k % 12):02d}.{ms:03d}, {g}, GPU-{g:08x}-0000-0000-0000-000000000000, "
                f"00000000:{0x18 + g:02X}:00.0, 143771 MiB, {1000 * k + g} MiB, {143771 - 614 - 1000 * k - g} MiB"
            )
    return "\n".join(rows) + "\n"


def test_loop_8_gpus_n_intervals() -> None:
    n = 30
    out, _ = parse("nvidia-smi-csv", loop_capture(8, n), tz="UTC")
    rows = records_of(out, GpuSample)
    assert len(rows) == 8 * n
    assert issues_of(out) == []
    for g in range(8):
        mine = [s for s in rows if s.gpu_index == g]
        assert len(mine) == n
        assert all(a.ts < b.ts for a, b in pairwise(mine))
        assert [s.mem_used_mib for s in mine] == [1000 * k + g for k in range(n)]
        assert {s.bus_id for s in mine} == {f"00000000:{0x18 + g:02X}:00.0"}
    assert rows[8].ts == datetime(2026, 1, 15, 10, 0, 5, 100000, tzinfo=UTC)


# --------------------------------------------------------------------------- CSV branches


def test_csv_noheader_without_columns_and_no_known_list() -> None:
    out, _ = parse("nvidia-smi-csv", "a, b, c, d, e, f, g, h, i, j, k\n")
    [issue] = issues_of(out)
    assert issue.unparsed
    assert "give --columns" in issue.reason


def test_csv_noheader_guess_is_noted() -> None:
    out, ctx = parse("nvidia-smi-csv", "4242, python3, 28234 MiB\n")
    assert procs(out) == [(4242, "python3", 28234, None)]
    assert ctx.notes == ["nvidia-smi CSV without header: assumed fields pid,process_name,used_gpu_memory"]


def test_csv_columns_option_wins() -> None:
    out, _ = parse("nvidia-smi-csv", "81559, 12\n", columns=["memory.total", "memory.used"])
    assert mem(out) == [(None, 12, 81559)]


def test_csv_too_many_cells() -> None:
    out, _ = parse("nvidia-smi-csv", "index, memory.used [MiB]\n0, 1 MiB, 2 MiB\n")
    [issue] = issues_of(out)
    assert issue.line_no == 2
    assert "3 fields, header has 2" in issue.reason


def test_csv_null_tokens_are_null_never_zero() -> None:
    text = (
        "index, memory.used [MiB], memory.total [MiB], memory.free [MiB], memory.reserved [MiB], "
        "utilization.gpu [%], power.draw [W], temperature.gpu\n"
        "0, [N/A], [Not Supported], [Insufficient Permissions], N/A, [Unknown Error], -, "
        "[Requested functionality has been deprecated]\n"
    )
    out, _ = parse("nvidia-smi-csv", text)
    [s] = records_of(out, GpuSample)
    assert (s.mem_used_mib, s.mem_total_mib, s.mem_free_mib, s.mem_reserved_mib) == (None, None, None, None)
    assert (s.util_gpu_pct, s.power_w, s.temp_c) == (None, None, None)
    [event] = records_of(out, GpuEvent)
    assert event.kind == "unknown_error"
    assert "utilization.gpu" in event.message


def test_csv_unknown_error_event_once_per_failing_streak() -> None:
    text = "index, memory.used [MiB]\n0, [Unknown Error]\n0, [Unknown Error]\n0, 5 MiB\n0, [Unknown Error]\n"
    out, _ = parse("nvidia-smi-csv", text)
    assert [e.line_no for e in records_of(out, GpuEvent)] == [2, 5]


def test_csv_failure_output_between_rows() -> None:
    text = "index, memory.used [MiB]\n0, 5 MiB\nUnable to determine the device handle for GPU 0000:03:00.0: GPU is lost.  Reboot the system to recover this GPU\n"
    out, _ = parse("nvidia-smi-csv", text)
    [event] = records_of(out, GpuEvent)
    assert (event.kind, event.bus_id) == ("gpu_lost", "00000000:03:00.0")


def test_csv_line_that_is_no_row() -> None:
    out, _ = parse("nvidia-smi-csv", "index, memory.used [MiB]\nhello there\n")
    assert [i.line_no for i in issues_of(out)] == [2]


def test_guess_lists_are_unique() -> None:
    assert len(set(GUESS_LISTS)) == len(GUESS_LISTS)


# --------------------------------------------------------------------------- table branches

ROW1 = "|   0  NVIDIA H200                    On  |   00000000:18:00.0 Off |                    0 |"
ROW2 = "| N/A   51C    P0            412W /  700W |   32362MiB / 143771MiB |     97%      Default |"


def test_table_row2_without_row1() -> None:
    out, _ = parse("nvidia-smi-table", ROW2 + "\n")
    [issue] = issues_of(out)
    assert "without the row above" in issue.reason


def test_table_row1_without_row2_still_a_sample() -> None:
    out, _ = parse("nvidia-smi-table", ROW1 + "\n+----+\n")
    assert mem(out) == [(0, None, None)]


def test_table_unrecognised_row_and_cut_row() -> None:
    out, _ = parse("nvidia-smi-table", ROW1 + "\n" + ROW2 + "\n| what is this |\n| N/A   51C    P0  \n")
    assert [i.line_no for i in issues_of(out)] == [3, 4]
    assert mem(out) == [(0, 32362, 143771)]


def test_table_not_a_table_line() -> None:
    out, _ = parse("nvidia-smi-table", ROW1 + "\n" + ROW2 + "\nsome shell noise\n")
    assert [i.reason for i in issues_of(out)] == ["not part of an nvidia-smi table"]


def test_table_repeated_index_starts_a_new_snapshot_with_its_own_time() -> None:
    text = "Thu Jan 15 10:00:00 2026\n" + ROW1 + "\n" + ROW2 + "\n" + ROW1 + "\n" + ROW2 + "\n"
    out, _ = parse("nvidia-smi-table", text, tz="UTC")
    assert [(s.ts, s.ts_inferred) for s in records_of(out, GpuSample)] == [
        (utc(2026, 1, 15, 10), "zone"),
        (utc(2026, 1, 1), "mtime"),
    ]


def test_table_date_command_lines_between_snapshots() -> None:
    text = "\n".join(
        [
            "Thu Jan 15 10:00:00 UTC 2026",
            ROW1,
            ROW2,
            "2026-01-15T10:05:00+01:00",
            ROW1,
            ROW2,
            "1768471800",
            ROW1,
            ROW2,
        ]
    )
    out, _ = parse("nvidia-smi-table", text)
    assert [s.ts for s in records_of(out, GpuSample)] == [
        utc(2026, 1, 15, 10),
        utc(2026, 1, 15, 9, 5),
        utc(2026, 1, 15, 10, 10),
    ]


@pytest.mark.parametrize(
    ("line", "kind", "bus"),
    [
        ("Unable to determine the device handle for GPU0000:03:00.0: Unknown Error", "device_handle_error", "00000000:03:00.0"),
        ("Unable to determine the device handle for GPU 0000:b3:00.0: GPU is lost.  Reboot the system to recover this GPU", "gpu_lost", "00000000:B3:00.0"),
        ("No devices were found", "no_devices", None),
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "smi_failed", None),
        ("Failed to initialize NVML: Driver/library version mismatch", "nvml_init_failed", None),
    ],
)  # fmt: skip
def test_failure_outputs_are_events(line: str, kind: str, bus: str | None) -> None:
    for name in ("nvidia-smi-table", "nvidia-smi-q", "nvidia-smi-xml", "nvidia-smi-csv", "dcgm-exporter"):
        out, ctx = parse(name, f"Thu Jan 15 10:00:00 UTC 2026\n{line}\n")
        [event] = records_of(out, GpuEvent)
        assert (event.kind, event.bus_id, event.ts) == (kind, bus, utc(2026, 1, 15, 10)), name
        assert issues_of(out) == []
        assert ctx.parsed_lines == 2


@pytest.mark.parametrize("stamp", ["Thu Oct  2 10:00:00 UTC 2025", "2025-10-02T10:00:00+00:00"])
def test_a_loop_with_date_lines_is_sniffed_as_the_csv_it_is(stamp: str) -> None:
    """``while :; do date; nvidia-smi --query-gpu=… --format=csv; sleep 30; done`` (finding F13):
    a date line first must not hide the CSV. (``date +%s`` is not a date line here: a one-column
    ``noheader,nounits`` query prints bare numbers too.)"""
    snap = "index, uuid, memory.used [MiB], memory.total [MiB]\n0, GPU-aaaa, 70000 MiB, 81559 MiB\n"
    head = Head("x", b"", f"{stamp}\n{snap}{stamp}\n{snap}".splitlines())
    scores = {n: p.sniff(head) for n, p in PARSERS.items()}
    assert max(scores, key=lambda n: scores[n]) == "nvidia-smi-csv", scores
    out, _ = parse("nvidia-smi-csv", f"{stamp}\n{snap}")
    [sample] = records_of(out, GpuSample)
    assert (sample.mem_used_mib, sample.ts) == (70000, utc(2025, 10, 2, 10))


def test_failure_only_file_is_sniffed_as_table() -> None:
    head = Head("x", b"", ["No devices were found"])
    assert NvidiaSmiTable().sniff(head) >= 50
    assert all(p.sniff(head) == 0 for n, p in PARSERS.items() if n != "nvidia-smi-table")


# --------------------------------------------------------------------------- -q / XML / dmon / dcgm branches


def test_q_unreadable_timestamp_and_stray_line() -> None:
    text = "==============NVSMI LOG==============\nTimestamp : someday\nGPU 00000000:18:00.0\nrandom words\n"
    out, _ = parse("nvidia-smi-q", text)
    assert [i.line_no for i in issues_of(out)] == [2, 4]


def test_xml_entity_declaration_refused_before_expansion() -> None:
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [\n<!ENTITY a "' + "x" * 1000 + '">\n'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n]>\n<nvidia_smi_log><timestamp>&b;</timestamp></nvidia_smi_log>\n'
    )
    out, _ = parse("nvidia-smi-xml", bomb)
    assert records_of(out, GpuSample) == []
    assert issues_of(out)[0].reason.startswith("XML document declares entities: refused")


def test_xml_external_entity_refused() -> None:
    doc = '<?xml version="1.0"?>\n<!DOCTYPE l [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<nvidia_smi_log>&x;</nvidia_smi_log>\n'
    out, _ = parse("nvidia-smi-xml", doc)
    assert "refused" in issues_of(out)[0].reason


def test_xml_stray_text_between_documents() -> None:
    out, _ = parse("nvidia-smi-xml", "hello\n")
    assert [i.reason for i in issues_of(out)] == ["not part of an nvidia-smi XML document"]


def test_dmon_row_before_header_and_bad_row() -> None:
    out, _ = parse("nvidia-dmon", "    0    4\n# gpu fb\n# Idx MB\n    0    4\n    x y\n")
    assert [i.line_no for i in issues_of(out)] == [1, 5]
    assert mem(out) == [(0, 4, None)]


def test_pmon_dash_row_is_ignored_not_stored() -> None:
    out, ctx = parse("nvidia-pmon", "# gpu pid type sm command\n# Idx # C/G % name\n 0 - - - -\n")
    assert out == []
    assert ctx.ignored_lines == 3


def test_dcgm_unreadable_line() -> None:
    out, _ = parse("dcgm-exporter", 'DCGM_FI_DEV_FB_USED{gpu="0" 12\n')
    assert [i.reason for i in issues_of(out)] == ["unreadable metrics line"]


def test_dcgm_xid_rows_on_change() -> None:
    line = 'DCGM_FI_DEV_XID_ERRORS{{gpu="0",UUID="GPU-1",pci_bus_id="00000000:9B:00.0"}} {}\n'
    text = "".join(line.format(v) for v in (0, 119, 119, 13))
    out, _ = parse("dcgm-exporter", text)
    assert [(x.xid, x.bus_id, x.line_no) for x in records_of(out, GpuXid)] == [
        (119, "0000:9b:00", 2),
        (13, "0000:9b:00", 4),
    ]


# --------------------------------------------------------------------------- bus ids


@pytest.mark.parametrize(
    ("text", "canon", "xid"),
    [
        ("PCI:0000:9b:00", "00000000:9B:00.0", "0000:9b:00"),
        ("0000:9b:00.0", "00000000:9B:00.0", "0000:9b:00"),
        ("00000000:9B:00.0", "00000000:9B:00.0", "0000:9b:00"),
        ("GPU0000:03:00.0", "00000000:03:00.0", "0000:03:00"),
        ("0018:01:00", "00000018:01:00.0", "0018:01:00"),
        ("garbage", None, None),
    ],
)
def test_bus_ids(text: str, canon: str | None, xid: str | None) -> None:
    assert normalise_bus_id(text) == canon
    assert xid_bus_id(text) == xid


# --------------------------------------------------------------------------- properties

_SEEDS = [
    "timestamp, index, memory.used [MiB]\n2026/01/15 10:00:00.123, 0, 5 MiB\n",
    "Thu Jan 15 10:00:00 2026\n"
    + ROW1
    + "\n"
    + ROW2
    + "\n|    0   N/A  N/A   4242   C   python3   12MiB |\n",
    "==============NVSMI LOG==============\nGPU 00000000:18:00.0\n    FB Memory Usage\n        Used : 4 MiB\n",
    '<?xml version="1.0" ?>\n<nvidia_smi_log>\n<gpu id="00000000:18:00.0"><fb_memory_usage><used>4 MiB</used></fb_memory_usage></gpu>\n</nvidia_smi_log>\n',
    "# gpu fb\n# Idx MB\n 0 4\n",
    "# gpu pid type command\n# Idx # C/G name\n 0 42 C python\n",
    'DCGM_FI_DEV_FB_USED{gpu="0"} 4\n',
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(PARSERS)),
    seed=st.sampled_from(_SEEDS),
    cut=st.integers(min_value=0, max_value=400),
    noise=st.text(max_size=120),
)
def test_never_raises_and_accounts_for_every_line(name: str, seed: str, cut: int, noise: str) -> None:
    text = seed[:cut] + noise + seed[cut:]
    parse(name, text.replace("\r", ""))


@real
@pytest.mark.parametrize("prefix", sorted(EXPECTED_FORMAT))
def test_truncated_real_samples(prefix: str) -> None:
    data = sample(prefix).read_bytes()
    for cut in (1, len(data) // 3, len(data) // 2, len(data) - 7):
        parse(EXPECTED_FORMAT[prefix], data[:cut])


def test_table_behind_log_prefixes_scores_below_a_log_parser() -> None:
    lines = [
        "May 25 20:18:02 host sglang[4242]: | NVIDIA-SMI 570.133.20    Driver Version: 570.133.20   CUDA Version: 12.8 |",
    ]
    assert NvidiaSmiTable().sniff(Head("x", b"", lines)) == 60
    assert NvidiaSmiTable().sniff(Head("x", b"", [lines[0].split(": ", 1)[1]])) == 95


def test_table_old_process_row_without_gi_ci() -> None:
    text = (
        "|   0  GeForce GTX 108...  Off  | 00000000:01:00.0  On |                  N/A |\n"
        "| 23%   35C    P8    10W / 250W |    512MiB / 11178MiB |      1%      Default |\n"
        "|    0      1234      C   python                                        500MiB |\n"
    )
    out, _ = parse("nvidia-smi-table", text)
    assert mem(out) == [(0, 512, 11178)]
    assert procs(out) == [(1234, "python", 500, "C")]
    [s] = records_of(out, GpuSample)
    assert (s.name, s.temp_c, s.power_w, s.util_gpu_pct, s.pstate) == ("GeForce GTX 108...", 35, 10, 1, "P8")


def test_a_snapshot_without_a_time_takes_the_one_in_its_file_name() -> None:
    """``nvidia-smi > nvidia-smi-20250611-032130.txt`` after a GPU fell off the bus prints only
    'Unable to determine the device handle …' — no date line. The time in the name (in --tz) is
    the snapshot's; a copied file's mtime is the copy's (it fell outside every window)."""
    text = "Unable to determine the device handle for GPU0000:9A:00.0: Unknown Error\n"
    out, _ = parse("nvidia-smi-table", text, tz="UTC", path="/logs/nvidia-smi-20250611-032130.txt")
    errors = [r for r in out if getattr(r, "ts_inferred", None) is not None]
    assert errors and {(r.ts, r.ts_inferred) for r in errors} == {(utc(2025, 6, 11, 3, 21, 30), "filename")}
    out, _ = parse("nvidia-smi-table", text, tz="UTC", path="/logs/nvidia-smi.txt")
    assert {r.ts_inferred for r in out if getattr(r, "ts_inferred", None) is not None} == {"mtime"}
