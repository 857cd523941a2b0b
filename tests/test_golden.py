"""Golden files: tests/data/<parser>/<case>.<ext> → <case>.expected.jsonl.

Each input is parsed with the parser named by its directory (``_`` in the directory name
stands for ``-``), with context from an optional ``<case>.ctx.json`` (keys of
``make_context``: tz, year, host, unit, since, boot_time, at, mtime, columns). The expected
file holds every record and parse issue. Rewrite after review with
``pytest tests/test_golden.py --update-golden``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA, check_accounting, count_lines, parse_text, serialise


def _cases() -> list[Path]:
    out = []
    for d in sorted(DATA.iterdir()) if DATA.is_dir() else []:
        if not d.is_dir():
            continue
        for f in sorted(d.iterdir()):
            if f.name.endswith((".expected.jsonl", ".ctx.json")) or f.name.startswith(".") or f.is_dir():
                continue  # (sub-directories: other tests' data, e.g. collect/bin)
            out.append(f)
    return out


CASES = _cases()


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.name}" for p in CASES])
def test_golden(path: Path, update_golden: bool) -> None:
    parser_name = path.parent.name.replace("_", "-")
    ctx_file = path.with_name(path.name.split(".")[0] + ".ctx.json")
    ctx = json.loads(ctx_file.read_text()) if ctx_file.exists() else {}
    ctx.setdefault("mtime", "2026-01-01T00:00:00+00:00")
    data = path.read_bytes()
    outputs, context = parse_text(parser_name, data, **ctx)
    check_accounting(context, outputs, count_lines(data))
    got = "\n".join(serialise(outputs)) + "\n"
    expected = path.with_name(path.name.split(".")[0] + ".expected.jsonl")
    if update_golden or not expected.exists():
        expected.write_text(got, encoding="utf-8")
        if not update_golden:
            pytest.fail(f"{expected.name} did not exist; wrote it — review and commit it")
    assert got == expected.read_text(encoding="utf-8")
