"""A server unit that fails to start (issue #27, finding F10): systemd restarts it until its
start limit, it is never ready. One incident, "failed to start", not a kill — and a oneshot
failing the same way beside it is none."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

T = datetime(2026, 3, 15, 4, 32, 22, tzinfo=UTC)
UNIT = "inference.service"


def _stamp(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%f+0000")


NO_CONFIG = "OSError: /models/x does not appear to have a file named config.json."


def _night(
    logs: Path,
    *,
    el7: bool = False,
    limit_later: bool = False,
    errors: tuple[str, ...] = (NO_CONFIG,) * 5,
    server_late_s: float = 0.0,
    ranks: int = 1,
) -> None:
    """Five starts of a unit whose model has no config.json, then its start limit. ``el7``:
    systemd 219's words; ``limit_later``: its start limit (and the failed state it repeats after
    it) in the second after the last attempt's exit, as on a loaded host; ``errors``: each
    attempt's exception line (empty: its server wrote none, to that log); ``server_late_s``: the
    server's stamps are that late (its clock behind the journal's, or its lines flushed late);
    ``ranks``: how many processes print each attempt's traceback."""
    journal: list[tuple[datetime, str]] = []
    server: list[str] = []

    def sd(ts: datetime, text: str) -> None:
        journal.append((ts, f"systemd[1]: {text}"))

    t = T
    for attempt in range(5):
        sd(t, f"Starting {UNIT} - Inference API...")
        sd(t, f"Started {UNIT} - Inference API.")
        server.append(
            f"[{t + timedelta(seconds=2 + server_late_s):%Y-%m-%d %H:%M:%S}] server_args=ServerArgs(model_path='/models/x', tp_size=8, port=30001)"
        )
        if errors[attempt]:
            server += ["Traceback (most recent call last):", errors[attempt]] * ranks
        t += timedelta(seconds=3)
        if el7:
            sd(t, f"{UNIT}: main process exited, code=exited, status=1/FAILURE")
            sd(t, f"Unit {UNIT} entered failed state.")
            sd(t, f"{UNIT} failed.")
        else:
            sd(t, f"{UNIT}: Main process exited, code=exited, status=1/FAILURE")
            sd(t, f"{UNIT}: Failed with result 'exit-code'.")
        sd(t, f"{UNIT}: Scheduled restart job, restart counter is at {attempt + 1}.")
        sd(t, f"Stopped {UNIT} - Inference API.")
        t += timedelta(seconds=0.1)
    if limit_later:
        t += timedelta(seconds=0.7)
        sd(t, f"start request repeated too quickly for {UNIT}")
        sd(t, f"Unit {UNIT} entered failed state.")
    elif el7:
        sd(t, f"{UNIT} start request repeated too quickly, refusing to start.")
    else:
        sd(t, f"{UNIT}: Start request repeated too quickly.")
        sd(t, f"{UNIT}: Failed with result 'start-limit-hit'.")
    sd(t, f"Failed to start {UNIT} - Inference API.")
    # a oneshot failing beside it: no incident
    sd(T + timedelta(minutes=3), "Starting gpu-healthcheck.service - GPU health check...")
    sd(
        T + timedelta(minutes=3, seconds=1),
        "gpu-healthcheck.service: Main process exited, code=exited, status=1/FAILURE",
    )
    sd(T + timedelta(minutes=3, seconds=1), "gpu-healthcheck.service: Failed with result 'exit-code'.")
    journal.sort(key=lambda p: p[0])
    (logs / "journal.txt").write_text("".join(f"{_stamp(ts)} gpu1 {text}\n" for ts, text in journal))
    (logs / f"{UNIT}.log").write_text("\n".join(server) + "\n")


