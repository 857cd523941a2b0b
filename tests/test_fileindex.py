"""The store's file index (``<db>.files.json``): an unchanged re-ingest answered without DuckDB,
and never trusted once the store or a file has changed."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from postmortem.io import DEFAULT_MAX_BYTES, DEFAULT_MAX_RATIO, InputFile
from postmortem.store import fileindex
from postmortem.store.db import Store

LIMITS = (DEFAULT_MAX_BYTES, DEFAULT_MAX_RATIO)


def _journal(path: Path, count: int, first: int = 0) -> None:
    with path.open("a", encoding="utf-8") as fh:
        for i in range(first, first + count):
            fh.write(f"2025-05-25T00:{i // 60:02d}:{i % 60:02d}+00:00 gpu-a kernel: line {i}\n")


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """A directory of two journals and a file no parser recognises."""
    d = tmp_path / "logs"
    d.mkdir()
    _journal(d / "a.log", 10)
    _journal(d / "b.log", 5, 100)
    (d / "NOTES.md").write_text("# what happened\nthe operator's notes\n", encoding="utf-8")
    return d


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every store the ingest opens."""
    opened: list[str] = []
    real = Store.open.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Store], path: Any, *, wait: float = 0.0) -> Store:
        opened.append(str(path))
        return real(cls, path, wait=wait)  # type: ignore[no-any-return]

    monkeypatch.setattr(Store, "open", classmethod(spy))
    return opened


