"""SGLang lines inside other tools' envelopes are recognised without ``--format`` (F01)."""

from __future__ import annotations

from pathlib import Path

import pytest

from postmortem.engines.sglang.prefix import strip_wrappers
from postmortem.parsers import detect
from postmortem.parsers.base import Head

DATA = Path(__file__).parent / "data" / "sglang"


@pytest.mark.parametrize("name", ["envelope_pylogging", "envelope_ray_ansi", "envelope_supervisor"])
def test_detected_as_sglang(name: str) -> None:
    data = (DATA / f"{name}.log").read_bytes()
    parser, score = detect(Head(name + ".log", data, data.decode().splitlines()))
    assert parser is not None and parser.name == "sglang", (name, score)


def test_ansi_stripped_for_matching() -> None:
    w = strip_wrappers("\x1b[1;36m(SchedulerActor pid=9)\x1b[0m [2026-08-09 01:04:17 TP0] Decode batch, x")
    assert w.rest == "[2026-08-09 01:04:17 TP0] Decode batch, x" and w.pid == 9


def test_logging_stamp_becomes_prefix() -> None:
    w = strip_wrappers("2026-08-09 01:04:17,197 - sglang.srt.managers.scheduler - WARNING - KV cache x")
    assert w.rest == "[2026-08-09 01:04:17.197] KV cache x"


def test_other_loggers_untouched() -> None:
    line = "2026-08-09 01:04:17,197 - flashinfer.jit - INFO - Loading JIT ops"
    assert strip_wrappers(line).rest == line


def test_loguru_envelope() -> None:
    w = strip_wrappers("2026-08-09 01:04:17.197 | WARNING  | launcher:pump:61 - [2026-08-09 01:04:17.197] x")
    assert w.rest == "[2026-08-09 01:04:17.197] x"