def _incidents(cli: Any, tmp_path: Path, el7: bool, **night: Any) -> tuple[list[dict[str, Any]], str]:
    logs = tmp_path / "logs"
    logs.mkdir()
    _night(logs, el7=el7, **night)
    db, out = tmp_path / "pm.duckdb", tmp_path / "reports"
    r = cli("build", "--logs", logs, "--db", db, "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    incs = json.loads(cli("incidents", "--db", db, "--format", "json").out)
    reports = sorted(p for p in out.glob("*.md") if p.name != "index.md")
    return incs, reports[0].read_text() if reports else ""


def test_a_start_limit_loop_is_one_incident_failed_to_start(cli: Any, tmp_path: Path) -> None:
    incs, report = _incidents(cli, tmp_path, el7=False)
    assert [(i["unit"], i["cause"], i["ts"][:19]) for i in incs] == [(UNIT, "crash", "2026-03-15T04:32:25")]
    assert report.startswith(f"# Postmortem: {UNIT} failed to start on gpu1")
    assert "| Failed at |" in report and "Killed at" not in report
    assert "5 attempts ended with an error exit, and systemd stopped restarting it" in report
    assert "| Automatic restarts | 4 |" in report  # the fifth was refused by the start limit


def test_systemd_219s_words_make_the_same_incident(cli: Any, tmp_path: Path) -> None:
    incs, report = _incidents(cli, tmp_path, el7=True)
    assert [(i["unit"], i["cause"]) for i in incs] == [(UNIT, "crash")]
    assert "failed to start" in report.splitlines()[0]
    # "<unit> start request repeated too quickly, refusing to start." is v219's start limit
    assert "systemd stopped restarting it" in report
    assert "| Automatic restarts | 4 |" in report


def test_attempts_are_the_main_process_exits(cli: Any, tmp_path: Path) -> None:
    """systemd 219 repeats "entered failed state" after its start limit, here in the second
    after the last exit: no attempt of its own (five exits, four restarts)."""
    incs, report = _incidents(cli, tmp_path, el7=True, limit_later=True)
    assert [(i["unit"], i["cause"]) for i in incs] == [(UNIT, "crash")]
    assert "5 attempts ended with an error exit, and systemd stopped restarting it" in report
    assert "| Automatic restarts | 4 |" in report


def _section(report: str, title: str) -> str:
    return report.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def test_distinct_errors_are_quoted_with_the_attempts_each_ended(cli: Any, tmp_path: Path) -> None:
    other = "ValueError: tp_size 8 is more than the 4 GPUs visible"
    _, report = _incidents(cli, tmp_path, el7=False, errors=(NO_CONFIG,) * 3 + (other,) * 2)
    evidence = _section(report, "B. Root cause evidence")
    assert f"     3  {NO_CONFIG}\n    12  {other}\n```" in evidence
    assert "- Line 3's error ended 3 of the 5 failed attempts (again at lines 6, 9)." in evidence
    assert "- Line 12's error ended 2 of the 5 failed attempts (again at line 15)." in evidence
    assert "not a kill; its own output says which" in evidence


def test_a_long_systemd_quote_keeps_the_start_limit(cli: Any, tmp_path: Path) -> None:
    """systemd 219's three lines an attempt, then its start limit: the quote keeps its first and
    last lines and counts those between."""
    _, report = _incidents(cli, tmp_path, el7=True, limit_later=True)
    evidence = _section(report, "B. Root cause evidence")
    quote = evidence.split("**systemd**", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    lines = quote.strip().splitlines()
    assert lines[0].endswith(f"{UNIT}: main process exited, code=exited, status=1/FAILURE")
    assert lines[-2].endswith(f"start request repeated too quickly for {UNIT}")
    assert lines[-1].endswith(f"Unit {UNIT} entered failed state.")
    assert "     …" in lines and "The `…` stands for 7 more lines" in evidence
    assert f"not a kill: every attempt ended with {NO_CONFIG[:-1]}." in evidence


def test_the_root_cause_cites_the_servers_error(cli: Any, tmp_path: Path) -> None:
    """The server's OSError, not systemd's word that the unit failed; the words claim the quote
    the appendix has (the error, not a traceback)."""
    _, report = _incidents(cli, tmp_path, el7=True, server_late_s=1.5)
    root = _section(report, "Root cause and contributing factors")
    log = tmp_path / "logs" / f"{UNIT}.log"
    assert f"**Root cause:** an error in the server itself (nothing killed it). _{log}:3_" in root
    assert "The server raised an error of its own (quoted in the appendix)." in root
    assert "traceback in the appendix" not in report and "traceback quoted" not in report


def test_a_failed_start_without_the_servers_error_claims_no_quote(cli: Any, tmp_path: Path) -> None:
    """The server's log has its starts but not its errors (written elsewhere): nothing of them is
    quoted, and the report says so."""
    _, report = _incidents(cli, tmp_path, el7=False, errors=("",) * 5)
    assert "quoted in the appendix" not in report and "traceback in the appendix" not in report
    root = _section(report, "Root cause and contributing factors")
    assert "The server stopped on an error of its own (its log, not in the data, says which)." in root
    assert "None of the server's own lines about the failure is in the data" in report
    assert "**SGLang**" not in report


def test_the_timeline_shows_the_error_of_every_attempt(cli: Any, tmp_path: Path) -> None:
    """Attempts three seconds apart: the same OSError is each one's, shown at each; the same
    error of two ranks at once is one row."""
    _, report = _incidents(cli, tmp_path, el7=False, ranks=2)
    assert _section(report, "Timeline").count(NO_CONFIG) == 5
    assert _section(report, "E. Full timeline").count(NO_CONFIG) == 5


def test_start_attempts_without_exit_lines_stop_at_the_start_limit() -> None:
    """A journal without the exit lines: the seconds of failure lines before the start limit."""
    from postmortem.analysis.attempts import start_attempts
    from postmortem.analysis.model import Evidence

    def failed(s: float, line: int, **raw: str) -> Evidence:
        return Evidence("unit_start_failed", T + timedelta(seconds=s), 1, line, "", "h", UNIT, raw=raw)

    items = [failed(3 * i, 10 * i, result="exit-code") for i in range(3)]
    items += [failed(6.5, 25, action="start_limit_hit"), failed(7.1, 26)]
    assert start_attempts(items) == 3
    exits = [
        Evidence("unit_start_exit", T + timedelta(seconds=3 * i), 1, 10 * i - 1, "", "h", UNIT)
        for i in range(3)
    ]
    assert start_attempts(items + exits + exits[:1]) == 3  # (the same exit in two copies)


def _load(n: int, start: datetime, ready: datetime | None) -> Any:
    from postmortem.analysis.model import Load

    outcome = "ready" if ready else "failed"
    return Load(n, "h", UNIT, start, ready, None, outcome, "/m", None, 30001)


def _cuda_oom(ts: datetime) -> Any:
    from postmortem.analysis.model import Evidence

    return Evidence("server_cuda_oom", ts, 1, int(ts.timestamp()), "CUDA out of memory", "h", UNIT)


def test_failed_starts_minutes_apart_are_one_incident_until_one_is_ready() -> None:
    """Each attempt dies of a CUDA OOM while allocating its KV cache, six minutes apart: one
    incident. A run that became ready between two failures parts them."""
    from postmortem.analysis.incidents import build_incidents

    starts = [T + timedelta(minutes=6 * i) for i in range(4)]
    loads = [_load(i + 1, t, None) for i, t in enumerate(starts)]
    evidence = [_cuda_oom(t + timedelta(minutes=4)) for t in starts]
    (one,) = build_incidents(evidence, loads)
    assert one.ts == starts[0] + timedelta(minutes=4) and len(one.evidence) == 4
    loads[2] = _load(3, starts[2], starts[2] + timedelta(minutes=3))  # the third was ready
    assert len(build_incidents(evidence[:2] + evidence[3:], loads)) == 2
