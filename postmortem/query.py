"""Read-only SQL for users (``postmortem query``) and named queries for the library.

User SQL is the only SQL postmortem runs that it did not write itself. It runs on a read-only
connection with external file access disabled, and only ``SELECT``/``EXPLAIN`` statements
are accepted, so a query cannot change the store or touch other files.

Named queries live in ``postmortem/queries/<name>.sql`` and take parameters only
(``$name`` placeholders); nothing is formatted into their text.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from functools import cache
from importlib import resources
from typing import Any, TextIO, TypeVar, cast

import duckdb

from .errors import QueryError
from .io import escape_controls
from .lazyre import lazy_re
from .store.db import Store
from .store.parts import attach_views, parts_dir

_ALLOWED = {"SELECT", "EXPLAIN"}
T = TypeVar("T")


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]


def run_user_query(store: Store, sql: str) -> QueryResult:
    """Run one user statement read-only; refuse anything that is not a query."""
    cur = _execute_user(store, sql)
    try:
        columns = [d[0] for d in cur.description or []]
        rows = cur.fetchall()
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None  # Ctrl-C landed in the query: exit 130
    except duckdb.Error as exc:
        raise QueryError(f"SQL error: {_first_line(exc)}") from exc
    return QueryResult(columns, rows)


#: rows fetched at a time when a result is written out (DuckDB streams the rest)
STREAM_ROWS = 10_000


def interruptible(con: duckdb.DuckDBPyConnection, work: Callable[[], T]) -> T:
    """``work()`` (DuckDB calls on ``store``) run in a thread while this one waits for it, so
    that Ctrl-C is seen: a DuckDB call holds the main thread in C++ where Python's SIGINT
    handler cannot run until the query ends (an hour-long aggregate ignored Ctrl-C). On
    KeyboardInterrupt the query is interrupted, the thread joined, and KeyboardInterrupt
    raised (exit 130)."""
    import threading

    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="postmortem-query", daemon=True).start()
    try:
        while not done.wait(0.1):
            pass
    except KeyboardInterrupt:
        # (again until the work ends: an interrupt that lands between two of its statements
        # stops neither, and the next may run for an hour)
        con.interrupt()
        while not done.wait(0.1):
            con.interrupt()
        raise
    if "error" in box:
        if isinstance(box["error"], duckdb.InterruptException):
            raise KeyboardInterrupt from None
        raise box["error"]
    return cast(T, box["value"])


def _redacted(rows: list[tuple[Any, ...]], clean: Callable[[str], str]) -> list[tuple[Any, ...]]:
    return [tuple(clean(v) if isinstance(v, str) else v for v in row) for row in rows]


def write_user_query(store: Store, sql: str, fmt: str, out: TextIO, *, redact: bool = True) -> int:
    con = store.con.cursor()  # its own connection: interrupted from this thread while it runs
    try:
        attach_views(Store(con, store.path, read_only=True))  # the bulk tables' views are its own
        return _write_user_query(store, con, sql, fmt, out, redact=redact)
    finally:
        with contextlib.suppress(duckdb.Error):
            con.close()


def _write_user_query(
    store: Store, con: duckdb.DuckDBPyConnection, sql: str, fmt: str, out: TextIO, *, redact: bool
) -> int:
    """Run one user statement read-only and write its result to ``out`` as ``fmt`` (table, csv
    or json) a batch of rows at a time, so memory stays bounded whatever the result's size (the
    same bytes as :data:`FORMATTERS` give for the whole result, but that a table takes its
    column widths from the first batch: a wider value after it is printed whole, out of line).
    Every text value has its secrets masked (``redact``, the default: the same catalogue as
    the reports'). Returns the rows written."""
    from .report.redact import Redactor

    cur = interruptible(con, lambda: _execute_user(store, sql, con))
    columns = [d[0] for d in cur.description or []]
    clean = Redactor()

    def batches() -> Iterator[list[tuple[Any, ...]]]:
        while True:
            try:
                rows = interruptible(con, lambda: cur.fetchmany(STREAM_ROWS))
            except duckdb.InterruptException:
                raise KeyboardInterrupt from None  # Ctrl-C landed in the query: exit 130
            except duckdb.Error as exc:
                raise QueryError(f"SQL error: {_first_line(exc)}") from exc
            if not rows:
                return
            yield _redacted(rows, clean) if redact else rows

    n = 0
    if fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(columns)
        for rows in batches():
            w.writerows(_csv_row(row) for row in rows)
            n += len(rows)
    elif fmt == "json":
        out.write("[")
        for rows in batches():
            for row in rows:
                out.write(", " if n else "")
                out.write(_json_row(columns, row))
                n += 1
        out.write("]")
    else:
        widths: list[int] | None = None
        for rows in batches():
            if widths is None:
                first = QueryResult(columns, rows)
                text = format_table(first)
                out.write(text[: text.rindex("(")])  # all but the row count
                widths = _table_widths(first)
            else:
                for row in rows:
                    out.write(_table_row([_table_cell(v) for v in row], widths))
            n += len(rows)
        if widths is None:
            out.write(format_table(QueryResult(columns, []))[: -len("(0 rows)\n")])
        out.write(f"({n} row{'s' if n != 1 else ''})\n")
    return n


def _execute_user(
    store: Store, sql: str, con: duckdb.DuckDBPyConnection | None = None
) -> duckdb.DuckDBPyConnection:
    """Check that ``sql`` is one query and start it on the read-only connection (or ``con``,
    a cursor of it)."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None  # Ctrl-C landed in the query: exit 130
    except duckdb.Error as exc:
        raise QueryError(f"SQL error: {_first_line(exc)}") from exc
    if not statements:
        raise QueryError("no SQL statement given")
    if len(statements) > 1:
        raise QueryError("give one statement at a time")
    kind = statements[0].type.name
    if kind not in _ALLOWED:
        raise QueryError(f"only SELECT queries are allowed here (got {kind}); the store is read-only")
    try:
        where = parts_dir(store)
        if where is not None:  # the store's own parts stay readable (through the bulk tables' views)
            store.con.execute("SET allowed_directories = ?", [[f"{where}/"]])
        store.con.execute("SET enable_external_access = false")
        store.con.execute("SET lock_configuration = true")
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    except duckdb.Error:
        pass
    try:
        return (con or store.con).execute(sql)
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None  # Ctrl-C landed in the query: exit 130
    except duckdb.Error as exc:
        raise QueryError(f"SQL error: {_first_line(exc)}") from exc


_HINTS = ("Did you mean", "Candidate bindings")


def _first_line(exc: BaseException) -> str:
    """DuckDB's message on one line, with its hints kept (``Did you mean "oom_kills"?``,
    ``Candidate bindings: …``) and the caret drawing dropped.

    >>> _first_line(RuntimeError('Catalog Error: Table x does not exist!\\nDid you mean "y"?'
    ...                          '\\n\\nLINE 1: select * from x\\n   ^'))
    'Catalog Error: Table x does not exist! Did you mean "y"?'
    """
    lines = [line.strip() for line in str(exc).strip().splitlines()]
    if not lines or not lines[0]:
        return type(exc).__name__
    hints = [line for line in lines[1:] if line.startswith(_HINTS)]
    return " ".join([lines[0], *hints])


@cache
def named_sql(name: str) -> str:
    """The text of ``postmortem/queries/<name>.sql``."""
    path = resources.files("postmortem.queries").joinpath(f"{name}.sql")
    if not path.is_file():
        raise KeyError(f"no named query {name!r}")
    return path.read_text(encoding="utf-8")


def named_query_names() -> list[str]:
    base = resources.files("postmortem.queries")
    return sorted(p.name[:-4] for p in base.iterdir() if p.name.endswith(".sql"))


def run_named(store: Store, name: str, params: dict[str, Any] | Sequence[Any] | None = None) -> QueryResult:
    cur = store.con.execute(named_sql(name), params) if params else store.con.execute(named_sql(name))
    columns = [d[0] for d in cur.description or []]
    return QueryResult(columns, cur.fetchall())


def run_named_dicts(
    store: Store, name: str, params: dict[str, Any] | Sequence[Any] | None = None
) -> list[dict[str, Any]]:
    res = run_named(store, name, params)
    return [dict(zip(res.columns, row, strict=True)) for row in res.rows]


def sole_host(store: Store) -> str | None:
    """The host the store's ingested rows name, when they name exactly one (a per-host store).
    Its rows no host is known for — a server's log, an nvidia-smi loop, a dmesg file ingested
    without ``--host`` — are that host's: ``build`` gives its incidents and loads that host, and
    ``export`` files those rows under it, so a per-host store and a fleet store it is merged
    into say the same."""
    rows = run_named(store, "store_hosts").rows
    return str(rows[0][0]) if len(rows) == 1 else None


# ------------------------------------------------------------------ output


def json_value(value: Any) -> Any:
    """JSON-friendly value: timestamps as ISO-8601 in UTC, decimals as floats, infinities and
    NaN as the strings ``"inf"``, ``"-inf"``, ``"nan"`` (JSON has no such numbers), UUIDs and
    other types as their text."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            from datetime import UTC

            value = value.astimezone(UTC)
            return value.isoformat().replace("+00:00", "Z")
        return value.isoformat()
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)  # UUID and anything else DuckDB hands back


