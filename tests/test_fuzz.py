"""Property tests over every registered parser: arbitrary bytes, real samples truncated at random
points, shuffled lines, CRLF, NUL bytes, invalid UTF-8 — no exception, every line accounted for.

The CI budget keeps this file under two minutes; ``make fuzz`` (``POSTMORTEM_FUZZ=long``) runs a
much larger one.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, REAL_SAMPLES, check_accounting, count_lines, make_context
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postmortem.parsers import all_parsers
from postmortem.parsers.base import run_parser

LONG = os.environ.get("POSTMORTEM_FUZZ") == "long"
EXAMPLES = 1000 if LONG else 60
PARSERS = sorted(all_parsers())


def _seeds() -> list[bytes]:
    files = [
        p for p in DATA.rglob("*") if p.is_file() and not p.name.endswith((".expected.jsonl", ".ctx.json"))
    ]
    if REAL_SAMPLES.is_dir():
        files += [p for p in REAL_SAMPLES.rglob("*") if p.is_file() and p.name != "SOURCES.md"]
    out = []
    for p in sorted(files):
        data = p.read_bytes()
        out.append(data[:60_000])
    return out


SEEDS = _seeds()


def _check(name: str, data: bytes) -> None:
    parser = all_parsers()[name]
    ctx = make_context(tz="UTC", mtime="2026-01-01T00:00:00+00:00")
    outputs, ctx = run_parser(parser, data, ctx)
    if parser.input_kind == "lines":
        check_accounting(ctx, outputs, count_lines(data))


def _mangle(data: bytes, rnd: random.Random) -> bytes:
    lines = data.split(b"\n")
    choice = rnd.randrange(6)
    if choice == 0:  # truncated at a random point
        return data[: rnd.randrange(len(data) + 1)]
    if choice == 1:  # shuffled lines
        rnd.shuffle(lines)
        return b"\n".join(lines)
    if choice == 2:  # CRLF
        return data.replace(b"\n", b"\r\n")
    if choice == 3:  # NUL bytes sprinkled in
        b = bytearray(data)
        for _ in range(1 + len(b) // 500):
            if b:
                b[rnd.randrange(len(b))] = 0
        return bytes(b)
    if choice == 4:  # invalid UTF-8
        b = bytearray(data)
        for _ in range(1 + len(b) // 300):
            if b:
                b[rnd.randrange(len(b))] = rnd.choice((0xFF, 0xC3, 0x80, 0xED))
        return bytes(b)
    # lines cut in the middle and joined with their neighbours
    return b"".join(ln[: rnd.randrange(len(ln) + 1)] + (b"\n" if rnd.random() < 0.7 else b"") for ln in lines)


@pytest.mark.parametrize("name", PARSERS)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=not LONG)
@given(data=st.binary(max_size=4096))
def test_arbitrary_bytes(name: str, data: bytes) -> None:
    _check(name, data)


@pytest.mark.parametrize("name", PARSERS)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=not LONG)
@given(seed=st.integers(min_value=0, max_value=10**9), which=st.integers(min_value=0, max_value=10**6))
def test_mangled_real_inputs(name: str, seed: int, which: int) -> None:
    rnd = random.Random(seed)
    data = SEEDS[which % len(SEEDS)]
    _check(name, _mangle(data, rnd))


@pytest.mark.parametrize("name", PARSERS)
@settings(
    max_examples=max(5, EXAMPLES // 5),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=not LONG,
)
@given(text=st.text(max_size=2000))
def test_arbitrary_text(name: str, text: str) -> None:
    _check(name, text.encode("utf-8", "surrogatepass"))


def test_hundred_megabyte_line_in_bounded_memory(tmp_path: Path) -> None:
    """A 100 MB line is skipped as one parse issue and never held in memory whole."""
    path = tmp_path / "dmesg.txt"
    with path.open("wb") as fh:
        fh.write(b"[    0.000000] Linux version 6.8.0\n[    1.000000] ")
        block = b"x" * (1 << 20)
        for _ in range(100):
            fh.write(block)
        fh.write(b"\n[    2.000000] after\n")
    # VmHWM is this process's own peak; ru_maxrss of an exec'd child also counts the parent's
    # memory at fork time (Linux carries the old mm's high-water mark over exec)
    code = (
        "import sys; from postmortem.cli import main\n"
        "try:\n    main(['ingest', sys.argv[1], '--db', sys.argv[2], '--format', 'dmesg'])\n"
        "except SystemExit as e:\n    rc = e.code\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
        "print(int(hwm) // 1024, rc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), str(tmp_path / "pm.duckdb")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    rss_mb, rc = int(out[-2]), out[-1]
    assert rc == "0"
    assert rss_mb < 350, f"peak RSS {rss_mb} MB for a 100 MB line"
    from postmortem.store.db import Store

    store = Store.open_readonly(tmp_path / "pm.duckdb")
    assert store.fetchall("SELECT lines, parse_issues FROM sources") == [(3, 1)]
    store.close()
