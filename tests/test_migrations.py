"""Schema migrations: a store written by an older postmortem opens, migrates and keeps its rows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import REPO

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


EARLY = Path(__file__).parent / "data" / "store" / "early"


def _schema(store: Store) -> dict[str, dict[str, tuple[str, str, str | None]]]:
    """Every table's columns: name → (type, nullable, default); the order is not compared (a
    column added by a later migration comes last)."""
    rows = store.fetchall(
        "SELECT table_name, column_name, data_type, is_nullable, column_default "
        "FROM information_schema.columns WHERE table_schema = 'main' ORDER BY table_name, column_name"
    )
    out: dict[str, dict[str, tuple[str, str, str | None]]] = {}
    for table, column, kind, nullable, default in rows:
        out.setdefault(table, {})[column] = (kind, nullable, default)
    return out


@pytest.mark.parametrize("initial", sorted(EARLY.glob("001_initial.*.sql")), ids=lambda p: p.name)
def test_a_store_of_an_early_revision_gets_every_column(cli: Any, tmp_path: Path, initial: Path) -> None:
    """Early revisions added columns by editing 001_initial.sql in place: a store created before
    such an edit says version 1 without them. It was migrated to version 4 still without
    sources.shift_s, and 'build' failed with an internal error (exit 70)."""
    db = tmp_path / "early.duckdb"
    con = duckdb.connect(str(db))
    con.execute(initial.read_text(encoding="utf-8"))
    con.execute(
        f"CREATE TABLE {SCHEMA_VERSION_TABLE} (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMPTZ)"
    )
    con.execute(f"INSERT INTO {SCHEMA_VERSION_TABLE} VALUES (1, 'initial', ?)", [datetime.now(UTC)])
    con.execute(
        "INSERT INTO sources (source_id, path, format, sha256, bytes, lines, records, parse_issues, "
        "parsed_lines, ignored_lines, ingested_at) VALUES (nextval('source_id_seq'), '/var/log/old.log', 'dmesg', 'x', 0, 0, 0, "
        "0, 0, 0, now())"
    )
    con.close()
    with Store.open(db) as store, Store.memory() as fresh:
        assert _schema(store) == _schema(fresh)
        # the early source counts as a complete load (the column's default)
        assert store.fetchall("SELECT status FROM sources") == [("complete",)]
        assert store.interrupted() == []
    r = cli("build", "--logs", REPO / "sample_logs", "--db", db, "--out", tmp_path / "r", "--tz", "UTC")
    assert r.code == 0, r
    assert "1 incident(s)" in r.out


def _version_6_store(path: Path) -> None:
    """A store as schema version 6 left it: SGLang's rows in sglang_events and sglang_batches."""
    con = duckdb.connect(str(path))
    con.execute(
        f"CREATE TABLE {SCHEMA_VERSION_TABLE} (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMPTZ)"
    )
    for version, name, sql in _migrations():
        if version > 6:
            break
        con.execute(sql)
        con.execute(
            f"INSERT INTO {SCHEMA_VERSION_TABLE} VALUES (?, ?, ?)", [version, name, datetime.now(UTC)]
        )
    con.execute(
        "INSERT INTO sglang_batches (source_id, line_no, ts, unit, phase, running_req, queue_req, token_usage) "
        "SELECT 1, i, TIMESTAMPTZ '2025-05-25 20:00:00+00' + to_seconds(i), 'sglang-a.service', 'decode', "
        "i, 0, 0.5 FROM range(1, 101) r(i)"
    )
    con.execute(
        "INSERT INTO sglang_events (source_id, line_no, ts, unit, kind, message) VALUES "
        "(1, 200, TIMESTAMPTZ '2025-05-25 20:05:00+00', 'sglang-a.service', 'ready', 'fired up')"
    )
    con.execute(
        "INSERT INTO server_configs (source_id, line_no, unit, model_path, raw) VALUES "
        "(1, 1, 'sglang-a.service', '/m', 'ServerArgs(model_path=''/m'')')"
    )
    con.close()


def test_a_version_6_store_gets_the_engine_neutral_tables_and_keeps_the_old_names(tmp_path: Path) -> None:
    db = tmp_path / "v6.duckdb"
    _version_6_store(db)
    with Store.open(db) as store:
        assert store.version() == latest_version()
        assert {"server_events", "server_stats"} <= set(store.table_names())
        assert not {"sglang_events", "sglang_batches"} & set(store.table_names())  # views now
        stats = store.fetchall("SELECT engine, count(*), sum(running_req) FROM server_stats GROUP BY engine")
        assert stats == [("sglang", 100, 5050)]
        assert store.fetchall("SELECT engine, kind FROM server_events") == [("sglang", "ready")]
        assert store.fetchall("SELECT engine, model_path FROM server_configs") == [("sglang", "/m")]
        # the old names answer as before, with their old columns
        assert store.fetchall("SELECT count(*), max(running_req) FROM sglang_batches") == [(100, 100)]
        old_cols = [c for c, _ in store.columns("sglang_batches")]
        assert "engine" not in old_cols and "swapped_req" not in old_cols and "pending_token" in old_cols
        assert store.fetchall("SELECT kind FROM sglang_events") == [("ready",)]
        # a row of another engine is not SGLang's
        store.execute(
            "INSERT INTO server_events (source_id, line_no, kind, message, engine) "
            "VALUES (2, 1, 'ready', 'up', 'other')"
        )
        assert store.fetchall("SELECT count(*) FROM sglang_events") == [(1,)]
        # every server row names its engine
        with pytest.raises(duckdb.ConstraintException):
            store.execute("INSERT INTO server_stats (source_id, line_no, phase) VALUES (3, 1, 'decode')")


def test_the_tables_read_from_the_migrations_are_the_tables_they_make() -> None:
    """``expected_tables`` (what a store must hold at the latest version) reads the migrations'
    SQL; applied to an empty database they make exactly those tables."""
    import duckdb

    from postmortem.store.db import _migrations, expected_tables

    con = duckdb.connect()
    for _, _, sql in _migrations():
        con.execute(sql)
    made = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "AND table_type = 'BASE TABLE'"
        ).fetchall()
    }
    assert made == set(expected_tables())
