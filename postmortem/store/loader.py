"""Loading parser output: batched Arrow inserts, one transaction per source file.

:class:`SourceWriter` receives records, table batches and parse issues for one source and
appends them in blocks (never row by row). The caller owns the transaction, so a file is
either fully in the store or not at all.
"""

from __future__ import annotations

import os
import queue
import threading
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from typing import Any

import pyarrow as pa

from ..errors import StoreError, UsageError
from ..parsers.base import Output, ParseIssue, TableBatch
from ..records import RECORD_BY_TABLE, Record, field_names
from . import parts as _parts
from .db import LOAD_MEMORY_LIMIT, Store, ident, memory_limit
from .recovery import discard_source, recover_interrupted

__all__ = ["SourceWriter", "discard_source", "recover_interrupted"]

FLUSH_ROWS = 50_000


def _env_int(name: str, default: int) -> int:
    """A whole number from the environment (a tuning knob), else a one-line configuration error."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{name}={raw!r}: give a whole number (default {default})") from None
    if value < 1:
        raise UsageError(f"{name}={raw!r}: give a whole number, 1 or more (default {default})")
    return value


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: rows inserted between intermediate commits: DuckDB keeps a transaction's appends in memory, so
#: a large file is committed in steps (the source stays ``status='loading'`` until the end and an
#: interrupted load is removed by :func:`recover_interrupted`). Two row groups: measured on a
#: 1M-line journal, 75 MB less peak RSS than 500,000 rows and no slower
COMMIT_ROWS = _env_int("POSTMORTEM_COMMIT_ROWS", 245760)
#: … or this many bytes of Arrow data: rows of long messages fill memory long before they fill
#: two row groups (the rows above are 60–80 MB of an ordinary journal; this never cuts them)
COMMIT_BYTES = _env_int("POSTMORTEM_COMMIT_BYTES", 128 << 20)
#: DuckDB's row group. Inserts are whole row groups (but the last of a file), as Arrow batches
#: of this size: each insert ends with a partial row group per DuckDB thread (written and
#: merged later: small inserts cost two to three times as much per row), and many small
#: batches cost DuckDB's scan more than the copy that makes them row-group sized
ROW_GROUP = 122_880

# Columns of the bulk tables whose values are mostly distinct: no dictionary, no min/max
# statistics (a dictionary that overflows is built and thrown away; min/max of free text prune
# nothing). Measured on the bench journal's parts (docs/performance.md): the part writes cost
# 27 % less CPU than with pyarrow's defaults and are 25-60 % smaller, with DuckDB's scans of
# them as fast or faster.
_FREE_TEXT = frozenset({"message", "ts_raw", "extra", "path", "client"})
# Columns that grow by small steps along a file: delta-encoded.
_DELTA = ("line_no", "ts")


def _part_options(schema: pa.Schema) -> dict[str, Any]:
    """pyarrow's ParquetWriter options for one bulk table's part (see :data:`_FREE_TEXT`).

    >>> s = pa.schema([("line_no", pa.int64()), ("host", pa.string()), ("message", pa.string())])
    >>> o = _part_options(s)
    >>> o["use_dictionary"], o["write_statistics"], o["column_encoding"], o["write_page_index"]
    (['host'], ['line_no', 'host'], {'line_no': 'DELTA_BINARY_PACKED'}, True)
    """
    names = schema.names
    words = [
        f.name
        for f in schema
        if (pa.types.is_string(f.type) or pa.types.is_large_string(f.type) or pa.types.is_boolean(f.type))
        and f.name not in _FREE_TEXT
    ]
    return {
        "use_dictionary": words,
        "write_statistics": [n for n in names if n not in _FREE_TEXT],
        "column_encoding": {n: "DELTA_BINARY_PACKED" for n in _DELTA if n in names},
        # each page's min/max and place: DuckDB reads only the pages a window's times can be in
        # (a 20-minute window of the bench journal's part: a count 1.29 -> 1.13 ms, a LIKE over
        # its messages 7.6 -> 4.1 ms; the writes cost the same)
        "write_page_index": True,
    }


#: a table's blocks are inserted once this many rows wait (one row group: larger inserts let
#: DuckDB append on both cores, but the parsing thread needs a core too; measured on 2M-line
#: inputs, one row group is as fast in wall time, ~0.5 CPU s dearer, and 130–180 MB leaner) …
INSERT_ROWS = _env_int("POSTMORTEM_INSERT_ROWS", ROW_GROUP)
#: … or once all tables' waiting blocks reach this many bytes: the table holding the most is
#: inserted (its whole row groups), so memory stays bounded whatever the rows' width
PENDING_BYTES = _env_int("POSTMORTEM_PENDING_BYTES", 32 << 20)

_ARROW_TYPES: dict[str, pa.DataType] = {
    "BIGINT": pa.int64(),
    "INTEGER": pa.int32(),
    "SMALLINT": pa.int16(),
    "TINYINT": pa.int8(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "VARCHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
    "TIMESTAMP WITH TIME ZONE": pa.timestamp("us", tz="UTC"),
    "TIMESTAMP": pa.timestamp("us"),
}


def arrow_schema(store: Store, table: str, names: Iterable[str]) -> pa.Schema:
    types = dict(store.columns(table))
    return pa.schema([(n, _ARROW_TYPES[types[n]]) for n in names])


class _Buffer:
    __slots__ = ("getter", "names", "rows", "schema", "table")

    def __init__(self, store: Store, record_type: type[Record]) -> None:
        self.table = record_type.TABLE
        self.names = field_names(record_type)
        self.getter = attrgetter(*self.names)
        self.schema = arrow_schema(store, self.table, self.names)
        self.rows: list[tuple[Any, ...]] = []


class SourceWriter:
    """Collects one source's output and inserts it in blocks."""

    def __init__(
        self,
        store: Store,
        source_id: int,
        checkpoint: bool = False,
        background: bool = False,
        parts: bool = False,
    ) -> None:
        self.store = store
        self.source_id = source_id
        self.checkpoint = checkpoint
        # ``parts``: the bulk tables' rows go to Parquet parts (published by publish_parts())
        where = _parts.parts_dir(store) if parts else None
        self._part_dir = where if where is not None and _parts.has_registry(store) else None
        self._part_writers: dict[tuple[str, tuple[str, ...]], _PartWriter] = {}
        self._since_commit = 0
        self._since_commit_bytes = 0
        self._pending: dict[tuple[str, tuple[str, ...]], list[pa.Table]] = {}
        self._pending_rows: dict[tuple[str, tuple[str, ...]], int] = {}
        self._pending_bytes: dict[tuple[str, tuple[str, ...]], int] = {}
        # inserts run in a second thread while the parser goes on (DuckDB and Arrow release the
        # GIL); the queue holds one block: at most one waits while another is inserted
        self._queue: queue.Queue[tuple[str, pa.Table] | None] | None = None
        self._worker: threading.Thread | None = None
        self._error: BaseException | None = None
        # what a background load changes, put back by restore(): DuckDB's memory limit as it
        # was and its thread count
        self._limits: tuple[str, str] | None = None
        self._threads: str | None = None
        self._unordered = False
        if background:
            # the parsing thread must not use the connection while the insert thread does:
            # what it needs from the catalogue is read now
            store.columns("sources")
            store.database()
            try:
                # rows carry their line numbers and every query orders its results: DuckDB may
                # then append in parallel (reset in restore())
                store.con.execute("SET preserve_insertion_order = false")
                self._unordered = True
                self._one_thread()
                self._lower_limits()
                self._queue = queue.Queue(maxsize=1)
                self._worker = threading.Thread(target=self._run, name="postmortem-insert", daemon=True)
                self._worker.start()
            except BaseException:
                self._queue = self._worker = None
                self.restore()
                raise
        self._buffers: dict[type[Record], _Buffer] = {}
        self.issues: list[ParseIssue] = []
        self.records = 0
        self.unparsed_lines = 0
        self.issue_count = 0
        self.first_ts: datetime | None = None
        self.last_ts: datetime | None = None
        self.per_table: dict[str, int] = {}

    def add(self, item: Output) -> None:
        if isinstance(item, ParseIssue):
            self.add_issue(item)
            return
        if isinstance(item, TableBatch):
            self._insert_batch(item)
            return
        buf = self._buffers.get(type(item))
        if buf is None:
            buf = self._buffers[type(item)] = _Buffer(self.store, type(item))
        buf.rows.append(buf.getter(item))
        self.records += 1
        ts = getattr(item, "ts", None)
        if ts is not None:
            if self.first_ts is None or ts < self.first_ts:
                self.first_ts = ts
            if self.last_ts is None or ts > self.last_ts:
                self.last_ts = ts
        if len(buf.rows) >= FLUSH_ROWS:
            self._flush(buf)

    def add_all(self, items: Iterable[Output]) -> None:
        for item in items:
            self.add(item)

    def add_issue(self, issue: ParseIssue) -> None:
        self.issue_count += 1
        if issue.unparsed:
            self.unparsed_lines += 1
        self.issues.append(issue)
        if len(self.issues) >= FLUSH_ROWS:
            self._flush_issues()

    def _insert_batch(self, batch: TableBatch) -> None:
        data = batch.data
        if data.num_rows == 0:
            return
        if batch.table not in RECORD_BY_TABLE:
            raise ValueError(f"unknown table {batch.table!r} in a TableBatch")
        self.records += data.num_rows
        self.per_table[batch.table] = self.per_table.get(batch.table, 0) + data.num_rows
        if "ts" in data.column_names:
            self._note_span(data["ts"])
        key = (batch.table, tuple(data.column_names))
        self._pending.setdefault(key, []).append(data)
        self._pending_rows[key] = self._pending_rows.get(key, 0) + data.num_rows
        # the buffers' whole size (a slice keeps its whole buffer alive), and far cheaper than
        # Table.nbytes, which measures every slice
        size = data.get_total_buffer_size()
        self._pending_bytes[key] = self._pending_bytes.get(key, 0) + size
        if self._pending_rows[key] >= INSERT_ROWS:
            self._release(key, whole=True)
        if sum(self._pending_bytes.values()) >= PENDING_BYTES:
            biggest = max(self._pending_bytes, key=self._pending_bytes.__getitem__)
            if self._pending_rows[biggest] >= ROW_GROUP:
                self._release(biggest, whole=True)
            elif self._pending_bytes[biggest] >= 2 * PENDING_BYTES:
                # rows so wide that a row group of them would not fit the budget (long
                # messages): inserted as they are, a partial row group
                self._release(biggest)

    def _note_span(self, ts: pa.ChunkedArray) -> None:  # type: ignore[type-arg]
        """Widen first_ts/last_ts to a batch's time column: one min-max pass, compared as
        integers (a datetime is made only for a new extreme)."""
        import pyarrow.compute as pc

        if ts.null_count == len(ts):
            return
        if not pa.types.is_timestamp(ts.type) or ts.type.unit != "us":
            ts = ts.cast(pa.timestamp("us", tz="UTC"))
        span: Any = pc.min_max(ts)  # TimestampScalar's .value (epoch µs) is not in the stubs
        lo, hi = span["min"], span["max"]
        if self.first_ts is None or lo.value < _micros(self.first_ts):
            self.first_ts = lo.as_py()
        if self.last_ts is None or hi.value > _micros(self.last_ts):
            self.last_ts = hi.as_py()

    def _release(self, key: tuple[str, tuple[str, ...]], whole: bool = False) -> None:
        """Insert a table's waiting blocks: all of them, or (``whole``) as many whole row groups
        as they make, the rest waiting for more."""
        blocks = self._pending.pop(key, [])
        self._pending_rows.pop(key, None)
        self._pending_bytes.pop(key, None)
        if not blocks:
            return
        data = blocks[0] if len(blocks) == 1 else pa.concat_tables(blocks, promote_options="permissive")
        del blocks  # (the blocks' memory goes with the copy below, not after the insert)
        if whole:
            keep = data.num_rows // ROW_GROUP * ROW_GROUP
            if keep < data.num_rows:
                rest = data.slice(keep)
                self._pending[key] = [rest]
                self._pending_rows[key] = rest.num_rows
                self._pending_bytes[key] = rest.get_total_buffer_size()
                data = data.slice(0, keep)
            if not keep:
                return
        if data.num_rows > ROW_GROUP:
            data = pa.Table.from_batches(data.combine_chunks().to_batches(max_chunksize=ROW_GROUP))
        self._insert_arrow(key[0], data)

    def _insert_arrow(self, table: str, data: pa.Table) -> None:
        if self._queue is None:
            self._do_insert(table, data)
            return
        self._raise_worker_error()
        self._queue.put((table, data))

    def _run(self) -> None:
        assert self._queue is not None
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if self._error is None:
                    self._do_insert(*item)
            except BaseException as exc:  # handed to the parsing thread
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise_worker_error(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def _wait(self) -> None:
        if self._queue is not None:
            self._queue.join()
        self._raise_worker_error()

    def close(self) -> None:
        """Stop the insert thread and put the connection's settings back (after :meth:`flush`;
        to abandon a load, :meth:`stop`, roll back, then :meth:`restore`)."""
        self.stop()
        self.restore()

    def finish(self) -> None:
        """Insert everything still buffered, stop the insert thread, put the connection's
        settings back, and register the parts written (:meth:`publish_parts`) in the caller's
        transaction."""
        self.flush()
        self.close()
        _parts.register(self.store, self.source_id, self.publish_parts())

    def abandon(self) -> None:
        """Stop the insert thread and remove the parts not published (a load that failed)."""
        self.stop()
        self.drop_parts()

    def stop(self) -> None:
        """Stop the insert thread (it finishes the block in hand)."""
        if self._queue is not None and self._worker is not None:
            self._queue.put(None)
            self._worker.join()
            self._queue = None
            self._worker = None

    def restore(self) -> None:
        """Put back what a background load changed (outside an aborted transaction: DuckDB
        refuses any statement in one, so roll back first). Idempotent."""
        if self._unordered:
            self.store.con.execute("RESET preserve_insertion_order")
            self._unordered = False
        limits, self._limits = self._limits, None
        if limits is not None:
            self._set_limit(limits[0])
        threads, self._threads = self._threads, None
        if threads is not None:
            self.store.con.execute("SET threads = ?", [int(threads)])

    def _one_thread(self) -> None:
        """Append on one DuckDB thread (the parsing thread needs the other core): each insert
        then ends with one partial row group, not one per thread, and DuckDB's threads do not
        contend with the parser — measured in the issue at −19 % append CPU."""
        shown = self.store.con.execute("SELECT current_setting('threads')").fetchall()[0][0]
        self._threads = str(shown)
        self.store.con.execute("SET threads = 1")

    def _lower_limits(self) -> None:
        """Lower DuckDB's memory limit for the appends, keeping the one to restore: the
        configured one (exact), unless the connection had another (then as DuckDB shows it,
        rounded to 0.1 MiB — restoring the shown value every file would drift)."""
        con = self.store.con

        def shown() -> str:
            return str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])

        before = shown()
        usual = memory_limit()
        if usual:
            self._set_limit(usual)
        if not usual or shown() != before:
            usual = before
        load = memory_limit(LOAD_MEMORY_LIMIT) or usual
        self._limits = (usual, load)
        self._set_limit(load)

    def _set_limit(self, value: str) -> None:
        self.store.con.execute("SET memory_limit = ?", [value])

    def _do_insert(self, table: str, data: pa.Table) -> None:
        if self._part_dir is not None and table in _parts.PART_TABLES:
            self._write_part(table, data)
            return
        size = data.get_total_buffer_size()
        self._since_commit += data.num_rows
        self._since_commit_bytes += size
        if self.checkpoint and (
            self._since_commit >= COMMIT_ROWS or self._since_commit_bytes >= COMMIT_BYTES
        ):
            # a commit pins what the transaction appended: under the lower limit of the appends
            # it can run out (rows of 32–48 KB did, at 64 MB), so it runs under the usual one
            if self._limits is not None:
                self._set_limit(self._limits[0])
            self.store.con.execute("COMMIT")
            self.store.con.execute("BEGIN TRANSACTION")
            if self._limits is not None:
                self._set_limit(self._limits[1])
            self._since_commit = data.num_rows
            self._since_commit_bytes = size
        cols = ", ".join(ident(n) for n in data.column_names)
        self.store.con.register("_pm_batch", data)
        try:
            self.store.con.execute(
                f"INSERT INTO {_parts.native(self.store, table)} (source_id, {cols}) SELECT ?, {cols} FROM _pm_batch",  # noqa: S608
                [self.source_id],
            )
        finally:
            self.store.con.unregister("_pm_batch")

    def _write_part(self, table: str, data: pa.Table) -> None:
        assert self._part_dir is not None
        key = (table, tuple(data.column_names))
        try:
            writer = self._part_writers.get(key)
            if writer is None:
                schema = arrow_schema(self.store, table, ("source_id", *data.column_names))
                writer = self._part_writers[key] = _PartWriter(self._part_dir / table, self.source_id, schema)
            writer.write(data)
        except OSError as exc:  # a full disk, no permission: the machine's answer, not a bug
            raise StoreError(f"{self._part_dir}: cannot write a part of {table}: {exc}") from exc

    def publish_parts(self) -> list[tuple[str, str, int]]:
        """Close the parts written (after :meth:`close`), make them durable and rename them
        into place; returns (table, file, rows) for :func:`parts.register`, which the caller
        runs in the transaction that marks the source complete."""
        try:
            done = [(key[0], w.finish(), w.rows) for key, w in self._part_writers.items()]
            self._part_writers = {}
            for table in {t for t, _, _ in done}:
                assert self._part_dir is not None
                _fsync_dir(self._part_dir / table)
        except OSError as exc:
            raise StoreError(f"{self._part_dir}: cannot finish a part: {exc}") from exc
        return done

    def drop_parts(self) -> None:
        """Remove the parts written and not published (a load abandoned or found a duplicate)."""
        writers, self._part_writers = self._part_writers, {}
        for w in writers.values():
            w.abandon()

    def _flush(self, buf: _Buffer) -> None:
        if not buf.rows:
            return
        columns = list(zip(*buf.rows, strict=True))
        names = buf.schema.names
        line_nos = columns[names.index("line_no")] if "line_no" in names else (0,) * len(buf.rows)
        arrays = [self._array(col, f, line_nos) for col, f in zip(columns, buf.schema, strict=True)]
        data = pa.Table.from_arrays(arrays, schema=buf.schema)
        self.per_table[buf.table] = self.per_table.get(buf.table, 0) + len(buf.rows)
        buf.rows = []
        self._insert_arrow(buf.table, data)

    def _array(self, col: tuple[Any, ...], f: Any, line_nos: tuple[Any, ...]) -> Any:
        """One column as Arrow. A number too large for its column (a 20-digit pid in a log) is
        NULL there, and said as a parse issue of its line; the row and the file are kept."""
        try:
            return pa.array(col, type=f.type)
        except (OverflowError, pa.ArrowInvalid):
            if not pa.types.is_integer(f.type):
                raise
        bits = f.type.bit_width - (1 if pa.types.is_signed_integer(f.type) else 0)
        lo = -(1 << bits) if pa.types.is_signed_integer(f.type) else 0
        hi = (1 << bits) - 1
        out = []
        for value, line_no in zip(col, line_nos, strict=True):
            if isinstance(value, int) and not lo <= value <= hi:
                self.add_issue(
                    ParseIssue(
                        int(line_no), f"{f.name} too large for its column: kept empty", str(value)[:60], False
                    )
                )
                value = None
            out.append(value)
        return pa.array(out, type=f.type)

    def _flush_issues(self) -> None:
        if not self.issues:
            return
        data = pa.table(
            {
                "line_no": pa.array([i.line_no for i in self.issues], pa.int64()),
                "reason": pa.array([i.reason for i in self.issues], pa.string()),
                "excerpt": pa.array([i.excerpt for i in self.issues], pa.string()),
                "unparsed": pa.array([i.unparsed for i in self.issues], pa.bool_()),
            }
        )
        self.issues = []
        self._insert_arrow("parse_issues", data)

    def flush(self) -> None:
        """Insert everything still buffered and wait until it is in."""
        for buf in self._buffers.values():
            self._flush(buf)
        self._flush_issues()
        for key in list(self._pending):
            self._release(key)
        self._wait()


