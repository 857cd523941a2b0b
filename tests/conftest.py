"""Shared test helpers: golden files, the real-samples corpus, a CLI runner."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from postmortem.parsers import get_parser
from postmortem.parsers.base import Output, ParseContext, ParseIssue, TableBatch, run_parser
from postmortem.records import Record, as_dict
from postmortem.timeutil import get_zone, parse_when

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
SHARED = Path(os.environ.get("POSTMORTEM_SHARED", REPO.parent / "shared"))
REAL_SAMPLES = SHARED / "real-samples"

os.environ.setdefault("POSTMORTEM_STRICT", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/data/**/<case>.expected.jsonl from the current parser output",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def needs_real_samples() -> pytest.MarkDecorator:
    return pytest.mark.skipif(not REAL_SAMPLES.is_dir(), reason=f"{REAL_SAMPLES} not present")


def make_context(**overrides: Any) -> ParseContext:
    """A ParseContext from simple values: tz='Europe/Berlin', year=2025, host=..., since=..."""
    kw: dict[str, Any] = {}
    for key, value in overrides.items():
        if key == "tz":
            kw["zone"] = get_zone(value)
            kw["zone_given"] = True
        elif key in ("since", "boot_time", "at", "mtime") and isinstance(value, str):
            kw[key] = parse_when(value, kw.get("zone", get_zone("UTC")))
        else:
            kw[key] = value
    return ParseContext(**kw)


def parse_text(parser_name: str, text: str | bytes, **ctx: Any) -> tuple[list[Output], ParseContext]:
    parser = get_parser(parser_name)
    assert parser is not None, f"no parser {parser_name!r}"
    return run_parser(parser, text, make_context(**ctx))


def records_of(outputs: list[Output], record_type: type[Record]) -> list[Any]:
    return [o for o in outputs if isinstance(o, record_type)]


def issues_of(outputs: list[Output]) -> list[ParseIssue]:
    return [o for o in outputs if isinstance(o, ParseIssue)]


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def serialise(outputs: list[Output]) -> Iterator[str]:
    """One JSON line per output: records (with their table), batches (row by row), issues."""
    for o in outputs:
        if isinstance(o, ParseIssue):
            yield json.dumps(
                {"issue": o.reason, "line_no": o.line_no, "excerpt": o.excerpt, "unparsed": o.unparsed},
                ensure_ascii=False,
                sort_keys=True,
            )
        elif isinstance(o, TableBatch):
            for row in o.data.to_pylist():
                yield json.dumps(
                    {"table": o.table, **{k: _jsonable(v) for k, v in row.items()}},
                    ensure_ascii=False,
                    sort_keys=True,
                )
        else:
            yield json.dumps(
                {"table": o.TABLE, **{k: _jsonable(v) for k, v in as_dict(o).items()}},
                ensure_ascii=False,
                sort_keys=True,
            )


def check_accounting(ctx: ParseContext, outputs: list[Output], lines: int) -> None:
    unparsed = sum(1 for o in outputs if isinstance(o, ParseIssue) and o.unparsed)
    assert ctx.parsed_lines + ctx.ignored_lines + unparsed == lines, (
        f"{lines} lines != {ctx.parsed_lines} parsed + {ctx.ignored_lines} ignored + {unparsed} unparsed"
    )


def count_lines(data: bytes) -> int:
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


class CliResult:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def __repr__(self) -> str:
        return f"CliResult(code={self.code}, out={self.out[-500:]!r}, err={self.err[-500:]!r})"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Any:
    """Run ``postmortem ARGS`` in-process: ``cli("ingest", path, "--db", db)`` → CliResult."""
    from postmortem.cli import main

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
