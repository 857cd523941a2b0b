"""Real binary journals: the tests write export streams, turn them into ``*.journal`` files with
``systemd-journal-remote``, render them with the real ``journalctl`` in every output mode, time
zone and locale, and parse the renderings. Skipped where the tools are missing (CI installs them:
see .ci/run)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import check_accounting, count_lines, parse_text

from postmortem.io import InputFile, read_head
from postmortem.parsers import detect
from postmortem.parsers.base import TableBatch
from postmortem.records import Boot, UnitEvent
from postmortem.store.db import Store

REMOTE = next(
    (
        p
        for p in ("/usr/lib/systemd/systemd-journal-remote", "/lib/systemd/systemd-journal-remote")
        if os.access(p, os.X_OK)
    ),
    None,
)
JOURNALCTL = shutil.which("journalctl")
pytestmark = [
    pytest.mark.journalctl,
    pytest.mark.skipif(
        REMOTE is None or JOURNALCTL is None, reason="journalctl / systemd-journal-remote missing"
    ),
]

B1 = "3f1c2b9a8e7d4c6b9a1f2e3d4c5b6a79"
B2 = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
UNIT = "sglang-demo.service"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def us(dt: datetime) -> int:
    return (dt - EPOCH) // timedelta(microseconds=1)


def field(name: str, value: str | bytes) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    printable = isinstance(value, str) and "\n" not in value and value.isprintable()
    if printable:
        return f"{name}={value}\n".encode()
    return name.encode() + b"\n" + struct.pack("<Q", len(raw)) + raw + b"\n"


def entry(ts: datetime, boot: str, boot_ts: datetime, **fields: str | bytes) -> bytes:
    out = field("__REALTIME_TIMESTAMP", str(us(ts))) + field(
        "__MONOTONIC_TIMESTAMP", str(us(ts) - us(boot_ts))
    )
    out += field("_BOOT_ID", boot) + field("_HOSTNAME", "gpu-node-1")
    for k, v in fields.items():
        out += field(k, v)
    return out + b"\n"


def make_journal(tmp_path: Path, stream: bytes, name: str = "test.journal") -> Path:
    out = tmp_path / name
    proc = subprocess.run(
        [str(REMOTE), f"--output={out}", "-"], input=stream, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return out


def render(
    journal: Path, mode: str, tz: str = "UTC", *extra: str, env: dict[str, str] | None = None
) -> bytes:
    e = {"PATH": os.environ.get("PATH", ""), "TZ": tz, "LC_ALL": "C.UTF-8", "SYSTEMD_COLORS": "0"}
    e.update(env or {})
    proc = subprocess.run(
        [str(JOURNALCTL), f"--file={journal}", "-o", mode, "--no-pager", *extra],
        capture_output=True,
        env=e,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# the story: start, OOM kill with ancestor slice, restart; one multi-line and one non-UTF-8
# message; a second boot
BOOT1 = datetime(2025, 5, 25, 18, 0, tzinfo=UTC)
BOOT2 = datetime(2025, 5, 25, 21, 0, tzinfo=UTC)
T = datetime(2025, 5, 25, 20, 0, 0, 120000, tzinfo=UTC)
SYSTEMD = {
    "SYSLOG_IDENTIFIER": "systemd",
    "_PID": "1",
    "_COMM": "systemd",
    "_TRANSPORT": "journal",
    "PRIORITY": "6",
}
EVENTS: list[tuple[timedelta, str, str, str | None]] = [
    # offset, message, action, result
    (timedelta(0), f"Starting {UNIT} - SGLang demo server...", "starting", None),
    (timedelta(seconds=1), f"Started {UNIT} - SGLang demo server.", "started", None),
    (
        timedelta(minutes=17, seconds=19),
        f"{UNIT}: A process of this unit has been killed by the OOM killer.",
        "oom_killed",
        None,
    ),
    (
        timedelta(minutes=17, seconds=19, microseconds=100),
        "system.slice: A process of this unit has been killed by the OOM killer.",
        "oom_killed",
        None,
    ),
    (
        timedelta(minutes=17, seconds=19, microseconds=300000),
        f"{UNIT}: Main process exited, code=killed, status=9/KILL",
        "main_exited",
        None,
    ),
    (
        timedelta(minutes=17, seconds=19, microseconds=301000),
        f"{UNIT}: Failed with result 'oom-kill'.",
        "failed",
        "oom-kill",
    ),
    (
        timedelta(minutes=17, seconds=19, microseconds=302000),
        f"{UNIT}: Consumed 1h 2min 3.500s CPU time, 61.2G memory peak.",
        "consumed",
        None,
    ),
    (
        timedelta(minutes=17, seconds=29),
        f"{UNIT}: Scheduled restart job, restart counter is at 1.",
        "restart_scheduled",
        None,
    ),
    (
        timedelta(minutes=17, seconds=29, microseconds=2000),
        f"Stopped {UNIT} - SGLang demo server.",
        "stopped",
        None,
    ),
]


def story() -> bytes:
    out = b""
    for off, message, action, _result in EVENTS:
        unit = message.split(":", 1)[0] if ": " in message else UNIT
        extra = {"MESSAGE_ID": "98e322203f7a4ed290d09fe03c09fe15"} if action == "main_exited" else {}
        out += entry(T + off, B1, BOOT1, **SYSTEMD, **extra, UNIT=unit, MESSAGE=message)
    out += entry(
        T + timedelta(minutes=20),
        B1,
        BOOT1,
        SYSLOG_IDENTIFIER="python3",
        _PID="4242",
        _SYSTEMD_UNIT=UNIT,
        _TRANSPORT="stdout",
        MESSAGE='Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: boom',
    )
    out += entry(
        T + timedelta(minutes=21),
        B1,
        BOOT1,
        SYSLOG_IDENTIFIER="python3",
        _PID="4242",
        _SYSTEMD_UNIT=UNIT,
        _TRANSPORT="stdout",
        MESSAGE=b"tokenizer emitted \xff\xfe bytes",
    )
    out += entry(
        BOOT2 + timedelta(seconds=30),
        B2,
        BOOT2,
        **SYSTEMD,
        UNIT="multi-user.target",
        MESSAGE="Reached target Multi-User System.",
    )
    return out


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_journal(tmp_path_factory.mktemp("j"), story())


PRECISE = {
    "short-precise",
    "short-iso-precise",
    "short-unix",
    "json",
    "json-seq",
    "json-sse",
    "json-pretty",
    "export",
    "verbose",
}
MODES = [
    "short",
    "short-precise",
    "short-iso",
    "short-iso-precise",
    "short-full",
    "short-unix",
    "short-monotonic",
    "with-unit",
    "json",
    "json-seq",
    "json-sse",
    "json-pretty",
    "export",
    "verbose",
    "cat",
]


def _parse_rendering(data: bytes, mode: str, tz: str, **ctx: Any) -> tuple[list[Any], str]:
    parser, _ = detect(read_head(_input(data)))
    assert parser is not None, mode
    outputs, context = parse_text(parser.name, data, tz=tz, year=2025, **ctx)
    check_accounting(context, outputs, count_lines(data))
    return outputs, parser.name


def _input(data: bytes) -> InputFile:
    return InputFile(display="x", data=data, size=len(data))


@pytest.mark.parametrize("tz", ["UTC", "America/Los_Angeles", "Asia/Kolkata"])
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_and_zone(journal: Path, mode: str, tz: str) -> None:
    data = render(journal, mode, tz, "-x")
    ctx: dict[str, Any] = {}
    if mode == "short-monotonic":
        ctx["anchors"] = _anchors(B1)  # the first boot is not announced: one known boot
    outputs, name = _parse_rendering(data, mode, tz, **ctx)
    want_parser = {
        "json": "journal-json",
        "export": "journal-export",
        "verbose": "journal-verbose",
        "cat": "journal-cat",
    }
    assert name == want_parser.get(mode.split("-")[0], "journal-short")
    events = [e for e in outputs if isinstance(e, UnitEvent)]
    want = [(T + off, action, result) for off, _m, action, result in EVENTS]
    got = [
        (e.ts, e.action, e.result)
        for e in events
        if e.unit != "Multi-User System" and e.unit != "multi-user.target"
    ]
    if mode == "cat":
        assert [(a, r) for _t, a, r in got] == [(a, r) for _t, a, r in want]
    else:
        exact = mode in PRECISE or mode == "short-monotonic"
        assert got == [(t if exact else t.replace(microsecond=0), a, r) for t, a, r in want]
    assert [e.unit for e in events][:4] == [UNIT, UNIT, UNIT, "system.slice"]
    messages = [m for o in outputs if isinstance(o, TableBatch) for m in o.data.column("message").to_pylist()]
    assert (
        'Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: boom' in messages
        or mode == "cat"
    )
    if mode not in (
        "short",
        "short-precise",
        "short-iso",
        "short-iso-precise",
        "short-full",
        "short-unix",
        "short-monotonic",
        "with-unit",
        "verbose",
    ):
        assert "tokenizer emitted \ufffd\ufffd bytes" in messages
    else:
        assert "[26B blob data]" in messages  # journalctl without --all
    if mode in ("json", "json-seq", "json-sse", "json-pretty", "export", "verbose"):
        boots = {(b.boot_id, b.boot_ts) for b in outputs if isinstance(b, Boot)}
        assert boots == {(B1, BOOT1), (B2, BOOT2)}


def _anchors(*boots: str) -> Any:
    from postmortem.timeutil import BootAnchor, BootAnchors

    known = {B1: BOOT1, B2: BOOT2}
    return BootAnchors([BootAnchor(b, "gpu-node-1", known[b], "journal") for b in boots])


def test_short_monotonic_anchoring_across_boots(journal: Path) -> None:
    data = render(journal, "short-monotonic", "UTC")
    # both boots known: the unannounced first boot is ambiguous (NULL), the second is anchored
    outputs, _ = _parse_rendering(data, "short-monotonic", "UTC", anchors=_anchors(B1, B2))
    rows = [r for o in outputs if isinstance(o, TableBatch) for r in o.data.to_pylist()]
    assert {r["ts"] for r in rows[:-1]} == {None}
    assert rows[0]["monotonic_s"] == (T - BOOT1).total_seconds()
    assert (rows[-1]["boot_id"], rows[-1]["ts"], rows[-1]["ts_inferred"]) == (
        B2,
        BOOT2 + timedelta(seconds=30),
        "boot",
    )
    # only the first boot known: the second boot (named, no anchor) stays NULL
    outputs, _ = _parse_rendering(data, "short-monotonic", "UTC", anchors=_anchors(B1))
    rows = [r for o in outputs if isinstance(o, TableBatch) for r in o.data.to_pylist()]
    assert rows[0]["ts"] == T
    assert rows[-1]["ts"] is None


@pytest.mark.parametrize("mode", ["short", "short-iso", "cat", "verbose"])
def test_all_flag_keeps_invalid_utf8_as_replacement_characters(journal: Path, mode: str) -> None:
    outputs, _ = _parse_rendering(render(journal, mode, "UTC", "--all"), mode, "UTC")
    messages = [m for o in outputs if isinstance(o, TableBatch) for m in o.data.column("message").to_pylist()]
    assert "tokenizer emitted \ufffd\ufffd bytes" in messages


def test_boot_markers_in_text_modes(journal: Path) -> None:
    outputs, _ = _parse_rendering(render(journal, "short-iso", "UTC"), "short-iso", "UTC")
    rows = [r for o in outputs if isinstance(o, TableBatch) for r in o.data.to_pylist()]
    assert rows[-1]["boot_id"] == B2
    assert rows[0]["boot_id"] is None  # the first boot is not announced


def test_new_year_in_a_zone_ahead_of_utc(tmp_path: Path) -> None:
    boot = datetime(2025, 12, 31, 0, 0, tzinfo=UTC)
    stamps = [
        datetime(2025, 12, 31, 14, 30, tzinfo=UTC),  # 23:30 JST, Dec 31
        datetime(2025, 12, 31, 15, 30, tzinfo=UTC),  # 00:30 JST, Jan 1 — still Dec 31 in UTC
        datetime(2026, 1, 1, 2, 0, tzinfo=UTC),  # 11:00 JST, Jan 1
    ]
    stream = b"".join(
        entry(t, B1, boot, SYSLOG_IDENTIFIER="app", _PID="7", MESSAGE=f"line {i}")
        for i, t in enumerate(stamps)
    )
    data = render(make_journal(tmp_path, stream), "short", "Asia/Tokyo")
    assert data.decode().splitlines()[1].startswith("Jan 01 00:30:00")
    outputs, _ = _parse_rendering(data, "short", "Asia/Tokyo")
    rows = [r for o in outputs if isinstance(o, TableBatch) for r in o.data.to_pylist()]
    assert [r["ts"] for r in rows] == stamps
    assert {r["ts_inferred"] for r in rows} == {"year"}


def _make_locale(tmp: Path, name: str) -> bool:
    localedef = shutil.which("localedef")
    if localedef is None:
        return False
    proc = subprocess.run(
        [localedef, "-i", name, "-f", "UTF-8", str(tmp / f"{name}.UTF-8")], capture_output=True, check=False
    )
    return (tmp / f"{name}.UTF-8").exists() or proc.returncode == 0


@pytest.mark.parametrize("locale", ["fr_FR", "de_DE", "es_ES", "ru_RU", "zh_CN", "ja_JP"])
def test_localised_month_names(tmp_path_factory: pytest.TempPathFactory, locale: str) -> None:
    tmp = tmp_path_factory.mktemp("loc")
    if not _make_locale(tmp, locale):
        pytest.skip("cannot build the locale")
    boot = datetime(2025, 1, 1, tzinfo=UTC)
    stamps = [datetime(2025, m, 5 + m, 12, 0, tzinfo=UTC) for m in range(1, 13)]
    stream = b"".join(
        entry(t, B1, boot, SYSLOG_IDENTIFIER="app", _PID="7", MESSAGE=f"m{t.month}") for t in stamps
    )
    journal = make_journal(tmp, stream)
    data = render(journal, "short", "UTC", env={"LOCPATH": str(tmp), "LC_ALL": f"{locale}.UTF-8"})
    if data == render(journal, "short", "UTC"):
        pytest.skip("locale not applied")
    outputs, _ = _parse_rendering(data, "short", "UTC")
    rows = [r for o in outputs if isinstance(o, TableBatch) for r in o.data.to_pylist()]
    assert [r["ts"] for r in rows] == stamps


def test_ingest_binary_journal_file_and_directory(tmp_path: Path, cli: Any) -> None:
    jdir = tmp_path / "journal" / "0123"
    jdir.mkdir(parents=True)
    make_journal(jdir, story(), "system.journal")
    db = tmp_path / "t.duckdb"
    result = cli("ingest", "--db", db, "--tz", "UTC", tmp_path / "journal")
    assert result.code == 0, result
    store = Store.open_readonly(db)
    (fmt, compression, n_sources) = store.fetchall(
        "SELECT format, compression, count(*) OVER () FROM sources"
    )[0]
    events = store.fetchall(
        "SELECT ts, unit, action, result FROM unit_events WHERE unit = ? ORDER BY ts", [UNIT]
    )
    boots = store.fetchall("SELECT boot_id, boot_ts, method FROM boots ORDER BY boot_ts")
    entries = store.fetchall("SELECT count(*) FROM journal_entries")[0][0]
    store.close()
    assert (fmt, compression, n_sources) == ("journal-export", "journalctl", 1)
    assert entries == len(EVENTS) + 3
    want = [
        (T + off, UNIT, action, result)
        for off, m, action, result in EVENTS
        if not m.startswith("system.slice")
    ]
    assert events == want
    assert boots == [(B1, BOOT1, "journal"), (B2, BOOT2, "journal")]


def test_a_binary_journal_is_cited_by_its_export_line(tmp_path: Path, cli: Any) -> None:
    """A binary journal's line numbers are those of journalctl's export stream: a report cites
    them as such, not as a line of the binary file."""
    from postmortem.report.context import Sources

    make_journal(tmp_path, story(), "system.journal")
    db = tmp_path / "t.duckdb"
    assert cli("ingest", "--db", db, "--tz", "UTC", tmp_path / "system.journal").code == 0
    store = Store.open_readonly(db)
    try:
        sid, line = store.fetchall("SELECT source_id, min(line_no) FROM journal_entries GROUP BY ALL")[0]
        cite = Sources(store).cite(sid, line)
    finally:
        store.close()
    assert cite.endswith(f"system.journal (export line {line})")


def test_binary_journal_without_journalctl_is_a_clear_error(
    tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_journal(tmp_path, story())
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = cli("ingest", "--db", tmp_path / "t.duckdb", path)
    assert result.code == 1
    assert result.err.startswith("Error: ")
    assert "needs journalctl" in result.err
