"""A journal collected as two files, split while the fallback server loaded: the second file's
lines of that server (python3[25164]) carry no unit, the first file saw its unit start. The
same pid's lines in the other file, up to 10 minutes before, name its unit (pid_units.sql), so
the recovery is found. Inputs in tests/data/nights/split/, cut from a generated night (scenario
seed 7, night 106; statistics and access lines thinned)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data" / "nights" / "split"


def test_a_server_split_across_two_journal_files_keeps_its_unit(cli: Any, tmp_path: Path) -> None:
    shutil.copytree(DATA, tmp_path / "logs")
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", tmp_path / "logs", "--db", db, "--out", tmp_path / "out", "--tz", "UTC")
    assert r.code == 0, r
    (inc,) = json.loads(cli("incidents", "--db", db, "--format", "json").out)
    assert (inc["unit"], inc["cause"], inc["recovery_unit"]) == (
        "sglang@gptoss.service",
        "host_oom",
        "sglang@gptoss-fallback.service",
    )
    assert inc["downtime_s"] == pytest.approx(754, abs=1)  # ready at 14:31:08 in the second file


def test_the_recoverys_ready_line_is_cited_in_its_own_file(cli: Any, tmp_path: Path) -> None:
    """The fallback started in the first file and was ready in the second: the report cited the
    ready line's number in the first file (a line of something else there)."""
    shutil.copytree(DATA, tmp_path / "logs")
    db, out = tmp_path / "pm.duckdb", tmp_path / "out"
    r = cli("build", "--logs", tmp_path / "logs", "--db", db, "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    (report,) = [p for p in out.glob("*.md") if p.name != "index.md"]
    (row,) = [line for line in report.read_text().splitlines() if "service restored" in line][:1]
    cite = row.rsplit("|", 2)[-2].strip()
    path, line_no = cite.rsplit(":", 1)
    text = Path(path).read_text().splitlines()[int(line_no) - 1]
    assert "10:31:08" in text and "fired up" in text, (cite, text)
