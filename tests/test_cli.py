"""The command line: exit codes and exact error text, through the in-process runner."""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from postmortem.cli import app
from postmortem.store.db import Store, latest_version

SAMPLE = REPO / "sample_logs"
DMESG = SAMPLE / "dmesg.txt"


def _commands() -> list[str]:
    import typer.main

    group = typer.main.get_group(app)
    return sorted(group.commands)


@pytest.mark.parametrize("command", _commands())
def test_every_command_has_help(cli: Any, command: str) -> None:
    result = cli(command, "--help")
    assert result.code == 0, result
    assert "Usage" in result.out


def test_version(cli: Any) -> None:
    from postmortem import __version__

    assert cli("--version").out.strip() == f"postmortem {__version__}"


def test_ingest_prints_per_file_counts(cli: Any, tmp_path: Path) -> None:
    db = tmp_path / "pm.duckdb"
    r = cli("ingest", DMESG, "--db", db)
    assert r.code == 0, r
    assert r.out.startswith(f"{DMESG}: ingested as dmesg: 148 lines, ")
    again = cli("ingest", DMESG, "--db", db)
    assert again.out.strip() == f"{DMESG}: unchanged"


@pytest.mark.parametrize("compressed", [False, True])
def test_the_same_file_of_another_host_is_not_a_duplicate(cli: Any, tmp_path: Path, compressed: bool) -> None:
    """Two nodes started the same second write the same SGLang log (and an idle nvidia-smi table
    has no host in it): with another --host the copy is that host's own source, not a duplicate
    of the first host's — found before parsing (a plain file) or after it (compressed)."""
    import gzip

    db = tmp_path / "pm.duckdb"
    data = (SAMPLE / "sglang-k26.log").read_bytes()
    a, b = tmp_path / "a" / "server.log", tmp_path / "b" / "server.log"
    for p in (a, b):
        p.parent.mkdir()
        if compressed:
            p = p.with_suffix(".log.gz")
            p.write_bytes(gzip.compress(data, mtime=0))
        else:
            p.write_bytes(data)
    if compressed:
        a, b = a.with_suffix(".log.gz"), b.with_suffix(".log.gz")
    assert cli("ingest", a, "--db", db, "--host", "node-a", "--tz", "UTC").code == 0
    r = cli("ingest", b, "--db", db, "--host", "node-b", "--tz", "UTC")
    assert r.code == 0 and "duplicate" not in r.out, r
    with Store.open_readonly(db) as store:
        assert store.fetchall("SELECT host, count(*) FROM sources GROUP BY host ORDER BY host") == [
            ("node-a", 1),
            ("node-b", 1),
        ]
    # the same host's copy is still a duplicate
    c = tmp_path / "a" / ("copy" + ("".join(a.suffixes)))
    c.write_bytes(a.read_bytes())
    r = cli("ingest", c, "--db", db, "--host", "node-a", "--tz", "UTC")
    assert r.code == 0 and "duplicate — same content as" in r.out, r


def test_a_forgotten_or_wrong_host_is_undone_by_the_right_one(cli: Any, tmp_path: Path) -> None:
    """An SGLang log ingested without --host (or with the wrong one) is read again when --host
    names another host: it said 'unchanged' and kept the old host, through the file index too."""
    db = tmp_path / "pm.duckdb"
    log = tmp_path / "server.log"
    log.write_bytes((SAMPLE / "sglang-k26.log").read_bytes())
    assert cli("ingest", log, "--db", db, "--tz", "UTC").code == 0
    for host in ("node-a", "node-b"):
        r = cli("ingest", log, "--db", db, "--tz", "UTC", "--host", host)
        assert r.code == 0 and r.out.startswith(f"{log}: replaced as sglang"), r
        with Store.open_readonly(db) as store:
            assert store.fetchall("SELECT host, count(*) FROM sources GROUP BY host") == [(host, 1)]
            assert store.fetchall("SELECT DISTINCT host FROM server_events") == [(host,)]
    r = cli("ingest", log, "--db", db, "--tz", "UTC", "--host", "node-b")
    assert r.out == f"{log}: unchanged\n", r
    assert cli("ingest", log, "--db", db, "--tz", "UTC").out == f"{log}: unchanged\n"


def test_a_wrong_year_is_undone_by_the_right_one(cli: Any, tmp_path: Path) -> None:
    """A year-less syslog/journal short file read with the wrong --year is read again with the
    year named now; a file whose stamps carry their year is not (--year changes nothing there)."""
    db = tmp_path / "pm.duckdb"
    log = tmp_path / "messages"
    log.write_text(
        "May 25 20:17:19 gpu1 systemd[1]: llm.service: Main process exited, code=killed, status=9/KILL\n"
    )
    assert cli("ingest", log, "--db", db, "--tz", "UTC", "--year", "2024").code == 0
    r = cli("ingest", log, "--db", db, "--year", "2025")
    assert r.code == 0 and r.out.startswith(f"{log}: replaced as journal-short"), r
    with Store.open_readonly(db) as store:
        assert store.fetchall("SELECT year(first_ts) FROM sources") == [(2025,)]
    assert cli("ingest", log, "--db", db, "--year", "2025").out == f"{log}: unchanged\n"
    assert cli("ingest", log, "--db", db).out == f"{log}: unchanged\n"
    iso = tmp_path / "iso.log"
    iso.write_text("2025-05-25T20:17:19+0000 gpu1 systemd[1]: llm.service: Failed with result 'oom-kill'.\n")
    assert cli("ingest", iso, "--db", db).code == 0
    assert cli("ingest", iso, "--db", db, "--year", "2023").out == f"{iso}: unchanged\n"


def test_a_wrong_zone_is_undone_by_the_right_one(cli: Any, tmp_path: Path) -> None:
    """A zone-less SGLang log read in the wrong --tz is read again in the zone named now (it said
    'unchanged' and kept the times of the wrong zone); without --tz, or with the same, unchanged."""
    db = tmp_path / "pm.duckdb"
    log = tmp_path / "server.log"
    log.write_bytes((SAMPLE / "sglang-k26.log").read_bytes())
    assert cli("ingest", log, "--db", db, "--tz", "America/New_York").code == 0
    r = cli("ingest", log, "--db", db, "--tz", "UTC")
    assert r.code == 0 and r.out.startswith(f"{log}: replaced as sglang"), r
    with Store.open_readonly(db) as store:
        assert store.fetchall("SELECT tz, strftime(first_ts, '%H:%M:%S') FROM sources") == [
            ("UTC", "09:30:13")
        ]
    assert cli("ingest", log, "--db", db, "--tz", "UTC").out == f"{log}: unchanged\n"
    assert cli("ingest", log, "--db", db).out == f"{log}: unchanged\n"


