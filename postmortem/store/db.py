"""The DuckDB store: opening (with a lock wait), migrations, and read-only access.

Only this package does I/O against the database. Every connection runs in UTC so that
``TIMESTAMPTZ`` values render the same everywhere.
"""

from __future__ import annotations

import os
import re
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from ..errors import StoreBusyError, StoreError, UsageError
from ..lazyre import lazy_re
from ..timeutil import BootAnchor, BootAnchors
from . import fileindex
from .migrations import all_migrations as _migrations
from .migrations import latest_version

SCHEMA_VERSION_TABLE = "schema_migrations"
#: DuckDB's memory limit on every connection (``POSTMORTEM_MEMORY_LIMIT`` overrides it) …
DEFAULT_MEMORY_LIMIT = "128MB"
#: … and while a file is appended (unless overridden): the appends need no cache of table
#: blocks, and half the limit is 35–50 MB less peak RSS on a 2M-line journal (wall time within
#: the noise; about 0.8 s more system time; 48 MB saved nothing more)
LOAD_MEMORY_LIMIT = "64MB"
_SIZE = lazy_re(r"\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*", re.I)


def memory_limit(default: str = DEFAULT_MEMORY_LIMIT) -> str:
    """``POSTMORTEM_MEMORY_LIMIT`` if set (checked), else ``default`` ('' leaves DuckDB's own)."""
    limit = os.environ.get("POSTMORTEM_MEMORY_LIMIT", default)
    if limit and not _SIZE.fullmatch(limit):
        raise UsageError(f"POSTMORTEM_MEMORY_LIMIT={limit!r}: give a size such as 128MB or 1GB")
    return limit


_IDENT = lazy_re(r"[a-z_][a-z0-9_]*")


def ident(name: str) -> str:
    """Quote an identifier that comes from postmortem's own schema (never from user input)."""
    if not _IDENT.fullmatch(name):
        raise StoreError(f"invalid identifier {name!r}")
    return f'"{name}"'


_LOCK_PATTERNS = ("Could not set lock", "Conflicting lock", "database is locked")


#: every Store not closed yet (weakly): :func:`close_open_stores`
_OPEN: weakref.WeakSet[Store] = weakref.WeakSet()


def close_open_stores() -> None:
    """Close every store still open, as the interpreter's teardown would (DuckDB writes a
    read-write store's log into its file when it is closed): before a process ends without
    that teardown (:mod:`postmortem.launch`)."""
    for store in list(_OPEN):
        with suppress(Exception):
            store.close()