def test_an_unchanged_reingest_is_told_by_the_index_alone(
    cli: Any, logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "pm.duckdb"
    first = cli("ingest", logs, "--db", db)
    assert first.code == 0, first
    index = json.loads(fileindex.index_path(db).read_text(encoding="utf-8"))
    assert sorted(index["files"]) == [str(logs / "a.log"), str(logs / "b.log")]
    assert list(index["skipped"]) == [str(logs / "NOTES.md")]
    opened = _spy(monkeypatch)
    again = cli("ingest", logs, "--db", db)
    assert opened == []  # the store was not opened
    assert again.code == 0
    assert again.out.splitlines() == [
        f"{logs}/a.log: unchanged",
        f"{logs}/b.log: unchanged",
        f"{logs}/NOTES.md: skipped — format not recognised (use --format NAME to force one)",
    ]
    # without the index, the store says the same
    fileindex.forget(db)
    slow = cli("ingest", logs, "--db", db)
    assert opened == [str(db)]
    assert slow.out == again.out
    assert fileindex.index_path(db).exists()  # and leaves a new index


def test_a_file_named_on_the_command_line_that_is_skipped_is_still_an_error(
    cli: Any, logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "pm.duckdb"
    assert cli("ingest", logs, "--db", db).code == 0
    opened = _spy(monkeypatch)
    r = cli("ingest", logs / "a.log", logs / "NOTES.md", "--db", db)
    assert opened == []
    assert r.code != 0
    assert r.out.splitlines()[0] == f"{logs}/a.log: unchanged"
    assert "NOTES.md: format not recognised" in r.err
    # a directory whose files are all skipped is refused, by the ingest itself, even when the
    # index knows every file in it
    only = tmp_path / "only"
    only.mkdir()
    _journal(only / "j.log", 3)
    (only / "x.md").write_text("notes\n", encoding="utf-8")
    assert cli("ingest", only, "--db", db).code == 0
    (only / "j.log").unlink()
    opened.clear()
    r = cli("ingest", only, "--db", db)
    assert r.code != 0
    assert "no recognisable logs" in r.err
    assert opened == [str(db)]


@pytest.mark.parametrize(
    "change",
    [
        "store written by another process",
        "write-ahead log",
        "store opened for writing",
        "file grown",
        "file touched",
        "index damaged",
        "index of another version",
        "format forced",
    ],
)
def test_the_index_is_not_trusted_after_a_change(
    cli: Any, logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    db = tmp_path / "pm.duckdb"
    assert cli("ingest", logs, "--db", db).code == 0
    index = fileindex.index_path(db)
    expect = "unchanged"
    if change == "store written by another process":
        # a user's own DuckDB session drops a source: a.log must be ingested again
        con = duckdb.connect(str(db))
        con.execute("DELETE FROM journal_entries WHERE source_id = 1")
        con.execute("DELETE FROM sources WHERE source_id = 1")
        con.close()
        expect = "ingested"
    elif change == "write-ahead log":
        Path(f"{db}.wal").write_bytes(b"")
    elif change == "store opened for writing":
        Store.open(db).close()
        assert not index.exists()
    elif change == "file grown":
        _journal(logs / "a.log", 3, 10)
        expect = "appended"
    elif change == "file touched":
        os.utime(logs / "a.log", (0, 1_700_000_000))
        expect = "replaced"  # read again: the store's own comparison
    elif change == "index damaged":
        index.write_text(index.read_text(encoding="utf-8")[:40], encoding="utf-8")
    elif change == "index of another version":
        doc = json.loads(index.read_text(encoding="utf-8"))
        doc["postmortem"] = "0.0.1"
        index.write_text(json.dumps(doc), encoding="utf-8")
    opened = _spy(monkeypatch)
    args = ["ingest", logs / "a.log", "--db", db]
    if change == "format forced":
        args = ["ingest", logs / "NOTES.md", "--format", "journal-short", "--db", db]
        expect = "ingested"
    r = cli(*args)
    assert opened == [str(db)]
    assert r.out.split(": ")[1].split(" ")[0].strip() == expect, r


def test_lookup_needs_every_input(logs: Path, tmp_path: Path, cli: Any) -> None:
    db = tmp_path / "pm.duckdb"
    assert cli("ingest", logs / "a.log", "--db", db).code == 0
    a = InputFile.from_path(logs / "a.log")
    b = InputFile.from_path(logs / "b.log")
    known = fileindex.lookup(db, [a], lambda _: True, LIMITS)
    assert known is not None and known.unchanged == [(a, 1)] and known.skipped == []
    assert fileindex.lookup(db, [a, b], lambda _: True, LIMITS) is None  # b.log was never ingested
    assert fileindex.lookup(db, [], lambda _: True, LIMITS) is None
    stdin = InputFile("<stdin>", data=b"x\n", size=2, mtime=a.mtime)
    assert fileindex.lookup(db, [stdin], lambda _: True, LIMITS) is None
    # the same path, size and mtime to the microsecond: what ingest compares with the store
    moved = InputFile(a.display, a.path, a.size, datetime.fromtimestamp(0, UTC))
    assert fileindex.lookup(db, [moved], lambda _: True, LIMITS) is None


def test_build_leaves_an_index_too(
    cli: Any, logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "reports", "--tz", "UTC")
    assert r.code == 0, r
    assert fileindex.index_path(db).stat().st_mode & 0o777 == db.stat().st_mode & 0o777
    opened = _spy(monkeypatch)
    again = cli("ingest", logs, "--db", db)
    assert opened == []
    assert again.out.splitlines()[:2] == [f"{logs}/a.log: unchanged", f"{logs}/b.log: unchanged"]


def test_a_store_inside_the_ingested_directory(cli: Any, logs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index beside a store in the directory being ingested is not an input (it was, and
    the store's opening deleted it under the ingest's feet)."""
    monkeypatch.chdir(logs)
    for _ in range(3):
        r = cli("ingest", ".", "--db", "pm.duckdb")
        assert r.code == 0, r
        assert "files.json" not in r.out
    assert r.out.splitlines()[0] == "a.log: unchanged"


def test_a_skipped_file_replaced_by_a_log_keeping_size_and_mtime(
    cli: Any, logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A skipped file is read again each time without the index: a copy over it that keeps the
    size and mtime (cp -p, rsync, tar) is noticed by its inode or ctime."""
    db = tmp_path / "pm.duckdb"
    notes = logs / "NOTES.md"
    log = tmp_path / "log.txt"
    _journal(log, 1)
    notes.write_bytes(b"x" * (log.stat().st_size - 1) + b"\n")
    os.utime(notes, ns=(log.stat().st_atime_ns, log.stat().st_mtime_ns))
    assert "NOTES.md: skipped" in cli("ingest", logs, "--db", db).out
    import shutil

    shutil.copy2(log, notes)  # same size, same mtime, a log now
    r = cli("ingest", logs, "--db", db)
    assert f"{notes}: ingested as journal-short: 1 lines" in r.out


def test_a_skipped_verdict_holds_under_the_same_limits_and_detectors(
    cli: Any, logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "pm.duckdb"
    assert cli("ingest", logs, "--db", db).code == 0
    opened = _spy(monkeypatch)
    assert cli("ingest", logs, "--db", db, "--max-bytes", "1000000").code == 0
    assert opened == [str(db)]  # skipped under other limits: read again
    assert cli("ingest", logs, "--db", db, "--max-bytes", "1000000").code == 0
    assert opened == [str(db)]  # … and now known under these
    monkeypatch.setattr(fileindex, "_detectors", lambda: "parsers edited")
    assert cli("ingest", logs, "--db", db, "--max-bytes", "1000000").code == 0
    assert opened == [str(db), str(db)]
    # files that are all stored need no detectors
    assert cli("ingest", logs / "a.log", "--db", db).code == 0
    assert opened == [str(db), str(db)]


def test_a_store_named_through_a_symlink(
    cli: Any, logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, link = tmp_path / "real.duckdb", tmp_path / "link.duckdb"
    assert cli("ingest", logs, "--db", real).code == 0
    link.symlink_to(real)
    assert fileindex.index_path(link) == fileindex.index_path(real)
    opened = _spy(monkeypatch)
    assert cli("ingest", logs, "--db", link).code == 0
    assert opened == []
    Store.open(link).close()  # a writer through the link deletes the real store's index
    assert not fileindex.index_path(real).exists()


def test_a_tz_naming_the_zone_a_file_was_read_in_is_answered_by_the_index(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Users pass --tz every time: the same zone again needs no store, another zone is the
    store's to decide (the file is read again in it)."""
    log = tmp_path / "server.log"
    log.write_text("[2026-03-01 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=8, port=30000)\n")
    db = tmp_path / "pm.duckdb"
    assert cli("ingest", "--db", db, "--tz", "Europe/Berlin", log).code == 0
    opened = _spy(monkeypatch)
    again = cli("ingest", "--db", db, "--tz", "Europe/Berlin", log)
    assert again.code == 0 and "unchanged" in again.out
    assert opened == []  # the index answered
    other = cli("ingest", "--db", db, "--tz", "UTC", log)
    assert other.code == 0 and "replaced" in other.out
    assert opened != []
