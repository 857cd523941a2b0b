"""The loader's insert thread owns the connection while it inserts: the parsing thread must not
query the store meanwhile (DuckDB refuses a second call on a busy connection)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from postmortem.parsers.base import TableBatch
from postmortem.records import Boot, UnitEvent
from postmortem.store import loader
from postmortem.store.db import Store


def test_a_new_record_type_during_a_background_insert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record type seen for the first time while the insert thread is busy (seen on a 10M-line
    journal: a unit event far into the file) must not need the connection."""
    monkeypatch.setattr(loader, "INSERT_ROWS", 1000)
    monkeypatch.setattr(loader, "ROW_GROUP", 1000)
    store = _loading_store(tmp_path / "s.duckdb")
    inserting = threading.Event()
    real_insert = loader.SourceWriter._do_insert

    def slow_insert(self: loader.SourceWriter, table: str, data: pa.Table) -> None:
        inserting.set()
        # a long statement on the connection: the connection is busy until it ends
        self.store.con.execute("SELECT count(*) FROM range(200000000) r(i) WHERE i % 7 = 3").fetchall()
        real_insert(self, table, data)

    monkeypatch.setattr(loader.SourceWriter, "_do_insert", slow_insert)
    store.con.execute("BEGIN TRANSACTION")
    writer = loader.SourceWriter(store, 1, checkpoint=True, background=True)
    rows = pa.table(
        {
            "line_no": pa.array(range(1, 2001), pa.int64()),
            "message": pa.array(["m"] * 2000, pa.string()),
        }
    )
    writer.add(TableBatch("journal_entries", rows))  # 2000 rows ≥ INSERT_ROWS: queued
    assert inserting.wait(10)
    ts = datetime(2025, 5, 25, 20, 17, 19, tzinfo=UTC)
    # record types the writer has not seen yet, while the insert runs
    writer.add(Boot(1, "b" * 32, "h", ts, "journal"))
    writer.add(
        UnitEvent(
            3,
            ts,
            "raw",
            None,
            "h",
            "a.service",
            "failed",
            None,
            None,
            "oom-kill",
            None,
            None,
            None,
            None,
            "m",
            None,
        )
    )
    writer.flush()
    writer.close()
    store.con.execute("COMMIT")
    assert store.count("journal_entries") == 2000
    assert store.count("boots") == 1 and store.count("unit_events") == 1
    store.close()


def _event(ts: datetime) -> UnitEvent:
    return UnitEvent(
        3, ts, "raw", None, "h", "a.service", "failed", None, None, None, None, None, None, None, "m", None
    )


def _batch(*stamps: datetime | None) -> TableBatch:
    return TableBatch(
        "journal_entries",
        pa.table(
            {
                "line_no": pa.array(range(len(stamps)), pa.int64()),
                "ts": pa.array(stamps, pa.timestamp("us", tz="UTC")),
            }
        ),
    )


def test_time_span_over_records_and_batches(tmp_path: Path) -> None:
    """first_ts/last_ts cover records and table batches in any order (batches are compared as
    epoch microseconds, records as datetimes)."""
    store = Store.open(tmp_path / "s.duckdb")
    writer = loader.SourceWriter(store, 1)
    t = [datetime(2025, 5, 25, 20, 0, s, 250_000 * (s % 4), tzinfo=UTC) for s in range(10)]
    writer.add(_batch(None, None))  # only nulls: no span yet
    assert writer.first_ts is None and writer.last_ts is None
    writer.add(_event(t[5]))
    writer.add(_batch(t[6], None, t[4]))  # a batch after a record: compared with the record's
    assert (writer.first_ts, writer.last_ts) == (t[4], t[6])
    writer.add(_batch(t[5]))  # inside the span: unchanged
    writer.add(_event(t[2]))
    writer.add(_batch(t[3], t[7]))  # after a record moved first_ts back
    assert (writer.first_ts, writer.last_ts) == (t[2], t[7])
    writer.add(_event(t[9]))
    writer.add(_batch(t[8], t[1]))
    assert (writer.first_ts, writer.last_ts) == (t[1], t[9])
    store.close()


def _loading_store(path: Path) -> Store:
    store = Store.open(path)
    store.execute(
        "INSERT INTO sources (source_id, path, format, sha256, bytes, lines, records, "
        "parse_issues, parsed_lines, ignored_lines, status, ingested_at) "
        "VALUES (1, 'x', 'journal-short', '', 0, 0, 0, 0, 0, 0, 'loading', now())"
    )
    return store


def _wide(start: int, n: int, width: int) -> TableBatch:
    return TableBatch(
        "journal_entries",
        pa.table(
            {
                "line_no": pa.array(range(start, start + n), pa.int64()),
                "message": pa.array(["x" * width] * n, pa.string()),
            }
        ),
    )