class _PartWriter:
    """One Parquet part of one table's rows from one load, written under a temporary name."""

    def __init__(self, directory: Any, source_id: int, schema: pa.Schema) -> None:
        import pyarrow.parquet as pq

        directory.mkdir(parents=True, exist_ok=True)
        name = f"{source_id}-{uuid.uuid4().hex}.parquet"
        self.final = directory / name
        self.path = directory / f"{_parts.TMP_PREFIX}{name}"
        self.schema = schema
        self.source_id = pa.scalar(source_id, schema.field("source_id").type)
        self.rows = 0
        # zstd level 1: measured in the issue at 0.42 µs a row against 0.79 for DuckDB's appends
        self.writer = pq.ParquetWriter(
            self.path, schema, compression="zstd", compression_level=1, **_part_options(schema)
        )

    def write(self, data: pa.Table) -> None:
        data = data.cast(pa.schema(list(self.schema)[1:]))
        data = data.add_column(0, "source_id", pa.repeat(self.source_id, data.num_rows))
        self.writer.write_table(data, row_group_size=ROW_GROUP)
        self.rows += data.num_rows

    def finish(self) -> str:
        self.writer.close()
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(self.path, self.final)
        return str(self.final.name)

    def abandon(self) -> None:
        try:
            self.writer.close()
        finally:
            self.path.unlink(missing_ok=True)


def _fsync_dir(path: Any) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _micros(ts: datetime) -> int:
    """Epoch microseconds of an aware datetime."""
    return (ts - _EPOCH) // timedelta(microseconds=1)