class Store:
    """A postmortem database. Use :meth:`open` (read-write, migrated) or :meth:`open_readonly`."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, read_only: bool) -> None:
        self.con = con
        self.path = path
        self.read_only = read_only
        self._columns: dict[str, list[tuple[str, str]]] = {}
        self._database: str | None = None
        self.recovered: list[str] = []  # interrupted loads removed when the store was opened
        _OPEN.add(self)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str | Path, *, wait: float = 0.0) -> Store:
        if str(path) != ":memory:":
            parent = Path(path).parent
            if not parent.is_dir():
                # one new directory (--db reports/pm.duckdb beside --out reports) is made; a
                # mistyped path made a whole tree nobody asked for: that is an error
                where = next((p for p in (parent, *parent.parents) if p.exists()), parent)
                if where.exists() and not where.is_dir():
                    raise StoreError(f"{path}: {where} is a file, not a directory")
                if not parent.parent.is_dir():
                    raise StoreError(f"{path}: no directory {parent.parent} (create it first, or check --db)")
                try:
                    parent.mkdir()
                except OSError as exc:
                    raise StoreError(f"{path}: cannot create {parent}: {exc.strerror or exc}") from exc
        store = cls(_connect(str(path), read_only=False, wait=wait), str(path), read_only=False)
        # the lock is ours: the file index describes the store as it was, not as it is about to be
        fileindex.forget(path)
        store.migrate()
        from .recovery import recover_interrupted

        store.recovered = recover_interrupted(store)
        from .parts import attach_views, remove_orphans

        remove_orphans(store)
        attach_views(store)
        return store

    @classmethod
    def open_readonly(cls, path: str | Path, *, wait: float = 0.0) -> Store:
        p = Path(path)
        if str(path) != ":memory:" and not p.exists():
            raise StoreError(f"{path}: no such database (run 'postmortem ingest' or 'build' first)")
        store = cls(_connect(str(path), read_only=True, wait=wait), str(path), read_only=True)
        try:
            have = store.check_version()
            if have == 0:
                raise StoreError(
                    f"{path}: not a postmortem store (a DuckDB file without its tables; give the "
                    "--db that 'postmortem ingest' or 'build' wrote)"
                )
        except BaseException:
            store.close()
            raise
        if have < latest_version() and str(path) != ":memory:":
            # an older store: upgraded once (a write), then read as asked
            store.close()
            cls.open(path, wait=wait).close()
            store = cls(_connect(str(path), read_only=True, wait=wait), str(path), read_only=True)
        from .parts import attach_views

        try:
            attach_views(store)
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def memory(cls) -> Store:
        store = cls(_connect(":memory:", read_only=False, wait=0), ":memory:", read_only=False)
        store.migrate()
        return store

    def close(self) -> None:
        _OPEN.discard(self)
        self.con.close()

    def reader(self) -> Store:
        """Another connection to this store's database, for queries from another thread: it sees
        what is committed (not this connection's open transaction). Close it when done."""
        cur = self.con.cursor()
        other = Store(cur, self.path, read_only=True)
        try:
            cur.execute("SET TimeZone = 'UTC'")  # a session setting: not inherited
            from .parts import attach_views

            attach_views(other)  # temporary views are a connection's own
        except BaseException:
            cur.close()
            raise
        return other

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ schema
    def version(self) -> int:
        exists = self.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' AND table_name = ?",
            [SCHEMA_VERSION_TABLE],
        ).fetchone()
        if not exists or not exists[0]:
            return 0
        row = self.con.execute(f"SELECT max(version) FROM {ident(SCHEMA_VERSION_TABLE)}").fetchone()  # noqa: S608
        return int(row[0]) if row and row[0] is not None else 0

    def check_version(self) -> int:
        """The store's schema version; refused when a newer postmortem wrote it."""
        have, latest = self.version(), latest_version()
        if have > latest:
            raise StoreError(
                f"{self.path}: written by a newer postmortem (schema version {have}, this one "
                f"knows {latest}); upgrade postmortem or use another --db"
            )
        return have

    def migrate(self) -> None:
        have = self.check_version()
        pending = [m for m in _migrations() if m[0] > have]
        if not pending:
            self._check_tables()
            return
        if have == 0 and self.table_names():
            raise StoreError(
                f"{self.path}: not a postmortem store (it holds other tables); give another --db"
            )
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute(
                f"CREATE TABLE IF NOT EXISTS {SCHEMA_VERSION_TABLE} "
                "(version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMPTZ)"
            )
            for version, name, sql in pending:
                try:
                    self.con.execute(sql)
                except duckdb.Error as exc:
                    raise StoreError(
                        f"{self.path}: migration {version} ({name}) does not apply: its tables are not "
                        f"what schema version {version - 1} has ({str(exc).splitlines()[0]}); the store "
                        "was changed by hand or is damaged: restore a copy, or use another --db"
                    ) from None
                self.con.execute(
                    f"INSERT INTO {ident(SCHEMA_VERSION_TABLE)} VALUES (?, ?, ?)",  # noqa: S608
                    [version, name, datetime.now(UTC)],
                )
            self.con.execute("COMMIT")
        except Exception:
            self.con.execute("ROLLBACK")
            raise
        self._columns.clear()

    def _check_tables(self) -> None:
        """A store at the latest version has every table its migrations made (one dropped by
        hand made the analysis fail deep inside, as an internal error)."""
        missing = sorted(expected_tables() - set(self.table_names()))
        if missing:
            raise StoreError(
                f"{self.path}: table {', '.join(missing)} is missing, though the store's schema "
                "version says it exists; the store was changed by hand or is damaged: restore a "
                "copy, or build into another --db"
            )

    def database(self) -> str:
        """The name DuckDB gives this store's database (its file's stem)."""
        if self._database is None:
            self._database = str(self.con.execute("SELECT current_database()").fetchall()[0][0])
        return self._database

    def table_names(self) -> list[str]:
        """The store's tables (not its views: ``sglang_events``, ``sglang_batches``)."""
        rows = self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "AND table_type = 'BASE TABLE' ORDER BY table_name"
        ).fetchall()
        return [r[0] for r in rows]

    def columns(self, table: str) -> list[tuple[str, str]]:
        """(name, DuckDB type) of ``table``'s columns in order.

        Every table's columns are read at the first call (one query) and kept: a loader's
        parsing thread asks for them while its insert thread holds the connection, and DuckDB
        refuses a second call on a busy connection."""
        if table not in self._columns:
            rows = self.con.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = 'main' AND table_catalog = current_database() "
                "ORDER BY table_name, ordinal_position"
            ).fetchall()
            found: dict[str, list[tuple[str, str]]] = {}
            for name, column, kind in rows:
                found.setdefault(name, []).append((column, kind))
            self._columns.update(found)
            if table not in self._columns:
                raise StoreError(f"unknown table {table!r}")
        return self._columns[table]

    # ------------------------------------------------------------------ helpers
    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    @contextmanager
    def threads(self, count: int) -> Iterator[None]:
        """DuckDB's worker threads set to ``count`` meanwhile (a setting of the database: every
        connection to it), then what they were. When this connection cannot take a statement any
        more (an error aborted its transaction), another connection to the database sets them
        back; when none can (the store is closed) the error that got here is the one to see."""
        before = int(self.con.execute("SELECT current_setting('threads')").fetchall()[0][0])
        self.con.execute("SET threads = ?", [max(1, int(count))])
        try:
            yield
        finally:
            try:
                self.con.execute("SET threads = ?", [before])
            except duckdb.Error:
                with suppress(duckdb.Error):
                    other = self.con.cursor()
                    try:
                        other.execute("SET threads = ?", [before])
                    finally:
                        other.close()

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> Any:
        return self.con.execute(sql, params) if params is not None else self.con.execute(sql)

    def fetchall(
        self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None
    ) -> list[tuple[Any, ...]]:
        return list(self.execute(sql, params).fetchall())

    def insert_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` (values in the order of ``columns``) in one statement: each column is
        one list parameter, unnested side by side, and DuckDB casts each to its column's type. A
        multi-row ``VALUES`` costs DuckDB about 20 µs a value to bind (the bench store's 1,019
        incident victims: 77 ms; this way 7 ms), and ``executemany`` runs one statement per row
        (1-2 ms each)."""
        if not rows:
            return
        names = ", ".join(ident(c) for c in columns)
        lists = ", ".join(f"unnest(${i})" for i in range(1, len(columns) + 1))
        self.con.execute(
            f"INSERT INTO {ident(table)} ({names}) SELECT {lists}",
            [list(col) for col in zip(*rows, strict=True)],
        )

    def interrupted(self) -> list[str]:
        """Paths whose load was interrupted (a crash left their rows; the next writer removes them)."""
        if "sources" not in self.table_names():
            return []
        return [
            str(r[0])
            for r in self.fetchall("SELECT path FROM sources WHERE status = 'loading' ORDER BY path")
        ]

    def count(self, table: str) -> int:
        self.columns(table)  # validates the name against the catalog
        # fetchall: a result left unfinished (fetchone) makes DuckDB 2 refuse the next relation
        rows = self.con.execute(f"SELECT count(*) FROM {ident(table)}").fetchall()  # noqa: S608
        return int(rows[0][0]) if rows else 0

    def boot_anchors(self) -> BootAnchors:
        """Boot times known to the store (median over the rows of each boot id)."""
        rows = self.con.execute(
            "SELECT boot_id, any_value(host), epoch_us(median(boot_ts)::TIMESTAMPTZ), "
            "min(method) FROM boots GROUP BY boot_id ORDER BY boot_id"
        ).fetchall()
        anchors = BootAnchors()
        for boot_id, host, us, method in rows:
            ts = datetime.fromtimestamp(us / 1e6, UTC)
            anchors.add(BootAnchor(boot_id, host, ts, method))
        return anchors


#: DuckDB fetches and loads extensions it knows of when a file or a function needs one (a
#: SQLite file given as the store: sqlite_scanner, from the network); the store needs none
#: beyond those built in (json, parquet, icu)
_NO_AUTOLOAD: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


def _connect(path: str, *, read_only: bool, wait: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + max(wait, 0.0)
    if path != ":memory:":
        try:
            with open(path, "rb") as fh:
                magic = fh.read(16)
        except OSError:
            magic = b""
        if magic == b"SQLite format 3\x00":
            raise StoreError(f"{path}: a SQLite database, not a postmortem store")
    while True:
        try:
            con = duckdb.connect(path, read_only=read_only, config=_NO_AUTOLOAD)
            break
        except duckdb.IOException as exc:
            msg = str(exc)
            if any(p in msg for p in _LOCK_PATTERNS):
                if time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                holder = re.search(r"\(PID (\d+)\)", msg)
                who = f" by process {holder.group(1)}" if holder else ""
                if wait > 0:  # --wait was given: waiting longer is not the advice
                    raise StoreBusyError(
                        f"{path}: database is still in use{who} after waiting {wait:g} s; try again "
                        "when it has finished"
                    ) from exc
                raise StoreBusyError(
                    f"{path}: database is in use{who}; wait for it to finish or pass --wait SECONDS"
                ) from exc
            raise StoreError(f"{path}: cannot open database: {msg.splitlines()[0]}") from exc
        except duckdb.Error as exc:
            raise StoreError(f"{path}: cannot open database: {str(exc).splitlines()[0]}") from exc
    con.execute("SET TimeZone = 'UTC'")
    try:
        limit = memory_limit()
    except UsageError:
        con.close()
        raise
    if limit:
        # DuckDB caches table blocks up to 80 % of RAM by default; a bounded cache keeps peak RSS
        # independent of the input size (it spills to its temp directory when it must)
        con.execute("SET memory_limit = ?", [limit])
    return con


_TABLE_DDL = lazy_re(
    r"(?i)\b(?:(create) table(?: if not exists)?|(drop) table(?: if exists)?|alter table)\s+(\w+)"
    r"(?:\s+(rename) to\s+(\w+))?"
)


@cache
def expected_tables() -> frozenset[str]:
    """The tables the migrations leave, read from their SQL in order (CREATE, DROP, RENAME)."""
    tables: set[str] = set()
    for _, _, sql in _migrations():
        for create, drop, name, rename, new in _TABLE_DDL.findall(sql):
            if create:
                tables.add(name.lower())
            elif drop:
                tables.discard(name.lower())
            elif rename:
                tables.discard(name.lower())
                tables.add(new.lower())
    return frozenset(tables)