def test_wide_rows_are_inserted_before_a_row_group_fills(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows of long messages reach the byte budget long before a row group's count: they are
    inserted (a partial row group) instead of waiting — a file of 1 MB lines once held all of
    them in memory — and committed in steps by bytes as well as by rows."""
    monkeypatch.setattr(loader, "PENDING_BYTES", 1 << 20)
    monkeypatch.setattr(loader, "COMMIT_BYTES", 4 << 20)
    store = _loading_store(tmp_path / "s.duckdb")
    inserted: list[int] = []
    commits: list[int] = []
    real_insert = loader.SourceWriter._do_insert

    def spy(self: loader.SourceWriter, table: str, data: pa.Table) -> None:
        real_insert(self, table, data)
        inserted.append(data.num_rows)

    class Connection:  # counts the loader's intermediate commits
        def __init__(self, con: Any) -> None:
            self._con = con

        def execute(self, sql: str, *args: Any) -> Any:
            if sql == "COMMIT":
                commits.append(len(inserted))
            return self._con.execute(sql, *args)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._con, name)

    monkeypatch.setattr(loader.SourceWriter, "_do_insert", spy)
    store.con.execute("BEGIN TRANSACTION")
    store.con = Connection(store.con)  # type: ignore[assignment]
    writer = loader.SourceWriter(store, 1, checkpoint=True)
    peak = 0
    for i in range(40):  # 40 batches of 10 rows of 64 KiB: 25 MiB in all
        writer.add(_wide(i * 10, 10, 64 << 10))
        peak = max(peak, sum(writer._pending_bytes.values()))
    assert peak < 3 << 20  # bounded by the budget (2 MiB for one table) plus one batch
    assert len(inserted) >= 8  # inserted along the way …
    assert len(commits) >= 4  # … and committed: 25 MiB in steps of 4
    writer.flush()
    store.con.execute("COMMIT")
    assert store.count("journal_entries") == 400 and sum(inserted) == 400
    store.close()


def test_narrow_rows_still_wait_for_a_whole_row_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ordinary rows over the byte budget still wait for a whole row group (partial row groups
    cost DuckDB two to three times as much a row)."""
    monkeypatch.setattr(loader, "PENDING_BYTES", 1 << 20)
    monkeypatch.setattr(loader, "ROW_GROUP", 100_000)
    monkeypatch.setattr(loader, "INSERT_ROWS", 100_000)
    store = _loading_store(tmp_path / "s.duckdb")
    writer = loader.SourceWriter(store, 1)
    for i in range(9):  # 90,000 rows of 20 bytes (1.7 MiB): over 1 MiB, under 2, not a row group
        writer.add(_wide(i * 10_000, 10_000, 8))
    assert store.count("journal_entries") == 0
    writer.add(_wide(90_000, 10_000, 8))
    assert store.count("journal_entries") == 100_000
    store.close()


def test_a_load_lowers_duckdbs_memory_limit_and_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends run under a smaller DuckDB memory limit (64 MB) than queries (128 MB), unless
    POSTMORTEM_MEMORY_LIMIT sets one for both."""
    monkeypatch.delenv("POSTMORTEM_MEMORY_LIMIT", raising=False)
    store = _loading_store(tmp_path / "s.duckdb")

    def limit() -> str:
        return str(store.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])

    assert limit() == "122.0 MiB"  # 128 MB
    writer = loader.SourceWriter(store, 1, checkpoint=False, background=True)
    assert limit() == "61.0 MiB"  # 64 MB
    writer.flush()
    writer.close()
    assert limit() == "122.0 MiB"
    store.close()
    monkeypatch.setenv("POSTMORTEM_MEMORY_LIMIT", "200MB")
    store = Store.open(tmp_path / "s.duckdb")
    for _ in range(3):  # restored exactly, file after file (the shown value is rounded)
        writer = loader.SourceWriter(store, 1, checkpoint=False, background=True)
        assert limit() == "190.7 MiB"
        writer.close()
        assert limit() == "190.7 MiB"
    monkeypatch.delenv("POSTMORTEM_MEMORY_LIMIT")
    store.con.execute("SET memory_limit = '300MB'")  # a library caller's own limit
    writer = loader.SourceWriter(store, 1, checkpoint=False, background=True)
    assert limit() == "61.0 MiB"
    writer.close()
    assert limit().startswith("286.")  # the caller's, to the 0.1 MiB DuckDB shows
    store.close()


def _wide_journal(path: Path, lines: int, width: int) -> Path:
    import random

    rnd = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    with path.open("w") as fh:
        for i in range(lines):
            text = "".join(rnd.choices(alphabet, k=width))
            fh.write(f"2025-05-25T20:{i // 60 % 60:02d}:{i % 60:02d}+0000 gpu-a app[7]: {text}\n")
    return path


def test_a_load_of_wide_rows_commits_under_the_usual_memory_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends run under a lower memory limit, commits under the usual one: a mid-load commit of
    32 KB rows under the appends' limit failed to pin its blocks (and the failed commit then
    broke the error path). Scaled down: 16 MB for the appends, a commit every 4 MB."""
    from postmortem.ingest import IngestOptions, ingest_paths
    from postmortem.timeutil import get_zone

    monkeypatch.delenv("POSTMORTEM_MEMORY_LIMIT", raising=False)
    monkeypatch.setattr(loader, "LOAD_MEMORY_LIMIT", "16MB")
    monkeypatch.setattr(loader, "COMMIT_BYTES", 4 << 20)
    monkeypatch.setattr(loader, "PENDING_BYTES", 1 << 20)
    log = _wide_journal(tmp_path / "wide.log", 1500, 32 << 10)
    store = Store.open(tmp_path / "s.duckdb")
    summary = ingest_paths(store, [str(log)], IngestOptions(zone=get_zone("UTC")))
    assert [(r.status, r.records, r.error) for r in summary.files] == [("ingested", 1500, None)]
    assert store.count("journal_entries") == 1500
    assert store.fetchall("SELECT current_setting('memory_limit')") == [("122.0 MiB",)]
    store.close()


def test_a_duckdb_error_in_a_load_leaves_the_connection_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DuckDB error aborts the load's transaction, where DuckDB refuses every statement: the
    load is rolled back first, then its settings are put back and its rows discarded; the file
    is reported as an error and the next one is ingested."""
    from postmortem.ingest import IngestOptions, ingest_paths
    from postmortem.timeutil import get_zone

    monkeypatch.delenv("POSTMORTEM_MEMORY_LIMIT", raising=False)
    real = loader.SourceWriter._do_insert
    calls = [0]

    def failing(self: loader.SourceWriter, table: str, data: pa.Table) -> None:
        calls[0] += 1
        if calls[0] == 1:
            self.store.con.execute("SELECT error('Out of Memory Error: simulated')")
        real(self, table, data)

    monkeypatch.setattr(loader.SourceWriter, "_do_insert", failing)
    a = _wide_journal(tmp_path / "a.log", 20, 10)
    b = tmp_path / "b.log"
    b.write_text("2025-05-25T20:00:00+0000 gpu-a app[7]: the other file\n")
    store = Store.open(tmp_path / "s.duckdb")
    summary = ingest_paths(store, [str(a), str(b)], IngestOptions(zone=get_zone("UTC")))
    statuses = {Path(r.path).name: (r.status, r.error or "") for r in summary.files}
    assert statuses["a.log"][0] == "error" and "simulated" in statuses["a.log"][1]
    assert statuses["b.log"] == ("ingested", "")
    assert store.fetchall("SELECT current_setting('memory_limit')") == [("122.0 MiB",)]
    assert store.fetchall("SELECT current_setting('preserve_insertion_order')") == [(True,)]
    assert store.fetchall("SELECT count(*) FROM journal_entries") == [(1,)]
    assert store.fetchall("SELECT count(*) FROM sources") == [(1,)]
    store.close()


def test_a_number_too_large_for_its_column_is_kept_empty_and_said(tmp_path: Path) -> None:
    """A 20-digit pid in a kernel line (a forged or damaged log) overflowed the BIGINT column
    at load and the whole file failed; now that field is empty and a parse issue names it."""
    from postmortem.ingest import IngestOptions, ingest_into
    from postmortem.store.db import Store
    from postmortem.timeutil import get_zone

    log = tmp_path / "kern.log"
    log.write_text(
        "Jan 15 10:00:00 h kernel: Out of memory: Killed process 99999999999999999999 (x) "
        "total-vm:99999999999999999999999kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, UID:0 "
        "pgtables:0kB oom_score_adj:0\n"
    )
    opts = IngestOptions(zone=get_zone("UTC"), zone_given=True, year=2026)
    summary = ingest_into(str(tmp_path / "pm.duckdb"), [str(log)], opts)
    assert [r.status for r in summary.files] == ["ingested"], summary.files
    store = Store.open_readonly(tmp_path / "pm.duckdb")
    kills = store.fetchall("SELECT victim_pid, victim_comm, total_vm_kb, anon_rss_kb FROM oom_kills")
    issues = store.fetchall("SELECT reason FROM parse_issues ORDER BY reason")
    store.close()
    assert kills == [(None, "x", None, 1)]
    assert issues == [
        ("total_vm_kb too large for its column: kept empty",),
        ("victim_pid too large for its column: kept empty",),
    ]
