"""The unchanged re-ingest answered before the command line loads (``postmortem.quick``): it
says what the full command says, or nothing at all."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from postmortem import quick
from postmortem.store import fileindex
from postmortem.store.migrations import latest_version


def _journal(path: Path, count: int, first: int = 0) -> None:
    with path.open("a", encoding="utf-8") as fh:
        for i in range(first, first + count):
            fh.write(f"2025-05-25T00:{i // 60:02d}:{i % 60:02d}+00:00 gpu-a kernel: line {i}\n")


@pytest.fixture
def stored(tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with two journals, a gzipped one and a store holding all three."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("POSTMORTEM_DB", raising=False)
    (tmp_path / "logs").mkdir()
    _journal(tmp_path / "logs" / "a.log", 10)
    _journal(tmp_path / "logs" / "b.log", 5, 100)
    with gzip.open(tmp_path / "logs" / "c.log.gz", "wt", encoding="utf-8") as fh:
        fh.write("2025-05-25T01:00:00+00:00 gpu-a kernel: packed\n")
    done = cli("ingest", "logs", "--db", "pm.duckdb", "--tz", "UTC")
    assert done.code == 0, done
    return tmp_path


def _quick(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str | None:
    capsys.readouterr()
    said = quick.unchanged_ingest(argv)
    out = capsys.readouterr().out
    if said is None:
        assert out == ""  # nothing printed when the full command is left to answer
        return None
    assert said == 0
    return out


def _full(cli: Any, argv: list[str]) -> str:
    done = cli(*argv)
    assert done.code == 0, done
    return str(done.out)


@pytest.mark.parametrize(
    "argv",
    [
        ["ingest", "logs/a.log", "--db", "pm.duckdb"],
        ["ingest", "--db=pm.duckdb", "logs/a.log", "logs/b.log"],
        ["ingest", "logs/b.log", "logs/a.log", "logs/b.log", "--db", "pm.duckdb", "--tz", "UTC"],
        ["ingest", "--tz=UTC", "--db", "pm.duckdb", "logs/a.log"],
    ],
)
def test_files_stored_unchanged_are_said_as_the_full_command_says(
    stored: Path, cli: Any, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    fast = _quick(argv, capsys)
    assert fast is not None
    assert fast == _full(cli, argv)
    assert fast.count(": unchanged\n") == sum(1 for a in argv if a.startswith("logs/"))


def test_an_absolute_path_and_a_symlink(stored: Path, cli: Any, capsys: pytest.CaptureFixture[str]) -> None:
    (stored / "link.log").symlink_to(stored / "logs" / "a.log")
    for argv in (
        ["ingest", str(stored / "logs" / "a.log"), "--db", str(stored / "pm.duckdb")],
        ["ingest", "link.log", "--db", "pm.duckdb"],
    ):
        fast = _quick(argv, capsys)
        full = _full(cli, argv)
        assert fast is None or fast == full
        if argv[1] != "link.log":  # (the link is a path the store does not know: ingested)
            assert fast == full


def test_the_store_named_by_the_environment(
    stored: Path, cli: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POSTMORTEM_DB", "pm.duckdb")
    argv = ["ingest", "logs/a.log"]
    fast = _quick(argv, capsys)
    assert fast == "logs/a.log: unchanged\n" == _full(cli, argv)


def _touch(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


@pytest.mark.parametrize(
    ("argv", "change"),
    [
        (["ingest", "logs/a.log", "--db", "pm.duckdb", "--tz", "Europe/Berlin"], None),  # another zone
        (["ingest", "logs/a.log", "--db", "pm.duckdb", "--tz", "utc"], None),  # UTC by another name
        (["ingest", "logs/a.log", "--db", "pm.duckdb", "--format", "journal"], None),
        (["ingest", "logs/a.log", "--db", "pm.duckdb", "--host", "h"], None),
        (["ingest", "logs/a.log", "--db", "pm.duckdb", "--db", "pm.duckdb"], None),
        (["ingest", "logs/a.log", "--db"], None),
        (["ingest", "logs/a.log", "--db", "-"], None),
        (["ingest", "logs/c.log.gz", "--db", "pm.duckdb"], None),  # compressed: opened up
        (["ingest", "logs", "--db", "pm.duckdb"], None),  # a directory: walked
        (["ingest", "./logs/a.log", "--db", "pm.duckdb"], None),
        (["ingest", "logs//a.log", "--db", "pm.duckdb"], None),
        (["ingest", "-", "--db", "pm.duckdb"], None),
        (["--verbose", "ingest", "logs/a.log", "--db", "pm.duckdb"], None),
        (["ingest", "--db", "pm.duckdb"], None),
        (["build", "logs/a.log", "--db", "pm.duckdb"], None),
        (["ingest", "logs/a.log", "--db", "other.duckdb"], None),
        (["ingest", "logs/a.log", "--db", ":memory:"], None),
        (["ingest", "logs/a.log", "--db", "pm.duckdb"], "mtime"),
        (["ingest", "logs/a.log", "--db", "pm.duckdb"], "grown"),
        (["ingest", "logs/a.log", "--db", "pm.duckdb"], "store"),
        (["ingest", "logs/a.log", "--db", "pm.duckdb"], "wal"),
        (["ingest", "logs/a.log", "--db", "pm.duckdb"], "config"),
        (["ingest", "logs/a.log", "--db", "pm.duckdb"], "version"),
        (["ingest", "logs/a.log", "--db", "pm.duckdb"], "damaged"),
        (["ingest", "logs/a.log", "--db", "pm.duckdb"], "garbled"),
        (["ingest", "logs/a.log", "--db", "pm.duckdb"], "missing"),
    ],
)
def test_anything_else_is_left_to_the_full_command(
    stored: Path, capsys: pytest.CaptureFixture[str], argv: list[str], change: str | None
) -> None:
    index = fileindex.index_path(stored / "pm.duckdb")
    doc = index.read_text(encoding="utf-8")
    a_log = str(stored / "logs" / "a.log")
    if change == "mtime":
        _touch(stored / "logs" / "a.log")
    elif change == "grown":
        _journal(stored / "logs" / "a.log", 1, 50)
    elif change == "store":
        _touch(stored / "pm.duckdb")
    elif change == "wal":
        (stored / "pm.duckdb.wal").write_bytes(b"")
    elif change == "config":
        (stored / "postmortem.toml").write_text("[defaults]\n", encoding="utf-8")
    elif change == "version":
        index.write_text(json.dumps({**json.loads(doc), "postmortem": "0.0.0"}), encoding="utf-8")
    elif change == "damaged":
        index.write_text(json.dumps({**json.loads(doc), "damaged": {a_log: "truncated"}}), encoding="utf-8")
    elif change == "garbled":
        index.write_text(doc[: len(doc) // 2], encoding="utf-8")
    elif change == "missing":
        index.unlink()
    assert _quick(argv, capsys) is None


def _index_doc(stored: Path) -> dict[str, Any]:
    return dict(json.loads(fileindex.index_path(stored / "pm.duckdb").read_text(encoding="utf-8")))


def test_a_zone_the_full_command_refuses_is_left_to_it(
    stored: Path, cli: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bundle's fixed offset is recorded as its files' zone (``UTC+02:00``), but ``--tz
    UTC+02:00`` is no zone: the full command refuses it, so the index's word is not enough."""
    doc = _index_doc(stored)
    doc["zones"] = {k: "UTC+02:00" for k in doc["zones"]}
    fileindex.index_path(stored / "pm.duckdb").write_text(json.dumps(doc), encoding="utf-8")
    argv = ["ingest", "logs/a.log", "--db", "pm.duckdb", "--tz", "UTC+02:00"]
    assert _quick(argv, capsys) is None
    assert cli(*argv).code == 2
    # the environment's TZ, which the full command checks when no --tz is given
    monkeypatch.setenv("TZ", "Foo/Bar")
    assert _quick(["ingest", "logs/a.log", "--db", "pm.duckdb"], capsys) is None
    monkeypatch.setenv("TZ", ":UTC")
    assert _quick(["ingest", "logs/a.log", "--db", "pm.duckdb"], capsys) == "logs/a.log: unchanged\n"


