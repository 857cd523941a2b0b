"""Rules of ``analysis/server_units.py`` on hand-made marks and runs (the nights that found them
are in tests/test_unseen_nights.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from postmortem.analysis.server_units import Run, _decide, _scheduled

T0 = datetime(2024, 9, 21, 2, 0, tzinfo=UTC)


def _mark(
    minute: float, unit: str, mark: str, action: str, *, desc: str | None = None, line: int = 0
) -> dict[str, Any]:
    return {
        "host": "h",
        "unit": unit,
        "description": desc,
        "ts": T0 + timedelta(minutes=minute),
        "mark": mark,
        "action": action,
        "source_id": 1,
        "line_no": line,
        "span_s": 0,
    }


def _job(minute: float, unit: str, desc: str | None = None) -> list[dict[str, Any]]:
    """A oneshot's job as systemd before 240 logs it: "Starting …", then "Started …" when done."""
    return [
        _mark(minute, unit, "start", "starting", desc=desc),
        _mark(minute + 0.01, unit, "start", "started", desc=desc),
    ]


def test_a_unit_started_again_and_again_without_an_end_runs_jobs() -> None:
    marks = [m for k in range(4) for m in _job(10 * k, "sysstat-collect.service")]
    assert _scheduled(marks) == {("h", "sysstat-collect.service")}


def test_one_silent_restart_is_not_a_schedule() -> None:
    # (a host that went down hard: the server's unit starts again after its boot, no end logged)
    marks = [*_job(0, "llm.service"), *_job(30, "llm.service")]
    assert _scheduled(marks) == set()


def test_a_crash_loop_logs_its_ends() -> None:
    marks = []
    for k in range(5):
        marks += _job(k, "llm.service")
        # (the failure in the second of the next start: whole-second stamps)
        marks.append(_mark(k + 1, "llm.service", "end", "main_exited", line=2))
    assert _scheduled(marks) == set()


def test_starts_named_by_a_description_are_broken_by_any_unit_s_end() -> None:
    """A text journal before systemd 249 names a start by the Description and the unit's ends
    by its name: an operator starting a failing unit three times is not a timer, since its
    failures (under the unit's name) come between; a timer's jobs with nothing ending between
    them are."""
    desc = "Serve Qwen3"
    marks = [m for k in range(3) for m in _job(10 * k, desc, desc)]
    failing = [*marks, *(_mark(10 * k + 5, "serve-qwen3.service", "end", "main_exited") for k in range(3))]
    assert _scheduled(failing) == set()
    timer = [
        m
        for k in range(3)
        for m in _job(10 * k, "system activity accounting tool", "system activity accounting tool")
    ]
    assert _scheduled(timer) == {("h", "system activity accounting tool")}
    # (another unit's end in one of the two gaps leaves one silent gap: not enough)
    assert _scheduled([*timer, _mark(15, "other.service", "end", "stopped")]) == set()


def _run(pid: int, first: float, last: float, votes: dict[str, list[tuple[str, str]]]) -> Run:
    run = Run(
        1,
        "/var/log/journal.txt",
        True,
        pid,
        "h",
        T0 + timedelta(minutes=first),
        T0 + timedelta(minutes=last),
        [],
    )
    run.votes = votes
    return run


def test_two_processes_writing_at_once_do_not_share_a_unit() -> None:
    killed = _run(
        100, 5, 60, {"a.service": [("pid", "pid 101 is a.service's"), ("start", "a started 2 s before")]}
    )
    beside = _run(200, 5.1, 90, {"a.service": [("start", "a started 8 s before")]})
    links = {x.stream_pid: x for x in _decide([killed, beside])}
    assert links[100].unit == "a.service"
    assert links[200].unit is None
    assert "a.service is the unit of pid 100, which wrote at the same time" in links[200].evidence


def test_one_process_after_another_may_share_a_unit() -> None:
    first = _run(100, 5, 30, {"a.service": [("start", "a started 2 s before")]})
    restarted = _run(200, 31, 90, {"a.service": [("start", "a started 2 s before")]})
    assert [x.unit for x in _decide([first, restarted])] == ["a.service", "a.service"]


def test_as_much_evidence_for_both_names_neither() -> None:
    one = _run(100, 5, 60, {"a.service": [("start", "a started 2 s before")]})
    two = _run(200, 5, 60, {"a.service": [("start", "a started 2 s before")]})
    assert [x.unit for x in _decide([one, two])] == [None, None]
