"""The real-samples corpus (../shared/real-samples): every file ingests through the CLI with
exit 0, is recognised, and every line is accounted for. Per-format expectations (exact kills,
GPU memory numbers, unit events) live in the parser tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import REAL_SAMPLES, needs_real_samples

from postmortem.store.db import Store

pytestmark = [needs_real_samples(), pytest.mark.corpus]


def _files() -> list[Path]:
    if not REAL_SAMPLES.is_dir():
        return []
    return sorted(p for p in REAL_SAMPLES.rglob("*") if p.is_file() and p.name != "SOURCES.md")


FILES = _files()


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REAL_SAMPLES)) for p in FILES])
def test_real_sample_ingests(path: Path, tmp_path: Path, cli: Any) -> None:
    db = tmp_path / "t.duckdb"
    result = cli("ingest", "--db", db, "--tz", "UTC", path)
    assert result.code == 0, result
    store = Store.open_readonly(db)
    rows = store.fetchall(
        "SELECT format, lines, parsed_lines, ignored_lines, "
        "(SELECT count(*) FROM parse_issues i WHERE i.source_id = s.source_id AND unparsed), notes "
        "FROM sources s"
    )
    store.close()
    assert len(rows) == 1, "file not recognised"
    _fmt, lines, parsed, ignored, unparsed, notes = rows[0]
    assert lines == parsed + ignored + unparsed, notes
    assert lines > 0
