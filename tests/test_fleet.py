"""Fleet workflow: export a store as hive-partitioned Parquet, merge it into another store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
from conftest import REPO

from postmortem.store.db import Store

SAMPLE = REPO / "sample_logs"


def test_export_merge_round_trip(cli: Any, tmp_path: Path) -> None:
    a = tmp_path / "host-a.duckdb"
    assert cli("build", "--logs", SAMPLE, "--db", a, "--out", tmp_path / "ra", "--tz", "UTC").code == 0
    exp = tmp_path / "export"
    r = cli("export", "--parquet", exp, "--db", a)
    assert r.code == 0, r
    # any engine reads it as is: host=…/date=… partitions
    assert (exp / "oom_kills" / "host=dflash-train").is_dir()
    con = duckdb.connect()
    n = con.execute(
        "SELECT count(*) FROM read_parquet(?, hive_partitioning = true) WHERE host = 'dflash-train'",
        [str(exp / "journal_entries" / "**" / "*.parquet")],
    ).fetchone()
    assert n is not None and n[0] == 319
    fleet = tmp_path / "fleet.duckdb"
    first = cli("ingest", "--from-parquet", exp, "--db", fleet)
    assert first.out.startswith(f"{exp}: 7 sources merged, 0 already present")
    again = cli("ingest", "--from-parquet", exp, "--db", fleet)
    assert again.out.startswith(f"{exp}: 0 sources merged, 7 already present; 0 rows")
    src, dst = Store.open_readonly(a), Store.open_readonly(fleet)
    for table in (
        "journal_entries",
        "kernel_messages",
        "oom_kills",
        "oom_tasks",
        "sglang_batches",
        "gpu_samples",
    ):
        assert dst.count(table) == src.count(table), table
    # oom_tasks still join their kill after the source ids were renumbered
    joined = dst.fetchall("SELECT count(*) FROM oom_tasks t JOIN oom_kills k USING (oom_id)")[0][0]
    assert (
        joined == src.fetchall("SELECT count(*) FROM oom_tasks t JOIN oom_kills k USING (oom_id)")[0][0] > 0
    )
    src.close()
    dst.close()
    empty = tmp_path / "none"
    empty.mkdir()
    (empty / "dmesg.txt").write_text("[    0.000000] Linux version 6.8.0\n")
    b = cli("build", "--logs", empty, "--db", fleet, "--out", tmp_path / "rb", "--tz", "UTC")
    assert b.code == 0 and "1 incident(s)" in b.out


def test_merge_refuses_a_directory_that_is_not_an_export(cli: Any, tmp_path: Path) -> None:
    r = cli("ingest", "--from-parquet", tmp_path, "--db", tmp_path / "x.duckdb")
    assert r.code == 1
    assert r.err == f"Error: {tmp_path}: not a postmortem Parquet export (no _postmortem.json)\n"
