"""Generated nights against the truth: one test per (night, check), a fixed seed in CI.

``SCENARIOS_SEED`` and ``SCENARIOS_N`` choose the nights (``make scenarios N=… SEED=…``). Each
night is written once when the tests are collected (the truth decides which checks apply) and
built once, by the first of its tests to run. A check a known-wrong mechanism breaks is marked
``xfail(strict=True)`` with the finding's id (FINDINGS.md): the suite stays green, and turns red
on the night a fix lands — then the fixer removes the finding from findings.py.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from scenarios.check import CHECKS, Result, build_night, compare
from scenarios.findings import explain
from scenarios.gen import Written, write
from scenarios.spec import Scenario, draw

SEED = int(os.environ.get("SCENARIOS_SEED", "20251205"))
N = int(os.environ.get("SCENARIOS_N", "200"))

_ROOT = Path(tempfile.mkdtemp(prefix="postmortem-scenarios-"))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)  # (also when no test of it ran)
_NIGHTS: dict[int, tuple[Scenario, Written]] = {}
_BUILT: dict[int, Result] = {}


def _night(i: int) -> tuple[Scenario, Written]:
    if i not in _NIGHTS:
        s = draw(SEED, i)
        _NIGHTS[i] = (s, write(s, _ROOT / str(i) / "logs"))
    return _NIGHTS[i]


def _applicable(i: int) -> list[str]:
    """The checks of night ``i`` that apply (from its truth: an empty build's comparisons say
    which are not applicable whatever the build finds)."""
    s, w = _night(i)
    empty = Result(s, w.truth, [], {}, "", "", 0, 0.0)
    # a check that is n/a with no incident may apply once there is one: ask with a stand-in row
    stand_in = dict.fromkeys(("unit", "ts", "cause", "victim_pid", "victims", "recovery_unit", "host"))
    stand_in.update(dict.fromkeys(("downtime_s", "recovery_load_s", "running_at_kill", "queued_at_kill")))
    stand_in.update(dict.fromkeys(("last_activity_ts", "gpu_memory_freed", "restart_count")))
    with_row = Result(s, w.truth, [stand_in], {}, "", "", 0, 0.0)
    names = {c.name for c in compare(empty) if c.ok is not None}
    names |= {c.name for c in compare(with_row) if c.ok is not None}
    return [c for c in CHECKS if c in names]


def _params() -> list[object]:
    out: list[object] = []
    for i in range(N):
        s, w = _night(i)
        why = explain(s, w.truth)
        for check in _applicable(i):
            marks = []
            if check in why:
                marks.append(pytest.mark.xfail(strict=True, reason=why[check]))
            out.append(pytest.param(i, check, marks=marks, id=f"n{i}-{check}"))
    return out


def _built(i: int) -> Result:
    if i not in _BUILT:
        s, _ = _night(i)
        work = _ROOT / str(i)
        _BUILT[i] = build_night(s, work, reuse=False, written=_NIGHTS[i][1])
        # the store and reports are not needed once compared
        for name in ("pm.duckdb", "reports"):
            path = work / name
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            elif path.exists():
                path.unlink()
    return _BUILT[i]


@pytest.mark.parametrize(("night", "check"), _params())
def test_night(night: int, check: str) -> None:
    r = _built(night)
    c = r.checks.get(check)
    if c is None:  # an undated kill the build made no incident of: only its terminal check applies
        assert not r.truth.datable, f"{r.scenario.tag} (seed {SEED}): {check} was not compared"
        return
    assert c.ok is not False, f"{r.scenario.tag} (seed {SEED}): {c}"


def test_every_finding_is_documented() -> None:
    """findings.py and FINDINGS.md name the same findings, with the same titles."""
    import re

    from scenarios.findings import FINDINGS

    text = (Path(__file__).parent / "FINDINGS.md").read_text(encoding="utf-8")
    documented = dict(re.findall(r"^## (F\d+) — (.+)$", text, re.MULTILINE))
    assert documented == {f.id: f.title for f in FINDINGS}
