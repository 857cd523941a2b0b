"""Kernel parsers over the real samples (../shared/real-samples/kernel and the NVIDIA Xid dmesg).

Expected values were read off the files by hand. The syslog-shaped samples (01 RHEL 6, 02 RHEL 8)
belong to the journal/syslog parser; here their message bodies go through KernelStream directly
(the syslog prefix stripped by the test), and end to end once that parser exists.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import REAL_SAMPLES, check_accounting, needs_real_samples, parse_text, records_of

from postmortem.parsers import get_parser
from postmortem.parsers.base import Head, ParseContext, TableBatch
from postmortem.parsers.kernel import KernelStream
from postmortem.records import GpuXid, KernelMessage, OomKill, OomTask

pytestmark = [needs_real_samples(), pytest.mark.corpus]

KERNEL = REAL_SAMPLES / "kernel"
SIX = {
    "10_memcg_oom_6.18_dev_kmsg.txt": "kmsg",
    "10_memcg_oom_6.18_dmesg_ctime.txt": "dmesg",
    "10_memcg_oom_6.18_dmesg_decode.txt": "dmesg",
    "10_memcg_oom_6.18_dmesg_default.txt": "dmesg",
    "10_memcg_oom_6.18_dmesg_iso.txt": "dmesg",
    "10_memcg_oom_6.18_dmesg_raw.txt": "dmesg",
}
#: boot of the 6.18 capture: the iso rendering prints 13:30:19.104016 for the record at 152.104016 s
BOOT_618 = datetime(2026, 12, 2, 13, 27, 47, tzinfo=UTC)
SYSLOG = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d (?P<host>\S+) kernel: (?P<msg>.*)$")
UNIT_618 = "sglang-k26-eagle3.service"
CG_618 = "/system.slice/sglang-k26-eagle3.service"


def messages(out: list[Any]) -> list[KernelMessage]:
    """kernel_messages rows, whether yielded as records or as TableBatch blocks (file parsers)."""
    rows: list[KernelMessage] = []
    for o in out:
        if isinstance(o, KernelMessage):
            rows.append(o)
        elif isinstance(o, TableBatch) and o.table == KernelMessage.TABLE:
            rows.extend(KernelMessage(**r) for r in o.data.to_pylist())
    return sorted(rows, key=lambda m: m.line_no)


def _lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


def _parse(name: str, path: Path, **ctx: Any) -> tuple[list[Any], ParseContext]:
    data = path.read_bytes()
    out, context = parse_text(name, data, **ctx)
    check_accounting(context, out, len(_lines(path)))
    return out, context


def _detected(path: Path) -> str | None:
    data = path.read_bytes()
    head = Head(str(path), data[:65536], data.decode("utf-8", "replace").split("\n")[:64])
    scores = {n: get_parser(n).sniff(head) for n in ("dmesg", "kmsg")}  # type: ignore[union-attr]
    best = max(scores, key=lambda n: scores[n])
    return best if scores[best] >= 30 else None


def _syslog_stream(path: Path) -> list[Any]:
    """The kernel bodies of a syslog file through KernelStream, as the syslog parser routes them."""
    ks = KernelStream(ParseContext())
    out: list[Any] = []
    for no, line in enumerate(_lines(path), 1):
        m = SYSLOG.match(line)
        if m is None:
            continue
        out.extend(
            ks.feed(
                no,
                m.group("msg"),
                ts=None,
                ts_raw=line[:15],
                ts_inferred=None,
                monotonic_s=None,
                host=m.group("host"),
            )
        )
    out.extend(ks.close())
    return out


def _kills(out: list[Any]) -> list[OomKill]:
    return records_of(out, OomKill)


# ------------------------------------------------------------------ detection


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("01_rhel6_2.6.32_syslog_global_oom.log", None),
        ("02_rhel8_4.18_rsyslog_012_global_oom_service.log", None),
        ("03_cadvisor_3.13_memcg_oom_kmsg_stripped.log", "dmesg"),
        ("04_cadvisor_3.13_global_oom_kmsg_stripped.log", "dmesg"),
        ("05_cadvisor_4.8_docker_memcg_two_ooms_kmsg_stripped.log", "dmesg"),
        *SIX.items(),
    ],
)
def test_detection(name: str, fmt: str | None) -> None:
    assert _detected(KERNEL / name) == fmt


def test_other_sources_are_not_claimed() -> None:
    for path in sorted(REAL_SAMPLES.rglob("*.txt")) + sorted(REAL_SAMPLES.rglob("*.log")):
        if path.parent.name == "kernel" or path.name.startswith("12_dmesg"):
            continue
        assert _detected(path) is None, path


# ------------------------------------------------------------------ per-file exact values


def test_03_memcg_3_13() -> None:
    out, _ = _parse("dmesg", KERNEL / "03_cadvisor_3.13_memcg_oom_kmsg_stripped.log")
    (kill,) = _kills(out)
    assert (kill.victim_pid, kill.victim_comm, kill.anon_rss_kb, kill.scope, kill.unit) == (
        13536,
        "memorymonster",
        920,
        "memcg",
        "/mem2",
    )
    assert (kill.total_vm_kb, kill.file_rss_kb, kill.victim_uid, kill.cgroup, kill.oom_memcg) == (
        33558652,
        452,
        275858,
        "/mem2",
        "/mem2",
    )
    assert (kill.memcg_usage_kb, kill.memcg_limit_kb, kill.memsw_usage_kb, kill.memsw_limit_kb) == (
        980,
        980,
        0,
        None,
    )
    assert (kill.invoker_pid, kill.kernel_release, kill.gfp_mask, kill.header_line_no, kill.line_no) == (
        13536,
        "3.13.0-43-generic",
        "0xd0",
        1,
        31,
    )
    (task,) = records_of(out, OomTask)
    assert (
        task.pid,
        task.uid,
        task.total_vm_pages,
        task.rss_pages,
        task.nr_ptes,
        task.swapents,
        task.name,
    ) == (
        13536,
        275858,
        8389663,
        343,
        16267,
        8324326,
        "memorymonster",
    )


def test_04_global_3_13() -> None:
    out, _ = _parse("dmesg", KERNEL / "04_cadvisor_3.13_global_oom_kmsg_stripped.log")
    (kill,) = _kills(out)
    assert (kill.victim_pid, kill.victim_comm, kill.anon_rss_kb, kill.scope, kill.unit) == (
        1532,
        "badsysprogram",
        1595164,
        "global",
        None,
    )
    assert (kill.victim_uid, kill.total_vm_kb, kill.file_rss_kb, kill.cpuset) == (1020, 1641388, 76, "/")
    assert (kill.free_pages, kill.free_kb, kill.free_swap_kb, kill.total_swap_kb, kill.ram_pages) == (
        12929,
        7124 + 44592,
        0,
        0,
        445340,
    )
    tasks = records_of(out, OomTask)
    assert len(tasks) == 28
    assert (tasks[0].pid, tasks[0].name, tasks[1].oom_score_adj, tasks[-1].rss_pages) == (
        273,
        "upstart-udev-br",
        -1000,
        398810,
    )


def test_05_two_docker_memcg_ooms_4_8() -> None:
    out, _ = _parse("dmesg", KERNEL / "05_cadvisor_4.8_docker_memcg_two_ooms_kmsg_stripped.log")
    a, b = _kills(out)
    cid_a = "2e088fe462e25e60be1dafafe2c05c47bda1a97978648d10ad2b7484fc0b8f50"
    cid_b = "6c6fcab8562fd3150854986b78552c732f234fd405b624207b8843528a145e70"
    assert (a.victim_pid, a.victim_comm, a.anon_rss_kb, a.scope, a.unit) == (
        1381,
        "gunpowder-memho",
        18624,
        "memcg",
        f"/docker/{cid_a}",
    )
    assert (b.victim_pid, b.victim_comm, b.anon_rss_kb, b.scope, b.unit) == (
        1667,
        "gunpowder-memho",
        248180,
        "memcg",
        f"/docker/{cid_b}",
    )
    assert (a.cpuset, a.memcg_usage_kb, a.memcg_limit_kb, a.memsw_usage_kb, a.memsw_limit_kb) == (
        cid_a,
        20480,
        20480,
        40940,
        40960,
    )
    assert (b.memcg_usage_kb, b.memcg_limit_kb, b.shmem_rss_kb, b.header_line_no, b.line_no) == (
        307112,
        307200,
        0,
        61,
        89,
    )
    assert a.oom_id != b.oom_id
    tasks = records_of(out, OomTask)
    assert [(t.oom_id, t.pid, t.nr_ptes, t.nr_pmds, t.swapents) for t in tasks] == [
        (a.oom_id, 1381, 34, 4, 5489),
        (b.oom_id, 1667, 315, 4, 91187),
    ]


@pytest.mark.parametrize("name", sorted(SIX))
def test_618_each_rendering(name: str) -> None:
    out, ctx = _parse(SIX[name], KERNEL / name, boot_time=BOOT_618.isoformat())
    (kill,) = _kills(out)
    assert (kill.victim_pid, kill.victim_comm, kill.anon_rss_kb, kill.scope, kill.unit) == (
        2383,
        "sglang::schedul",
        523008,
        "memcg",
        UNIT_618,
    )
    assert (kill.cgroup, kill.oom_memcg, kill.victim_uid, kill.oom_score_adj, kill.pgtables_kb) == (
        CG_618,
        CG_618,
        0,
        0,
        1084,
    )
    assert (kill.memcg_usage_kb, kill.memcg_limit_kb, kill.memsw_usage_kb, kill.memsw_limit_kb) == (
        524288,
        524288,
        524288,
        524288,
    )
    assert (kill.invoker_comm, kill.invoker_pid, kill.kernel_release, kill.gfp_mask) == (
        "sglang::schedul",
        2383,
        "6.18.44",
        "0xcc0(GFP_KERNEL)",
    )
    assert (kill.line_no, kill.header_line_no, kill.oom_id) == (81, 1, ctx.make_id(1))
    (task,) = records_of(out, OomTask)
    assert (task.line_no, task.pid, task.uid, task.tgid, task.total_vm_pages, task.rss_pages) == (
        79,
        2383,
        0,
        2383,
        135290,
        132377,
    )
    assert (task.rss_anon_pages, task.rss_file_pages, task.rss_shmem_pages, task.pgtables_bytes) == (
        130752,
        1625,
        0,
        1110016,
    )
    assert (task.swapents, task.oom_score_adj, task.name) == (0, 0, "sglang::schedul")
    assert len(messages(out)) == 81
    # the wall time of the kill, printed or anchored
    want = datetime(2026, 12, 2, 13, 30, 19, 104816, tzinfo=UTC)
    assert kill.ts == (want.replace(microsecond=0) if "ctime" in name else want)


def test_618_six_renderings_give_identical_rows() -> None:
    """Identical oom_kills and oom_tasks rows, apart from how the time was printed: ts is equal
    after anchoring the monotonic renderings on the boot the iso rendering implies (ctime: to
    the second)."""

    def rows(name: str) -> tuple[list[dict[str, Any]], list[OomTask]]:
        out, _ = _parse(SIX[name], KERNEL / name, boot_time=BOOT_618.isoformat())
        kill_rows = []
        for k in _kills(out):
            d = dataclasses.asdict(k)
            for key in ("ts_raw", "ts_inferred", "monotonic_s"):
                d.pop(key)
            d["ts"] = d["ts"].replace(microsecond=0)
            kill_rows.append(d)
        return kill_rows, records_of(out, OomTask)

    reference = rows("10_memcg_oom_6.18_dmesg_iso.txt")
    for name in SIX:
        assert rows(name) == reference, name


def test_618_monotonic_renderings_agree_with_iso_to_the_microsecond() -> None:
    iso, _ = _parse("dmesg", KERNEL / "10_memcg_oom_6.18_dmesg_iso.txt")
    want = [m.ts for m in messages(iso)]
    for name in ("10_memcg_oom_6.18_dmesg_default.txt", "10_memcg_oom_6.18_dmesg_raw.txt",
                 "10_memcg_oom_6.18_dmesg_decode.txt", "10_memcg_oom_6.18_dev_kmsg.txt"):  # fmt: skip
        out, _ = _parse(SIX[name], KERNEL / name, boot_time=BOOT_618.isoformat())
        msgs = messages(out)
        assert [m.ts for m in msgs] == want, name
        assert {m.ts_inferred for m in msgs} == {"boot"}


def test_618_levels_agree_between_raw_decode_and_kmsg() -> None:
    levels = []
    for name in (
        "10_memcg_oom_6.18_dmesg_raw.txt",
        "10_memcg_oom_6.18_dmesg_decode.txt",
        "10_memcg_oom_6.18_dev_kmsg.txt",
    ):
        out, _ = _parse(SIX[name], KERNEL / name)
        levels.append([m.level for m in messages(out)])
    assert levels[0] == levels[1] == levels[2]
    assert (levels[0][0], levels[0][-1], levels[0][-2]) == (4, 3, 6)


def test_618_kmsg_sequence_numbers() -> None:
    out, _ = _parse("kmsg", KERNEL / "10_memcg_oom_6.18_dev_kmsg.txt")
    seqs = [m.seq for m in messages(out)]
    assert (seqs[0], seqs[-1], len(set(seqs))) == (424, 504, 81)


# ------------------------------------------------------------------ syslog-shaped samples via KernelStream


def test_01_rhel6_bodies_through_kernel_stream() -> None:
    out = _syslog_stream(KERNEL / "01_rhel6_2.6.32_syslog_global_oom.log")
    (kill,) = _kills(out)
    assert (kill.victim_pid, kill.victim_comm, kill.anon_rss_kb, kill.scope, kill.unit) == (
        40738,
        "mysqld",
        13128,
        "global",
        None,
    )
    assert (kill.victim_uid, kill.total_vm_kb, kill.file_rss_kb, kill.monotonic_s, kill.host) == (
        27,
        6424316,
        4,
        15180286.180369,
        "new-db1",
    )
    assert (kill.invoker_comm, kill.invoker_pid, kill.kernel_release, kill.gfp_mask) == (
        "php-fpm",
        23212,
        "2.6.32-642.11.1.el6.x86_64",
        "0x280da",
    )
    assert (kill.free_swap_kb, kill.total_swap_kb, kill.ram_pages, kill.free_pages) == (
        0,
        2097148,
        8388607,
        49825,
    )
    tasks = records_of(out, OomTask)
    assert len(tasks) == 878 - 86 + 1
    first = tasks[0]
    assert (first.line_no, first.pid, first.cpu, first.oom_adj, first.oom_score_adj, first.name) == (
        86,
        788,
        7,
        -17,
        -1000,
        "udevd",
    )


def test_02_rhel8_bodies_through_kernel_stream() -> None:
    out = _syslog_stream(KERNEL / "02_rhel8_4.18_rsyslog_012_global_oom_service.log")
    (kill,) = _kills(out)
    assert (kill.victim_pid, kill.victim_comm, kill.anon_rss_kb, kill.scope, kill.unit) == (
        3117813,
        "cache-main",
        4805020,
        "global",
        "varnish.service",
    )
    assert (kill.victim_uid, kill.total_vm_kb, kill.file_rss_kb, kill.shmem_rss_kb, kill.pgtables_kb) == (
        991,
        11705436,
        53964,
        0,
        21664,
    )
    assert (kill.invoker_comm, kill.invoker_pid, kill.kernel_release) == (
        "in:imjournal",
        879,
        "4.18.0-553.8.1.el8_10.x86_64",
    )
    assert (kill.free_pages, kill.free_kb, kill.ram_pages, kill.free_swap_kb) == (
        23902,
        14336 + 43760 + 37372,
        1572729,
        0,
    )
    tasks = records_of(out, OomTask)
    assert len(tasks) == 35
    cache = next(t for t in tasks if t.pid == 3117813)
    assert (
        cache.uid,
        cache.tgid,
        cache.total_vm_pages,
        cache.rss_pages,
        cache.pgtables_bytes,
        cache.name,
    ) == (
        991,
        3117813,
        2926359,
        1214746,
        22183936,
        "cache-main",
    )
    (counters,) = [m for m in messages(out) if m.line_no == 37]
    assert counters.message.split("\n")[-1] == " free:23902 free_pcp:1055 free_cma:0"


@pytest.mark.parametrize(
    ("name", "pid", "comm", "anon", "unit"),
    [
        ("01_rhel6_2.6.32_syslog_global_oom.log", 40738, "mysqld", 13128, None),
        (
            "02_rhel8_4.18_rsyslog_012_global_oom_service.log",
            3117813,
            "cache-main",
            4805020,
            "varnish.service",
        ),
    ],
)
def test_syslog_samples_end_to_end(
    name: str, pid: int, comm: str, anon: int, unit: str | None, tmp_path: Path, cli: Any
) -> None:
    if get_parser("journal-short") is None:
        pytest.skip("the journal/syslog parser (journal-short) is not there yet")
    from postmortem.store.db import Store

    db = tmp_path / "t.duckdb"
    result = cli("ingest", "--db", db, "--tz", "UTC", "--year", "2025", KERNEL / name)
    assert result.code == 0, result
    store = Store.open_readonly(db)
    rows = store.fetchall(
        "SELECT victim_pid, victim_comm, anon_rss_kb, scope, unit FROM oom_kills ORDER BY line_no"
    )
    store.close()
    assert rows == [(pid, comm, anon, "global", unit)]


# ------------------------------------------------------------------ NVIDIA Xid sample


def test_nvidia_xid_119_dmesg_ctime() -> None:
    path = REAL_SAMPLES / "nvidia" / "12_dmesg_xid119_gsp_timeout_XE9680.txt"
    assert _detected(path) == "dmesg"
    out, _ = _parse("dmesg", path, tz="UTC")
    xids = records_of(out, GpuXid)
    assert [(x.line_no, x.bus_id, x.xid, x.pid, x.process_name) for x in xids] == [
        (3, "0000:9b:00", 119, 2024380, "nvidia-smi"),
        (38, "0000:9b:00", 119, 2024380, "nvidia-smi"),
        (40, "0000:9b:00", 119, 2024380, "nvidia-smi"),
        (42, "0000:9b:00", 119, 1263500, "cache_mgr_main"),
        (43, "0000:9b:00", 119, 1240590, "gpud"),
    ]
    assert xids[0].ts == datetime(2025, 2, 23, 16, 24, 18, tzinfo=UTC)
    assert xids[-1].ts - xids[0].ts == timedelta(minutes=5, seconds=55)
    assert xids[0].message.startswith("Timeout after 6s of waiting for RPC response from GPU4 GSP!")
    assert not _kills(out)


# ------------------------------------------------------------------ truncated records


def _expect_from(lines: list[str]) -> list[int]:
    """Victim pids the kill lines among ``lines`` name."""
    pids = []
    for line in lines:
        m = re.search(r"Killed process (\d+)", line)
        if m:
            pids.append(int(m.group(1)))
    return pids


TRUNCATE = [
    ("dmesg", "10_memcg_oom_6.18_dmesg_default.txt"),
    ("kmsg", "10_memcg_oom_6.18_dev_kmsg.txt"),
    ("dmesg", "10_memcg_oom_6.18_dmesg_ctime.txt"),
    ("dmesg", "03_cadvisor_3.13_memcg_oom_kmsg_stripped.log"),
    ("dmesg", "04_cadvisor_3.13_global_oom_kmsg_stripped.log"),
    ("dmesg", "05_cadvisor_4.8_docker_memcg_two_ooms_kmsg_stripped.log"),
]


@pytest.mark.parametrize(("fmt", "name"), TRUNCATE)
def test_cut_at_every_line(fmt: str, name: str) -> None:
    lines = _lines(KERNEL / name)
    opener = re.compile(r"invoked oom-killer|oom-kill:|Killed process|Kill process|Task in |\[\s*pid\s*\]")
    for cut in range(1, len(lines)):
        for part in (lines[:cut], lines[cut:]):
            text = "\n".join(part)
            out, ctx = parse_text(fmt, text)
            check_accounting(ctx, out, len(part))
            rows = _kills(out)
            killed = _expect_from(part)
            got = [k.victim_pid for k in rows if k.anon_rss_kb is not None]
            assert got == killed, (cut, part is lines[:cut])
            if not killed and any(opener.search(x) for x in part):
                assert len(rows) >= 1, cut  # an event without its kill line still gives its row
            tasks = records_of(out, OomTask)
            assert all(t.oom_id in {k.oom_id for k in rows} for t in tasks), cut


def test_only_the_kill_line_survives() -> None:
    line = _lines(KERNEL / "10_memcg_oom_6.18_dmesg_default.txt")[-1]
    (kill,) = _kills(parse_text("dmesg", line, boot_time=BOOT_618.isoformat())[0])
    assert (kill.victim_pid, kill.anon_rss_kb, kill.scope, kill.header_line_no, kill.unit) == (
        2383,
        523008,
        "memcg",
        None,
        None,
    )
    assert kill.ts == datetime(2026, 12, 2, 13, 30, 19, 104816, tzinfo=UTC)


def test_syslog_bodies_cut_at_every_line() -> None:
    path = KERNEL / "02_rhel8_4.18_rsyslog_012_global_oom_service.log"
    lines = _lines(path)
    for cut in range(1, len(lines)):
        for part in (lines[:cut], lines[cut:]):
            ks = KernelStream(ParseContext())
            out: list[Any] = []
            for no, line in enumerate(part, 1):
                m = SYSLOG.match(line)
                if m:
                    out.extend(
                        ks.feed(
                            no,
                            m.group("msg"),
                            ts=None,
                            ts_raw=None,
                            ts_inferred=None,
                            monotonic_s=None,
                            host=None,
                        )
                    )
            out.extend(ks.close())
            assert [k.victim_pid for k in _kills(out) if k.anon_rss_kb is not None] == _expect_from(part)
