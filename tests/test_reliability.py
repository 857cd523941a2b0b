"""Crash safety, concurrency and hostile input: the store stays consistent and the tool never
becomes the next thing that falls over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from postmortem.store.db import Store

SAMPLE = REPO / "sample_logs"


def _sglang_log(path: Path, lines: int) -> None:
    with path.open("w") as fh:
        fh.write("[2025-05-25 00:00:00] server_args=ServerArgs(model_path='/m', tp_size=8, port=30000)\n")
        for n in range(1, lines):
            s = n % 60
            fh.write(
                f"[2025-05-25 01:{n // 60 % 60:02d}:{s:02d} TP0] Decode batch, #running-req: {n % 200}, "
                f"#token: {n}, token usage: 0.5, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n"
            )


def _counts(db: Path) -> dict[str, int]:
    store = Store.open_readonly(db)
    out = {t: store.count(t) for t in store.table_names() if t != "schema_migrations"}
    store.close()
    return out


def _loading(db: Path) -> bool:
    """An intermediate commit landed in the store, or a Parquet part is being written."""
    parts = Path(str(db) + ".parts")
    if db.exists() and db.stat().st_size > 2_000_000:
        return True
    return parts.is_dir() and any(p.stat().st_size > 100_000 for p in parts.glob("*/.tmp-*"))


def _part_files(db: Path) -> list[str]:
    parts = Path(str(db) + ".parts")
    return sorted(p.name for p in parts.glob("*/*")) if parts.is_dir() else []


def test_kill_9_during_ingest_leaves_the_store_consistent(tmp_path: Path) -> None:
    log = tmp_path / "sglang-big.log"
    _sglang_log(log, 600_000)
    clean = tmp_path / "clean.duckdb"
    env = {**os.environ, "POSTMORTEM_COMMIT_ROWS": "20000"}
    cmd = [sys.executable, "-m", "postmortem", "ingest", str(log), "--tz", "UTC", "--db"]
    subprocess.run([*cmd, str(clean)], check=True, env=env, capture_output=True)
    expected = _counts(clean)
    assert expected["server_stats"] == 599_999

    db = tmp_path / "pm.duckdb"
    proc = subprocess.Popen([*cmd, str(db)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # wait until at least one intermediate commit landed, then kill without warning
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if _loading(db):
            break
    assert proc.poll() is None, "ingest finished before it could be killed; make the file bigger"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    # a reader sees the interrupted load flagged, not silently partial data
    store = Store.open_readonly(db)
    assert store.interrupted() == [str(log)]
    store.close()
    # the next writer removes the partial rows; the next ingest completes the file
    # … and the parts it was writing (never registered)
    assert any(".tmp-" in name for name in _part_files(db))
    store = Store.open(db)
    assert store.recovered == [str(log)]
    assert store.count("server_stats") == 0 and store.count("sources") == 0
    assert _part_files(db) == []
    store.close()
    subprocess.run([*cmd, str(db)], check=True, env=env, capture_output=True)
    assert _counts(db) == expected
    # the rows are in parts, each registered once
    store = Store.open_readonly(db)
    registered = sorted(str(r[0]) for r in store.fetchall("SELECT file FROM store_parts"))
    store.close()
    assert registered and _part_files(db) == registered


def test_a_kill_9_after_a_part_is_renamed_but_before_its_commit_loses_nothing(tmp_path: Path) -> None:
    """The window between a part's rename into place and the commit that registers it: the
    part is an orphan (no row names it), removed at the next open; the re-run stores it again."""
    log = tmp_path / "sglang-big.log"
    _sglang_log(log, 300_000)
    db = tmp_path / "pm.duckdb"
    cmd = [sys.executable, "-m", "postmortem", "ingest", str(log), "--tz", "UTC", "--db", str(db)]
    subprocess.run(cmd, check=True, capture_output=True)
    expected = _counts(db)
    parts = Path(str(db) + ".parts")
    kept = _part_files(db)
    orphan = parts / "server_stats" / "1-0123456789abcdef0123456789abcdef.parquet"
    orphan.write_bytes((parts / "server_stats" / kept[0]).read_bytes())
    (parts / "server_stats" / ".tmp-2-feed.parquet").write_bytes(b"PAR1")
    Store.open(db).close()
    assert _part_files(db) == kept and _counts(db) == expected


def test_second_writer_waits_then_fails_clearly(tmp_path: Path, cli: object) -> None:
    db = tmp_path / "pm.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, duckdb; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(30)",
            str(db),
        ],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == b"held"
    try:
        start = time.monotonic()
        r = cli("build", "--logs", SAMPLE / "dmesg.txt", "--db", db, "--out", tmp_path / "r", "--wait", "1.5")  # type: ignore[operator]
        waited = time.monotonic() - start
        assert r.code == 1
        # after --wait, waiting is not the advice
        assert r.err == (
            f"Error: {db}: database is still in use by process {holder.pid} after waiting 1.5 s; "
            "try again when it has finished\n"
        )
        assert waited >= 1.4
        q = cli("query", "SELECT 1", "--db", db)  # type: ignore[operator]
        assert q.code == 1
        assert q.err == (
            f"Error: {db}: database is in use by process {holder.pid}; wait for it to finish or pass "
            "--wait SECONDS\n"
        )
    finally:
        holder.kill()
        holder.communicate()
    r = cli("build", "--logs", SAMPLE / "dmesg.txt", "--db", db, "--out", tmp_path / "r", "--wait", "5")  # type: ignore[operator]
    assert r.code == 0, r


@pytest.mark.parametrize("kind", ["gzip", "xz", "bz2", "zstd"])
def test_corrupt_archives_are_errors_naming_the_file(tmp_path: Path, cli: object, kind: str) -> None:
    import bz2
    import gzip
    import lzma

    import zstandard

    raw = (SAMPLE / "dmesg.txt").read_bytes() * 20
    comp = {
        "gzip": gzip.compress,
        "xz": lzma.compress,
        "bz2": bz2.compress,
        "zstd": zstandard.ZstdCompressor(write_checksum=True).compress,
    }[kind](raw)  # the zstd CLI writes checksums
    bad = bytearray(comp)
    for i in range(len(bad) // 2, len(bad) // 2 + 64):
        bad[i] ^= 0x5A
    path = tmp_path / f"dmesg.{kind}"
    path.write_bytes(bytes(bad))
    r = cli("ingest", path, "--db", tmp_path / "pm.duckdb")  # type: ignore[operator]
    assert r.code == 1, r
    assert r.err.startswith(f"Error: {path}: ")
    assert "Traceback" not in r.err


@pytest.mark.parametrize("kind", ["gzip", "xz", "bz2"])
def test_a_small_archive_damaged_near_its_end_keeps_the_lines_before(
    tmp_path: Path, cli: object, kind: str
) -> None:
    """A damaged archive of under 1 MB (read in one block) used to lose everything: the one call
    that met the damage raised and took its output with it. The lines before the damage are
    stored, all but the last few KB."""
    import bz2
    import gzip
    import lzma

    raw = b"".join(f"[{i / 100:12.6f}] line {i} of a kernel log\n".encode() for i in range(40_000))
    comp = bytearray({"gzip": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress}[kind](raw))
    assert len(comp) < 1 << 20
    at = len(comp) * 9 // 10
    for i in range(at, at + 16):
        comp[i] ^= 0x5A
    path = tmp_path / f"kern.log.{kind}"
    path.write_bytes(bytes(comp))
    r = cli("ingest", path, "--db", tmp_path / "pm.duckdb")  # type: ignore[operator]
    assert r.code == 1 and "the lines before the damage were kept" in r.err, r
    q = cli("query", "SELECT lines FROM sources", "--db", tmp_path / "pm.duckdb", "--format", "csv")  # type: ignore[operator]
    lines = int(q.out.split()[1])
    # damage at 90 % of the compressed bytes: gzip loses only the last call's few KB; bz2 loses
    # the whole 900 KB block the damage is in, xz what its decoder had buffered
    assert lines >= 40_000 * (0.85 if kind == "gzip" else 0.4), lines


def test_decompression_bomb_is_refused(tmp_path: Path, cli: object) -> None:
    import gzip

    path = tmp_path / "bomb.log.gz"
    with gzip.open(path, "wb", compresslevel=9) as fh:
        line = b"[    1.000000] " + b"A" * 200 + b"\n"
        for _ in range(1 << 16):
            fh.write(line * 16)
    r = cli("ingest", path, "--db", tmp_path / "pm.duckdb", "--max-bytes", str(50 << 20))  # type: ignore[operator]
    assert r.code == 1
    assert "exceeds --max-bytes" in r.err


@pytest.mark.parametrize("name", ["journal.export", "nvidia-smi-apps.csv", "dmesg.txt", "sglang-k26.log"])
def test_a_byte_order_mark_in_front_changes_nothing(cli: Any, tmp_path: Path, name: str) -> None:
    """A file saved with a UTF-8 BOM (a Windows editor, PowerShell) was not recognised (export,
    CSV) or lost its first line to a parse issue: it is read as without it."""
    plain, bom = tmp_path / "plain", tmp_path / "bom"
    plain.mkdir()
    bom.mkdir()
    data = (SAMPLE / name).read_bytes()
    (plain / name).write_bytes(data)
    (bom / name).write_bytes(b"\xef\xbb\xbf" + data)
    a = cli("ingest", plain / name, "--db", tmp_path / "a.duckdb", "--tz", "UTC")
    b = cli("ingest", bom / name, "--db", tmp_path / "b.duckdb", "--tz", "UTC")
    assert a.code == 0 and b.code == 0, (a, b)
    assert a.out.split(": ", 1)[1] == b.out.split(": ", 1)[1]  # the same format, lines, records, issues


def _raise_in_numbas_cache(message: str) -> None:
    """Raise as numba's cache code does when its index file is damaged (a frame of a file
    under ``numba/core/caching.py``)."""
    code = compile(f"raise ValueError({message!r})", "/site-packages/numba/core/caching.py", "exec")
    exec(code)  # a fixed statement, to get a frame of that file name


def test_a_damaged_or_full_numba_cache_is_compiled_around_not_a_failed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled parsers' on-disk cache failing (a full disk — often the incident itself —
    or a damaged index file) made every large ingest fail with 'report this file'. The file is
    read again with the kernels compiled in memory, and a note says why."""
    from postmortem.ingest import IngestOptions, ingest_paths
    from postmortem.parsers import jit
    from postmortem.parsers.journal import short
    from postmortem.store.db import Store
    from postmortem.timeutil import get_zone

    with pytest.raises(ValueError, match="arbage") as caught:
        _raise_in_numbas_cache("invalid literal for int() with base 10: 'arbage'")
    assert jit.cache_broke(caught.value)
    assert not jit.cache_broke(ValueError("a parser's own bug"))

    calls: list[bool] = []
    real = short.JournalShortParser.parse

    def parse(self: Any, chunks: Any, ctx: Any) -> Any:
        calls.append(jit.cache_off)
        if not jit.cache_off:
            _raise_in_numbas_cache("damaged index")
        return real(self, chunks, ctx)

    switched: list[bool] = []
    monkeypatch.setattr(short.JournalShortParser, "parse", parse)
    monkeypatch.setattr(
        jit, "without_cache", lambda: switched.append(True) or setattr(jit, "cache_off", True)
    )
    monkeypatch.setattr(jit, "cache_off", False)
    log = tmp_path / "journal.log"
    log.write_text("2025-05-25T20:00:00+0000 h app[1]: hello\n" * 10)
    store = Store.open(tmp_path / "pm.duckdb")
    summary = ingest_paths(store, [str(log)], IngestOptions(zone=get_zone("UTC")))
    (r,) = summary.files
    assert (r.status, r.lines, calls, switched) == ("ingested", 10, [False, True], [True]), r
    assert any("numba's cache of compiled parsers is unusable" in n for n in r.notes)
    assert store.fetchall("SELECT count(*) FROM journal_entries") == [(10,)]
    store.close()


