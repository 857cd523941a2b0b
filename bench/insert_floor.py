#!/usr/bin/env python3
"""How fast can DuckDB take the rows at all? The floor under any ingest speed.

Ingests a generated short-iso journal (default 1M lines) with postmortem, reads every table
back as Arrow, then appends those ready-made tables into a fresh store with the same schema the
way the loader does (one row group per insert, one transaction) and reports the CPU seconds of
the appends alone — no parsing — with the schema's compression and with compression off.

Usage: ``python bench/insert_floor.py [--lines N] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import duckdb  # noqa: E402
import pyarrow as pa  # noqa: E402
from run import _fresh, gen_journal  # noqa: E402 - the bench's own generator

from postmortem.store.loader import ROW_GROUP  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, default=HERE / "out")
    args = ap.parse_args()
    work: Path = args.keep
    work.mkdir(parents=True, exist_ok=True)
    journal = work / f"journal-{args.lines}.log"
    if not (work / f"journal-{args.lines}.log.done").exists():
        gen_journal(journal, args.lines)
        (work / f"journal-{args.lines}.log.done").touch()
    source = work / "floor-source.duckdb"
    _fresh(source)
    subprocess.run(
        [sys.executable, "-m", "postmortem", "ingest", str(journal), "--db", str(source)],
        check=True,
        cwd=work,
        stdout=subprocess.DEVNULL,
    )
    con = duckdb.connect(str(source), read_only=True)
    tables: dict[str, pa.Table] = {}
    ddl: dict[str, str] = {}
    for name, sql in con.execute(
        "SELECT table_name, sql FROM duckdb_tables() WHERE schema_name = 'main'"
    ).fetchall():
        n = con.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0]  # noqa: S608
        if n >= 10_000:
            res = con.execute(f'SELECT * EXCLUDE (source_id) FROM "{name}"')  # noqa: S608
            # DuckDB 2.x: to_arrow_table; 1.x: fetch_arrow_table
            data = (getattr(res, "to_arrow_table", None) or res.fetch_arrow_table)()
            tables[name] = pa.Table.from_batches(data.combine_chunks().to_batches(ROW_GROUP))
            ddl[name] = sql
    con.close()
    rows = sum(t.num_rows for t in tables.values())
    print(
        f"{args.lines:,} journal lines → {rows:,} rows: "
        + ", ".join(f"{k} {v.num_rows:,}" for k, v in tables.items())
    )
    for label, setting in (("schema's compression", None), ("compression off", "uncompressed")):
        db = work / "floor.duckdb"
        _fresh(db)
        out = duckdb.connect(str(db))
        out.execute("SET memory_limit = '128MB'")
        out.execute("SET preserve_insertion_order = false")
        if setting:
            out.execute(f"SET force_compression = '{setting}'")
        for sql in ddl.values():
            out.execute(sql)
        wall, before = time.perf_counter(), cpu()
        out.execute("BEGIN TRANSACTION")
        for name, table in tables.items():
            cols = ", ".join(f'"{c}"' for c in table.column_names)
            for batch in table.to_batches():
                out.register("_b", pa.Table.from_batches([batch]))
                out.execute(f'INSERT INTO "{name}" (source_id, {cols}) SELECT 1, {cols} FROM _b')  # noqa: S608
                out.unregister("_b")
        out.execute("COMMIT")
        out.execute("CHECKPOINT")
        spent, wall = cpu() - before, time.perf_counter() - wall
        out.close()
        print(
            f"  appends only, {label}: {spent:.2f} CPU s ({spent / rows * 1e6:.2f} µs a row, "
            f"{wall:.2f} s wall) → at most {args.lines / spent:,.0f} journal lines/s on one core"
        )


if __name__ == "__main__":
    main()
