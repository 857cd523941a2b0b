"""Bulk rows as Parquet parts beside the store (no Arrow needed: opening a store stays cheap).

A large file's rows of the bulk tables (:data:`PART_TABLES`) are not appended to DuckDB: the
loader writes them as Parquet files (``<store>.parts/<table>/``), renamed into place once whole
and registered in ``store_parts`` in the transaction that marks their source complete. Every
connection sees each such table through a temporary view of the same name: the native rows
(small files, merges, older stores) and the registered parts. A part that no row of
``store_parts`` names (a load killed before its commit, a source replaced or removed) is
deleted the next time the store is opened for writing.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import StoreError
from .db import Store, ident

#: the tables whose rows a large file writes as parts: the bulk of every store
PART_TABLES = ("journal_entries", "kernel_messages", "server_stats", "http_requests", "gpu_samples")
REGISTRY = "store_parts"
#: a part being written (never registered; removed at the next open if the load died)
TMP_PREFIX = ".tmp-"


def parts_dir(store: Store) -> Path | None:
    """The store's parts directory (``pm.duckdb`` → ``pm.duckdb.parts``); None for a store in
    memory."""
    if store.path == ":memory:":
        return None
    return Path(os.path.abspath(store.path + ".parts"))


def native(store: Store, table: str) -> str:
    """``table``'s native rows, by its full name: the view of the same name shadows it."""
    return f"{_quoted(store.database())}.main.{ident(table)}"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def has_registry(store: Store) -> bool:
    return REGISTRY in store.table_names()


def attach_views(store: Store) -> None:
    """(Re)make the views that show each bulk table with its parts, on ``store``'s connection
    (temporary views are a connection's own; a read-only connection may make them too)."""
    where = parts_dir(store)
    if where is None or not has_registry(store):
        return
    rows = store.fetchall(f"SELECT table_name, file FROM {REGISTRY} ORDER BY table_name, file")  # noqa: S608
    if rows:
        # a build's many window queries read the same parts: their footers are read once
        store.execute("SET parquet_metadata_cache = true")
    files: dict[str, list[str]] = {}
    for table, file in rows:
        files.setdefault(str(table), []).append(str(where / table / file))
    missing = next((f for fs in files.values() for f in fs if not os.path.isfile(f)), None)
    if missing is not None:
        raise StoreError(
            f"{store.path}: {missing} is missing (a store's .parts directory holds most of its rows and "
            "goes with its .duckdb file); restore it, or ingest the logs into a new --db"
        )
    for table in PART_TABLES:
        if table not in files:
            store.execute(f"DROP VIEW IF EXISTS temp.main.{ident(table)}")
            continue
        listed = ", ".join(_literal(f) for f in files[table])
        store.execute(
            f"CREATE OR REPLACE TEMP VIEW {ident(table)} AS SELECT * FROM {native(store, table)} "  # noqa: S608
            f"UNION ALL BY NAME SELECT * FROM read_parquet([{listed}], union_by_name = true)"
        )


def register(store: Store, source_id: int, parts: list[tuple[str, str, int]]) -> None:
    """Record ``parts`` ((table, file name, rows)) of ``source_id`` and show them (inside the
    caller's transaction: they count once it commits)."""
    if not parts:
        return
    store.con.executemany(
        f"INSERT INTO {REGISTRY} (source_id, table_name, file, rows) VALUES (?, ?, ?, ?)",  # noqa: S608
        [[source_id, t, f, n] for t, f, n in parts],
    )
    attach_views(store)


def unregister(store: Store, source_id: int) -> None:
    """Forget ``source_id``'s parts (their files go at the next open for writing)."""
    if not has_registry(store):
        return
    gone = store.fetchall(f"DELETE FROM {REGISTRY} WHERE source_id = ? RETURNING file", [source_id])  # noqa: S608
    if gone:
        attach_views(store)


def materialize(
    store: Store, source_ids: list[int] | None = None, tables: tuple[str, ...] = PART_TABLES
) -> int:
    """Move parts' rows into their native tables and unregister the parts (their files go at
    the next open for writing): a part is never changed in place, so rows about to be updated
    (a clock shift, a boot anchor, a host given) are made native first. Only the parts of
    ``source_ids`` (None: every source) of ``tables``. Returns the rows moved."""
    where = parts_dir(store)
    if where is None or not has_registry(store):
        return 0
    rows = [
        (int(sid), str(t), str(f), int(n))
        for sid, t, f, n in store.fetchall(f"SELECT source_id, table_name, file, rows FROM {REGISTRY}")  # noqa: S608
        if str(t) in tables and (source_ids is None or int(sid) in source_ids)
    ]
    if not rows:
        return 0
    for table in sorted({t for _, t, _, _ in rows}):
        listed = ", ".join(_literal(str(where / table / f)) for _, t, f, _ in rows if t == table)
        store.execute(
            f"INSERT INTO {native(store, table)} BY NAME "  # noqa: S608
            f"SELECT * FROM read_parquet([{listed}], union_by_name = true)"
        )
    store.con.executemany(f"DELETE FROM {REGISTRY} WHERE file = ?", [[f] for _, _, f, _ in rows])  # noqa: S608
    attach_views(store)
    return sum(n for _, _, _, n in rows)


def remove_orphans(store: Store) -> int:
    """Delete the part files no registered row names (loads that died, sources replaced or
    removed); the caller holds the store's write lock. Returns how many went."""
    where = parts_dir(store)
    if where is None or not where.is_dir() or not has_registry(store):
        return 0
    known = {(str(t), str(f)) for t, f in store.fetchall(f"SELECT table_name, file FROM {REGISTRY}")}  # noqa: S608
    removed = 0
    for sub in where.iterdir():
        if not sub.is_dir():
            continue
        for path in sub.iterdir():
            if (sub.name, path.name) not in known:
                path.unlink(missing_ok=True)
                removed += 1
    return removed
