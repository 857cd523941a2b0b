"""The loader's insert thread owns the connection while it inserts: the parsing thread must not
query the store meanwhile (DuckDB refuses a second call on a busy connection)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

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
    store = Store.open(tmp_path / "s.duckdb")
    store.execute(
        "INSERT INTO sources (source_id, path, format, sha256, bytes, lines, records, "
        "parse_issues, parsed_lines, ignored_lines, status, ingested_at) "
        "VALUES (1, 'x', 'journal-short', '', 0, 0, 0, 0, 0, 0, 'loading', now())"
    )
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
