"""Schema migrations: a store written by an older postmortem opens, migrates and keeps its rows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb

from postmortem.store.db import SCHEMA_VERSION_TABLE, Store, _migrations, latest_version


def _version_1_store(path: Path) -> None:
    """A store as postmortem 0.1 (schema version 1) left it, with journal and kernel rows."""
    version, name, sql = _migrations()[0]
    assert version == 1
    con = duckdb.connect(str(path))
    con.execute(sql)
    con.execute(
        f"CREATE TABLE {SCHEMA_VERSION_TABLE} (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMPTZ)"
    )
    con.execute(f"INSERT INTO {SCHEMA_VERSION_TABLE} VALUES (1, ?, ?)", [name, datetime.now(UTC)])
    con.execute(
        "INSERT INTO journal_entries (source_id, line_no, ts, ts_raw, host, ident, pid, message) "
        "SELECT 1, i, TIMESTAMPTZ '2025-05-25 20:00:00+00' + to_seconds(i), 'raw ' || i, 'h', 'python3', 4242, "
        "'[2025-05-25 20:00:00 TP0] Decode batch, #running-req: ' || i FROM range(1, 5001) r(i)"
    )
    con.execute(
        "INSERT INTO kernel_messages (source_id, line_no, ts, host, message) "
        "SELECT 2, i, TIMESTAMPTZ '2025-05-25 20:00:00+00', 'h', 'mlx5_core 0000:1a:00.0: health ' || i "
        "FROM range(1, 3001) r(i)"
    )
    con.close()


def _compression(store: Store, table: str, column: str) -> set[str]:
    store.execute("CHECKPOINT")
    rows = store.fetchall(
        "SELECT DISTINCT compression FROM pragma_storage_info(?) WHERE column_name = ? "
        "AND segment_type = 'VARCHAR'",
        [table, column],
    )
    return {r[0] for r in rows}


def test_a_version_1_store_migrates_and_keeps_its_rows(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    _version_1_store(db)
    con = duckdb.connect(str(db), read_only=True)
    before = {
        t: con.execute(f"SELECT * FROM {t} ORDER BY source_id, line_no").fetchall()
        for t in ("journal_entries", "kernel_messages")
    }
    columns = {
        t: con.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position",
            [t],
        ).fetchall()
        for t in before
    }
    con.close()
    with Store.open(db) as store:
        assert store.version() == latest_version() >= 2
        for table, rows in before.items():
            assert store.fetchall(f"SELECT * FROM {table} ORDER BY source_id, line_no") == rows
            assert store.columns(table) == columns[table]
        # the message text is stored with ZSTD from now on (migration 002)
        assert _compression(store, "journal_entries", "message") == {"ZSTD"}
        assert _compression(store, "kernel_messages", "message") == {"ZSTD"}


def test_a_new_store_stores_messages_with_zstd(tmp_path: Path) -> None:
    with Store.open(tmp_path / "new.duckdb") as store:
        store.execute(
            "INSERT INTO journal_entries (source_id, line_no, message) "
            "SELECT 1, i, 'message ' || i || repeat('x', i % 50) FROM range(1, 200001) r(i)"
        )
        assert _compression(store, "journal_entries", "message") == {"ZSTD"}
