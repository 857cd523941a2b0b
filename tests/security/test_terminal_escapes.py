"""#29 item 6: terminal escapes and bidi overrides from logs, shown as ``\\xNN``/``\\u202e``
wherever text reaches a terminal or a report.

ESC[2J clears the screen of whoever ``cat``s the report or runs ``query``; OSC 52 writes their
clipboard; OSC 8 makes a hidden hyperlink; U+202E turns ``evil‮txt.sh`` into what reads as
``evilhs.txt``. The kernel prints a process name as it is, and journald keeps a line's bytes
(``-o export``/``json`` carry them raw); the short format here carries them the same way.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hostile import HOST, build, cuda_oom_journal, incident_report, journal, run, tar_gz, write_logs

CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;aGk=\x07"  # OSC 52: set the clipboard to base64 'hi'
HYPERLINK = "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\"  # OSC 8
RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE

#: what must never reach a terminal or a report as it is: C0 controls but the line break, DEL,
#: C1 controls, and the bidi embeddings, overrides and isolates
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f\x80-\x9f\u202a-\u202e\u2066-\u2069]")


def _raw(text: str) -> list[str]:
    return sorted({repr(m.group(0)) for m in RAW.finditer(text)})


COMMS = {
    "esc-2j": f"py{CLEAR}thon",
    "osc-52": f"{CLIPBOARD}py",
}
assert all(len(c.encode()) <= 15 for c in COMMS.values())


@pytest.mark.parametrize("comm", COMMS.values(), ids=COMMS.keys())
def test_escapes_in_a_process_name_are_shown_escaped_in_the_report(tmp_path: Path, comm: str) -> None:
    logs = write_logs(tmp_path, journal__txt=journal(comm=comm))
    _, out = build(logs, tmp_path)
    report = incident_report(out).read_text()
    assert "invoked oom-killer" in report  # the kernel's record is quoted
    assert _raw(report) == []
    assert "\\x1b" in report


def test_escapes_in_a_log_line_are_shown_escaped_in_the_report(tmp_path: Path) -> None:
    logs = write_logs(tmp_path, journal__txt=cuda_oom_journal(f"{HYPERLINK} {CLEAR}"))
    _, out = build(logs, tmp_path)
    report = incident_report(out).read_text()
    assert "click here" in report
    assert _raw(report) == []


def test_bidi_override_in_a_process_name_is_shown_escaped_in_the_report(tmp_path: Path) -> None:
    logs = write_logs(tmp_path, journal__txt=journal(comm=f"evil{RLO}txt.sh"))
    _, out = build(logs, tmp_path)
    report = incident_report(out).read_text()
    assert "txt.sh" in report
    assert _raw(report) == []
    assert "\\u202e" in report.lower()


def _store_with_escapes(tmp_path: Path) -> Path:
    line = f"2026-03-18T13:50:00+0000 {HOST} python3[5]: served {CLIPBOARD}{CLEAR} evil{RLO}txt.sh\n"
    logs = write_logs(tmp_path, journal__txt=line)
    db = tmp_path / "pm.duckdb"
    ran = run("ingest", logs, "--db", db)
    assert ran.code == 0, ran
    return db


def test_query_csv_shows_control_characters_escaped(tmp_path: Path) -> None:
    db = _store_with_escapes(tmp_path)
    ran = run("query", "SELECT message FROM journal_entries", "--db", db, "--format", "csv")
    assert ran.code == 0 and "served" in ran.out, ran
    assert _raw(ran.out) == []


def test_query_table_shows_bidi_overrides_escaped(tmp_path: Path) -> None:
    db = _store_with_escapes(tmp_path)
    ran = run("query", "SELECT message FROM journal_entries", "--db", db)
    assert ran.code == 0 and "served" in ran.out, ran
    assert "\\x1b" in ran.out  # C0 controls are escaped today
    assert _raw(ran.out) == []


def test_query_json_escapes_control_characters(tmp_path: Path) -> None:
    db = _store_with_escapes(tmp_path)
    ran = run("query", "SELECT message FROM journal_entries", "--db", db, "--format", "json")
    assert ran.code == 0, ran
    assert "\\u001b" in ran.out
    assert _raw(ran.out.replace(RLO, "")) == []  # JSON escapes C0; U+202E is below


def test_query_json_shows_bidi_overrides_escaped(tmp_path: Path) -> None:
    db = _store_with_escapes(tmp_path)
    ran = run("query", "SELECT message FROM journal_entries", "--db", db, "--format", "json")
    assert json.loads(ran.out)[0]["message"].endswith("txt.sh")
    assert _raw(ran.out) == []


def test_ingest_line_of_a_bundle_member_name_is_escaped(tmp_path: Path) -> None:
    name = f"b/evil{CLIPBOARD}{CLEAR}\nError: forged line.txt"
    archive = tar_gz(
        tmp_path / "bundle.tar.gz",
        [
            ("b/manifest.json", json.dumps({"postmortem_bundle": 1, "host": HOST}).encode()),
            (name, journal().encode()),
        ],
    )
    ran = run("ingest", archive, "--db", tmp_path / "pm.duckdb")
    assert ran.code == 0 and "forged" in ran.out, ran
    assert _raw(ran.out + ran.err) == []
    assert not [ln for ln in (ran.out + ran.err).splitlines() if ln.startswith("Error:")]
