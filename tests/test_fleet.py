"""Fleet workflow: export a store as hive-partitioned Parquet, merge it into another store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
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
    # rows without a time or host of their own sit with their kill's day, their incident's host
    parts = con.execute(
        "SELECT DISTINCT host, date FROM read_parquet(?, hive_partitioning = true) ORDER BY host",
        [str(exp / "oom_tasks" / "**" / "*.parquet")],
    ).fetchall()
    # dmesg names no host, nor does an SGLang log: the store names one, dflash-train, so theirs
    assert [(h, str(d)) for h, d in parts] == [("dflash-train", "2025-05-25")]
    for table in ("server_stats", "gpu_samples", "sources"):
        got = con.execute(
            "SELECT DISTINCT host FROM read_parquet(?, hive_partitioning = true)",
            [str(exp / table / "**" / "*.parquet")],
        ).fetchall()
        assert got == [("dflash-train",)], table
    assert "rows without a host filed under dflash-train" in r.out
    hosts = con.execute(
        "SELECT DISTINCT host FROM read_parquet(?, hive_partitioning = true)",
        [str(exp / "recommendations" / "**" / "*.parquet")],
    ).fetchall()
    assert hosts == [("dflash-train",)]
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
        "server_stats",
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


def _day(path: Path, day: int, first: int, count: int) -> None:
    with path.open("a", encoding="utf-8") as fh:
        for i in range(first, first + count):
            fh.write(f"2025-05-{day:02d}T00:{i // 60:02d}:{i % 60:02d}+00:00 gpu-a kernel: line {i}\n")


def test_export_again_replaces_the_earlier_export(cli: Any, tmp_path: Path) -> None:
    """Exporting into the same directory after the store changed leaves no rows of the earlier
    export (its partitions of days no longer held stayed, and the merge then failed on a
    source id held twice)."""
    a, exp, log = tmp_path / "a.duckdb", tmp_path / "export", tmp_path / "j.log"
    _day(log, 25, 0, 30)
    assert cli("ingest", log, "--db", a, "--host", "gpu-a").code == 0
    assert cli("export", "--parquet", exp, "--db", a).code == 0
    log.write_text("")
    _day(log, 26, 0, 10)  # copytruncate: the next day's lines
    assert cli("ingest", log, "--db", a, "--host", "gpu-a").code == 0
    assert cli("export", "--parquet", exp, "--db", a).code == 0
    assert not (exp / "journal_entries" / "host=gpu-a" / "date=2025-05-25").exists()
    fleet = tmp_path / "fleet.duckdb"
    r = cli("ingest", "--from-parquet", exp, "--db", fleet)
    assert r.code == 0, r
    with Store.open(fleet) as store:
        assert store.fetchall("SELECT count(*) FROM journal_entries") == [(10,)]


def test_export_refuses_a_directory_holding_something_else(cli: Any, tmp_path: Path) -> None:
    a = tmp_path / "a.duckdb"
    assert cli("ingest", SAMPLE / "dmesg.txt", "--db", a).code == 0
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"\xff\xd8")
    r = cli("export", "--parquet", other, "--db", a)
    assert r.code == 1
    assert "not empty and not a postmortem export" in r.err
    assert (other / "cat.jpg").exists()
    # a file where the directory should be
    r = cli("export", "--parquet", other / "cat.jpg", "--db", a)
    assert r.code == 1 and "cat.jpg: not a directory; export into a new or empty directory" in r.err, r
    # an export killed before its manifest: table directories only — said so
    cut = tmp_path / "cut"
    (cut / "sources").mkdir(parents=True)
    (cut / "kernel_messages").mkdir()
    r = cli("export", "--parquet", cut, "--db", a)
    assert r.code == 1 and "an export that did not finish" in r.err and "remove it and export again" in r.err


def test_a_later_export_of_a_grown_file_replaces_the_merged_one(cli: Any, tmp_path: Path) -> None:
    """A host's file merged, then grown and exported again: the fleet store holds it once, at
    its new size (the content hash differs, so it looked like a new file)."""
    a, exp, log = tmp_path / "a.duckdb", tmp_path / "export", tmp_path / "j.log"
    fleet = tmp_path / "fleet.duckdb"
    _day(log, 25, 0, 30)
    assert cli("ingest", log, "--db", a, "--host", "gpu-a").code == 0
    assert cli("export", "--parquet", exp, "--db", a).code == 0
    assert cli("ingest", "--from-parquet", exp, "--db", fleet).code == 0
    _day(log, 25, 30, 20)
    assert cli("ingest", log, "--db", a, "--host", "gpu-a").out.startswith(f"{log}: appended")
    assert cli("export", "--parquet", exp, "--db", a).code == 0
    r = cli("ingest", "--from-parquet", exp, "--db", fleet)
    assert r.out.startswith(f"{exp}: 1 sources merged (1 replacing an earlier version), 0 already present"), r
    with Store.open(fleet) as store:
        assert store.fetchall("SELECT count(*), count(DISTINCT line_no) FROM journal_entries") == [(50, 50)]
        assert store.fetchall("SELECT count(*) FROM sources") == [(1,)]
    # the older export merged again changes nothing
    assert cli("ingest", "--from-parquet", exp, "--db", fleet).out.startswith(f"{exp}: 0 sources merged")


def test_merge_refuses_sources_without_an_id(cli: Any, tmp_path: Path) -> None:
    """A damaged export whose sources table lost a source id: refused in one line (the rows of
    that source were silently left out, and the source counted as already present)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    a, exp = tmp_path / "a.duckdb", tmp_path / "export"
    assert cli("ingest", SAMPLE / "dmesg.txt", "--db", a).code == 0
    assert cli("export", "--parquet", exp, "--db", a).code == 0
    (part,) = list((exp / "sources").rglob("*.parquet"))
    table = pq.read_table(part)
    ids = pa.nulls(table.num_rows, table.schema.field("source_id").type)
    pq.write_table(table.set_column(table.column_names.index("source_id"), "source_id", ids), part)
    r = cli("ingest", "--from-parquet", exp, "--db", tmp_path / "fleet.duckdb")
    assert (r.code, r.err) == (
        1,
        f"Error: {exp}: the export's sources table has rows without a source id (damaged?)\n",
    )


