"""postmortem/queries/anchor_monotonic.sql: boot-relative kernel rows get ts from boots later."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from postmortem.query import named_sql
from postmortem.store.db import Store

B1 = datetime(2026, 12, 1, 0, 0, 0, tzinfo=UTC)
B2 = datetime(2026, 12, 2, 13, 27, 47, tzinfo=UTC)
B3 = datetime(2026, 12, 5, 0, 0, 0, tzinfo=UTC)
MTIME = datetime(2026, 12, 2, 14, 0, 0, tzinfo=UTC)


def _source(store: Store, source_id: int, mtime: datetime | None) -> None:
    store.execute(
        "INSERT INTO sources (source_id, path, format, sha256, bytes, lines, records, parse_issues, "
        "parsed_lines, ignored_lines, file_mtime, ingested_at) VALUES (?, ?, 'dmesg', '', 0, 0, 0, 0, 0, 0, ?, ?)",
        [source_id, f"/logs/{source_id}", mtime, MTIME],
    )


def _kernel(store: Store, source_id: int, line_no: int, mono: float, host: str | None, **kw: Any) -> None:
    store.execute(
        "INSERT INTO kernel_messages (source_id, line_no, ts, ts_inferred, monotonic_s, host, boot_id, message) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, 'm')",
        [source_id, line_no, kw.get("ts"), kw.get("ts_inferred"), mono, host, kw.get("boot_id")],
    )


def _run(store: Store) -> None:
    store.con.execute(named_sql("anchor_monotonic"))


@pytest.fixture
def store() -> Any:
    s = Store.memory()
    for i, (boot_id, host, ts) in enumerate([("b1", "h", B1), ("b2", "h", B2), ("b3", "h", B3)]):
        s.execute(
            "INSERT INTO boots (source_id, line_no, boot_id, host, boot_ts, method) VALUES (99, ?, ?, ?, ?, 'journal')",
            [i, boot_id, host, ts],
        )
    yield s
    s.close()


def _ts(store: Store, table: str, source_id: int) -> list[tuple[Any, ...]]:
    return store.fetchall(
        f"SELECT line_no, ts, ts_inferred FROM {table} WHERE source_id = ? ORDER BY line_no",
        [source_id],
    )


def test_boot_before_the_capture_is_chosen_for_every_table(store: Store) -> None:
    _source(store, 1, MTIME)
    _kernel(store, 1, 1, 152.104016, "h")
    _kernel(store, 1, 2, 1500.0, "h")
    store.execute(
        "INSERT INTO oom_kills (source_id, line_no, oom_id, monotonic_s, host, killer, message) "
        "VALUES (1, 81, 4294967297, 152.104816, 'h', 'kernel', 'k')"
    )
    store.execute(
        "INSERT INTO gpu_xids (source_id, line_no, monotonic_s, host, xid, message) VALUES (1, 90, 200.5, 'h', 79, 'x')"
    )
    _run(store)
    # b3 started after the file was written; b2 is the latest boot before mtime - 1500 s
    assert _ts(store, "kernel_messages", 1) == [
        (1, datetime(2026, 12, 2, 13, 30, 19, 104016, tzinfo=UTC), "boot"),
        (2, datetime(2026, 12, 2, 13, 52, 47, tzinfo=UTC), "boot"),
    ]
    assert _ts(store, "oom_kills", 1) == [(81, datetime(2026, 12, 2, 13, 30, 19, 104816, tzinfo=UTC), "boot")]
    assert _ts(store, "gpu_xids", 1) == [(90, datetime(2026, 12, 2, 13, 31, 7, 500000, tzinfo=UTC), "boot")]


def test_largest_stamp_of_the_file_decides_for_all_its_rows(store: Store) -> None:
    _source(store, 1, MTIME)
    _kernel(store, 1, 1, 10.0, "h")
    _kernel(store, 1, 2, 3600.0, "h")  # 13:27:47 + 1 h is after mtime: b2 cannot hold this record
    _run(store)
    assert [r[1] for r in _ts(store, "kernel_messages", 1)] == [
        datetime(2026, 12, 1, 0, 0, 10, tzinfo=UTC),
        datetime(2026, 12, 1, 1, 0, 0, tzinfo=UTC),
    ]


def test_no_mtime_takes_the_latest_boot(store: Store) -> None:
    _source(store, 2, None)
    _kernel(store, 2, 1, 1.0, "h")
    _run(store)
    assert _ts(store, "kernel_messages", 2) == [(1, datetime(2026, 12, 5, 0, 0, 1, tzinfo=UTC), "boot")]


def test_rows_without_host_use_the_only_host_known(store: Store) -> None:
    _source(store, 3, MTIME)
    _kernel(store, 3, 1, 1.0, None)
    _run(store)
    assert _ts(store, "kernel_messages", 3) == [(1, datetime(2026, 12, 2, 13, 27, 48, tzinfo=UTC), "boot")]


def test_rows_without_host_stay_null_when_hosts_are_ambiguous(store: Store) -> None:
    store.execute(
        "INSERT INTO boots (source_id, line_no, boot_id, host, boot_ts, method) VALUES (99, 9, 'g1', 'g', ?, 'journal')",
        [B1],
    )
    _source(store, 3, MTIME)
    _kernel(store, 3, 1, 1.0, None)
    _kernel(store, 3, 2, 1.0, "other-host")
    _run(store)
    assert _ts(store, "kernel_messages", 3) == [(1, None, None), (2, None, None)]


def test_boot_id_rows_take_their_own_boot_and_printed_times_stay(store: Store) -> None:
    _source(store, 4, MTIME)
    printed = datetime(2020, 1, 1, tzinfo=UTC)
    _kernel(store, 4, 1, 5.0, "h", boot_id="b1")
    _kernel(store, 4, 2, 5.0, "h", boot_id="b9")  # unknown boot: no borrowing
    _kernel(store, 4, 3, 5.0, "h", ts=printed, ts_inferred="zone")
    _run(store)
    assert _ts(store, "kernel_messages", 4) == [
        (1, datetime(2026, 12, 1, 0, 0, 5, tzinfo=UTC), "boot"),
        (2, None, None),
        (3, printed, "zone"),
    ]


def test_idempotent_and_harmless_without_boots() -> None:
    s = Store.memory()
    _source(s, 1, MTIME)
    _kernel(s, 1, 1, 1.0, "h")
    _run(s)
    _run(s)
    assert _ts(s, "kernel_messages", 1) == [(1, None, None)]
    assert "anchor_boot_times" not in s.table_names()
    s.close()


def test_a_source_without_a_boot_is_anchored_by_the_same_kill_lines_in_a_dated_source() -> None:
    """dmesg (seconds since boot) beside a short-iso journal (wall time, no boot rows): the
    journal's copy of the OOM lines dates the whole dmesg file; a line without a pid does not."""
    from datetime import timedelta

    s = Store.memory()
    _source(s, 1, MTIME)  # the dmesg file
    _source(s, 2, MTIME)  # the journal
    kill = "Memory cgroup out of memory: Killed process 4242 (python3) total-vm:1kB"
    for line_no, mono, msg in ((1, 100.0, "usb 1-1: new device"), (2, 5000.25, kill)):
        s.execute(
            "INSERT INTO kernel_messages (source_id, line_no, monotonic_s, host, message) VALUES (1, ?, ?, NULL, ?)",
            [line_no, mono, msg],
        )
    at = datetime(2026, 12, 2, 13, 30, 0, tzinfo=UTC)
    s.execute(
        "INSERT INTO kernel_messages (source_id, line_no, ts, host, message) VALUES (2, 7, ?, 'h', ?), (2, 8, ?, 'h', ?)",
        [at, kill, at - timedelta(hours=5), "usb 1-1: new device"],
    )
    _run(s)
    # the journal's stamp is truncated to the second: the line came within it, half a second on
    # on average
    boot = at + timedelta(seconds=0.5) - timedelta(seconds=5000.25)
    assert _ts(s, "kernel_messages", 1) == [
        (1, boot + timedelta(seconds=100), "boot"),
        (2, at + timedelta(seconds=0.5), "boot"),
    ]
    s.close()
