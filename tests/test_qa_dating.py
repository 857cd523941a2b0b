"""Nights a QA pass built against the new dating of dmesg -e/-H and short-monotonic journals
(issue #27): each came out wrong before its fix. Inputs in tests/data/nights/qa/ (written by hand)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data" / "nights" / "qa"


def _build(cli: Any, tmp_path: Path, files: dict[str, str], *args: str) -> tuple[list[dict[str, Any]], str]:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name, data in files.items():
        shutil.copy(DATA / data, logs / name)
    db, out = tmp_path / "pm.duckdb", tmp_path / "out"
    r = cli("build", "--logs", logs, "--db", db, "--out", out, "--tz", "UTC", *args)
    assert r.code == 0, r
    return json.loads(cli("incidents", "--db", db, "--format", "json").out), r.out


def test_a_minute_only_kill_is_not_moved_past_the_restarted_servers_lines(cli: Any, tmp_path: Path) -> None:
    """dmesg -H alone; the server logged at 22:00:05, was killed, and started again at 22:00:24:
    the kill is bounded by the killed run's lines, not the new run's."""
    files = {"dmesg-H.txt": "r1-dmesg-H.txt", "llm.service.log": "r1-llm.service.log"}
    incs, out = _build(cli, tmp_path, files, "--year", "2026")
    assert [(i["unit"], i["cause"], i["ts"][:19]) for i in incs] == [
        ("llm.service", "cgroup_oom", "2026-10-15T22:00:05")
    ]
    assert incs[0]["downtime_s"] == pytest.approx(135.0)  # ready again at 22:02:20
    assert "dated to the minute only" in out
    (report,) = (p for p in (tmp_path / "out").glob("*.md") if p.name != "index.md")
    text = report.read_text()
    assert "| Killed at | 2026-10-15 22:00:05 UTC: known to the minute only" in text
    # the kill is no earlier than the killed run's last line: the downtime is an upper bound
    assert "(135 s, 22:00:05 → 22:02:20 UTC), at most: the kill may have come later in its minute |" in text


def test_a_kill_months_after_the_boot_line_keeps_the_files_year(cli: Any, tmp_path: Path) -> None:
    """A long uptime: the dmesg's boot line in May, the OOM in December of the same year."""
    files = {"dmesg-H.txt": "n5-dmesg-H.txt", "messages": "n5-messages"}
    incs, _ = _build(cli, tmp_path, files, "--year", "2026")
    assert [(i["cause"], i["ts"][:19]) for i in incs] == [("cgroup_oom", "2026-12-01T03:14:09")]


def test_since_takes_its_own_year_for_a_file_begun_months_before(cli: Any, tmp_path: Path) -> None:
    """A syslog file from May to December read with --since in November: that year, not the next."""
    incs, _ = _build(cli, tmp_path, {"messages": "n6-messages"}, "--since", "2026-11-28")
    assert [i["ts"][:10] for i in incs] == ["2026-12-01"]


def test_a_monotonic_journal_with_server_events_only_is_dated(cli: Any, tmp_path: Path) -> None:
    """short-monotonic, the server killed during its load (no statistics line): its events date it."""
    incs, _ = _build(cli, tmp_path, {"journal.txt": "r8-journal.txt"})
    assert [(i["unit"], i["ts"][:16]) for i in incs] == [("llm.service", "2025-05-01T12:10")]


@pytest.mark.parametrize("first", ["[Apr31 10:00] a", "[Oct 0 10:00] a", "[Jan99 10:00] a"])
def test_an_impossible_first_day_with_since_is_no_internal_error(
    cli: Any, tmp_path: Path, first: str
) -> None:
    path = tmp_path / "dm.txt"
    path.write_text(f"{first}\n[  +0.5] b\n[May 2 10:00] c\n")
    r = cli(
        "build",
        "--logs",
        path,
        "--db",
        tmp_path / "x.duckdb",
        "--out",
        tmp_path / "o",
        "--tz",
        "UTC",
        "--since",
        "2026-05-01",
    )
    assert r.code == 0, r
