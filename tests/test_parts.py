"""Parquet parts: a large file's bulk rows written beside the store, read through views of the
tables' own names, replaced, appended to and exported like native rows."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from postmortem.store.db import Store
from postmortem.store.parts import PART_TABLES, materialize


def _sglang_log(path: Path, lines: int, *, start: int = 1, mode: str = "w", tp: str = "TP0") -> None:
    with path.open(mode) as fh:
        if start == 1:
            fh.write("[2025-05-25 00:00:00] server_args=ServerArgs(model_path='/m', tp_size=8, port=30000)\n")
            start = 2
        for n in range(start, start + lines):
            fh.write(
                f"[2025-05-25 01:{n // 60 % 60:02d}:{n % 60:02d} {tp}] Decode batch, #running-req: {n % 200}, "
                f"#token: {n}, token usage: 0.5, cuda graph: True, gen throughput (token/s): 100.00, "
                "#queue-req: 0\n"
            )
            if n % 10 == 0:
                fh.write('[2025-05-25 01:00:00] INFO:     10.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK\n')


def _rows(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    return {t: store.fetchall(f"SELECT * FROM {t} ORDER BY ALL") for t in PART_TABLES}


def _parts(db: Path) -> list[str]:
    where = Path(str(db) + ".parts")
    return sorted(p.name for p in where.glob("*/*")) if where.is_dir() else []


def _registered(db: Path) -> list[str]:
    store = Store.open_readonly(db)
    try:
        return sorted(str(r[0]) for r in store.fetchall("SELECT file FROM store_parts"))
    finally:
        store.close()


def test_parts_hold_the_same_rows_as_native_tables(cli: Any, tmp_path: Path) -> None:
    log, db = tmp_path / "sglang.log", tmp_path / "pm.duckdb"
    _sglang_log(log, 12_000)
    assert os.path.getsize(log) > 1 << 20
    assert cli("ingest", log, "--db", db, "--tz", "UTC").code == 0
    assert _parts(db) == _registered(db) and len(_parts(db)) == 2  # server_stats, http_requests
    store = Store.open(db)
    try:
        before = _rows(store)
        assert len(before["server_stats"]) == 12_000 and len(before["http_requests"]) == 1_200
        # made native (what a clock shift does first): the same rows, no part left registered
        store.con.execute("BEGIN TRANSACTION")
        assert materialize(store) == 13_200
        store.con.execute("COMMIT")
        assert _rows(store) == before
        assert store.fetchall("SELECT count(*) FROM store_parts") == [(0,)]
    finally:
        store.close()
    Store.open(db).close()  # the files no row names go at the next open
    assert _parts(db) == []


def test_a_rewritten_file_replaces_its_parts_and_a_grown_one_adds_one(cli: Any, tmp_path: Path) -> None:
    log, db = tmp_path / "sglang.log", tmp_path / "pm.duckdb"
    _sglang_log(log, 12_000)
    assert cli("ingest", log, "--db", db, "--tz", "UTC").code == 0
    first = _registered(db)
    _sglang_log(log, 12_500, tp="TP1")  # rewritten in place: other content under the name
    out = cli("ingest", log, "--db", db, "--tz", "UTC")
    assert out.code == 0 and "replaced" in out.out, out.out
    second = _registered(db)
    assert not set(first) & set(second) and _parts(db) == second  # the old ones are deleted
    _sglang_log(log, 3_000, start=12_502, mode="a", tp="TP1")  # grown: the new lines only
    out = cli("ingest", log, "--db", db, "--tz", "UTC")
    assert out.code == 0 and "appended" in out.out, out.out
    store = Store.open_readonly(db)
    try:
        assert store.count("server_stats") == 15_500
        assert store.fetchall("SELECT count(DISTINCT line_no) FROM server_stats") == [(15_500,)]
        assert store.fetchall("SELECT DISTINCT source_id FROM server_stats") == [(1,)]
    finally:
        store.close()


def test_queries_and_exports_see_the_parts(cli: Any, tmp_path: Path) -> None:
    log, db = tmp_path / "sglang.log", tmp_path / "pm.duckdb"
    _sglang_log(log, 12_000)
    assert cli("ingest", log, "--db", db, "--tz", "UTC").code == 0
    out = cli("query", "SELECT count(*) AS n FROM sglang_batches", "--db", db, "--format", "csv")
    assert out.code == 0 and out.out.split() == ["n", "12000"], out.out + out.err
    # the parts directory is readable by the view only: other files stay out of reach
    out = cli("query", "SELECT * FROM read_csv('/etc/hostname')", "--db", db)
    assert out.code != 0 and "Error:" in out.err
    export = tmp_path / "export"
    assert cli("export", "--parquet", export, "--db", db).code == 0
    manifest = json.loads((export / "_postmortem.json").read_text())
    assert manifest["tables"]["server_stats"] == 12_000 and manifest["tables"]["http_requests"] == 1_200
    other = tmp_path / "other.duckdb"
    assert cli("ingest", "--from-parquet", export, "--db", other).code == 0
    store = Store.open_readonly(other)
    try:
        assert store.count("server_stats") == 12_000
    finally:
        store.close()


def test_a_store_moved_with_its_parts_opens_and_one_without_them_is_one_error(
    cli: Any, tmp_path: Path
) -> None:
    log, db = tmp_path / "sglang.log", tmp_path / "pm.duckdb"
    _sglang_log(log, 12_000)
    assert cli("ingest", log, "--db", db, "--tz", "UTC").code == 0
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    for p in tmp_path.glob("pm.duckdb*"):
        p.rename(moved / p.name)
    out = cli(
        "query", "SELECT count(*) AS n FROM server_stats", "--db", moved / "pm.duckdb", "--format", "csv"
    )
    assert out.code == 0 and out.out.split() == ["n", "12000"], out.out + out.err
    for part in (moved / "pm.duckdb.parts" / "server_stats").iterdir():
        part.unlink()
    out = cli("query", "SELECT count(*) FROM server_stats", "--db", moved / "pm.duckdb")
    assert out.code != 0 and out.err.startswith("Error: ") and out.err.count("\n") == 1, out.err
    assert "is missing" in out.err and "Traceback" not in out.err


def test_a_part_that_cannot_be_written_is_one_error_and_the_load_is_rolled_back(
    cli: Any, tmp_path: Path
) -> None:
    log, db = tmp_path / "sglang.log", tmp_path / "pm.duckdb"
    _sglang_log(log, 12_000)
    parts = Path(str(db) + ".parts")
    parts.mkdir()
    (parts / "server_stats").write_text("not a directory\n")  # as a full disk or a bad mount would
    out = cli("ingest", log, "--db", db, "--tz", "UTC")
    assert out.code != 0 and "cannot write a part of server_stats" in out.err, out.err
    assert "Traceback" not in out.err and "internal error" not in out.err
    store = Store.open_readonly(db)
    try:
        assert store.count("sources") == 0 and store.interrupted() == []
    finally:
        store.close()