def test_a_full_disk_under_the_store_is_the_machines_answer_not_a_bug() -> None:
    """A commit or checkpoint DuckDB cannot write (no space, quota, read-only) exits 1 with
    DuckDB's line, not 70 'internal error … report it'."""
    import duckdb

    from postmortem.cli import _environmental

    full = duckdb.TransactionException(
        'TransactionContext Error: Failed to commit: Could not write file "s.duckdb.wal": No space left on device'
    )
    invalidated = duckdb.FatalException(
        "FATAL Error: Failed: database has been invalidated because of a previous fatal error. "
        "Original error: 'Failed to create checkpoint because of error: Could not write file: "
        "No space left on device'"
    )
    assert _environmental(full) and _environmental(invalidated)
    assert not _environmental(duckdb.BinderException('Referenced column "x" not found'))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_during_ingest_rolls_back_and_says_so(tmp_path: Path, sig: signal.Signals) -> None:
    """systemctl stop, `timeout`, a dropped ssh session: the load under way is rolled back, as on
    Ctrl-C, with one line and 128 + the signal's number — it died at once and silently, leaving
    its partial rows for the next writer."""
    log = tmp_path / "sglang-big.log"
    _sglang_log(log, 600_000)
    db = tmp_path / "pm.duckdb"
    env = {**os.environ, "POSTMORTEM_COMMIT_ROWS": "20000"}
    cmd = [sys.executable, "-m", "postmortem", "ingest", str(log), "--tz", "UTC", "--db", str(db)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if _loading(db):
            break
    assert proc.poll() is None, "ingest finished before it could be stopped; make the file bigger"
    os.kill(proc.pid, sig)
    _out, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (128 + sig, f"Error: stopped by {sig.name}\n"), err
    store = Store.open_readonly(db)
    assert store.interrupted() == [] and store.count("sources") == 0
    store.close()
    assert not any(not name.startswith(".tmp-") for name in _part_files(db))


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_a_reader_that_stops_early_ends_the_query_quietly_with_141(tmp_path: Path, fmt: str) -> None:
    """`postmortem query … | head`: no traceback, no 'Error:' line, and exit 141 as a tool cut off
    by SIGPIPE — typer's own answer was a silent 1 that a script cannot tell from a failure."""
    db = tmp_path / "pm.duckdb"
    Store.open(db).close()
    cmd = [sys.executable, "-m", "postmortem", "query", "SELECT * FROM range(2000000)", "--db", str(db)]
    with subprocess.Popen([*cmd, "--format", fmt], stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.read(64)
        proc.stdout.close()  # the reader goes away, as `head -c 64` does
        err = proc.stderr.read().decode()
        rc = proc.wait(timeout=60)
    assert (rc, err) == (141, "") and first