def test_a_damaged_table_file_is_named_with_its_table(cli: Any, tmp_path: Path) -> None:
    """A Parquet file of another shape (or garbage) in a table's directory: Arrow's own words
    ('No match for FieldRef.Name(source_id) …') named neither the table nor the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    a, exp = tmp_path / "a.duckdb", tmp_path / "export"
    assert cli("ingest", SAMPLE / "dmesg.txt", "--db", a).code == 0
    assert cli("export", "--parquet", exp, "--db", a).code == 0
    (part,) = list((exp / "kernel_messages").rglob("*.parquet"))
    pq.write_table(pa.table({"x": [1, 2, 3]}), part.with_name("part-99.parquet"))  # another shape
    r = cli("ingest", "--from-parquet", exp, "--db", tmp_path / "fleet.duckdb")
    assert r.code == 1 and r.err.count("\n") == 1, r
    assert r.err.startswith(f"Error: {exp / 'kernel_messages'}: a damaged export table ("), r.err


def test_merge_skips_an_interrupted_load_in_an_export(cli: Any, tmp_path: Path) -> None:
    """An export holding a load a crash left unfinished (older versions exported one): its
    source and partial rows are not merged."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    a, exp = tmp_path / "a.duckdb", tmp_path / "export"
    assert cli("ingest", SAMPLE / "dmesg.txt", SAMPLE / "nvidia-smi-apps.csv", "--db", a).code == 0
    assert cli("export", "--parquet", exp, "--db", a).code == 0
    for part in (exp / "sources").rglob("*.parquet"):
        table = pq.read_table(part)
        status = [
            "loading" if str(p).endswith("dmesg.txt") else s
            for p, s in zip(table["path"].to_pylist(), table["status"].to_pylist(), strict=True)
        ]
        pq.write_table(table.set_column(table.column_names.index("status"), "status", pa.array(status)), part)
    fleet = tmp_path / "fleet.duckdb"
    r = cli("ingest", "--from-parquet", exp, "--db", fleet)
    assert r.code == 0 and r.out.startswith(
        f"{exp}: 1 sources merged, 0 already present, 1 left out (interrupted loads)"
    ), r
    dst = Store.open_readonly(fleet)
    try:
        assert dst.fetchall("SELECT format FROM sources") == [("nvidia-smi-csv",)]
        assert dst.count("kernel_messages") == 0 and dst.count("gpu_processes") > 0
    finally:
        dst.close()


