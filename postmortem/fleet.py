"""Beyond one machine: export a store as hive-partitioned Parquet, merge other machines' exports.

``postmortem export --parquet DIR`` writes every table to ``DIR/<table>/host=<host>/date=<day>/``
(Parquet files that DuckDB, Spark or Trino read as they are), plus ``DIR/_postmortem.json`` with
the schema version and row counts (per table, and per source for the merged tables). The manifest
is written last, and an earlier export's is removed before any table is rewritten (a marker,
``_postmortem.unfinished``, says meanwhile that the directory is being written): a directory
never holds a manifest beside tables it does not describe. ``postmortem ingest --from-parquet
DIR`` first checks every merged table's rows against the manifest (a table or partition missing,
a file cut short: refused, nothing merged), then merges the export
into a store: sources already present (the same content hash of the same host: identical files
of two hosts are two sources) are skipped, the others get new source
ids, so fleet stores can be combined repeatedly without duplicates; a source of the same host and
path merged before at an earlier version (the file grew) is replaced by the later one. Rows an
older version exported without a host take the export's only host; a source stored without a
host takes the one a later export of the same file gives it. Derived tables (incidents,
loads, recommendations) are exported for querying but not imported: ``build`` recomputes them.

Paths never reach SQL text: Arrow writes and reads the files, DuckDB sees only Arrow streams.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from .errors import InputError, StoreError
from .io import write_atomic
from .lazyre import lazy_re
from .query import sole_host
from .records import RECORD_TYPES
from .store.db import Store, ident
from .store.migrations import latest_version
from .store.parts import materialize, native
from .store.recovery import discard_source

MANIFEST = "_postmortem.json"
_TABLE_NAME = lazy_re(r"[a-z_]+")
#: present while an export is written (and after one that was interrupted): not an export yet
UNFINISHED = "_postmortem.unfinished"
BASE_TABLES = ("sources", "parse_issues", *(r.TABLE for r in RECORD_TYPES))
BATCH_ROWS = 200_000


@dataclass
class ExportResult:
    directory: Path
    tables: dict[str, int] = field(default_factory=dict)
    #: the store's only host, given to its host-less rows (None: it names none, or several)
    host: str | None = None


def _date_expr(cols: set[str]) -> str:
    """A row's day: its own time; else its OOM record's (a kill's task table), its incident's
    (recommendations), else its source's first time."""
    for c in ("ts", "start_ts", "boot_ts", "first_ts"):
        if c in cols:
            return f"CAST(t.{c} AS DATE)"
    if "oom_id" in cols:
        return "CAST((SELECT min(k.ts) FROM oom_kills k WHERE k.oom_id = t.oom_id) AS DATE)"
    if "incident_id" in cols:
        return "CAST((SELECT i.ts FROM incidents i WHERE i.incident_id = t.incident_id) AS DATE)"
    if "source_id" in cols:
        return "CAST((SELECT s.first_ts FROM sources s WHERE s.source_id = t.source_id) AS DATE)"
    return "NULL::DATE"


def _literal(value: str | None) -> str:
    return "NULL::VARCHAR" if value is None else "'" + value.replace("'", "''") + "'"


def _host_expr(cols: set[str], sole: str | None = None) -> str:
    """A row's host, for a table without its own: its incident's, its OOM record's, else its
    source's, else the store's only host (NULL when none says)."""
    if "host" in cols:
        return ""
    found = []
    if "incident_id" in cols:
        found.append("(SELECT i.host FROM incidents i WHERE i.incident_id = t.incident_id)")
    if "oom_id" in cols:
        found.append("(SELECT max(k.host) FROM oom_kills k WHERE k.oom_id = t.oom_id)")
    if "source_id" in cols:
        found.append("(SELECT s.host FROM sources s WHERE s.source_id = t.source_id)")
    return f", coalesce({', '.join([*found, _literal(sole)])}) AS host"


#: text that may hold a secret: a cheap vectorised pre-filter, the Redactor decides
_MAYBE_SECRET = (
    r"(?i)(pass|secret|token|key|auth|cookie|bearer|://|-----begin|hf_|sk-|[spr]k_|gh[pousr]_|"
    r"github_pat|glpat|aiza|xox|eyj|akia|asia|login)"
)


def _redact_column(col: Any, clean: Any) -> Any:
    """A text column (an Arrow array) with the secrets of its matching values masked."""
    hit: Any = pc.fill_null(pc.match_substring_regex(col, _MAYBE_SECRET), False)
    if not pc.any(hit).as_py():
        return col
    marks = hit.to_pylist()
    values = col.to_pylist()
    return pa.array([clean(v) if m else v for v, m in zip(values, marks, strict=True)], type=col.type)


def _redacted(reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """``reader`` with the secrets in its text columns masked, batch by batch."""
    from .report.redact import Redactor

    clean = Redactor()
    schema = reader.schema
    text = [pa.types.is_string(f.type) or pa.types.is_large_string(f.type) for f in schema]

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            cols = [_redact_column(c, clean) if t else c for c, t in zip(batch.columns, text, strict=True)]
            yield pa.RecordBatch.from_arrays(cols, schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


def export_parquet(store: Store, directory: Path, *, redact: bool = True) -> ExportResult:
    """Write the store under ``directory``: a new or empty directory, or an earlier export,
    whose table directories are replaced (rows of days no longer in the store included).
    ``redact``: secrets in text columns masked as in the reports (the default)."""
    manifest, unfinished_marker = directory / MANIFEST, directory / UNFINISHED
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory}: not a directory; export into a new or empty directory")
    if (
        directory.is_dir()
        and any(directory.iterdir())
        and not manifest.is_file()
        and not unfinished_marker.is_file()  # an export of ours that did not finish: replaced
    ):
        names = {p.name for p in directory.iterdir()}
        if names <= set(store.table_names()):  # only table directories: an export cut short
            raise InputError(
                f"{directory}: an export that did not finish (its table directories, no {MANIFEST}); "
                "remove it and export again"
            )
        raise InputError(
            f"{directory}: not empty and not a postmortem export (no {MANIFEST}); export into a "
            "new or empty directory"
        )
    unfinished = store.interrupted()
    if unfinished:
        # its partial rows would reach every store the export is merged into
        raise StoreError(
            f"{store.path}: the load of {unfinished[0]} was interrupted and its partial rows are still "
            "in the store; run 'postmortem ingest' or 'build' once (it removes them), then export"
        )
    directory.mkdir(parents=True, exist_ok=True)
    # from here until the new manifest is in place the directory is not an export: a merge
    # refuses it (an earlier manifest left beside half-rewritten tables was merged as complete)
    write_atomic(  # a link planted under the marker's name is replaced, not written through
        unfinished_marker, "postmortem export under way, or interrupted: export again into this directory\n"
    )
    manifest.unlink(missing_ok=True)
    result = ExportResult(directory)
    source_rows: dict[str, dict[str, int]] = {}
    sole = result.host = sole_host(store)
    for table in store.table_names():
        if table == "schema_migrations":
            continue
        cols = {c for c, _ in store.columns(table)}
        star = (
            f"t.* REPLACE (coalesce(t.host, {_literal(sole)}) AS host)" if "host" in cols and sole else "t.*"
        )
        sql = f"SELECT {star}{_host_expr(cols, sole)}, {_date_expr(cols)} AS date FROM {ident(table)} t"  # noqa: S608 - catalog names
        rel = store.con.sql(sql)
        # DuckDB 2.x: Relation.to_arrow_reader; 1.x: Relation.fetch_arrow_reader
        make_reader = getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader
        reader = make_reader(BATCH_ROWS)
        if redact:
            reader = _redacted(reader)
        target = directory / table
        if target.is_dir():
            shutil.rmtree(target)  # an earlier export's partitions: days since dropped would stay
        ds.write_dataset(
            reader,
            target,
            format="parquet",
            partitioning=["host", "date"],
            partitioning_flavor="hive",
            existing_data_behavior="delete_matching",
            basename_template="part-{i}.parquet",
        )
        result.tables[table] = store.count(table)
        if table in BASE_TABLES:
            sql = f"SELECT source_id, count(*) FROM {ident(table)} GROUP BY source_id ORDER BY source_id"  # noqa: S608
            source_rows[table] = {str(sid): int(n) for sid, n in store.fetchall(sql)}
    text = json.dumps(
        {
            "schema_version": store.version(),
            "exported_at": datetime.now(UTC).isoformat(),
            "tables": result.tables,
            # what a merge checks each source's rows against (the tables it merges)
            "source_rows": source_rows,
        },
        indent=2,
    )
    write_atomic(manifest, text + "\n")  # whole or not at all
    unfinished_marker.unlink(missing_ok=True)
    return result


@dataclass
class MergeResult:
    sources_added: int = 0
    sources_skipped: int = 0
    sources_replaced: int = 0  # of those added: a later version of a file merged before
    sources_unfinished: int = 0  # interrupted loads in the export: never merged
    sources_same_content: int = 0  # of those added: the same content as another host's source
    sources_hostless: int = 0  # of those added: no host known (the export names several, or none)
    sources_given_host: int = 0  # of those present: stored without a host, given the export's
    #: the export's only host, given to its rows without one (an older postmortem's export)
    host_given: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the store holds anything new ('build' then has something to recompute)."""
        return bool(self.sources_added or self.sources_given_host)

    rows: dict[str, int] = field(default_factory=dict)


def describe_merge(directory: str, merged: MergeResult) -> str:
    """The one line a merge prints."""
    added = []
    if merged.sources_replaced:
        added.append(f"{merged.sources_replaced} replacing an earlier version")
    if merged.sources_same_content:
        added.append(f"{merged.sources_same_content} with the same content as another host's source")
    line = f"{directory}: {merged.sources_added} sources merged"
    line += f" ({', '.join(added)})" if added else ""
    line += f", {merged.sources_skipped} already present"
    if merged.sources_given_host:
        line += f" ({merged.sources_given_host} given their host, stored without one)"
    if merged.sources_unfinished:
        line += f", {merged.sources_unfinished} left out (interrupted loads)"
    line += f"; {sum(merged.rows.values())} rows"
    if merged.host_given:
        line += f"; rows without a host given to {merged.host_given}, the only host the export names"
    if merged.sources_hostless:
        line += (
            f"; {merged.sources_hostless} sources without a host (the export names several hosts, "
            "or none; a later export of their host gives it)"
        )
    return line + (" (run 'postmortem build' to recompute incidents)" if merged.changed else "")


def _dataset(directory: Path, table: str) -> ds.Dataset | None:
    """A table's files; None when it has none (no directory, or only empty partitions left)."""
    path = directory / table
    if not path.is_dir():
        return None
    part = ds.partitioning(pa.schema([("host", pa.string()), ("date", pa.string())]), flavor="hive")
    dset = ds.dataset(path, format="parquet", partitioning=part)
    return dset if "source_id" in dset.schema.names else None


def _read_manifest(directory: Path) -> _Listed:
    """An export directory's manifest, checked (the rows it lists are returned)."""
    if not directory.exists():
        raise InputError(f"{directory}: no such directory")
    if not directory.is_dir():
        raise InputError(
            f"{directory}: not a directory (give the directory 'postmortem export --parquet' wrote)"
        )
    manifest = directory / MANIFEST
    if not manifest.is_file():
        if (directory / UNFINISHED).is_file() or _only_table_directories(directory):
            raise InputError(
                f"{directory}: an export that did not finish (no {MANIFEST}: interrupted, or still "
                "being written); export it again"
            )
        raise InputError(f"{directory}: not a postmortem Parquet export (no {MANIFEST})")
    try:
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        version = int(meta["schema_version"])
        listed = _listed_rows(meta)
    except (ValueError, TypeError, KeyError, OverflowError, AttributeError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {exc}"
        raise InputError(f"{manifest}: not a readable export manifest ({why})") from None
    if version > latest_version():
        raise StoreError(f"{directory}: exported by a newer postmortem (schema version {version}); upgrade")
    return listed


def merge_parquet(store: Store, directory: Path) -> MergeResult:
    """Merge an export made by :func:`export_parquet` (from this or another machine)."""
    listed = _read_manifest(directory)
    try:
        return _merge(store, directory, listed)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{directory}: a damaged export ({str(exc).splitlines()[0]})") from None


def merge_into(db: str | Path, directory: Path, *, wait: float = 0.0) -> MergeResult:
    """Merge an export into the store at ``db``. The directory is checked first: a wrong path
    is refused without opening (or creating) the store."""
    _read_manifest(directory)
    store = Store.open(db, wait=wait)
    try:
        return merge_parquet(store, directory)
    finally:
        store.close()


def _only_table_directories(directory: Path) -> bool:
    """Table directories, partitioned by host, and nothing else: what an export killed before
    its manifest leaves."""
    try:
        entries = list(directory.iterdir())
        return bool(entries) and all(
            e.is_dir()
            and _TABLE_NAME.fullmatch(e.name)
            and all(c.name.startswith("host=") for c in e.iterdir())
            for e in entries
        )
    except OSError:
        return False


@dataclass
class _Listed:
    """The rows a manifest lists: per table, and (exports since per-source counts) per source."""

    tables: dict[str, int]
    sources: dict[str, dict[str, int]] | None


def _listed_rows(meta: dict[str, object]) -> _Listed:
    tables = meta["tables"]
    if not isinstance(tables, dict):
        raise TypeError("'tables' is not an object")
    per_source = meta.get("source_rows")
    if per_source is not None and not isinstance(per_source, dict):
        raise TypeError("'source_rows' is not an object")
    return _Listed(
        {str(t): int(n) for t, n in tables.items()},
        None
        if per_source is None
        else {str(t): {str(k): int(v) for k, v in counts.items()} for t, counts in per_source.items()},
    )


@dataclass
class _Scan:
    """What an export's merged tables hold: rows per table and source id, and the hosts each
    source's rows are filed under (their ``host=`` partitions; NULL ones left out)."""

    rows: dict[str, dict[str, int]] = field(default_factory=dict)
    hosts: dict[str, set[str]] = field(default_factory=dict)

    def host_of(self, source_id: object) -> str | None:
        """The host a source's rows name, when they name exactly one."""
        named = self.hosts.get(str(source_id), set())
        return next(iter(named)) if len(named) == 1 else None

    def only_host(self) -> str | None:
        """The host the export names, when it names exactly one (a per-host store's export)."""
        named = set().union(*self.hosts.values()) if self.hosts else set()
        return next(iter(named)) if len(named) == 1 else None


@contextlib.contextmanager
def _reading(directory: Path, table: str) -> Iterator[None]:
    """Arrow's word for a damaged file names neither the table nor the file: the table is added."""
    try:
        yield
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{directory / table}: a damaged export table ({str(exc).splitlines()[0]}); export it again"
        ) from None


def _scan(directory: Path) -> _Scan:
    """Read the source id column of every merged table, partition by partition."""
    scan = _Scan()
    for table in BASE_TABLES:
        with _reading(directory, table):
            _scan_table(directory, table, scan)
    return scan


def _scan_table(directory: Path, table: str, scan: _Scan) -> None:
    dset = _dataset(directory, table)
    if dset is None:
        return
    counts = scan.rows.setdefault(table, {})
    for fragment in dset.get_fragments():
        host = ds.get_partition_keys(fragment.partition_expression).get("host")
        found = pc.value_counts(fragment.to_table(columns=["source_id"]).column(0))
        for sid, n in zip(found.field("values").to_pylist(), found.field("counts").to_pylist(), strict=True):
            counts[str(sid)] = counts.get(str(sid), 0) + int(n or 0)
            if host is not None:
                scan.hosts.setdefault(str(sid), set()).add(str(host))


def _check_rows(directory: Path, listed: _Listed, scan: _Scan) -> None:
    """Every merged table holds the rows the manifest lists (per source when it lists them):
    a table or partition missing, or a file cut short, is refused before anything is merged —
    merged, its sources would count as present and a complete copy could never add their rows."""
    for table in BASE_TABLES:
        want = listed.tables.get(table)
        if want is None:
            continue  # a table the exporting version did not have
        counts = scan.rows.get(table)
        if counts is None:
            if want:
                raise InputError(
                    f"{directory}: an incomplete export: {table} is missing ({want} rows listed in "
                    f"{MANIFEST}); nothing merged — copy or export it again"
                )
            continue
        have = sum(counts.values())
        if have != want:
            raise InputError(
                f"{directory}: an incomplete export: {table} holds {have} rows, {MANIFEST} lists "
                f"{want} (a partition or file missing or cut short?); nothing merged — copy or "
                "export it again"
            )
        per_source = listed.sources.get(table) if listed.sources is not None else None
        if per_source is None:
            continue
        for sid in sorted(set(counts) | set(per_source), key=str):
            if counts.get(sid, 0) != per_source.get(sid, 0):
                raise InputError(
                    f"{directory}: an incomplete export: {table} holds {counts.get(sid, 0)} rows of "
                    f"source {sid}, {MANIFEST} lists {per_source.get(sid, 0)}; nothing merged — copy "
                    "or export it again"
                )


@dataclass(frozen=True)
class _Copy:
    """A stored source with the content of an exported one."""

    source_id: int
    #: the hosts it belongs to: the one given for it, else the one its rows name, else the
    #: store's only host (what 'export' files it under); none: unknown
    hosts: frozenset[str]
    #: whether sources.host says so (else it is inferred, and a merge may write it down)
    given: bool


def _stored_copies(store: Store, shas: set[str]) -> dict[str, list[_Copy]]:
    """The store's complete sources with one of these contents, each with its hosts."""
    copies: dict[str, list[_Copy]] = {}
    unnamed: list[int] = []
    for sid, sha, host in store.fetchall(
        "SELECT source_id, sha256, host FROM sources WHERE status = 'complete' ORDER BY source_id"
    ):
        if sha not in shas:
            continue
        hosts = frozenset([str(host)] if host is not None else [])
        copies.setdefault(str(sha), []).append(_Copy(int(sid), hosts, host is not None))
        if host is None:
            unnamed.append(int(sid))
    if not unnamed:
        return copies
    named: dict[int, set[str]] = {}
    for table in BASE_TABLES[1:]:
        if "host" not in {c for c, _ in store.columns(table)}:
            continue
        sql = (
            f"SELECT DISTINCT source_id, host FROM {ident(table)} "  # noqa: S608 - catalog names
            "WHERE host IS NOT NULL AND list_contains(?, source_id) ORDER BY ALL"
        )
        for sid, host in store.fetchall(sql, [unnamed]):
            named.setdefault(int(sid), set()).add(str(host))
    # a source whose rows name no host either: the store's only host, when it names one
    sole = None if set(unnamed) <= set(named) else sole_host(store)
    rest = frozenset([sole] if sole is not None else [])
    return {
        sha: [
            c if c.given else _Copy(c.source_id, frozenset(named.get(c.source_id, ())) or rest, False)
            for c in found
        ]
        for sha, found in copies.items()
    }


def _give_host(store: Store, source_id: int, host: str) -> None:
    """A stored source without a host, and its rows without one, become ``host``'s."""
    materialize(store, [source_id])  # rows in Parquet parts are never updated in place
    for table in BASE_TABLES:
        if "host" in {c for c, _ in store.columns(table)}:
            store.execute(
                f"UPDATE {native(store, table)} SET host = ? WHERE source_id = ? AND host IS NULL",  # noqa: S608
                [host, source_id],
            )


@dataclass(frozen=True)
class _Remap:
    """How a merged row's ids change: export source ids to new ones, host-less rows filled."""

    old_ids: pa.Array[Any]
    new_ids: pa.Array[Any]
    fill_hosts: pa.Array[Any]
    fill: bool

    def table(self, batch: pa.RecordBatch, cols: list[str]) -> pa.Table:
        """The batch with its new source ids (and OOM ids), filled hosts, and ``cols`` only."""
        tbl = pa.Table.from_batches([batch])
        idx = pc.index_in(tbl["source_id"], value_set=self.old_ids)
        new_sid = pc.take(self.new_ids, idx)
        if "oom_id" in cols:
            low = pc.bit_wise_and(tbl["oom_id"], pa.scalar(0xFFFFFFFF, pa.int64()))
            high = pc.shift_left(pc.cast(new_sid, pa.int64()), pa.scalar(32, pa.int64()))
            tbl = tbl.set_column(tbl.column_names.index("oom_id"), "oom_id", pc.bit_wise_or(high, low))
        tbl = tbl.set_column(tbl.column_names.index("source_id"), "source_id", new_sid)
        if self.fill and "host" in cols:
            hosts = cast("pa.ChunkedArray[Any]", pc.coalesce(tbl["host"], pc.take(self.fill_hosts, idx)))
            tbl = tbl.set_column(tbl.column_names.index("host"), "host", hosts)
        return tbl.select([c for c in cols if c in tbl.column_names])


def _copy_table(store: Store, directory: Path, table: str, remap: _Remap) -> int | None:
    """Insert the export's rows of ``table`` for the merged sources; how many (None: no such table)."""
    dset = _dataset(directory, table)
    if dset is None:
        return None
    cols = [c for c, _ in store.columns(table)]
    n = 0
    for batch in dset.to_batches(filter=pc.is_in(pc.field("source_id"), value_set=remap.old_ids)):
        if batch.num_rows == 0:
            continue
        tbl = remap.table(batch, cols)
        store.con.register("_pm_merge", tbl)
        try:
            collist = ", ".join(ident(c) for c in tbl.column_names)
            store.con.execute(
                f"INSERT INTO {native(store, table)} ({collist}) SELECT {collist} FROM _pm_merge"  # noqa: S608
            )
        finally:
            store.con.unregister("_pm_merge")
        n += tbl.num_rows
    return n


def _stored_match(found: list[_Copy], host: str | None, adopted: set[int]) -> _Copy | None:
    """The stored copy that is this export's source of ``host``, if any."""
    same = next((c for c in found if host in c.hosts), None)
    if host is not None and same is None:
        # stored without a host (merged from an older export, or from a store of
        # several hosts): the same file, and this export says whose it is
        same = next((c for c in found if not c.hosts and c.source_id not in adopted), None)
    return same


def _export_sources(directory: Path) -> pa.Table:
    """The export's sources table, checked: every row has a source id, and each id once."""
    src = _dataset(directory, "sources")
    if src is None:
        raise InputError(f"{directory}: the export has no sources table")
    sources = src.to_table()
    ids = [s for s in sources["source_id"].to_pylist() if s is not None]
    if len(ids) != sources.num_rows:
        raise InputError(f"{directory}: the export's sources table has rows without a source id (damaged?)")
    if len(ids) != len(set(ids)):
        twice = sorted({s for s in ids if ids.count(s) > 1})
        raise InputError(
            f"{directory}: the export holds source id {twice[0]} more than once (files left from "
            "another export?); export again into an empty directory"
        )
    return sources


def _merge(store: Store, directory: Path, listed: _Listed) -> MergeResult:
    sources = _export_sources(directory)
    scan = _scan(directory)
    _check_rows(directory, listed, scan)
    # a file is the same source when its content and its host are: the same bytes on two hosts
    # (identical nodes started together) are two sources, one of each host
    copies = _stored_copies(store, {str(sha) for sha in sources["sha256"].to_pylist()})
    added: set[tuple[str, str | None]] = set()
    # an export by an older postmortem left a per-host store's server, nvidia-smi and dmesg
    # rows without a host (as 'export' now fills them): the export's only host is theirs
    only = scan.only_host()
    fill: dict[int, str] = {}  # export source id -> the host its host-less rows get
    adopted: set[int] = set()
    # the same file of the same host, merged before at an earlier size: replaced by a later export
    same_file = {
        (str(path), str(host)): (int(sid), at)
        for sid, path, host, at in store.fetchall(
            "SELECT source_id, path, host, ingested_at FROM sources WHERE status = 'complete' "
            "AND host IS NOT NULL ORDER BY source_id"
        )
    }
    result = MergeResult()
    mapping: dict[int, int] = {}
    statuses = (
        sources["status"].to_pylist() if "status" in sources.column_names else ["complete"] * sources.num_rows
    )
    with store.transaction():
        for sid, sha, path, host, at, status in zip(
            sources["source_id"].to_pylist(),
            sources["sha256"].to_pylist(),
            sources["path"].to_pylist(),
            sources["host"].to_pylist(),
            sources["ingested_at"].to_pylist(),
            statuses,
            strict=True,
        ):
            if status != "complete":
                # an interrupted load in an export (older versions exported it): its rows are
                # partial, and never merged
                result.sources_unfinished += 1
                continue
            exported_host = host
            host = host if host is not None else scan.host_of(sid) or only
            found = copies.get(str(sha), [])
            if sid is None or (str(sha), host) in added:
                result.sources_skipped += 1
                continue
            if host is None and found:  # a copy whose host is unknown: the stored one
                result.sources_skipped += 1
                continue
            same = _stored_match(found, host, adopted)
            if same is not None:
                result.sources_skipped += 1
                if host is not None and not same.given and same.source_id not in adopted:
                    _give_host(store, same.source_id, host)
                    adopted.add(same.source_id)
                    result.sources_given_host += 1
                continue
            earlier = same_file.get((str(path), str(host))) if host is not None else None
            if earlier is not None:
                if at is not None and earlier[1] is not None and at <= earlier[1]:
                    result.sources_skipped += 1  # this store holds a later version of the file
                    continue
                discard_source(store, earlier[0], None)
                result.sources_replaced += 1
            if found:
                result.sources_same_content += 1  # stored for another host: this one is its own
            row = store.con.execute("SELECT nextval('source_id_seq')").fetchall()[0]
            mapping[int(sid)] = int(row[0])
            added.add((str(sha), host))
            if exported_host is None and only is not None:
                fill[int(sid)] = only
            if host is None:
                result.sources_hostless += 1
        result.sources_added = len(mapping)
        result.host_given = only if fill else None
        if not mapping:
            return result
        old_ids = pa.array(list(mapping), pa.int32())
        new_ids = pa.array(list(mapping.values()), pa.int32())
        fill_hosts = pa.array([fill.get(sid) for sid in mapping], pa.string())
        for table in BASE_TABLES:
            with _reading(directory, table):
                rows = _copy_table(store, directory, table, _Remap(old_ids, new_ids, fill_hosts, bool(fill)))
                if rows is not None:
                    result.rows[table] = rows
    return result
