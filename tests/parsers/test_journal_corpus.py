"""The real journal corpus (../shared/real-samples/journal and the syslog files in kernel/):
every rendering of the one real binary journal, in UTC and America/Los_Angeles, gives the same
unit_events and the same OOM kill as the json rendering. Expected values were read off the
files by hand (json: __REALTIME_TIMESTAMP of each systemd entry; the kernel kill line)."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import REAL_SAMPLES, check_accounting, count_lines, needs_real_samples, parse_text

from postmortem.io import InputFile, read_head
from postmortem.parsers import detect
from postmortem.records import Boot, OomKill, UnitEvent

pytestmark = [needs_real_samples(), pytest.mark.corpus]

JOURNAL = REAL_SAMPLES / "journal"
KERNEL = REAL_SAMPLES / "kernel"
UNIT = "sglang-qwen.service"
BOOT_ID = "3f1c2b9a8e7d4c6b9a1f2e3d4c5b6a79"


def _t(us: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


# (realtime µs, action, result, code, status, restart_count, cpu_s) from journal.json.txt
EXPECTED_EVENTS = [
    (1741942800120000, "starting", None, None, None, None, None),
    (1741942800160000, "started", None, None, None, None, None),
    (1741952525541000, "oom_killed", None, None, None, None, None),
    (1741952525841000, "main_exited", None, "killed", "9/KILL", None, None),
    (1741952525842000, "failed", "oom-kill", None, None, None, None),
    (1741952525843000, "consumed", None, None, None, None, 34872.004),  # 9h 41min 12.004s
    (1741952535541000, "restart_scheduled", None, None, None, 1, None),
    (1741952535543000, "stopped", None, None, None, None, None),
    (1741952535546000, "starting", None, None, None, None, None),
    (1741952535576000, "started", None, None, None, None, None),
]
KILL_US = 1741952525332360  # "Memory cgroup out of memory: Killed process 2383 …"
BOOT_TS = _t(1741942800120000 - 10800120000)  # realtime − monotonic of every entry

# mode → (parser, precision of the printed stamp: "us", "s" or None)
MODES: dict[str, tuple[str, str | None]] = {
    "short": ("journal-short", "s"),
    "short-precise": ("journal-short", "us"),
    "short-iso": ("journal-short", "s"),
    "short-iso-precise": ("journal-short", "us"),
    "short-full": ("journal-short", "s"),
    "with-unit": ("journal-short", "s"),
    "short-unix": ("journal-short", "us"),
    "short-monotonic": ("journal-short", "us"),  # anchored with the journal's boot time
    "json": ("journal-json", "us"),
    "json-seq": ("journal-json", "us"),
    "export": ("journal-export", "us"),
    "verbose": ("journal-verbose", "us"),
    "cat": ("journal-cat", None),
}
ZONES = {"": "UTC", ".America_Los_Angeles": "America/Los_Angeles"}
CASES = [(mode, suffix) for mode in MODES for suffix in ZONES]


def _kernel_stream_ready() -> bool:
    return hasattr(importlib.import_module("postmortem.parsers.kernel"), "KernelStream")


def _expected_ts(us: int, precision: str | None) -> datetime | None:
    if precision is None:
        return None
    t = _t(us)
    return t.replace(microsecond=0) if precision == "s" else t


def _parse(mode: str, suffix: str) -> tuple[list[Any], Path]:
    parser, _ = MODES[mode]
    path = JOURNAL / f"journal.{mode}{suffix}.txt"
    data = path.read_bytes()
    ctx: dict[str, Any] = {"tz": ZONES[suffix], "year": 2025}
    if mode == "short-monotonic":
        ctx["boot_time"] = BOOT_TS
    outputs, context = parse_text(parser, data, **ctx)
    check_accounting(context, outputs, count_lines(data))
    return outputs, path


@pytest.mark.parametrize(("mode", "suffix"), CASES, ids=[f"{m}{s}" for m, s in CASES])
def test_every_rendering_gives_the_json_unit_events(mode: str, suffix: str) -> None:
    outputs, _ = _parse(mode, suffix)
    precision = MODES[mode][1]
    got = [
        (e.ts, e.unit, e.action, e.result, e.code, e.status, e.restart_count, e.cpu_s)
        for e in outputs
        if isinstance(e, UnitEvent)
    ]
    want = [
        (_expected_ts(us, precision), UNIT, action, result, code, status, n, cpu)
        for us, action, result, code, status, n, cpu in EXPECTED_EVENTS
    ]
    assert got == want


@pytest.mark.parametrize(("mode", "suffix"), CASES, ids=[f"{m}{s}" for m, s in CASES])
def test_every_rendering_gives_the_one_oom_kill(mode: str, suffix: str) -> None:
    if not _kernel_stream_ready():
        pytest.skip("kernel KernelStream not available yet")
    outputs, _ = _parse(mode, suffix)
    kills = [o for o in outputs if isinstance(o, OomKill)]
    assert len(kills) == 1
    k = kills[0]
    assert (k.killer, k.victim_pid, k.victim_comm, k.anon_rss_kb, k.unit) == (
        "kernel",
        2383,
        "sglang::schedul",
        523008,
        UNIT,
    )
    assert k.ts == _expected_ts(KILL_US, MODES[mode][1])


@pytest.mark.parametrize(("mode", "suffix"), CASES, ids=[f"{m}{s}" for m, s in CASES])
def test_invalid_utf8_message_survives(mode: str, suffix: str) -> None:
    outputs, _ = _parse(mode, suffix)
    messages = [
        m
        for o in outputs
        if getattr(o, "table", None) == "journal_entries"
        for m in o.data.column("message").to_pylist()
    ]
    assert "[binary] tokenizer emitted \ufffd\ufffd invalid bytes" in messages
    assert (
        sum(len(o.data) for o in outputs if getattr(o, "table", None) == "journal_entries") == 148
    )  # one row per entry


@pytest.mark.parametrize("mode", ["json", "json-seq", "export", "verbose"])
def test_boot_row_from_realtime_and_monotonic(mode: str) -> None:
    outputs, _ = _parse(mode, "")
    boots = [o for o in outputs if isinstance(o, Boot)]
    assert [(b.boot_id, b.host, b.boot_ts, b.method) for b in boots] == [
        (BOOT_ID, "gpu-node-7", datetime(2025, 3, 14, 6, 0, tzinfo=UTC), "journal")
    ]


@pytest.mark.parametrize(("mode", "suffix"), CASES, ids=[f"{m}{s}" for m, s in CASES])
def test_detected_as_a_journal_format(mode: str, suffix: str) -> None:
    path = JOURNAL / f"journal.{mode}{suffix}.txt"
    parser, score = detect(read_head(InputFile.from_path(path)))
    assert parser is not None
    assert parser.name == MODES[mode][0], score


def test_sglang_output_is_routed_with_the_journal_unit_and_pid() -> None:
    outputs, _ = _parse("json", "")
    configs = [o for o in outputs if type(o).__name__ == "ServerConfig"]
    assert [(c.unit, c.pid, c.ts) for c in configs] == [
        (UNIT, 5150, _t(1741942802120000)),
        (UNIT, 6262, _t(1741952537546000)),
    ]


def test_text_mode_sglang_stream_is_left_for_build_to_link() -> None:
    """A text mode's process names no unit; the unit started just before its first line may be
    a oneshot's, which only later lines tell: ``build`` links it (``test_sglang.py``'s
    ``test_real_journal_sglang_lines`` checks the link)."""
    outputs, _ = _parse("short-iso", "")
    configs = [o for o in outputs if type(o).__name__ == "ServerConfig"]
    assert [(c.unit, c.pid) for c in configs] == [(None, 5150), (None, 6262)]


@pytest.mark.journalctl
def test_binary_system_journal_ingests_like_the_json(tmp_path: Path, cli: Any) -> None:
    import shutil

    from postmortem.store.db import Store

    if shutil.which("journalctl") is None:
        pytest.skip("journalctl not installed")
    db = tmp_path / "t.duckdb"
    result = cli("ingest", "--db", db, "--tz", "UTC", JOURNAL / "system.journal")
    assert result.code == 0, result
    store = Store.open_readonly(db)
    fmt, lines, parsed, ignored = store.fetchall(
        "SELECT format, lines, parsed_lines, ignored_lines FROM sources"
    )[0]
    events = store.fetchall(
        "SELECT ts, unit, action, result, restart_count FROM unit_events ORDER BY line_no"
    )
    entries = store.fetchall("SELECT count(*) FROM journal_entries")[0][0]
    boots = store.fetchall("SELECT boot_id, boot_ts FROM boots")
    kills = store.fetchall("SELECT victim_pid, anon_rss_kb, unit, ts FROM oom_kills WHERE killer = 'kernel'")
    store.close()
    assert fmt == "journal-export"
    assert lines == parsed + ignored
    assert ignored == 148
    assert entries == 148
    assert [(e[0], e[1], e[2], e[3], e[4]) for e in events] == [
        (_t(us), UNIT, action, result, n) for us, action, result, _c, _s, n, _cpu in EXPECTED_EVENTS
    ]
    assert boots == [(BOOT_ID, datetime(2025, 3, 14, 6, 0, tzinfo=UTC))]
    if _kernel_stream_ready():
        assert kills == [(2383, 523008, UNIT, _t(KILL_US))]


# ----------------------------------------------------------------------------- syslog files


def test_rhel6_syslog_file_reads_every_line_and_finds_the_kill() -> None:
    path = KERNEL / "01_rhel6_2.6.32_syslog_global_oom.log"
    data = path.read_bytes()
    outputs, ctx = parse_text("journal-short", data, tz="UTC", year=2017)
    check_accounting(ctx, outputs, count_lines(data))
    rows = [r for o in outputs if getattr(o, "table", None) == "journal_entries" for r in o.data.to_pylist()]
    assert len(rows) == 881
    assert ctx.parsed_lines == 881
    assert {r["host"] for r in rows} == {"new-db1"}
    last = rows[-1]
    assert (last["ident"], last["ts"], last["ts_inferred"]) == (
        "rsyslogd-2177",
        datetime(2017, 6, 20, 12, 47, 5, tzinfo=UTC),
        "year",
    )
    first = rows[0]
    assert first["message"].startswith("[15180285.537297] php-fpm invoked oom-killer:")
    if _kernel_stream_ready():
        kills = [o for o in outputs if isinstance(o, OomKill)]
        assert [(k.victim_pid, k.victim_comm, k.anon_rss_kb) for k in kills] == [(40738, "mysqld", 13128)]


def test_rhel8_rsyslog_012_file_unescapes_and_finds_the_service_kill() -> None:
    path = KERNEL / "02_rhel8_4.18_rsyslog_012_global_oom_service.log"
    data = path.read_bytes()
    outputs, ctx = parse_text("journal-short", data, tz="UTC", year=2024)
    check_accounting(ctx, outputs, count_lines(data))
    rows = [r for o in outputs if getattr(o, "table", None) == "journal_entries" for r in o.data.to_pylist()]
    assert len(rows) == count_lines(data)
    meminfo = next(r for r in rows if r["message"].startswith("active_anon:33632"))
    assert "#012" not in meminfo["message"]
    assert meminfo["message"].split("\n")[1] == " active_file:43 inactive_file:127 isolated_file:40"
    assert rows[0]["ts"] == datetime(2024, 9, 29, 8, 12, 34, tzinfo=UTC)
    if _kernel_stream_ready():
        kills = [o for o in outputs if isinstance(o, OomKill)]
        assert [(k.victim_pid, k.victim_comm, k.anon_rss_kb, k.unit) for k in kills] == [
            (3117813, "cache-main", 4805020, "varnish.service")
        ]


@pytest.mark.parametrize(
    "name", ["01_rhel6_2.6.32_syslog_global_oom.log", "02_rhel8_4.18_rsyslog_012_global_oom_service.log"]
)
def test_syslog_files_are_detected_as_journal_short(name: str) -> None:
    parser, _ = detect(read_head(InputFile.from_path(KERNEL / name)))
    assert parser is not None
    assert parser.name == "journal-short"