def test_trends_count_each_host_apart(tmp_path: Path) -> None:
    """Two hosts' incidents on the same unit: counted per host, days without incidents between
    two with are zero in the figure's series, and each host's loads make their own trend."""
    from datetime import UTC, datetime, timedelta

    from postmortem.report.trends import _per_day, trends
    from postmortem.store.db import Store

    day = datetime(2025, 3, 9, 10, tzinfo=UTC)
    store = Store.memory()
    incidents = [
        (1, "a", day, 600.0),
        (2, "b", day + timedelta(hours=1), None),
        (3, "b", day + timedelta(days=2), 900.0),
    ]
    for iid, host, ts, down in incidents:
        store.execute(
            "INSERT INTO incidents (incident_id, host, ts, unit, cause, confidence, downtime_s) "
            "VALUES (?, ?, ?, 'u.service', 'cgroup_oom', 0.9, ?)",
            [iid, host, ts, down],
        )
    for lid, host, secs in ((1, "a", 500.0), (2, "a", 520.0), (3, "b", 900.0)):
        store.execute(
            "INSERT INTO service_loads (load_id, host, unit, start_ts, ready_ts, load_s, outcome, model_path) "
            "VALUES (?, ?, 'u.service', ?, ?, ?, 'ready', '/m')",
            [
                lid,
                host,
                day - timedelta(hours=lid),
                day - timedelta(hours=lid) + timedelta(seconds=secs),
                secs,
            ],
        )
    path = trends(store, tmp_path)
    text = path.read_text()
    assert "| 2025-03-09 | a | `u.service` | cgroup memory limit (kernel memcg OOM killer) | 1 |" in text
    assert "| 2025-03-09 | b | `u.service` | cgroup memory limit (kernel memcg OOM killer) | 1 |" in text
    assert "| 2025-03-11 | b | `u.service` | cgroup memory limit (kernel memcg OOM killer) | 1 |" in text
    assert "| a | `u.service` | `/m` | — | 2 |" in text and "| b | `u.service` | `/m` | — | 1 |" in text
    from postmortem.query import run_named_dicts

    series = _per_day(run_named_dicts(store, "trends_kills", {"since": None, "until": None}), {"a", "b"})
    store.close()
    assert [v for _, v in series["b · u.service"]] == [1.0, 0.0, 1.0]
    assert [v for _, v in series["a · u.service"]] == [1.0]
    assert (tmp_path / "trends-kills.png").exists() and (tmp_path / "trends-downtime.png").exists()


def test_kills_during_one_outage_count_once_in_the_mean_time_to_recovery(tmp_path: Path) -> None:
    """A restart loop: three kills, one ready ends them all. The mean is over outages (timed from
    the first kill), and the later kills say whose outage they came in."""
    from datetime import UTC, datetime, timedelta

    from postmortem.report.trends import trends
    from postmortem.store.db import Store

    t0 = datetime(2025, 6, 10, 9, 3, 41, tzinfo=UTC)
    ready = t0 + timedelta(seconds=911)
    store = Store.memory()
    rows = [(1, t0, ready), (2, t0 + timedelta(seconds=257), ready), (3, t0 + timedelta(seconds=510), ready)]
    rows.append((4, t0 + timedelta(days=1), t0 + timedelta(days=1, seconds=89)))  # another outage
    for iid, ts, rec in rows:
        store.execute(
            "INSERT INTO incidents (incident_id, host, ts, unit, cause, confidence, downtime_s, recovered_ts, "
            "recovery_unit) VALUES (?, 'h', ?, 'u.service', 'host_oom', 0.9, ?, ?, 'v.service')",
            [iid, ts, (rec - ts).total_seconds(), rec],
        )
    text = trends(store, tmp_path).read_text()
    store.close()
    assert "Mean time to recovery: **8 min 20 s** over 2 restored outage(s)" in text  # (911 + 89) / 2
    assert "(within incident 1's outage)" in text and "(within incident 2's" not in text


