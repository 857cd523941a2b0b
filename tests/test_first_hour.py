"""The first hour of a new user (issue #28, point 5): one test per thing that went wrong when
the tool was tried as a newcomer would try it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_logs"
#: a float printed with its full binary tail (``1512.142857142857``)
RAW_FLOAT = re.compile(r"\d+\.\d{4,}")


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from postmortem.cli import main

    tmp = tmp_path_factory.mktemp("demo")
    db = tmp / "demo.duckdb"
    args = ["build", "--since", "2025-05-25 20:00", "--tz", "UTC", "--logs", str(SAMPLE)]
    code: object = 0
    try:
        main([*args, "--db", str(db), "--out", str(tmp / "reports")])
    except SystemExit as exc:
        code = exc.code
    assert code in (0, None), code
    return db


def test_build_without_logs_outside_the_repository_reads_no_sample_and_leaves_no_store(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a directory that has a sample_logs/ of its own: it is still not read without --logs
    shutil.copytree(SAMPLE, tmp_path / "sample_logs")
    monkeypatch.chdir(tmp_path)
    r = cli("build", "--db", "x.duckdb", "--out", "out")
    assert r.code == 2 and r.out == "", r
    assert r.err.startswith("Error: no logs to read: pass --logs DIR") and r.err.count("\n") == 1
    assert not (tmp_path / "x.duckdb").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["build", "--logs", "nowhere"], ["timeline", "1"]])
def test_a_bare_number_of_window_is_refused_not_read_as_seconds(
    cli: Any, tmp_path: Path, command: list[str]
) -> None:
    r = cli(*command, "--window", "30", "--db", tmp_path / "x.duckdb")
    assert r.code == 2, r
    assert r.err == "Error: a duration needs a unit: '30' (try 30min, 30s, 2h)\n"


def test_query_errors_keep_duckdbs_hints(cli: Any, demo_db: Path) -> None:
    r = cli("query", "SELECT * FROM oom_kill", "--db", demo_db)
    assert r.code != 0 and r.err.count("\n") == 1, r
    assert 'Did you mean "oom_kills"?' in r.err
    r = cli("query", "SELECT victim_pi FROM oom_kills", "--db", demo_db)
    assert "Candidate bindings" in r.err and "victim_pid" in r.err, r


def test_a_directory_of_unrelated_files_is_one_summary_line(cli: Any, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLE / "dmesg.txt", logs / "dmesg.txt")
    for i in range(30):
        (logs / f"notes-{i}.txt").write_text(f"shopping list {i}\nmilk\n")
    r = cli("ingest", logs, "--db", tmp_path / "pm.duckdb", "--tz", "UTC")
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert lines[-1] == "30 files skipped: format not recognised; --verbose lists them", lines
    assert sum("skipped" in line for line in lines) == 1 and "notes-" not in r.out
    r = cli("--verbose", "ingest", logs, "--db", tmp_path / "pm2.duckdb", "--tz", "UTC")
    assert sum("notes-" in line and "skipped" in line for line in r.out.splitlines()) == 30


def test_a_failure_is_said_once_on_stderr(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "random.bin"
    bad.write_bytes(bytes(range(256)) * 20)
    r = cli("ingest", bad, "--db", tmp_path / "pm.duckdb")
    assert r.code == 1 and r.out == "", r
    assert r.err.count(str(bad)) == 1 and r.err.startswith("Error: ")


def test_incidents_show_causes_in_words_whole_seconds_and_durations(cli: Any, demo_db: Path) -> None:
    r = cli("incidents", "--db", demo_db)
    assert r.code == 0, r
    assert "cgroup memory limit" in r.out and "cgroup_oom" not in r.out
    assert "2025-05-25 20:17:19 " in r.out and "20:17:19." not in r.out
    assert "12 min 12 s" in r.out and not RAW_FLOAT.search(r.out), r.out


def test_trends_say_causes_in_words(cli: Any, demo_db: Path, tmp_path: Path) -> None:
    r = cli("trends", "--db", demo_db, "--out", tmp_path)
    assert r.code == 0, r
    md = (tmp_path / "trends.md").read_text()
    assert "| cgroup memory limit (kernel memcg OOM killer) |" in md and "cgroup_oom" not in md
    assert not RAW_FLOAT.search(md)


def test_the_timeline_is_rounded_on_whole_seconds_and_opens_with_the_build_up(
    cli: Any, demo_db: Path
) -> None:
    r = cli("timeline", "1", "--db", demo_db)
    assert r.code == 0, r
    assert not RAW_FLOAT.search(r.out), RAW_FLOAT.search(r.out)
    assert ".604211" not in r.out  # the kill's microseconds do not leak into bucket labels
    head, events = r.out.split("\nEvents:\n", 1)
    assert "cgroup memory limit" in head.splitlines()[0]
    assert "2025-05-25 19:47:19  -30:00" in head
    kinds = [line.split()[4] for line in events.splitlines()[2:5]]
    assert kinds == ["queue_start", "retract", "last_batch"], events[:600]
    # the report's key timeline opens with the same moment and evidence line (the log's 4389)
    assert re.search(r"queue_start .* 6\s+4389\s*$", events.splitlines()[2])