def format_json(result: QueryResult) -> str:
    return "[" + ", ".join(_json_row(result.columns, row) for row in result.rows) + "]"


#: characters JSON may carry raw but a terminal or a reader must not see raw (C1 controls and
#: bidirectional overrides; C0 ones JSON escapes itself)
_JSON_UNSAFE = lazy_re("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe_json(text: str) -> str:
    """JSON text with the characters above written as ``\\uNNNN`` escapes (the same JSON)."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def _json_row(columns: list[str], row: tuple[Any, ...]) -> str:
    obj = {c: json_value(v) for c, v in zip(columns, row, strict=True)}
    return safe_json(json.dumps(obj, ensure_ascii=False, indent=None, allow_nan=False))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    v = json_value(value)
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def _csv_row(row: Sequence[Any]) -> list[str]:
    # a newline is quoted CSV; every other control character would drive the terminal
    return [escape_controls(_cell(v), keep="\n") for v in row]


def format_csv(result: QueryResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(result.columns)
    w.writerows(_csv_row(row) for row in result.rows)
    return buf.getvalue()


def _table_cell(value: Any, max_width: int = 60) -> str:
    """A value as one table cell: newlines as ``\\n``, other control characters as ``\\xNN``
    (log text may hold escape sequences, which would drive the terminal), cut at ``max_width``."""
    c = escape_controls(_cell(value).replace("\n", "\\n"))
    return c if len(c) <= max_width else c[: max_width - 1] + "…"


def _table_widths(result: QueryResult, max_width: int = 60) -> list[int]:
    widths = [len(c) for c in result.columns]
    for row in result.rows:
        for i, v in enumerate(row):
            widths[i] = max(widths[i], len(_table_cell(v, max_width)))
    return widths


def _table_row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() + "\n"


def format_table(result: QueryResult, max_width: int = 60) -> str:
    """A plain aligned text table (stable output for scripts and tests)."""
    widths = _table_widths(result, max_width)
    out = [_table_row(result.columns, widths), "  ".join("-" * w for w in widths) + "\n"]
    out += [_table_row([_table_cell(v, max_width) for v in row], widths) for row in result.rows]
    out.append(f"({len(result.rows)} row{'s' if len(result.rows) != 1 else ''})\n")
    return "".join(out)


FORMATTERS = {"table": format_table, "csv": format_csv, "json": format_json}