CANARY_LOG = """\
[2025-11-03 18:40:00] server_args=ServerArgs(model_path='/models/m', tp_size=2, port=30000)
[2025-11-03 18:41:00 TP0] Load weight begin. avail mem=77.43 GB
[2025-11-03 18:42:00] The server is fired up and ready to roll!
[2025-11-03 18:48:34 TP1] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2000, in event_loop_overlap
    self.run_batch(batch)
AssertionError: draft token count mismatch
[2025-11-03 18:48:34] Received sigquit from a child process. It usually means the child failed.
"""


def test_a_per_host_store_gives_its_host_to_what_no_host_is_known_for_as_the_fleet_does(
    cli: Any, tmp_path: Path
) -> None:
    """A per-host store (its journal names gpu-node-2) and an SGLang log of a canary that
    crashed, which names no host: the incident and the canary's load are gpu-node-2's, as they
    are once the store is exported and merged into a fleet store — its report is
    gpu-node-2-…, not unknown-host-…"""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "journal.txt").write_text(
        "2025-11-03T18:30:00+0000 gpu-node-2 systemd[1]: Started other.service - Other.\n"
    )
    (logs / "sglang-canary.log").write_text(CANARY_LOG)
    one = tmp_path / "one.duckdb"
    built = cli("build", "--logs", logs, "--db", one, "--out", tmp_path / "r1", "--tz", "UTC")
    assert built.code == 0, built
    assert [p.name for p in (tmp_path / "r1").glob("gpu-node-2-*.md")] == [
        "gpu-node-2-20251103T184834Z-unknown-unit.md"
    ]
    assert cli("export", "--parquet", tmp_path / "exp", "--db", one).code == 0
    fleet = tmp_path / "fleet.duckdb"
    assert cli("ingest", "--from-parquet", tmp_path / "exp", "--db", fleet).code == 0
    assert cli("build", "--no-ingest", "--db", fleet, "--out", tmp_path / "r2", "--tz", "UTC").code == 0
    derived = (
        "SELECT host, unit, ts, cause FROM incidents ORDER BY ts",
        "SELECT host, unit, start_ts, outcome FROM service_loads ORDER BY start_ts",
    )
    stores = [Store.open_readonly(one), Store.open_readonly(fleet)]
    per_host, merged = ([s.fetchall(q) for q in derived] for s in stores)
    for s in stores:
        s.close()
    assert per_host == merged
    assert [r[0] for r in per_host[0] + per_host[1]] == ["gpu-node-2", "gpu-node-2"]


def _coverage(report: Path) -> str:
    """The Data coverage section of a report (its sources, gaps, clock offsets, parse issues)."""
    return report.read_text().split("## F. Data coverage", 1)[1]