@pytest.mark.parametrize("case", ["blank-db", "completion", "nested", "gone-cwd"])
def test_what_the_full_command_refuses_or_fails_on(
    stored: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    db = str(stored / "pm.duckdb")
    argv = ["ingest", str(stored / "logs" / "a.log"), "--db", db]
    if case == "blank-db":  # (the full command: "give a value", exit 2)
        argv = ["ingest", "logs/a.log", "--db", " "]
    elif case == "completion":
        monkeypatch.setenv("_POSTMORTEM_COMPLETE", "complete_bash")
    elif case == "nested":  # (past the JSON parser's depth: not an index, for either path)
        index = fileindex.index_path(db)
        index.write_text('{"x":' + "[" * 200_000 + "]" * 200_000 + "}", encoding="utf-8")
        assert fileindex.lookup(db, [], lambda _: True, (0, 0.0)) is None
    else:  # the working directory removed under the command
        gone = stored / "gone"
        gone.mkdir()
        monkeypatch.chdir(gone)
        gone.rmdir()
    assert _quick(argv, capsys) is None


def _run(stored: Path, stdout: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(quick.__file__).parent.parent), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "postmortem", "ingest", "logs/a.log", "logs/b.log", "--db", "pm.duckdb"]
    return subprocess.run(
        argv, cwd=stored, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, check=False
    )


def test_a_reader_that_stopped_and_a_full_disk_end_as_the_full_command_does(stored: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # (the reader is gone before the first line)
    try:
        done = _run(stored, write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")
    if Path("/dev/full").exists():
        with open("/dev/full", "w", encoding="utf-8") as full:
            done = _run(stored, full)
        assert (done.returncode, done.stderr) == (1, "Error: No space left on device\n")


def test_an_index_rewritten_alike_is_still_read(stored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """(The changes above rewrite the index through ``json``: that alone is not what refuses it.)"""
    index = fileindex.index_path(stored / "pm.duckdb")
    index.write_text(json.dumps(json.loads(index.read_text(encoding="utf-8"))), encoding="utf-8")
    assert _quick(["ingest", "logs/a.log", "--db", "pm.duckdb"], capsys) == "logs/a.log: unchanged\n"


def test_what_it_reads_matches_the_index_writer() -> None:
    assert quick.INDEX_FORMAT == fileindex.FORMAT
    assert quick._latest_schema() == latest_version()


def test_the_command_answers_without_loading_the_command_line(stored: Path) -> None:
    """Run as users run it: nothing but the standard library is imported, and the output and
    exit status are the full command's."""
    env = {**os.environ, "PYTHONPATH": str(Path(quick.__file__).parent.parent)}
    env.pop("POSTMORTEM_DB", None)
    argv = [
        sys.executable,
        "-X",
        "importtime",
        "-m",
        "postmortem",
        "ingest",
        "logs/a.log",
        "--db",
        "pm.duckdb",
    ]
    done = subprocess.run(argv, cwd=stored, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "logs/a.log: unchanged\n"
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "postmortem.quick" in imported
    assert not imported & {"typer", "click", "duckdb", "pyarrow", "postmortem.cli", "postmortem.ingest"}
