"""#29 item 7: input-caused failures end as "internal error, report it" (exit 70).

Exit 70 tells the user to file a bug; a Ctrl-C, a damaged manifest or a store that disagrees
with itself are the user's input: one ``Error:`` line and exit 1 (130 for SIGINT).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest
from hostile import HOST, Ran, command, journal, one_error_line, run, tar_gz, write_logs

# ----------------------------------------------------------------------------- Ctrl-C


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) a running process has used."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_when_busy(args: list[object], busy_s: float, timeout_s: float = 120.0) -> Ran:
    """Run ``postmortem ARGS``; once it has used ``busy_s`` of CPU (past its start-up, into the
    work), send it SIGINT as Ctrl-C does; its exit. A process that does not stop is killed."""
    p = subprocess.Popen(
        command(*args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # as a terminal's Ctrl-C finds it: a shell starts a background job (`make test &`) with
        # SIGINT ignored, and Python then never turns it into KeyboardInterrupt
        preexec_fn=_sigint_default,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while _cpu_seconds(p.pid) < busy_s:
            assert p.poll() is None, (
                f"ended before it could be interrupted: {p.stderr.read() if p.stderr else ''}"
            )
            assert time.monotonic() < deadline, "never got busy"
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=timeout_s)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    return Ran(p.returncode, "", err)


def _store(tmp_path: Path) -> Path:
    logs = write_logs(tmp_path, journal__txt=journal())
    db = tmp_path / "pm.duckdb"
    assert run("ingest", logs, "--db", db).code == 0
    return db


def test_ctrl_c_during_a_long_query_exits_130(tmp_path: Path) -> None:
    db = _store(tmp_path)
    # an aggregate DuckDB works at for an hour, checking for interrupts between its tasks
    ran = _interrupt_when_busy(
        ["query", "SELECT sum(hash(range)) FROM range(1000000000000)", "--db", db], 2.0
    )
    assert one_error_line(ran, code=130) == "Error: interrupted"


def test_an_interrupt_before_the_query_began_still_stops_it() -> None:
    """Ctrl-C that lands before the user's statement starts (in the settings run before it, on
    a loaded machine) interrupted nothing, and the query then ran on: the interrupt is sent
    again until the work ends (a fresh clone's `make test`, under load, hung here)."""
    import _thread
    import threading

    from postmortem.query import interruptible

    con = duckdb.connect()

    def work() -> object:
        time.sleep(0.6)  # (the interrupt lands here, before the query)
        return con.execute("SELECT sum(hash(range)) FROM range(20000000000)").fetchall()

    # (Ctrl-C's handler, also when the test run was started with SIGINT ignored)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.2, _thread.interrupt_main).start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            interruptible(con, work)
        assert time.monotonic() - started < 10
    finally:
        signal.signal(signal.SIGINT, before)


def test_ctrl_c_during_a_long_export_exits_130(tmp_path: Path) -> None:
    """Seen: 130 whenever the SIGINT lands in a table's write (most of an export), only after
    that table is written (pyarrow's write_dataset does not stop)."""
    db = _store(tmp_path)
    con = duckdb.connect(str(db))
    con.execute(
        "INSERT INTO kernel_messages BY NAME SELECT 1 AS source_id, range + 100 AS line_no, "
        "TIMESTAMPTZ '2026-03-18 00:00:00+00' + to_seconds(range % 80000) AS ts, 'gpu1' AS host, "
        "md5(range::VARCHAR) || md5((range + 1)::VARCHAR) AS message FROM range(2000000)"
    )
    con.close()
    export = tmp_path / "export"
    ran = _interrupt_when_busy(["export", "--parquet", export, "--db", db], 1.5)
    assert one_error_line(ran, code=130) == "Error: interrupted"
    assert not (export / "_postmortem.json").exists()  # not claimed complete: a merge refuses it


# ----------------------------------------------------------------------------- damaged manifests

_JOURNAL = journal().encode()


def _manifest(**fields: object) -> str:
    doc = {"postmortem_bundle": 1, "host": HOST, "files": [{"output": "journal.txt", "ingest": True}]}
    doc.update(fields)
    return json.dumps(doc)


MANIFESTS = [
    pytest.param(
        _manifest(utc_offset_s=86400),
        id="utc_offset_s-86400",
    ),
    pytest.param(
        _manifest().replace('"host"', '"utc_offset_s": 1' + "0" * 30 + ', "host"'),
        id="utc_offset_s-1e30-integer",
    ),
    pytest.param(
        _manifest().replace('"host"', '"utc_offset_s": 1e30, "host"'),
        id="utc_offset_s-1e30-float",  # not an int: ignored, the machine's zone is used
    ),
    pytest.param(
        _manifest(commands=5),
        id="wrong-type-commands",
    ),
    pytest.param(
        '{"postmortem_bundle": 1, "x": ' + "[" * 200_000 + "]" * 200_000 + "}",
        id="nested-200000-deep",
    ),
]


@pytest.mark.parametrize("manifest", MANIFESTS)
def test_a_damaged_bundle_manifest_is_one_error_line(tmp_path: Path, manifest: str) -> None:
    archive = tar_gz(
        tmp_path / "bundle.tar.gz", [("b/manifest.json", manifest.encode()), ("b/journal.txt", _JOURNAL)]
    )
    ran = run("ingest", archive, "--db", tmp_path / "pm.duckdb")
    if ran.code == 0:  # a value it ignores is fine too
        assert "journal-short" in ran.out, ran
        return
    assert "bundle.tar.gz" in one_error_line(ran)


def test_a_deeply_nested_manifest_of_a_bundle_directory_is_one_error_line(tmp_path: Path) -> None:
    bundle = tmp_path / "postmortem-gpu1-20260318T140217Z"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(
        '{"postmortem_bundle": 1, "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    )
    (bundle / "journal.txt").write_bytes(_JOURNAL)
    ran = run("ingest", bundle, "--db", tmp_path / "pm.duckdb")
    assert "manifest.json" in one_error_line(ran)


def test_a_deeply_nested_export_manifest_is_one_error_line(tmp_path: Path) -> None:
    db = _store(tmp_path)
    export = tmp_path / "export"
    assert run("export", "--parquet", export, "--db", db).code == 0
    (export / "_postmortem.json").write_text('{"schema_version": ' + "[" * 200_000 + "]" * 200_000 + "}")
    ran = run("ingest", "--from-parquet", export, "--db", tmp_path / "other.duckdb")
    assert "_postmortem.json" in one_error_line(ran)


# ----------------------------------------------------------------------------- a store at odds with itself


def test_a_store_missing_its_last_migration_row_is_one_error_line(tmp_path: Path) -> None:
    db = _store(tmp_path)
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)")
    con.close()
    ran = run("ingest", write_logs(tmp_path / "more", journal__txt=journal(comm="x")), "--db", db)
    assert str(db) in one_error_line(ran)


def test_a_store_missing_a_table_its_migrations_name_is_one_error_line(tmp_path: Path) -> None:
    db = _store(tmp_path)
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE oom_kills")
    con.close()
    ran = run("build", "--no-ingest", "--db", db, "--out", tmp_path / "r", "--tz", "UTC")
    assert str(db) in one_error_line(ran)