def test_an_incidents_data_coverage_lists_its_own_hosts_files(cli: Any, tmp_path: Path) -> None:
    """A store of two hosts: dflash-train's sample logs, and gpu-node-9's journal with a kill
    ten minutes after dflash-train's, beside an SGLang log that names no host. gpu-node-9's
    report lists its journal and the host-less log (marked), not dflash-train's files — which
    span its kill and said 'Covers the kill: yes' — nor their clock offsets; dflash-train's
    report lists its own files, as its own store's report does, and the host-less log."""
    db = tmp_path / "two.duckdb"
    assert cli("ingest", SAMPLE, "--host", "dflash-train", "--tz", "UTC", "--db", db).code == 0
    b = tmp_path / "gpu-node-9"
    b.mkdir()
    (b / "journal.txt").write_text(
        "2025-05-25T20:27:19+0000 gpu-node-9 systemd[1]: sglang-b.service: "
        "A process of this unit has been killed by the OOM killer.\n"
        "2025-05-25T20:27:19+0000 gpu-node-9 systemd[1]: sglang-b.service: "
        "Main process exited, code=killed, status=9/KILL\n"
        "2025-05-25T20:27:20+0000 gpu-node-9 systemd[1]: sglang-b.service: Failed with result 'oom-kill'.\n"
    )
    (b / "sglang-c.log").write_text(
        "[2025-05-25 20:00:00] server_args=ServerArgs(model_path='/m', tp_size=1, port=30000)\n"
    )
    assert cli("ingest", b, "--tz", "UTC", "--db", db).code == 0
    out = tmp_path / "reports"
    assert cli("build", "--no-ingest", "--db", db, "--out", out, "--tz", "UTC").code == 0
    (node9,) = out.glob("gpu-node-9-*.md")
    cov = _coverage(node9)
    assert "sample_logs/" not in cov and "Clock offsets" not in cov
    (journal,) = [line for line in cov.splitlines() if "gpu-node-9/journal.txt" in line]
    assert journal.endswith(
        "| journal-short | 3 | 3 | 0 | 0 | 2025-05-25 20:27:19 | 2025-05-25 20:27:20 | yes |  |"
    )
    hostless = [line for line in cov.splitlines() if "sglang-c.log" in line]
    assert len(hostless) == 1 and "no host named: its lines may be another host's" in hostless[0]
    (dflash,) = out.glob("dflash-train-*.md")
    cov = _coverage(dflash)
    assert "gpu-node-9/journal.txt" not in cov and "sglang-c.log" in cov
    snapshot = _coverage(REPO / "tests" / "snapshots" / "sample_report.md")
    assert [line for line in cov.splitlines() if "sglang-c.log" not in line] == snapshot.splitlines()


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_a_partial_export_is_refused_and_nothing_merged(cli: Any, tmp_path: Path) -> None:
    """A table or a partition missing, or a file cut short (a copy or rsync cut short): merged with
    exit 0, the rows lost for good — its sources were 'already present' when the complete export
    came. The manifest's row counts are checked first: one line, exit 1, nothing merged."""
    import pyarrow.parquet as pq

    a, exp, fleet = tmp_path / "a.duckdb", tmp_path / "export", tmp_path / "fleet.duckdb"
    assert cli("ingest", SAMPLE, "--db", a, "--tz", "UTC").code == 0
    assert cli("export", "--parquet", exp, "--db", a).code == 0
    listed = json.loads((exp / "_postmortem.json").read_text())
    no_table = _copy(exp, tmp_path / "no-table")
    shutil.rmtree(no_table / "server_stats")
    r = cli("ingest", "--from-parquet", no_table, "--db", fleet)
    assert (r.code, r.out) == (1, "")
    assert r.err == (
        f"Error: {no_table}: an incomplete export: server_stats is missing "
        f"({listed['tables']['server_stats']} rows listed in _postmortem.json); nothing merged — "
        "copy or export it again\n"
    )
    no_partition = _copy(exp, tmp_path / "no-partition")
    (day,) = (no_partition / "journal_entries" / "host=dflash-train").iterdir()
    shutil.rmtree(day)  # an empty host= directory stays
    r = cli("ingest", "--from-parquet", no_partition, "--db", fleet)
    assert r.code == 1 and "an incomplete export: journal_entries is missing" in r.err, r
    cut = _copy(exp, tmp_path / "cut")
    part = next((cut / "gpu_samples").rglob("*.parquet"))
    table = pq.read_table(part)
    pq.write_table(table.slice(0, table.num_rows - 5), part)
    r = cli("ingest", "--from-parquet", cut, "--db", fleet)
    want = listed["tables"]["gpu_samples"]
    assert r.err == (
        f"Error: {cut}: an incomplete export: gpu_samples holds {want - 5} rows, _postmortem.json "
        f"lists {want} (a partition or file missing or cut short?); nothing merged — copy or export "
        "it again\n"
    )
    # the rows of one source swapped for another's: the per-source counts tell
    (first, second) = sorted(str(s) for s in listed["source_rows"]["gpu_samples"])[:2]
    listed["source_rows"]["gpu_samples"][first] += 1
    listed["source_rows"]["gpu_samples"][second] -= 1
    swapped = _copy(exp, tmp_path / "swapped")
    (swapped / "_postmortem.json").write_text(json.dumps(listed))
    r = cli("ingest", "--from-parquet", swapped, "--db", fleet)
    assert r.code == 1 and "gpu_samples holds" in r.err and f"rows of source {first}," in r.err, r
    # an older export's manifest lists tables only: their totals are checked
    del listed["source_rows"]
    (cut / "_postmortem.json").write_text(json.dumps(listed))
    assert "gpu_samples holds" in cli("ingest", "--from-parquet", cut, "--db", fleet).err
    with Store.open(fleet) as store:
        assert store.count("sources") == 0
    r = cli("ingest", "--from-parquet", exp, "--db", fleet)
    assert r.out.startswith(f"{exp}: 7 sources merged, 0 already present"), r
    with Store.open_readonly(fleet) as dst, Store.open_readonly(a) as src:
        for t in ("server_stats", "journal_entries", "gpu_samples"):
            assert dst.count(t) == src.count(t), t


