"""The vectorised --query-gpu path gives exactly the rows of the per-line path."""

from __future__ import annotations

import random

import pytest
from conftest import parse_text, serialise

import postmortem.parsers.nvidia.query_csv as qc

NULLS = ("[N/A]", "N/A", "[Not Supported]", "[Insufficient Permissions]", "-", "")


def _loop(rows: int, seed: int, units: bool = True) -> str:
    rnd = random.Random(seed)
    u = (lambda s: f" {s}") if units else (lambda s: "")
    head = "timestamp, index, uuid, pci.bus_id, name, memory.total{m}, memory.used{m}, memory.free{m}, utilization.gpu{p}, temperature.gpu, power.draw{w}, pstate".format(
        m=" [MiB]" if units else "", p=" [%]" if units else "", w=" [W]" if units else ""
    )
    out = [head]
    for n in range(rows):
        i = n % 8
        sec = n // 8

        def maybe(v: str) -> str:
            return rnd.choice(NULLS[:-1]) if rnd.random() < 0.03 else v

        out.append(
            ", ".join(
                [
                    f"2026/03/08 {1 + sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.{rnd.randrange(1000):03d}",
                    str(i),
                    f"GPU-{i:08d}-aaaa-bbbb-cccc-dddddddddddd",
                    f"00000000:{0x18 + i:02X}:00.0",
                    "NVIDIA H200",
                    maybe(f"143771{u('MiB')}"),
                    maybe(f"{rnd.randrange(150000)}{u('MiB')}"),
                    maybe(f"{rnd.randrange(150000)}{u('MiB')}"),
                    maybe(f"{rnd.randrange(101)}{u('%')}"),
                    maybe(str(rnd.randrange(20, 90))),
                    maybe(f"{rnd.uniform(50, 700):.2f}{u('W')}"),
                    maybe(f"P{rnd.randrange(3)}"),
                ]
            )
        )
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    ("seed", "units", "tz"), [(1, True, "UTC"), (2, False, "America/New_York"), (3, True, "Europe/Berlin")]
)
def test_vector_path_equals_per_line_path(
    seed: int, units: bool, tz: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _loop(3000, seed, units)  # crosses the 02:00 DST gap of 2026-03-08 in New York
    fast, fctx = parse_text("nvidia-smi-csv", text, tz=tz)
    assert any(type(o).__name__ == "TableBatch" for o in fast)
    monkeypatch.setattr(qc, "VECTOR_MIN_ROWS", 10**9)
    slow, sctx = parse_text("nvidia-smi-csv", text, tz=tz)
    assert all(type(o).__name__ != "TableBatch" for o in slow)
    assert sorted(serialise(fast)) == sorted(serialise(slow))
    assert (fctx.parsed_lines, fctx.ignored_lines) == (sctx.parsed_lines, sctx.ignored_lines)


def test_irregular_rows_fall_back_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _loop(1200, 7).splitlines()
    lines[600] = lines[600].replace("NVIDIA H200", "[Unknown Error]")
    lines[900] = lines[900][:40]  # a row cut by a killed loop
    lines.insert(700, "timestamp, index, memory.used [MiB]")  # another run appended
    lines.insert(701, "2026/03/08 01:10:00.000, 0, 5 MiB")
    text = "\n".join(lines) + "\n"
    fast, _ = parse_text("nvidia-smi-csv", text, tz="UTC")
    monkeypatch.setattr(qc, "VECTOR_MIN_ROWS", 10**9)
    slow, _ = parse_text("nvidia-smi-csv", text, tz="UTC")
    assert sorted(serialise(fast)) == sorted(serialise(slow))