def test_same_file_under_another_path_is_a_duplicate_before_parsing(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same content under another path (a copy, a relative path) is known by its hash before
    any line is parsed; content of the same size that differs is still ingested."""
    import os
    import shutil

    from postmortem import ingest

    db = tmp_path / "pm.duckdb"
    assert cli("ingest", DMESG, "--db", db).code == 0
    copy = tmp_path / "copy.log"
    shutil.copyfile(DMESG, copy)
    os.utime(copy, (1_000_000_000, 1_000_000_000))  # another mtime: not "unchanged"
    real_state = ingest.StreamState

    def no_parse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("parsed a file the store already holds")

    monkeypatch.setattr(ingest, "StreamState", no_parse)
    r = cli("ingest", copy, "--db", db)
    assert r.code == 0, r
    assert r.out.splitlines() == [f"{copy}: duplicate — same content as {DMESG}, already ingested"]
    monkeypatch.setattr(ingest, "StreamState", real_state)
    data = bytearray(copy.read_bytes())
    data[-2:-1] = b"X" if data[-2:-1] != b"X" else b"Y"  # same size, other content
    copy.write_bytes(bytes(data))
    r = cli("ingest", copy, "--db", db)
    assert r.code == 0, r
    assert r.out.startswith(f"{copy}: ingested as dmesg: 148 lines, ")


def _journal(path: Path, first: int, count: int) -> None:
    """``count`` short-iso journal lines, one a second from second ``first`` of 2025-05-25."""
    with path.open("a", encoding="utf-8") as fh:
        for i in range(first, first + count):
            fh.write(f"2025-05-25T00:{i // 60:02d}:{i % 60:02d}+00:00 gpu-a kernel: line {i}\n")


def _sources(db: Path) -> list[tuple[Any, ...]]:
    with Store.open(db) as store:
        return store.fetchall(
            "SELECT s.path, s.lines, s.first_ts, s.last_ts, "
            "(SELECT count(*) FROM journal_entries j WHERE j.source_id = s.source_id) "
            "FROM sources s ORDER BY s.source_id"
        )


def test_one_name_in_two_directories_is_two_sources(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two hosts' ``journal.log``, each ingested from its own directory by its relative name: the
    store knows sources by absolute path, so the second is a new source, not a replacement."""
    db = tmp_path / "pm.duckdb"
    for host, count in (("a", 30), ("b", 20)):
        (tmp_path / host).mkdir()
        _journal(tmp_path / host / "journal.log", 0 if host == "a" else 100, count)
    monkeypatch.chdir(tmp_path / "a")
    assert cli("ingest", "journal.log", "--db", db).out.startswith(
        "journal.log: ingested as journal-short: 30 lines"
    )
    monkeypatch.chdir(tmp_path / "b")
    assert cli("ingest", "journal.log", "--db", db).out.startswith(
        "journal.log: ingested as journal-short: 20 lines"
    )
    assert [(r[0], r[1], r[4]) for r in _sources(db)] == [
        (str(tmp_path / "a" / "journal.log"), 30, 30),
        (str(tmp_path / "b" / "journal.log"), 20, 20),
    ]
    # the same file by another spelling of its path is the same source
    assert cli("ingest", "../a/./journal.log", "--db", db).out.strip() == "../a/journal.log: unchanged"
    assert cli("ingest", tmp_path / "b" / "journal.log", "--db", db).out.strip().endswith(": unchanged")


def test_a_grown_file_is_appended_and_keeps_its_span(cli: Any, tmp_path: Path) -> None:
    db = tmp_path / "pm.duckdb"
    log = tmp_path / "journal.log"
    _journal(log, 0, 30)
    assert cli("ingest", log, "--db", db).code == 0
    _journal(log, 30, 15)
    r = cli("ingest", log, "--db", db)
    assert r.out.startswith(
        f"{log}: appended as journal-short: 15 new lines, 30 new records (45 lines, 90 records"
    ), r
    ((path, lines, first, last, rows),) = _sources(db)
    assert (path, lines, rows) == (str(log), 45, 45)
    assert (first, last) == (
        datetime(2025, 5, 25, 0, 0, 0, tzinfo=UTC),
        datetime(2025, 5, 25, 0, 0, 44, tzinfo=UTC),
    )


def test_a_grown_file_of_a_format_with_context_is_parsed_again(cli: Any, tmp_path: Path) -> None:
    """An nvidia-smi CSV loop that grew: its new rows need the header, so the file is parsed
    again whole (appending from the first new line stored none of them)."""
    db = tmp_path / "pm.duckdb"
    csv = tmp_path / "gpu.csv"
    lines = (SAMPLE / "nvidia-smi-gpu.csv").read_text().splitlines(keepends=True)
    csv.write_text("".join(lines[:200]))
    assert cli("ingest", csv, "--db", db, "--tz", "UTC").code == 0
    csv.write_text("".join(lines))
    r = cli("ingest", csv, "--db", db, "--tz", "UTC")
    assert r.out.startswith(
        f"{csv}: replaced as nvidia-smi-csv: {len(lines)} lines, {len(lines) - 1} records, 0 parse"
    )
    with Store.open(db) as store:
        assert store.fetchall("SELECT count(*) FROM gpu_samples") == [(len(lines) - 1,)]


@pytest.mark.parametrize("rotated", ["app.1.log", "app.log.1", "app-20250525.log"])
def test_rotation_keeps_the_rotated_lines_whichever_name_comes_first(
    cli: Any, tmp_path: Path, rotated: str
) -> None:
    """app.log ingested, then renamed by logrotate and a new app.log written: the store keeps
    both (the rotated name sorting before app.log made the old content a 'duplicate' that the
    new app.log then replaced)."""
    db = tmp_path / "pm.duckdb"
    logs = tmp_path / "logs"
    logs.mkdir()
    _journal(logs / "app.log", 0, 30)
    assert cli("ingest", logs, "--db", db).code == 0
    (logs / "app.log").rename(logs / rotated)
    _journal(logs / "app.log", 100, 20)
    r = cli("ingest", logs, "--db", db)
    assert r.code == 0, r
    assert sorted(r.out.splitlines()) == sorted(
        [
            f"{logs / rotated}: unchanged",
            f"{logs / 'app.log'}: ingested as journal-short: 20 lines, 40 records, 0 parse issues, 0 ignored",
        ]
    )
    assert sorted((row[0], row[4]) for row in _sources(db)) == sorted(
        [(str(logs / "app.log"), 20), (str(logs / rotated), 30)]
    )


def test_a_rotated_file_still_written_to_is_appended(cli: Any, tmp_path: Path) -> None:
    """logrotate's create mode while the server still writes to the renamed file: the rotated
    file holds the stored lines and more; they are appended to its source, not stored twice."""
    db = tmp_path / "pm.duckdb"
    logs = tmp_path / "logs"
    logs.mkdir()
    _journal(logs / "app.log", 0, 30)
    assert cli("ingest", logs, "--db", db).code == 0
    (logs / "app.log").rename(logs / "app.log.1")
    _journal(logs / "app.log.1", 30, 5)
    _journal(logs / "app.log", 100, 20)
    r = cli("ingest", logs, "--db", db)
    assert (
        f"{logs / 'app.log.1'}: appended as journal-short: 5 new lines, 10 new records (35 lines" in r.out
    ), r
    assert sorted((row[0], row[4]) for row in _sources(db)) == [
        (str(logs / "app.log"), 20),
        (str(logs / "app.log.1"), 35),
    ]


def test_a_store_with_relative_source_paths(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written when sources kept the path as given: a file of that name elsewhere is a
    new source (the stored one is not replaced); the same file, grown, is appended and its path
    made absolute."""
    db = tmp_path / "pm.duckdb"
    for host in ("a", "b"):
        (tmp_path / host).mkdir()
        _journal(tmp_path / host / "journal.log", 0 if host == "a" else 100, 10)
    monkeypatch.chdir(tmp_path / "a")
    assert cli("ingest", "journal.log", "--db", db).code == 0
    with Store.open(db) as store:
        store.execute("UPDATE sources SET path = 'journal.log'")
    assert cli("ingest", "journal.log", "--db", db).out.strip() == "journal.log: unchanged"
    monkeypatch.chdir(tmp_path / "b")
    assert cli("ingest", "journal.log", "--db", db).out.startswith(
        "journal.log: ingested as journal-short: 10 lines"
    )
    monkeypatch.chdir(tmp_path / "a")
    _journal(tmp_path / "a" / "journal.log", 10, 5)
    assert cli("ingest", "journal.log", "--db", db).out.startswith(
        "journal.log: appended as journal-short: 5 new lines, 10 new records (15 lines"
    )
    assert [(r[0], r[1], r[4]) for r in _sources(db)] == [
        (str(tmp_path / "a" / "journal.log"), 15, 15),
        (str(tmp_path / "b" / "journal.log"), 10, 10),
    ]


def test_missing_path(cli: Any, tmp_path: Path) -> None:
    r = cli("ingest", tmp_path / "nope.log", "--db", tmp_path / "pm.duckdb")
    assert r.code == 1
    assert r.err == f"Error: {tmp_path / 'nope.log'}: no such file or directory\n"


def test_unknown_zone_is_a_usage_error(cli: Any, tmp_path: Path) -> None:
    r = cli("ingest", DMESG, "--tz", "Mars/Olympus", "--db", tmp_path / "pm.duckdb")
    assert r.code == 2
    assert (
        r.err == "Error: unknown time zone 'Mars/Olympus' (use an IANA name such as UTC or Europe/Berlin)\n"
    )


def test_since_after_until(cli: Any, tmp_path: Path) -> None:
    r = cli(
        "build",
        "--since",
        "2025-05-26",
        "--until",
        "2025-05-25",
        "--logs",
        DMESG,
        "--db",
        tmp_path / "pm.duckdb",
        "--out",
        tmp_path / "r",
        "--tz",
        "UTC",
    )
    assert r.code == 2
    assert r.err.startswith("Error: --since (2025-05-26T00:00:00+00:00) is after --until")


def test_unknown_format(cli: Any, tmp_path: Path) -> None:
    r = cli("ingest", DMESG, "--format", "nope", "--db", tmp_path / "pm.duckdb")
    assert r.code == 2
    assert r.err.startswith("Error: unknown format 'nope'; known formats: dcgm-exporter, dmesg, ")


def test_bad_time(cli: Any, tmp_path: Path) -> None:
    r = cli("build", "--since", "soon", "--db", tmp_path / "pm.duckdb")
    assert r.code == 2
    assert "cannot understand the time 'soon'" in r.err


def test_random_bytes_and_empty_file(cli: Any, tmp_path: Path) -> None:
    rnd = tmp_path / "random.bin"
    rnd.write_bytes(os.urandom(5000))
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    r = cli("ingest", rnd, empty, "--db", tmp_path / "pm.duckdb")
    assert r.code == 1
    assert "Traceback" not in r.err
    # each failure said once: on stderr, in the one Error line (not also on stdout)
    assert r.out == "" and r.err.count("\n") == 1 and r.err.startswith("Error: "), r
    assert f"{empty}: empty file, nothing to ingest" in r.err and "(and 1 more; --verbose lists" in r.err
    r = cli("--verbose", "ingest", rnd, empty, "--db", tmp_path / "pm.duckdb")
    assert f"{rnd}: format not recognised" in r.err, r
    # UTF-16 (PowerShell's `>`): said so, with the conversion; zeros alone are not text
    u16, zeros = tmp_path / "dmesg-u16.txt", tmp_path / "zeros.bin"
    u16.write_bytes(DMESG.read_text().encode("utf-16"))
    zeros.write_bytes(bytes(5000))
    r = cli("--verbose", "ingest", u16, zeros, "--db", tmp_path / "pm.duckdb")
    assert f"{u16}: UTF-16 text, not UTF-8: convert it first (iconv" in r.err, r
    assert f"{zeros}: format not recognised" in r.err, r


def test_directory_without_logs(cli: Any, tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "notes.txt").write_text("hello\nworld\n")
    r = cli("ingest", d, "--db", tmp_path / "pm.duckdb")
    assert r.code == 1
    assert (
        r.err
        == f"Error: {d}: no recognisable logs in this directory (see 'postmortem formats', or force one with --format NAME)\n"
    )


def test_truncated_gzip_keeps_what_was_read(cli: Any, tmp_path: Path) -> None:
    data = gzip.compress(DMESG.read_bytes())
    gz = tmp_path / "dmesg.txt.gz"
    gz.write_bytes(data[: len(data) // 2])
    db = tmp_path / "pm.duckdb"
    r = cli("ingest", gz, "--db", db)
    assert r.code == 1
    assert r.err.startswith(f"Error: {gz}: truncated gzip data after ")
    assert "the lines before the damage were kept" in r.err
    store = Store.open_readonly(db)
    lines = store.fetchall("SELECT lines FROM sources")[0][0]
    store.close()
    assert 0 < lines < 148
    # a re-run finds it unchanged, and says again that it is damaged — through the file index
    # and, without it, through the store; the rows stay, so it is not an error a second time
    for with_index in (True, False):
        if not with_index:
            Path(f"{db}.files.json").unlink()
        again = cli("ingest", gz, "--db", db)
        assert again.code == 0, again
        assert again.out.startswith(f"{gz}: unchanged — still truncated gzip data after "), again.out
        assert "the lines before the damage were kept" in again.out


def test_long_line_is_a_counted_parse_issue(cli: Any, tmp_path: Path) -> None:
    f = tmp_path / "dmesg.txt"
    f.write_bytes(DMESG.read_bytes() + b"[  1.000000] " + b"x" * (10 << 20) + b"\n")
    db = tmp_path / "pm.duckdb"
    r = cli("ingest", f, "--db", db)
    assert r.code == 0, r
    store = Store.open_readonly(db)
    row = store.fetchall("SELECT lines, parse_issues FROM sources")[0]
    reason = store.fetchall("SELECT reason FROM parse_issues")[0][0]
    store.close()
    assert row == (149, 1)
    assert reason.startswith("line too long (")


def test_query_is_read_only(cli: Any, tmp_path: Path) -> None:
    db = tmp_path / "pm.duckdb"
    cli("ingest", DMESG, "--db", db)
    r = cli("query", "DELETE FROM sources", "--db", db)
    assert r.code == 1
    assert r.err == "Error: only SELECT queries are allowed here (got DELETE); the store is read-only\n"
    r = cli("query", "SELECT 1; SELECT 2", "--db", db)
    assert r.err == "Error: give one statement at a time\n"
    r = cli("query", "SELECT * FROM read_csv('/etc/passwd')", "--db", db)
    assert r.code == 1 and r.err.startswith("Error: SQL error:")


def test_query_json_has_utc_iso_timestamps(cli: Any, tmp_path: Path) -> None:
    db = tmp_path / "pm.duckdb"
    cli("ingest", DMESG, "--db", db, "--boot-time", "2025-05-20T06:12:31.402117Z")
    r = cli(
        "query",
        "SELECT victim_pid, ts FROM oom_kills ORDER BY line_no LIMIT 1",
        "--db",
        db,
        "--format",
        "json",
    )
    assert r.code == 0, r
    assert json.loads(r.out) == [{"victim_pid": 48213, "ts": "2025-05-25T20:17:19.604211Z"}]


def test_query_csv(cli: Any, tmp_path: Path) -> None:
    db = tmp_path / "pm.duckdb"
    cli("ingest", DMESG, "--db", db)
    r = cli("query", "SELECT format, lines FROM sources", "--db", db, "--format", "csv")
    assert r.out == "format,lines\ndmesg,148\n"


def test_query_without_store(cli: Any, tmp_path: Path) -> None:
    r = cli("query", "SELECT 1", "--db", tmp_path / "none.duckdb")
    assert r.code == 1
    assert (
        r.err
        == f"Error: {tmp_path / 'none.duckdb'}: no such database (run 'postmortem ingest' or 'build' first)\n"
    )


def test_store_from_a_newer_version(cli: Any, tmp_path: Path) -> None:
    db = tmp_path / "pm.duckdb"
    Store.open(db).close()
    store = Store.open(db)
    store.execute("INSERT INTO schema_migrations VALUES (999, 'future', now())")
    store.close()
    r = cli("ingest", DMESG, "--db", db)
    assert r.code == 1
    assert "written by a newer postmortem (schema version 999" in r.err


def test_sources_and_incidents(cli: Any, tmp_path: Path) -> None:
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", SAMPLE, "--db", db, "--out", tmp_path / "r", "--tz", "UTC")
    assert r.code == 0, r
    assert "1 incident(s)" in r.out
    src = cli("sources", "--db", db)
    assert "journal-export" in src.out and "(7 rows)" in src.out
    # the line accounting on screen: parsed + ignored + unparsed = lines (issues may be warnings)
    head, *rows = [ln.split() for ln in src.out.splitlines()[:-1] if not ln.startswith("-")]
    at = {name: head.index(name) for name in ("lines", "parsed", "ignored", "unparsed")}
    for row in rows:
        n = {k: int(row[i]) for k, i in at.items()}
        assert n["parsed"] + n["ignored"] + n["unparsed"] == n["lines"], row
    inc = cli("incidents", "--db", db, "--format", "json")
    (row,) = json.loads(inc.out)
    assert row["unit"] == "sglang-k26-eagle3.service" and row["cause"] == "cgroup_oom"
    tl = cli("timeline", "1", "--db", db, "--window", "5min", "--format", "json")
    assert tl.code == 0
    kinds = [e["kind"] for e in json.loads(tl.out)["events"]]
    # by default the timeline runs on to the recovery (the fallback's ready line, 12 min later)
    assert "oom_kill" in kinds and kinds[-1] == "ready"
    short = json.loads(cli("timeline", "1", "--db", db, "--after", "1min", "--format", "json").out)
    assert "ready" not in [e["kind"] for e in short["events"]]
    assert cli("timeline", "7", "--db", db).err == "Error: no incident 7 (see 'postmortem incidents')\n"
    tr = cli("trends", "--db", db, "--out", tmp_path / "t")
    assert tr.code == 0 and (tmp_path / "t" / "trends.md").exists()


def test_debug_shows_traceback_only_with_flag(cli: Any, tmp_path: Path) -> None:
    plain = cli("ingest", tmp_path / "nope", "--db", tmp_path / "pm.duckdb")
    assert "Traceback" not in plain.err
    dbg = cli("--debug", "ingest", tmp_path / "nope", "--db", tmp_path / "pm.duckdb")
    assert "Traceback" in dbg.err and dbg.err.rstrip().endswith("no such file or directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied(cli: Any, tmp_path: Path) -> None:
    f = tmp_path / "dmesg.txt"
    f.write_bytes(DMESG.read_bytes())
    f.chmod(0)
    r = cli("ingest", f, "--db", tmp_path / "pm.duckdb")
    assert r.code == 1
    assert r.err == f"Error: {f}: permission denied\n"


def test_an_internal_error_is_one_line(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug's message is one line: DuckDB's errors carry the query, a caret line and candidate
    columns beneath (a store missing a column gave four lines)."""
    import postmortem.parsers

    def boom() -> None:
        raise RuntimeError(
            'Binder Error: Referenced column "shift_s" not found\n\nLINE 2: SELECT shift_s\n  ^^^'
        )

    monkeypatch.setattr(postmortem.parsers, "all_parsers", boom)
    r = cli("formats")
    assert (r.code, r.err) == (
        70,
        'Error: internal error: RuntimeError: Binder Error: Referenced column "shift_s" not found '
        "(rerun with --debug and report it)\n",
    )


def test_parser_bug_is_reported_per_file_and_others_continue(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from postmortem.parsers import get_parser

    parser = get_parser("dmesg")
    assert parser is not None

    def boom(chunks: Any, ctx: Any) -> Any:
        raise ValueError("synthetic bug")
        yield

    monkeypatch.setenv("POSTMORTEM_STRICT", "0")
    monkeypatch.setattr(type(parser), "parse", lambda self, chunks, ctx: boom(chunks, ctx))
    db = tmp_path / "pm.duckdb"
    r = cli("ingest", DMESG, SAMPLE / "nvidia-smi-gpu.csv", "--db", db)
    assert r.code == 1
    assert "internal error while parsing (ValueError: synthetic bug)" in r.err
    assert "nvidia-smi-gpu.csv: ingested as nvidia-smi-csv" in r.out
    store = Store.open_readonly(db)
    assert store.fetchall("SELECT format FROM sources") == [("nvidia-smi-csv",)]
    store.close()


@pytest.mark.parametrize(
    ("cli_tz", "expected_utc"),
    [
        (None, "2026-03-20T09:01:46Z"),  # the [[sources]] hint (Berlin) beats [defaults] tz (Tokyo)
        ("UTC", "2026-03-20T10:01:46Z"),  # --tz beats the hint
    ],
)
def test_zone_precedence_cli_then_source_hint_then_defaults(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli_tz: str | None, expected_utc: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "postmortem.toml").write_text(
        '[defaults]\ntz = "Asia/Tokyo"\n\n[[sources]]\npath = "*a.log"\ntz = "Europe/Berlin"\n'
    )
    log = tmp_path / "a.log"
    log.write_text("[2026-03-20 10:01:46] The server is fired up and ready to roll!\n")
    other = tmp_path / "b.log"  # no hint: the config's zone
    other.write_text("[2026-03-20 10:01:46 TP0] The server is fired up and ready to roll!\n")
    args = ["ingest", log, other, "--db", tmp_path / "pm.duckdb"]
    assert cli(*args, *(["--tz", cli_tz] if cli_tz else [])).code == 0
    r = cli(
        "query",
        "SELECT ts FROM server_events e JOIN sources s USING (source_id) ORDER BY s.path",
        "--db",
        tmp_path / "pm.duckdb",
        "--format",
        "json",
    )
    assert [row["ts"] for row in json.loads(r.out)] == [
        expected_utc,
        "2026-03-20T10:01:46Z" if cli_tz else "2026-03-20T01:01:46Z",
    ]


def test_index_lists_kills_with_no_time_and_gpu_xids(cli: Any, tmp_path: Path) -> None:
    """A dmesg of boot-relative stamps with no boot known: its kills are in no report, so the
    index lists each one (never dropped silently), and its Xid events, with their lines."""
    log = tmp_path / "dmesg.txt"
    log.write_bytes((REPO / "tests" / "data" / "dmesg" / "default_memcg_group_xid.txt").read_bytes())
    r = cli("build", "--logs", log, "--db", tmp_path / "pm.duckdb", "--out", tmp_path / "r", "--tz", "UTC")
    assert r.code == 0 and "0 incident(s)" in r.out
    index = (tmp_path / "r" / "index.md").read_text()
    kills = index.split("## OOM kills with no time", 1)[1].split("##", 1)[0]
    assert sum("dmesg.txt:" in row for row in kills.splitlines()) == 3  # one memcg record, three killed
    assert "VLLM Worker 1 (pid 5151)" in kills and "812.0" in kills
    xids = index.split("## GPU Xid events", 1)[1].split("##", 1)[0]
    # the last 79 is GPU 87's "fallen off the bus" sentence (86's follows its own Xid 79 line)
    assert [int(row.split("|")[4]) for row in xids.splitlines() if "dmesg.txt:" in row] == [31, 45, 79, 79]


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--year", "2024"], "2024, is from --year"),
        (["--since", "2023-06-01"], "2023, is from the year of --since"),
        ([], "is from the file's modification time (give --year if the file was copied)"),
    ],
)
def test_the_year_of_year_less_stamps_is_noted(cli: Any, tmp_path: Path, args: list[str], why: str) -> None:
    """Where the year of a syslog file came from is said on the source (and in the reports' data
    coverage): a copied file's mtime gives a wrong year silently otherwise."""
    log = tmp_path / "messages"
    log.write_text("May 25 20:17:19 gpu1 kernel: Out of memory: Killed process 1 (x)\n")
    cmd = "build" if "--since" in args else "ingest"
    extra = ["--logs", log, "--out", tmp_path / "r"] if cmd == "build" else [log]
    r = cli(cmd, *extra, "--db", tmp_path / "pm.duckdb", "--tz", "UTC", *args)
    assert r.code == 0, r.err
    notes = cli("query", "SELECT notes FROM sources", "--db", tmp_path / "pm.duckdb", "--format", "csv").out
    assert "year-less stamps: the first line's year, " in notes and why in notes


def test_a_copied_year_less_journal_takes_the_year_of_the_nights_dated_sources(
    cli: Any, tmp_path: Path
) -> None:
    """A year-less syslog copied a year after a New Year's night: its mtime says 2026, the
    server's own log (dated) says 2025. The journal is moved a year back and its kill is the
    server's night; without the server's log, the terminal says the year is a guess."""
    import os

    logs = tmp_path / "logs"
    logs.mkdir()
    journal = logs / "messages"
    journal.write_text(
        "Jan  1 00:47:57 gpu1 kernel: Out of memory: Killed process 4242 (python3) total-vm:1000kB, "
        "anon-rss:900kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0\n"
        "Jan  1 00:47:58 gpu1 systemd[1]: llm.service: Main process exited, code=killed, status=9/KILL\n"
    )
    copied = datetime(2026, 1, 3, 9, 0, tzinfo=UTC).timestamp()
    os.utime(journal, (copied, copied))
    alone = cli(
        "build", "--logs", logs, "--db", tmp_path / "a.duckdb", "--out", tmp_path / "ra", "--tz", "UTC"
    )
    assert alone.code == 0, alone.err
    assert "its stamps have no year; 2026 is the file's modification time's" in alone.out
    (logs / "llm.service.log").write_text(
        "[2024-12-31 23:50:01] server_args=ServerArgs(model_path='/m', tp_size=2, port=30000)\n"
        "[2025-01-01 00:47:50 TP0] Decode batch. #running-req: 7, #token: 900, token usage: 0.90, "
        "gen throughput (token/s): 100.00, #queue-req: 3\n"
    )
    r = cli("build", "--logs", logs, "--db", tmp_path / "b.duckdb", "--out", tmp_path / "rb", "--tz", "UTC")
    assert r.code == 0, r.err
    assert "no dated source confirms it" not in r.out
    got = cli("query", "SELECT ts FROM incidents", "--db", tmp_path / "b.duckdb", "--format", "csv").out
    assert "2025-01-01T00:47:57Z" in got, got


def test_build_without_ingesting_needs_an_existing_store(cli: Any, tmp_path: Path) -> None:
    """``build --no-ingest`` with a mistyped --db is an error, not a new empty store and
    '0 incident(s)'."""
    db = tmp_path / "typo.duckdb"
    r = cli("build", "--no-ingest", "--db", db, "--out", tmp_path / "r")
    assert (
        r.code == 1 and r.err == f"Error: {db}: no such database (run 'postmortem ingest' or 'build' first)\n"
    )
    assert not db.exists()


def test_a_wrong_forced_format_can_be_undone(cli: Any, tmp_path: Path) -> None:
    """A dmesg file forced as SGLang stores nothing and says so; forcing the right format
    replaces it (it used to answer 'unchanged', so the file could not be loaded again without a
    new store); then, unchanged, it is not read again, from the store or from the file index."""
    log = tmp_path / "dmesg.txt"
    log.write_bytes(DMESG.read_bytes())
    db = tmp_path / "pm.duckdb"
    wrong = cli("ingest", log, "--format", "sglang", "--db", db)
    assert wrong.code == 0 and "the forced format sglang found nothing in 148 lines" in wrong.out
    right = cli("ingest", log, "--format", "dmesg", "--db", db)
    assert right.code == 0 and right.out.startswith(f"{log}: replaced as dmesg: 148 lines, 168 records")
    for args in ([], ["--format", "dmesg"]):
        again = cli("ingest", log, *args, "--db", db)
        assert again.out == f"{log}: unchanged\n", again
    rows = cli("query", "SELECT format, records FROM sources", "--db", db, "--format", "csv").out
    assert rows.split() == ["format,records", "dmesg,168"]


def test_readers_are_told_of_an_interrupted_load_and_export_refuses_it(cli: Any, tmp_path: Path) -> None:
    """A load a crash left unfinished (status 'loading', partial rows) until the next writer
    removes it: the reading commands say so on stderr, and export refuses to spread its rows."""
    import duckdb

    db = tmp_path / "pm.duckdb"
    assert cli("ingest", DMESG, "--db", db).code == 0
    con = duckdb.connect(str(db))
    con.execute("UPDATE sources SET status = 'loading'")  # what kill -9 mid-load leaves
    con.close()
    q = cli("query", "SELECT count(*) AS n FROM kernel_messages", "--db", db, "--format", "csv")
    assert q.code == 0 and q.err.startswith(f"warning: {db}: the load of {DMESG} was interrupted;")
    e = cli("export", "--parquet", tmp_path / "x", "--db", db)
    assert e.code == 1  # one line: the error, not a warning saying the same before it
    assert e.err == (
        f"Error: {db}: the load of {DMESG} was interrupted and its partial rows are still in the "
        "store; run 'postmortem ingest' or 'build' once (it removes them), then export\n"
    )
    assert cli("ingest", DMESG, "--db", db).code == 0  # a writer: removes it, loads the file again
    q = cli("query", "SELECT status FROM sources", "--db", db, "--format", "csv")
    assert q.err == "" and q.out.split() == ["status", "complete"]


def test_trends_writes_where_the_config_says(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``trends`` without --out follows ``[defaults] out`` as ``build`` does (it used to write to
    reports/ whatever the configuration said)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "postmortem.toml").write_text('[defaults]\nout = "ticket"\n')
    log = tmp_path / "a.log"
    log.write_text("[2026-03-20 10:01:46] The server is fired up and ready to roll!\n")
    assert cli("ingest", log, "--db", tmp_path / "pm.duckdb").code == 0
    r = cli("trends", "--db", tmp_path / "pm.duckdb")
    assert r.code == 0 and r.out.strip() == str(Path("ticket") / "trends.md")
    assert (tmp_path / "ticket" / "trends.md").exists() and not (tmp_path / "reports").exists()


def test_ctrl_c_inside_a_compiled_kernel_is_an_interrupt_not_a_parser_bug(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C inside a numba kernel surfaces as the kernel's ``SystemError`` with the interrupt
    chained: the ingest stops (exit 130) instead of reporting a parser bug and going on to the
    next file."""
    from postmortem.parsers import get_parser

    parser = get_parser("dmesg")
    assert parser is not None

    def interrupted(chunks: Any, ctx: Any) -> Any:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise SystemError("CPUDispatcher(<function k>) returned a result with an exception set")  # noqa: B904
        yield

    monkeypatch.setenv("POSTMORTEM_STRICT", "0")
    monkeypatch.setattr(type(parser), "parse", lambda self, chunks, ctx: interrupted(chunks, ctx))
    db = tmp_path / "pm.duckdb"
    r = cli("ingest", DMESG, SAMPLE / "nvidia-smi-gpu.csv", "--db", db)
    assert r.code == 130, r
    assert "internal error" not in r.err
    assert "nvidia-smi-gpu.csv: ingested" not in r.out
    assert r.err.endswith("Error: interrupted\n"), r.err  # it was silent


@pytest.mark.parametrize(
    ("args", "env", "code", "message"),
    [
        (["incidents", "--since", "@1e20"], {}, 2, "Error: time out of range: '@1e20'"),
        (["incidents", "--since", "2025-05-25T20:00+25:00"], {}, 2, "Error: time out of range"),
        (["incidents", "--since", "0001-01-01", "--tz", "Asia/Tokyo"], {}, 2, "Error: time out of range"),
        (["timeline", "1", "--window", "nan"], {}, 2, "Error: duration out of range: 'nan'"),
        (["timeline", "1", "--after", "1e20"], {}, 2, "Error: duration out of range"),
        (["ingest", str(DMESG), "--boot-time", "9999-12-31 23:59"], {}, 2, "Error: --boot-time"),
        (["ingest", str(DMESG), "--year", "99999999999999999999"], {}, 2, "Error: --year"),
        (["ingest", str(DMESG), "--host", ""], {}, 2, "Error: --host '': give the host's name"),
        (["collect", "--timeout", "inf"], {}, 2, "Error: --timeout inf: at most 86400 seconds"),
        (["collect", "--timeout", "nan"], {}, 2, "Error: --timeout nan: at most 86400 seconds"),
        (["sources"], {"POSTMORTEM_MEMORY_LIMIT": "abc"}, 2, "Error: POSTMORTEM_MEMORY_LIMIT='abc'"),
        (
            ["query", "select gen_random_uuid() is not null as ok, 'inf'::double as i", "--format", "json"],
            {},
            0,
            '[{"ok": true, "i": "inf"}]',
        ),
    ],
)
def test_odd_values_are_one_line_errors_not_crashes(
    cli: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    code: int,
    message: str,
) -> None:
    """Values an adversarial review found crashing (exit 70): times off the calendar, NaN and
    huge durations, a bad environment knob; and query values JSON cannot hold."""
    db = tmp_path / "pm.duckdb"
    assert cli("build", "--logs", SAMPLE, "--db", db, "--out", tmp_path / "r", "--tz", "UTC").code == 0
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    extra = ["--out", str(tmp_path / "c")] if args[0] == "collect" else ["--db", str(db)]
    r = cli(*args, *extra)
    assert r.code == code, r
    out = r.err if code else r.out
    assert out.startswith(message), out
    assert "internal error" not in r.err and "Traceback" not in r.err


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["ingest", str(DMESG), "--wait", "-1"],
            {},
            "Invalid value for '--wait': -1.0: give a number of seconds",
        ),
        (
            ["ingest", str(DMESG), "--wait", "nan"],
            {},
            "Invalid value for '--wait': nan: give a number of seconds",
        ),
        (["ingest", str(DMESG), "--db", ""], {}, "Invalid value for '--db': give a value"),
        (["ingest", str(DMESG), "--tz", ""], {}, "Invalid value for '--tz': give a value"),
        (["build", "--no-ingest", "--out", " "], {}, "Invalid value for '--out': give a value"),
        (
            ["ingest", str(DMESG), "--max-bytes", "0"],
            {},
            "Error: --max-bytes 0: give a size in bytes, 1 or more",
        ),
        (
            ["ingest", str(DMESG)],
            {"POSTMORTEM_INSERT_ROWS": "0"},
            "Error: POSTMORTEM_INSERT_ROWS='0': give a whole",
        ),
        (
            ["ingest", str(DMESG)],
            {"POSTMORTEM_COMMIT_ROWS": "-5"},
            "Error: POSTMORTEM_COMMIT_ROWS='-5': give a whole",
        ),
    ],
)
def test_values_that_mean_nothing_are_refused(
    cli: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    """Values a review found accepted without a word: a negative or NaN --wait, an empty --db,
    --tz or --out (an unset shell variable: silently the default), --max-bytes 0, a row knob of
    0 or below. Usage errors (exit 2)."""
    monkeypatch.chdir(tmp_path)
    if env:  # the knobs are read once, when the loader is first imported: a process of its own
        import subprocess
        import sys

        proc = subprocess.run(
            [sys.executable, "-m", "postmortem", *args],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
        )
        r = type("R", (), {"code": proc.returncode, "err": proc.stderr})()
    else:
        r = cli(*args)
    assert r.code == 2 and message in r.err, r.err
    assert "Traceback" not in r.err
    if not env:  # options are checked before anything is opened (the knobs when a load starts)
        assert not list(tmp_path.glob("*.duckdb"))


def test_store_problems_are_one_line_errors(cli: Any, tmp_path: Path) -> None:
    import duckdb

    plain, foreign = tmp_path / "plain.duckdb", tmp_path / "foreign.duckdb"
    duckdb.connect(str(plain)).close()
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE sources (a INTEGER)")
    con.close()
    r = cli("sources", "--db", plain)
    assert (r.code, r.err.splitlines()[0]) == (
        1,
        f"Error: {plain}: not a postmortem store (a DuckDB file without its tables; give the --db that 'postmortem ingest' or 'build' wrote)",
    )
    r = cli("ingest", DMESG, "--db", foreign)
    assert (r.code, r.err) == (
        1,
        f"Error: {foreign}: not a postmortem store (it holds other tables); give another --db\n",
    )
    # a SQLite file: named as such (DuckDB would fetch its SQLite extension from the network)
    import sqlite3

    lite = tmp_path / "lite.db"
    sqlite3.connect(lite).execute("CREATE TABLE t (x)").connection.commit()
    r = cli("sources", "--db", lite)
    assert (r.code, r.err) == (1, f"Error: {lite}: a SQLite database, not a postmortem store\n")
    # a store path under a file
    r = cli("ingest", DMESG, "--db", DMESG / "pm.duckdb")
    assert (r.code, r.err) == (1, f"Error: {DMESG / 'pm.duckdb'}: {DMESG} is a file, not a directory\n")
    # an output path that is a file: the OS's answer, one line
    assert cli("ingest", DMESG, "--db", tmp_path / "pm.duckdb").code == 0
    r = cli("export", "--parquet", DMESG, "--db", tmp_path / "pm.duckdb")
    assert (r.code, r.err) == (1, f"Error: {DMESG}: not a directory; export into a new or empty directory\n")


def test_a_store_from_the_previous_schema_is_upgraded_when_read(cli: Any, tmp_path: Path) -> None:
    import duckdb

    db = tmp_path / "pm.duckdb"
    assert cli("build", "--logs", SAMPLE, "--db", db, "--out", tmp_path / "r", "--tz", "UTC").code == 0
    con = duckdb.connect(str(db))
    # as schema 3 left it: no sources.file_id (version 4), no containers table (version 6),
    # SGLang's own tables without engine columns (version 7), no Kubernetes tables (version 9), no
    # store_parts (version 10), no unit_links (version 11), no incidents.serving (version 12), no
    # service_loads.ready_source_id (version 13), no journal_headers (version 14), no vm_rss_kb
    # (version 15)
    con.execute("ALTER TABLE sources DROP COLUMN file_id")
    con.execute("ALTER TABLE oom_kills DROP COLUMN vm_rss_kb")  # (version 15)
    con.execute("ALTER TABLE incident_victims DROP COLUMN vm_rss_kb")
    con.execute("ALTER TABLE incidents DROP COLUMN serving")  # (version 12)
    con.execute("DROP TABLE containers")
    con.execute("DROP TABLE k8s_containers")  # (version 9)
    con.execute("DROP TABLE k8s_events")
    con.execute("DROP TABLE store_parts")  # (version 10)
    con.execute("DROP TABLE unit_links")  # (version 11)
    con.execute("DROP TABLE journal_headers")  # (version 14)
    con.execute("DROP VIEW sglang_events")
    con.execute("DROP VIEW sglang_batches")
    con.execute("ALTER TABLE server_events RENAME TO sglang_events")
    con.execute("ALTER TABLE server_stats RENAME TO sglang_batches")
    for table, cols in (
        ("sglang_events", ("engine",)),
        ("sglang_batches", ("engine", "swapped_req", "preemptions", "cpu_kv_usage", "prefix_cache_hit_rate")),
        ("server_configs", ("engine", "engine_version")),
        ("http_requests", ("engine",)),
        ("cuda_ooms", ("engine",)),
        ("service_loads", ("engine", "ready_source_id")),
        ("recommendations", ("headline", "summary", "action", "action_type")),
    ):
        for col in cols:
            con.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
    con.execute("DELETE FROM schema_migrations WHERE version >= 4")
    con.close()
    r = cli("trends", "--db", db, "--out", tmp_path / "t")
    assert r.code == 0, r
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() == (latest_version(),)
    assert con.execute("SELECT count(*) FROM containers").fetchone() == (0,)
    assert con.execute("SELECT count(file_id) FROM sources").fetchone() == (0,)
    assert con.execute("SELECT DISTINCT engine FROM server_stats").fetchall() == [("sglang",)]
    con.close()


def test_a_pipe_given_by_name_is_read_like_stdin(cli: Any, tmp_path: Path) -> None:
    """/dev/stdin, <(…), a FIFO cannot be read twice; a dangling symlink in a directory is
    skipped, not the end of the whole ingest."""
    import os
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = DMESG.read_bytes()
    writer = threading.Thread(target=lambda: fifo.write_bytes(data))
    writer.start()
    r = cli("ingest", fifo, "--db", tmp_path / "pm.duckdb")
    writer.join()
    assert r.out.startswith(f"{fifo}: ingested as dmesg: 148 lines"), r
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "dmesg.txt").write_bytes(data)
    (logs / "zz").symlink_to(tmp_path / "nowhere")
    r = cli("ingest", logs, "--db", tmp_path / "other.duckdb")
    assert r.code == 0 and r.out.startswith(f"{logs / 'zz'}: skipped — a dangling symlink\n"), r
    assert f"{logs / 'dmesg.txt'}: ingested as dmesg" in r.out


def test_a_stream_is_spooled_to_disk_within_max_bytes(cli: Any, tmp_path: Path) -> None:
    """A pipe is read block by block into a temporary file (it was read whole into memory: a
    pipe of /dev/zero took the machine's RAM), and more than --max-bytes of it is refused; a
    device file is refused by name."""
    import contextlib
    import os
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def write() -> None:
        # the reader may stop after --max-bytes and close its end first
        with contextlib.suppress(BrokenPipeError):
            fifo.write_bytes(b"\0" * (3 << 20))

    writer = threading.Thread(target=write)
    writer.start()
    r = cli("ingest", fifo, "--db", tmp_path / "pm.duckdb", "--max-bytes", str(1 << 20))
    # let the writer finish: drain its end without blocking when it has gone already
    drain = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while writer.is_alive():
            try:
                os.read(drain, 1 << 20)
            except BlockingIOError:
                writer.join(0.05)
    finally:
        os.close(drain)
    writer.join()
    assert (
        r.code == 1
        and r.err
        == f"Error: {fifo}: more than --max-bytes (1048576 bytes); raise it if this stream is genuine\n"
    )
    d = cli("ingest", "/dev/zero", "--db", tmp_path / "pm.duckdb")
    assert d.code == 1 and d.err.startswith("Error: /dev/zero: a character device, not a log file;")


def test_a_directory_walk_names_what_it_does_not_read(cli: Any, tmp_path: Path) -> None:
    """A FIFO (reading it could block for ever), a dangling symlink and a symlink to a directory
    (not followed) in a tree of logs are listed as skipped with the reason — they were passed
    over in silence — both when the store is opened and when the file index answers."""
    import os

    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    (logs / "dmesg.txt").write_bytes(DMESG.read_bytes())
    os.mkfifo(logs / "pipe")
    (logs / "gone").symlink_to(tmp_path / "nowhere")
    (logs / "linked").symlink_to(logs / "sub")
    want = [
        f"{logs / 'gone'}: skipped — a dangling symlink",
        f"{logs / 'linked'}: skipped — a symlink to a directory, not followed (name it to read it)",
        f"{logs / 'pipe'}: skipped — not a regular file (a FIFO, socket or device: name it to read a pipe)",
    ]
    for _ in range(2):
        r = cli("ingest", logs, "--db", tmp_path / "pm.duckdb")
        assert r.code == 0 and r.out.splitlines()[:3] == want, r


def test_an_archive_unreadable_from_its_start_says_why(cli: Any, tmp_path: Path) -> None:
    """Damage in the first block, or a --max-bytes below the first block, was reported as an
    'empty file'; in a directory the other files are still ingested."""
    import lzma

    data = bytearray(lzma.compress(DMESG.read_bytes()))
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "logs" / "dmesg.1.xz"
    bad.parent.mkdir()
    bad.write_bytes(bytes(data))
    r = cli("ingest", bad, "--db", tmp_path / "a.duckdb")
    assert r.code == 1 and r.err.startswith(f"Error: {bad}: corrupt xz data after 0 decompressed bytes"), r
    gz = tmp_path / "d.gz"
    gz.write_bytes(gzip.compress(DMESG.read_bytes()))
    r = cli("ingest", gz, "--max-bytes", "1000", "--db", tmp_path / "b.duckdb")
    assert r.err.startswith(f"Error: {gz}: decompressed size exceeds --max-bytes (1000 bytes)"), r
    (bad.parent / "dmesg.txt").write_bytes(DMESG.read_bytes())
    r = cli("ingest", bad.parent, "--db", tmp_path / "c.duckdb")
    assert r.code == 0 and f"{bad}: skipped — corrupt xz data" in r.out, r
    assert f"{bad.parent / 'dmesg.txt'}: ingested as dmesg: 148 lines" in r.out


def test_a_file_name_that_is_not_utf8(cli: Any, tmp_path: Path) -> None:
    """A name's bytes that are not UTF-8 are stored and printed as \\xNN (they crashed the
    store's insert with an internal error); the file is still read by its real name."""
    d = tmp_path / "logs"
    d.mkdir()
    name = os.fsdecode(b"kern\xff.log")
    _journal(d / name, 0, 4)
    db = tmp_path / "pm.duckdb"
    r = cli("ingest", d, "--db", db)
    assert r.code == 0, r
    assert r.out.startswith(f"{d}/kern\\xff.log: ingested as journal-short: 4 lines")
    assert cli("ingest", d / name, "--db", db).out.strip() == f"{d / 'kern'}\\xff.log: unchanged"
    assert [(s[0], s[1]) for s in _sources(db)] == [(f"{d}/kern\\xff.log", 4)]


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_query_output_is_streamed_in_batches_with_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """``query`` writes its result a batch at a time (a 100M-row result was held in memory and
    OOM-killed); csv and json are the bytes of formatting the whole result at once, across batch
    boundaries and for an empty result, a table the same cells."""
    import io

    from postmortem import query as q
    from postmortem.ingest import IngestOptions, ingest_paths

    store = Store.open(tmp_path / "pm.duckdb")
    try:
        ingest_paths(store, [str(DMESG)], IngestOptions())
        monkeypatch.setattr(q, "STREAM_ROWS", 7)
        for sql in (
            "SELECT line_no, ts, level, message FROM kernel_messages ORDER BY line_no LIMIT 40",
            "SELECT 'a|b' AS x, NULL AS y, 1.5 AS z, [1, 2] AS l",
            "SELECT 1 AS a WHERE false",
        ):
            out = io.StringIO()
            n = q.write_user_query(store, sql, fmt, out)
            whole = q.run_user_query(store, sql)
            assert n == len(whole.rows)
            want = q.FORMATTERS[fmt](whole)
            if fmt == "table":  # its widths come from the first batch: the same cells, maybe out of line
                assert [ln.split() for ln in out.getvalue().splitlines()] == [
                    ln.split() for ln in want.splitlines()
                ]
            else:
                assert out.getvalue() == want, sql
    finally:
        store.close()


def test_control_characters_cannot_forge_output_lines(cli: Any, tmp_path: Path) -> None:
    """A file name holding a newline printed a second, forged 'Error:' line; an escape sequence
    in a name or in a stored value reached the terminal raw. Both are written as \\xNN."""
    odd = tmp_path / "fake.log\nError: forged\x1b[2J"
    odd.write_bytes(DMESG.read_bytes())
    db = tmp_path / "pm.duckdb"
    r = cli("ingest", odd, "--db", db)
    assert r.code == 0 and r.out.splitlines()[0].startswith(
        f"{tmp_path}/fake.log\\x0aError: forged\\x1b[2J: ingested"
    )
    assert not any(line.startswith("Error:") for line in (r.out + r.err).splitlines())
    q = cli("query", "SELECT right(path, 7) AS tail, 'x' || chr(27) || '[2Jy' AS v FROM sources", "--db", db)
    assert "\x1b" not in q.out and q.out.splitlines()[2].split() == ["\\x1b[2J", "x\\x1b[2Jy"]


def test_a_template_that_includes_itself_is_a_usage_error(cli: Any, tmp_path: Path) -> None:
    """It was an internal error (RecursionError, exit 70)."""
    tpl = tmp_path / "tpl"
    tpl.mkdir()
    (tpl / "incident.md.j2").write_text('{% include "incident.md.j2" %}\n')
    db, out = tmp_path / "pm.duckdb", tmp_path / "r"
    r = cli("build", "--logs", SAMPLE, "--db", db, "--out", out, "--tz", "UTC", "--templates", tpl)
    assert r.code == 2 and r.err.strip().endswith("includes or extends itself (endless recursion)"), r


def test_a_walk_skips_what_it_cannot_read_or_what_went_away_and_reads_the_rest(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One unreadable file, an unlistable subdirectory, a symlink loop, or a file a rotation
    moved away between the listing and its read stopped the whole ingest (or went unsaid): each
    is listed as skipped with its reason and the other files are read."""
    import os

    import postmortem.ingest as ingest_mod
    import postmortem.io as io_mod

    logs = tmp_path / "logs"
    (logs / "secret").mkdir(parents=True)
    for name in ("a-dmesg.txt", "b-locked.txt", "c-rotated.txt", "secret/x.txt"):
        (logs / name).write_bytes(DMESG.read_bytes())
    (logs / "loop").symlink_to(logs / "loop")
    real_access, real_walk, real_head = os.access, os.walk, ingest_mod.read_head

    def access(path: Any, mode: int) -> bool:  # root reads whatever the mode: pretend otherwise
        return not str(path).endswith("b-locked.txt") and real_access(path, mode)

    def walk(top: Any, **kw: Any) -> Any:
        for entry in real_walk(top, **kw):
            if entry[0].endswith("secret"):
                kw["onerror"](PermissionError(13, "Permission denied", entry[0]))
                continue
            yield entry

    def head(inp: Any, **kw: Any) -> Any:
        if inp.display.endswith("c-rotated.txt"):
            os.remove(inp.display)  # logrotate moved it away just now
        return real_head(inp, **kw)

    monkeypatch.setattr(io_mod.os, "access", access)
    monkeypatch.setattr(io_mod.os, "walk", walk)
    monkeypatch.setattr(ingest_mod, "read_head", head)
    r = cli("ingest", logs, "--db", tmp_path / "pm.duckdb")
    assert r.code == 0, r
    assert f"{logs / 'a-dmesg.txt'}: ingested as dmesg" in r.out
    assert f"{logs / 'b-locked.txt'}: skipped — permission denied" in r.out
    assert f"{logs / 'c-rotated.txt'}: skipped — no such file or directory" in r.out.lower()
    assert f"{logs / 'loop'}: skipped — a symlink loop" in r.out
    assert f"{logs / 'secret'}: skipped — a directory that could not be read (Permission denied)" in r.out


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ('[[sources]]\npath = "*.log"\ntimezone = "UTC"\n', "unknown key 'timezone' in [[sources]] entry 1"),
        ('[defaults]\ndatabase = "x.duckdb"\n', "unknown key 'database' in [defaults]"),
        ('[default]\ndb = "x.duckdb"\n', "unknown key 'default' at the top level"),
        # empty values fell back to sample_logs/ and reports/ without a word
        ("[defaults]\nlogs = []\n", "'logs' is empty; list the log paths"),
        ('[defaults]\nout = ""\n', "'out' is empty"),
        # values of the wrong type were ignored as silently
        ('collect = "oops"\n', "[collect] must be a table"),
        ("[collect]\nsglang_logs = 5\n", "'sglang_logs' in [collect] must be a list of paths or globs"),
        ('sources = "x"\n', "'sources' must be [[sources]] tables"),
    ],
)
def test_a_mistyped_configuration_key_is_an_error(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str, words: str
) -> None:
    """A key postmortem does not know (a typo of tz, db, defaults) was ignored without a word,
    so the setting silently did not apply."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "postmortem.toml").write_text(toml)
    r = cli("sources", "--db", tmp_path / "pm.duckdb")
    assert r.code == 2 and words in r.err and r.err.count("\n") == 1, r


def test_postmortem_debug_off_values_mean_off(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """POSTMORTEM_DEBUG=0 turned tracebacks on: any value did."""
    db = tmp_path / "pm.duckdb"
    for value, shown in (("0", False), ("false", False), ("", False), ("1", True), ("yes", True)):
        monkeypatch.setenv("POSTMORTEM_DEBUG", value)
        r = cli("query", "SELECT * FROM no_such_table", "--db", db)
        assert r.code == 1 and ("Traceback" in r.err) == shown, (value, r.err)


def test_a_logrotate_cycle_moves_each_generation_and_stores_nothing_twice(cli: Any, tmp_path: Path) -> None:
    """logrotate with rotate 2 and compress: app.log.1 is compressed into app.log.2.gz — whose
    old file was deleted, and whose inode the new one may get again (then it looks rewritten in
    place) — app.log becomes app.log.1, a new app.log begins. Each stored generation follows its
    content to its new name, the deleted .2.gz's rows stay (rotated away), nothing is stored
    twice, and a line cited as app.log.1:N is that file's line N."""
    import gzip
    import hashlib

    db = tmp_path / "pm.duckdb"
    logs = tmp_path / "logs"
    logs.mkdir()
    sglang = (SAMPLE / "sglang-k26.log").read_text().splitlines(keepends=True)
    gen0, gen1, gen2 = "".join(sglang[:1000]), "".join(sglang[1000:2000]), "".join(sglang[2000:3000])
    (logs / "app.log.2.gz").write_bytes(gzip.compress(gen0.encode()))
    (logs / "app.log.1").write_text(gen1)
    (logs / "app.log").write_text(gen2)
    assert cli("ingest", logs, "--db", db, "--tz", "UTC").code == 0
    with Store.open(db) as store:
        before = store.fetchall("SELECT count(*) FROM server_stats")[0][0]

    def rotate(new_live: str) -> None:
        """logrotate: app.log.1 compressed into app.log.2.gz — rewritten in place, as when the
        deleted file's inode is reused — app.log renamed to app.log.1, a new app.log."""
        with (logs / "app.log.2.gz").open("r+b") as fh:
            fh.truncate(0)
            fh.write(gzip.compress((logs / "app.log.1").read_bytes()))
        (logs / "app.log.1").unlink()
        (logs / "app.log").rename(logs / "app.log.1")
        (logs / "app.log").write_text(new_live)

    rotate("".join(sglang[3000:3050]))
    r = cli("ingest", logs, "--db", db, "--tz", "UTC")
    assert r.code == 0, r
    assert (
        f"{logs / 'app.log.2.gz'}: duplicate — same content as {logs / 'app.log.1'} (rotated away)" in r.out
    )
    with Store.open(db) as store:
        rows = store.fetchall("SELECT path, lines, left(sha256, 16) FROM sources ORDER BY path")
        sha = {p: h for p, _n, h in rows}
        assert [(p, n) for p, n, _h in rows] == [
            (str(logs / "app.log"), 50),
            (str(logs / "app.log.1"), 1000),
            (str(logs / "app.log.2.gz"), 1000),
            (f"{logs / 'app.log.2.gz'} (rotated away)", 1000),
        ]
        assert sha[str(logs / "app.log.1")] == hashlib.sha256(gen2.encode()).hexdigest()[:16]
        assert sha[str(logs / "app.log.2.gz")] == hashlib.sha256(gen1.encode()).hexdigest()[:16]
        after = store.fetchall("SELECT count(*) FROM server_stats")[0][0]
        new = store.fetchall(
            "SELECT count(*) FROM server_stats b JOIN sources s USING (source_id) WHERE s.path = ?",
            [str(logs / "app.log")],
        )[0][0]
        assert after == before + new  # nothing stored twice, nothing deleted
        # app.log.1 holds the third thousand lines: its stored line 1 is that file's line 1
        first = store.fetchall(
            "SELECT min(line_no) FROM server_stats b JOIN sources s USING (source_id) WHERE s.path = ?",
            [str(logs / "app.log.1")],
        )[0][0]
        assert (logs / "app.log.1").read_text().splitlines()[first - 1] == sglang[2000 + first - 1].rstrip(
            "\n"
        )
    r = cli("ingest", logs, "--db", db, "--tz", "UTC")
    assert r.out.count(": unchanged") == 3, r
    # a second cycle: two files rotated away from app.log.2.gz keep two names
    rotate("".join(sglang[3050:3100]))
    assert cli("ingest", logs, "--db", db, "--tz", "UTC").code == 0
    with Store.open(db) as store:
        paths = [p for (p,) in store.fetchall("SELECT path FROM sources ORDER BY path")]
        assert paths == [
            str(logs / "app.log"),
            str(logs / "app.log.1"),
            str(logs / "app.log.2.gz"),
            f"{logs / 'app.log.2.gz'} (rotated away)",
            f"{logs / 'app.log.2.gz'} (rotated away, 2)",
        ]


def test_a_rotated_logs_rows_stay_when_only_the_live_file_is_ingested(cli: Any, tmp_path: Path) -> None:
    """logrotate renames server.log away and the service opens a new one: ingesting the live
    path keeps the old file's rows (they were replaced, and a cron ingest of one file lost the
    log's history at every rotation). When the rotated file turns up later — grown by a last
    line — its growth is appended to the kept rows, not stored twice. A file rewritten in place
    (the same inode: copytruncate, ``dmesg > file``) is still replaced."""
    db = tmp_path / "pm.duckdb"
    logs = tmp_path / "logs"
    logs.mkdir()
    live = logs / "server.log"
    sglang = (SAMPLE / "sglang-k26.log").read_text().splitlines(keepends=True)
    live.write_text("".join(sglang[:3000]))
    assert cli("ingest", live, "--db", db, "--tz", "UTC").code == 0
    live.rename(logs / "server.log.1")
    live.write_text("".join(sglang[3000:]))
    r = cli("ingest", live, "--db", db, "--tz", "UTC")
    assert r.code == 0 and r.out.startswith(f"{live}: ingested as sglang: {len(sglang) - 3000} lines"), r
    assert f"as '{live} (rotated away)'" in r.out
    with Store.open(db) as store:
        rows = store.fetchall("SELECT path, lines FROM sources ORDER BY source_id")
        assert rows == [(f"{live} (rotated away)", 3000), (str(live), len(sglang) - 3000)]
    with (logs / "server.log.1").open("a") as fh:
        fh.write(sglang[3000])
    r = cli("ingest", logs, "--db", db, "--tz", "UTC")
    assert f"{logs / 'server.log.1'}: appended as sglang: 1 new lines" in r.out, r
    with Store.open(db) as store:
        rows = store.fetchall("SELECT path, lines FROM sources ORDER BY source_id")
        assert rows == [(str(logs / "server.log.1"), 3001), (str(live), len(sglang) - 3000)]
        assert store.fetchall("SELECT sum(lines) FROM sources") == [(len(sglang) + 1,)]
    # rewritten in place, shorter: the same file, read again
    with live.open("r+") as fh:
        fh.truncate(0)
        fh.write("".join(sglang[:10]))
    r = cli("ingest", live, "--db", db, "--tz", "UTC")
    assert r.out.startswith(f"{live}: replaced as sglang: 10 lines"), r
    n = len(sglang) - 3000
    assert f" earlier records ({n} lines, 2025-05-" in r.out, r
    assert "were removed: the file was rewritten in place" in r.out, r


def test_a_build_for_another_window_keeps_the_reports_of_the_stores_other_incidents(
    cli: Any, tmp_path: Path
) -> None:
    """`build --since -6h` tonight must not delete last week's report (hand-edited, attached to a
    ticket): an incident outside the window still exists. A report of an incident the store no
    longer has is still removed."""
    db, out = tmp_path / "pm.duckdb", tmp_path / "reports"
    assert cli("build", "--logs", SAMPLE, "--db", db, "--out", out, "--tz", "UTC").code == 0
    (report,) = out.glob("*eagle3.service.md")
    report.write_text(report.read_text() + "\nEdited by on-call: INC-123\n")
    figures = sorted(p.name for p in out.glob("*.png"))
    assert figures
    gone = out / "dflash-train-20250101T000000Z-old.service.md"
    gone.write_text("an incident re-analysis no longer finds\n")
    manifest = out / ".postmortem-reports"
    manifest.write_text(manifest.read_text() + gone.name + "\n")
    r = cli("build", "--no-ingest", "--db", db, "--out", out, "--tz", "UTC", "--since", "2025-05-26")
    assert r.code == 0 and "0 incident(s)" in r.out, r
    assert report.read_text().endswith("Edited by on-call: INC-123\n")
    assert sorted(p.name for p in out.glob("*.png")) == figures
    assert not gone.exists()


def test_a_report_is_written_whole_or_not_at_all(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk while writing a report left it cut off under its real name, over the good one;
    now the earlier report stays and the error names the file."""
    import errno

    db, out = tmp_path / "pm.duckdb", tmp_path / "reports"
    assert cli("build", "--logs", SAMPLE, "--db", db, "--out", out, "--tz", "UTC").code == 0
    (report,) = out.glob("*eagle3.service.md")
    before = report.read_text()
    import postmortem.io as pio

    real = pio.os.fdopen

    class Full:
        """A file on a disk that fills after 4 KiB."""

        def __init__(self, fh: Any) -> None:
            self.fh = fh

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

        def write(self, data: bytes) -> int:
            self.fh.write(data[:4096])
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        return Full(real(fd, mode, *args, **kwargs))

    monkeypatch.setattr(pio.os, "fdopen", fdopen)
    r = cli("build", "--no-ingest", "--db", db, "--out", out, "--tz", "UTC")
    assert (r.code, r.err) == (1, f"Error: {report}: No space left on device\n"), r
    assert report.read_text() == before
    assert not list(out.glob(".*.part"))


def test_a_gzip_whose_checksum_does_not_match_keeps_every_line_and_says_so(cli: Any, tmp_path: Path) -> None:
    """gzip checks its CRC at the stream's end, after the whole text: the lines decompressed
    before it are all kept (the last 16 KB were lost with the failing call), and the error says
    that the damage may be anywhere — a checksum does not say where."""
    import gzip

    text = (SAMPLE / "sglang-k26.log").read_bytes()
    packed = bytearray(gzip.compress(text))
    packed[-5] ^= 0xFF  # the CRC32 in the trailer
    gz = tmp_path / "server.log.gz"
    gz.write_bytes(bytes(packed))
    r = cli("ingest", gz, "--db", tmp_path / "pm.duckdb", "--tz", "UTC")
    assert r.code == 1, r
    lines = len(text.splitlines())
    assert r.out.startswith(f"{gz}: error as sglang: {lines} lines"), r.out
    assert "its checksum does not match, so the text read may be damaged anywhere before this point" in r.err


def test_zone_less_times_read_in_an_assumed_zone_are_flagged(cli: Any, tmp_path: Path) -> None:
    """Zone-less stamps read in this machine's zone because no --tz was given: the source's note
    and the report's first line say so, and the report does not call that zone the host's. A
    last line dated after the file's mtime is impossible, and noted as a zone (or year) error."""
    import os

    logs = tmp_path / "logs"
    logs.mkdir()
    journal = logs / "journal.txt"
    journal.write_text(
        "2025-10-26T02:40:15+0200 gpu1 kernel: Out of memory: Killed process 6021 (python3) total-vm:1kB, "
        "anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, UID:998 pgtables:1kB oom_score_adj:0\n"
        "2025-10-26T02:40:15+0200 gpu1 systemd[1]: llm.service: Failed with result 'oom-kill'.\n"
    )
    server = logs / "sglang-llm.log"
    server.write_text(
        "[2025-10-26 02:20:00] server_args=ServerArgs(model_path='/m', tp_size=1, port=30000)\n"
        "[2025-10-26 02:25:00] The server is fired up and ready to roll!\n"
        "[2025-10-26 02:30:00] Decode batch. #running-req: 3, #token: 4000, token usage: 0.10, "
        "gen throughput (token/s): 100.00, #queue-req: 0\n"
    )
    # the file was written at 00:31 UTC (02:31 in Berlin): read as UTC, its 02:30 line is after that
    written = datetime(2025, 10, 26, 0, 31, tzinfo=UTC).timestamp()
    os.utime(server, (written, written))
    db, out = tmp_path / "pm.duckdb", tmp_path / "reports"
    env_tz = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    try:
        r = cli("build", "--logs", logs, "--db", db, "--out", out)
    finally:
        if env_tz is None:
            os.environ.pop("TZ")
        else:
            os.environ["TZ"] = env_tz
    assert r.code == 0, r
    (report,) = [p for p in out.glob("*.md") if p.name != "index.md"]
    text = report.read_text()
    with Store.open_readonly(db) as store:
        notes = dict(store.fetchall("SELECT path, notes FROM sources"))
    assert "this machine's zone (no --tz given)" in notes[str(server)]
    assert (
        "its last line is 1 h 59 min after the file's modification time: its times cannot be right"
        in notes[str(server)]
    )
    assert notes[str(journal)] is None  # short-iso prints its offset: nothing assumed
    head = next(ln for ln in text.splitlines() if ln.startswith("_Generated"))
    assert "**Zone-less times in these logs were read as " in head and "build again with --tz.**" in head
    assert "(the host's zone too)" not in head
    # with the zone named, neither
    r = cli(
        "build",
        "--logs",
        logs,
        "--db",
        tmp_path / "b.duckdb",
        "--out",
        tmp_path / "b",
        "--tz",
        "Europe/Berlin",
    )
    assert r.code == 0, r
    (report,) = [p for p in (tmp_path / "b").glob("*.md") if p.name != "index.md"]
    assert (
        "zone-less stamps read in" not in report.read_text() and "cannot be right" not in report.read_text()
    )


def test_the_timeline_shows_the_hosts_wall_clock_beside_utc(cli: Any, tmp_path: Path) -> None:
    """A host whose sources were read in Europe/Berlin: `timeline` gives each event's host-local
    time beside UTC, as the report does; a UTC host has no second column."""
    journal = tmp_path / "journal.txt"
    journal.write_text(
        "2025-06-14T02:40:15+0200 gpu1 kernel: Out of memory: Killed process 6021 (python3) total-vm:1kB, "
        "anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, UID:998 pgtables:1kB oom_score_adj:0\n"
        "2025-06-14T02:40:15+0200 gpu1 systemd[1]: llm.service: Failed with result 'oom-kill'.\n"
    )
    for zone, local in (("Europe/Berlin", True), ("UTC", False)):
        db = tmp_path / f"{zone.replace('/', '-')}.duckdb"
        assert cli("build", "--logs", journal, "--db", db, "--out", tmp_path / zone, "--tz", zone).code == 0
        r = cli("timeline", "1", "--db", db)
        assert r.code == 0, r
        head, events = r.out.splitlines()[0], r.out.split("Events:", 1)[1]
        if local:
            assert "at 2025-06-14 00:40:15 UTC (2025-06-14 02:40:15 CEST host time, Europe/Berlin)" in head
            assert "host_local" in events and "02:40:15 CEST" in events
        else:
            assert "host time" not in head and "host_local" not in events