def test_an_interrupted_export_leaves_no_manifest_beside_its_tables(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exporting again into the previous export (the nightly job) and killed half-way left the
    earlier manifest beside tables already deleted: merged as complete. Now the manifest goes
    first and comes back last; the next export replaces the unfinished one."""
    import pyarrow.dataset as pads

    a, exp, fleet = tmp_path / "a.duckdb", tmp_path / "export", tmp_path / "fleet.duckdb"
    assert cli("ingest", SAMPLE, "--db", a, "--tz", "UTC").code == 0
    assert cli("export", "--parquet", exp, "--db", a).code == 0
    real, calls = pads.write_dataset, []

    def killed(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) > 3:
            raise KeyboardInterrupt  # as kill -9: no clean-up runs
        real(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(pads, "write_dataset", killed)
        assert cli("export", "--parquet", exp, "--db", a).code == 130
    assert not (exp / "_postmortem.json").exists()
    r = cli("ingest", "--from-parquet", exp, "--db", fleet)
    assert r.err == (
        f"Error: {exp}: an export that did not finish (no _postmortem.json: interrupted, or still "
        "being written); export it again\n"
    )
    r = cli("export", "--parquet", exp, "--db", a)
    assert r.code == 0, r
    assert sorted(p.name for p in exp.iterdir() if not p.is_dir()) == ["_postmortem.json"]
    r = cli("ingest", "--from-parquet", exp, "--db", fleet)
    assert r.out.startswith(f"{exp}: 7 sources merged, 0 already present"), r


def _host_logs(root: Path, host: str, *same: Path) -> Path:
    """A host's logs: a journal naming it, and files that name no host (copied as they are)."""
    root.mkdir(parents=True)
    with (root / "journal.log").open("w", encoding="utf-8") as fh:
        for i in range(20):
            fh.write(f"2025-05-25T00:00:{i:02d}+00:00 {host} kernel: line {i} of {host}\n")
    for f in same:
        shutil.copy(f, root / f.name)
    return root


def test_the_same_file_on_two_hosts_is_two_sources(cli: Any, tmp_path: Path) -> None:
    """Byte-identical files on two hosts (nodes started together, nvidia-smi run in the same
    second): the merge kept the first host's copy and called the second 'already present', so
    that host lost its rows (or they counted as the first host's). A source is the same when
    its content and its host are."""
    exports = {}
    for host in ("gpu-a", "gpu-b"):
        logs = _host_logs(tmp_path / host, host, SAMPLE / "dmesg.txt")
        assert cli("ingest", logs, "--db", tmp_path / f"{host}.duckdb", "--tz", "UTC").code == 0
        exports[host] = tmp_path / f"export-{host}"
        assert cli("export", "--parquet", exports[host], "--db", tmp_path / f"{host}.duckdb").code == 0
    fleet = tmp_path / "fleet.duckdb"
    r = cli("ingest", "--from-parquet", exports["gpu-a"], "--db", fleet)
    assert r.out.startswith(f"{exports['gpu-a']}: 2 sources merged, 0 already present"), r
    r = cli("ingest", "--from-parquet", exports["gpu-b"], "--db", fleet)
    assert r.out.startswith(
        f"{exports['gpu-b']}: 2 sources merged (1 with the same content as another host's source), "
        "0 already present"
    ), r
    r = cli("ingest", "--from-parquet", exports["gpu-b"], "--db", fleet)
    assert r.out.startswith(f"{exports['gpu-b']}: 0 sources merged, 2 already present"), r
    with Store.open_readonly(tmp_path / "gpu-a.duckdb") as one:
        kills = one.count("oom_kills")
    assert kills > 0
    with Store.open_readonly(fleet) as store:
        assert store.fetchall("SELECT host, count(*) FROM sources GROUP BY host ORDER BY host") == [
            ("gpu-a", 2),
            ("gpu-b", 2),
        ]
        assert store.fetchall("SELECT host, count(*) FROM oom_kills GROUP BY host ORDER BY host") == [
            ("gpu-a", kills),
            ("gpu-b", kills),
        ]
    # merged into the other host's own store: its dmesg.txt, stored without a host, is gpu-b's
    # (the store names no other), so gpu-a's copy is a source of its own
    r = cli("ingest", "--from-parquet", exports["gpu-a"], "--db", tmp_path / "gpu-b.duckdb")
    assert r.out.startswith(
        f"{exports['gpu-a']}: 2 sources merged (1 with the same content as another host's source)"
    ), r


def test_an_older_export_gets_its_only_host_for_rows_without_one(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before exports filed a per-host store's host-less rows (SGLang, nvidia-smi, dmesg) under
    its only host, they stayed host-less in every store the export was merged into — for ever:
    the same host's later export found each source 'already present'. The merge gives them the
    export's only host (its partitions name one)."""
    import postmortem.fleet

    logs = _host_logs(tmp_path / "gpu-b", "gpu-b", SAMPLE / "dmesg.txt")
    b = tmp_path / "b.duckdb"
    assert cli("ingest", logs, "--db", b, "--tz", "UTC").code == 0
    old = tmp_path / "export-old"
    with monkeypatch.context() as m:
        m.setattr(postmortem.fleet, "sole_host", lambda store: None)  # as an older version
        assert cli("export", "--parquet", old, "--db", b).code == 0
    assert (old / "kernel_messages" / "host=__HIVE_DEFAULT_PARTITION__").is_dir()
    a_logs = _host_logs(tmp_path / "gpu-a", "gpu-a")
    assert cli("ingest", a_logs, "--db", tmp_path / "a.duckdb", "--tz", "UTC").code == 0
    assert cli("export", "--parquet", tmp_path / "export-a", "--db", tmp_path / "a.duckdb").code == 0
    fleet = tmp_path / "fleet.duckdb"
    assert cli("ingest", "--from-parquet", tmp_path / "export-a", "--db", fleet).code == 0
    r = cli("ingest", "--from-parquet", old, "--db", fleet)
    assert r.code == 0 and r.out.startswith(f"{old}: 2 sources merged, 0 already present; "), r
    assert "; rows without a host given to gpu-b, the only host the export names" in r.out
    with Store.open_readonly(fleet) as store:
        assert store.fetchall("SELECT host, count(*) FROM sources GROUP BY host ORDER BY host") == [
            ("gpu-a", 1),
            ("gpu-b", 2),
        ]
        for table in ("kernel_messages", "oom_kills", "journal_entries"):
            assert store.fetchall(f"SELECT count(*) FROM {table} WHERE host IS NULL") == [(0,)], table
    new = tmp_path / "export-new"
    assert cli("export", "--parquet", new, "--db", b).code == 0
    r = cli("ingest", "--from-parquet", new, "--db", fleet)
    assert r.out.startswith(f"{new}: 0 sources merged, 2 already present; 0 rows"), r


def test_a_later_export_gives_a_source_stored_without_a_host_its_host(cli: Any, tmp_path: Path) -> None:
    """A source merged without a host (an export naming no host, or several; a fleet store merged
    by an older version) took the host's later export for 'already present': the rows stayed
    host-less. The later export now gives them its host; the merge said so beforehand."""
    n = tmp_path / "n.duckdb"
    assert cli("ingest", SAMPLE / "dmesg.txt", "--db", n, "--tz", "UTC").code == 0
    assert cli("export", "--parquet", tmp_path / "export-n", "--db", n).code == 0
    fleet = tmp_path / "fleet.duckdb"
    r = cli("ingest", "--from-parquet", tmp_path / "export-n", "--db", fleet)
    assert (
        r.code == 0
        and (
            "; 1 sources without a host (the export names several hosts, or none; a later export of "
            "their host gives it)"
        )
        in r.out
    ), r
    logs = _host_logs(tmp_path / "gpu-b", "gpu-b", SAMPLE / "dmesg.txt")
    b = tmp_path / "b.duckdb"
    assert cli("ingest", logs, "--db", b, "--tz", "UTC").code == 0
    assert cli("export", "--parquet", tmp_path / "export-b", "--db", b).code == 0
    r = cli("ingest", "--from-parquet", tmp_path / "export-b", "--db", fleet)
    assert r.out.startswith(
        f"{tmp_path / 'export-b'}: 1 sources merged, 1 already present (1 given their host, stored "
        "without one)"
    ), r
    with Store.open_readonly(fleet) as store, Store.open_readonly(b) as one:
        assert store.fetchall("SELECT host, count(*) FROM sources GROUP BY host") == [("gpu-b", 2)]
        assert store.fetchall("SELECT host, count(*) FROM oom_kills GROUP BY host") == [
            ("gpu-b", one.count("oom_kills"))
        ]


def test_merge_messages(cli: Any, tmp_path: Path) -> None:
    """A path that does not exist says so (it said 'not a postmortem Parquet export'), and no
    store is created for it; options for log files given to a merge alone are usage errors
    (they were ignored); 'run postmortem build' only when something was merged."""
    fleet = tmp_path / "fleet.duckdb"
    nope = tmp_path / "nope"
    r = cli("ingest", "--from-parquet", nope, "--db", fleet)
    assert (r.code, r.err) == (1, f"Error: {nope}: no such directory\n")
    assert not fleet.exists()
    a, exp = tmp_path / "a.duckdb", tmp_path / "export"
    assert cli("ingest", SAMPLE / "dmesg.txt", "--db", a).code == 0
    assert cli("export", "--parquet", exp, "--db", a).code == 0
    for option, value in (
        ("--host", "gpu-9"),
        ("--format", "dmesg"),
        ("--tz", "UTC"),
        ("--unit", "x.service"),
        ("--year", "2025"),
    ):
        r = cli("ingest", "--from-parquet", exp, "--db", fleet, option, value)
        assert (r.code, r.err) == (
            2,
            f"Error: {option} is for log files, not for --from-parquet (a merge keeps what the export "
            "says of each source)\n",
        )
    assert not fleet.exists()
    r = cli("ingest", "--from-parquet", exp, "--db", fleet)
    assert r.out.endswith(" (run 'postmortem build' to recompute incidents)\n"), r
    r = cli("ingest", "--from-parquet", exp, "--db", fleet)
    assert r.out == f"{exp}: 0 sources merged, 1 already present; 0 rows\n"
    # beside files, the options are theirs
    log = tmp_path / "j.log"
    _day(log, 25, 0, 3)
    r = cli("ingest", "--from-parquet", exp, log, "--db", fleet, "--host", "gpu-9")
    assert r.code == 0, r
    with Store.open_readonly(fleet) as store:
        assert store.fetchall("SELECT host FROM sources WHERE path = ?", [str(log)]) == [("gpu-9",)]
